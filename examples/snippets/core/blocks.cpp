// luminal/core/blocks.hpp: a block-quantized tensor as a graph value. A q8_0 weight is declared
// in its stored type and dequantize()d; the reference decodes it exactly.
#include <cstring>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/luminal.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  // One q8_0 block: d = 0.5 (f16 0x3800), q = 0, 1, ..., 31.
  std::vector<uint8_t> block(static_cast<size_t>(block_bytes(DType::Q8_0)));
  const uint16_t d = 0x3800;
  std::memcpy(block.data(), &d, 2);
  for (int j = 0; j < 32; ++j)
    block[static_cast<size_t>(2 + j)] = static_cast<uint8_t>(j);
  expect(storage_bytes(DType::Q8_0, 32) == 34, "32 q8_0 values take 34 bytes");

  Graph g;
  Tensor w = g.tensor("w", {1, 32}, DType::Q8_0);
  Tensor y = w.dequantize().output("y");
  ReferenceRuntime rt(g);
  rt.set_bytes("w", block.data(), block.size());
  rt.execute();
  const std::vector<float> v = rt.get<float>(y);
  expect(v[3] == 1.5f && v[31] == 15.5f, "x = d * q");

  float direct[32];
  blocks::dequantize(DType::Q8_0, block.data(), direct, 32);
  expect(direct[31] == v[31], "the graph and the decoder agree bit for bit");
}
