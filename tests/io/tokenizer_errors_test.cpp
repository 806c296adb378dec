// Structural errors in tokenizer.json and tokenizer_config.json: every field the loader reads,
// missing or of the wrong type, gives an error that names the file, the JSON path and what is
// expected there (never nlohmann's exception text). Small hand-written files in a temp folder.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/io/tokenizer.hpp"

namespace {

using luminal::io::Tokenizer;
using nlohmann::json;
namespace fs = std::filesystem;

// A complete byte-free BPE tokenizer: "ab" is one token; options Hugging Face leaves unset are
// null, as it writes them.
json base() {
  return json::parse(R"({
    "version": "1.0",
    "added_tokens": [{"id": 3, "content": "<s>", "special": true, "lstrip": false,
                      "rstrip": false, "single_word": false, "normalized": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Split", "pattern": {"Regex": " "}, "behavior": "Isolated",
                      "invert": false},
    "post_processor": null,
    "decoder": null,
    "model": {"type": "BPE", "dropout": null, "unk_token": null,
              "continuing_subword_prefix": null, "end_of_word_suffix": null,
              "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
              "vocab": {"a": 0, "b": 1, "ab": 2, " ": 4}, "merges": ["a b"]}
  })");
}

fs::path folder(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / "luminal_tokenizer_errors" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// Writes tokenizer.json (and tokenizer_config.json when `config` is not null) under `name`.
fs::path write(const std::string& name, const std::string& tokenizer,
               const std::string& config = {}) {
  fs::path dir = folder(name);
  std::ofstream(dir / "tokenizer.json") << tokenizer;
  if (!config.empty()) std::ofstream(dir / "tokenizer_config.json") << config;
  return dir;
}

std::string error_of(const fs::path& dir) {
  try {
    (void)Tokenizer::from_folder(dir);
  } catch (const luminal::Error& e) {
    return e.what();
  }
  return "<no error>";
}

struct Case {
  std::string name;
  std::function<void(json&)> edit;
  std::vector<std::string> expect;  // substrings of the message
};

/// Each case: base() edited, loaded; the error names the file and holds every expected part.
void check(const std::string& group, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    json j = base();
    c.edit(j);
    const fs::path dir = write(group + "_" + c.name, j.dump());
    const std::string e = error_of(dir);
    const std::string file = "tokenizer '" + (dir / "tokenizer.json").string() + "': ";
    EXPECT_EQ(e.rfind(file, 0), 0u) << c.name << ": " << e;
    for (const std::string& part : c.expect)
      EXPECT_NE(e.find(part), std::string::npos) << c.name << ": lacks [" << part << "] in\n" << e;
    EXPECT_EQ(e.find("json.exception"), std::string::npos) << c.name << ": " << e;
    if (std::getenv("TOKERR_VERBOSE")) std::cerr << e << "\n";
  }
}

TEST(TokenizerErrors, TheBaseFileLoads) {
  Tokenizer t = Tokenizer::from_folder(write("base", base().dump()));
  EXPECT_EQ(t.encode("ab ab"), (std::vector<int32_t>{2, 4, 2}));
  EXPECT_EQ(t.kind(), "SentencePiece BPE");
}

TEST(TokenizerErrors, MissingMergesReadsAsTheIssueAsks) {
  json j = base();
  j["model"].erase("merges");
  const fs::path dir = write("no_merges", j.dump());
  EXPECT_EQ(error_of(dir), "tokenizer '" + (dir / "tokenizer.json").string() +
                               "': missing 'model.merges' (a BPE model needs its merges)");
}

TEST(TokenizerErrors, Model) {
  check("model",
        {
            {"no_model", [](json& j) { j.erase("model"); }, {"missing 'model' (the tokenizer's"}},
            {"model_null", [](json& j) { j["model"] = nullptr; }, {"missing 'model'"}},
            {"model_string",
             [](json& j) { j["model"] = "BPE"; },
             {"'model' is a string, expected an object"}},
            {"top_level_array",
             [](json& j) { j = json::array(); },
             {"the top level is an array, expected an object"}},
            {"no_vocab",
             [](json& j) { j["model"].erase("vocab"); },
             {"missing 'model.vocab' (a BPE model needs its vocab"}},
            {"vocab_array",
             [](json& j) { j["model"]["vocab"] = json::array(); },
             {"'model.vocab' is an array, expected an object of token -> id"}},
            {"vocab_id_string",
             [](json& j) { j["model"]["vocab"]["b"] = "1"; },
             {"'model.vocab.b' is a string, expected a token id"}},
            {"vocab_id_negative",
             [](json& j) { j["model"]["vocab"]["\u0120x"] = -1; },
             {"'model.vocab[\"\u0120x\"]' is the integer -1, expected a token id"}},
            {"vocab_id_fraction",
             [](json& j) { j["model"]["vocab"]["b"] = 1.5; },
             {"'model.vocab.b' is the number 1.5, expected a token id"}},
            {"merges_string",
             [](json& j) { j["model"]["merges"] = "a b"; },
             {"'model.merges' is a string, expected an array of merges"}},
            {"merge_number",
             [](json& j) { j["model"]["merges"][0] = 5; },
             {"'model.merges[0]' is the integer 5, expected a merge: \"a b\" or [\"a\", \"b\"]"}},
            {"merge_pair_of_three",
             [](json& j) {
               j["model"]["merges"][0] = {"a", "b", "c"};
             },
             {"'model.merges[0]' is an array, expected a merge"}},
            {"merge_no_space",
             [](json& j) { j["model"]["merges"][0] = "ab"; },
             {"'model.merges[0]' is \"ab\", expected two tokens separated by a space"}},
            {"merge_unknown_token",
             [](json& j) { j["model"]["merges"][0] = "a c"; },
             {"'model.merges[0]' uses \"ac\", which is not in 'model.vocab'"}},
            {"no_type_no_merges",
             [](json& j) {
               j["model"].erase("type");
               j["model"].erase("merges");
             },
             {"missing 'model.type' (the model's kind; supported: BPE)"}},
            {"type_number",
             [](json& j) { j["model"]["type"] = 3; },
             {"'model.type' is the integer 3, expected a string"}},
            {"type_unigram",
             [](json& j) { j["model"]["type"] = "Unigram"; },
             {"'model.type': unsupported model type \"Unigram\" (supported: BPE)"}},
            {"dropout",
             [](json& j) { j["model"]["dropout"] = 0.1; },
             {"'model.dropout': BPE dropout is not supported"}},
            {"dropout_string",
             [](json& j) { j["model"]["dropout"] = "0"; },
             {"'model.dropout' is a string, expected a number"}},
            {"unk_number",
             [](json& j) { j["model"]["unk_token"] = 5; },
             {"'model.unk_token' is the integer 5, expected a string"}},
            {"byte_fallback_string",
             [](json& j) { j["model"]["byte_fallback"] = "yes"; },
             {"'model.byte_fallback' is a string, expected true or false"}},
            {"fuse_unk_number",
             [](json& j) { j["model"]["fuse_unk"] = 1; },
             {"'model.fuse_unk' is the integer 1, expected true or false"}},
            {"ignore_merges_string",
             [](json& j) { j["model"]["ignore_merges"] = "no"; },
             {"'model.ignore_merges' is a string, expected true or false"}},
            {"subword_prefix",
             [](json& j) { j["model"]["continuing_subword_prefix"] = "##"; },
             {"'model.continuing_subword_prefix': BPE continuing_subword_prefix is not supported"}},
            {"word_suffix_number",
             [](json& j) { j["model"]["end_of_word_suffix"] = 1; },
             {"'model.end_of_word_suffix' is the integer 1, expected a string"}},
        });
}

TEST(TokenizerErrors, PreTokenizer) {
  auto seq = [](json step) {
    return [step](json& j) {
      j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({step})}};
    };
  };
  check("pre",
        {
            {"not_object",
             [](json& j) { j["pre_tokenizer"] = "Split"; },
             {"'pre_tokenizer' is a string, expected an object with a \"type\""}},
            {"no_type",
             [](json& j) { j["pre_tokenizer"].erase("type"); },
             {"missing 'pre_tokenizer.type' (a pre-tokenizer)"}},
            {"unsupported",
             [](json& j) {
               j["pre_tokenizer"] = {{"type", "Whitespace"}};
             },
             {"'pre_tokenizer': unsupported pre_tokenizer type \"Whitespace\""}},
            {"no_pattern",
             [](json& j) { j["pre_tokenizer"].erase("pattern"); },
             {"missing 'pre_tokenizer.pattern' (where a Split pre-tokenizer splits)"}},
            {"pattern_string",
             [](json& j) { j["pre_tokenizer"]["pattern"] = " "; },
             {"'pre_tokenizer.pattern' is a string, expected an object"}},
            {"pattern_regex_number",
             [](json& j) {
               j["pre_tokenizer"]["pattern"] = {{"Regex", 1}};
             },
             {"'pre_tokenizer.pattern.Regex' is the integer 1, expected a string"}},
            {"pattern_other_key",
             [](json& j) {
               j["pre_tokenizer"]["pattern"] = {{"Regexp", " "}};
             },
             {"'pre_tokenizer.pattern': a Split pattern must be {\"Regex\": ...} or "
              "{\"String\": ...}"}},
            {"pattern_bad_regex",
             [](json& j) { j["pre_tokenizer"]["pattern"]["Regex"] = "(unclosed"; },
             {"'pre_tokenizer.pattern.Regex': cannot compile regex \"(unclosed\""}},
            {"no_behavior",
             [](json& j) { j["pre_tokenizer"].erase("behavior"); },
             {"missing 'pre_tokenizer.behavior'"}},
            {"behavior_unknown",
             [](json& j) { j["pre_tokenizer"]["behavior"] = "Bogus"; },
             {"'pre_tokenizer.behavior': unsupported Split behavior \"Bogus\""}},
            {"invert_string",
             [](json& j) { j["pre_tokenizer"]["invert"] = "no"; },
             {"'pre_tokenizer.invert' is a string, expected true or false"}},
            {"sequence_no_list",
             [](json& j) {
               j["pre_tokenizer"] = {{"type", "Sequence"}};
             },
             {"missing 'pre_tokenizer.pretokenizers' (a Sequence lists its pre-tokenizers)"}},
            {"sequence_object",
             [](json& j) {
               j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::object()}};
             },
             {"'pre_tokenizer.pretokenizers' is an object, expected an array"}},
            {"byte_level_prefix",
             seq({{"type", "ByteLevel"}, {"add_prefix_space", "no"}}),
             {"'pre_tokenizer.pretokenizers[0].add_prefix_space' is a string, expected true or "
              "false"}},
            {"byte_level_regex",
             seq({{"type", "ByteLevel"}, {"use_regex", 0}}),
             {"'pre_tokenizer.pretokenizers[0].use_regex' is the integer 0"}},
            {"metaspace_scheme",
             seq({{"type", "Metaspace"}, {"prepend_scheme", "sometimes"}}),
             {"'pre_tokenizer.pretokenizers[0].prepend_scheme': unsupported Metaspace "
              "prepend_scheme \"sometimes\""}},
            {"metaspace_scheme_type",
             seq({{"type", "Metaspace"}, {"prepend_scheme", true}}),
             {"'pre_tokenizer.pretokenizers[0].prepend_scheme' is a boolean, expected a string"}},
            {"metaspace_replacement",
             seq({{"type", "Metaspace"}, {"replacement", 1}}),
             {"'pre_tokenizer.pretokenizers[0].replacement' is the integer 1, expected a string"}},
            {"metaspace_split",
             seq({{"type", "Metaspace"}, {"split", "yes"}}),
             {"'pre_tokenizer.pretokenizers[0].split' is a string, expected true or false"}},
            {"metaspace_prefix",
             seq({{"type", "Metaspace"}, {"add_prefix_space", 1}}),
             {"'pre_tokenizer.pretokenizers[0].add_prefix_space' is the integer 1"}},
        });
}

