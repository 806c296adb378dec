// `luminal inspect DIR`: architecture, sizes, parameter count, dtypes, shards, tokenizer and
// special tokens of a Hugging Face model folder. `luminal inspect FILE.gguf`: version,
// architecture, hyperparameters, tensor types (values and bytes in the file per type), tokenizer
// and chat template of a GGUF file.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "apps/luminal/commands.hpp"
#include "luminal/core/error.hpp"
#include "luminal/io/gguf.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/io/tokenizer.hpp"

namespace luminal::cli {
namespace {

namespace fs = std::filesystem;

// 13264 -> "13,264"
std::string grouped(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<size_t>(i), ",");
  return s;
}

// 8030261248 -> "8.03B"
std::string human(double v) {
  const char* units[] = {"", "K", "M", "B", "T"};
  int u = 0;
  while (v >= 1000.0 && u < 4) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%s" : "%.3g%s", v, units[u]);
  return buf;
}

std::string bytes_str(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

// 500000 -> "500000", 1e-05 -> "1e-05"
std::string fmt_double(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream os;
  os << v;
  return os.str();
}

void row(const std::string& key, const std::string& value) {
  std::string k = key + ":";
  if (k.size() < 16) k.resize(16, ' ');
  std::cout << k << value << "\n";
}

bool has_weights(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".safetensors" ||
        e.path().filename() == "model.safetensors.index.json") {
      return true;
    }
  }
  return false;
}

void print_config(const io::ModelConfig& c) {
  std::string arch;
  for (const auto& a : c.architectures)
    arch += (arch.empty() ? "" : ", ") + a;
  row("architecture", (arch.empty() ? "?" : arch) + " (model_type " + c.model_type + ")");
  row("layers", std::to_string(c.num_hidden_layers));
  row("hidden", std::to_string(c.hidden_size) + " (intermediate " +
                    std::to_string(c.intermediate_size) + ", head_dim " +
                    std::to_string(c.head_dim) + ")");
  row("heads", std::to_string(c.num_attention_heads) + " (kv heads " +
                   std::to_string(c.num_key_value_heads) + ")");
  if (c.family == io::ModelFamily::Qwen3Moe) {
    row("experts", std::to_string(c.num_experts) + " (" + std::to_string(c.num_experts_per_tok) +
                       " per token, intermediate " + std::to_string(c.moe_intermediate_size) + ")");
  }
  row("vocab", std::to_string(c.vocab_size));
  std::string rope = "theta " + fmt_double(c.rope_theta);
  if (c.rope_scaling.type != io::RopeType::None) {
    rope += ", " + std::string(io::rope_type_name(c.rope_scaling.type)) + " scaling, factor " +
            fmt_double(c.rope_scaling.factor);
    if (c.rope_scaling.original_max_position_embeddings > 0) {
      rope += " (from " + std::to_string(c.rope_scaling.original_max_position_embeddings) + ")";
    }
  }
  if (c.rope_local_base_freq) rope += "; local layers theta " + fmt_double(*c.rope_local_base_freq);
  row("context", std::to_string(c.max_position_embeddings) + " (rope " + rope + ")");
  if (c.sliding_window) {
    int64_t sliding = 0;
    for (int64_t i = 0; i < c.num_hidden_layers; ++i)
      sliding += c.is_sliding_layer(i) ? 1 : 0;
    row("sliding window", std::to_string(*c.sliding_window) + " (" + std::to_string(sliding) +
                              " of " + std::to_string(c.num_hidden_layers) + " layers)");
  }
  row("config dtype", c.dtype ? std::string(luminal::name(*c.dtype)) : "not given");
  row("tied embed", c.tie_word_embeddings ? "yes" : "no");
}

void print_weights(const fs::path& dir) {
  if (!has_weights(dir)) {
    row("parameters", "no *.safetensors in " + dir.string());
    return;
  }
  io::Weights w = io::Weights::open(dir);
  int64_t params = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> by_dtype;  // name -> (tensors, elements)
  for (const auto& f : w.files()) {
    for (const auto& t : f.tensors()) {
      const int64_t n = t.numel();
      params += n;
      auto& d = by_dtype[std::string(luminal::name(t.dtype))];
      d.first += 1;
      d.second += n;
    }
  }
  row("parameters", grouped(params) + " (" + human(static_cast<double>(params)) + ")");
  std::string dtypes;
  for (const auto& [name, d] : by_dtype) {
    dtypes += (dtypes.empty() ? "" : "; ") + name + " " + grouped(d.second) + " in " +
              std::to_string(d.first) + " tensors";
  }
  row("dtypes", dtypes);
  row("shards", std::to_string(w.files().size()) + " (" + std::to_string(w.size()) + " tensors)");
  for (const auto& f : w.files()) {
    std::cout << "  " << fs::path(f.source()).filename().string() << ": " << f.tensors().size()
              << " tensors, " << bytes_str(f.buffer().size()) << "\n";
  }
}

