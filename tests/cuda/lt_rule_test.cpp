// CI without a GPU: the cuBLASLt rules (cublaslt/lt_matmul.cpp) add cuda.LtMatmul and
// cuda.LtMatmulRow alternatives to matmuls, reading 16-bit (and, in the TN form, FP8) operands
// through the graph's casts and storing a 16-bit output through its cast down; epilogues (C, bias,
// the FP8 scale); without the "cuda.cublaslt" ruleset there are none; a program made of them
// generates no kernel for them.
#include <gtest/gtest.h>

#if __has_include(<cublasLt.h>) && defined(LUMINAL_HAVE_CUBLASLT)
#include "cuda/cuda_test_util.hpp"
#include "cuda/lt_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/program/llir_serial.hpp"

namespace luminal {
namespace {

using cuda::testing::lt_nodes;
using cuda::testing::lt_reads_fp8;
using cuda::testing::lt_row;

/// The program that takes a cuBLASLt op wherever one is offered (`row`: the row family first).
LlirGraph prefer_lt(const Graph& g, bool cublaslt, bool row = false) {
  testing::CudaRulesOnly rules(cublaslt);
  return cuda::testing::prefer(g, rules, [&](const EGraph& eg, ENodeId n) {
    if (!cuda::is_lt_op(eg.node(n).op)) return 0.0;
    return lt_row(eg, n) == row ? 2.0 : 1.0;
  });
}

int count(const LlirGraph& p, const std::string& op) {
  const auto mix = p.op_mix();
  auto it = mix.find(op);
  return it == mix.end() ? 0 : it->second;
}

/// The cuBLASLt calls of `p`, both families.
int lt_calls(const LlirGraph& p) {
  int n = 0;
  for (const LlirNode& node : p.nodes)
    n += cuda::is_lt_op(node.op);
  return n;
}

/// A small bf16 Llama with grouped-query attention (4 heads over 2 KV heads), its steps of up to
/// `max_step` tokens (1: decode).
models::Decoder bf16_gqa_decoder(int layers, int max_step) {
  const io::ModelConfig cfg = models::llama_config(
      {.layers = layers, .hidden = 64, .ffn = 96, .heads = 4, .kv_heads = 2, .vocab = 50});
  models::DecoderShape shape{.slots = 64, .max_step = max_step};
  shape.dtype = DType::BF16;
  return models::build_decoder(cfg, shape);
}

TEST(LtRules, AMatmulGetsBothFamiliesAndNothingWithoutTheRuleset) {
  Graph g;
  g.declare_dim("s", 1, 16);
  Tensor x = g.tensor("x", {Expr::var("s"), Expr(128)});
  Tensor w = g.tensor("w", {96, 128});
  x.matmul(w.transpose(0, 1)).exp().output("y");
  const LlirGraph col = prefer_lt(g, true);
  EXPECT_EQ(count(col, "cuda.LtMatmul"), 1) << col.to_text();
  EXPECT_EQ(count(prefer_lt(g, true, true), "cuda.LtMatmulRow"), 1);
  const LlirGraph none = prefer_lt(g, false);
  EXPECT_EQ(count(none, "cuda.LtMatmul") + count(none, "cuda.LtMatmulRow"), 0);
  // The library step has no kernel; the rest of the program does.
  PlanSpec spec;
  spec.facts["s"] = Interval{1, 16};
  spec.dim_names = {"s"};
  for (const cuda::GeneratedKernel& k : cuda::generate_kernels(col, spec))
    EXPECT_EQ(k.what.find("LtMatmul"), std::string::npos) << k.what;
}

TEST(LtRules, Bf16DecoderMatmulsReadSixteenBitOperandsAndStoreSixteenBitOutputs) {
  const models::Decoder d = bf16_gqa_decoder(1, 1);
  const LlirGraph p = prefer_lt(d.graph, true);
  int lt = 0, bf16_in = 0, bf16_out = 0;
  LlirGraph q = p;
  q.fill_input_dtypes();
  for (const LlirNode& n : q.nodes) {
    if (!cuda::is_lt_op(n.op)) continue;
    ++lt;
    bf16_in += n.input_dtypes[0] == DType::BF16 && n.input_dtypes[1] == DType::BF16;
    bf16_out += n.attrs.dtype == DType::BF16;
  }
  // q, k, v, o, gate, up, down and the lm head at least (attention products and rope may join).
  EXPECT_GE(lt, 8) << p.to_text();
  EXPECT_GE(bf16_in, 8);
  EXPECT_GE(bf16_out, 4);
  EXPECT_EQ(count(prefer_lt(d.graph, false), "cuda.LtMatmul"), 0);
}

// The search starts from two fewest-kernels programs: one that takes library calls (cuBLASLt
// reads the graph's casts, so it needs fewer kernels) and one made of generated kernels only, so
// a cuBLASLt call that loses is measured against the program without it. (s in [1, 4]: with
// s = 1 the GEMVs, which cost less than a call in the seeds, take the matmuls; below.)
TEST(LtRules, TheSearchSeedsWithAndWithoutLibraryCalls) {
  const models::Decoder d = bf16_gqa_decoder(2, 4);
  testing::CudaRulesOnly rules(true);
  BuiltSpace b = build_search_space(d.graph, rules, d.graph.dim_facts());
  const LlirGraph with = to_llir(*b.space, b.space->fewest_kernels_genome());
  const LlirGraph without =
      to_llir(*b.space, b.space->fewest_kernels_genome(SearchSpace::LibrarySeed::Avoid));
  const int lt_with = lt_calls(with), lt_without = lt_calls(without);
  EXPECT_GE(lt_with, 8) << with.to_text();
  EXPECT_EQ(lt_without, 0) << without.to_text();
  EXPECT_GE(count(without, "cuda.Matmul") + count(without, "cuda.MatmulCast"), 8);
  // The avoided cost marks library calls only: without cuBLASLt rules both seeds are one program.
  testing::CudaRulesOnly plain(false);
  BuiltSpace p = build_search_space(d.graph, plain, d.graph.dim_facts());
  EXPECT_EQ(
      to_llir(*p.space, p.space->fewest_kernels_genome()).to_text(),
      to_llir(*p.space, p.space->fewest_kernels_genome(SearchSpace::LibrarySeed::Avoid)).to_text());
  EXPECT_LT(b.space->program_cost(b.space->fewest_kernels_genome(SearchSpace::LibrarySeed::Avoid),
                                  SearchSpace::LibrarySeed::Avoid),
            SearchSpace::kAvoided);
  EXPECT_TRUE(b.space->has_library_calls());
  EXPECT_FALSE(p.space->has_library_calls());
}

// A decode step (s = 1): the first seed runs the projections as cuda.Gemv / cuda.GemvCast (seed
// cost 0.95, below a cuBLASLt call's 1), the library-preferring seed as cuBLASLt calls; the
// search times both.
TEST(LtRules, DecodeSeedsStartFromGemvsAndTheLibrarySeedFromCalls) {
  const models::Decoder d = bf16_gqa_decoder(2, 1);
  testing::CudaRulesOnly rules(true);
  BuiltSpace b = build_search_space(d.graph, rules, d.graph.dim_facts());
  const LlirGraph use = to_llir(*b.space, b.space->fewest_kernels_genome());
  // (q's and k's GEMVs with rope's product in their kernels count: gemv_then.hpp; so do the
  // GEMVs that compute the norm's row, cuda.RowGemv and its in-place forms)
  EXPECT_GE(count(use, "cuda.Gemv") + count(use, "cuda.GemvCast") +
                count(use, "cuda.GemvCastMatmul") + count(use, "cuda.GemvCastMatmulScatter") +
                count(use, "cuda.RowGemv") + count(use, "cuda.RowGemvInPlace2") +
                count(use, "cuda.RowGemvInPlace3"),
            8)
      << use.op_mix_string();
  const LlirGraph prefer =
      to_llir(*b.space, b.space->fewest_kernels_genome(SearchSpace::LibrarySeed::Prefer));
  EXPECT_GE(lt_calls(prefer), 8) << prefer.op_mix_string();
}

// The third seed prefers library calls wherever they can stand: in a bf16 GQA prefill the
// attention products (whose batch axes do not compose over the broadcast K/V) take cuBLASLt on
// the graph's f32 casts written out (contiguous), where the first seed keeps the generated matmul
// reading the 16-bit tensors (one kernel fewer). On the H200 a search that happened on such a
// program ran the 8B 128-token prefill in 19 ms instead of 83-85.
TEST(LtRules, TheLibraryPreferringSeedPutsGqaAttentionOnCublasLt) {
  const int layers = 2;
  const models::Decoder d = bf16_gqa_decoder(layers, 16);
  testing::CudaRulesOnly rules(true);
  BuiltSpace b = build_search_space(d.graph, rules, d.graph.dim_facts());
  using Seed = SearchSpace::LibrarySeed;
  auto lt_count = [&](Seed mode) {
    return lt_calls(to_llir(*b.space, b.space->fewest_kernels_genome(mode)));
  };
  const int use = lt_count(Seed::Use), prefer = lt_count(Seed::Prefer);
  std::printf("[lt] seeds: %d cuBLASLt calls with library calls used, %d preferred\n", use, prefer);
  EXPECT_GE(prefer, use + 2 * layers) << "use " << use << ", prefer " << prefer;
  EXPECT_EQ(lt_count(Seed::Avoid), 0);
}

TEST(LtRules, ProgramsWithLibraryStepsRoundTripThroughTheCompileCacheText) {
  Graph g;
  Tensor x = g.tensor("x", {7, 128}, DType::BF16);
  Tensor w = g.tensor("w", {96, 128}, DType::BF16);
  x.matmul(w.transpose(0, 1)).output("y");
  const LlirGraph p = prefer_lt(g, true);
  ASSERT_EQ(count(p, "cuda.LtMatmul"), 1) << p.to_text();
  testing::CudaRulesOnly rules(true);
  const LlirGraph back = read_llir(write_llir(p), rules);
  EXPECT_EQ(back.to_text(), p.to_text());
}

/// The program that takes the cuBLASLt node with the most epilogue inputs wherever one exists.
LlirGraph prefer_epilogue(const Graph& g, bool row = false) {
  testing::CudaRulesOnly rules(true);
  return cuda::testing::prefer(g, rules, [&](const EGraph& eg, ENodeId n) {
    if (!cuda::is_lt_op(eg.node(n).op)) return 0.0;
    return 1.0 + (lt_row(eg, n) == row ? 0.5 : 0.0) +
           static_cast<double>(eg.node(n).children.size());
  });
}

// Epilogues: an Add of a product and a same-layout tensor becomes beta = 1 with that tensor as
// C (both families); an Add of a per-feature vector becomes a bias epilogue (column family);
// both together take both. A vector along the rows (per token) is not a bias cuBLASLt can add.
TEST(LtRules, ResidualAddsBecomeCAndPerFeatureVectorsBecomeBiases) {
  for (DType t : {DType::F32, DType::BF16}) {
    Graph g;
    g.declare_dim("s", 1, 16);
    Tensor x = g.tensor("x", {Expr::var("s"), Expr(128)}, t);
    Tensor w = g.tensor("w", {96, 128}, t);
    Tensor b = g.tensor("b", {96}, t);
    Tensor r = g.tensor("r", {Expr::var("s"), Expr(96)}, t);
    Tensor per_token = g.tensor("p", {Expr::var("s"), Expr(1)}, t);
    Tensor y = x.matmul(w.transpose(0, 1));
    (y + b).output("bias");
    (y + r).output("residual");
    ((y + b) + r).output("both");
    (y + per_token).output("rows");
    const LlirGraph col = prefer_epilogue(g);
    std::vector<std::string> got = lt_nodes(col);
    std::sort(got.begin(), got.end());
    // (bias and residual share the plain product's node only when the search keeps it; the
    // per-token add takes the plain product)
    EXPECT_EQ(std::count(got.begin(), got.end(), "cuda.LtMatmul:b"), 1) << col.to_text();
    EXPECT_EQ(std::count(got.begin(), got.end(), "cuda.LtMatmul:c"), 1) << col.to_text();
    EXPECT_EQ(std::count(got.begin(), got.end(), "cuda.LtMatmul:cb"), 1) << col.to_text();
    EXPECT_EQ(std::count(got.begin(), got.end(), "cuda.LtMatmul:"), 1) << col.to_text();
    for (const LlirNode& n : col.nodes)
      if (cuda::is_lt_op(n.op)) {
        EXPECT_EQ(n.inputs.size(), 2 + cuda::lt_epilogue(n.attrs).serialize().size());
        EXPECT_EQ(n.attrs.dtype, t);
      }
    // The row family takes C, never a bias.
    const std::vector<std::string> row = lt_nodes(prefer_epilogue(g, true));
    EXPECT_NE(std::find(row.begin(), row.end(), "cuda.LtMatmulRow:c"), row.end());
    for (const std::string& n : row)
      EXPECT_EQ(n.find("LtMatmulRow:b"), std::string::npos) << n;
    for (const std::string& n : row)
      EXPECT_EQ(n.find("LtMatmulRow:cb"), std::string::npos) << n;
    // The epilogue reads back from the compile cache's text.
    testing::CudaRulesOnly rules(true);
    EXPECT_EQ(read_llir(write_llir(col), rules).to_text(), col.to_text());
  }
}

// The Add may read the product through a reshape (a dot product kept as [1]): the node with the
// epilogue takes the Add's shape.
TEST(LtRules, EpiloguesTakeTheAddsShape) {
  Graph g;
  Tensor a = g.tensor("a", {4096}), b = g.tensor("b", {4096});
  Tensor x = ((a.exp() + 1.0) * a).sum(0, true);  // [1]
  (x + b.sum(0, true)).output("out");
  const LlirGraph p = prefer_epilogue(g);
  const std::vector<std::string> got = lt_nodes(p);
  EXPECT_EQ(std::count(got.begin(), got.end(), "cuda.LtMatmul:c"), 1) << p.to_text();
  for (const LlirNode& n : p.nodes)
    if (cuda::is_lt_op(n.op)) {
      EXPECT_EQ(shape_to_string(n.attrs.shape), "[1]");
    }
}

// The bias runs along the output's unit-stride axes, whichever of the plan's m and n they are:
// y = w x^T (output [96, s]: the unit stride is along s) takes a bias over s, not over 96.
TEST(LtRules, TheBiasFollowsTheOutputsUnitStrideAxes) {
  Graph g;
  Tensor x = g.tensor("x", {8, 128});
  Tensor w = g.tensor("w", {96, 128});
  Tensor along_s = g.tensor("bs", {8});
  Tensor along_f = g.tensor("bf", {96, 1});
  Tensor y = w.matmul(x.transpose(0, 1));  // [96, 8]
  (y + along_s).output("s");
  (y + along_f).output("f");
  const std::vector<std::string> got = lt_nodes(prefer_epilogue(g));
  EXPECT_EQ(std::count(got.begin(), got.end(), "cuda.LtMatmul:b"), 1);
  EXPECT_EQ(std::count(got.begin(), got.end(), "cuda.LtMatmul:"), 1);
  // Directly: a [2, 3] x [3, 4] product (dims [2, 4, 3], k = 2) is one gemm with n along the
  // output's last axis; a bias there has stride 1 along it and 0 along the rows.
  Attrs a;
  a.axis = 2;
  a.views = {View{{Expr(2), Expr(4), Expr(3)}, {Expr::z() * 3, Expr(0), Expr::z()}},
             View{{Expr(2), Expr(4), Expr(3)}, {Expr(0), Expr::z(), Expr::z() * 4}}};
  EXPECT_TRUE(cuda::lt_bias_fits(a, {Expr(0), Expr(1)}));
  EXPECT_FALSE(cuda::lt_bias_fits(a, {Expr(1), Expr(0)}));
  EXPECT_FALSE(cuda::lt_bias_fits(a, {Expr(4), Expr(1)}));  // a full matrix is C, not a bias
  EXPECT_FALSE(cuda::lt_bias_fits(a, {Expr(0), Expr(2)}));
  EXPECT_FALSE(cuda::lt_bias_fits(a, {Expr(0)}));
}

// A product written W-first (Mul(W, x) summed: the plan computes it transposed, its N along the
// features) takes a per-feature bias when the rows are fixed, but not when they are dynamic: at
// s = 1 the plan drops the row axis, stops swapping, and D's rows are no longer the features.
TEST(LtRules, ABiasIsRefusedWhereADimAtOneMovesDsRows) {
  for (bool dynamic : {false, true}) {
    Graph g;
    if (dynamic) g.declare_dim("s", 1, 16);
    const Expr S = dynamic ? Expr::var("s") : Expr(8);
    Tensor x = g.tensor("x", {S, Expr(128)});
    Tensor w = g.tensor("w", {96, 128});
    Tensor b = g.tensor("b", {96});
    Tensor y = (w.unsqueeze(0).expand({S, Expr(96), Expr(128)}) *
                x.unsqueeze(1).expand({S, Expr(96), Expr(128)}))
                   .sum(2);
    (y + b).output("y");
    const std::vector<std::string> got = lt_nodes(prefer_epilogue(g));
    EXPECT_EQ(std::count(got.begin(), got.end(), "cuda.LtMatmul:b"), dynamic ? 0 : 1)
        << (dynamic ? "dynamic" : "fixed");
  }
}

/// The program that takes a cuBLASLt op reading FP8 operands wherever one is offered (`row`: the
/// row family's first), another cuBLASLt op otherwise.
LlirGraph prefer_fp8(const Graph& g, bool row = false) {
  testing::CudaRulesOnly rules(true);
  return cuda::testing::prefer(g, rules, [&](const EGraph& eg, ENodeId n) {
    if (!cuda::is_lt_op(eg.node(n).op)) return 0.0;
    return 1.0 + (lt_reads_fp8(eg, n) ? 2.0 : 0.0) + (lt_row(eg, n) == row ? 1.0 : 0.0);
  });
}

/// The cuBLASLt nodes of `p` that read FP8 operands, as "op:epilogue".
std::vector<std::string> fp8_lt_nodes(LlirGraph p) {
  p.fill_input_dtypes();
  std::vector<std::string> out;
  for (const LlirNode& n : p.nodes)
    if (cuda::is_lt_op(n.op) &&
        (n.input_dtypes[0] == DType::F8E4M3 || n.input_dtypes[0] == DType::F8E5M2))
      out.push_back(std::string(n.op->name) + ":" + cuda::lt_epilogue(n.attrs).serialize());
  return out;
}

// FP8 operands are read through the graph's exact casts up to f32, only for the column family's
// TN form (x @ W^T, both row-major) with leading dimensions that are multiples of 16, and only
// for the pairs cuBLASLt has; everything else keeps the f32 product over the casts.
TEST(LtRules, Fp8ProductsReadThroughTheCastsInTheTnFormOnly) {
  struct Case {
    DType a, b;
    int64_t k;
    bool transposed_w;  // W stored [k, n] (x @ W: not TN)
    int want;
  };
  for (const Case& c : {Case{DType::F8E4M3, DType::F8E4M3, 64, false, 1},
                        Case{DType::F8E4M3, DType::F8E5M2, 64, false, 1},
                        Case{DType::F8E5M2, DType::F8E4M3, 64, false, 1},
                        Case{DType::F8E5M2, DType::F8E5M2, 64, false, 0},
                        Case{DType::F8E4M3, DType::F8E4M3, 40, false, 0},
                        Case{DType::F8E4M3, DType::F8E4M3, 64, true, 0}}) {
    Graph g;
    g.declare_dim("s", 1, 32);
    Tensor x = g.tensor("x", {Expr::var("s"), Expr(c.k)}, c.a);
    Tensor w = c.transposed_w ? g.tensor("w", {c.k, 48}, c.b) : g.tensor("w", {48, c.k}, c.b);
    Tensor wt = c.transposed_w ? w.cast(DType::F32) : w.cast(DType::F32).transpose(0, 1);
    x.cast(DType::F32).matmul(wt).output("y");
    const std::string what = std::string(name(c.a)) + " x " + std::string(name(c.b)) +
                             " k=" + std::to_string(c.k) + (c.transposed_w ? " x @ W" : "");
    const LlirGraph col = prefer_fp8(g);
    EXPECT_EQ(fp8_lt_nodes(col).size(), static_cast<size_t>(c.want)) << what << col.to_text();
    EXPECT_EQ(lt_calls(col), 1) << what;  // (the f32 product over the casts otherwise)
    EXPECT_TRUE(fp8_lt_nodes(prefer_fp8(g, true)) ==
                std::vector<std::string>(static_cast<size_t>(c.want), "cuda.LtMatmul:"))
        << what << ": FP8 in the column family only";
  }
  Attrs tn;
  tn.axis = 2;
  // x [s, 64] @ W^T, W [48, 64]: dims [s, 48, 64].
  tn.views = {View{{Expr::var("s"), Expr(48), Expr(64)}, {Expr::z() * 64, Expr(0), Expr::z()}},
              View{{Expr::var("s"), Expr(48), Expr(64)}, {Expr(0), Expr::z() * 64, Expr::z()}}};
  EXPECT_TRUE(cuda::lt_fp8_fits(tn));
  Attrs odd_n = tn;  // D's leading dimension 40
  for (View& v : odd_n.views)
    v.dims[1] = Expr(40);
  odd_n.views[1].strides[1] = Expr::z() * 64;
  EXPECT_FALSE(cuda::lt_fp8_fits(odd_n));
}

// A scaled FP8 linear layer, (x / s_in) cast to E4M3, times W^T, times s_in * s_w: the scalar
// multiply becomes the node's scale pointer (its last input, f32), in f32 and cast down to
// bf16; a bias epilogue may follow with a bf16 D (an f32 D would need a bf16 bias: an f32 one
// stays an Add); the text reads back for the compile cache.
TEST(LtRules, AScalarTimesAnFp8ProductBecomesItsScale) {
  Graph g;
  g.declare_dim("s", 1, 32);
  Tensor x = g.tensor("x", {Expr::var("s"), Expr(64)});
  Tensor s_in = g.tensor("s_in", {1});
  Tensor w = g.tensor("w", {48, 64}, DType::F8E4M3);
  Tensor s_w = g.tensor("s_w", {1});
  Tensor b = g.tensor("b", {48});
  Tensor b16 = g.tensor("b16", {48}, DType::BF16);
  Tensor q = (x / s_in).cast(DType::F8E4M3);
  Tensor y = q.cast(DType::F32).matmul(w.cast(DType::F32).transpose(0, 1)) * (s_in * s_w);
  y.output("y");
  y.cast(DType::BF16).output("y16");
  (y + b).output("yb");
  (y.cast(DType::BF16) + b16).output("yb16");
  LlirGraph p = prefer_epilogue(g);
  std::vector<std::string> got = fp8_lt_nodes(p);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got,
            (std::vector<std::string>{"cuda.LtMatmul:bs", "cuda.LtMatmul:s", "cuda.LtMatmul:s"}))
      << p.to_text();  // (yb reads y's node)
  p.fill_input_dtypes();
  int bf16 = 0;
  for (const LlirNode& n : p.nodes)
    if (cuda::is_lt_op(n.op)) {
      const int si = cuda::lt_scale_input(n.attrs);
      ASSERT_GE(si, 2);
      EXPECT_EQ(n.input_dtypes[static_cast<size_t>(si)], DType::F32);
      EXPECT_EQ(si + 1, static_cast<int>(n.inputs.size()));  // the scale comes last
      bf16 += n.attrs.dtype == DType::BF16;
      if (cuda::lt_epilogue(n.attrs).bias) {
        EXPECT_EQ(n.attrs.dtype, DType::BF16) << p.to_text();
      }
    }
  EXPECT_EQ(bf16, 2);
  testing::CudaRulesOnly rules(true);
  EXPECT_EQ(read_llir(write_llir(p), rules).to_text(), p.to_text());
  // A bf16 product gets no scale (the scale pointer is FP8's), and a scale needs one value read
  // at every index.
  Graph h;
  Tensor hx = h.tensor("x", {8, 64}, DType::BF16);
  Tensor hw = h.tensor("w", {48, 64}, DType::BF16);
  Tensor hs = h.tensor("s", {1});
  (hx.cast(DType::F32).matmul(hw.cast(DType::F32).transpose(0, 1)) * hs).output("y");
  Tensor fx = h.tensor("fx", {8, 64}, DType::F8E4M3);
  Tensor fw = h.tensor("fw", {48, 64}, DType::F8E4M3);
  Tensor per_row = h.tensor("r", {8, 1});
  (fx.cast(DType::F32).matmul(fw.cast(DType::F32).transpose(0, 1)) * per_row).output("z");
  for (const std::string& n : lt_nodes(prefer_epilogue(h)))
    EXPECT_EQ(n.find('s', n.find(':')), std::string::npos) << n;
}

// The epilogue letters read back in order; anything else is refused with what is accepted.
TEST(LtRules, EpiloguePayloadText) {
  for (const char* t : {"c", "b", "s", "cb", "cs", "bs", "cbs", "r", "g", "br", "bsg", "sr"})
    EXPECT_EQ(cuda::LtEpilogue::deserialize(t)->serialize(), t);
  // (C with an activation: cuBLASLt would add C before it; no rule makes one)
  for (const char* t : {"", "x", "bc", "ss", "cbsx", "cr", "cbg", "rg", "rb"})
    EXPECT_THROW(cuda::LtEpilogue::deserialize(t), Error) << t;
}

// Operands cast up from bf16 whose casts' views are no gemm (a permuted, merged attention output;
// GQA heads regrouped with K broadcast): each gets a bf16 copy laid out as its f32 cast, so the
// call reads bf16 (and the weight directly) instead of two f32 casts written out.
TEST(LtRules, OperandsThatAreNoGemmIn16BitsAreCopiedIn16Bits) {
  const Graph g = cuda::testing::attention_products();
  testing::CudaRulesOnly rules(true);
  const LlirGraph p = cuda::testing::prefer(g, rules, [](const EGraph& eg, ENodeId n) {
    if (!cuda::is_lt_op(eg.node(n).op)) return 0.0;
    return cuda::testing::lt_reads_16_bits(eg, n) ? 2.0 : 1.0;
  });
  int lt = 0, copies = 0;
  for (const LlirNode& n : p.nodes) {
    if (!cuda::is_lt_op(n.op)) continue;
    ++lt;
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(n.input_dtypes[k], DType::BF16) << p.to_text();
      const LlirNode& src = p.nodes[static_cast<size_t>(n.inputs[k])];
      copies += is_op(src.op, OpKind::Cast);  // a bf16 copy (its source is bf16 too)
      if (is_op(src.op, OpKind::Cast)) {
        EXPECT_EQ(src.input_dtypes.at(0), DType::BF16);
      }
    }
  }
  EXPECT_EQ(lt, 2) << p.to_text();
  EXPECT_EQ(copies, 2) << p.to_text();  // q regrouped, o merged; k and w read as they are
  // Without the library calls preferred in 16 bits: the f32 forms are still there.
  const LlirGraph f32 = cuda::testing::prefer(g, rules, [](const EGraph& eg, ENodeId n) {
    if (!cuda::is_lt_op(eg.node(n).op)) return 0.0;
    return cuda::testing::lt_reads_16_bits(eg, n) ? 1.0 : 2.0;
  });
  EXPECT_EQ(lt_calls(f32), 2) << f32.to_text();
}