TEST(TokenizerErrors, Normalizer) {
  auto with = [](json n) { return [n](json& j) { j["normalizer"] = n; }; };
  check("norm", {
                    {"number", with(5), {"'normalizer' is the integer 5, expected an object"}},
                    {"no_type", with(json::object()), {"missing 'normalizer.type' (a normalizer)"}},
                    {"unsupported",
                     with({{"type", "Precompiled"}}),
                     {"'normalizer': unsupported normalizer type \"Precompiled\""}},
                    {"sequence_no_list",
                     with({{"type", "Sequence"}}),
                     {"missing 'normalizer.normalizers' (a Sequence lists its normalizers)"}},
                    {"sequence_inner",
                     with({{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}}}}}),
                     {"missing 'normalizer.normalizers[0].prepend'"}},
                    {"prepend_number",
                     with({{"type", "Prepend"}, {"prepend", 1}}),
                     {"'normalizer.prepend' is the integer 1, expected a string"}},
                    {"replace_no_pattern",
                     with({{"type", "Replace"}, {"content", " "}}),
                     {"missing 'normalizer.pattern' (what a Replace normalizer replaces)"}},
                    {"replace_no_content",
                     with({{"type", "Replace"}, {"pattern", {{"String", " "}}}}),
                     {"missing 'normalizer.content'"}},
                    {"replace_pattern_key",
                     with({{"type", "Replace"}, {"pattern", {{"Text", " "}}}, {"content", "_"}}),
                     {"'normalizer.pattern': a Replace pattern must be"}},
                    {"replace_string_number",
                     with({{"type", "Replace"}, {"pattern", {{"String", 1}}}, {"content", "_"}}),
                     {"'normalizer.pattern.String' is the integer 1, expected a string"}},
                    {"replace_bad_regex",
                     with({{"type", "Replace"}, {"pattern", {{"Regex", "["}}}, {"content", "_"}}),
                     {"'normalizer.pattern.Regex': cannot compile regex"}},
                    {"strip_flag",
                     with({{"type", "Strip"}, {"strip_left", "x"}}),
                     {"'normalizer.strip_left' is a string, expected true or false"}},
                });
}

