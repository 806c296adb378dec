#include "luminal/io/generation_config.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "luminal/io/config_fields.hpp"

namespace luminal::io {

GenerationConfig parse_generation_config_json(std::string_view text, std::string_view source) {
  GenerationConfig g;
  g.source = std::string(source);
  const nlohmann::json root = parse_json_object(text, g.source);
  const ConfigFields f(root, g.source, "", "?");
  g.eos_token_ids = f.int_or_list("eos_token_id");
  if (const nlohmann::json* v = f.get("do_sample"); v && v->is_boolean())
    g.do_sample = v->get<bool>();
  if (g.do_sample) {
    g.temperature = f.opt_double("temperature");
    g.top_k = f.opt_double("top_k");
    g.top_p = f.opt_double("top_p");
    g.min_p = f.opt_double("min_p");
  }
  g.repetition_penalty = f.opt_double("repetition_penalty");
  return g;
}

GenerationConfig read_generation_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    GenerationConfig empty;
    empty.source = file.string();
    return empty;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_generation_config_json(ss.str(), file.string());
}

}  // namespace luminal::io
