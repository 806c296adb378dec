// generation_config.json: the fields as written (no defaults applied), the sampling fields only
// with do_sample, and errors naming the file and the field.
#include "luminal/io/generation_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "luminal/core/error.hpp"

namespace {

using luminal::io::GenerationConfig;
using luminal::io::parse_generation_config_json;

std::string error_of(const std::string& text) {
  try {
    parse_generation_config_json(text, "gen.json");
  } catch (const luminal::Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(GenerationConfig, FieldsAsWritten) {
  const GenerationConfig g = parse_generation_config_json(
      R"({"eos_token_id": [2, 7], "do_sample": true, "temperature": 0.6, "top_k": 20,
          "top_p": 0.9, "repetition_penalty": 1.1, "bos_token_id": 1})",
      "gen.json");
  EXPECT_EQ(g.source, "gen.json");
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{2, 7}));
  EXPECT_TRUE(g.do_sample);
  EXPECT_EQ(g.temperature, 0.6);
  EXPECT_EQ(g.top_k, 20.0);
  EXPECT_EQ(g.top_p, 0.9);
  EXPECT_FALSE(g.min_p.has_value());
  EXPECT_EQ(g.repetition_penalty, 1.1);
  const GenerationConfig one = parse_generation_config_json(R"({"eos_token_id": 3})", "g");
  EXPECT_EQ(one.eos_token_ids, (std::vector<int64_t>{3}));
  EXPECT_FALSE(one.do_sample);
}

TEST(GenerationConfig, SamplingFieldsOnlyWithDoSample) {
  // Without do_sample the sampling fields are not read (not even checked), the penalty is.
  const GenerationConfig g = parse_generation_config_json(
      R"({"do_sample": false, "temperature": "hot", "repetition_penalty": 1.3})", "g");
  EXPECT_FALSE(g.temperature.has_value());
  EXPECT_EQ(g.repetition_penalty, 1.3);
  // A do_sample that is not a boolean counts as absent; null fields as absent.
  EXPECT_FALSE(parse_generation_config_json(R"({"do_sample": "yes"})", "g").do_sample);
  EXPECT_TRUE(parse_generation_config_json(R"({"eos_token_id": null})", "g").eos_token_ids.empty());
}

TEST(GenerationConfig, ErrorsNameTheFileAndTheField) {
  EXPECT_NE(error_of("{").find("gen.json: not valid JSON"), std::string::npos) << error_of("{");
  EXPECT_EQ(error_of("[1]"), "gen.json: expected a JSON object");
  EXPECT_EQ(error_of(R"({"do_sample": true, "top_p": "high"})"),
            "gen.json: field 'top_p' must be a number, got a string \"high\"");
  EXPECT_EQ(error_of(R"({"repetition_penalty": [1]})"),
            "gen.json: field 'repetition_penalty' must be a number, got a list [1]");
  EXPECT_EQ(error_of(R"({"eos_token_id": [2, "x"]})"),
            "gen.json: field 'eos_token_id' must be an integer or a list of integers, got a list "
            "[2,\"x\"]");
}

TEST(GenerationConfig, MissingFileIsEmpty) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / "luminal_no_such_generation_config.json";
  const GenerationConfig g = luminal::io::read_generation_config(file);
  EXPECT_EQ(g.source, file.string());
  EXPECT_TRUE(g.eos_token_ids.empty());
  EXPECT_FALSE(g.do_sample);
}

}  // namespace
