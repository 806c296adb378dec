// CI without a GPU: NVRTC compiles, for sm_90, every kernel the CUDA backend generates for the
// programs of the test graphs (random graphs and explicit op coverage), and compile errors point
// into the generated source.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/compile_batch.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/nn/sampling.hpp"
#include "support/env_scope.hpp"
#include "support/random_graph.hpp"

namespace luminal {
namespace {

struct Sources {
  std::set<std::string> unique;
  std::vector<std::string> whats;  // one per unique source, for errors
  std::vector<std::string> order;  // the unique sources in the order whats names them
  int programs = 0;
};

/// The kernels of up to `programs` programs of g's CUDA search space.
void collect(const Graph& g, int programs, uint64_t seed, Sources& out) {
  testing::CudaRulesOnly rules;
  const Facts facts = g.dim_facts();
  BuiltSpace b = build_search_space(g, rules, facts);
  const PlanSpec spec = testing::spec_of(facts);
  Rng rng(seed);
  std::set<std::string> seen;
  for (int d = 0; d < programs * 4 && static_cast<int>(seen.size()) < programs; ++d) {
    Genome genome = d == 0   ? b.space->first_genome()
                    : d == 1 ? b.space->fewest_kernels_genome()
                             : b.space->random_genome(rng);
    LlirGraph l = to_llir(*b.space, genome);
    if (!seen.insert(l.to_text()).second) continue;
    ++out.programs;
    for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, spec))
      if (out.unique.insert(k.source).second) {
        out.whats.push_back(k.what);
        out.order.push_back(k.source);
      }
  }
}

void merge(const Sources& from, Sources& into) {
  for (size_t k = 0; k < from.order.size(); ++k)
    if (into.unique.insert(from.order[k]).second) {
      into.whats.push_back(from.whats[k]);
      into.order.push_back(from.order[k]);
    }
  into.programs += from.programs;
}

