// Safetensors reading: the memory mapping, sharded checkpoints, conversion and binding to graph
// inputs. Parsing lives in safetensors_parse.cpp, writing in safetensors_writer.cpp.
#include "luminal/io/safetensors.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "luminal/io/error_text.hpp"
#include "luminal/io/mapped_file.hpp"
#include "luminal/runtime/runtime.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::io {

namespace {

std::string q(std::string_view s) { return "'" + std::string(s) + "'"; }

[[noreturn]] void fail_view(const TensorView& t, const std::string& what) {
  throw Error("safetensors " + q(t.file) + ": tensor " + q(t.name) + ": " + what);
}

}  // namespace

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

// ---- SafeTensors ----

struct SafeTensors::Impl {
  explicit Impl(FileBytes f) : file(std::move(f)) {
    SafeTensorsHeader h = parse_safetensors(buffer(), file.source);
    metadata = std::move(h.metadata);
    auto buf = buffer();
    tensors.reserve(h.tensors.size());
    for (auto& e : h.tensors) {
      TensorView v;
      v.name = std::move(e.name);
      v.dtype = e.dtype;
      v.shape = std::move(e.shape);
      v.bytes = buf.subspan(h.data_offset + e.begin, e.end - e.begin);
      v.file = file.source;
      index.emplace(v.name, tensors.size());
      tensors.push_back(std::move(v));
    }
  }
  std::span<const uint8_t> buffer() const { return file.bytes(); }

  FileBytes file;
  std::map<std::string, std::string> metadata;
  std::vector<TensorView> tensors;
  std::map<std::string, size_t, std::less<>> index;
};

SafeTensors::SafeTensors(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SafeTensors::SafeTensors(SafeTensors&&) noexcept = default;
SafeTensors& SafeTensors::operator=(SafeTensors&&) noexcept = default;
SafeTensors::~SafeTensors() = default;

SafeTensors SafeTensors::open(const std::filesystem::path& file) {
  return SafeTensors(std::make_unique<Impl>(FileBytes::open(file, "safetensors")));
}

SafeTensors SafeTensors::from_bytes(std::vector<uint8_t> bytes, std::string source) {
  return SafeTensors(std::make_unique<Impl>(FileBytes::own(std::move(bytes), std::move(source))));
}

const std::string& SafeTensors::source() const { return impl_->file.source; }
const std::map<std::string, std::string>& SafeTensors::metadata() const { return impl_->metadata; }
const std::vector<TensorView>& SafeTensors::tensors() const { return impl_->tensors; }
bool SafeTensors::contains(std::string_view name) const { return impl_->index.count(name) > 0; }
const TensorView& SafeTensors::get(std::string_view name) const {
  auto it = impl_->index.find(name);
  if (it == impl_->index.end())
    throw Error("safetensors " + q(impl_->file.source) + ": no tensor " + q(name) +
                " (the file has " + std::to_string(impl_->tensors.size()) + " tensors)");
  return impl_->tensors[it->second];
}
std::span<const uint8_t> SafeTensors::buffer() const { return impl_->buffer(); }

// ---- Weights ----

Weights::Weights(SafeTensors file) { add(std::move(file)); }

void Weights::add(SafeTensors file) {
  for (const auto& t : file.tensors()) {
    auto it = index_.find(t.name);
    if (it != index_.end())
      throw Error("safetensors " + q(file.source()) + ": tensor " + q(t.name) +
                  ": duplicate: also in " + q(it->second->file));
  }
  files_.push_back(std::move(file));  // views stay valid: they point into the mapping
  for (const auto& t : files_.back().tensors())
    index_.emplace(t.name, &t);
}

void Weights::add_views(std::vector<TensorView> views, std::shared_ptr<const void> owner) {
  for (const auto& t : views) {
    auto it = index_.find(t.name);
    if (it != index_.end())
      throw Error("weights " + q(t.file) + ": tensor " + q(t.name) + ": duplicate: also in " +
                  q(it->second->file));
  }
  owners_.push_back(std::move(owner));
  for (TensorView& t : views) {
    views_.push_back(std::move(t));
    index_.emplace(views_.back().name, &views_.back());
  }
}

std::vector<std::string> Weights::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [n, _] : index_)
    out.push_back(n);
  return out;
}

bool Weights::contains(std::string_view name) const { return index_.count(name) > 0; }

