#pragma once
// A file mapped read-only into memory (internal to luminal/io): the safetensors and GGUF readers
// share it. Unmapped when destroyed; movable.
//
//   MappedFile f = MappedFile::open(path, "gguf");  // errors: "gguf '<path>': cannot open: ..."
//   std::span<const uint8_t> bytes = f.bytes();
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

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

}  // namespace luminal::io
