// Generation with the C++ API: open a model (a Hugging Face folder or a .gguf file), chat-format
// a prompt, and stream the answer token by token.
//
//   build/examples/generate [MODEL] ["prompt"]     # MODEL defaults to the SmolLM2 of `make run`
#include <cstdio>
#include <iostream>
#include <string>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/model_files.hpp"

int main(int argc, char** argv) {
  namespace models = luminal::models;
  const std::string path = argc > 1 ? argv[1] : models::default_model_path().string();
  const std::string question = argc > 2 ? argv[2] : "What is the capital of France?";
  try {
    models::ModelFiles model = models::open_model(path);
    if (!model.tokenizer) throw luminal::Error(path + " has no tokenizer");
    luminal::cpu::CpuBackend cpu;
    models::DecoderShape shape;
    shape.slots = 1024;
    shape.max_step = 128;
    models::CausalLM lm = models::CausalLM::load(
        model, cpu, shape,
        luminal::CompileOptions().search_graph_limit(10).time_budget(20).profile_timeout(30));
    // The chat template when the model has one, else the raw text.
    const std::string text =
        model.chat_template
            ? model.chat_template->render({{"user", question}}, true, model.template_variables)
            : question;
    const std::vector<int32_t> prompt = model.tokenizer->encode(text, !model.chat_template);
    models::StopConditions stop;
    stop.eos_ids = model.eos_ids;
    stop.tokenizer = &*model.tokenizer;
    const models::Generation out = lm.generate(
        prompt, 128, models::SamplingConfig{},  // greedy
        [](int32_t, std::string_view piece) {
          std::cout << piece << std::flush;
          return true;
        },
        stop);
    std::cout << "\n[" << out.tokens.size() << " tokens, stop: " << models::stop_name(out.stop)
              << "]\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "generate: %s\n", e.what());
    return 1;
  }
  return 0;
}