/// Compiles every source through the backend's batching, as a search would.
void compile_all(const Sources& s) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> v(s.unique.begin(), s.unique.end());
  const cuda::CompiledBatches c = testing::expect_compiles(v, "a test kernel");
  for (const cuda::CompiledBatches::Batch& b : c.batches)
    EXPECT_GT(b.cubin.size(), 1000u);
  std::printf("[nvrtc] %d programs, %zu distinct kernels in %zu batches compiled in %.1f s\n",
              s.programs, v.size(), c.batches.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

class Nvrtc : public ::testing::Test {
 protected:
  void SetUp() override { LUMINAL_REQUIRE_NVRTC(); }
};

TEST_F(Nvrtc, RandomGraphKernelsCompileForSm90) {
  Sources s;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t seed = 0; seed < 16; ++seed) {
    testing::FuzzGraph fg = testing::random_graph(seed);
    collect(fg.graph, 2, seed, s);
  }
  compile_all(s);
  EXPECT_GT(s.unique.size(), 100u);
  std::printf("[nvrtc] with the searches: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

// Views with an element offset (slices at a start: View::base) in every kernel family that reads
// a view: elementwise and fused, reductions, rows (softmax), gathers, a matmul's operands.
TEST_F(Nvrtc, OffsetViewKernelsCompileForSm90) {
  Graph g;
  g.declare_dim("s", 1, 64);
  Tensor x = g.tensor("x", {"s", 12});
  Tensor w = g.tensor("w", {12, 8});
  Tensor xs = x.slice(0, 1).slice(1, 2, 10);  // [s-1, 8] from row 1, column 2
  (xs.exp() * 2.0f).output("e");
  xs.sum(-1).output("r");
  xs.softmax(-1).output("m");
  xs.matmul(w.slice(0, 4)).output("y");
  x.slice(1, 1, std::nullopt, 3).output("c");
  Sources s;
  collect(g, 12, 7, s);
  bool based = false;  // a generated offset starts at a slice's base (14 for xs, 32 for w's rows)
  for (const std::string& src : s.unique)
    for (const char* b : {"= ((int)(14));", "= ((int)(32));"})
      based = based || src.find(b) != std::string::npos;
  EXPECT_TRUE(based) << *s.unique.begin();
  compile_all(s);
}

// The NaN fast paths (one-instruction 16-bit loads and roundings where no NaN payload can reach a
// result; on by default) and the careful form (LUMINAL_CUDA_FAST_NAN=0): 16-bit row ops and a bf16
// decoder compile in both, the fast forms appear by default and the roundings' fast form never
// appears with the flag at 0. (Random graphs' kernels in every dtype compile with the default in
// RandomGraphKernelsCompileForSm90: the same seeds' kernels, once.)
TEST_F(Nvrtc, NanPayloadFormsCompile) {
  auto sources = [&]() {
    Sources s;
    for (DType t : {DType::BF16, DType::F16}) {
      Graph g;
      g.declare_dim("s", 1, 64);
      Tensor x = g.tensor("x", {Expr::var("s"), Expr(4096)}, t);
      Tensor w = g.tensor("w", {Expr(4096)}, t);
      x.softmax(-1).output("softmax");
      x.rms_norm(w, 1e-5).output("rms_norm");
      x.layer_norm(w, w, 1e-5).output("layer_norm");
      x.sum(-1).output("sum");
      collect(g, 3, 7, s);
    }
    models::DecoderShape shape{.slots = 64, .max_step = 16};
    shape.dtype = DType::BF16;
    collect(models::build_decoder(
                models::llama_config(
                    {.layers = 1, .hidden = 64, .ffn = 96, .heads = 4, .kv_heads = 2, .vocab = 50}),
                shape)
                .graph,
            3, 3, s);
    return s;
  };
  auto count = [](const Sources& s, const char* bf16, const char* f16) {
    int n = 0;
    for (const std::string& src : s.unique) {
      const std::string body = src.substr(cuda::device_prelude().size());
      n += body.find(bf16) != std::string::npos || body.find(f16) != std::string::npos;
    }
    return n;
  };
  ::unsetenv("LUMINAL_CUDA_FAST_NAN");
  const Sources fast = sources();
  EXPECT_GT(count(fast, "rdm_bf16(", "rdm_f16("), 0);
  EXPECT_GT(count(fast, "ldm_bf16(", "ldm_f16("), 0);
  compile_all(fast);
  ::setenv("LUMINAL_CUDA_FAST_NAN", "0", 1);
  const Sources careful = sources();
  ::unsetenv("LUMINAL_CUDA_FAST_NAN");
  EXPECT_EQ(count(careful, "rdm_bf16(", "rdm_f16("), 0);
  compile_all(careful);
}

// The Llama of luminal::models (decode and prefill shapes): rope as a 2-term product sum, the
// KV-cache writes as cuda.ScatterUnique (in the fewest-kernels program), the attention.
TEST_F(Nvrtc, LlamaDecoderKernelsCompile) {
  const models::Decoder d = models::build_decoder(
      models::llama_config(
          {.layers = 1, .hidden = 64, .ffn = 96, .heads = 4, .kv_heads = 2, .vocab = 50}),
      {.slots = 64, .max_step = 16});
  Sources s;
  collect(d.graph, 6, 3, s);
  bool unique = false;
  for (const std::string& src : s.unique)
    unique = unique || (src.find("lmn_scatter") != std::string::npos &&
                        src.find("__shared__") == std::string::npos);
  EXPECT_TRUE(unique) << "no unique (parallel) scatter among the kernels";
  compile_all(s);
}

TEST_F(Nvrtc, EveryDtypeAndOpCompiles) {
  Sources s;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64,
                  DType::I8, DType::U8, DType::F8E4M3, DType::F8E5M2}) {
    Graph g;
    g.declare_dim("s", 1, 64);
    Tensor a = g.tensor("a", {"s", 16}, t);
    Tensor b = g.tensor("b", {"s", 16}, t);
    Tensor idx = g.tensor("idx", {"s"}, DType::I32);
    (a + b).output("add");
    (a * b).output("mul");
    a.sum(-1).output("sum");
    a.max(-1).output("max");
    a.cast(DType::F32).output("cast_f32");
    (a < b).output("lt");
    a.permute({1, 0}).output("t");
    g.tensor("c", {8, 16}, t).index_select(0, idx).output("gather");
    g.tensor("st", {8, 16}, t).scatter_flat(idx, a.sum(-1)).output("scatter");
    if (is_float(t)) {
      a.exp().output("exp");
      a.sin().output("sin");
      a.sqrt().output("sqrt");
      a.reciprocal().output("recip");
      a.matmul(b.permute({1, 0})).output("mm");
      // a product sum in t itself (matmul() casts f8 and tf32 to f32 first): every float dtype
      // through the vectorised matmul's loads
      Tensor w = g.tensor("w", {8, 16}, t);
      (a.unsqueeze(1) * w.unsqueeze(0)).sum(-1).output("mulsum");
      (a % b).output("fmod");
    }
    collect(g, 4, 1, s);
  }
  // The matmuls read both operands 16 bytes at a time (both contiguous along k), bf16 and f16
  // ones in 16 bits, without the casts to f32 their graphs have.
  int vector_matmuls = 0, uncast_matmuls = 0;
  for (const std::string& src : s.unique) {
    vector_matmuls +=
        src.find("const uint4* r1 = reinterpret_cast<const uint4*>(in1") != std::string::npos;
    // (the products of two 16-bit floats are exact in f32: a fused multiply-add per product)
    uncast_matmuls +=
        src.find("__fmaf_rn(ldm_bf16(e0[j]), ldm_bf16(e1[j]), part)") != std::string::npos;
  }
  EXPECT_GT(vector_matmuls, 0);
  EXPECT_GT(uncast_matmuls, 0);
  compile_all(s);
}

