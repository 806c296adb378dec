// luminal/io/tokenizer/json_at.hpp: a tokenizer file's JSON values with their paths, so that
// every error says where the problem is and what was expected there.
#include <nlohmann/json.hpp>

#include <string>

#include "luminal/io/tokenizer/json_at.hpp"
#include "snippet.hpp"

using luminal::io::tok::JsonAt;

int main() {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"model": {"type": "BPE", "merges": "a b", "vocab": {"a": 0}}, "decoder": null})");
  JsonAt root(j, "");
  JsonAt model = root.req("model", "the tokenizer's model: its vocab and merges");
  expect(model.path() == "model" && model.type("the model") == "BPE", "a member and its path");
  expect(!root.opt("decoder"), "a member that is null counts as absent");

  expect(error_of([&] { root.req("normalizer", "its normalizer"); }) ==
             "missing 'normalizer' (its normalizer)",
         "a missing member");
  expect(error_of([&] {
           model.req("merges", "a BPE model needs its merges").elements("merges");
         }) == "'model.merges' is a string, expected an array (merges)",
         "a wrong type names the path");
}