TEST(TokenizerErrors, Decoder) {
  auto with = [](json d) { return [d](json& j) { j["decoder"] = d; }; };
  check("dec",
        {
            {"array", with(json::array()), {"'decoder' is an array, expected an object"}},
            {"type_number", with({{"type", 1}}), {"'decoder.type' is the integer 1"}},
            {"unsupported",
             with({{"type", "WordPiece"}}),
             {"'decoder': unsupported decoder type \"WordPiece\""}},
            {"sequence_no_list",
             with({{"type", "Sequence"}}),
             {"missing 'decoder.decoders' (a Sequence lists its decoders)"}},
            {"sequence_inner",
             with({{"type", "Sequence"}, {"decoders", {{{"type", "Strip"}}}}}),
             {"missing 'decoder.decoders[0].content'"}},
            {"strip_two_chars",
             with({{"type", "Strip"}, {"content", "ab"}}),
             {"'decoder.content' is \"ab\", expected one character"}},
            {"strip_start",
             with({{"type", "Strip"}, {"content", " "}, {"start", -1}}),
             {"'decoder.start' is the integer -1, expected a non-negative integer"}},
            {"strip_stop",
             with({{"type", "Strip"}, {"content", " "}, {"stop", "1"}}),
             {"'decoder.stop' is a string, expected a non-negative integer"}},
            {"replace_regex",
             with({{"type", "Replace"}, {"pattern", {{"Regex", " "}}}, {"content", "_"}}),
             {"'decoder.pattern': a Replace decoder supports only {\"String\": ...} patterns"}},
            {"replace_no_content",
             with({{"type", "Replace"}, {"pattern", {{"String", " "}}}}),
             {"missing 'decoder.content' (what a Replace decoder writes)"}},
            {"metaspace_replacement",
             with({{"type", "Metaspace"}, {"replacement", false}}),
             {"'decoder.replacement' is a boolean, expected a string"}},
            {"metaspace_prefix",
             with({{"type", "Metaspace"}, {"add_prefix_space", "yes"}}),
             {"'decoder.add_prefix_space' is a string, expected true or false"}},
        });
}