// Softmax, log-softmax, RMSNorm, layer norm and masked softmax become one cuda.Row kernel in
// the fewest-kernels program (row lengths 33 to 32768 and a dynamic one, f32 and bf16), and
// every kernel of their spaces compiles (row length 1 too).
TEST_F(Nvrtc, RowKernelsAreBuiltAndCompile) {
  Sources s;
  for (DType t : {DType::F32, DType::BF16}) {
    for (int64_t len : {int64_t{1}, int64_t{33}, int64_t{1000}, int64_t{32768}, int64_t{-1}}) {
      for (int which = 0; which < 5; ++which) {
        Graph g;
        g.declare_dim("s", 1, 64);
        g.declare_dim("c", 1, 4096);
        const Expr L = len < 0 ? Expr::var("c") : Expr(len);
        Tensor x = g.tensor("x", {Expr::var("s"), L}, t);
        Tensor w = g.tensor("w", {L}, t);
        Tensor y;
        switch (which) {
          case 0: y = x.softmax(-1); break;
          case 1: y = x.log_softmax(-1); break;
          case 2: y = x.rms_norm(w, 1e-5); break;
          case 3: y = x.layer_norm(w, w, 1e-5); break;
          default: {  // masked softmax: -inf above the diagonal
            Tensor mask = g.arange(L).unsqueeze(0) > g.arange(Expr::var("s")).unsqueeze(1);
            y = x.masked_fill(mask, -std::numeric_limits<double>::infinity()).softmax(-1);
          }
        }
        y.output("y");
        testing::CudaRulesOnly rules;
        const Facts facts = g.dim_facts();
        BuiltSpace b = build_search_space(g, rules, facts);
        const LlirGraph l = to_llir(*b.space, b.space->fewest_kernels_genome());
        const auto mix = l.op_mix();
        const std::string what = std::string(name(t)) + " len " + std::to_string(len) + " graph " +
                                 std::to_string(which) + ": " + l.op_mix_string();
        if (len != 1) {  // (a row of one element needs no row kernel)
          EXPECT_EQ(mix.count("cuda.Row"), 1u) << what;
          EXPECT_EQ(mix.count("SumReduce") + mix.count("MaxReduce"), 0u) << what;
        }
        Sources one;
        collect(g, 3, 7, one);
        // Each graph's programs run a row kernel (their random draws differ in which).
        bool row = false;
        for (const std::string& src : one.unique)
          row = row || src.find("lmn_row") != std::string::npos;
        EXPECT_TRUE(row || len == 1) << what;
        merge(one, s);
      }
    }
  }
  // The chunked form (the default): rows kept packed, 16 bytes a load; a norm's weight, not kept,
  // read a chunk at a time too; and the element form (LUMINAL_CUDA_ROW_CHUNKS=0) compiles as well.
  Sources chunked, plain;
  for (int form = 0; form < 2; ++form) {
    if (form == 1) ::setenv("LUMINAL_CUDA_ROW_CHUNKS", "0", 1);
    for (DType t : {DType::F32, DType::BF16}) {
      for (int64_t len : {int64_t{32}, int64_t{1000}, int64_t{32768}}) {
        Graph g;
        g.declare_dim("s", 1, 64);
        Tensor x = g.tensor("x", {Expr::var("s"), Expr(len)}, t);
        Tensor w = g.tensor("w", {Expr(len)}, t);
        x.softmax(-1).output("softmax");
        x.rms_norm(w, 1e-5).output("rms_norm");
        x.cast(DType::F32).softmax(-1).output("softmax_f32");  // f32 results of 16-bit rows
        collect(g, 3, 7, form == 0 ? chunked : plain);
      }
    }
  }
  ::unsetenv("LUMINAL_CUDA_ROW_CHUNKS");
  // Rows too long to keep on chip: softmax and log-softmax find max and sum in one online pass.
  Sources online;
  for (DType t : {DType::F32, DType::BF16}) {
    Graph g;
    g.declare_dim("s", 1, 64);
    Tensor x = g.tensor("x", {Expr::var("s"), Expr(262144)}, t);
    x.softmax(-1).output("softmax");
    x.log_softmax(-1).output("log_softmax");
    collect(g, 3, 7, online);
  }
  int online_rows = 0;
  for (const std::string& src : online.unique) {
    online_rows += src.find("lmn_row") != std::string::npos &&
                   src.find("const float Mn = lmn_maxn(M, ") != std::string::npos;
    s.unique.insert(src);
  }
  EXPECT_GE(online_rows, 4);
  int packed = 0, weight_chunks = 0, plain_rows = 0;
  for (const std::string& src : chunked.unique) {
    // A chunk's store is as wide as its loads (an f32 result of bf16 rows: 4 elements a chunk).
    EXPECT_EQ(src.find("union { unsigned char v; S_f32"), std::string::npos);
    const bool row = src.find("lmn_row") != std::string::npos;
    packed += row && src.find("uint4 c0[") != std::string::npos;
    weight_chunks += row && src.find("const uint4 q1 = ") != std::string::npos;
    s.unique.insert(src);
  }
  for (const std::string& src : plain.unique) {
    const bool row = src.find("lmn_row") != std::string::npos;
    plain_rows += row && src.find("uint4") == std::string::npos;
    s.unique.insert(src);
  }
  EXPECT_GT(packed, 0);
  EXPECT_GT(weight_chunks, 0);
  EXPECT_GT(plain_rows, 0);
  compile_all(s);
}

