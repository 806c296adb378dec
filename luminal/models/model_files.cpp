#include "luminal/models/model_files.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "luminal/compiler/compile_cache.hpp"
#include "luminal/core/error.hpp"
#include "luminal/core/hash.hpp"
#include "luminal/io/generation_config.hpp"
#include "luminal/io/gguf.hpp"
#include "luminal/io/gguf_model.hpp"
#include "luminal/models/experts.hpp"

namespace luminal::models {

namespace fs = std::filesystem;

namespace {

bool is_gguf(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".gguf";
}

bool quant_off() {
  const char* v = std::getenv("LUMINAL_QUANT");
  return v && std::string_view(v) == "off";
}

bool cache_off() {
  const char* v = std::getenv("LUMINAL_CACHE");
  return v && std::string_view(v) == "off";
}

void add_unique(std::vector<int64_t>& ids, int64_t id) {
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

}  // namespace

GenerationDefaults read_generation_config(const fs::path& dir) {
  const io::GenerationConfig g = io::read_generation_config(dir / "generation_config.json");
  GenerationDefaults d;
  d.eos_ids = g.eos_token_ids;
  d.do_sample = g.do_sample;
  nn::SamplingConfig& c = d.sampling;
  if (!d.do_sample) {
    const double rp = g.repetition_penalty.value_or(1);
    c.repetition_penalty = rp > 0 ? rp : 1;
    return d;
  }
  // transformers' defaults where the file is silent: temperature 1, top_k 50, top_p 1.
  c.temperature = g.temperature.value_or(1.0);
  c.top_k = static_cast<int64_t>(g.top_k.value_or(50));
  c.top_p = g.top_p.value_or(c.top_p);
  c.min_p = g.min_p.value_or(c.min_p);
  c.repetition_penalty = g.repetition_penalty.value_or(c.repetition_penalty);
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(g.source + ": " + e.what());
  }
  return d;
}

namespace {

ModelFiles open_folder(const fs::path& dir, const OpenOptions& o) {
  ModelFiles m;
  m.path = dir;
  m.config = io::parse_config(dir / "config.json");
  m.generation = read_generation_config(dir);
  m.eos_ids = m.config.eos_token_ids;
  for (int64_t id : m.generation.eos_ids)
    add_unique(m.eos_ids, id);
  if (o.tokenizer && fs::exists(dir / "tokenizer.json"))
    m.tokenizer = io::Tokenizer::from_folder(dir);
  const bool has_template = fs::exists(dir / "chat_template.jinja") ||
                            fs::exists(dir / "chat_template.json") ||
                            fs::exists(dir / "tokenizer_config.json");
  if (has_template) {
    try {
      m.chat_template = io::ChatTemplate::from_folder(dir);
      m.template_variables = m.chat_template->special_tokens();
    } catch (const Error&) {
      // tokenizer_config.json without a template: no chat template (the CLI says so for --chat)
      if (fs::exists(dir / "chat_template.jinja")) throw;
    }
  }
  return m;
}

ModelFiles open_gguf(const fs::path& file, const OpenOptions& o) {
  io::GgufModelOptions go;
  go.tokenizer = o.tokenizer;
  go.weights = false;
  io::GgufModel g = io::read_gguf_model(file, go);
  ModelFiles m;
  m.path = file;
  m.gguf = true;
  m.config = g.config;
  m.tokenizer = std::move(g.tokenizer);
  if (g.chat_template)
    m.chat_template = io::ChatTemplate::from_string(*g.chat_template, file.filename().string());
  m.template_variables = g.special_tokens;
  m.eos_ids = g.stop_ids;
  for (int64_t id : m.config.eos_token_ids)
    add_unique(m.eos_ids, id);
  return m;
}

}  // namespace

ModelFiles open_model(const fs::path& path, const OpenOptions& options) {
  if (fs::is_directory(path)) return open_folder(path, options);
  if (fs::is_regular_file(path) && is_gguf(path)) return open_gguf(path, options);
  if (!fs::exists(path))
    throw Error("model '" + path.string() +
                "' does not exist: give a Hugging Face folder (config.json + *.safetensors) or a "
                ".gguf file");
  throw Error("model '" + path.string() +
              "' is neither a folder nor a .gguf file: give a Hugging Face folder "
              "(config.json + *.safetensors) or a .gguf file");
}

fs::path dequantized_path(const fs::path& gguf, const CompileOptions& options) {
  if (cache_off()) return {};
  std::error_code ec;
  const fs::path abs = fs::absolute(gguf, ec);
  const uint64_t size = fs::file_size(gguf, ec);
  const auto mtime = fs::last_write_time(gguf, ec).time_since_epoch().count();
  const std::string id = abs.string() + "\n" + std::to_string(size) + "\n" + std::to_string(mtime);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash_string(id)));
  return cache_root(options) / "models" / "dequantized" /
         (gguf.stem().string() + "-" + hex + ".f32.safetensors");
}

