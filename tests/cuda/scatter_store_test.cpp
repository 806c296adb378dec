// Stores into a scatter (luminal/cuda/scatter_store.cpp): cuda.GemvScatter, cuda.GemvCastScatter,
// cuda.MatmulScatter, cuda.MatmulCastScatter and the GEMV-then-product forms compute a matmul and
// write its values into the destination of the cuda.ScatterUnique that read them (a decode
// step's KV-cache writes). And cuda.GemvMatmul / cuda.GemvCastMatmul (gemv.cpp): a GEMV with
// rope's 2-term product in its kernel.
//   Without a GPU (NVRTC only): offered for a projection written into a cache row and for rope
//   (a 2-term product sum) written into one, not where the scatter reads the value through a
//   permutation or LUMINAL_CUDA_SCATTER_STORE=0; every forced kernel compiles for sm_90. The
//   decode step's fewest-kernels program writes both caches this way (fewest_kernels_test.cpp).
//   On the GPU: forced programs give the same bits as the matmul kernel then the scatter, over a
//   dynamic context (the row written is c - 1), and leave every other row as it was; the GEMV
//   with rope in its kernel the same bits as the GEMV then cuda.Matmul. The quantized GEMVs'
//   forms (cuda.QGemvScatter, cuda.QGemvQ8Scatter) likewise, for Q4_0, Q4_1 and Q8_0 weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/nn_check.hpp"
#include "luminal/core/blocks.hpp"
#include "luminal/cuda/gemv_then.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/nn/rope.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::nn_check::from_doubles;
using testing::nn_check::uniform;

bool is_store(std::string_view op) {
  return op.size() > 7 && op.rfind("cuda.", 0) == 0 && op.substr(op.size() - 7) == "Scatter" &&
         op != "cuda.ScatterUnique";
}

/// A GEMV with rope's product in its kernel (gemv.cpp's GemvThen), storing or not.
bool is_then(std::string_view op) {
  return op.find("cuda.GemvMatmul") == 0 || op.find("cuda.GemvCastMatmul") == 0;
}

/// LUMINAL_CUDA_GEMV_MATMUL=1 for a scope (the default since 2026-12-07; the tests name it).
struct GemvThenOn {
  GemvThenOn() { ::setenv("LUMINAL_CUDA_GEMV_MATMUL", "1", 1); }
  ~GemvThenOn() { ::unsetenv("LUMINAL_CUDA_GEMV_MATMUL"); }
};

/// rope of x [1, k] @ w^T as [1, n / 64, 64] at position c - 1 (output "y").
Graph rope_projection(int64_t n, int64_t k, int64_t slots, DType t) {
  Graph g;
  g.declare_dim("c", 1, slots);
  Tensor x = g.tensor("x", {Expr(1), Expr(k)}, t);
  Tensor w = g.tensor("w", {Expr(n), Expr(k)}, t);
  const Tensor pos = g.iota(Expr::var("c") - 1 + Expr::z(), Expr(1));
  nn::apply_rope(x.matmul(w.transpose(0, 1)).reshape({Expr(1), Expr(n / 64), Expr(64)}), pos,
                 g.tensor("inv_freq", {Expr(32)}))
      .output("y");
  return g;
}

