// luminal/models/token_head.hpp: the token head of a causal LM: the argmax of the last logits,
// or the in-graph sampler with only the filters a config needs; check() rejects a config the head
// cannot serve.
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/models/token_head.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::models;

int main() {
  const io::ModelConfig cfg =
      llama_config({.layers = 1, .hidden = 32, .ffn = 64, .heads = 2, .kv_heads = 1, .vocab = 64});
  expect(!SamplerShape::needed_by(nn::SamplingConfig{}).sampler, "greedy: the argmax only");

  const nn::SamplingConfig sampling{.temperature = 0.8, .top_p = 0.95, .seed = 7};
  SamplerShape shape = SamplerShape::needed_by(sampling);  // the smallest head for `sampling`
  expect(shape.sampler && shape.filters.top_p && !shape.filters.top_k, "the sampler, top-p only");
  Decoder d = build_decoder(cfg, {.slots = 16, .max_step = 4});
  TokenHead head = add_token_head(d, shape);  // adds "token" to d.graph
  head.check(sampling);                       // throws naming what is missing
  expect(d.graph.find("token") >= 0 && d.graph.find("sampler.temperature") >= 0,
         "output \"token\"; the settings are graph inputs");

  std::string why;
  try {
    head.check({.temperature = 1, .top_k = 40});
  } catch (const Error& e) {
    why = e.what();
  }
  expect(why.find("top_k") != std::string::npos, "a config needing top-k names the filter");
}
