// luminal/io/gguf.hpp: GGUF files: typed metadata and zero-copy tensor data; shapes outermost
// first. Run: snippet_io_gguf <file.gguf>.
#include <cstdint>
#include <iostream>
#include <string>

#include "luminal/io/gguf.hpp"
#include "snippet.hpp"

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "SmolLM2-135M-Q8_0.gguf";
  auto f = luminal::io::GgufFile::open(path);
  std::string arch = f.get_string("general.architecture");  // "llama"
  uint64_t layers = f.get_uint(arch + ".block_count");
  const luminal::io::GgufTensor& t = f.tensor("token_embd.weight");
  std::cout << arch << ", " << layers << " layers, token_embd [" << t.shape[0] << ", " << t.shape[1]
            << "]\n";  // [vocab, hidden]: outermost first
  expect(t.data.size() == t.size_bytes, "the raw bytes, pointing into the mapping");
}