/// A cache [slots, n] with row c - 1 written: the projection x [1, k] @ w^T (rope = false), or
/// rope of it as [1, heads, 64] (rope = true; n = heads * 64). `permuted`: the row written is
/// the value's two halves swapped (the scatter reads it through a permutation).
Graph cache_write(int64_t n, int64_t k, int64_t slots, DType t, bool rope, bool permuted = false) {
  Graph g;
  g.declare_dim("c", 1, slots);
  const Expr c = Expr::var("c");
  Tensor x = g.tensor("x", {Expr(1), Expr(k)}, t);
  Tensor w = g.tensor("w", {Expr(n), Expr(k)}, t);
  Tensor cache = g.tensor("cache", {Expr(slots), Expr(n)}, t).persist();
  Tensor v = x.matmul(w.transpose(0, 1));  // [1, n]
  if (rope) {
    const Tensor pos = g.iota(c - 1 + Expr::z(), Expr(1));
    const Tensor inv = g.tensor("inv_freq", {Expr(32)});
    v = nn::apply_rope(v.reshape({Expr(1), Expr(n / 64), Expr(64)}), pos, inv)
            .reshape({Expr(1), Expr(n)});
  }
  if (permuted) v = v.reshape({Expr(2), Expr(n / 2)}).transpose(0, 1).reshape({Expr(1), Expr(n)});
  const Tensor rows = g.iota((c - 1) * n + Expr::z(), Expr(n)).reshape({Expr(1), Expr(n)});
  g.carry(cache.scatter_flat(rows, v).output("cache_out"), cache);
  return g;
}

/// A cache [slots, n] (f32) with row c - 1 written: x [1, k] (f32) @ Dequantize(w)^T, w [n, k]
/// of block type t (a GGUF model's v projection into its cache).
Graph quant_cache_write(int64_t n, int64_t k, int64_t slots, DType t) {
  Graph g;
  g.declare_dim("c", 1, slots);
  const Expr c = Expr::var("c");
  Tensor x = g.tensor("x", {Expr(1), Expr(k)});
  Tensor w = g.tensor("w", {Expr(n), Expr(k)}, t);
  Tensor cache = g.tensor("cache", {Expr(slots), Expr(n)}).persist();
  const Tensor v = nn::linear(x, w.dequantize());  // [1, n]
  const Tensor rows = g.iota((c - 1) * n + Expr::z(), Expr(n)).reshape({Expr(1), Expr(n)});
  g.carry(cache.scatter_flat(rows, v).output("cache_out"), cache);
  return g;
}

/// The quantized GEMVs' store forms and the GEMV each stores the values of.
const std::vector<std::pair<std::string, std::string>> kQuantStores = {
    {"cuda.QGemvScatter", "cuda.QGemv"}, {"cuda.QGemvQ8Scatter", "cuda.QGemvQ8"}};

void compile_all(const std::vector<LlirGraph>& programs, int64_t slots) {
  std::vector<std::string> sources, whats;
  for (const LlirGraph& l : programs)
    testing::add_kernels(l, PlanSpec{{{"c", {1, slots}}}, {"c"}}, sources, whats);
  testing::expect_compiles(sources, whats);
}

/// The program storing through `form`'s kernel (0: the projection; 1: rope after it; 2: rope in
/// the GEMV's kernel), and the same kernels with the store's product on its own, then
/// cuda.ScatterUnique. LUMINAL_SHORT_SUMS is off meanwhile: that rule also offers rope's 2-term
/// product as Mul and Add, which rounds between them, and which a preference for "the same
/// ops" would take instead of the product kernel the store runs.
struct StoreAndSplit {
  LlirGraph fused, split;
  std::string used, base;  // the store's op, and its product's op alone
  int hits = 0;
};

void store_and_split_into(const Graph& g, Backend& be, int form, StoreAndSplit& out) {
  struct ShortSumsOff {
    ShortSumsOff() { ::setenv("LUMINAL_SHORT_SUMS", "off", 1); }
    ~ShortSumsOff() { ::unsetenv("LUMINAL_SHORT_SUMS"); }
  } off;
  int stores = 0;
  std::tie(out.fused, stores) = testing::prefer_ops(
      g, be, [&](std::string_view op) { return is_store(op) && is_then(op) == (form == 2); });
  ASSERT_EQ(stores, 1) << out.fused.op_mix_string();
  std::set<std::string, std::less<>> same;
  for (const LlirNode& node : out.fused.nodes) {
    if (is_store(node.op->name))
      out.used = node.op->name;
    else
      same.insert(std::string(node.op->name));
  }
  out.base = out.used.substr(0, out.used.size() - 7);
  same.insert(out.base);
  same.insert("cuda.ScatterUnique");
  std::tie(out.split, out.hits) =
      testing::prefer_ops(g, be, [&](std::string_view op) { return same.count(op) > 0; });
  ASSERT_EQ(testing::count_op(out.split, "cuda.ScatterUnique"), 1) << out.split.op_mix_string();
  ASSERT_EQ(testing::count_op(out.split, out.base), testing::count_op(out.fused, out.base) + 1)
      << out.used << ": " << out.split.op_mix_string();
}

