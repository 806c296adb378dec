#include "luminal/io/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "luminal/core/error.hpp"

namespace luminal::io {

MappedFile MappedFile::open(const std::filesystem::path& file, std::string_view kind) {
  const std::string where = std::string(kind) + " '" + file.string() + "'";
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(where + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(where + ": not a regular file");
  }
  MappedFile m;
  const size_t size = static_cast<size_t>(st.st_size);
  if (size > 0) {
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw Error(where + ": mmap failed: " + std::strerror(err));
    }
    m.data_ = static_cast<const uint8_t*>(p);
    m.size_ = size;
  }
  ::close(fd);
  return m;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) munmap(const_cast<uint8_t*>(data_), size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace luminal::io
