#include "luminal/models/token_head.hpp"

#include <string>

#include "luminal/core/error.hpp"

namespace luminal::models {

TokenHead add_token_head(Decoder& d, const SamplerShape& shape) {
  TokenHead head{.shape = shape, .inputs = {}};
  if (!shape.sampler) {
    nn::greedy_token(d.last_logits).output("token");
    return head;
  }
  Graph& g = d.graph;
  head.inputs = nn::sampler_inputs(g, "sampler");
  const Tensor seen = g.tensor("sampler.seen", {d.config.vocab_size}, DType::F32).persist();
  const Tensor seen_next =
      seen.scatter_flat(d.ids, g.ones({"s"}, DType::F32)).output("sampler.seen_out");
  g.carry(seen_next, seen);
  nn::sample(d.last_logits, head.inputs, seen_next, 16, shape.filters).output("token");
  return head;
}

void TokenHead::check(const nn::SamplingConfig& c) const {
  if (!shape.sampler && c.needs_sampler())
    throw Error(
        "models: this model was loaded without the sampler, so it decodes greedily only "
        "(temperature 0, repetition_penalty 1); load it with SamplerShape::sampler = true (or "
        "SamplerShape::needed_by(config)) to sample");
  if (shape.sampler && !shape.filters.serve(c)) {
    const bool k = !shape.filters.top_k && nn::SamplerFilters::needed_by(c).top_k;
    throw Error(std::string("models: this model's sampler was built without the ") +
                (k ? "top-k" : "top-p") + " filter; load it with SamplerShape::filters." +
                (k ? "top_k" : "top_p") + " = true to use " + (k ? "top_k" : "top_p"));
  }
}

void TokenHead::set(Runtime& rt, const nn::SamplingConfig& c, int64_t step) const {
  if (shape.sampler) nn::set_sampler_inputs(rt, inputs, c, step);
}

void TokenHead::clear_seen(Runtime& rt, int64_t vocab) const {
  if (shape.sampler) rt.set("sampler.seen", std::vector<float>(static_cast<size_t>(vocab), 0.f));
}

}  // namespace luminal::models