StoreAndSplit store_and_split(const Graph& g, Backend& be, int form) {
  StoreAndSplit out;
  store_and_split_into(g, be, form, out);
  return out;
}

class ScatterStoreHost : public ::testing::Test {
 protected:
  void SetUp() override { LUMINAL_REQUIRE_NVRTC(); }
};

TEST_F(ScatterStoreHost, OfferedForCacheWritesAndCompile) {
  GemvThenOn on;
  testing::CudaRulesOnly rules;
  std::vector<LlirGraph> programs;
  for (DType t : {DType::F32, DType::BF16})
    for (int form = 0; form < 3; ++form) {  // the projection; rope after it; rope in its kernel
      const Graph g = cache_write(192, 576, 2048, t, form > 0);
      auto [l, stores] = testing::prefer_ops(g, rules, [&](std::string_view op) {
        return is_store(op) && is_then(op) == (form == 2);
      });
      EXPECT_EQ(stores, 1) << name(t) << " form " << form << ": " << l.op_mix_string();
      EXPECT_EQ(testing::count_op(l, "cuda.ScatterUnique"), 0) << l.op_mix_string();
      programs.push_back(l);
    }
  compile_all(programs, 2048);
}

// The GEMVs over block-quantized weights store into the cache too (cuda.QGemvScatter, the
// f32-activation form; cuda.QGemvQ8Scatter, the integer form after cuda.QuantizeQ8): offered for
// a v projection written into a cache row, and they compile.
TEST_F(ScatterStoreHost, QuantizedGemvsStoreIntoTheCache) {
  testing::CudaRulesOnly rules;
  std::vector<LlirGraph> programs;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0})
    for (const auto& [store, base] : kQuantStores) {
      const Graph g = quant_cache_write(192, 576, 2048, t);
      auto [l, hits] =
          testing::prefer_ops(g, rules, [&](std::string_view op) { return op == store; });
      EXPECT_EQ(hits, 1) << name(t) << " " << store << ": " << l.op_mix_string();
      EXPECT_EQ(testing::count_op(l, "cuda.ScatterUnique"), 0) << l.op_mix_string();
      EXPECT_EQ(testing::count_op(l, base), 0) << l.op_mix_string();
      programs.push_back(l);
    }
  compile_all(programs, 2048);
}

// cuda.GemvMatmul / cuda.GemvCastMatmul (on by default): offered for rope over a one-row
// projection (q), its kernels compile for sm_90 (n from 2 to 64 heads); not with
// LUMINAL_CUDA_GEMV_MATMUL=0, and not for two rows (the GEMV's value is read by rows of a prefill).
TEST_F(ScatterStoreHost, GemvThenOfferedForRopeAndCompiles) {
  std::optional<GemvThenOn> on{std::in_place};
  testing::CudaRulesOnly rules;
  std::vector<LlirGraph> programs;
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t n : {int64_t{128}, int64_t{576}, int64_t{4096}}) {
      auto [l, thens] = testing::prefer_ops(rope_projection(n, 576, 2048, t), rules, is_then);
      EXPECT_EQ(thens, 1) << name(t) << " n " << n << ": " << l.op_mix_string();
      EXPECT_EQ(testing::count_op(l, "cuda.Matmul"), 0) << l.op_mix_string();
      programs.push_back(l);
    }
  compile_all(programs, 2048);
  {
    Graph g;  // two rows
    g.declare_dim("c", 1, 64);
    Tensor x = g.tensor("x", {Expr(2), Expr(576)}, DType::BF16);
    Tensor w = g.tensor("w", {Expr(576), Expr(576)}, DType::BF16);
    const Tensor pos = g.iota(Expr::var("c") - 1 + Expr::z(), Expr(2));
    nn::apply_rope(x.matmul(w.transpose(0, 1)).reshape({Expr(2), Expr(9), Expr(64)}), pos,
                   g.tensor("inv_freq", {Expr(32)}))
        .output("y");
    EXPECT_EQ(testing::prefer_ops(g, rules, is_then).second, 0);
  }
  on.reset();
  {
    const testing::EnvScope zero("LUMINAL_CUDA_GEMV_MATMUL", "0");
    testing::CudaRulesOnly off;
    auto [l, thens] =
        testing::prefer_ops(rope_projection(576, 576, 2048, DType::BF16), off, is_then);
    EXPECT_EQ(thens, 0) << l.op_mix_string();
  }
}