// A bf16/f16 linear (cast to f32, matmul, cast back in the IR) is one kernel in the fewest-kernels
// program: cuda.MatmulCast reading the 16-bit operands through their casts, 16 bytes at a time.
TEST_F(Nvrtc, SixteenBitLinearIsOneKernel) {
  Sources s;
  for (DType t : {DType::BF16, DType::F16}) {
    Graph g;
    g.declare_dim("s", 1, 64);
    Tensor x = g.tensor("x", {Expr::var("s"), 64}, t);
    Tensor w = g.tensor("w", {32, 64}, t);
    x.matmul(w.transpose(0, 1)).output("y");
    testing::CudaRulesOnly rules;
    BuiltSpace b = build_search_space(g, rules, g.dim_facts());
    const LlirGraph l = to_llir(*b.space, b.space->fewest_kernels_genome());
    EXPECT_EQ(l.op_mix(), (std::map<std::string, int>{{"cuda.MatmulCast", 1}}))
        << l.op_mix_string();
    collect(g, 4, 5, s);
  }
  int fused = 0;
  for (const std::string& src : s.unique)
    fused += src.find("__fmaf_rn(ldm_bf16(e0[j]), ldm_bf16(e1[j]), part)") != std::string::npos &&
             src.find("S_bf16* __restrict__ out") != std::string::npos;
  EXPECT_GT(fused, 0);
  compile_all(s);
}

// cuda.Gemv (gemv.cpp): offered for x [m, k] @ W^T with m from 1 to 8 (the weight read once for
// all m rows), not for m = 16 or a dynamic m; its kernels compile for every dtype, row count,
// split-k width (LUMINAL_CUDA_GEMV_WARPS) and form (LUMINAL_CUDA_GEMV_MMA: CUDA cores or mma).
TEST_F(Nvrtc, GemvFormsCompile) {
  auto gemv_program = [](int64_t m, int64_t n, int64_t k, DType t) -> std::optional<LlirGraph> {
    Graph g;
    Tensor x = g.tensor("x", {Expr(m), Expr(k)}, t);
    Tensor w = g.tensor("w", {Expr(n), Expr(k)}, t);
    x.matmul(w.transpose(0, 1)).output("y");
    testing::CudaRulesOnly rules;
    BuiltSpace b = build_search_space(g, rules, g.dim_facts());
    const EGraph& eg = b.space->egraph();
    const LlirGraph l = to_llir(*b.space, b.space->best_scoring_genome([&](ENodeId id) {
      const std::string op(eg.node(id).op->name);
      // (not cuda.GemvKN, gemv_kn_test.cpp: it can read a transposed copy of W)
      return op.rfind("cuda.Gemv", 0) == 0 && op.rfind("cuda.GemvKN", 0) != 0 ? 1.0 : 0.0;
    }));
    int gemv = 0;
    for (const LlirNode& node : l.nodes)
      gemv += node.op->name.starts_with("cuda.Gemv") && !node.op->name.starts_with("cuda.GemvKN");
    if (gemv == 0) return std::nullopt;
    return l;
  };
  Sources s;
  for (DType t : {DType::BF16, DType::F16, DType::F32})
    for (int64_t m : {1, 3, 8})
      for (const char* warps : {"", "1", "2", "8"})
        for (const char* mma : {"", "0", "1"}) {
          if (*warps) ::setenv("LUMINAL_CUDA_GEMV_WARPS", warps, 1);
          if (*mma) ::setenv("LUMINAL_CUDA_GEMV_MMA", mma, 1);
          const std::optional<LlirGraph> l = gemv_program(m, 48, 4096, t);
          ::unsetenv("LUMINAL_CUDA_GEMV_WARPS");
          ::unsetenv("LUMINAL_CUDA_GEMV_MMA");
          ASSERT_TRUE(l.has_value()) << "no cuda.Gemv for m = " << m << " in " << name(t);
          if (t != DType::F32) {
            EXPECT_EQ(l->op_mix(), (std::map<std::string, int>{{"cuda.GemvCast", 1}}))
                << l->op_mix_string();
          }
          if (*warps) ::setenv("LUMINAL_CUDA_GEMV_WARPS", warps, 1);
          if (*mma) ::setenv("LUMINAL_CUDA_GEMV_MMA", mma, 1);
          for (cuda::GeneratedKernel& k : cuda::generate_kernels(*l, PlanSpec{}))
            if (s.unique.insert(k.source).second) s.whats.push_back(k.what);
          ::unsetenv("LUMINAL_CUDA_GEMV_WARPS");
          ::unsetenv("LUMINAL_CUDA_GEMV_MMA");
          ++s.programs;
        }
  EXPECT_FALSE(gemv_program(16, 48, 4096, DType::BF16).has_value()) << "16 rows: no GEMV form";
  EXPECT_FALSE(gemv_program(2, 48, 4100, DType::BF16).has_value())
      << "k not in 16-byte chunks: no GEMV form";
  int split = 0;
  for (const std::string& src : s.unique)
    split += src.find("__shared__ double red[8]") != std::string::npos &&
             src.find("__fmaf_rn(ldm_bf16(ex[j]), ldm_bf16(ew[j]), part)") != std::string::npos;
  EXPECT_GT(split, 0);
  int mma = 0;
  for (const std::string& src : s.unique)
    mma += src.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos;
  EXPECT_GT(mma, 0);
  // Weights below LUMINAL_CUDA_PREFETCH MiB (4 here) are prefetched into L2 before the kernel
  // waits for the one before it (48 x 4096: 384 KiB); an 8 MiB weight is not, nor any with 0.
  const char* was = std::getenv("LUMINAL_CUDA_PREFETCH");
  const std::string saved = was ? was : "";
  ::setenv("LUMINAL_CUDA_PREFETCH", "4", 1);
  auto prefetches = [](const std::string& src) {
    const size_t entry = src.find("LMN_ENTRY(lmn_gemv)");
    const size_t f = src.find("lmn_prefetch_l2(in", entry);
    return entry != std::string::npos && f != std::string::npos &&
           f < src.find("lmn_pdl();", entry);
  };
  int prefetched = 0;
  for (const std::string& src : s.unique)
    prefetched += prefetches(src);
  EXPECT_GT(prefetched, 0);
  auto any_prefetch = [&](int64_t n) {
    const std::optional<LlirGraph> l = gemv_program(1, n, 4096, DType::BF16);
    EXPECT_TRUE(l.has_value()) << "no GEMV for n = " << n;
    bool any = false;
    if (l)
      for (const cuda::GeneratedKernel& k : cuda::generate_kernels(*l, PlanSpec{}))
        any = any || prefetches(k.source);
    return any;
  };
  EXPECT_TRUE(any_prefetch(48));
  EXPECT_FALSE(any_prefetch(1024)) << "an 8 MiB weight";
  ::setenv("LUMINAL_CUDA_PREFETCH", "0", 1);
  EXPECT_FALSE(any_prefetch(48)) << "LUMINAL_CUDA_PREFETCH=0";
  if (was)
    ::setenv("LUMINAL_CUDA_PREFETCH", saved.c_str(), 1);
  else
    ::unsetenv("LUMINAL_CUDA_PREFETCH");
  compile_all(s);
}