const TensorView& Weights::get(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    std::string files;
    for (const auto& f : files_)
      files += (files.empty() ? "" : ", ") + q(f.source());
    throw Error("weights: no tensor " + q(name) + " in " +
                (files.empty() ? std::string("(no files)") : files));
  }
  return *it->second;
}

Weights Weights::open(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error("safetensors " + q(path.string()) + ": no such file or folder");
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / "model.safetensors.index.json", ec))
      return open_index(path / "model.safetensors.index.json");
    if (fs::exists(path / "model.safetensors", ec))
      return Weights(SafeTensors::open(path / "model.safetensors"));
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.path().extension() == ".safetensors" && e.is_regular_file()) files.push_back(e.path());
    if (files.empty())
      throw Error("safetensors " + q(path.string()) +
                  ": folder has no model.safetensors.index.json, model.safetensors or "
                  "*.safetensors file");
    std::sort(files.begin(), files.end());
    Weights w;
    for (const auto& f : files)
      w.add(SafeTensors::open(f));
    return w;
  }
  if (path.extension() == ".json") return open_index(path);
  return Weights(SafeTensors::open(path));
}

Weights Weights::open_index(const std::filesystem::path& index_json) {
  namespace fs = std::filesystem;
  const std::string idx = index_json.string();
  std::ifstream in(index_json, std::ios::binary);
  if (!in) throw Error("safetensors index " + q(idx) + ": cannot open: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error("safetensors index " + q(idx) + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error("safetensors index " + q(idx) + ": no \"weight_map\" object");
  // shard file -> tensors the index assigns to it
  std::map<std::string, std::vector<std::string>> shards;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string())
      throw Error("safetensors index " + q(idx) + ": tensor " + q(it.key()) +
                  ": weight_map value must be a shard file name");
    shards[it.value().get<std::string>()].push_back(it.key());
  }
  const fs::path dir = index_json.parent_path();
  for (const auto& [shard, tensors] : shards) {
    std::error_code ec;
    if (!fs::exists(dir / shard, ec))
      throw Error("safetensors index " + q(idx) + ": shard " + q(shard) + " is missing (expected " +
                  q((dir / shard).string()) + "; it holds tensor " + q(tensors.front()) +
                  (tensors.size() > 1 ? " and " + std::to_string(tensors.size() - 1) + " more"
                                      : std::string()) +
                  ")");
  }
  Weights w;
  for (const auto& [shard, tensors] : shards) {
    SafeTensors f = SafeTensors::open(dir / shard);
    for (const auto& t : tensors)
      if (!f.contains(t))
        throw Error("safetensors index " + q(idx) + ": tensor " + q(t) + ": the index puts it in " +
                    q(f.source()) + " but that file does not contain it");
    w.add(std::move(f));
  }
  return w;
}

// ---- conversion ----

