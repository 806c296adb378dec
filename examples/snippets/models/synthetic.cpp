// luminal/models/synthetic.hpp: models from a config alone, with seeded random weights
// generated on the session's backend.
#include <vector>

#include "luminal/compiler/options.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/runtime/session.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  io::ModelConfig cfg = models::llama_config(
      {.layers = 2, .hidden = 64, .ffn = 128, .heads = 4, .kv_heads = 2, .vocab = 256});
  cpu::CpuBackend backend(1);
  auto lm = models::CausalLM::random(cfg, backend, {.slots = 64, .max_step = 8}, {}, 7);
  expect(lm.vocab_size() == 256, "the config's vocabulary");

  // or any graph whose weights are inputs named "*.weight" / "*.bias":
  const models::DecoderShape shape{.slots = 64, .max_step = 8};
  const CompileOptions opts = CompileOptions().search_graph_limit(2);
  models::Decoder d = models::build_decoder(cfg, shape);
  Session s(d.graph, backend, opts);
  const int weights = models::random_weights(s, 7);  // generated on the backend
  models::init_state(s, d);                          // rope table, empty KV caches
  expect(weights > 0, "every weight set");
}