std::string token_str(const io::Tokenizer* tok, int64_t id) {
  std::string s = std::to_string(id);
  if (tok && id >= 0 && id < static_cast<int64_t>(1) << 31) {
    try {
      s = escape(tok->token(static_cast<int32_t>(id))) + " (" + s + ")";
    } catch (const Error&) {
      s += " (not in the vocabulary)";
    }
  }
  return s;
}

void print_tokenizer(const fs::path& dir, const std::optional<io::ModelConfig>& cfg) {
  std::unique_ptr<io::Tokenizer> tok;
  if (fs::exists(dir / "tokenizer.json")) {
    tok = std::make_unique<io::Tokenizer>(io::Tokenizer::from_folder(dir));
    row("tokenizer", std::string(tok->kind()) + ", vocab " + std::to_string(tok->vocab_size()));
  } else {
    row("tokenizer", "none (no tokenizer.json in " + dir.string() + ")");
  }
  // BOS / EOS: the config's ids, else the tokenizer's.
  std::vector<int64_t> bos = cfg ? cfg->bos_token_ids : std::vector<int64_t>{};
  std::vector<int64_t> eos = cfg ? cfg->eos_token_ids : std::vector<int64_t>{};
  if (bos.empty() && tok && tok->bos_id()) bos = {*tok->bos_id()};
  if (eos.empty() && tok && tok->eos_id()) eos = {*tok->eos_id()};
  auto list = [&](const std::vector<int64_t>& ids) {
    std::string s;
    for (int64_t id : ids)
      s += (s.empty() ? "" : ", ") + token_str(tok.get(), id);
    return s.empty() ? std::string("none") : s;
  };
  row("bos", list(bos));
  row("eos", list(eos));
  if (tok) {
    std::string specials;
    size_t n = 0;
    for (const auto& a : tok->added_tokens()) {
      if (!a.special) continue;
      if (++n <= 12) {
        specials +=
            (specials.empty() ? "" : ", ") + escape(a.content) + " (" + std::to_string(a.id) + ")";
      }
    }
    if (n > 12) specials += ", ... (" + std::to_string(n - 12) + " more)";
    row("special tokens", std::to_string(n) + (n ? ": " + specials : ""));
  }
  // Chat template: tokenizer_config.json's "chat_template", or chat_template.jinja.
  std::string where;
  if (fs::exists(dir / "chat_template.jinja")) {
    where = "chat_template.jinja";
  } else if (fs::exists(dir / "tokenizer_config.json")) {
    std::ifstream in(dir / "tokenizer_config.json");
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("chat_template") && !j["chat_template"].is_null()) {
      where = "tokenizer_config.json";
    }
  }
  row("chat template", where.empty() ? "none" : "yes (" + where + ")");
}

// A metadata value for display: integers and floats as numbers, "?" when absent.
std::string gguf_value(const io::GgufFile& f, const std::string& key) {
  const io::GgufValue* v = f.find(key);
  if (!v) return "?";
  switch (v->type()) {
    case io::GgufValueType::F32:
    case io::GgufValueType::F64: return fmt_double(v->as_float());
    case io::GgufValueType::String: return v->as_string();
    case io::GgufValueType::Array:
    case io::GgufValueType::Bool: return v->describe();
    case io::GgufValueType::U64: return std::to_string(v->as_uint());
    default: return std::to_string(v->as_int());
  }
}

