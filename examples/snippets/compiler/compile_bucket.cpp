// luminal/compiler/compile_bucket.hpp: one bucket's program through the compile cache: searched
// and stored on a miss, loaded on a hit; the profile data is asked for only on a miss.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "luminal/compiler/compile_bucket.hpp"
#include "luminal/compiler/compile_cache.hpp"
#include "luminal/compiler/trace.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {"s", 8});
  x.relu().sqrt().output("y");
  cpu::CpuBackend backend(1);
  const auto root = scratch_dir("luminal-snippet-compile-bucket");
  const CompileOptions opts = CompileOptions().search_graph_limit(4).cache_dir(root).dim_buckets(
      "s", {DimBucket(1, 1), DimBucket(2, 16)});
  const std::vector<std::string> dim_names = {"s"};
  const Trace trace;

  // What a session hands over: its buffers, made here on the first miss.
  ProfileData profile;
  int asked = 0;
  auto data = [&]() -> const ProfileData& {
    if (asked++ == 0) {
      for (NodeId id : g.inputs())
        profile.inputs[g.node(id).label] = backend.allocate(16 * 8 * 4);
      for (NodeId id : g.outputs())
        profile.outputs[g.node(id).label] = backend.allocate(16 * 8 * 4);
    }
    return profile;
  };

  for (const BucketRanges& ranges : bucket_combinations(g, opts)) {
    BucketPlan b = compile_bucket(g, backend, opts, ranges, dim_names, data, trace);
    // b.plan is loaded for b.spec; b.report.cached says whether a search ran
    expect(b.plan != nullptr && !b.report.cached, "the first compile searches");
  }
  const int searched = asked;
  if (ProgramCache(opts).enabled()) {  // not with LUMINAL_CACHE=off
    for (const BucketRanges& ranges : bucket_combinations(g, opts)) {
      BucketPlan b = compile_bucket(g, backend, opts, ranges, dim_names, data, trace);
      expect(b.plan != nullptr && b.report.cached, "the second start loads the program");
    }
    expect(asked == searched, "a hit asks for no profile data");
  }
  for (auto& [label, buf] : profile.inputs)
    backend.release(buf);
  for (auto& [label, buf] : profile.outputs)
    backend.release(buf);
  std::filesystem::remove_all(root);
}
