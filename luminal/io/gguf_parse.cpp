// GGUF parsing and validation from a byte span, the ggml type table and metadata values. Depends
// only on luminal/core/error, so the fuzz target compiles it on its own.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "luminal/io/error_text.hpp"
#include "luminal/io/gguf.hpp"

namespace luminal::io {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
constexpr int kMaxNesting = 8;           // arrays of arrays: real files nest one deep at most
constexpr uint64_t kDefaultAlignment = 32;

struct TypeRow {
  uint32_t id;
  GgmlTypeInfo info;
};
// ggml's table (ggml.c type_traits): name, values per block, bytes per block.
constexpr TypeRow kTypes[] = {
    {0, {"F32", 1, 4}},         {1, {"F16", 1, 2}},         {2, {"Q4_0", 32, 18}},
    {3, {"Q4_1", 32, 20}},      {6, {"Q5_0", 32, 22}},      {7, {"Q5_1", 32, 24}},
    {8, {"Q8_0", 32, 34}},      {9, {"Q8_1", 32, 40}},      {10, {"Q2_K", 256, 84}},
    {11, {"Q3_K", 256, 110}},   {12, {"Q4_K", 256, 144}},   {13, {"Q5_K", 256, 176}},
    {14, {"Q6_K", 256, 210}},   {15, {"Q8_K", 256, 292}},   {16, {"IQ2_XXS", 256, 66}},
    {17, {"IQ2_XS", 256, 74}},  {18, {"IQ3_XXS", 256, 98}}, {19, {"IQ1_S", 256, 50}},
    {20, {"IQ4_NL", 32, 18}},   {21, {"IQ3_S", 256, 110}},  {22, {"IQ2_S", 256, 82}},
    {23, {"IQ4_XS", 256, 136}}, {24, {"I8", 1, 1}},         {25, {"I16", 1, 2}},
    {26, {"I32", 1, 4}},        {27, {"I64", 1, 8}},        {28, {"F64", 1, 8}},
    {29, {"IQ1_M", 256, 56}},   {30, {"BF16", 1, 2}},       {34, {"TQ1_0", 256, 54}},
    {35, {"TQ2_0", 256, 66}},   {39, {"MXFP4", 32, 17}},    {40, {"NVFP4", 64, 36}},
    {41, {"Q1_0", 128, 18}},
};

constexpr std::string_view kValueTypeNames[] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
constexpr uint64_t kScalarSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

// Reads little-endian values from the buffer; every read checks the bytes left and reports
// truncation naming what was being read.
class Reader {
 public:
  Reader(std::span<const uint8_t> buf, std::string_view source) : buf_(buf), source_(source) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error("gguf " + printable(source_) + ": " + (where.empty() ? "" : where + ": ") + what);
  }
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return buf_.size() - pos_; }
  uint64_t size() const { return buf_.size(); }

  void need(uint64_t n, const std::string& where, std::string_view what) const {
    if (n > left()) {
      fail(where, "truncated: " + std::string(what) + " needs " + std::to_string(n) +
                      " bytes at offset " + std::to_string(pos_) + ", but the file ends at " +
                      std::to_string(buf_.size()));
    }
  }
  template <class T>
  T read(const std::string& where, std::string_view what) {
    need(sizeof(T), where, what);
    T v;
    std::memcpy(&v, buf_.data() + pos_, sizeof(T));  // the format and the host are little-endian
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const std::string& where, std::string_view what) {
    const uint64_t n = read<uint64_t>(where, what);
    need(n, where, what);
    std::string s(reinterpret_cast<const char*>(buf_.data() + pos_), static_cast<size_t>(n));
    pos_ += n;
    return s;
  }

  GgufValue read_value(uint32_t type, const std::string& where, int depth) {
    GgufValue v;
    switch (type) {
      case 0: v.value = read<uint8_t>(where, "the u8 value"); break;
      case 1: v.value = read<int8_t>(where, "the i8 value"); break;
      case 2: v.value = read<uint16_t>(where, "the u16 value"); break;
      case 3: v.value = read<int16_t>(where, "the i16 value"); break;
      case 4: v.value = read<uint32_t>(where, "the u32 value"); break;
      case 5: v.value = read<int32_t>(where, "the i32 value"); break;
      case 6: v.value = read<float>(where, "the f32 value"); break;
      case 7: {
        const uint8_t b = read<uint8_t>(where, "the bool value");
        if (b > 1) fail(where, "bool value " + std::to_string(b) + " (must be 0 or 1)");
        v.value = b == 1;
        break;
      }
      case 8: v.value = read_string(where, "the string value"); break;
      case 9: v.value = read_array(where, depth); break;
      case 10: v.value = read<uint64_t>(where, "the u64 value"); break;
      case 11: v.value = read<int64_t>(where, "the i64 value"); break;
      case 12: v.value = read<double>(where, "the f64 value"); break;
      default: fail(where, "unknown value type " + std::to_string(type) + " (known: 0 to 12)");
    }
    return v;
  }

 private:
  GgufArray read_array(const std::string& where, int depth) {
    if (depth >= kMaxNesting)
      fail(where, "arrays nested deeper than " + std::to_string(kMaxNesting));
    const uint32_t et = read<uint32_t>(where, "the array element type");
    if (et > 12)
      fail(where, "unknown array element type " + std::to_string(et) + " (known: 0 to 12)");
    const uint64_t count = read<uint64_t>(where, "the array length");
    // Smallest encoding of one element: a string is at least its u64 length, an array its type
    // and count. Checked before reserving so that a bogus count cannot allocate.
    const uint64_t min_item = et == 8 ? 8 : et == 9 ? 12 : kScalarSizes[et];
    if (count > left() / min_item) {
      fail(where, "truncated: an array of " + std::to_string(count) + " " +
                      std::string(kValueTypeNames[et]) + " at offset " + std::to_string(pos_) +
                      " does not fit in the " + std::to_string(left()) + " bytes left");
    }
    GgufArray a;
    a.element_type = static_cast<GgufValueType>(et);
    a.items.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i)
      a.items.push_back(read_value(et, where, depth + 1));
    return a;
  }

  std::span<const uint8_t> buf_;
  std::string_view source_;
  uint64_t pos_ = 0;
};

