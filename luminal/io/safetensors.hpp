#pragma once
// Safetensors model files (https://github.com/huggingface/safetensors): memory-mapped reading of
// one file or a sharded folder, zero-copy tensor views, conversion, binding to graph inputs, and
// a writer. Weights::open takes a file, a folder or an index.json; get() is a view whose bytes
// point into the mapping; convert() and to_vector() change the dtype; bind() sets the inputs of a
// runtime or session labelled like the tensors.
// Example: examples/snippets/io/safetensors.cpp (a tensor read, converted and bound).
//
// Format: 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3],
//    "data_offsets": [begin, end]}, ...}
// padded with spaces, then the data section (offsets are relative to its start).
// Dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U16 U8 BOOL F8_E4M3 F8_E5M2 (ours: the same, TF32 is
// written as F32). Others of the format (U32, U64, F8_E8M0, F4, ...) are reported as unsupported.
//
// Validation (every error is a luminal::Error naming the file and, where there is one, the
// tensor): file shorter than 8 bytes, header length past the end of the file, header not JSON
// or not an object, duplicate names, unknown dtype, bad shape or data_offsets, offsets outside
// the data section, overlapping tensors, byte size not equal to dtype size x shape, missing
// shard of an index.
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/error.hpp"
#include "luminal/io/progress.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal {
class Runtime;
class Session;
}  // namespace luminal

namespace luminal::io {

/// The safetensors name of one of our dtypes ("F32", "BF16", "F8_E4M3", "BOOL"; TF32 -> "F32").
std::string_view safetensors_dtype_name(DType t);
/// Our dtype for a safetensors dtype name; nullopt for unknown or unsupported ones.
std::optional<DType> dtype_from_safetensors(std::string_view s);

/// One tensor: its bytes in row-major order, in its own dtype. Views returned by the readers
/// point into the file mapping (no copy) and live as long as the SafeTensors/Weights object.
/// The writer takes views too (`file` may be left empty).
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;
  std::string file;  // the file it was read from (for error messages)

  int64_t numel() const;
};

/// A parsed and validated header. Offsets are relative to the data section.
struct SafeTensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};
struct SafeTensorsHeader {
  uint64_t data_offset = 0;               // 8 + header length: where the data section starts
  uint64_t data_size = 0;                 // bytes in the data section
  std::vector<SafeTensorsEntry> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;
};

/// Parses and validates a whole safetensors file held in memory (no file access: this is the
/// entry point of the fuzz target). `source` names the buffer in errors.
SafeTensorsHeader parse_safetensors(std::span<const uint8_t> buffer, std::string_view source);

/// One safetensors file, memory-mapped (read-only) for as long as the object lives. Movable;
/// moving keeps every TensorView valid.
class SafeTensors {
 public:
  /// Maps and validates `file`.
  static SafeTensors open(const std::filesystem::path& file);
  /// Takes ownership of a serialized file held in memory; `source` names it in errors.
  static SafeTensors from_bytes(std::vector<uint8_t> bytes, std::string source = "<memory>");

  SafeTensors(SafeTensors&&) noexcept;
  SafeTensors& operator=(SafeTensors&&) noexcept;
  SafeTensors(const SafeTensors&) = delete;
  SafeTensors& operator=(const SafeTensors&) = delete;
  ~SafeTensors();

  /// The path (or the source given to from_bytes).
  const std::string& source() const;
  const std::map<std::string, std::string>& metadata() const;
  /// Every tensor, sorted by name.
  const std::vector<TensorView>& tensors() const;
  bool contains(std::string_view name) const;
  /// Throws luminal::Error naming the file and the tensor when absent.
  const TensorView& get(std::string_view name) const;
  /// The whole file as mapped (header included).
  std::span<const uint8_t> buffer() const;

