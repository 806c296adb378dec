// luminal/models/model_files.hpp: a Hugging Face folder or a GGUF file, opened as the same
// record (config, tokenizer, chat template, EOS ids). Run: snippet_models_model_files <path>.
#include <iostream>
#include <string>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/model_files.hpp"
#include "snippet.hpp"

using namespace luminal;

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "SmolLM2-135M-Instruct.Q4_1.gguf";  // or a folder
  models::ModelFiles m = models::open_model(path);
  std::cout << m.config.num_hidden_layers << " layers\n";
  if (m.tokenizer) expect(!m.tokenizer->encode("Hi").empty(), "a tokenizer");
  if (m.chat_template)
    std::cout << m.chat_template->render({{"user", "Hi"}}, true, m.template_variables) << "\n";
  cpu::CpuBackend backend;
  const models::DecoderShape shape{.slots = 256, .max_step = 32};
  auto lm = models::CausalLM::load(m, backend, shape);  // reads the weights
  expect(lm.context() == 0, "an empty context");
}
