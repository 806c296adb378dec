// luminal::io::ChatTemplate: loading (folder, string, built-in) and rendering.
#include "luminal/io/chat_template.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "luminal/core/error.hpp"
#include "luminal/io/chat/ast.hpp"
#include "luminal/io/chat/builtin_templates.hpp"

namespace luminal::io {
namespace {

using Json = nlohmann::ordered_json;

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error("cannot read " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Json read_json(const std::filesystem::path& p) {
  try {
    return Json::parse(read_file(p));
  } catch (const Json::exception& e) {
    throw Error(p.string() + ": invalid JSON: " + e.what());
  }
}

chat::Value to_value(const Json& j) {
  using chat::Value;
  switch (j.type()) {
    case Json::value_t::null: return Value::none();
    case Json::value_t::boolean: return Value::boolean(j.get<bool>());
    case Json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case Json::value_t::number_unsigned:
      return Value::integer(static_cast<int64_t>(j.get<uint64_t>()));
    case Json::value_t::number_float: return Value::floating(j.get<double>());
    case Json::value_t::string: return Value::string(j.get<std::string>());
    case Json::value_t::array: {
      chat::List items;
      for (const auto& x : j)
        items.push_back(to_value(x));
      return Value::make_list(std::move(items));
    }
    case Json::value_t::object: {
      Value d = Value::make_dict();
      for (const auto& [k, x] : j.items())
        d.dict->set(Value::string(k), to_value(x));
      return d;
    }
    default: return Value::none();
  }
}

// A template from tokenizer_config.json's "chat_template": a string, or [{name, template}].
std::optional<std::string> config_template(const Json& value, const std::filesystem::path& where) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    for (const auto& t : value)
      if (t.is_object() && t.value("name", "") == "default" && t.contains("template") &&
          t["template"].is_string())
        return t["template"].get<std::string>();
    throw Error(where.string() + ": chat_template lists no template named \"default\"");
  }
  if (value.is_null()) return std::nullopt;
  throw Error(where.string() + ": chat_template must be a string or a list of {name, template}");
}

std::string with_line(const std::string& name, int line, const std::string& msg) {
  return "chat template '" + name + "' line " + std::to_string(line) + ": " + msg;
}

}  // namespace

ChatTemplate ChatTemplate::from_string(std::string source, std::string name) {
  auto program = std::make_shared<chat::Program>();
  program->name = std::move(name);
  program->source = std::move(source);
  try {
    program->body = chat::parse(program->source);
  } catch (const chat::SyntaxError& e) {
    throw Error(with_line(program->name, e.line, "syntax error: " + e.message));
  }
  ChatTemplate t;
  t.program_ = std::move(program);
  return t;
}

ChatTemplate ChatTemplate::from_folder(const std::filesystem::path& dir) {
  std::map<std::string, std::string> special;
  std::optional<std::string> source;
  std::string name;
  auto cfg_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(cfg_path)) {
    Json cfg = read_json(cfg_path);
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
      if (!cfg.contains(key)) continue;
      const Json& v = cfg[key];
      if (v.is_string()) {
        special[key] = v.get<std::string>();
      } else if (v.is_object() && v.contains("content") && v["content"].is_string()) {
        special[key] = v["content"].get<std::string>();
      }
    }
    if (cfg.contains("chat_template")) {
      source = config_template(cfg["chat_template"], cfg_path);
      name = cfg_path.string();
    }
  }
  if (auto jinja = dir / "chat_template.jinja"; std::filesystem::exists(jinja)) {
    source = read_file(jinja);
    name = jinja.string();
  } else if (auto js = dir / "chat_template.json"; !source && std::filesystem::exists(js)) {
    Json j = read_json(js);
    if (j.contains("chat_template")) {
      source = config_template(j["chat_template"], js);
      name = js.string();
    }
  }
  if (!source)
    throw Error("no chat template in " + dir.string() +
                " (looked for chat_template.jinja, tokenizer_config.json \"chat_template\", "
                "chat_template.json); use ChatTemplate::builtin(\"llama3\" | \"chatml\" | "
                "\"gemma\" | \"mistral\")");
  ChatTemplate t = from_string(std::move(*source), name);
  t.special_tokens_ = std::move(special);
  return t;
}

ChatTemplate ChatTemplate::builtin(std::string_view family) {
  for (const auto& b : chat::kBuiltinTemplates)
    if (b.family == family)
      return from_string(std::string(b.source), "builtin:" + std::string(family));
  throw Error("no built-in chat template '" + std::string(family) +
              "' (have llama3, chatml, gemma, mistral)");
}

std::vector<std::string_view> ChatTemplate::builtin_families() {
  std::vector<std::string_view> out;
  for (const auto& b : chat::kBuiltinTemplates)
    out.push_back(b.family);
  return out;
}

const std::string& ChatTemplate::name() const { return program_->name; }
const std::string& ChatTemplate::source() const { return program_->source; }

namespace {
std::string run(const chat::Program& p, std::map<std::string, chat::Value> vars) {
  try {
    return chat::render(p, std::move(vars));
  } catch (const chat::RenderError& e) {
    throw Error(with_line(p.name, e.line, e.message));
  }
}
}  // namespace

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt,
                                 const std::map<std::string, std::string>& variables) const {
  using chat::Value;
  std::map<std::string, Value> vars;
  vars["tools"] = Value::none();
  vars["documents"] = Value::none();
  for (const auto& [k, v] : variables)
    vars[k] = Value::string(v);
  chat::List list;
  for (const auto& m : messages) {
    Value d = Value::make_dict();
    d.dict->set(Value::string("role"), Value::string(m.role));
    d.dict->set(Value::string("content"), Value::string(m.content));
    list.push_back(std::move(d));
  }
  vars["messages"] = Value::make_list(std::move(list));
  vars["add_generation_prompt"] = Value::boolean(add_generation_prompt);
  return run(*program_, std::move(vars));
}

std::string ChatTemplate::render_json(std::string_view context_json) const {
  Json ctx;
  try {
    ctx = Json::parse(context_json);
  } catch (const Json::exception& e) {
    throw Error(std::string("chat template context: invalid JSON: ") + e.what());
  }
  if (!ctx.is_object()) throw Error("chat template context must be a JSON object");
  std::map<std::string, chat::Value> vars;
  vars["tools"] = chat::Value::none();
  vars["documents"] = chat::Value::none();
  for (const auto& [k, v] : ctx.items())
    vars[k] = to_value(v);
  return run(*program_, std::move(vars));
}

}  // namespace luminal::io
