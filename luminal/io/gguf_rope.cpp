// RoPE scaling from GGUF: rope.scaling.* metadata, and Llama 3.1-style scaling fitted to
// llama.cpp's per-dimension factors (rope_freqs.weight).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

#include "luminal/core/error.hpp"
#include "luminal/io/gguf_model_detail.hpp"

namespace luminal::io::gguf_detail {

// Llama 3.1-style RoPE from llama.cpp's per-dimension factors: factor is the largest; the
// smoothed dims give original_max_position_embeddings (and high_freq_factor when two or more are
// smoothed) with low_freq_factor 1; the result must reproduce every factor.
void fit_llama3_rope(const GgufFile& f, ModelConfig& c, const std::vector<float>& factors) {
  const int64_t d = c.head_dim;
  const double base = c.rope_theta;
  const double factor = *std::max_element(factors.begin(), factors.end());
  RopeScaling r;
  r.type = RopeType::Llama3;
  r.factor = factor;
  r.low_freq_factor = 1.0;
  r.high_freq_factor = 4.0;
  auto wavelen = [&](size_t i) {
    const double inv = 1.0 / std::pow(base, static_cast<double>(2 * i) / static_cast<double>(d));
    return 2 * std::numbers::pi / inv;
  };
  const double tol = 1e-4;
  std::vector<size_t> smooth;
  double max_one = 0, min_full = INFINITY;
  for (size_t i = 0; i < factors.size(); ++i) {
    const double fi = factors[i];
    if (std::abs(fi - 1.0) <= tol)
      max_one = std::max(max_one, wavelen(i));
    else if (std::abs(fi - factor) <= tol * factor)
      min_full = std::min(min_full, wavelen(i));
    else
      smooth.push_back(i);
  }
  // smooth s = (1/f - 1/factor) / (1 - 1/factor) = (orig / wavelen - low) / (high - low).
  auto s_of = [&](size_t i) { return (1.0 / factors[i] - 1.0 / factor) / (1.0 - 1.0 / factor); };
  double orig = 0;
  if (factor <= 1.0 + tol) {
    r.type = RopeType::None;
    r.factor = 1.0;
  } else if (smooth.size() >= 2) {
    // s = a / wavelen - b with a = orig / (high - 1), b = 1 / (high - 1).
    const size_t i = smooth.front(), j = smooth.back();
    const double xi = 1 / wavelen(i), xj = 1 / wavelen(j);
    const double a = (s_of(i) - s_of(j)) / (xi - xj);
    const double b = a * xi - s_of(i);
    if (b > 0) {
      r.high_freq_factor = 1 + 1 / b;
      char buf[32];
      auto res = std::to_chars(buf, buf + sizeof buf, static_cast<float>(r.high_freq_factor));
      std::from_chars(buf, res.ptr, r.high_freq_factor);
      orig = a / b;
    }
  } else if (smooth.size() == 1) {
    orig = wavelen(smooth[0]) * (s_of(smooth[0]) * (r.high_freq_factor - 1) + 1);
  } else {
    // No smoothed dim: any orig with 4 * max_one < orig < min_full gives the same factors; take a
    // power of two in the range (8192 for Llama 3.x) when there is one.
    const double lo = r.high_freq_factor * max_one, hi = min_full;
    orig = std::floor(lo) + 1;
    for (double p = 1; p < 1e12; p *= 2)
      if (p > lo && p < hi) {
        orig = p;
        if (p >= 8192) break;
      }
  }
  r.original_max_position_embeddings = static_cast<int64_t>(std::llround(orig));
  if (r.type == RopeType::Llama3) {
    const double o = static_cast<double>(r.original_max_position_embeddings);
    const double low_wl = o / r.low_freq_factor, high_wl = o / r.high_freq_factor;
    for (size_t i = 0; i < factors.size(); ++i) {
      const double wl = wavelen(i);
      double want;
      if (wl < high_wl) {
        want = 1;
      } else if (wl > low_wl) {
        want = factor;
      } else {
        const double s = (o / wl - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        want = 1 / ((1 - s) / factor + s);
      }
      if (std::abs(want - factors[i]) > 1e-4 * want)
        throw Error(where(f) + "tensor 'rope_freqs.weight': the RoPE factors do not follow " +
                    "Llama 3's formula (factor " + std::to_string(factor) +
                    ", low_freq_factor 1, high_freq_factor " + std::to_string(r.high_freq_factor) +
                    ", original context " + std::to_string(r.original_max_position_embeddings) +
                    " gives " + std::to_string(want) + " for dim " + std::to_string(i) +
                    ", the file " + std::to_string(factors[i]) +
                    "); this RoPE scaling is not supported");
    }
  }
  c.rope_scaling = r;
}

void read_rope_scaling(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  const std::string k = arch + ".rope.scaling.";
  std::string type = f.find_string(k + "type").value_or("");
  if (type.empty() && f.contains(arch + ".rope.scale_linear")) type = "linear";
  RopeScaling& r = c.rope_scaling;
  if (type.empty() || type == "none") {
    r.type = RopeType::None;
  } else if (type == "linear") {
    r.type = RopeType::Linear;
    r.factor = f.contains(k + "factor") ? float_value(f, k + "factor")
                                        : float_value(f, arch + ".rope.scale_linear");
  } else if (type == "yarn") {
    r.type = RopeType::Yarn;
    r.factor = float_value(f, k + "factor");
    r.original_max_position_embeddings = f.find_int(k + "original_context_length").value_or(0);
    r.attention_factor = find_float_value(f, k + "attn_factor");
    r.beta_fast = find_float_value(f, k + "yarn_beta_fast");
    r.beta_slow = find_float_value(f, k + "yarn_beta_slow");
  } else if (type == "llama3") {
    // Not written by llama.cpp (it stores rope_freqs.weight); accepted from other writers.
    r.type = RopeType::Llama3;
    r.factor = float_value(f, k + "factor");
    r.original_max_position_embeddings = f.find_int(k + "original_context_length").value_or(0);
    if (auto v = find_float_value(f, k + "low_freq_factor")) r.low_freq_factor = *v;
    if (auto v = find_float_value(f, k + "high_freq_factor")) r.high_freq_factor = *v;
  } else {
    throw Error(where(f) + "key '" + k + "type': unsupported RoPE scaling '" + type +
                "' (supported: none, linear, yarn, llama3)");
  }
}

}  // namespace luminal::io::gguf_detail
