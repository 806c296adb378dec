// luminal/io/generation_config.hpp: a folder's generation_config.json as written: EOS ids,
// do_sample, and the sampling fields (read only when do_sample is true).
#include <filesystem>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/io/generation_config.hpp"
#include "snippet.hpp"

using namespace luminal::io;

int main() {
  GenerationConfig g = parse_generation_config_json(
      R"({"eos_token_id": 2, "temperature": 0.7, "repetition_penalty": 1.1})",
      "generation_config.json");
  expect(g.eos_token_ids == std::vector<int64_t>{2}, "an int or a list in the file");
  expect(!g.do_sample, "false when absent");
  expect(!g.temperature && g.repetition_penalty == 1.1,
         "sampling fields only with do_sample; the repetition penalty always");

  GenerationConfig s = parse_generation_config_json(
      R"({"do_sample": true, "temperature": 0.7, "eos_token_id": [1, 2]})", "g.json");
  expect(s.do_sample && s.temperature == 0.7 && s.eos_token_ids.size() == 2, "sampling on");

  std::string why;
  try {
    parse_generation_config_json(R"({"do_sample": true, "top_p": "high"})",
                                 "generation_config.json");
  } catch (const luminal::Error& e) {
    why = e.what();
  }
  expect(why == "generation_config.json: field 'top_p' must be a number, got a string \"high\"",
         "errors name the file and the field");
  expect(read_generation_config("no-such-folder/generation_config.json").eos_token_ids.empty(),
         "a missing file gives an empty config");
}
