// luminal/io/hf_config.hpp: a Hugging Face config.json as a typed model configuration; errors
// name the file and the field. Run: snippet_io_hf_config <model folder>.
#include <filesystem>
#include <iostream>

#include "luminal/io/hf_config.hpp"
#include "snippet.hpp"

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : "Llama-3.1-8B";
  luminal::io::ModelConfig c = luminal::io::parse_config(dir / "config.json");
  expect(c.family == luminal::io::ModelFamily::Llama, "a Llama");
  expect(c.head_dim == c.hidden_size / c.num_attention_heads,
         "head_dim: hidden_size / num_attention_heads when the file omits it");
  std::cout << "rope scaling: " << static_cast<int>(c.rope_scaling.type) << "\n";
  expect(!c.is_sliding_layer(5), "Llama has no sliding-window layers");
}
