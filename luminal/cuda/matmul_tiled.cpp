// cuda.MatmulTiled: a batched matmul with many rows and columns (a prefill's attention scores,
// Q @ K^T per head) as 64 x 64 output tiles, an alternative to cuda.Matmul that the search times.
// Opt-in (LUMINAL_CUDA_MATMUL_TILED=1) until a GPU has run it.
//
// cuda.Matmul computes each output on its own (a warp, or a thread, an output), reading both
// operands' rows from L1/L2 for every output: on an H100 the 8B q4_0 prefill of 128 tokens spent
// about 80 us a layer on Q @ K^T that way (2.6-2.8 ms of its 20.8, BENCHMARKS.md session 40), where
// the products are 134 MFLOP a layer. Here a block of 256 threads computes a tile of 64 rows
// (axis m: the operand `a` steps through it, `b` does not) by 64 columns (axis n: the innermost
// output axis, `b` steps through it, `a` does not) of one batch index (the other output axes),
// staging 32 k values of both operands' 64 rows in shared memory at a time (the loads along k,
// consecutive threads consecutive k; stored transposed); each thread computes 4 x 4 outputs.
//
// Numerics: cuda.Matmul's, up to the order of the additions. Each output's products over a stage
// of 32 k values are added in f32 in k order (each product rounded to f32 first, as the reference
// does; a fused multiply-add where both operands are 16-bit floats, whose product f32 holds
// exactly), and the stages' sums in double, rounded once at the end: within 32 units of f32
// rounding of sum |a b| of the exact value. (The first form, session 41, added every product in
// double for the reference's bits; its f32-to-f64 conversions, 16 a clock an SM on sm_90, made a
// 64 x 64 tile cost about 18 us however few of its rows were live, and the search dropped it:
// BENCHMARKS.md, session 42.) Threads whose rows or columns all lie past the ends only load.
//
// Matched on structure (rule cuda.matmul-tiled): a matmul of f32 output over f32, bf16 or f16
// operands, a constant k of at most 4096, whose innermost output axis n is stepped by exactly one
// operand and another axis m only by the other (the longest such, or a dynamic one), both at
// least 16 long where they are constants, and a batch: another output axis that both operands
// step through (attention's KV heads). A projection has none (its weight is the same for every
// row), and there this kernel would only lose to the GEMMs and cuBLASLt.
#include <optional>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/matmul_operands.hpp"
#include "luminal/cuda/prelude.hpp"