// The integer quantized GEMV (cuda.QGemvQ8, qgemv.cpp) of every block type, 1 to 3 activation
// rows: Q4_K takes its sub-blocks in pairs (QI_q4_k2; not with LUMINAL_CUDA_QGEMV_Q4K_PAIRS=0).
// Every source compiles for sm_90.
TEST_F(Nvrtc, QGemvQ8FormsCompile) {
  auto sources = [](DType t, int64_t m) {
    Graph g;
    Tensor x = g.tensor("x", {Expr(m), Expr(512)});
    nn::linear(x, g.tensor("w", {Expr(40), Expr(512)}, t).dequantize()).output("y");
    testing::CudaRulesOnly rules;
    BuiltSpace b = build_search_space(g, rules, g.dim_facts());
    const EGraph& eg = b.space->egraph();
    const LlirGraph l = to_llir(*b.space, b.space->best_scoring_genome([&](ENodeId id) {
      return eg.node(id).op->name == std::string_view("cuda.QGemvQ8") ? 1.0 : 0.0;
    }));
    std::vector<std::string> out;
    for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, PlanSpec{}))
      if (k.source.find("LMN_ENTRY(lmn_qgemv)") != std::string::npos) out.push_back(k.source);
    return out;
  };
  auto count = [](const std::vector<std::string>& v, const std::string& what) {
    int n = 0;
    for (const std::string& src : v)
      n += src.find(what) != std::string::npos;
    return n;
  };
  Sources s;
  for (DType t : kWeightBlockDTypes)
    for (int64_t m : {1, 2, 3}) {
      const std::vector<std::string> v = sources(t, m);
      ASSERT_EQ(v.size(), 1u) << name(t) << " m = " << m << ": one cuda.QGemvQ8 kernel";
      EXPECT_EQ(count(v, "QI_q4_k2::ints2"), t == DType::Q4_K ? 1 : 0) << name(t);
      for (const std::string& src : v)
        if (s.unique.insert(src).second) s.whats.push_back(std::string(name(t)));
      ++s.programs;
    }
  ::setenv("LUMINAL_CUDA_QGEMV_Q4K_PAIRS", "0", 1);
  const std::vector<std::string> plain = sources(DType::Q4_K, 1);
  ::unsetenv("LUMINAL_CUDA_QGEMV_Q4K_PAIRS");
  EXPECT_EQ(count(plain, "QI_q4_k2::"), 0);
  EXPECT_EQ(count(plain, "QI_q4_k::ints"), 1);
  for (const std::string& src : plain)
    if (s.unique.insert(src).second) s.whats.push_back("q4_k, one sub-block a unit");
  compile_all(s);
}

