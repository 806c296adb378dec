#include "luminal/nn/rope.hpp"

#include <cmath>

#include "luminal/core/error.hpp"

namespace luminal::nn {

std::vector<float> rope_inv_freq(int head_dim, double base, const RopeScaling& sc) {
  if (head_dim <= 0 || head_dim % 2 != 0)
    throw Error("nn::rope_inv_freq: head_dim must be positive and even, got " +
                std::to_string(head_dim));
  if (!(base > 0)) throw Error("nn::rope_inv_freq: the rope base must be positive");
  if (sc.kind != RopeScaling::Kind::None && !(sc.factor > 0))
    throw Error("nn::rope_inv_freq: the scaling factor must be positive");
  std::vector<float> inv(static_cast<size_t>(head_dim / 2));
  const float b = static_cast<float>(base);
  for (int j = 0; j < head_dim / 2; ++j) {
    // transformers: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), all in f32.
    const float e = static_cast<float>(2 * j) / static_cast<float>(head_dim);
    inv[j] = 1.0f / std::pow(b, e);
  }
  // The scalings in f32, operation for operation as transformers computes them.
  const float factor = static_cast<float>(sc.factor);
  if (sc.kind == RopeScaling::Kind::Linear) {
    for (float& f : inv)
      f = f / factor;
  } else if (sc.kind == RopeScaling::Kind::Llama3) {
    const float old_len = static_cast<float>(sc.original_max_position);
    const float low = static_cast<float>(sc.low_freq_factor);
    const float high = static_cast<float>(sc.high_freq_factor);
    const double low_wavelen = sc.original_max_position / sc.low_freq_factor;
    const double high_wavelen = sc.original_max_position / sc.high_freq_factor;
    for (float& f : inv) {
      const float wavelen = static_cast<float>(2 * M_PI) / f;
      float scaled = wavelen > low_wavelen ? f / factor : f;
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      if (medium) {
        const float smooth = (old_len / wavelen - low) / (high - low);
        scaled = (1 - smooth) * scaled / factor + smooth * scaled;
      }
      f = scaled;
    }
  }
  return inv;
}

Tensor step_positions(Graph& g) {
  const Expr s = Expr::var("s"), c = Expr::var("c");
  return g.iota(c - s + Expr::z(), s);
}

Tensor apply_rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq) {
  const Shape& xs = x.shape();
  if (xs.size() != 3)
    throw Error("nn::apply_rope: x must be [s, heads, head_dim], got " + shape_to_string(xs));
  if (!xs[2].is_const() || xs[2].as_const() % 2 != 0)
    throw Error("nn::apply_rope: head_dim must be a constant even size, got " + xs[2].to_string());
  const int64_t half = xs[2].as_const() / 2;
  if (inv_freq.shape().size() != 1 || inv_freq.shape()[0] != Expr(half))
    throw Error("nn::apply_rope: inv_freq must be [" + std::to_string(half) + "], got " +
                shape_to_string(inv_freq.shape()));
  const Tensor angles = positions.cast(DType::F32).reshape({xs[0], 1, 1}) *
                        inv_freq.cast(DType::F32).reshape({1, 1, half});  // [s, 1, half]
  const DType dt = x.dtype();
  const Tensor cos = angles.cos().cast(dt).reshape({xs[0], 1, 1, 1, half});
  const Tensor sin = angles.sin().cast(dt).reshape({xs[0], 1, 1, 1, half});
  // out[j] = sum over k of x[k] * W[j][k] for the halves j, k of a head, with W = [[cos, -sin],
  // [sin, cos]]: x1 cos - x2 sin, then x1 sin + x2 cos, as rotate_half gives them (each W entry
  // is exactly cos, -sin or sin). One broadcast product and a sum over k of 2: no slice, gather
  // or concat of the halves, so it stays one kernel (or fuses with its neighbours).
  Graph g = x.graph();
  const Tensor j = g.arange(2, 0.0, 1.0, DType::F32).reshape({2, 1});
  const Tensor k = g.arange(2, 0.0, 1.0, DType::F32).reshape({1, 2});
  const Tensor eye = ((j - k) * (j - k) * -1.0 + 1.0).cast(dt).reshape({1, 1, 2, 2, 1});
  const Tensor turn = (j - k).cast(dt).reshape({1, 1, 2, 2, 1});  // [[0, -1], [1, 0]]
  const Tensor w = cos * eye + sin * turn;                          // [s, 1, 2, 2, half]
  return (x.reshape({xs[0], xs[1], 1, 2, half}) * w).sum(3).reshape({xs[0], xs[1], xs[2]});
}

}  // namespace luminal::nn