std::map<std::string, DType> block_weight_types(const io::Weights& w) {
  std::map<std::string, DType> out;
  for (const std::string& name : w.names()) {
    const DType t = w.get(name).dtype;
    if (is_block(t)) out[name] = t;
  }
  return out;
}

std::map<std::string, DType> matrix16_types(const io::Weights& w) {
  std::map<std::string, DType> out;
  for (const std::string& name : w.names()) {
    const io::TensorView& t = w.get(name);
    if ((t.dtype == DType::BF16 || t.dtype == DType::F16) && t.shape.size() == 2)
      out[name] = t.dtype;
  }
  return out;
}

namespace {

// The weights with the stacked expert tensors the decoder reads (models/experts.hpp).
std::shared_ptr<const io::Weights> with_experts(io::Weights w, const io::ModelConfig& cfg) {
  add_expert_stacks(w, cfg);
  return std::make_shared<const io::Weights>(std::move(w));
}

}  // namespace

std::shared_ptr<const io::Weights> open_weights(const ModelFiles& m, const CompileOptions& options,
                                                const io::LoadProgress& progress,
                                                const std::function<bool(DType)>& keep_blocks) {
  if (!m.gguf) return with_experts(io::Weights::open(m.path), m.config);
  const uint64_t limit = options.max_memory() ? *options.max_memory() : 0;
  if (keep_blocks && !quant_off()) {
    auto file = std::make_shared<const io::GgufFile>(io::GgufFile::open(m.path));
    return with_experts(io::gguf_block_weights(file, m.config, keep_blocks, limit, progress),
                        m.config);
  }
  const fs::path cached = dequantized_path(m.path, options);
  if (!cached.empty() && fs::exists(cached)) {
    try {
      io::Weights w = io::Weights::open(cached);
      uint64_t bytes = 0;
      for (const std::string& name : w.names())
        bytes += w.get(name).bytes.size();
      if (limit && bytes > limit)
        throw Error("models: the weights of '" + m.path.string() + "' take " +
                    std::to_string(bytes) + " bytes as f32, over max_memory (" +
                    std::to_string(limit) + " bytes)");
      return with_experts(std::move(w), m.config);
    } catch (const Error& e) {
      if (std::string_view(e.what()).find("max_memory") != std::string_view::npos) throw;
      std::fprintf(stderr, "luminal: ignoring the unreadable dequantised copy %s (%s)\n",
                   cached.string().c_str(), e.what());
    }
  }
  io::GgufFile f = io::GgufFile::open(m.path);
  io::Weights w = io::gguf_weights(f, m.config, limit, progress);
  if (!cached.empty()) {
    // Atomic: written beside, then renamed into place; a failure only costs the next load time.
    std::error_code ec;
    fs::create_directories(cached.parent_path(), ec);
    const fs::path tmp = cached.string() + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::binary);
      const std::span<const uint8_t> bytes = w.files().at(0).buffer();
      io::ProgressMeter meter(progress, "caching", bytes.size());
      constexpr size_t chunk = size_t(8) << 20;
      for (size_t at = 0; at < bytes.size() && out; at += chunk) {
        const size_t n = std::min(chunk, bytes.size() - at);
        out.write(reinterpret_cast<const char*>(bytes.data() + at),
                  static_cast<std::streamsize>(n));
        meter.advance(n);
      }
      if (!out) ec = std::make_error_code(std::errc::io_error);
    }
    if (!ec) fs::rename(tmp, cached, ec);
    if (ec) fs::remove(tmp, ec);
  }
  return with_experts(std::move(w), m.config);
}

fs::path default_model_path() {
  return cache_root(CompileOptions()) / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace luminal::models