// ggml type ids that ggml has removed, and what replaces them.
struct RemovedType {
  uint32_t id;
  std::string_view name;
  std::string_view fix;
};
constexpr RemovedType kRemovedTypes[] = {
    {4, "Q4_2", "convert the model again from its original weights"},
    {5, "Q4_3", "convert the model again from its original weights"},
    {31, "Q4_0_4_4", "quantize the model to Q4_0 instead (llama.cpp repacks Q4_0 at load time)"},
    {32, "Q4_0_4_8", "quantize the model to Q4_0 instead (llama.cpp repacks Q4_0 at load time)"},
    {33, "Q4_0_8_8", "quantize the model to Q4_0 instead (llama.cpp repacks Q4_0 at load time)"},
    {36, "IQ4_NL_4_4", "quantize the model to IQ4_NL instead"},
    {37, "IQ4_NL_4_8", "quantize the model to IQ4_NL instead"},
    {38, "IQ4_NL_8_8", "quantize the model to IQ4_NL instead"},
};

// "unknown ggml type 99 (...)": what the id is, the ids this reader knows and what to do.
std::string unknown_type(uint32_t id) {
  const std::string head = "unknown ggml type " + std::to_string(id);
  for (const auto& r : kRemovedTypes)
    if (r.id == id)
      return head + " (" + std::string(r.name) + ", which ggml has removed): " + std::string(r.fix);
  std::string known;  // "0-3, 6-30, 34, 35, 39-41"
  for (size_t i = 0; i < std::size(kTypes);) {
    size_t j = i;
    while (j + 1 < std::size(kTypes) && kTypes[j + 1].id == kTypes[j].id + 1)
      ++j;
    known += (known.empty() ? "" : ", ") + std::to_string(kTypes[i].id);
    if (j > i) known += (j == i + 1 ? ", " : "-") + std::to_string(kTypes[j].id);
    i = j + 1;
  }
  return head + " (the known ids are " + known +
         "): the file is corrupt, or a newer ggml wrote it with a type this reader does not "
         "know; check the download, or convert the model to one of the known types";
}

}  // namespace