// The library-preferring seed of a bf16 GQA decoder's prefill reads every cuBLASLt operand in
// 16 bits and casts no weight up to f32.
TEST(LtRules, TheLibraryPreferringSeedCastsNoWeightUp) {
  const int layers = 2;
  const models::Decoder d = bf16_gqa_decoder(layers, 16);
  testing::CudaRulesOnly rules(true);
  BuiltSpace b = build_search_space(d.graph, rules, d.graph.dim_facts());
  const LlirGraph p =
      to_llir(*b.space, b.space->fewest_kernels_genome(SearchSpace::LibrarySeed::Prefer));
  int lt = 0;
  for (const LlirNode& n : p.nodes) {
    if (is_op(n.op, OpKind::Cast) && n.attrs.dtype == DType::F32) {
      EXPECT_FALSE(is_op(p.nodes[static_cast<size_t>(n.inputs[0])].op, OpKind::Input))
          << "a weight cast up: " << n.attrs.to_string() << "\n"
          << p.to_text();
    }
    if (!cuda::is_lt_op(n.op)) continue;
    ++lt;
    EXPECT_EQ(n.input_dtypes[0], DType::BF16) << n.attrs.to_string();
    EXPECT_EQ(n.input_dtypes[1], DType::BF16) << n.attrs.to_string();
  }
  EXPECT_GE(lt, 9 * layers) << p.to_text();  // q k v, scores, weighted sum, o, gate up down
}

