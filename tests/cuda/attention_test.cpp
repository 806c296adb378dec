// cuda.Attention (luminal/cuda/attention.cpp): flash-decoding, offered under
// LUMINAL_CUDA_ATTENTION=1. On the host: where it is offered (decode attention in f32 and bf16,
// GQA groups of 1 to 8 heads, soft-capped and windowed rows; not without the switch), that the
// fewest-kernels seed takes it (two kernels fewer), and that its kernels compile for sm_90. On a
// GPU: a decode step against the reference at contexts across the cluster's key interleave.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "cpu/ops_test_util.hpp"
#include "cuda/attention_graphs.hpp"
#include "cuda/cuda_test_util.hpp"
#include "luminal/nn/attention.hpp"
#include "luminal/nn/linear.hpp"
#include "support/env_scope.hpp"

namespace luminal {
namespace {

using testing::attention_step;
using testing::prefill_step;

bool is_attention(std::string_view op) { return op == "cuda.Attention"; }

Graph decode_step(int64_t kv, int64_t groups, int64_t hd, DType t,
                  const nn::AttentionOptions& o = {}) {
  return attention_step(kv, groups, hd, t, o, 1);
}

constexpr const char* kThreadMode = "// a thread an output";

/// The matmul kernels of `l` (cuda.Matmul, cuda.MatmulCast) whose source takes a thread an output.
int thread_mode_matmuls(const LlirGraph& l, const Graph& g) {
  int count = 0;
  for (const cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of(g.dim_facts())))
    count += k.source.find(kThreadMode) != std::string::npos;
  return count;
}

struct AttentionOn : testing::EnvScope {
  AttentionOn() : EnvScope("LUMINAL_CUDA_ATTENTION", "1") {}
};

struct Case {
  int64_t kv, groups, hd;
  DType t;
  nn::AttentionOptions o;
};

std::vector<Case> cases() {
  nn::AttentionOptions capped;
  capped.softcap = 5.0;
  capped.window = 300;
  return {{3, 3, 64, DType::F32, {}},     {3, 3, 64, DType::BF16, {}},
          {8, 4, 128, DType::BF16, {}},   {2, 4, 256, DType::F32, {}},
          {4, 1, 32, DType::F16, {}},     {2, 2, 32, DType::F32, capped},
          {1, 6, 96, DType::BF16, capped}};
}

std::string describe(const Case& c) {
  return std::string(name(c.t)) + " kv " + std::to_string(c.kv) + " groups " +
         std::to_string(c.groups) + " hd " + std::to_string(c.hd) +
         (c.o.softcap ? " softcap" : "") + (c.o.window ? " window" : "");
}

class CudaAttentionHost : public ::testing::Test {
 protected:
  void SetUp() override { LUMINAL_REQUIRE_NVRTC(); }
  AttentionOn on_;
};

TEST_F(CudaAttentionHost, OfferedForDecodeAttentionAndCompiles) {
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources, whats;
  for (const Case& c : cases()) {
    const Graph g = decode_step(c.kv, c.groups, c.hd, c.t, c.o);
    auto [l, hits] = testing::prefer_ops(g, rules, is_attention);
    EXPECT_EQ(hits, 1) << describe(c) << ": " << l.op_mix_string();
    testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
  }
  testing::expect_compiles(sources, whats);
}

/// The kernel's variants (attention.cpp's switches): the query heads a cluster takes, the keys a
/// warp has in flight, the next keys' loads issued before the running sums (nullptr: the
/// default, on) or after ("0"), and the block's rows as their index where the table is the
/// identity and the cluster merge's loads issued together (nullptr: on) or neither ("0"), and the
/// blocks a cluster (nullptr: 8).
struct Variant {
  const char* group;
  const char* keys;
  const char* prefetch;
  const char* early;
  const char* cluster;
};
const Variant kVariants[] = {{nullptr, nullptr, nullptr, nullptr, nullptr},
                             {"1", nullptr, "0", nullptr, "2"},
                             {"2", "8", nullptr, "0", nullptr},
                             {"1", "1", "0", "0", "4"},
                             {nullptr, nullptr, nullptr, nullptr, "1"}};

std::string describe(const Variant& v) {
  return std::string("group ") + (v.group ? v.group : "-") + " keys " + (v.keys ? v.keys : "-") +
         " prefetch " + (v.prefetch ? v.prefetch : "-") + " early " + (v.early ? v.early : "-") +
         " cluster " + (v.cluster ? v.cluster : "-");
}

struct VariantScope {
  explicit VariantScope(const Variant& v)
      : group("LUMINAL_CUDA_ATTENTION_GROUP", v.group),
        keys("LUMINAL_CUDA_ATTENTION_KEYS", v.keys),
        prefetch("LUMINAL_CUDA_ATTENTION_PREFETCH", v.prefetch),
        early("LUMINAL_CUDA_ATTENTION_EARLY", v.early),
        cluster("LUMINAL_CUDA_ATTENTION_CLUSTER", v.cluster) {}
  testing::EnvScope group, keys, prefetch, early, cluster;
};

// Each variant's kernels compile for every case, and the switches change what they say: a
// cluster's query heads (its arrays of per-head partial sums), its keys in flight, the next keys'
// registers.
TEST_F(CudaAttentionHost, EveryVariantCompiles) {
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources, whats;
  const Graph g84 = decode_step(8, 4, 128, DType::BF16);
  for (const Variant& v : kVariants) {
    const VariantScope scope(v);
    for (const Case& c : cases()) {
      const Graph g = decode_step(c.kv, c.groups, c.hd, c.t, c.o);
      auto [l, hits] = testing::prefer_ops(g, rules, is_attention);
      ASSERT_EQ(hits, 1) << describe(c) << ": " << l.op_mix_string();
      testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
      whats.back() += " (" + describe(v) + ")";
    }
    // 8 KV heads of 4 query heads, head dim 128 (the 8B's)
    const LlirGraph l = testing::prefer_ops(g84, rules, is_attention).first;
    std::vector<std::string> src, what;
    testing::add_kernels(l, testing::spec_of(g84.dim_facts()), src, what);
    std::string kernel;
    for (const std::string& k : src)
      if (k.find("lmn_attention") != std::string::npos) kernel = k;
    ASSERT_FALSE(kernel.empty()) << describe(v);
    // (all 4 of a KV head's query heads by default; one where the cluster is too small for all 4
    // to give 64 blocks)
    const bool small = v.cluster != nullptr && (*v.cluster == '1' || *v.cluster == '2');
    const std::string heads = std::string("float mx[") +
                              (v.group ? v.group
                               : small ? "1"
                                       : "4") +
                              "]";
    EXPECT_NE(kernel.find(heads), std::string::npos) << describe(v);
    const std::string keys = std::string("float kr[") + (v.keys ? v.keys : "4") + "][4]";
    EXPECT_NE(kernel.find(keys), std::string::npos) << describe(v);
    EXPECT_EQ(kernel.find("float kn[") != std::string::npos, v.prefetch == nullptr) << describe(v);
    EXPECT_EQ(kernel.find("ss[c] = ") != std::string::npos, v.early == nullptr) << describe(v);
    // Each merge weight computed by one lane and shuffled to the warp's other 31.
    EXPECT_EQ(kernel.find("__shfl_sync(0xffffffffu, aw, w)") != std::string::npos &&
                  kernel.find("__shfl_sync(0xffffffffu, ac, c)") != std::string::npos,
              v.early == nullptr)
        << describe(v);
    // A cluster of 8 blocks by default (or the switch's), none with 1.
    const std::string dims = std::string("void __cluster_dims__(") + (v.cluster ? v.cluster : "8");
    EXPECT_EQ(kernel.find(dims) != std::string::npos, v.cluster == nullptr || *v.cluster != '1')
        << describe(v);
    EXPECT_EQ(kernel.find("void __cluster_dims__") == std::string::npos &&
                  kernel.find("lmn_cluster_sync();") == std::string::npos,
              v.cluster != nullptr && *v.cluster == '1')
        << describe(v);
    // The 8B's blocks take the query heads in order: no table by default.
    if (v.early != nullptr || v.group == nullptr) {
      EXPECT_EQ(kernel.find("lmn_att_rows") == std::string::npos, v.early == nullptr)
          << describe(v);
    }
  }
  testing::expect_compiles(sources, whats);
}

TEST_F(CudaAttentionHost, TheSeedTakesItForTwoKernelsFewer) {
  const Graph g = decode_step(3, 3, 64, DType::BF16);
  const LlirGraph with = testing::cuda_seed_program(g);
  size_t without = 0;
  {
    const testing::EnvScope off("LUMINAL_CUDA_ATTENTION", "0");
    without = testing::kernel_count(testing::cuda_seed_program(g));
  }
  EXPECT_EQ(opstest::count_op(with, "cuda.Attention"), 1) << with.to_text();
  EXPECT_EQ(testing::kernel_count(with) + 2, without) << with.to_text();
}

TEST_F(CudaAttentionHost, NotForNineQueryHeadsAKvHead) {
  testing::CudaRulesOnly rules;
  EXPECT_EQ(testing::prefer_ops(decode_step(1, 9, 64, DType::F32), rules, is_attention).second, 0);
}

TEST(CudaAttentionSwitch, OnByDefaultOffWithZero) {
  testing::CudaRulesOnly rules;
  {
    const testing::EnvScope unset("LUMINAL_CUDA_ATTENTION", nullptr);
    EXPECT_EQ(testing::prefer_ops(decode_step(3, 3, 64, DType::F32), rules, is_attention).second,
              1);
  }
  const testing::EnvScope off("LUMINAL_CUDA_ATTENTION", "0");
  EXPECT_EQ(testing::prefer_ops(decode_step(3, 3, 64, DType::F32), rules, is_attention).second, 0);
}

// By default a cluster takes the most query heads of a KV head that still give 64 blocks
// (attention.cpp's block_group): all 4 of the 8B's 8 KV heads (8 clusters of 8 blocks), one of
// SmolLM2's 3 (3 KV heads: 9 clusters, not 3); LUMINAL_CUDA_ATTENTION_GROUP caps it instead.
// LUMINAL_CUDA_DIMS_EARLY=1 (codegen.cpp, opt-in): the kernel reads its dims (the context length)
// before it waits for the kernel before it, and still compiles; by default after.
TEST_F(CudaAttentionHost, DimsReadBeforeTheWaitWithTheSwitch) {
  testing::CudaRulesOnly rules;
  const Graph g = decode_step(8, 4, 128, DType::BF16);
  const LlirGraph l = testing::prefer_ops(g, rules, is_attention).first;
  for (const char* early : {"1", "0"}) {
    const testing::EnvScope on("LUMINAL_CUDA_DIMS_EARLY", early);
    std::vector<std::string> src, what;
    testing::add_kernels(l, testing::spec_of(g.dim_facts()), src, what);
    int checked = 0;
    for (const std::string& k : src) {
      const size_t entry = k.find("LMN_ENTRY(lmn_attention)");
      if (entry == std::string::npos) continue;
      const size_t dims = k.find("dims[0]", entry), wait = k.find("lmn_pdl();", entry);
      ASSERT_NE(dims, std::string::npos) << k;
      ASSERT_NE(wait, std::string::npos) << k;
      EXPECT_EQ(dims < wait, std::string(early) == "1") << k;
      ++checked;
    }
    EXPECT_EQ(checked, 1);
    testing::expect_compiles(src, what);
  }
}

TEST_F(CudaAttentionHost, AClusterTakesFewerHeadsWhereAllWouldGiveTooFewBlocks) {
  testing::CudaRulesOnly rules;
  auto heads = [&](const Graph& g) {
    const LlirGraph l = testing::prefer_ops(g, rules, is_attention).first;
    std::vector<std::string> src, what;
    testing::add_kernels(l, testing::spec_of(g.dim_facts()), src, what);
    for (const std::string& k : src)
      if (k.find("lmn_attention") != std::string::npos) {
        const size_t at = k.find("float mx[");
        if (at != std::string::npos) return k.substr(at + 9, k.find(']', at) - at - 9);
      }
    return std::string("none");
  };
  EXPECT_EQ(heads(decode_step(8, 4, 128, DType::BF16)), "4");
  EXPECT_EQ(heads(decode_step(3, 3, 64, DType::BF16)), "1");
  EXPECT_EQ(heads(decode_step(1, 8, 64, DType::BF16)), "1");  // (8 blocks with all 8)
  const testing::EnvScope cap("LUMINAL_CUDA_ATTENTION_GROUP", "8");
  EXPECT_EQ(heads(decode_step(3, 3, 64, DType::BF16)), "3");
}

// By default (LUMINAL_CUDA_MATMUL_THREADS, reduce.cpp) a prefill's Q @ K^T (Q constant along the
// keys, both contiguous along the head dim) takes a thread an output, in f32 and bf16; its kernels
// compile for sm_90; with the switch at 0 no matmul does.
TEST_F(CudaAttentionHost, PrefillScoresTakeAThreadAnOutputUnlessSwitchedOff) {
  for (DType t : {DType::F32, DType::BF16}) {
    const Graph g = prefill_step(8, 4, 128, t);
    {
      const testing::EnvScope off("LUMINAL_CUDA_MATMUL_THREADS", "0");
      EXPECT_EQ(thread_mode_matmuls(testing::cuda_seed_program(g), g), 0) << name(t);
    }
    const testing::EnvScope unset("LUMINAL_CUDA_MATMUL_THREADS", nullptr);
    const LlirGraph l = testing::cuda_seed_program(g);
    EXPECT_EQ(thread_mode_matmuls(l, g), 1) << name(t) << ": " << l.op_mix_string();
    std::vector<std::string> sources, whats;
    testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
    testing::expect_compiles(sources, whats);
  }
  // Not a projection of a few rows (as much an A B^T, but 8 x 64 outputs: a warp each).
  Graph g;
  g.declare_dim("s", 1, 8);
  nn::linear(g.tensor("x", {Expr::var("s"), Expr(256)}), g.tensor("w", {Expr(64), Expr(256)}))
      .output("y");
  const LlirGraph l = testing::cuda_seed_program(g);
  EXPECT_EQ(opstest::count_op(l, "cuda.Matmul"), 1) << l.op_mix_string();
  EXPECT_EQ(thread_mode_matmuls(l, g), 0) << l.op_mix_string();
}

// The same on a GPU, against the reference, at query rows and contexts across the tiles.
TEST(CudaAttention, PrefillScoresInThreadsMatchTheReference) {
  LUMINAL_REQUIRE_GPU();
  const testing::EnvScope on("LUMINAL_CUDA_MATMUL_THREADS", "1");
  uint64_t seed = 31;
  for (DType t : {DType::F32, DType::BF16}) {
    const Graph g = prefill_step(2, 4, 64, t);
    const LlirGraph l = testing::cuda_seed_program(g);
    ASSERT_EQ(thread_mode_matmuls(l, g), 1) << name(t) << ": " << l.op_mix_string();
    testing::expect_prefill_matches_reference(l, g, t, seed);
  }
}

TEST(CudaAttention, DecodeStepMatchesTheReference) {
  LUMINAL_REQUIRE_GPU();
  const AttentionOn on;
  uint64_t seed = 11;
  for (const Variant& v : kVariants)
    for (const Case& c : cases()) {
      const VariantScope scope(v);
      const Graph g = decode_step(c.kv, c.groups, c.hd, c.t, c.o);
      auto [l, hits] = testing::prefer_ops(g, testing::gpu(), is_attention);
      ASSERT_EQ(hits, 1) << describe(c) << ": " << l.op_mix_string();
      std::vector<DynMap> dyns;
      for (int64_t ctx : {1, 7, 31, 32, 33, 100, 257, 700, 1100})
        dyns.push_back(DynMap{{"s", 1}, {"c", ctx}});
      testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l, dyns);
      const testing::Tol tol =
          c.t == DType::F32 ? testing::Tol{1e-5, 1e-4} : testing::Tol{2e-2, 2e-2};
      for (const DynMap& dyn : dyns) {
        const testing::BufferMap in = opstest::random_inputs(g, dyn, ++seed, -1, 1);
        const testing::BufferMap want = opstest::run_reference(g, in, dyn);
        const testing::BufferMap got = testing::run_executable(lp, g, in, dyn);
        opstest::expect_same(
            got.at("o"), want.at("o"), tol,
            describe(c) + ", " + describe(v) + ", c " + std::to_string(dyn.at("c")));
      }
    }
}

