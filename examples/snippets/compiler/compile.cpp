// luminal/compiler/compile.hpp: the compiler's back half: one search per dim bucket, each giving
// a loaded Plan. A session owns the buffers the search profiles on; here they are made by hand.
#include <cstdint>
#include <string>
#include <vector>

#include "luminal/compiler/compile.hpp"
#include "luminal/compiler/search.hpp"
#include "luminal/compiler/trace.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {"s", 8});
  (x.exp() + x).output("y");
  cpu::CpuBackend backend(1);
  const CompileOptions opts =
      CompileOptions().search_graph_limit(4).dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 16)});
  const std::vector<std::string> dim_names = {"s"};

  // The buffers candidates are timed on, at the largest size any bucket needs.
  ProfileData profile_data;
  auto bytes = [](const Node& n) {
    return static_cast<uint64_t>(numel(n.shape).eval({{"s", 16}}) * size_bytes(n.dtype));
  };
  for (NodeId id : g.inputs())
    profile_data.inputs[g.node(id).label] = backend.allocate(bytes(g.node(id)));
  for (NodeId id : g.outputs())
    profile_data.outputs[g.node(id).label] = backend.allocate(bytes(g.node(id)));
  Trace trace;  // LUMINAL_TRACE

  int plans = 0;
  for (auto& ranges : bucket_combinations(g, opts)) {
    BucketPlan b = search_bucket(g, backend, opts, ranges, dim_names, profile_data, trace);
    // b.plan is loaded for b.spec; bind it to buffers and execute
    plans += b.plan != nullptr && b.spec.dim_names == dim_names;
  }
  expect(plans == 2, "one plan per bucket");
  for (auto& [label, buf] : profile_data.inputs)
    backend.release(buf);
  for (auto& [label, buf] : profile_data.outputs)
    backend.release(buf);
}
