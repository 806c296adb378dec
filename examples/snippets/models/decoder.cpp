// luminal/models/decoder.hpp: a Llama-family decoder as one graph with Hugging Face's tensor
// names as input labels. Run: snippet_models_decoder <model folder>.
#include <filesystem>

#include "luminal/io/hf_config.hpp"
#include "luminal/models/decoder.hpp"
#include "snippet.hpp"

using namespace luminal;

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : "Llama-3.2-1B";
  io::ModelConfig cfg = io::parse_config(dir / "config.json");
  models::Decoder d = models::build_decoder(cfg, {.slots = 2048, .max_step = 512});
  // inputs: "ids" (I32 [s]), "rope.inv_freq" (d.rope_inv_freq), the checkpoint's weights
  // ("model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", ...) and the KV
  // caches "model.layers.N.self_attn.{k,v}_cache" (carried); output "logits" [s, vocab].
  expect(d.graph.find("ids") == d.ids.id(), "the ids input");
  expect(d.graph.find("model.layers.0.self_attn.k_cache") >= 0, "a KV cache per layer");
  expect(d.graph.carried().size() == 2 * static_cast<size_t>(cfg.num_hidden_layers),
         "every cache is carried");
}