// The payload (the product's view of the GEMV's values) reads back as it was written, through
// the registry as a program cache does; malformed text is an error naming it.
TEST(GemvThenView, RoundTripsAndRejectsMalformedText) {
  View v = View::contiguous({Expr(1), Expr(9), Expr(2), Expr(32), Expr(2)});
  v.strides = {Expr(576) * Expr::z(), Expr(64) * Expr::z(), Expr(0), Expr::z(),
               Expr(32) * Expr::z()};
  v.base = Expr(5);
  const cuda::GemvThenView p(v);
  const auto back = cuda::cuda_read_payload(p.kind(), p.serialize());
  ASSERT_TRUE(back) << p.serialize();
  ASSERT_TRUE(p.equals(*back)) << p.serialize() << " read back as " << back->to_string();
  EXPECT_EQ(back->hash(), p.hash());
  for (const char* bad : {"", "0", "2 1", "1 4 z 0 7", "x"})
    EXPECT_THROW(cuda::GemvThenView::deserialize(bad), Error) << "'" << bad << "'";
}

TEST_F(ScatterStoreHost, NotOfferedThroughAPermutationOrWhenSwitchedOff) {
  testing::CudaRulesOnly rules;
  {
    const Graph g = cache_write(192, 576, 2048, DType::BF16, false, true);
    auto [l, stores] = testing::prefer_ops(g, rules, is_store);
    EXPECT_EQ(stores, 0) << l.op_mix_string();
  }
  ::setenv("LUMINAL_CUDA_SCATTER_STORE", "0", 1);
  {
    testing::CudaRulesOnly off;
    const Graph g = cache_write(192, 576, 2048, DType::BF16, false);
    auto [l, stores] = testing::prefer_ops(g, off, is_store);
    EXPECT_EQ(stores, 0) << l.op_mix_string();
  }
  ::unsetenv("LUMINAL_CUDA_SCATTER_STORE");
}

// Without a GPU: the split program of every form runs the store's own product kernel (it did not
// once the short-sum rule came: the device test compared the store with Mul and Add).
TEST_F(ScatterStoreHost, TheSplitFormRunsTheStoresProductKernel) {
  GemvThenOn on;
  testing::CudaRulesOnly rules(true);
  for (DType t : {DType::F32, DType::BF16})
    for (int form = 0; form < 3; ++form)
      for (int64_t n : {int64_t{192}, int64_t{576}}) {
        store_and_split(cache_write(n, 576, 300, t, form > 0), rules, form);
        if (HasFatalFailure()) return;
      }
}

/// Every row of the cache `got` (rows of n values) but row `written` is the cache as `given`;
/// row `written` is not.
void expect_only_row_written(const HostBuffer& got, const HostBuffer& given, int64_t n,
                             int64_t written, const std::string& what) {
  ASSERT_EQ(got.bytes.size(), given.bytes.size()) << what;
  const size_t row = static_cast<size_t>(n) * size_bytes(given.dtype);
  for (size_t i = 0; i < got.bytes.size() / row; ++i) {
    const bool same = std::equal(got.bytes.begin() + i * row, got.bytes.begin() + (i + 1) * row,
                                 given.bytes.begin() + i * row);
    EXPECT_EQ(same, i != static_cast<size_t>(written)) << what << " row " << i;
  }
}