void convert_into(const TensorView& t, DType target, std::span<uint8_t> out) {
  const int64_t n = static_cast<int64_t>(t.bytes.size()) / size_bytes(t.dtype);
  if (out.size() != static_cast<size_t>(n) * static_cast<size_t>(size_bytes(target)))
    fail_view(t, "convert_into: output holds " + std::to_string(out.size()) + " bytes, " +
                     std::string(name(target)) + " x " + std::to_string(n) + " needs " +
                     std::to_string(n * size_bytes(target)));
  const uint8_t* src = t.bytes.data();
  if (t.dtype == target) {
    if (n) std::memcpy(out.data(), src, t.bytes.size());
    return;
  }
  if (is_float(t.dtype)) {
    if (!is_float(target))
      fail_view(t, "cannot convert " + std::string(name(t.dtype)) + " to " +
                       std::string(name(target)) + " (floats convert only to float dtypes)");
    if (t.dtype == DType::BF16 && target == DType::F32) {  // common case, exact
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        uint32_t b = static_cast<uint32_t>(h) << 16;
        std::memcpy(out.data() + 4 * i, &b, 4);
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      store_from_double(target, out.data(), i, load_as_double(t.dtype, src, i));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = load_as_int64(t.dtype, src, i);
    if (!is_float(target)) {
      bool ok = target == DType::Bool
                    ? (v == 0 || v == 1)
                    : (target == DType::I64 || in_range(target, static_cast<double>(v)));
      if (!ok)
        fail_view(t, "element " + std::to_string(i) + " = " + std::to_string(v) + " does not fit " +
                         std::string(name(target)));
    }
    store_from_int64(target, out.data(), i, v);
  }
}

HostBuffer convert(const TensorView& t, DType target) {
  const size_t n = t.bytes.size() / static_cast<size_t>(size_bytes(t.dtype));
  HostBuffer b{target, std::vector<uint8_t>(n * static_cast<size_t>(size_bytes(target)))};
  convert_into(t, target, b.bytes);
  return b;
}

// ---- binding ----

namespace {

// Binds every matching tensor through `set_same` (the tensor's dtype equals the input's) or
// `set_converted` (converted floats).
template <class SetSame, class SetConverted>
BindReport bind_with(const Graph& g, const Weights& weights, const BindOptions& options,
                     SetSame set_same, SetConverted set_converted) {
  std::map<std::string, NodeId, std::less<>> inputs;
  for (NodeId id : g.inputs())
    inputs.emplace(g.node(id).label, id);

  // The labels first, for the progress total: the bytes of the tensors that feed an input.
  const std::vector<std::string> names = weights.names();
  std::vector<std::string> labels;
  labels.reserve(names.size());
  uint64_t total = 0;
  for (const std::string& tname : names) {
    labels.push_back(options.rename ? options.rename(tname) : tname);
    if (!labels.back().empty() && inputs.count(labels.back()))
      total += weights.get(tname).bytes.size();
  }
  ProgressMeter meter(options.progress, "binding", total);

  BindReport report;
  std::set<std::string> bound;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& tname = names[i];
    const std::string& label = labels[i];
    const TensorView& t = weights.get(tname);
    auto it = label.empty() ? inputs.end() : inputs.find(label);
    if (it == inputs.end()) {
      report.unused_tensors.push_back(tname);
      continue;
    }
    const Node& node = g.node(it->second);
    const std::string where =
        "safetensors " + q(t.file) + ": tensor " + q(tname) + " -> graph input " + q(label) + ": ";
    if (bound.count(label))
      throw Error(where +
                  "another tensor was already bound to this input (check the rename "
                  "function)");
    // Shape: rank, then every dim that evaluates (static, or dynamic with a value set).
    bool shape_ok = node.shape.size() == t.shape.size();
    for (size_t i = 0; shape_ok && i < t.shape.size(); ++i) {
      auto v = node.shape[i].try_eval(g.dims());
      if (v && *v != t.shape[i]) shape_ok = false;
    }
    if (!shape_ok)
      throw Error(where + "shape mismatch: input expects " + shape_to_string(node.shape) +
                  ", file has " + shape_str(t.shape));
    if (node.dtype == t.dtype) {
      set_same(label, t);
    } else if (options.convert_floats && is_float(node.dtype) && is_float(t.dtype)) {
      set_converted(label, convert(t, node.dtype));
    } else {
      throw Error(where + "dtype mismatch: input expects " + std::string(name(node.dtype)) +
                  ", file has " + std::string(name(t.dtype)) +
                  (is_float(node.dtype) && is_float(t.dtype)
                       ? " (float conversion is disabled by BindOptions::convert_floats)"
                       : " (only float-to-float conversion is allowed)"));
    }
    bound.insert(label);
    report.bound.push_back(label);
    meter.advance(t.bytes.size());
  }
  meter.finish();
  for (const auto& [label, id] : inputs)
    if (!bound.count(label)) report.unset_inputs.push_back(label);
  if (options.require_all_inputs && !report.unset_inputs.empty()) {
    std::string list;
    for (const auto& l : report.unset_inputs)
      list += (list.empty() ? "" : ", ") + q(l);
    throw Error("bind: graph inputs left unset (no tensor of that name in the weights): " + list);
  }
  return report;
}

}  // namespace

BindReport bind(Runtime& rt, const Weights& weights, const BindOptions& options) {
  return bind_with(
      rt.graph(), weights, options,
      [&](const std::string& label, const TensorView& t) {
        rt.set_bytes(label, t.bytes.data(), t.bytes.size());
      },
      [&](const std::string& label, const HostBuffer& b) {
        rt.set_bytes(label, b.bytes.data(), b.bytes.size());
      });
}

BindReport bind(Session& session, std::shared_ptr<const Weights> weights,
                const BindOptions& options) {
  if (!weights) throw Error("bind: no weights (a null pointer)");
  return bind_with(
      session.graph(), *weights, options,
      [&](const std::string& label, const TensorView& t) {
        session.set_external(label, t.bytes.data(), t.bytes.size(), weights);
      },
      [&](const std::string& label, const HostBuffer& b) {
        session.set_bytes(label, b.bytes.data(), b.bytes.size());
      });
}

}  // namespace luminal::io