TEST(TokenizerErrors, AddedTokens) {
  check("added", {
                     {"object",
                      [](json& j) { j["added_tokens"] = json::object(); },
                      {"'added_tokens' is an object, expected an array (the added tokens)"}},
                     {"element_string",
                      [](json& j) { j["added_tokens"][0] = "<s>"; },
                      {"'added_tokens[0]' is a string, expected an object (an added token"}},
                     {"no_id",
                      [](json& j) { j["added_tokens"][0].erase("id"); },
                      {"missing 'added_tokens[0].id' (an added token's id)"}},
                     {"no_content",
                      [](json& j) { j["added_tokens"][0].erase("content"); },
                      {"missing 'added_tokens[0].content'"}},
                     {"id_string",
                      [](json& j) { j["added_tokens"][0]["id"] = "3"; },
                      {"'added_tokens[0].id' is a string, expected a token id"}},
                     {"content_number",
                      [](json& j) { j["added_tokens"][0]["content"] = 3; },
                      {"'added_tokens[0].content' is the integer 3, expected a string"}},
                     {"special_string",
                      [](json& j) { j["added_tokens"][0]["special"] = "true"; },
                      {"'added_tokens[0].special' is a string, expected true or false"}},
                     {"lstrip_number",
                      [](json& j) { j["added_tokens"][0]["lstrip"] = 0; },
                      {"'added_tokens[0].lstrip' is the integer 0"}},
                     {"rstrip_number",
                      [](json& j) { j["added_tokens"][0]["rstrip"] = 0; },
                      {"'added_tokens[0].rstrip' is the integer 0"}},
                     {"single_word_string",
                      [](json& j) { j["added_tokens"][0]["single_word"] = "no"; },
                      {"'added_tokens[0].single_word' is a string"}},
                     {"normalized_string",
                      [](json& j) { j["added_tokens"][0]["normalized"] = "no"; },
                      {"'added_tokens[0].normalized' is a string"}},
                 });
}

