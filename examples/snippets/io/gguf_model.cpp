// luminal/io/gguf_model.hpp: what a Hugging Face folder gives (config, weights under Hugging
// Face names, tokenizer, chat template), read from one GGUF file. Run: snippet_io_gguf_model
// <file.gguf>.
#include <iostream>

#include "luminal/io/gguf_model.hpp"
#include "snippet.hpp"

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "SmolLM2-135M-Instruct-Q8_0.gguf";
  luminal::io::GgufModel m = luminal::io::read_gguf_model(path);
  std::cout << m.config.num_hidden_layers << " layers\n";  // from the "llama.*" metadata
  const auto& q = m.weights->get("model.layers.0.self_attn.q_proj.weight");  // f32, HF row order
  expect(q.dtype == luminal::DType::F32, "weights dequantised to f32");
  if (m.tokenizer) expect(!m.tokenizer->encode("Hello").empty(), "from tokenizer.ggml.*");
  if (m.chat_template) std::cout << "chat template: yes\n";  // tokenizer.chat_template
  // io::bind(session, m.weights) binds them as Weights::open(folder) does.
}