/// A 2-layer bf16 Llama decode step (s = 1, 64 slots) ending in the greedy token.
models::Decoder small_decode_step() {
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 1;
  shape.dtype = DType::BF16;
  models::Decoder d = models::build_decoder(
      models::llama_config(
          {.layers = 2, .hidden = 256, .ffn = 512, .heads = 4, .kv_heads = 2, .vocab = 4096}),
      shape);
  nn::greedy_token(d.last_logits).output("token");
  return d;
}

/// Compiles program `l`'s kernels (its dims named from `facts`) for sm_90.
void compile_program(const LlirGraph& l, const Facts& facts) {
  Sources s;
  for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of(facts)))
    if (s.unique.insert(k.source).second) s.whats.push_back(k.what);
  ++s.programs;
  compile_all(s);
}

/// The GEMV kernels of an op mix: plain, cast, epilogue, store-into-scatter and GEMV-then forms.
int gemv_kernels(const std::map<std::string, int>& mix) {
  int n = 0;
  for (const char* op :
       {"cuda.Gemv", "cuda.GemvCast", "cuda.GemvEpi", "cuda.GemvCastEpi", "cuda.GemvCastScatter",
        "cuda.GemvCastMatmul", "cuda.GemvCastMatmulScatter"})
    n += mix.count(op) ? mix.at(op) : 0;
  return n;
}

// A bf16 Llama decode step (s = 1): the fewest-kernels program runs every projection (q, k, v, o,
// gate, up, down: o reads the merged heads through a stride that equals z without being written
// so) and the lm head as cuda.Gemv / cuda.GemvCast (or their epilogue forms; v's as
// cuda.GemvCastScatter, stored into the cache, and rope's product of k as cuda.MatmulScatter;
// by default, and with LUMINAL_CUDA_GEMV_MATMUL=1, q's and k's GEMVs run rope's product in their
// kernels, cuda.GemvCastMatmul and cuda.GemvCastMatmulScatter; =0 keeps them apart), the
// attention scores
// too (the GQA group as the rows sharing each key), the argmax's maxima as cuda.MaxSplit, and
// each layer's P @ V as one cuda.GemvKNCast (gemv_kn.cpp: the 2 query heads of a group sharing each
// V read); its kernels compile. (The attention as its three kernels: LUMINAL_CUDA_ATTENTION=0,
// cuda.Attention being on by default since session 39.)
TEST_F(Nvrtc, LlamaDecodeStepRunsGemvs) {
  // (the forms alone, not inside cuda.RowGemv, which computes the norm in the GEMV)
  const testing::EnvScope no_row("LUMINAL_CUDA_ROW_PROLOGUE", "0");
  const testing::EnvScope three("LUMINAL_CUDA_ATTENTION", "0");
  for (bool then : {false, true}) {
    ::setenv("LUMINAL_CUDA_GEMV_MATMUL", then ? "1" : "0", 1);
    const models::Decoder d = small_decode_step();
    testing::CudaRulesOnly rules;
    BuiltSpace b = build_search_space(d.graph, rules, d.graph.dim_facts());
    const LlirGraph l = to_llir(*b.space, b.space->fewest_kernels_genome());
    const std::map<std::string, int> mix = l.op_mix();
    auto count = [&](const char* op) { return mix.count(op) ? mix.at(op) : 0; };
    EXPECT_EQ(gemv_kernels(mix), 2 * (7 + 1) + 1) << l.op_mix_string();
    // v's projection stores into the v cache and rope's product into the k cache
    // (scatter_store.cpp); with the switch, k's GEMV stores rope's product into the cache and q's
    // runs it in its kernel (gemv.cpp, GemvThen): no rope kernel of its own
    EXPECT_EQ(count("cuda.GemvCastScatter"), 2) << l.op_mix_string();
    EXPECT_EQ(count("cuda.MatmulScatter"), then ? 0 : 2) << l.op_mix_string();
    EXPECT_EQ(count("cuda.GemvCastMatmulScatter"), then ? 2 : 0) << l.op_mix_string();
    EXPECT_EQ(count("cuda.GemvCastMatmul"), then ? 2 : 0) << l.op_mix_string();
    EXPECT_EQ(count("cuda.Matmul"), then ? 0 : 2) << l.op_mix_string();
    EXPECT_EQ(count("cuda.ScatterUnique"), 0) << l.op_mix_string();
    EXPECT_EQ(count("cuda.MaxSplit"), 1) << l.op_mix_string();
    EXPECT_EQ(count("cuda.GemvKNCast"), 2) << l.op_mix_string();
    compile_program(l, d.graph.dim_facts());
    ::unsetenv("LUMINAL_CUDA_GEMV_MATMUL");
  }
}

