// luminal/io/gguf_dequant.hpp: GGUF tensor data dequantised to f32, bit-exact with the gguf
// Python package. Run: snippet_io_gguf_dequant <file.gguf>.
#include <vector>

#include "luminal/io/gguf.hpp"
#include "luminal/io/gguf_dequant.hpp"
#include "snippet.hpp"

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "model-Q4_K_M.gguf";
  auto f = luminal::io::GgufFile::open(path);
  std::vector<float> w = luminal::io::dequantize(f.tensor("blk.0.attn_q.weight"));
  expect(static_cast<int64_t>(w.size()) == f.tensor("blk.0.attn_q.weight").numel(),
         "one float per element");
}
