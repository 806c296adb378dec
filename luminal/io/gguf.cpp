// GGUF files: the mapped file (mapped_file.hpp) and metadata lookup. Parsing lives in
// gguf_parse.cpp, dequantisation in gguf_dequant.cpp.
#include "luminal/io/gguf.hpp"

#include "luminal/io/mapped_file.hpp"

namespace luminal::io {

namespace {
std::string q(std::string_view s) { return "'" + std::string(s) + "'"; }
}  // namespace

struct GgufFile::Impl {
  explicit Impl(FileBytes f) : file(std::move(f)) {
    header = parse_gguf(buffer(), file.source);
    for (size_t i = 0; i < header.metadata.size(); ++i)
      key_index.emplace(header.metadata[i].first, i);
    for (size_t i = 0; i < header.tensors.size(); ++i)
      tensor_index.emplace(header.tensors[i].name, i);
  }
  std::span<const uint8_t> buffer() const { return file.bytes(); }

  FileBytes file;
  GgufHeader header;
  std::map<std::string, size_t, std::less<>> key_index;
  std::map<std::string, size_t, std::less<>> tensor_index;

  // Runs an accessor of GgufValue, adding the file and the key to its error.
  template <class F>
  auto typed(std::string_view key, F&& f) const -> decltype(f(std::declval<const GgufValue&>())) {
    const GgufValue& v = get(key);
    try {
      return f(v);
    } catch (const Error& e) {
      throw Error("gguf " + q(file.source) + ": key " + q(key) + ": " + e.what());
    }
  }
  const GgufValue* find(std::string_view key) const {
    auto it = key_index.find(key);
    return it == key_index.end() ? nullptr : &header.metadata[it->second].second;
  }
  const GgufValue& get(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) {
      throw Error("gguf " + q(file.source) + ": no metadata key " + q(key) + " (the file has " +
                  std::to_string(header.metadata.size()) + " keys)");
    }
    return *v;
  }
};

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::filesystem::path& file) {
  return GgufFile(std::make_unique<Impl>(FileBytes::open(file, "gguf")));
}

GgufFile GgufFile::from_bytes(std::vector<uint8_t> bytes, std::string source) {
  return GgufFile(std::make_unique<Impl>(FileBytes::own(std::move(bytes), std::move(source))));
}

const std::string& GgufFile::source() const { return impl_->file.source; }
uint32_t GgufFile::version() const { return impl_->header.version; }
uint64_t GgufFile::alignment() const { return impl_->header.alignment; }
uint64_t GgufFile::data_offset() const { return impl_->header.data_offset; }
std::span<const uint8_t> GgufFile::buffer() const { return impl_->buffer(); }

const std::vector<std::pair<std::string, GgufValue>>& GgufFile::metadata() const {
  return impl_->header.metadata;
}
bool GgufFile::contains(std::string_view key) const { return impl_->find(key) != nullptr; }
const GgufValue* GgufFile::find(std::string_view key) const { return impl_->find(key); }
const GgufValue& GgufFile::get(std::string_view key) const { return impl_->get(key); }

int64_t GgufFile::get_int(std::string_view key) const {
  return impl_->typed(key, [](const GgufValue& v) { return v.as_int(); });
}
uint64_t GgufFile::get_uint(std::string_view key) const {
  return impl_->typed(key, [](const GgufValue& v) { return v.as_uint(); });
}
double GgufFile::get_float(std::string_view key) const {
  return impl_->typed(key, [](const GgufValue& v) { return v.as_float(); });
}
bool GgufFile::get_bool(std::string_view key) const {
  return impl_->typed(key, [](const GgufValue& v) { return v.as_bool(); });
}
const std::string& GgufFile::get_string(std::string_view key) const {
  return impl_->typed(key, [](const GgufValue& v) -> const std::string& { return v.as_string(); });
}
const GgufArray& GgufFile::get_array(std::string_view key) const {
  return impl_->typed(key, [](const GgufValue& v) -> const GgufArray& { return v.as_array(); });
}

namespace {
// Converts every element of an array with `f`; errors name the element.
template <class T, class F>
std::vector<T> convert_items(const GgufValue& v, F f) {
  const GgufArray& a = v.as_array();
  std::vector<T> out;
  out.reserve(a.items.size());
  for (size_t i = 0; i < a.items.size(); ++i) {
    try {
      out.push_back(f(a.items[i]));
    } catch (const Error& e) {
      throw Error("element " + std::to_string(i) + ": " + e.what());
    }
  }
  return out;
}
}  // namespace

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  return impl_->typed(key, [](const GgufValue& v) {
    return convert_items<std::string>(v, [](const GgufValue& x) { return x.as_string(); });
  });
}
std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  return impl_->typed(key, [](const GgufValue& v) {
    return convert_items<int64_t>(v, [](const GgufValue& x) { return x.as_int(); });
  });
}
std::vector<double> GgufFile::get_float_array(std::string_view key) const {
  return impl_->typed(key, [](const GgufValue& v) {
    return convert_items<double>(v, [](const GgufValue& x) { return x.as_float(); });
  });
}

std::optional<int64_t> GgufFile::find_int(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get_int(key);
}
std::optional<uint64_t> GgufFile::find_uint(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get_uint(key);
}
std::optional<double> GgufFile::find_float(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get_float(key);
}
std::optional<std::string> GgufFile::find_string(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get_string(key);
}

const std::vector<GgufTensor>& GgufFile::tensors() const { return impl_->header.tensors; }
bool GgufFile::contains_tensor(std::string_view name) const {
  return impl_->tensor_index.count(name) > 0;
}
const GgufTensor& GgufFile::tensor(std::string_view name) const {
  auto it = impl_->tensor_index.find(name);
  if (it == impl_->tensor_index.end()) {
    throw Error("gguf " + q(impl_->file.source) + ": no tensor " + q(name) + " (the file has " +
                std::to_string(impl_->header.tensors.size()) + " tensors)");
  }
  return impl_->header.tensors[it->second];
}

std::optional<DType> dtype_of(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return DType::F32;
    case GgmlType::F16: return DType::F16;
    case GgmlType::BF16: return DType::BF16;
    case GgmlType::Q4_0: return DType::Q4_0;
    case GgmlType::Q4_1: return DType::Q4_1;
    case GgmlType::Q5_0: return DType::Q5_0;
    case GgmlType::Q5_1: return DType::Q5_1;
    case GgmlType::Q8_0: return DType::Q8_0;
    case GgmlType::Q8_1: return DType::Q8_1;
    case GgmlType::Q4_K: return DType::Q4_K;
    case GgmlType::Q5_K: return DType::Q5_K;
    case GgmlType::Q6_K: return DType::Q6_K;
    case GgmlType::Q8_K: return DType::Q8_K;
    default: return std::nullopt;
  }
}

}  // namespace luminal::io
