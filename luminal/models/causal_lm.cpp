#include "luminal/models/causal_lm.hpp"

#include <algorithm>

#include "luminal/core/error.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::models {

namespace {

Decoder decoder_of(const std::filesystem::path& dir, const DecoderShape& shape) {
  return build_decoder(io::parse_config(dir / "config.json"), shape);
}

}  // namespace

void CausalLM::bind(const std::filesystem::path& dir, bool session) {
  auto weights = std::make_shared<const io::Weights>(io::Weights::open(dir));
  io::BindOptions opts;
  opts.require_all_inputs = false;
  io::BindReport r = session ? io::bind(static_cast<Session&>(*runtime_), weights, opts)
                             : io::bind(*runtime_, *weights, opts);
  runtime_->set("rope.inv_freq", decoder_.rope_inv_freq);
  // Every input must now be set, except the ids and the caches (zeroed below).
  const Graph& g = decoder_.graph;
  for (const std::string& label : r.unset_inputs) {
    if (label == "ids" || label == "rope.inv_freq") continue;
    if (label.size() > 6 && label.compare(label.size() - 6, 6, "_cache") == 0) {
      const Node& n = g.node(g.find(label));
      int64_t numel = 1;
      for (const Expr& e : n.shape)
        numel *= e.as_const();
      runtime_->set(label, std::vector<float>(static_cast<size_t>(numel), 0.f));
      continue;
    }
    throw Error("models: the checkpoint in '" + dir.string() + "' has no tensor '" + label + "'");
  }
}

CausalLM CausalLM::load(const std::filesystem::path& dir, Backend& backend,
                        const DecoderShape& shape, CompileOptions options) {
  CausalLM lm;
  lm.decoder_ = decoder_of(dir, shape);
  std::vector<DimBucket> buckets{DimBucket(1, 1)};
  if (shape.max_step > 1) buckets.push_back(DimBucket(2, shape.max_step));
  if (options.dim_buckets().find("s") == options.dim_buckets().end())
    options.dim_buckets("s", buckets);
  lm.runtime_ = std::make_unique<Session>(lm.decoder_.graph, backend, options);
  lm.bind(dir, true);
  static_cast<Session&>(*lm.runtime_).compile();
  return lm;
}

CausalLM CausalLM::load_reference(const std::filesystem::path& dir, const DecoderShape& shape) {
  CausalLM lm;
  lm.decoder_ = decoder_of(dir, shape);
  lm.runtime_ = std::make_unique<ReferenceRuntime>(lm.decoder_.graph);
  lm.bind(dir, false);
  return lm;
}

std::vector<float> CausalLM::forward(const std::vector<int32_t>& ids) {
  if (ids.empty()) return {};
  if (context_ + static_cast<int64_t>(ids.size()) > decoder_.shape.slots) {
    throw Error("models: " + std::to_string(context_) + " tokens of context plus " +
                std::to_string(ids.size()) + " new ones exceed the cache of " +
                std::to_string(decoder_.shape.slots) + " (DecoderShape::slots)");
  }
  std::vector<float> all;
  for (size_t done = 0; done < ids.size();) {
    const size_t n = std::min<size_t>(ids.size() - done, decoder_.shape.max_step);
    std::vector<int32_t> chunk(ids.begin() + static_cast<std::ptrdiff_t>(done),
                               ids.begin() + static_cast<std::ptrdiff_t>(done + n));
    runtime_->set("ids", chunk);
    context_ += static_cast<int>(n);
    runtime_->execute({{"s", static_cast<int64_t>(n)}, {"c", context_}});
    std::vector<float> l = runtime_->get<float>("logits");
    all.insert(all.end(), l.begin(), l.end());
    done += n;
  }
  return all;
}

std::vector<int32_t> CausalLM::generate_greedy(const std::vector<int32_t>& prompt, int n) {
  std::vector<float> logits = forward(prompt);
  std::vector<int32_t> out;
  const int64_t V = vocab_size();
  for (int t = 0; t < n; ++t) {
    const float* last = logits.data() + logits.size() - static_cast<size_t>(V);
    const int32_t next = static_cast<int32_t>(std::max_element(last, last + V) - last);
    out.push_back(next);
    if (t + 1 < n) logits = forward({next});
  }
  return out;
}

}  // namespace luminal::models
