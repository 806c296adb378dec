#include <cstdio>

#include "luminal/io/safetensors.hpp"
#include "luminal/luminal.hpp"

int main() {
  luminal::Graph g;
  auto a = g.tensor("a", {2});
  auto y = (a * 3.0).sum(0).output("y");
  luminal::ReferenceRuntime rt(g);
  rt.set(a, std::vector<float>{1, 2});
  rt.execute();
  float v = rt.get<float>(y)[0];
  // The compiler, sessions and the CPU backend (OpenBLAS) link from an installed package too.
  luminal::cpu::CpuBackend cpu(1);
  auto model =
      luminal::compile(g, cpu, luminal::CompileOptions().search_graph_limit(3).verbose(false));
  model.set(a, std::vector<float>{1, 2});
  model.execute();
  float w = model.get<float>(y)[0];
  // luminal::io links too: round-trip a tensor through the safetensors writer and parser.
  std::vector<float> data{1.5f, -2.0f};
  luminal::io::TensorView t{
      "t", luminal::DType::F32, {2}, {reinterpret_cast<const uint8_t*>(data.data()), 8}, ""};
  std::vector<luminal::io::TensorView> ts{t};
  auto bytes = luminal::io::serialize_safetensors(ts);
  auto back = luminal::io::SafeTensors::from_bytes(bytes, "memory");
  float r = luminal::io::to_vector<float>(back.get("t"))[1];
  std::printf("consumer: %g %g %g\n", v, w, r);
  return v == 9.0f && w == 9.0f && r == -2.0f ? 0 : 1;
}
