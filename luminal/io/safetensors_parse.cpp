// Safetensors header parsing and validation from a byte span. Depends only on luminal/core
// (dtype, error) and nlohmann_json, so the fuzz target compiles it on its own.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "luminal/io/error_text.hpp"
#include "luminal/io/safetensors.hpp"

namespace luminal::io {

namespace {

using json = nlohmann::json;

// The reference implementation refuses headers above 100 MB; so do we.
constexpr uint64_t kMaxHeader = 100'000'000;
// A valid header nests three deep (root, tensor, shape); anything far deeper is garbage.
constexpr int kMaxDepth = 8;

struct NamedDType {
  std::string_view name;
  DType dtype;
};
constexpr NamedDType kDTypes[] = {
    {"F64", DType::F64},        {"F32", DType::F32},   {"F16", DType::F16},
    {"BF16", DType::BF16},      {"I64", DType::I64},   {"I32", DType::I32},
    {"I16", DType::I16},        {"I8", DType::I8},     {"U16", DType::U16},
    {"U8", DType::U8},          {"BOOL", DType::Bool}, {"F8_E4M3", DType::F8E4M3},
    {"F8_E5M2", DType::F8E5M2},
};
// Dtypes of the format that we do not have.
constexpr std::string_view kUnsupported[] = {
    "U32", "U64", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64", "F8_E4M3FNUZ", "F8_E5M2FNUZ"};

[[noreturn]] void fail_header(std::string_view source, const std::string& what) {
  throw Error("safetensors " + printable(source) + ": header: " + what);
}
[[noreturn]] void fail_tensor(std::string_view source, std::string_view tensor,
                              const std::string& what) {
  throw Error("safetensors " + printable(source) + ": tensor " + printable(tensor) + ": " + what);
}

std::string supported_list() {
  std::string s;
  for (const auto& d : kDTypes)
    s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

// Checks duplicate keys in every object and the nesting depth while parsing.
struct KeyChecker {
  std::string_view source;
  struct Level {
    bool is_object = false;
    std::string name;  // the key this object is the value of ("" at the root)
    std::set<std::string> keys;
  };
  std::vector<Level> stack;
  std::string last_key;

  bool operator()(int /*depth*/, json::parse_event_t ev, json& parsed) {
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (static_cast<int>(stack.size()) >= kMaxDepth)
          fail_header(source, "JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
        stack.push_back({ev == json::parse_event_t::object_start, last_key, {}});
        last_key.clear();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::key: {
        std::string k = parsed.is_string() ? parsed.get<std::string>() : std::string();
        if (!stack.empty() && stack.back().is_object) {
          if (!stack.back().keys.insert(k).second) {
            if (stack.size() == 1) fail_tensor(source, k, "duplicate tensor name in the header");
            fail_tensor(source, stack.back().name, "duplicate key " + printable(k));
          }
        }
        last_key = std::move(k);
        break;
      }
      case json::parse_event_t::value: break;
    }
    return true;
  }
};

int64_t to_dim(std::string_view source, std::string_view tensor, const json& v) {
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
    fail_tensor(source, tensor,
                "shape entries must be non-negative integers, got " +
                    (v.is_string() ? printable(v.get<std::string>()) : std::string(v.type_name())));
  uint64_t u = v.get<uint64_t>();
  if (u > static_cast<uint64_t>(INT64_MAX)) fail_tensor(source, tensor, "shape entry too large");
  return static_cast<int64_t>(u);
}

}  // namespace

std::string_view safetensors_dtype_name(DType t) {
  if (t == DType::TF32) return "F32";
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d.name;
  internal_error(__FILE__, __LINE__, "safetensors_dtype_name: invalid DType");
}

std::optional<DType> dtype_from_safetensors(std::string_view s) {
  for (const auto& d : kDTypes)
    if (d.name == s) return d.dtype;
  return std::nullopt;
}

SafeTensorsHeader parse_safetensors(std::span<const uint8_t> buffer, std::string_view source) {
  if (buffer.size() < 8)
    fail_header(source, "file is " + std::to_string(buffer.size()) +
                            " bytes, shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | buffer[static_cast<size_t>(i)];
  const uint64_t avail = buffer.size() - 8;
  if (n > avail)
    fail_header(source, "header length " + std::to_string(n) + " runs past the end of the file (" +
                            std::to_string(avail) + " bytes follow the length); truncated file?");
  if (n > kMaxHeader)
    fail_header(source, "header length " + std::to_string(n) + " exceeds the limit of " +
                            std::to_string(kMaxHeader) + " bytes");
  if (n < 2 || buffer[8] != '{')
    fail_header(source, "does not start with '{' (not a safetensors file?)");

  const char* text = reinterpret_cast<const char*>(buffer.data() + 8);
  json root;
  try {
    KeyChecker checker{source, {}, {}};
    root = json::parse(text, text + n, std::ref(checker), /*allow_exceptions=*/true);
  } catch (const json::exception& e) {
    fail_header(source, std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) fail_header(source, "is not a JSON object");

  SafeTensorsHeader h;
  h.data_offset = 8 + n;
  h.data_size = avail - n;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) fail_header(source, "__metadata__ must be an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          fail_header(source, "__metadata__ value of " + printable(m.key()) + " is " +
                                  m.value().type_name() + ", not a string");
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object())
      fail_tensor(source, key, std::string("entry must be an object, got ") + v.type_name());
    SafeTensorsEntry e;
    e.name = key;
    auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) fail_tensor(source, key, "missing string \"dtype\"");
    const std::string dname = dt->get<std::string>();
    auto parsed = dtype_from_safetensors(dname);
    if (!parsed) {
      bool known = std::find(std::begin(kUnsupported), std::end(kUnsupported), dname) !=
                   std::end(kUnsupported);
      fail_tensor(source, key,
                  (known ? "unsupported dtype " : "unknown dtype ") + printable(dname) +
                      " (supported: " + supported_list() + ")");
    }
    e.dtype = *parsed;
    auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array()) fail_tensor(source, key, "missing array \"shape\"");
    uint64_t numel = 1;
    bool overflow = false;
    for (const auto& d : *sh) {
      int64_t x = to_dim(source, key, d);
      e.shape.push_back(x);
      uint64_t prod = 0;
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(x), &prod)) overflow = true;
      numel = prod;
    }
    uint64_t bytes = 0;
    if (overflow ||
        __builtin_mul_overflow(numel, static_cast<uint64_t>(size_bytes(e.dtype)), &bytes))
      fail_tensor(source, key, "shape is too large (element count overflows)");
    auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      fail_tensor(source, key, "\"data_offsets\" must be two non-negative integers [begin, end]");
    e.begin = (*off)[0].get<uint64_t>();
    e.end = (*off)[1].get<uint64_t>();
    if (e.end < e.begin)
      fail_tensor(source, key,
                  "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                      "] end before begin");
    if (e.end > h.data_size)
      fail_tensor(source, key,
                  "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                      "] lie outside the data section (" + std::to_string(h.data_size) + " bytes)");
    if (e.end - e.begin != bytes) {
      std::string shape_s = "[";
      for (size_t i = 0; i < e.shape.size(); ++i)
        shape_s += (i ? ", " : "") + std::to_string(e.shape[i]);
      shape_s += "]";
      fail_tensor(source, key,
                  "size mismatch: data_offsets [" + std::to_string(e.begin) + ", " +
                      std::to_string(e.end) + "] hold " + std::to_string(e.end - e.begin) +
                      " bytes but " + dname + " x " + shape_s + " needs " + std::to_string(bytes));
    }
    h.tensors.push_back(std::move(e));
  }
  std::sort(h.tensors.begin(), h.tensors.end(),
            [](const SafeTensorsEntry& a, const SafeTensorsEntry& b) { return a.name < b.name; });

  // Overlaps: non-empty tensors sorted by start must not share bytes.
  std::vector<const SafeTensorsEntry*> by_offset;
  for (const auto& e : h.tensors)
    if (e.end > e.begin) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafeTensorsEntry* a, const SafeTensorsEntry* b) {
              return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
            });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const auto* prev = by_offset[i - 1];
    const auto* cur = by_offset[i];
    if (cur->begin < prev->end)
      fail_tensor(source, cur->name,
                  "data_offsets [" + std::to_string(cur->begin) + ", " + std::to_string(cur->end) +
                      "] overlap tensor " + printable(prev->name) + " at [" +
                      std::to_string(prev->begin) + ", " + std::to_string(prev->end) + "]");
  }
  return h;
}

}  // namespace luminal::io