// Horizontal fusion (compiler/hfuse_rule.hpp) on the same bf16 decode step, its weights
// persistent and folds offered: the seed that takes it runs gate/up as one GEMV a layer over the
// folded concatenation (no Scatter runs a step), and its kernels compile for sm_90. q/k/v stay
// three GEMVs: rope reads q and k through a matmul (the 2-term product sum), and the CUDA matmul
// matchers refuse an operand with a base, so the fused form would cost more kernels there.
TEST_F(Nvrtc, LlamaDecodeStepFusesProjections) {
  // (the forms alone, not inside cuda.RowGemv, which computes the norm in the GEMV)
  const testing::EnvScope no_row("LUMINAL_CUDA_ROW_PROLOGUE", "0");
  const testing::EnvScope three("LUMINAL_CUDA_ATTENTION", "0");  // (as above)
  const models::Decoder d = small_decode_step();
  testing::CudaRulesOnly rules;
  FoldOptions fold;
  fold.on = true;
  fold.min_bytes = 0;
  setenv("LUMINAL_HFUSE", "on", 1);  // off by default
  BuiltSpace b = build_search_space(d.graph, rules, d.graph.dim_facts(), {}, fold);
  unsetenv("LUMINAL_HFUSE");
  ASSERT_TRUE(b.space->has_seed_bias());
  const LlirGraph l = to_llir(*b.space, b.space->biased_genome());
  const std::map<std::string, int> mix = l.op_mix();
  auto count = [&](const char* op) { return mix.count(op) ? mix.at(op) : 0; };
  EXPECT_EQ(gemv_kernels(mix), 2 * (6 + 1) + 1) << l.op_mix_string();
  EXPECT_EQ(count("Scatter"), 0) << l.op_mix_string();
  int wide = 0;  // GEMVs of n = 2 * 512 (gate/up)
  for (const LlirNode& n : l.nodes)
    if (n.op->name.starts_with("cuda.Gemv") && !n.attrs.shape.empty() &&
        n.attrs.shape.back() == Expr(1024))
      ++wide;
  EXPECT_EQ(wide, 2) << l.to_text();
  EXPECT_EQ(FoldResolver::placeholders(l).size(), 2u) << l.to_text();
  compile_program(l, d.graph.dim_facts());
}

// cuda.GemvEpi / cuda.GemvCastEpi (gemv.cpp, kernels/epilogue_rule.hpp): a GEMV whose value an
// elementwise region reads element for element (a residual add, SiLU(gate) * up, a scale) is
// offered as one kernel computing both; not where the region reads the value through another
// view. Forced, they compile for f32 and bf16 and one or several rows.
TEST_F(Nvrtc, GemvEpiloguesAreOfferedAndCompile) {
  auto program = [](const Graph& g) {
    testing::CudaRulesOnly rules;
    return testing::prefer_ops(g, rules, [](std::string_view op) {
      return op == "cuda.GemvEpi" || op == "cuda.GemvCastEpi";
    });
  };
  Sources s;
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t m : {1, 4}) {
      {  // residual: r + x @ W^T
        Graph g;
        Tensor x = g.tensor("x", {Expr(m), Expr(1024)}, t);
        Tensor w = g.tensor("w", {Expr(96), Expr(1024)}, t);
        Tensor r = g.tensor("r", {Expr(m), Expr(96)}, t);
        (r + x.matmul(w.transpose(0, 1))).output("y");
        auto [l, epi] = program(g);
        EXPECT_EQ(epi, 1) << l.op_mix_string();
        EXPECT_EQ(l.op_mix().size(), 1u) << "one kernel: " << l.op_mix_string();
        for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, PlanSpec{}))
          if (s.unique.insert(k.source).second) s.whats.push_back(k.what);
        ++s.programs;
      }
      {  // SwiGLU: silu(x @ G^T) * (x @ U^T)
        Graph g;
        Tensor x = g.tensor("x", {Expr(m), Expr(512)}, t);
        Tensor wg = g.tensor("wg", {Expr(64), Expr(512)}, t);
        Tensor wu = g.tensor("wu", {Expr(64), Expr(512)}, t);
        (x.matmul(wg.transpose(0, 1)).silu() * x.matmul(wu.transpose(0, 1))).output("y");
        auto [l, epi] = program(g);
        EXPECT_GE(epi, 1) << l.op_mix_string();
        // The fewest-kernels seed takes it: one GEMV, then the other with SiLU(gate) * up in its
        // store. (In bf16 the class's largest region reads the gate twice, as its f32 value and
        // as its bf16 cast, and its epilogue saves nothing; the leanest region's does.)
        testing::CudaRulesOnly rules;
        BuiltSpace b = build_search_space(g, rules, g.dim_facts());
        const LlirGraph seed = to_llir(*b.space, b.space->fewest_kernels_genome());
        int kernels = 0;
        for (const auto& [op, n] : seed.op_mix())
          kernels += n;
        EXPECT_EQ(kernels, 2) << name(t) << " m " << m << ": " << seed.op_mix_string();
        for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, PlanSpec{}))
          if (s.unique.insert(k.source).second) s.whats.push_back(k.what);
        ++s.programs;
      }
    }
  {  // the region reads the GEMV's value transposed: no epilogue
    Graph g;
    Tensor x = g.tensor("x", {Expr(1), Expr(1024)});
    Tensor w = g.tensor("w", {Expr(1), Expr(1024)});
    Tensor y = x.matmul(w.transpose(0, 1));  // [1, 1]
    Tensor r = g.tensor("r", {Expr(1), Expr(1)});
    (y.transpose(0, 1).contiguous() * 2.0 + r).output("y");
    Graph g2;
    Tensor a = g2.tensor("a", {Expr(2), Expr(1024)});
    Tensor b = g2.tensor("b", {Expr(3), Expr(1024)});
    Tensor p = a.matmul(b.transpose(0, 1));  // [2, 3]
    (p.transpose(0, 1).contiguous() + 1.0).output("y");
    EXPECT_EQ(program(g2).second, 0) << program(g2).first.op_mix_string();
  }
  {  // RMSNorm and LayerNorm rows: their sums of squares are GEMV-shaped (64 row dots) and feed
     // f64 exact arithmetic (the mean's correctly rounded division by 48): no epilogue there,
     // since the epilogue's recomputed value need not equal the bits other readers get (the H200
     // row-ops suite found rows wrong by 3x). The same rows with an f32 scale after the dot keep
     // it (a row of 32 too: its mean is a multiplication by 1/32).
    Graph g;
    Tensor x = g.tensor("x", {Expr(64), Expr(48)});
    x.rms_norm(g.tensor("w", {Expr(48)}), 1e-5).output("rms");
    x.layer_norm(g.tensor("lw", {Expr(48)}), g.tensor("lb", {Expr(48)}), 1e-5).output("ln");
    EXPECT_EQ(program(g).second, 0) << program(g).first.op_mix_string();
    Graph g2;
    Tensor y = g2.tensor("y", {Expr(64), Expr(32)});
    ((y * y).sum(-1) * 3.0 + 1.0).output("dots");
    EXPECT_EQ(program(g2).second, 1) << program(g2).first.op_mix_string();
  }
  compile_all(s);
}