namespace luminal::cuda {

namespace {

// (below cuda.Matmul's 1.0: with the switch on, the seeds take it wherever it is offered; the
// search times both)
const OpDef kMatmulTiled{.name = "cuda.MatmulTiled", .seed_cost = 0.9, .library_replaces = true};

constexpr int kBlock = 256;
constexpr int kTile = 64;  // rows and columns a block
constexpr int kStep = 32;  // k values a stage
constexpr int kMinSide = 16;

/// The tile's axes of a matmul's views (k at `axis`): n the innermost output axis, `an` the
/// input constant along it (the m side: it steps through m), m the axis only that input steps
/// through.
struct TiledAxes {
  int m = -1, n = -1;
  int row_input = 0;  // the input that steps through m (constant along n)
};

bool is_zero(const Expr& e) { return e == Expr(0); }

/// Whether `d` may be at least kMinSide long (a dynamic dim may).
bool long_enough(const Expr& d) { return !d.is_const() || d.as_const() >= kMinSide; }

std::optional<TiledAxes> tiled_axes(const Attrs& a, const std::vector<DType>& inputs) {
  if (a.dtype != DType::F32 || a.views.size() != 2 || inputs.size() != 2 || a.payload)
    return std::nullopt;
  for (DType t : inputs)
    if (t != DType::F32 && t != DType::BF16 && t != DType::F16) return std::nullopt;
  const View& v0 = a.views[0];
  const View& v1 = a.views[1];
  const int rank = v0.rank();
  const int axis = a.axis;
  if (v1.rank() != rank || axis < 0 || axis >= rank) return std::nullopt;
  const Expr& K = v0.dims[static_cast<size_t>(axis)];
  if (!K.is_const() || K.as_const() < 1 || K.as_const() > 4096) return std::nullopt;
  TiledAxes t;
  t.n = rank - 1;
  if (t.n == axis) --t.n;
  if (t.n < 0) return std::nullopt;
  const size_t n = static_cast<size_t>(t.n);
  if (is_zero(v0.strides[n]) == is_zero(v1.strides[n])) return std::nullopt;
  t.row_input = is_zero(v0.strides[n]) ? 0 : 1;
  const View& va = t.row_input == 0 ? v0 : v1;
  const View& vb = t.row_input == 0 ? v1 : v0;
  int64_t best = -1;
  for (int d = 0; d < rank; ++d) {
    const size_t u = static_cast<size_t>(d);
    if (d == axis || d == t.n || is_zero(va.strides[u]) || !is_zero(vb.strides[u])) continue;
    const int64_t len = va.dims[u].is_const() ? va.dims[u].as_const() : INT64_MAX;
    if (len > best) best = len, t.m = d;
  }
  if (t.m < 0 || !long_enough(v0.dims[static_cast<size_t>(t.m)]) || !long_enough(v0.dims[n]))
    return std::nullopt;
  bool batched = false;
  for (int d = 0; d < rank; ++d) {
    const size_t u = static_cast<size_t>(d);
    batched = batched || (d != axis && d != t.m && d != t.n && !is_zero(v0.strides[u]) &&
                          !is_zero(v1.strides[u]) && !(v0.dims[u] == Expr(1)));
  }
  if (!batched) return std::nullopt;
  return t;
}

/// `v` with axes m and n at length 1 (the batch part of its offsets).
View batch_part(View v, const TiledAxes& t) {
  v.dims[static_cast<size_t>(t.m)] = Expr(1);
  v.dims[static_cast<size_t>(t.n)] = Expr(1);
  return v;
}

KernelGen gen_matmul_tiled(const LlirNode& n, const GenContext& ctx) {
  const std::optional<TiledAxes> ax = tiled_axes(n.attrs, n.input_dtypes);
  if (!ax)
    throw Error("cuda.MatmulTiled: " + n.attrs.to_string() +
                " is no tiled matmul (an f32 product of f32/bf16/f16 operands, a constant k of at "
                "most 4096, its innermost output axis stepped by one operand and another axis by "
                "the other alone)");
  const int axis = n.attrs.axis;
  const View& v0 = n.attrs.views[0];
  const int a_in = ax->row_input, b_in = 1 - a_in;
  const View& va = n.attrs.views[static_cast<size_t>(a_in)];
  const View& vb = n.attrs.views[static_cast<size_t>(b_in)];
  Codegen cg(n, ctx);
  const Expr K = v0.dims[static_cast<size_t>(axis)];
  const Expr M = v0.dims[static_cast<size_t>(ax->m)];
  const Expr N = v0.dims[static_cast<size_t>(ax->n)];
  Shape odims = v0.dims;
  odims[static_cast<size_t>(axis)] = Expr(1);
  const View out_full = View::contiguous(odims);
  Expr batches = Expr(1);
  for (int d = 0; d < v0.rank(); ++d)
    if (d != axis && d != ax->m && d != ax->n) batches = batches * odims[static_cast<size_t>(d)];
  cg.require(numel(n.attrs.shape));
  cg.require(batches * M * K);
  const std::string& I = cg.idx();
  const std::string Ts = std::to_string(kTile), Ss = std::to_string(kStep);
  const std::string ain = "in" + std::to_string(a_in), bin = "in" + std::to_string(b_in);
  const std::string la = load_fn(n.input_dtypes[static_cast<size_t>(a_in)], false);
  const std::string lb = load_fn(n.input_dtypes[static_cast<size_t>(b_in)], false);

  // Operands staged transposed ([k][row], rows 4 floats apart from the next stage's padding) so
  // a thread's four rows or columns are one 16-byte shared load.
  const std::string Rs = std::to_string(kTile + 4);
  std::string body = lines({
      "  __shared__ __align__(16) float As[" + Ss + "][" + Rs + "];",
      "  __shared__ __align__(16) float Bs[" + Ss + "][" + Rs + "];",
      "  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;",
      "  for (" + I + " bi = blockIdx.z; bi < NB; bi += gridDim.z) {",
  });
  const std::string oa = cg.view_offset(batch_part(va, *ax), "bi", "ab", body, axis);
  const std::string ob = cg.view_offset(batch_part(vb, *ax), "bi", "bb", body, axis);
  const std::string oo = cg.view_offset(batch_part(out_full, *ax), "bi", "ob", body, axis);
  const std::string add =
      product_add(DType::F32, n.input_dtypes[static_cast<size_t>(a_in)],
                  n.input_dtypes[static_cast<size_t>(b_in)], "a[i]", "b[j]", "part[i][j]");
  body += lines({
      "  for (" + I + " m0 = (" + I + ")blockIdx.y * " + Ts + "; m0 < M; m0 += (" + I +
          ")gridDim.y * " + Ts + ") {",
      "  for (" + I + " n0 = (" + I + ")blockIdx.x * " + Ts + "; n0 < N; n0 += (" + I +
          ")gridDim.x * " + Ts + ") {",
      "    // (a thread whose rows or columns all lie past the ends only loads)",
      "    const bool live = m0 + ty * 4 < M && n0 + tx * 4 < N;",
      "    double acc[4][4];",
      "#pragma unroll",
      "    for (int i = 0; i < 4; ++i)",
      "#pragma unroll",
      "      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;",
      "    for (" + I + " k0 = 0; k0 < K; k0 += " + Ss + ") {",
      "      for (int r = threadIdx.x; r < " + std::to_string(kTile * kStep) +
          "; r += " + std::to_string(kBlock) + ") {",
      "        const int kk = r % " + Ss + ", rr = r / " + Ss + ";",
      "        const " + I + " k = k0 + kk, m = m0 + rr, nn = n0 + rr;",
      "        As[kk][rr] = m < M && k < K ? " + la + "(" + ain + "[" + oa + " + " +
          cg.axis_offset(va, ax->m, "m") + " + " + cg.axis_offset(va, axis, "k") + "]) : 0.0f;",
      "        Bs[kk][rr] = nn < N && k < K ? " + lb + "(" + bin + "[" + ob + " + " +
          cg.axis_offset(vb, ax->n, "nn") + " + " + cg.axis_offset(vb, axis, "k") + "]) : 0.0f;",
      "      }",
      "      __syncthreads();",
      "      if (live) {",
      "        const int kn = K - k0 < " + Ss + " ? (int)(K - k0) : " + Ss + ";",
      "        float part[4][4];",
      "#pragma unroll",
      "        for (int i = 0; i < 4; ++i)",
      "#pragma unroll",
      "          for (int j = 0; j < 4; ++j) part[i][j] = 0.0f;",
      "        for (int kk = 0; kk < kn; ++kk) {",
      "          const float4 a4 = *reinterpret_cast<const float4*>(&As[kk][ty * 4]);",
      "          const float4 b4 = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);",
      "          const float a[4] = {a4.x, a4.y, a4.z, a4.w}, b[4] = {b4.x, b4.y, b4.z, b4.w};",
      "#pragma unroll",
      "          for (int i = 0; i < 4; ++i)",
      "#pragma unroll",
      "            for (int j = 0; j < 4; ++j) part[i][j] = " + add + ";",
      "        }",
      "#pragma unroll",
      "        for (int i = 0; i < 4; ++i)",
      "#pragma unroll",
      "          for (int j = 0; j < 4; ++j) acc[i][j] = acc[i][j] + (double)part[i][j];",
      "      }",
      "      __syncthreads();",
      "    }",
      "#pragma unroll",
      "    for (int i = 0; i < 4; ++i) {",
      "      const " + I + " m = m0 + ty * 4 + i;",
      "      if (m >= M) break;",
      "#pragma unroll",
      "      for (int j = 0; j < 4; ++j) {",
      "        const " + I + " nn = n0 + tx * 4 + j;",
      "        if (nn < N) out[" + oo + " + " + cg.axis_offset(out_full, ax->m, "m") + " + " +
          cg.axis_offset(out_full, ax->n, "nn") + "] = st_f32(acc[i][j]);",
      "      }",
      "    }",
      "  }",
      "  }",
      "  }",
  });
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(lmn_matmul_tiled)(" + cg.params() + ") {\n";
  const std::string head = "  const " + I + " M = " + cg.c(M) + ", N = " + cg.c(N) +
                           ", K = " + cg.c(K) + ", NB = " + cg.c(batches) + ";\n";
  k += cg.dims_prologue() + head + body + "}\n";
  KernelGen gen;
  gen.source = Codegen::unit(k);
  const Expr cap(65535);
  gen.launches.push_back(Launch{"lmn_matmul_tiled",
                                kBlock,
                                {ceil_div(N, Expr(int64_t{kTile})),
                                 min(ceil_div(M, Expr(int64_t{kTile})), cap), min(batches, cap)}});
  const Expr count = numel(n.attrs.shape);
  gen.bytes =
      batches * K *
          (M * Expr(static_cast<int64_t>(size_bytes(n.input_dtypes[static_cast<size_t>(a_in)]))) +
           N * Expr(static_cast<int64_t>(size_bytes(n.input_dtypes[static_cast<size_t>(b_in)])))) +
      count * Expr(int64_t{4});
  gen.flops = count * K * Expr(int64_t{2});
  return gen;
}

std::vector<Rule> matmul_tiled_rules() {
  if (!env_opt_in("LUMINAL_CUDA_MATMUL_TILED")) return {};
  return {
      matmul_parts_rule("cuda.matmul-tiled", [](EGraph& eg, const MatmulParts& p, ClassId root) {
        auto offer = [&](const MatmulParts& q) {
          std::vector<DType> ts;
          for (ClassId c : q.children)
            ts.push_back(eg.dtype(c));
          if (tiled_axes(q.attrs, ts)) add_merged(eg, &kMatmulTiled, q.attrs, q.children, root);
        };
        offer(p);
        // (and reading 16-bit operands through the graph's casts up to f32)
        if (std::optional<MatmulParts> q = uncast_operands(eg, p)) offer(*q);
      })};
}

}  // namespace

void register_matmul_tiled_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp tiled{&kMatmulTiled, "cuda.library", matmul_tiled_rules, gen_matmul_tiled};
  ops.push_back(&tiled);
}

}  // namespace luminal::cuda
