// The ordered scatter (indexes known only at run time: torch's index_copy_ into a static KV
// cache, index_put_) on CUDA, the plain and the in-place kernel, against the reference bit for
// bit: one block walks chunks of 1024 indexes and the last write to an index wins. A chunk whose
// indexes rise strictly writes at once (no two alike); any other chunk searches later threads for
// its index. Each case below takes one of the two paths, or both across its chunks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/cuda/compile_batch.hpp"
#include "luminal/luminal.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::count_op;

constexpr int64_t kDest = 5000;

struct Case {
  const char* name;
  std::vector<int32_t> idx;
};

std::vector<int32_t> rising(int64_t m, int32_t from, int32_t step) {
  std::vector<int32_t> v(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i)
    v[static_cast<size_t>(i)] = from + static_cast<int32_t>(i) * step;
  return v;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"one rising chunk (a decode step's cache row)", rising(1024, 7, 2)});
  c.push_back({"rising over three chunks", rising(2500, 0, 2)});
  // Rising within each chunk, but the second chunk writes the first's indexes again: the
  // chunks' order decides.
  std::vector<int32_t> again = rising(1024, 0, 3);
  const std::vector<int32_t> second = rising(600, 0, 3);
  again.insert(again.end(), second.begin(), second.end());
  c.push_back({"rising chunks that meet", again});
  std::vector<int32_t> dup = rising(1500, 0, 1);
  dup[700] = dup[300];  // one repeat inside the first chunk
  dup[1400] = dup[1100];
  c.push_back({"repeats inside chunks", dup});
  c.push_back({"all one index", std::vector<int32_t>(1800, 42)});
  std::vector<int32_t> down = rising(1300, 4000, -3);
  c.push_back({"falling", down});
  std::vector<int32_t> out = rising(1100, 0, 4);
  out[5] = -1;
  out[1050] = static_cast<int32_t>(kDest);  // past the end: skipped
  out[1051] = static_cast<int32_t>(kDest + 7);
  c.push_back({"indexes outside the tensor", out});
  return c;
}

/// dest[idx] = src. In place needs a dest nothing else reads (not an input): dest + dest, exact.
Graph scatter_graph(int64_t m, DType t, bool inplace) {
  Graph g;
  Tensor dest = g.tensor("dest", {kDest}, t);
  if (inplace) dest = dest + dest;
  Tensor idx = g.tensor("idx", {m}, DType::I32);
  dest.scatter_flat(idx, g.tensor("src", {m}, t)).output("y");
  return g;
}

bool ordered_op(std::string_view op, bool inplace) {
  return op == (inplace ? "cuda.ScatterInPlace" : "Scatter");
}

TEST(ScatterOrdered, IndexesKnownAtRunTimeScatterInOrderPlainOrInPlace) {
  testing::CudaRulesOnly rules;
  for (bool inplace : {false, true}) {
    auto [l, n] = testing::prefer_ops(scatter_graph(1024, DType::BF16, inplace), rules,
                                      [&](std::string_view op) { return ordered_op(op, inplace); });
    EXPECT_EQ(n, 1) << l.op_mix_string();
    EXPECT_EQ(count_op(l, "cuda.ScatterUnique") + count_op(l, "cuda.ScatterDistinct"), 0)
        << l.op_mix_string();
    std::vector<std::string> sources;  // NVRTC compiles them for sm_90 without a GPU
    for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of({})))
      sources.push_back(k.source);
    testing::expect_compiles(sources, "the ordered scatter");
  }
}

TEST(ScatterOrdered, RisingAndRepeatedIndexesMatchTheReferenceOnTheGpu) {
  LUMINAL_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16})
    for (const Case& c : cases())
      for (bool inplace : {false, true}) {
        const int64_t m = static_cast<int64_t>(c.idx.size());
        const Graph g = scatter_graph(m, t, inplace);
        auto [l, n] = testing::prefer_ops(
            g, testing::gpu(), [&](std::string_view op) { return ordered_op(op, inplace); });
        ASSERT_EQ(n, 1) << l.op_mix_string();
        auto bytes = [&](int64_t count, uint32_t seed) {
          HostBuffer b{t, std::vector<uint8_t>(static_cast<size_t>(count * size_bytes(t)))};
          for (size_t i = 0; i < b.bytes.size(); ++i)  // small finite values, each position its own
            b.bytes[i] = static_cast<uint8_t>((i * 2654435761u + seed) >> 7 & 0x3f);
          return b;
        };
        HostBuffer idx{DType::I32, std::vector<uint8_t>(c.idx.size() * 4)};
        std::memcpy(idx.bytes.data(), c.idx.data(), idx.bytes.size());
        const testing::BufferMap in{{"dest", bytes(kDest, 1)}, {"src", bytes(m, 2)}, {"idx", idx}};
        testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
        const auto run = testing::run_plan(lp, in, {});
        ReferenceRuntime ref(g);
        for (const auto& [label, buf] : in)
          ref.set_bytes(label, buf.bytes.data(), buf.bytes.size());
        ref.execute({});
        const Tensor y(g, g.find("y"), {}, t);
        EXPECT_EQ(run.outputs.at("y").bytes, ref.get_bytes(y))
            << c.name << ", " << luminal::name(t) << (inplace ? ", in place" : "");
      }
}

}  // namespace
}  // namespace luminal
