// Safetensors writer: the layout of the reference implementation (header JSON padded with spaces
// to a multiple of 8 bytes, data section in name order, tensors packed without gaps).
#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "luminal/io/safetensors.hpp"

namespace luminal::io {

std::vector<uint8_t> serialize_safetensors(std::span<const TensorView> tensors,
                                           const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorView*> sorted;
  for (const auto& t : tensors)
    sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorView* a, const TensorView* b) { return a->name < b->name; });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata)
      m[k] = v;
    header["__metadata__"] = m;
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const TensorView& t = *sorted[i];
    auto fail = [&](const std::string& what) {
      throw Error("write safetensors: tensor '" + t.name + "': " + what);
    };
    if (t.name.empty() || t.name == "__metadata__") fail("invalid tensor name");
    if (i > 0 && sorted[i - 1]->name == t.name) fail("duplicate tensor name");
    int64_t n = 1;
    for (int64_t d : t.shape) {
      if (d < 0) fail("negative dimension in shape");
      n *= d;
    }
    const uint64_t need = static_cast<uint64_t>(n) * static_cast<uint64_t>(size_bytes(t.dtype));
    if (t.bytes.size() != need)
      fail("holds " + std::to_string(t.bytes.size()) + " bytes but " + std::string(name(t.dtype)) +
           " x " + std::to_string(n) + " elements needs " + std::to_string(need));
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["dtype"] = std::string(safetensors_dtype_name(t.dtype));
    e["shape"] = t.shape;
    e["data_offsets"] = {offset, offset + need};
    header[t.name] = e;
    offset += need;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("write safetensors: header: ") + e.what() +
                " (tensor names and metadata must be valid UTF-8)");
  }
  while ((text.size() % 8) != 0)
    text.push_back(' ');

  std::vector<uint8_t> out(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, text.data(), text.size());
  uint8_t* p = out.data() + 8 + text.size();
  for (const TensorView* t : sorted) {
    if (!t->bytes.empty()) std::memcpy(p, t->bytes.data(), t->bytes.size());
    p += t->bytes.size();
  }
  return out;
}

void write_safetensors(const std::filesystem::path& file, std::span<const TensorView> tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<uint8_t> bytes;
  try {
    bytes = serialize_safetensors(tensors, metadata);
  } catch (const Error& e) {
    throw Error("'" + file.string() + "': " + e.what());
  }
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("write safetensors '" + file.string() + "': cannot open for writing");
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw Error("write safetensors '" + file.string() + "': write failed");
}

}  // namespace luminal::io
