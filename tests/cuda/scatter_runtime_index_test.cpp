// A cache write at a position known only at run time, in torch's form (`cache[:, :, pos] = k`:
// index_copy_ / index_put into a static cache [1, heads, slots, d], the flat index built from
// iotas and the input pos, as python/luminal/torch_backend/ops_shape.py builds it). The index
// proof (luminal/kernels/index_proof.hpp) makes its writes distinct, so the parallel scatter
// (cuda.ScatterUnique) and the stores into it (cuda/scatter_store.cpp) apply, where the ordered
// one-block scatter ran before.
//   Without a GPU (NVRTC only): both are offered for such a write (the store by a projection's
//   GEMV, or by the elementwise region after it: cuda.FusedScatter<k>), neither for positions
//   read from a tensor of two (the rows may meet); the forced kernels compile for sm_90.
//   On the GPU: the store's program and the ordered scatter's give the same bits at several
//   positions (a negative one included), every other row left as it was.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/nn_check.hpp"
#include "luminal/luminal.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::nn_check::from_doubles;
using testing::nn_check::uniform;

bool is_fused_store(std::string_view op) { return op.rfind("cuda.FusedScatter", 0) == 0; }

bool is_store(std::string_view op) {
  return is_fused_store(op) ||
         (op.size() > 7 && op.rfind("cuda.", 0) == 0 && op.substr(op.size() - 7) == "Scatter" &&
          op != "cuda.ScatterUnique");
}

/// cache [1, heads, slots, d] with row pos of every head written from x [1, k] @ w^T, or with
/// `scaled`, from (x [1, k] @ w^T) * a + b (an elementwise region after the projection, as rope
/// is); `positions` entries of pos (1: torch's decode step; 2: two rows from data, which may
/// meet).
Graph torch_cache_write(int64_t heads, int64_t d, int64_t k, int64_t slots, DType t,
                        int64_t positions = 1, bool scaled = false) {
  Graph g;
  Tensor x = g.tensor("x", {positions, k}, t);
  Tensor w = g.tensor("w", {heads * d, k}, t);
  Tensor cache = g.tensor("cache", {1, heads, slots, d}, t).persist();
  Tensor v = x.matmul(w.transpose(0, 1))
                 .reshape({positions, heads, d})
                 .transpose(0, 1)
                 .reshape({1, heads, positions, d});
  if (scaled) v = v * g.tensor("a", {1, heads, 1, d}, t) + g.tensor("b", {d}, t);
  const std::vector<Dim> out{1, heads, positions, d};
  auto placed = [&](const Tensor& a, int axis) {
    std::vector<Dim> dims(4, 1);
    dims[axis] = a.dim(0);
    return a.reshape(dims).expand(out);
  };
  auto i64 = [&](int64_t c) { return g.constant(static_cast<double>(c), DType::I64); };
  Tensor pos = g.tensor("pos", {positions}, DType::I64);
  pos = pos.lt(0.0).where(pos + i64(slots), pos);
  Tensor idx = placed(g.arange(1, DType::I64), 0) * i64(heads * slots * d) +
               placed(g.arange(heads, DType::I64), 1) * i64(slots * d) + placed(pos, 2) * i64(d) +
               placed(g.arange(d, DType::I64), 3);
  g.carry(cache.scatter_flat(idx, v).output("cache_out"), cache);
  return g;
}

class RuntimeIndexHost : public ::testing::Test {
 protected:
  void SetUp() override { LUMINAL_REQUIRE_NVRTC(); }
};

TEST_F(RuntimeIndexHost, ParallelAndStoredWritesOfferedAndCompile) {
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources, whats;
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t heads : {int64_t{2}, int64_t{8}}) {
      const Graph g = torch_cache_write(heads, 64, 256, 300, t);
      auto [stored, stores] = testing::prefer_ops(g, rules, is_store);
      EXPECT_EQ(stores, 1) << name(t) << " heads " << heads << ": " << stored.op_mix_string();
      EXPECT_EQ(testing::count_op(stored, "cuda.ScatterInPlace"), 0) << stored.op_mix_string();
      auto [parallel, n] = testing::prefer_ops(
          g, rules, [](std::string_view op) { return op == "cuda.ScatterUnique"; });
      EXPECT_EQ(n, 1) << parallel.op_mix_string();
      for (const LlirGraph* l : {&stored, &parallel})
        testing::add_kernels(*l, PlanSpec{}, sources, whats);
    }
  // An elementwise region after the projection stores into the cache itself.
  for (DType t : {DType::F32, DType::BF16}) {
    const Graph g = torch_cache_write(8, 64, 256, 300, t, 1, true);
    auto [l, n] = testing::prefer_ops(g, rules, is_fused_store);
    EXPECT_EQ(n, 1) << name(t) << ": " << l.op_mix_string();
    EXPECT_EQ(
        testing::count_op(l, "cuda.ScatterInPlace") + testing::count_op(l, "cuda.ScatterUnique"), 0)
        << l.op_mix_string();
    testing::add_kernels(l, PlanSpec{}, sources, whats);
  }
  testing::expect_compiles(sources, whats);
}