 private:
  struct Impl;
  explicit SafeTensors(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The tensors of one model: a single file or the shards of a sharded checkpoint.
class Weights {
 public:
  /// `path`: a .safetensors file; a model.safetensors.index.json (its weight_map names the
  /// shards, relative to its folder); or a folder holding model.safetensors.index.json,
  /// model.safetensors, or else every *.safetensors file in it.
  static Weights open(const std::filesystem::path& path);
  /// Reads a sharded checkpoint through its index; a shard that is missing, or lacks a tensor
  /// the index assigns to it, is an error naming the index, the shard and the tensor.
  static Weights open_index(const std::filesystem::path& index_json);

  Weights() = default;
  explicit Weights(SafeTensors file);
  /// Adds a file's tensors; a name already present is an error naming both files.
  void add(SafeTensors file);
  /// Adds tensors whose bytes live elsewhere (a GGUF mapping, a buffer of repacked rows), kept
  /// alive by `owner` for as long as these Weights live; a name already present is an error.
  void add_views(std::vector<TensorView> views, std::shared_ptr<const void> owner);

  size_t size() const { return index_.size(); }
  /// Every tensor name, sorted.
  std::vector<std::string> names() const;
  bool contains(std::string_view name) const;
  /// Throws luminal::Error naming the tensor and the files searched when absent.
  const TensorView& get(std::string_view name) const;
  const std::vector<SafeTensors>& files() const { return files_; }

 private:
  std::vector<SafeTensors> files_;
  std::deque<TensorView> views_;  // add_views (stable addresses)
  std::vector<std::shared_ptr<const void>> owners_;
  std::map<std::string, const TensorView*, std::less<>> index_;
};

/// The tensor's values in `target` dtype (same dtype: a copy of the bytes). Floats convert to
/// floats (rounding to nearest even; f64 -> 16/8-bit formats round via f32); integers and bools
/// convert to any dtype that holds every value (checked element by element); floats to integers
/// or bool is an error. Errors name the file and the tensor.
HostBuffer convert(const TensorView& t, DType target);
void convert_into(const TensorView& t, DType target, std::span<uint8_t> out);

/// The values as host type T (the rules of Runtime::get: floats -> float types; integers and
/// bools -> any arithmetic type that holds them).
template <class T>
std::vector<T> to_vector(const TensorView& t) {
  HostBuffer b{t.dtype, std::vector<uint8_t>(t.bytes.begin(), t.bytes.end())};
  try {
    return from_host_buffer<T>(b, t.name, type_name<T>());
  } catch (const Error& e) {
    throw Error("safetensors '" + t.file + "': " + e.what());
  }
}

struct BindOptions {
  /// Maps a tensor name to the label of the graph input it feeds (e.g. strips "model.");
  /// returning "" skips the tensor. Default: the name itself.
  std::function<std::string(std::string_view)> rename;
  /// Float tensors may feed float inputs of another dtype (f32 file -> bf16 input), converted
  /// with round to nearest even. Integer/bool dtypes must always match exactly.
  bool convert_floats = true;
  /// Throw (listing them) when graph inputs are left unset, instead of only reporting them.
  bool require_all_inputs = false;
  /// Told the progress (stage "binding": bytes of the tensors that feed an input, as stored in
  /// the file; see io/progress.hpp). Default: none.
  LoadProgress progress = {};
};

struct BindReport {
  std::vector<std::string> bound;           // graph input labels that were set
  std::vector<std::string> unset_inputs;    // graph inputs no tensor fed
  std::vector<std::string> unused_tensors;  // tensors whose (renamed) name is no graph input
};

/// Sets every input of `rt`'s graph whose label matches a tensor name (after `rename`), checking
/// rank, every dim that can be evaluated (static, or dynamic with a value set on the graph) and
/// the dtype. Errors name the tensor, its file and the input, with expected and actual.
BindReport bind(Runtime& rt, const Weights& weights, const BindOptions& options = {});

/// bind() into a session without copies where possible: a tensor whose dtype matches its input
/// is used in place from the mapped file when the backend reads host memory (the CPU backend:
/// zero copies; `weights` is kept alive by the session), else uploaded once; converted tensors
/// are uploaded once. Carried inputs (state the plans write) always get their own buffer.
BindReport bind(Session& session, std::shared_ptr<const Weights> weights,
                const BindOptions& options = {});

/// Serializes tensors as a safetensors file: header JSON ({"__metadata__": ...} first when
/// non-empty, then tensors in name order with dtype, shape, data_offsets) padded with spaces
/// so the data section starts 8-byte aligned, then the data in name order.
std::vector<uint8_t> serialize_safetensors(std::span<const TensorView> tensors,
                                           const std::map<std::string, std::string>& metadata = {});
/// serialize_safetensors written to `file` (errors name it).
void write_safetensors(const std::filesystem::path& file, std::span<const TensorView> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace luminal::io