TEST(TokenizerErrors, PostProcessor) {
  auto with = [](json p) { return [p](json& j) { j["post_processor"] = p; }; };
  const json single = json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                   {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}});
  const json specials = {{"<s>", {{"id", "<s>"}, {"ids", {3}}, {"tokens", {"<s>"}}}}};
  auto tmpl = [&](json s, json sp) {
    return json{{"type", "TemplateProcessing"}, {"single", s}, {"special_tokens", sp}};
  };
  json bad_ids = specials;
  bad_ids["<s>"]["ids"] = {"3"};
  json no_ids = specials;
  no_ids["<s>"].erase("ids");
  check("post",
        {
            {"string", with("x"), {"'post_processor' is a string, expected an object"}},
            {"unsupported",
             with({{"type", "Bogus"}}),
             {"'post_processor': unsupported post_processor type \"Bogus\""}},
            {"sequence_no_list",
             with({{"type", "Sequence"}}),
             {"missing 'post_processor.processors'"}},
            {"template_no_single",
             with({{"type", "TemplateProcessing"}, {"special_tokens", specials}}),
             {"missing 'post_processor.single' (the template for one sequence)"}},
            {"template_no_specials",
             with({{"type", "TemplateProcessing"}, {"single", single}}),
             {"missing 'post_processor.special_tokens'"}},
            {"template_unknown_special",
             with(tmpl(single, json::object())),
             {"'post_processor.single[0]': special token \"<s>\" is not in "
              "'post_processor.special_tokens'"}},
            {"template_item_string",
             with(tmpl(json::array({"<s>"}), specials)),
             {"'post_processor.single[0]' is a string, expected an object ({\"Sequence\": ...} or "
              "{\"SpecialToken\": ...})"}},
            {"template_item_other",
             with(tmpl(json::array({{{"Token", 1}}}), specials)),
             {"missing 'post_processor.single[0].SpecialToken'"}},
            {"template_id_number",
             with(tmpl(json::array({{{"SpecialToken", {{"id", 3}}}}}), specials)),
             {"'post_processor.single[0].SpecialToken.id' is the integer 3, expected a string"}},
            {"template_ids_string",
             with(tmpl(single, bad_ids)),
             {"'post_processor.special_tokens[\"<s>\"].ids[0]' is a string, expected a token id"}},
            {"template_no_ids",
             with(tmpl(single, no_ids)),
             {"missing 'post_processor.special_tokens[\"<s>\"].ids'"}},
            {"bert_no_cls",
             with({{"type", "BertProcessing"}, {"sep", {"[SEP]", 1}}}),
             {"missing 'post_processor.cls' (the CLS token: [token, id])"}},
            {"bert_short_cls",
             with({{"type", "BertProcessing"}, {"cls", {"[CLS]"}}, {"sep", {"[SEP]", 1}}}),
             {"'post_processor.cls' has 1 element, expected at least 2"}},
            {"roberta_sep_id",
             with({{"type", "RobertaProcessing"}, {"cls", {"<s>", 0}}, {"sep", {"</s>", "2"}}}),
             {"'post_processor.sep[1]' is a string, expected a token id"}},
        });
}

