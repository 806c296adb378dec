// luminal/cuda/cuda_backend.hpp: the CUDA backend. The driver and NVRTC load at run time, so this
// program starts on a machine without a GPU; cuda_available() says why it cannot run there.
#include <iostream>
#include <string>
#include <vector>

#include "luminal/compiler/options.hpp"
#include "luminal/cuda/cuda_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/session.hpp"
#include "snippet.hpp"

using luminal::CompileOptions;

int main() {
  luminal::Graph g;
  g.declare_dim("s", 1, 64);  // buffers are sized for the largest s
  auto x = g.tensor("x", {"s", 4});
  (x.exp() + 1.0).output("y");

  if (std::string why; !luminal::cuda::cuda_available(&why)) {
    std::cerr << why << "\n";
    return 0;  // no GPU here: nothing to run
  }
  luminal::cuda::CudaBackend gpu;  // device 0, its primary context
  luminal::Session s = luminal::compile(g, gpu, CompileOptions().search_graph_limit(20));
  s.set(x, std::vector<float>{0, 0, 0, 0});
  s.execute({{"s", 1}});
  expect(s.get<float>("y") == std::vector<float>{2, 2, 2, 2}, "exp(0) + 1");
}