TEST_F(RuntimeIndexHost, NotOfferedForRowsReadFromData) {
  testing::CudaRulesOnly rules;
  const Graph g = torch_cache_write(2, 64, 256, 300, DType::BF16, 2);
  auto is_parallel = [](std::string_view op) {
    return is_store(op) || op == "cuda.ScatterUnique" || op == "cuda.ScatterDistinct";
  };
  auto [l, n] = testing::prefer_ops(g, rules, is_parallel);
  EXPECT_EQ(n, 0) << l.op_mix_string();
}

TEST(CudaRuntimeIndex, StoredWritesGiveTheOrderedScattersBits) {
  LUMINAL_REQUIRE_GPU();
  const int64_t heads = 8, d = 64, k = 256, slots = 300;
  uint64_t seed = 3;
  for (DType t : {DType::F32, DType::BF16})
    for (bool scaled : {false, true}) {
      const Graph g = torch_cache_write(heads, d, k, slots, t, 1, scaled);
      auto [stored, stores] =
          testing::prefer_ops(g, testing::gpu(), scaled ? is_fused_store : is_store);
      ASSERT_EQ(stores, 1) << stored.op_mix_string();
      auto [ordered, n] = testing::prefer_ops(
          g, testing::gpu(), [](std::string_view op) { return op == "cuda.ScatterInPlace"; });
      ASSERT_EQ(n, 1) << ordered.op_mix_string();
      testing::LoadedPlan a = testing::load_plan(testing::gpu(), stored, {DynMap{}});
      testing::LoadedPlan b = testing::load_plan(testing::gpu(), ordered, {DynMap{}});
      const std::vector<double> cache = uniform(t, heads * slots * d, ++seed, -1, 1);
      for (int64_t pos : {int64_t{0}, int64_t{7}, slots - 1, int64_t{-2}}) {
        testing::BufferMap in{{"x", from_doubles(t, uniform(t, k, ++seed, -1, 1))},
                              {"w", from_doubles(t, uniform(t, heads * d * k, ++seed, -1, 1))},
                              {"cache", from_doubles(t, cache)},
                              {"pos", from_doubles(DType::I64, {static_cast<double>(pos)})}};
        if (scaled) {
          in.emplace("a", from_doubles(t, uniform(t, heads * d, ++seed, -1, 1)));
          in.emplace("b", from_doubles(t, uniform(t, d, ++seed, -1, 1)));
        }
        const HostBuffer ya = testing::run_plan(a, in, {}).outputs.at("cache_out");
        const HostBuffer yb = testing::run_plan(b, in, {}).outputs.at("cache_out");
        const std::string what =
            std::string(name(t)) + (scaled ? " scaled" : "") + " pos " + std::to_string(pos);
        ASSERT_EQ(ya.bytes.size(), yb.bytes.size()) << what;
        EXPECT_TRUE(ya.bytes == yb.bytes) << what << ": " << stored.op_mix_string();
        // Row pos (of each head) changed; every other row is the cache as given.
        const HostBuffer given = from_doubles(t, cache);
        const size_t row = static_cast<size_t>(d) * size_bytes(t);
        const int64_t r = pos < 0 ? pos + slots : pos;
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t s = 0; s < slots; ++s) {
            const size_t at = static_cast<size_t>(h * slots + s) * row;
            const bool same = std::equal(ya.bytes.begin() + at, ya.bytes.begin() + at + row,
                                         given.bytes.begin() + at);
            EXPECT_EQ(same, s != r) << what << " head " << h << " row " << s;
          }
      }
    }
}

}  // namespace
}  // namespace luminal