// ---- ggml types ----

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  for (const auto& r : kTypes)
    if (r.id == id) return r.info;
  return std::nullopt;
}
GgmlTypeInfo ggml_type_info(GgmlType t) {
  auto info = ggml_type_info(static_cast<uint32_t>(t));
  if (!info) throw Error("ggml type " + std::to_string(static_cast<uint32_t>(t)) + " is unknown");
  return *info;
}
std::string_view ggml_type_name(GgmlType t) { return ggml_type_info(t).name; }

// ---- values ----

std::string_view gguf_value_type_name(GgufValueType t) {
  const auto i = static_cast<uint32_t>(t);
  return i <= 12 ? kValueTypeNames[i] : std::string_view("unknown");
}

std::string GgufValue::describe() const {
  const std::string tn(gguf_value_type_name(type()));
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return "string " + printable(x.size() > 40 ? x.substr(0, 40) + "..." : x);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          return "array of " + std::to_string(x.items.size()) + " " +
                 std::string(gguf_value_type_name(x.element_type));
        } else if constexpr (std::is_same_v<T, bool>) {
          return std::string("bool ") + (x ? "true" : "false");
        } else if constexpr (std::is_floating_point_v<T>) {
          char buf[40];
          std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
          return tn + " " + buf;
        } else {
          return tn + " " + std::to_string(x);
        }
      },
      value);
}

namespace {
[[noreturn]] void wrong_type(const GgufValue& v, std::string_view expected) {
  throw Error("expected " + std::string(expected) + ", got " + v.describe());
}
}  // namespace

int64_t GgufValue::as_int() const {
  return std::visit(
      [&](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>) {
            if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
              throw Error("u64 " + std::to_string(x) + " does not fit in an i64");
          }
          return static_cast<int64_t>(x);
        } else {
          wrong_type(*this, "an integer");
        }
      },
      value);
}

uint64_t GgufValue::as_uint() const {
  return std::visit(
      [&](const auto& x) -> uint64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_signed_v<T>) {
            if (x < 0) throw Error("expected a non-negative integer, got " + describe());
          }
          return static_cast<uint64_t>(x);
        } else {
          wrong_type(*this, "an unsigned integer");
        }
      },
      value);
}

double GgufValue::as_float() const {
  if (const float* f = std::get_if<float>(&value)) return *f;
  if (const double* d = std::get_if<double>(&value)) return *d;
  wrong_type(*this, "f32 or f64");
}
bool GgufValue::as_bool() const {
  if (const bool* b = std::get_if<bool>(&value)) return *b;
  wrong_type(*this, "bool");
}
const std::string& GgufValue::as_string() const {
  if (const std::string* s = std::get_if<std::string>(&value)) return *s;
  wrong_type(*this, "string");
}
const GgufArray& GgufValue::as_array() const {
  if (const GgufArray* a = std::get_if<GgufArray>(&value)) return *a;
  wrong_type(*this, "array");
}