TEST(LtRules, NodeGemmRefusesOffsetsAndNonComposingBatches) {
  Attrs a;
  a.axis = 2;
  a.views = {View{{Expr(4), Expr(5), Expr(8)}, {Expr::z() * 8, Expr(0), Expr::z()}},
             View{{Expr(4), Expr(5), Expr(8)}, {Expr(0), Expr::z(), Expr::z() * 5}}};
  EXPECT_TRUE(cuda::lt_node_gemm(a));
  Attrs off = a;
  off.views[0].strides[2] = Expr::z() + Expr(3);  // an element offset
  EXPECT_FALSE(cuda::lt_node_gemm(off));
  Attrs based = a;  // a view's base (a slice at a start): refused too
  based.views[1].base = Expr(8);
  EXPECT_FALSE(cuda::lt_node_gemm(based));
}

// Grouped-query heads repeated by a reshape, as a torch.compile'd model writes them (k/v [2, c,
// 16] read by 6 query heads through a stride c*16*(z/3)): each product is planned over the split
// axes [kv, group] and offered as one cuBLASLt call (it had none: the stride is not c * z).
TEST(LtRules, RepeatedGqaHeadsSplitIntoOneLibraryCall) {
  Attrs a;
  a.axis = 3;
  const Expr z = Expr::z();
  a.views = {View{{6, 1, 64, 16}, {16 * z, 16 * z, Expr(0), z}},
             View{{6, 1, 64, 16}, {1024 * (z / 3), Expr(0), 16 * z, z}}};
  const std::optional<cuda::LtNodeGemm> g = cuda::lt_node_gemm(a);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->dims, (std::vector<Expr>{2, 3, 1, 64, 16}));
  EXPECT_EQ(g->k, 4);
  EXPECT_EQ(g->sb, (std::vector<Expr>{1024, 0, 0, 16, 1}));
  // No bias epilogue over split axes (the bias has the node's axes, one fewer).
  EXPECT_FALSE(cuda::lt_bias_fits(a, {Expr(0), Expr(0), Expr(1)}));

  // In f32, and in bf16 (the operands read in 16 bits through the graph's casts).
  for (DType t : {DType::F32, DType::BF16}) {
    Graph gr;
    gr.declare_dim("s", 1, 64);
    auto repeat = [](const Tensor& x) {
      return x.reshape({2, 1, "s", 16}).expand({2, 3, "s", 16}).reshape({6, "s", 16});
    };
    Tensor q = gr.tensor("q", {6, 1, 16}, t), p = gr.tensor("p", {6, 1, "s"}, t);
    Tensor k = gr.tensor("k", {2, "s", 16}, t), v = gr.tensor("v", {2, "s", 16}, t);
    q.matmul(repeat(k).transpose(1, 2)).output("scores");
    p.matmul(repeat(v)).output("out");
    const LlirGraph prog = prefer_lt(gr, true);
    EXPECT_EQ(lt_calls(prog), 2) << name(t) << "\n" << prog.to_text();
    if (t == DType::BF16) {
      EXPECT_EQ(count(prog, "Cast"), 0) << prog.to_text();
    }
  }
}

}  // namespace
}  // namespace luminal
#else
TEST(LtRules, NoCublasLtHeader) { GTEST_SKIP() << "built without cublasLt.h"; }
#endif