TEST(CudaScatterStore, SameBitsAsTheMatmulThenTheScatter) {
  LUMINAL_REQUIRE_GPU();
  GemvThenOn on;
  const int64_t slots = 300, k = 576;
  uint64_t seed = 5;
  for (DType t : {DType::F32, DType::BF16})
    for (int form = 0; form < 3; ++form)  // the projection; rope after it; rope in its kernel
      for (int64_t n : {int64_t{192}, int64_t{576}}) {
        const bool rope = form > 0;
        const Graph g = cache_write(n, k, slots, t, rope);
        const StoreAndSplit p = store_and_split(g, testing::gpu(), form);
        if (::testing::Test::HasFatalFailure()) return;
        const LlirGraph& fused = p.fused;
        const LlirGraph& split = p.split;
        const std::string& used = p.used;
        const std::string& base = p.base;
        const int hits = p.hits;
        std::vector<DynMap> buckets;
        for (int64_t ctx : {int64_t{1}, int64_t{7}, slots})
          buckets.push_back({{"c", ctx}});
        testing::LoadedPlan a = testing::load_plan(testing::gpu(), fused, buckets);
        testing::LoadedPlan b = testing::load_plan(testing::gpu(), split, buckets);
        const std::vector<double> cache = uniform(t, slots * n, ++seed, -1, 1);
        for (const DynMap& dyn : buckets) {
          testing::BufferMap in{{"x", from_doubles(t, uniform(t, k, ++seed, -1, 1))},
                                {"w", from_doubles(t, uniform(t, n * k, ++seed, -1, 1))},
                                {"cache", from_doubles(t, cache)}};
          if (rope)
            in.emplace("inv_freq", from_doubles(DType::F32, uniform(DType::F32, 32, ++seed, 0, 1)));
          const testing::PlanRun ra = testing::run_plan(a, in, dyn);
          const testing::PlanRun rb = testing::run_plan(b, in, dyn);
          const HostBuffer& ya = ra.outputs.at("cache_out");
          const HostBuffer& yb = rb.outputs.at("cache_out");
          const std::string what = std::string(name(t)) + " " + used + " n " + std::to_string(n) +
                                   " c " + std::to_string(dyn.at("c"));
          ASSERT_EQ(ya.bytes.size(), yb.bytes.size()) << what;
          EXPECT_TRUE(ya.bytes == yb.bytes) << what << ": not the same bits as " << base
                                            << " then the scatter (" << hits << " ops alike)";
          expect_only_row_written(ya, from_doubles(t, cache), n, dyn.at("c") - 1, what);
        }
      }
}