// cuda.SumSplit / cuda.MaxSplit (reduce.cpp): offered for reductions over 4,096 elements or more
// (not shorter ones, not a matmul's); a cluster kernel per reduction compiles for f32, bf16 and
// I32 rows, aligned (16-byte loads) or not, and in the greedy argmax over 128,256 logits.
TEST_F(Nvrtc, ReduceSplitCompiles) {
  auto split_program = [](const Graph& g) {
    testing::CudaRulesOnly rules;
    return testing::prefer_ops(g, rules, [](std::string_view op) {
      return op == "cuda.SumSplit" || op == "cuda.MaxSplit";
    });
  };
  Sources s;
  auto add = [&](const LlirGraph& l) {
    for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, PlanSpec{}))
      if (s.unique.insert(k.source).second) s.whats.push_back(k.what);
    ++s.programs;
  };
  for (DType t : {DType::F32, DType::BF16, DType::I32})
    for (int64_t len : {4096, 5003}) {
      Graph g;
      Tensor x = g.tensor("x", {3, Expr(len)}, t);
      x.sum(-1).output("sum");
      x.max(-1).output("max");
      auto [l, n] = split_program(g);
      EXPECT_EQ(n, 2) << l.op_mix_string();
      add(l);
    }
  {
    Graph g;
    Tensor x = g.tensor("x", {3, 4095}, DType::F32);
    x.sum(-1).output("sum");
    EXPECT_EQ(split_program(g).second, 0) << "4,095 elements: no split";
  }
  Graph g;
  nn::greedy_token(g.tensor("logits", {128256}, DType::BF16)).output("token");
  auto [l, n] = split_program(g);
  EXPECT_GE(n, 2) << l.op_mix_string();
  add(l);
  int cluster = 0;
  for (const std::string& src : s.unique)
    cluster += src.find("__cluster_dims__(8, 1, 1)") != std::string::npos;
  EXPECT_GE(cluster, 13);
  compile_all(s);
}

TEST_F(Nvrtc, CompileErrorsPointIntoTheSource) {
  const std::string src =
      "extern \"C\" __global__ void k(float* o) {\n  o[0] = 1.0f;\n  o[1] = undefined_name;\n}\n";
  try {
    cuda::compile_cubin(src, "sm_90", "node %7 (cuda.Fused)");
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("node %7 (cuda.Fused)"), std::string::npos) << m;
    EXPECT_NE(m.find("undefined_name"), std::string::npos) << m;
    EXPECT_NE(m.find(">3:   o[1] = undefined_name;"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace luminal