void print_gguf(const fs::path& file) {
  io::GgufFile f = io::GgufFile::open(file);
  row("file", file.string());
  row("format", "GGUF version " + std::to_string(f.version()) + " (alignment " +
                    std::to_string(f.alignment()) + ", " + bytes_str(f.buffer().size()) + ", " +
                    std::to_string(f.metadata().size()) + " metadata keys)");
  const std::string arch = f.find_string("general.architecture").value_or("");
  std::string arch_row = arch.empty() ? "? (no general.architecture)" : arch;
  if (auto name = f.find("general.name"); name && name->type() == io::GgufValueType::String) {
    arch_row += " (" + escape(name->as_string()) + ")";
  }
  row("architecture", arch_row);
  const std::string p = arch + ".";
  row("layers", gguf_value(f, p + "block_count"));
  std::string hidden = gguf_value(f, p + "embedding_length");
  if (f.contains(p + "feed_forward_length")) {
    hidden += " (feed forward " + gguf_value(f, p + "feed_forward_length") + ")";
  }
  row("hidden", hidden);
  row("heads", gguf_value(f, p + "attention.head_count") + " (kv heads " +
                   gguf_value(f, p + "attention.head_count_kv") + ")");
  row("context", gguf_value(f, p + "context_length") + " (rope freq base " +
                     gguf_value(f, p + "rope.freq_base") + ")");
  // Per ggml type: tensors, values and the bytes they take in the file.
  struct TypeTotal {
    int64_t tensors = 0, values = 0;
    uint64_t bytes = 0;
  };
  int64_t params = 0;
  uint64_t tensor_bytes = 0;
  std::map<uint32_t, TypeTotal> by_type;
  for (const auto& t : f.tensors()) {
    params += t.numel();
    tensor_bytes += t.size_bytes;
    TypeTotal& c = by_type[static_cast<uint32_t>(t.type)];
    c.tensors += 1;
    c.values += t.numel();
    c.bytes += t.size_bytes;
  }
  row("parameters", grouped(params) + " (" + human(static_cast<double>(params)) + ")");
  row("tensors", std::to_string(f.tensors().size()) + " (" + bytes_str(tensor_bytes) + ")");
  // One line per type: "  Q4_1    106,168,320 values, 63.3 MiB in 210 tensors", aligned.
  std::vector<std::array<std::string, 4>> lines;
  size_t width[4] = {};
  for (const auto& [id, c] : by_type) {
    lines.push_back({std::string(io::ggml_type_name(static_cast<io::GgmlType>(id))),
                     grouped(c.values), bytes_str(c.bytes), std::to_string(c.tensors)});
    for (size_t i = 0; i < 4; ++i)
      width[i] = std::max(width[i], lines.back()[i].size());
  }
  for (const auto& l : lines) {
    std::cout << "  " << l[0] << std::string(width[0] - l[0].size() + 1, ' ')
              << std::string(width[1] - l[1].size(), ' ') << l[1] << " values, "
              << std::string(width[2] - l[2].size(), ' ') << l[2] << " in "
              << std::string(width[3] - l[3].size(), ' ') << l[3]
              << (l[3] == "1" ? " tensor" : " tensors") << "\n";
  }
  std::string tok = f.find_string("tokenizer.ggml.model").value_or("none");
  if (const io::GgufValue* tokens = f.find("tokenizer.ggml.tokens");
      tokens && tokens->type() == io::GgufValueType::Array) {
    tok += ", vocab " + std::to_string(tokens->as_array().items.size());
  }
  row("tokenizer", tok);
  const io::GgufValue* chat = f.find("tokenizer.chat_template");
  row("chat template", chat ? "yes (tokenizer.chat_template" +
                                  (chat->type() == io::GgufValueType::String
                                       ? ", " + std::to_string(chat->as_string().size()) + " bytes)"
                                       : std::string(")"))
                            : std::string("none"));
}

}  // namespace

void add_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "inspect",
      "Show what a Hugging Face model folder or a GGUF file holds: architecture, sizes, "
      "parameter count, dtypes, shards, tokenizer, special tokens");
  auto dir = std::make_shared<std::string>();
  cmd->add_option("DIR", *dir,
                  "model folder (config.json, *.safetensors, tokenizer.json) or a .gguf file")
      ->required();
  cmd->callback([dir] {
    const fs::path d(*dir);
    if (d.extension() == ".gguf") {
      print_gguf(d);
      return;
    }
    require_model_folder(d);
    if (!fs::exists(d / "config.json")) {
      throw Error((d / "config.json").string() +
                  ": not found; a Hugging Face model folder has a config.json (download it with "
                  "the weights)");
    }
    io::ModelConfig cfg = io::parse_config(d / "config.json");
    row("model", d.string());
    print_config(cfg);
    print_weights(d);
    print_tokenizer(d, cfg);
  });
}

}  // namespace luminal::cli