int64_t GgufTensor::numel() const {
  // (the parse checked the product of the dims for overflow; with a zero dim anywhere the other
  // dims may be anything, so their product is not formed: a fuzzer's (0, 2^40, 2^42) overflowed)
  if (std::find(shape.begin(), shape.end(), int64_t{0}) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

// ---- parsing ----

GgufHeader parse_gguf(std::span<const uint8_t> buffer, std::string_view source) {
  Reader r(buffer, source);
  GgufHeader h;
  h.alignment = kDefaultAlignment;
  if (buffer.size() < 4) {
    r.fail("", "truncated: the file has " + std::to_string(buffer.size()) +
                   " bytes, too few for the 'GGUF' magic");
  }
  const uint32_t magic = r.read<uint32_t>("", "the magic");
  if (magic != kMagic) {
    r.fail("", "bad magic " +
                   printable(std::string_view(reinterpret_cast<const char*>(buffer.data()), 4)) +
                   " (expected 'GGUF'): not a GGUF file");
  }
  h.version = r.read<uint32_t>("header", "the version");
  if (h.version != 2 && h.version != 3) {
    const uint32_t swapped = __builtin_bswap32(h.version);
    if (swapped == 2 || swapped == 3)
      r.fail("",
             "big-endian GGUF files are not supported (version " + std::to_string(swapped) + ")");
    r.fail("", "unsupported version " + std::to_string(h.version) + " (supported: 2 and 3)");
  }
  const uint64_t n_tensors = r.read<uint64_t>("header", "the tensor count");
  const uint64_t n_kv = r.read<uint64_t>("header", "the metadata count");

  // ---- metadata ----
  // An entry is at least a key length, a type and one byte; a tensor info at least a name
  // length, n_dims, a type and an offset. Checked before reserving.
  if (n_kv > r.left() / 13) {
    r.fail("header", "truncated: " + std::to_string(n_kv) + " metadata entries cannot fit in the " +
                         std::to_string(r.left()) + " bytes left");
  }
  h.metadata.reserve(static_cast<size_t>(n_kv));
  std::set<std::string, std::less<>> keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string entry = "metadata entry " + std::to_string(i);
    std::string key = r.read_string(entry, "the key");
    const std::string where = "key " + printable(key);
    if (!keys.insert(key).second) r.fail(where, "duplicate key");
    const uint32_t type = r.read<uint32_t>(where, "the value type");
    GgufValue v = r.read_value(type, where, 0);
    h.metadata.emplace_back(std::move(key), std::move(v));
  }
  for (const auto& [key, v] : h.metadata) {
    if (key != "general.alignment") continue;
    const uint32_t* a = std::get_if<uint32_t>(&v.value);
    if (!a) r.fail("key 'general.alignment'", "expected u32, got " + v.describe());
    if (*a == 0 || (*a & (*a - 1)) != 0)
      r.fail("key 'general.alignment'", "must be a power of two, got " + std::to_string(*a));
    h.alignment = *a;
  }

  // ---- tensor infos ----
  if (n_tensors > r.left() / 24) {
    r.fail("header", "truncated: " + std::to_string(n_tensors) +
                         " tensor infos cannot fit in the " + std::to_string(r.left()) +
                         " bytes left");
  }
  h.tensors.reserve(static_cast<size_t>(n_tensors));
  std::set<std::string, std::less<>> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.file = std::string(source);
    t.name = r.read_string("tensor info " + std::to_string(i), "the name");
    const std::string where = "tensor " + printable(t.name);
    if (!names.insert(t.name).second) r.fail(where, "duplicate tensor name");
    const uint32_t n_dims = r.read<uint32_t>(where, "the dim count");
    if (n_dims > kMaxDims) {
      r.fail(where, std::to_string(n_dims) + " dims (GGUF allows at most " +
                        std::to_string(kMaxDims) + ")");
    }
    std::vector<uint64_t> ne(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d)
      ne[d] = r.read<uint64_t>(where, "the dims");
    const uint32_t type_id = r.read<uint32_t>(where, "the type");
    t.offset = r.read<uint64_t>(where, "the offset");

    std::string ne_str = "ne = (";
    for (uint32_t d = 0; d < n_dims; ++d)
      ne_str += (d ? ", " : "") + std::to_string(ne[d]);
    ne_str += ")";
    int64_t numel = 1;
    for (uint64_t d : ne) {
      if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          __builtin_mul_overflow(numel, static_cast<int64_t>(d), &numel)) {
        r.fail(where, "shape overflow: " + ne_str + " has more than 2^63 elements");
      }
    }
    t.shape.assign(ne.rbegin(), ne.rend());
    auto info = ggml_type_info(type_id);
    if (!info) r.fail(where, unknown_type(type_id));
    t.type = static_cast<GgmlType>(type_id);
    const uint64_t row = n_dims ? ne[0] : 1;
    if (row % static_cast<uint64_t>(info->block_size) != 0) {
      const std::string tn(info->name), bs = std::to_string(info->block_size);
      r.fail(where, "row length " + std::to_string(row) + " (ne[0]; " + ne_str +
                        ") is not a multiple of the " + tn + " block size " + bs + ": " + tn +
                        " stores each row as whole blocks of " + bs + " values (" +
                        std::to_string(info->type_size) +
                        " bytes each); the file is corrupt or its writer is broken: convert or "
                        "quantize the model again");
    }
    uint64_t bytes = row / static_cast<uint64_t>(info->block_size);
    bool overflow = __builtin_mul_overflow(bytes, static_cast<uint64_t>(info->type_size), &bytes);
    for (uint32_t d = 1; d < n_dims; ++d)
      overflow = overflow || __builtin_mul_overflow(bytes, ne[d], &bytes);
    if (overflow) {
      r.fail(where, "shape overflow: " + ne_str + " of " + std::string(info->name) +
                        " needs more than 2^64 bytes");
    }
    t.size_bytes = bytes;
    if (t.offset % h.alignment != 0) {
      r.fail(where, "offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                        std::to_string(h.alignment));
    }
    h.tensors.push_back(std::move(t));
  }

  // ---- data section ----
  const uint64_t end_of_infos = r.pos();
  uint64_t data_offset = end_of_infos + (h.alignment - end_of_infos % h.alignment) % h.alignment;
  if (data_offset > buffer.size()) {
    if (!h.tensors.empty()) {
      r.fail("", "truncated: the data section starts at offset " + std::to_string(data_offset) +
                     ", but the file ends at " + std::to_string(buffer.size()));
    }
    data_offset = buffer.size();  // no tensors: the padding may be left out
  }
  h.data_offset = data_offset;
  h.data_size = buffer.size() - data_offset;
  // Where a tensor's data ends in the file (UINT64_MAX past 2^64).
  auto file_end = [&](const GgufTensor& t) {
    uint64_t end = 0;
    if (__builtin_add_overflow(data_offset, t.offset, &end) ||
        __builtin_add_overflow(end, t.size_bytes, &end))
      return std::numeric_limits<uint64_t>::max();
    return end;
  };
  auto bytes_text = [](uint64_t n) {
    return n == std::numeric_limits<uint64_t>::max() ? std::string("more than 2^64 bytes")
                                                     : std::to_string(n) + " bytes";
  };
  for (auto& t : h.tensors) {
    if (t.offset > h.data_size || t.size_bytes > h.data_size - t.offset) {
      const uint64_t end = file_end(t);
      uint64_t needed = 0;  // the least size the file must have
      for (const auto& u : h.tensors)
        needed = std::max(needed, file_end(u));
      r.fail("tensor " + printable(t.name),
             "data [" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.size_bytes) +
                 ") of the data section (" + std::to_string(t.size_bytes) + " bytes of " +
                 std::string(ggml_type_name(t.type)) + ", shape " + shape_str(t.shape) +
                 ") runs past the end of the file: it ends at file byte " +
                 (end == std::numeric_limits<uint64_t>::max() ? std::string("2^64 or later")
                                                              : std::to_string(end)) +
                 ", the file has " + std::to_string(buffer.size()) + " bytes" +
                 (needed > end ? " (its tensors need " + bytes_text(needed) + ")" : "") +
                 ". The file is truncated (an interrupted download or copy?) or its offsets are "
                 "corrupt: download or copy it again");
    }
    t.data = buffer.subspan(static_cast<size_t>(data_offset + t.offset),
                            static_cast<size_t>(t.size_bytes));
  }
  std::vector<const GgufTensor*> by_offset;
  by_offset.reserve(h.tensors.size());
  for (const auto& t : h.tensors)
    if (t.size_bytes > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensor& a = *by_offset[i - 1];
    const GgufTensor& b = *by_offset[i];
    if (a.offset + a.size_bytes > b.offset) {
      r.fail("tensor " + printable(b.name),
             "data [" + std::to_string(b.offset) + ", " + std::to_string(b.offset + b.size_bytes) +
                 ") overlaps tensor " + printable(a.name) + " [" + std::to_string(a.offset) + ", " +
                 std::to_string(a.offset + a.size_bytes) + ")");
    }
  }
  return h;
}

}  // namespace luminal::io