TEST(TokenizerErrors, ConfigFields) {
  struct ConfigCase {
    std::string name, config, expect;
  };
  for (const ConfigCase& c : std::vector<ConfigCase>{
           {"bos_number", R"({"bos_token": 5})",
            "'bos_token' is the integer 5, expected a string or an object with \"content\""},
           {"eos_array", R"({"eos_token": []})", "'eos_token' is an array, expected a string"},
           {"bos_no_content", R"({"bos_token": {"text": "<s>"}})",
            "missing 'bos_token.content' (the token's text)"},
           {"bos_content_number", R"({"bos_token": {"content": 1}})",
            "'bos_token.content' is the integer 1, expected a string"},
           {"add_bos_string", R"({"add_bos_token": "yes"})",
            "'add_bos_token' is a string, expected true or false"},
           {"add_eos_number", R"({"add_eos_token": 1})", "'add_eos_token' is the integer 1"},
           {"top_level_array", R"([])", "the top level is an array, expected an object"},
           {"invalid_json", R"({"bos_token": )", "invalid JSON"},
       }) {
    const fs::path dir = write("config_" + c.name, base().dump(), c.config);
    const std::string e = error_of(dir);
    const std::string file =
        "tokenizer config '" + (dir / "tokenizer_config.json").string() + "': ";
    EXPECT_EQ(e.rfind(file, 0), 0u) << c.name << ": " << e;
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.name << ": lacks [" << c.expect << "]\n"
                                                   << e;
  }
  // Valid forms: a string, an AddedToken object, null.
  const fs::path ok = write("config_ok", base().dump(),
                            R"({"bos_token": {"__type": "AddedToken", "content": "<s>"},
                                "eos_token": null, "add_bos_token": true})");
  Tokenizer t = Tokenizer::from_folder(ok);
  EXPECT_EQ(t.encode("ab", true), (std::vector<int32_t>{3, 2}));
}

TEST(TokenizerErrors, Files) {
  const fs::path dir = write("invalid_json", R"({"model": )");
  const std::string e = error_of(dir);
  EXPECT_EQ(e.rfind("tokenizer '" + (dir / "tokenizer.json").string() + "': invalid JSON", 0), 0u)
      << e;
  const fs::path none = folder("no_file");
  const std::string missing = error_of(none);
  EXPECT_NE(missing.find("tokenizer '" + (none / "tokenizer.json").string() + "': not found"),
            std::string::npos)
      << missing;
}

}  // namespace
