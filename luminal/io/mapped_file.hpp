#pragma once
// A file mapped read-only into memory (internal to luminal/io): the safetensors and GGUF readers
// share it. Unmapped when destroyed; movable. Errors name the reader and the path ("gguf
// '<path>': cannot open: ...").
// Example: examples/snippets/io/mapped_file.cpp (a GGUF file's bytes; the error for a missing
// file).
//
// FileBytes is what a reader holds: a mapped file or bytes it owns (from_bytes), with the name
// its errors give them.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace luminal::io {

class MappedFile {
 public:
  /// Maps `file`; throws luminal::Error prefixed with `kind` and the path when it cannot be
  /// opened, is not a regular file, or cannot be mapped. An empty file maps to no bytes.
  static MappedFile open(const std::filesystem::path& file, std::string_view kind);

  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  bool mapped() const { return data_ != nullptr; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

struct FileBytes {
  /// MappedFile::open(file, kind), named by the path.
  static FileBytes open(const std::filesystem::path& file, std::string_view kind) {
    return {.source = file.string(), .mapped = MappedFile::open(file, kind), .owned = {}};
  }
  /// Bytes held in memory, named `source`.
  static FileBytes own(std::vector<uint8_t> bytes, std::string source) {
    return {.source = std::move(source), .mapped = {}, .owned = std::move(bytes)};
  }
  std::span<const uint8_t> bytes() const {
    if (mapped.mapped()) return mapped.bytes();
    return {owned.data(), owned.size()};
  }

  std::string source;
  MappedFile mapped;           // open() (no bytes when owned or empty)
  std::vector<uint8_t> owned;  // own()
};

}  // namespace luminal::io
