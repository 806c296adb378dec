// luminal/io/safetensors.hpp: safetensors files (one file, a sharded folder or an index),
// memory-mapped with zero-copy views, converted, and bound to a graph's inputs by name.
// Run: snippet_io_safetensors <model folder>.
#include <vector>

#include "luminal/io/safetensors.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/host_buffer.hpp"
#include "luminal/runtime/reference.hpp"
#include "snippet.hpp"

int main(int argc, char** argv) {
  const char* folder = argc > 1 ? argv[1] : "Llama-3.2-1B/";
  auto w = luminal::io::Weights::open(folder);  // file, folder or index.json
  const luminal::io::TensorView& t = w.get("model.norm.weight");
  expect(!t.bytes.empty(), "t.bytes points into the mapping");
  luminal::HostBuffer f32 = luminal::io::convert(t, luminal::DType::F32);
  std::vector<float> v = luminal::io::to_vector<float>(t);
  expect(static_cast<int64_t>(v.size()) == f32.numel(), "one float per element");

  luminal::Graph g;  // a graph with an input named like the tensor
  auto norm = g.tensor("model.norm.weight", {static_cast<int64_t>(v.size())}, t.dtype);
  (norm * 2.0).output("twice");
  luminal::ReferenceRuntime runtime(g);
  auto report = luminal::io::bind(runtime, w);  // sets inputs labelled by name
  expect(report.bound.size() == 1 && report.unset_inputs.empty(), "the input is bound");
}
