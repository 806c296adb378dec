// luminal/io/mapped_file.hpp: a file mapped read-only (the safetensors and GGUF readers share
// it); errors name the kind and the path. Run: snippet_io_mapped_file <file>.
#include <cstdint>
#include <span>
#include <string>

#include "luminal/io/mapped_file.hpp"
#include "snippet.hpp"

using luminal::io::MappedFile;

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "model.gguf";
  MappedFile f = MappedFile::open(path, "gguf");  // errors: "gguf '<path>': cannot open: ..."
  std::span<const uint8_t> bytes = f.bytes();
  expect(bytes.size() >= 4 && bytes[0] == 'G', "a GGUF file starts with \"GGUF\"");
  expect(
      error_of([] { MappedFile::open("no-such-file", "gguf"); }).starts_with("gguf 'no-such-file'"),
      "the error names the kind and the path");
}
