#pragma once
// GGUF model files (llama.cpp / ggml, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
// memory-mapped reading, typed metadata (get_string, get_uint, ...), zero-copy tensor data
// (GgufTensor::data points into the mapping). Dequantisation to f32 lives in gguf_dequant.hpp.
// Example: examples/snippets/io/gguf.cpp (a file's architecture, layers and embedding shape).
//
// Format (versions 2 and 3, little-endian): "GGUF", u32 version, u64 tensor count, u64 metadata
// count; metadata entries (string key, u32 value type, value); tensor infos (string name, u32
// n_dims, u64 ne[n_dims], u32 ggml type, u64 offset); padding to `general.alignment` (default
// 32); the data section, in which every tensor offset is relative and aligned. Strings are a
// u64 length and UTF-8 bytes; arrays are a u32 element type, a u64 count and the elements
// (arrays of arrays are allowed).
//
// Shapes: GGUF stores the dims innermost first (ggml's ne[0] is the row length), so a tensor
// stored with ne = (576, 49152) is 49152 rows of 576. GgufTensor::shape is outermost first, like
// safetensors and PyTorch: [49152, 576]. Quantised types pack ne[0] in blocks (32 or 256
// values), so the row length must be a multiple of the block size.
//
// Validation (every error is a luminal::Error naming the file and, where there is one, the key
// or the tensor): bad magic, unsupported version (1, or big-endian files), truncated file,
// unknown value type, arrays nested too deep, duplicate keys, `general.alignment` not a u32
// power of two, more than 4 dims, shape overflow, unknown ggml type, row length not a multiple
// of the block size, duplicate tensor names, misaligned offsets, data outside the data section,
// overlapping tensors.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/error.hpp"

namespace luminal::io {

// ---- ggml tensor types ----

/// ggml's tensor types, with ggml's numbering (gaps are ids ggml has removed).
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
};

/// Name ("Q4_K"), values per block and bytes per block of a ggml type.
struct GgmlTypeInfo {
  std::string_view name;
  int64_t block_size = 1;
  int64_t type_size = 0;
};
/// The traits of a ggml type id; nullopt for ids ggml does not (or no longer) define.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);
/// ggml_type_info(t) for a known type.
GgmlTypeInfo ggml_type_info(GgmlType t);
std::string_view ggml_type_name(GgmlType t);
/// The DType a tensor of `t` has in a graph: F32, F16, BF16, or the block dtype of the same
/// layout (Q4_0 .. Q8_K); nullopt for the types luminal does not read (IQ*, Q2_K, Q3_K, ...).
std::optional<DType> dtype_of(GgmlType t);

// ---- metadata values ----

/// GGUF metadata value types, with the format's numbering.
enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
/// "u8", "i32", "f32", "bool", "string", "array", ...
std::string_view gguf_value_type_name(GgufValueType t);

struct GgufValue;
/// An array value: its element type (given by the file even when empty) and its elements.
struct GgufArray {
  GgufValueType element_type = GgufValueType::U8;
  std::vector<GgufValue> items;
};

/// One metadata value. The variant's index is the GgufValueType's number.
struct GgufValue {
  using Variant = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, GgufArray, uint64_t, int64_t, double>;
  Variant value;

  GgufValueType type() const { return static_cast<GgufValueType>(value.index()); }
  /// "u32 7", "string 'llama'", "array of 3 i32" (for messages).
  std::string describe() const;

  // The accessors below throw luminal::Error naming the expected and the actual type; GgufFile's
  // getters add the file and the key.
  /// Any integer type (u8..i64), as int64; u64 values above INT64_MAX are an error.
  int64_t as_int() const;
  /// Any unsigned integer type, or a signed one holding a non-negative value.
  uint64_t as_uint() const;
  /// f32 or f64 (f32 converted exactly).
  double as_float() const;
  bool as_bool() const;
  const std::string& as_string() const;
  const GgufArray& as_array() const;
};

// ---- tensors and files ----

/// One tensor of a GGUF file. `data` points into the file mapping (no copy) and lives as long as
/// the GgufFile.
struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> shape;  // outermost first: GGUF's ne reversed
  uint64_t offset = 0;         // relative to the data section
  uint64_t size_bytes = 0;     // = data.size()
  std::span<const uint8_t> data;
  std::string file;  // the file it was read from (for error messages)

  int64_t numel() const;
  /// The values in one row (the innermost dim, ggml's ne[0]); 1 for a scalar.
  int64_t row_length() const { return shape.empty() ? 1 : shape.back(); }
};

/// A parsed and validated file. Tensor spans point into the buffer that was parsed.
struct GgufHeader {
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;                                 // where the data section starts
  uint64_t data_size = 0;                                   // bytes in the data section
  std::vector<std::pair<std::string, GgufValue>> metadata;  // in file order
  std::vector<GgufTensor> tensors;                          // in file order
};

/// Parses and validates a whole GGUF file held in memory (no file access: this is the entry point
/// of the fuzz target). `source` names the buffer in errors and in GgufTensor::file.
GgufHeader parse_gguf(std::span<const uint8_t> buffer, std::string_view source);

/// One GGUF file, memory-mapped (read-only) for as long as the object lives. Movable; moving
/// keeps every GgufTensor and its data valid.
class GgufFile {
 public:
  /// Maps and validates `file`.
  static GgufFile open(const std::filesystem::path& file);
  /// Takes ownership of a serialized file held in memory; `source` names it in errors.
  static GgufFile from_bytes(std::vector<uint8_t> bytes, std::string source = "<memory>");

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  /// The path (or the source given to from_bytes).
  const std::string& source() const;
  uint32_t version() const;
  uint64_t alignment() const;
  /// Offset of the data section in the file.
  uint64_t data_offset() const;
  /// The whole file as mapped.
  std::span<const uint8_t> buffer() const;

  /// Every metadata entry, in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const;
  bool contains(std::string_view key) const;
  /// nullptr when absent.
  const GgufValue* find(std::string_view key) const;
  /// Throws luminal::Error naming the file and the key when absent.
  const GgufValue& get(std::string_view key) const;
  // Typed getters: errors name the file, the key, the expected and the actual type (see
  // GgufValue's accessors for what each accepts).
  int64_t get_int(std::string_view key) const;
  uint64_t get_uint(std::string_view key) const;
  double get_float(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  const GgufArray& get_array(std::string_view key) const;
  /// An array whose elements are strings / integers / floats (errors name the element index).
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  std::vector<double> get_float_array(std::string_view key) const;
  // nullopt when absent; a present key of the wrong type is still an error.
  std::optional<int64_t> find_int(std::string_view key) const;
  std::optional<uint64_t> find_uint(std::string_view key) const;
  std::optional<double> find_float(std::string_view key) const;
  std::optional<std::string> find_string(std::string_view key) const;

  /// Every tensor, in file order.
  const std::vector<GgufTensor>& tensors() const;
  bool contains_tensor(std::string_view name) const;
  /// Throws luminal::Error naming the file and the tensor when absent.
  const GgufTensor& tensor(std::string_view name) const;

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace luminal::io
