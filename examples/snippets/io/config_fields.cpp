// luminal/io/config_fields.hpp: typed reads of one object of a JSON config file; every error
// names the source, the field with its path and what was expected.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "luminal/io/config_fields.hpp"
#include "snippet.hpp"

using namespace luminal::io;

int main() {
  const nlohmann::json root = parse_json_object(
      R"({"num_hidden_layers": 2, "rope_theta": "big", "head_dim": null,
          "rope_scaling": {"factor": 8}})",
      "config.json");
  ConfigFields f(root, "config.json", "", "llama");
  int64_t layers = f.req_pos_int("num_hidden_layers");
  expect(layers == 2, "a required positive integer");
  expect(!f.opt_int("head_dim"), "a member that is null counts as absent");
  ConfigFields rs = f.sub("rope_scaling", *f.opt_object("rope_scaling"));  // 'rope_scaling.x'
  expect(rs.req_double("factor") == 8, "a member object's field");

  expect(error_of([&] { f.req_pos_int("num_attention_heads"); }) ==
             "config.json: missing field 'num_attention_heads' (required for model_type 'llama')",
         "a missing field names the model type");
  expect(error_of([&] { f.opt_double("rope_theta"); }) ==
             "config.json: field 'rope_theta' must be a number, got a string \"big\"",
         "a wrong type names the field and what it got");
  expect(error_of([&] {
           rs.req_int("original_max_position_embeddings");
         }).find("'rope_scaling.original_max_position_embeddings'") != std::string::npos,
         "a member object's field is named by its path");
}