TEST(CudaAttention, RandomProgramsMatchTheReference) {
  // Programs drawn from a bf16 decode step's e-graph, half of them taking cuda.Attention (and
  // its cast-down form) wherever offered, each against the reference.
  LUMINAL_REQUIRE_GPU();
  const AttentionOn on;
  nn::AttentionOptions o;
  o.softcap = 8.0;
  const Graph g = decode_step(2, 4, 64, DType::BF16, o);
  BuiltSpace b = build_search_space(g, testing::gpu(), g.dim_facts());
  Rng rng(23);
  std::uniform_real_distribution<double> u(0, 1);
  std::set<std::string> seen;
  int with = 0;
  uint64_t seed = 5;
  const std::vector<DynMap> dyns{{{"s", 1}, {"c", 1}}, {{"s", 1}, {"c", 333}}};
  for (int d = 0; d < 200 && seen.size() < 16; ++d) {
    const LlirGraph l =
        d % 2 == 0 ? to_llir(*b.space, b.space->random_genome(rng))
                   : to_llir(*b.space, b.space->best_scoring_genome([&](ENodeId n) {
                       return (is_attention(b.space->egraph().node(n).op->name) ? 10 : 0) + u(rng);
                     }));
    if (!seen.insert(l.to_text()).second) continue;
    with += opstest::count_op(l, "cuda.Attention") > 0;
    testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l, dyns);
    for (const DynMap& dyn : dyns) {
      const testing::BufferMap in = opstest::random_inputs(g, dyn, ++seed, -1, 1);
      const testing::BufferMap want = opstest::run_reference(g, in, dyn);
      const testing::BufferMap got = testing::run_executable(lp, g, in, dyn);
      opstest::expect_same(got.at("o"), want.at("o"), testing::Tol{2e-2, 2e-2},
                           "program " + std::to_string(seen.size()) + "\n" + l.to_text());
    }
  }
  EXPECT_GE(with, 1) << "no drawn program held cuda.Attention";
}

}  // namespace
}  // namespace luminal
