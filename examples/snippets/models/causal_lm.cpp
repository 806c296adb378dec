// luminal/models/causal_lm.hpp: a causal language model from a Hugging Face folder or a GGUF
// file, compiled and ready to run. Run: snippet_models_causal_lm <model folder>.
#include <cstdint>
#include <iostream>
#include <string_view>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/io/tokenizer.hpp"
#include "luminal/models/causal_lm.hpp"
#include "snippet.hpp"

using namespace luminal;

int main(int argc, char** argv) {
  const char* folder = argc > 1 ? argv[1] : "tiny-llama/";
  cpu::CpuBackend cpu;
  auto lm = models::CausalLM::load(folder, cpu, {.slots = 1024, .max_step = 128});
  std::vector<float> logits = lm.forward({1, 17, 42});  // [3, vocab], the KV cache fills
  expect(logits.size() == static_cast<size_t>(3 * lm.vocab_size()), "logits of every id");
  const std::vector<int32_t> prompt = {1, 17, 42};
  std::vector<int32_t> next = lm.generate_greedy(prompt, 16);
  expect(next.size() == 16 && lm.context() == 3 + 3 + 15, "the last token is not fed");
  lm.reset();  // an empty context again
  expect(lm.context() == 0, "reset");

  // With the sampler in the graph: the smallest head that serves the settings.
  const models::SamplingConfig sampling{.temperature = 0.8, .top_p = 0.95, .seed = 7};
  auto sampled = models::CausalLM::load(folder, cpu, {.slots = 1024, .max_step = 128}, {}, {},
                                        models::SamplerShape::needed_by(sampling));
  auto tok = io::Tokenizer::from_folder(folder);
  auto out = sampled.generate(prompt, 64, sampling,
                              [](int32_t, std::string_view text) {
                                std::cout << text;
                                return true;
                              },
                              {.eos_ids = {2}, .strings = {"\n\n"}, .tokenizer = &tok});
  std::cout << "\n" << models::stop_name(out.stop) << "\n";

  // The whole chat rendered again with a new turn: the cache keeps the common prefix, and only
  // the rest is fed.
  std::vector<int32_t> chat_ids = sampled.context_ids();
  chat_ids.insert(chat_ids.end(), {17, 42});
  const size_t kept = sampled.continue_from(chat_ids, sampling);
  expect(kept == sampled.context_ids().size(), "the context is the kept prefix");
  sampled.generate(
      std::vector<int32_t>(chat_ids.begin() + static_cast<std::ptrdiff_t>(kept), chat_ids.end()),
      16, sampling);
}