// The quantized GEMVs' stores give the same bits as the GEMV then cuda.ScatterUnique, and leave
// every other row as it was.
TEST(CudaScatterStore, QuantizedGemvsSameBitsAsTheGemvThenTheScatter) {
  LUMINAL_REQUIRE_GPU();
  const int64_t slots = 300, k = 576, n = 192;
  uint64_t seed = 11;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0})
    for (const auto& [store, base] : kQuantStores) {
      const Graph g = quant_cache_write(n, k, slots, t);
      const auto [fused, hits] =
          testing::prefer_ops(g, testing::gpu(), [&](std::string_view op) { return op == store; });
      ASSERT_EQ(hits, 1) << fused.op_mix_string();
      const auto [split, alike] = testing::prefer_ops(g, testing::gpu(), [&](std::string_view op) {
        return op == base || op == "cuda.ScatterUnique" || op == "cuda.QuantizeQ8";
      });
      ASSERT_EQ(testing::count_op(split, "cuda.ScatterUnique"), 1) << split.op_mix_string();
      ASSERT_EQ(testing::count_op(split, base), 1) << split.op_mix_string();
      std::vector<DynMap> buckets;
      for (int64_t ctx : {int64_t{1}, int64_t{7}, slots})
        buckets.push_back({{"c", ctx}});
      testing::LoadedPlan a = testing::load_plan(testing::gpu(), fused, buckets);
      testing::LoadedPlan b = testing::load_plan(testing::gpu(), split, buckets);
      const std::vector<double> cache = uniform(DType::F32, slots * n, ++seed, -1, 1);
      HostBuffer w{t, std::vector<uint8_t>(static_cast<size_t>(storage_bytes(t, n * k)))};
      blocks::fill_valid_blocks(t, w.bytes, ++seed);
      for (const DynMap& dyn : buckets) {
        testing::BufferMap in{
            {"x", from_doubles(DType::F32, uniform(DType::F32, k, ++seed, -1, 1))},
            {"w", w},
            {"cache", from_doubles(DType::F32, cache)}};
        const HostBuffer ya = testing::run_plan(a, in, dyn).outputs.at("cache_out");
        const HostBuffer yb = testing::run_plan(b, in, dyn).outputs.at("cache_out");
        const std::string what =
            std::string(name(t)) + " " + store + " c " + std::to_string(dyn.at("c"));
        ASSERT_EQ(ya.bytes.size(), yb.bytes.size()) << what;
        EXPECT_TRUE(ya.bytes == yb.bytes)
            << what << ": not the same bits as " << base << " then the scatter (" << alike << ")";
        expect_only_row_written(ya, from_doubles(DType::F32, cache), n, dyn.at("c") - 1, what);
      }
    }
}

// The GEMV with rope's product in its kernel (cuda.GemvMatmul / cuda.GemvCastMatmul) gives the
// same bits as the GEMV then cuda.Matmul, at positions 1, 7 and 300.
TEST(CudaGemvThen, SameBitsAsTheGemvThenTheProduct) {
  LUMINAL_REQUIRE_GPU();
  GemvThenOn on;
  const int64_t slots = 300, k = 576;
  uint64_t seed = 11;
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t n : {int64_t{192}, int64_t{576}, int64_t{4096}}) {
      const Graph g = rope_projection(n, k, slots, t);
      auto [fused, thens] = testing::prefer_ops(g, testing::gpu(), is_then);
      ASSERT_EQ(thens, 1) << fused.op_mix_string();
      auto [split, hits] = testing::prefer_ops(g, testing::gpu(), [](std::string_view op) {
        return op == "cuda.Gemv" || op == "cuda.GemvCast" || op == "cuda.Matmul";
      });
      ASSERT_EQ(testing::count_op(split, "cuda.Matmul"), 1) << split.op_mix_string();
      std::vector<DynMap> buckets;
      for (int64_t ctx : {int64_t{1}, int64_t{7}, slots})
        buckets.push_back({{"c", ctx}});
      testing::LoadedPlan a = testing::load_plan(testing::gpu(), fused, buckets);
      testing::LoadedPlan b = testing::load_plan(testing::gpu(), split, buckets);
      for (const DynMap& dyn : buckets) {
        testing::BufferMap in{
            {"x", from_doubles(t, uniform(t, k, ++seed, -1, 1))},
            {"w", from_doubles(t, uniform(t, n * k, ++seed, -1, 1))},
            {"inv_freq", from_doubles(DType::F32, uniform(DType::F32, 32, ++seed, 0, 1))}};
        const HostBuffer ya = testing::run_plan(a, in, dyn).outputs.at("y");
        const HostBuffer yb = testing::run_plan(b, in, dyn).outputs.at("y");
        EXPECT_TRUE(ya.bytes == yb.bytes)
            << name(t) << " n " << n << " c " << dyn.at("c") << ": " << fused.op_mix_string()
            << " against " << split.op_mix_string() << " (" << hits << " ops alike)";
      }
    }
}

}  // namespace
}  // namespace luminal
