// cuda.Gemv and cuda.GemvCast: a matmul with few rows per weight (decode's x @ W^T with m from 1
// to 8) as a GEMV, an alternative to cuda.Matmul / cuda.MatmulCast that the search times.
//
// Where one operand (the "shared" one, a weight) is read at the same offsets along an output
// axis that the other one (the "row" operand, the activation) steps through, and that axis is at
// most 8 long, one warp group computes an output column for every row at once: the weight is
// read from memory once, not once per row. A block of 256 threads holds 8 / W outputs, each
// summed by W warps over interleaved 512-byte slices of k (split-k: enough warps in flight when
// the output count is small, as the k/v projections' 1,024), combined in shared memory. Each
// lane issues U 16-byte weight loads before it multiplies (bytes in flight). Numerics: the
// products of a lane's U chunks (32 for bf16, 16 for f32) sum in f32 (a fused multiply-add where
// two 16-bit operands make the product exact), then join a double accumulator, one conversion
// per U chunks and row (cuda.Matmul converts once a chunk); the lanes' and warps' sums add in
// double.
//
// LUMINAL_CUDA_GEMV_WARPS (1, 2, 4 or 8) forces W and LUMINAL_CUDA_GEMV_UNROLL (1 to 8) sets U
// (default 4): for tuning sweeps. LUMINAL_CUDA_GEMV=0 offers neither cuda.Gemv nor the split
// reductions of reduce.cpp (the programs of before, to compare); LUMINAL_CUDA_GEMV_EPILOGUE=0
// offers no epilogue forms (cuda.GemvEpi / cuda.GemvCastEpi: the GEMV's store applies the
// elementwise region that reads its value, kernels/epilogue_rule.hpp). cuda.GemvMatmul /
// cuda.GemvCastMatmul (off unless LUMINAL_CUDA_GEMV_MATMUL=1) run a short product that reads the
// GEMV's values (rope's 2-term sum) in the same kernel: GemvThen below. cuda.GemvGlu /
// cuda.GemvCastGlu (opt-in, LUMINAL_CUDA_GEMV_GLU=1, until a GPU has run them): two GEMVs of one
// activation, alike but for the weight, and the elementwise region over both (SiLU(gate) * up),
// one kernel that dots row p of both weights (each sum as the separate kernel's) and stores the
// region (gemv_epilogue.hpp, gemv_pair_rule).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/gemv_epilogue.hpp"
#include "luminal/cuda/gemv_form.hpp"
#include "luminal/cuda/gemv_kernel.hpp"
#include "luminal/cuda/gemv_then.hpp"
#include "luminal/cuda/matmul_operands.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/row_prologue.hpp"
#include "luminal/kernels/epilogue_rule.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cuda {

/// False when LUMINAL_CUDA_GEMV=0: the rules offer neither cuda.Gemv nor cuda.SumSplit/MaxSplit.
bool decode_alternatives();

namespace {

// (seed cost below a cuda.Matmul's: the fewest-kernels seeds start from the GEMV where it is
// offered; the search times both)
const OpDef kGemv{.name = "cuda.Gemv", .seed_cost = 0.95, .library_replaces = true};
const OpDef kGemvCast{.name = "cuda.GemvCast", .seed_cost = 0.95, .library_replaces = true};
// The same with an elementwise epilogue (kernels/epilogue_rule.hpp): the residual add after
// o_proj and down, SiLU(gate) * up after up, a cast; one kernel instead of the GEMV's and the
// region's. (Seed cost between one kernel and two: the fewest-kernels seed takes it where it
// replaces both, not where the GEMV's value has other readers and the GEMV would run twice.)
const OpDef kGemvEpi{.name = "cuda.GemvEpi", .seed_cost = 1.5, .library_replaces = true};
const OpDef kGemvCastEpi{.name = "cuda.GemvCastEpi", .seed_cost = 1.5, .library_replaces = true};

// A GEMV and the short product reading its values, one kernel (gemv_then.hpp): rope's 2-term
// sum over q or k. (Seed cost 1: below the GEMV's 0.95 and the matmul's together; plus
// then_form_extra, growing with the weight.)
const OpDef kGemvMatmul{.name = "cuda.GemvMatmul",
                        .seed_cost = 1.0,
                        .library_replaces = true,
                        .seed_extra = then_form_extra};
const OpDef kGemvCastMatmul{.name = "cuda.GemvCastMatmul",
                            .seed_cost = 1.0,
                            .library_replaces = true,
                            .seed_extra = then_form_extra};
// Two GEMVs and the region over both, one kernel (below a GEMV and an epilogue form, 2.45).
const OpDef kGemvGlu{.name = "cuda.GemvGlu", .seed_cost = 1.4, .library_replaces = true};
const OpDef kGemvCastGlu{.name = "cuda.GemvCastGlu", .seed_cost = 1.4, .library_replaces = true};

constexpr int kBlock = kGemvBlock;
constexpr int kWarps = kGemvWarps;

/// `product_t`: the dtype each product rounds to (the GEMV value's; f32 for cuda.GemvCast).
/// `epi`: the epilogue program of cuda.GemvEpi / cuda.GemvCastEpi (load 0: the GEMV's value in
/// the load's dtype; load j >= 1: input j + 1 through views[j + 1] at the output's flat index),
/// or null. `then`: the product after it (cuda.GemvMatmul; input 2 is its other operand), or null.
/// `pair`: the paired form (input 2 a second weight read through the weight's view; `epi` the
/// region over the two products).
KernelGen gen_gemv_over(const LlirNode& n, const GenContext& ctx, DType product_t,
                        const FusedProgram* epi, const GemvThen* then, bool pair = false) {
  const size_t extra = pair ? 1 : epi ? n.input_dtypes.size() - 2 : (then ? 1 : 0);
  if (n.input_dtypes.size() != 2 + extra || n.input_dtypes.size() < 2 ||
      n.attrs.views.size() != n.input_dtypes.size())
    throw Error("cuda.Gemv: needs two inputs (and an epilogue's), got " +
                std::to_string(n.input_dtypes.size()));
  const DType t0 = n.input_dtypes[0], t1 = n.input_dtypes[1];
  Attrs core = n.attrs;  // the GEMV alone: its two operands' views
  core.views.resize(2);
  const std::optional<GemvForm> form = gemv_form(core, t0, t1, ctx.facts);
  if (!form)
    throw Error("cuda.Gemv: " + n.attrs.to_string() +
                " is no GEMV (operands not in aligned 16-byte chunks along k, or more than 8 rows "
                "per weight)");
  const int axis = n.attrs.axis;
  const int w = form->shared, x = 1 - w;
  const int V = form->vec;
  const int M = form->rows;
  const int ra = form->row_axis;
  const DType tw = n.input_dtypes[static_cast<size_t>(w)];
  const DType tx = n.input_dtypes[static_cast<size_t>(x)];
  if (pair && (!epi || then || n.input_dtypes[2] != tw ||
               !(n.attrs.views[2] == n.attrs.views[static_cast<size_t>(w)])))
    throw Error(std::string(n.op->name) +
                ": pairs two GEMVs whose weights have one dtype and view, with a region");

  Codegen cg(n, ctx);
  const View& v0 = n.attrs.views[0];
  const Expr K = v0.dims[axis];
  cg.require(K);
  // The output as a view over the operands' axes (k of length 1), and every view with the row
  // axis at length 1: the outer index p runs over the other output axes.
  Shape odims = v0.dims;
  odims[static_cast<size_t>(axis)] = Expr(1);
  const View out_full = View::contiguous(odims);
  auto drop_row = [&](View v) {
    if (ra >= 0) v.dims[static_cast<size_t>(ra)] = Expr(1);
    return v;
  };
  Expr P = Expr(1);
  for (int d = 0; d < v0.rank(); ++d)
    if (d != axis && d != ra) P = P * odims[static_cast<size_t>(d)];
  cg.require(numel(n.attrs.shape));
  // With a product after it: T values a task, P the tasks (gemv_then.hpp).
  ThenTasks tasks;
  if (then) {
    if (M != 1) throw Error(std::string(n.op->name) + ": needs one row");
    tasks = then_tasks(*then, n.op->name);
    P = tasks.P;
  }
  const int T = tasks.T;

  // W warps per output. One row: 8 (the most bytes in flight; measured best on every 8B shape),
  // while each lane keeps 2 chunks or more (SmolLM2's k = 576, 72 chunks: one warp). Several rows:
  // the most that keep the warps within one full SM's worth (64) an SM, since each warp's
  // per-output work (the row loop, the reductions) grows with the rows.
  const int64_t chunks = K.as_const() / V;
  const int64_t p_hi = P.bounds(ctx.facts).hi;
  int W = 1;
  while (W < kWarps && chunks >= int64_t{64} * W * 2 &&
         (M == 1 || p_hi <= int64_t{ctx.sm_count} * 32 / W))
    W *= 2;
  W = env_int("LUMINAL_CUDA_GEMV_WARPS", W, 1, kWarps);
  if (W != 1 && W != 2 && W != 4 && W != 8)
    throw Error("LUMINAL_CUDA_GEMV_WARPS must be 1, 2, 4 or 8");
  const int U = env_int("LUMINAL_CUDA_GEMV_UNROLL", 4, 1, 8);
  const int G = kWarps / W;
  // With a product after it, the GEMV's own W (the sums' order, so the same bits) and G values a
  // block-iteration: TPB tasks when G >= T, else R rounds of G values for one task.
  const int TPB = then ? std::max(1, G / T) : 1, R = then ? std::max(1, T / G) : 1;
  // The activation computed by the block (cuda.RowGemv, row_prologue.cpp): one row, read along k
  // at unit stride from its first element, whatever the output index.
  const RowPrologue* rp = ctx.row_prologue;
  std::string row_code;
  if (rp) {
    const View& xv = n.attrs.views[static_cast<size_t>(x)];
    const int64_t len = one_row_length(xv, axis);
    if (x != 0 || M != 1 || rp->row->attrs.dtype != tx || len <= 0 ||
        !(numel(rp->row->attrs.shape) == Expr(len)))
      throw Error(std::string(n.op->name) + " with its row: the activation must be operand 0, " +
                  "one row of the row's dtype read along k at unit stride, got " + xv.to_string());
    row_code = "  __shared__ __align__(16) S_" + dtype_tag(tx) + " lmn_xrow[" +
               std::to_string(K.as_const()) + "];\n" +
               row_into_shared(*rp->row, ctx, cg, kBlock, "lmn_xrow", rp->inputs);
  }
  if (!epi && !then && !rp)
    if (std::optional<KernelGen> mma =
            gen_gemv_mma(n, ctx, *form, product_t, P, out_full,
                         drop_row(n.attrs.views[static_cast<size_t>(w)]), cg))
      return *mma;

  std::string base;
  const std::string ow =
      cg.view_offset(drop_row(n.attrs.views[static_cast<size_t>(w)]), "p", "bw", base, axis);
  const std::string ox =
      cg.view_offset(drop_row(n.attrs.views[static_cast<size_t>(x)]), "p", "bx", base, axis);
  const std::string oo = cg.view_offset(drop_row(out_full), "p", "bo", base, axis);
  const std::string x_step =
      ra >= 0 ? cg.axis_offset(n.attrs.views[static_cast<size_t>(x)], ra, "mi") : "0";
  const std::string o_step = ra >= 0 ? cg.axis_offset(out_full, ra, "mi") : "0";
  const std::string& I = cg.idx();
  // The epilogue's other inputs, read before the k loop (gemv_epilogue.hpp).
  const std::string out_at = oo + " + " + o_step;
  const GemvPrefetch pf =
      epi && !pair ? gemv_epilogue_prefetch(n, *epi, cg, M, out_at) : GemvPrefetch{};
  auto store = [&](const std::string& value, const std::string& value2) {
    if (then)  // A's value as the product reads it: stored in the GEMV's dtype, loaded back
      return "lmn_a[it] = " + load_fn(n.attrs.dtype, false) + "(st_" + dtype_tag(n.attrs.dtype) +
             "(" + value + "));\n";
    if (pair) return gemv_pair_store(n, *epi, out_at, value, value2);
    return gemv_store(n, epi, out_at, value);
  };

  const std::string vw_t = vector_type(V * size_bytes(tw));
  const std::string vx_t = vector_type(V * size_bytes(tx));
  const std::string sw = "S_" + dtype_tag(tw), sx = "S_" + dtype_tag(tx);
  const std::string fma =
      product_add(product_t, tx, tw, operand_load(tx, "ex[j]"), operand_load(tw, "ew[j]"), "part");
  const std::string fma2 = product_add(product_t, tx, tw, operand_load(tx, "ex[j]"),
                                       operand_load(tw, "ew2[j]"), "part2");
  const std::string Ms = std::to_string(M), Us = std::to_string(U), Ws = std::to_string(W),
                    Gs = std::to_string(G), Vs = std::to_string(V);
  std::string body = lines({
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;",
      "  const int g = warp / " + Ws + ", part = warp % " + Ws + ";",
      "  __shared__ double red[" + std::to_string(kWarps) + "][" + Ms + "];",
      pair ? "  __shared__ double red2[" + std::to_string(kWarps) + "][" + Ms + "];" : "",
      "  const " + I + " KC = K / " + Vs + ";",
  });
  body = row_code + body;
  // (the group's output exists while `live` holds)
  const std::string live = gemv_loop_open(cg, then, tasks, G, TPB, R, body);
  body += lines({
      "    double acc[" + Ms + "]" + (pair ? ", acc2[" + Ms + "]" : "") + ";",
      "#pragma unroll",
      "    for (int mi = 0; mi < " + Ms + "; ++mi) acc[mi] = " + (pair ? "acc2[mi] = " : "") +
          "0.0;",
  });
  body += pf.decl + "    if (" + live + ") {\n" + base + pf.load;
  body += lines({
      "    const " + vw_t + "* rw = reinterpret_cast<const " + vw_t + "*>(in" + std::to_string(w) +
          " + " + ow + ");",
      pair
          ? "    const " + vw_t + "* rw2 = reinterpret_cast<const " + vw_t + "*>(in2 + " + ow + ");"
          : "",
      "    for (" + I + " c = part * 32 + lane; c < KC; c += " + std::to_string(32 * W * U) + ") {",
      "      " + vw_t + " qw[" + Us + "]" + (pair ? ", qw2[" + Us + "]" : "") + ";",
      "#pragma unroll",
      "      for (int u = 0; u < " + Us + "; ++u)",
      "        if (c + u * " + std::to_string(32 * W) + " < KC) {",
      "          qw[u] = __ldg(rw + c + u * " + std::to_string(32 * W) + ");",
      pair ? "          qw2[u] = __ldg(rw2 + c + u * " + std::to_string(32 * W) + ");" : "",
      "        }",
      "#pragma unroll",
      "      for (int mi = 0; mi < " + Ms + "; ++mi) {",
      "        const " + vx_t + "* rx = reinterpret_cast<const " + vx_t + "*>(" +
          (rp ? std::string("lmn_xrow") : "in" + std::to_string(x)) + " + " + ox + " + " + x_step +
          ");",
      "        float part = 0.0f" + std::string(pair ? ", part2 = 0.0f" : "") + ";",
      "#pragma unroll",
      "        for (int u = 0; u < " + Us + "; ++u) {",
      "          const " + I + " cu = c + u * " + std::to_string(32 * W) + ";",
      "          if (cu >= KC) break;",
      "          const " + vx_t + " qx = " + (rp ? "rx[cu]" : "__ldg(rx + cu)") + ";",
      "          const " + sx + "* ex = reinterpret_cast<const " + sx + "*>(&qx);",
      "          const " + sw + "* ew = reinterpret_cast<const " + sw + "*>(&qw[u]);",
      "#pragma unroll",
      "          for (int j = 0; j < " + Vs + "; ++j) part = " + fma + ";",
      pair ? "          const " + sw + "* ew2 = reinterpret_cast<const " + sw + "*>(&qw2[u]);\n" +
                 "#pragma unroll\n          for (int j = 0; j < " + Vs + "; ++j) part2 = " + fma2 +
                 ";"
           : "",
      "        }",
      "        acc[mi] = acc[mi] + (double)part;",
      pair ? "        acc2[mi] = acc2[mi] + (double)part2;" : "",
      "      }",
      "    }",
      "    }",
      "#pragma unroll",
      "    for (int mi = 0; mi < " + Ms + "; ++mi)",
      "      for (int s = 16; s > 0; s >>= 1) {",
      "        acc[mi] += __shfl_xor_sync(0xffffffffu, acc[mi], s);",
      pair ? "        acc2[mi] += __shfl_xor_sync(0xffffffffu, acc2[mi], s);" : "",
      "      }",
  });
  if (W == 1) {
    body += lines({"    if (lane == 0 && " + live + ") {"}) + base +
            lines({
                "#pragma unroll",
                "      for (int mi = 0; mi < " + Ms + "; ++mi) {",
            }) +
            store("acc[mi]", "acc2[mi]") + "      }\n    }\n";
  } else {
    body += lines({
        "    if (lane == 0) {",
        "#pragma unroll",
        "      for (int mi = 0; mi < " + Ms + "; ++mi) {",
        "        red[warp][mi] = acc[mi];",
        pair ? "        red2[warp][mi] = acc2[mi];" : "",
        "      }",
        "    }",
        "    __syncthreads();",
        "    if (part == 0 && lane == 0 && " + live + ") {",
    });
    body += base;
    body += lines({
        "#pragma unroll",
        "      for (int mi = 0; mi < " + Ms + "; ++mi) {",
        "        double t = red[warp][mi];",
        "        for (int q = 1; q < " + Ws + "; ++q) t += red[warp + q][mi];",
        pair ? "        double t2 = red2[warp][mi];" : "",
        pair ? "        for (int q = 1; q < " + Ws + "; ++q) t2 += red2[warp + q][mi];" : "",
    });
    body += store("t", "t2") + lines({"      }", "    }", "    __syncthreads();"});
  }
  // (the rounds end; then the tasks' products)
  body += then ? then_close(cg, *then, tasks, TPB, n, 2) : "  }\n";
  // Before the wait: each group's first output's weight row, as far as its first k step reads
  // it, into L2 (not with a product after it: its groups' outputs are another order).
  std::string before_wait;
  const int64_t row_bytes =
      std::max<int64_t>(1, K.as_const() * size_bytes(tw));  // (P may be unbounded)
  // (the paired form: both weights, sized as their sum)
  const int64_t weights = pair ? 2 : 1;
  if (!then &&
      weight_prefetch(p_hi > INT64_MAX / row_bytes / weights ? INT64_MAX
                                                             : p_hi * row_bytes * weights)) {
    std::string fb;
    const std::string fw =
        cg.view_offset(drop_row(n.attrs.views[static_cast<size_t>(w)]), "p", "fw", fb, axis);
    const int64_t span = int64_t{32} * W * U * V;  // elements of k a group's first step reads
    auto prefetch = [&](const std::string& in) {   // (a weight read at the weight's offsets)
      return "      lmn_prefetch_l2(" + in + " + " + fw + ", (long long)(K < " +
             std::to_string(span) + " ? K : " + std::to_string(span) + ") * (long long)sizeof(" +
             sw + "), (warp % " + Ws + ") * 32 + lane, " + std::to_string(32 * W) + ");";
    };
    before_wait =
        lines({
            "  {",
            "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;",
            "    const " + I + " p = (" + I + ")blockIdx.x * " + Gs + " + warp / " + Ws + ";",
            "    if (p < P) {",
        }) +
        fb +
        lines({
            prefetch("in" + std::to_string(w)),
            pair ? prefetch("in2") : "",
            "    }",
            "  }",
        });
  }
  KernelGen gen = gemv_kernel(
      "lmn_gemv", cg, P, K, body,
      min(ceil_div(P, Expr(then ? TPB : G)), Expr(int64_t{ctx.sm_count} * 16)), before_wait);
  const Expr count = numel(n.attrs.shape);
  // (x once when every output reads the same rows of it, a linear layer; else once an output)
  bool x_shared = true;
  for (int d = 0; d < v0.rank(); ++d)
    x_shared = x_shared && (d == axis || d == ra ||
                            n.attrs.views[static_cast<size_t>(x)].strides[d] == Expr(0) ||
                            odims[static_cast<size_t>(d)] == Expr(1));
  gen.bytes = P * K * Expr(int64_t{pair ? 2 : 1} * size_bytes(tw)) +
              (x_shared ? Expr(int64_t{M}) : count) * K * size_bytes(tx) +
              count * size_bytes(n.attrs.dtype);
  for (size_t j = 2; j < n.input_dtypes.size() && !pair; ++j)
    gen.bytes = gen.bytes + count * size_bytes(n.input_dtypes[j]);
  gen.flops = count * K * (pair ? 4 : 2);
  if (then) {  // T weight rows a task; B's and the outputs' elements once each
    gen.bytes =
        P * Expr(int64_t{T}) * K * size_bytes(tw) + K * size_bytes(tx) +
        count * (Expr(int64_t{T}) * size_bytes(n.input_dtypes[2]) + size_bytes(n.attrs.dtype));
    gen.flops = P * Expr(int64_t{T}) * K * 2 + count * Expr(int64_t{T} * 2);
  }
  return gen;
}

/// gen_gemv_over on the domain gemv_domain gives (the epilogue's views, over the output, read
/// it at its flat index, which a split leaves as it is).
KernelGen gen_gemv_node(const LlirNode& n, const GenContext& ctx, DType product_t,
                        const FusedProgram* epi = nullptr, const GemvThen* then = nullptr,
                        bool pair = false) {
  if (then || n.attrs.views.size() < 2 || n.input_dtypes.size() < 2)
    return gen_gemv_over(n, ctx, product_t, epi, then, pair);
  Attrs core = n.attrs;
  core.views.resize(2);
  const std::optional<Attrs> d = gemv_domain(core, n.input_dtypes[0], n.input_dtypes[1], ctx.facts);
  // (none: gen_gemv_over names why)
  if (!d || (d->axis == core.axis && d->views == core.views))
    return gen_gemv_over(n, ctx, product_t, epi, then, pair);
  LlirNode m = n;
  m.attrs.views[0] = d->views[0];
  m.attrs.views[1] = d->views[1];
  m.attrs.axis = d->axis;
  // The paired form's second weight: read as the first weight is (the view it shares with it).
  if (pair && n.attrs.views.size() == 3)
    for (size_t j : {size_t{1}, size_t{0}})
      if (n.attrs.views[2] == n.attrs.views[j]) {
        m.attrs.views[2] = d->views[j];
        break;
      }
  return gen_gemv_over(m, ctx, product_t, epi, then, pair);
}

KernelGen gen_gemv(const LlirNode& n, const GenContext& ctx) {
  return gen_gemv_node(n, ctx, n.attrs.dtype);
}
KernelGen gen_gemv_cast(const LlirNode& n, const GenContext& ctx) {
  require_sixteen_bit_output(n);
  return gen_gemv_node(n, ctx, DType::F32);
}

/// cuda.GemvMatmul / cuda.GemvCastMatmul: inputs x, W (the GEMV's), B; views the GEMV's two,
/// then the product's view of B with its k axis last; axis the GEMV's; payload the product's
/// view of A (GemvThenView).
KernelGen gen_gemv_matmul_node(const LlirNode& n, const GenContext& ctx, DType product_t) {
  const GemvThen then = then_of(n);
  return gen_gemv_node(n, ctx, product_t, nullptr, &then);
}
KernelGen gen_gemv_matmul(const LlirNode& n, const GenContext& ctx) {
  return gen_gemv_matmul_node(n, ctx, n.attrs.dtype);
}
KernelGen gen_gemv_cast_matmul(const LlirNode& n, const GenContext& ctx) {
  require_sixteen_bit_output(n);
  return gen_gemv_matmul_node(n, ctx, DType::F32);
}

/// The epilogue program of a cuda.GemvEpi / cuda.GemvCastEpi node and its load 0's dtype.
std::pair<const FusedProgram*, DType> epilogue_of(const LlirNode& n) {
  const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
  if (!prog) throw Error(std::string(n.op->name) + ": the node has no epilogue program");
  prog->validate();
  if (prog->has_row_reduce() || prog->insts.back().dtype != n.attrs.dtype)
    throw Error(std::string(n.op->name) + ": the epilogue " + prog->to_string() +
                " is not elementwise or does not give the node's dtype");
  for (const FusedInst& in : prog->insts)
    if (in.op == FusedOpcode::Load && in.a == 0) return {prog, in.dtype};
  throw Error(std::string(n.op->name) + ": the epilogue " + prog->to_string() +
              " never reads the GEMV's value (load 0)");
}
KernelGen gen_gemv_epi(const LlirNode& n, const GenContext& ctx) {
  const auto [prog, value_t] = epilogue_of(n);
  return gen_gemv_node(n, ctx, value_t, prog);
}
KernelGen gen_gemv_cast_epi(const LlirNode& n, const GenContext& ctx) {
  const auto [prog, value_t] = epilogue_of(n);
  if (value_t != DType::BF16 && value_t != DType::F16)
    throw Error("cuda.GemvCastEpi: the GEMV's value must be bf16 or f16, got " +
                std::string(name(value_t)));
  return gen_gemv_node(n, ctx, DType::F32, prog);
}
KernelGen gen_gemv_glu(const LlirNode& n, const GenContext& ctx) {
  const auto [prog, value_t] = epilogue_of(n);
  return gen_gemv_node(n, ctx, value_t, prog, nullptr, true);
}
KernelGen gen_gemv_cast_glu(const LlirNode& n, const GenContext& ctx) {
  const auto [prog, value_t] = epilogue_of(n);
  if (value_t != DType::BF16 && value_t != DType::F16)
    throw Error("cuda.GemvCastGlu: the GEMVs' values must be bf16 or f16, got " +
                std::string(name(value_t)));
  return gen_gemv_node(n, ctx, DType::F32, prog, nullptr, true);
}

/// `v` with the stride of `axis` written as z where it is another expression of z equal to z at
/// every index of the axis (`128*(z/128) + z%128`, as merging a tensor's heads back can leave
/// it): the same elements, read in 16-byte chunks.
View unit_stride_k(View v, int axis) {
  Expr& st = v.strides[static_cast<size_t>(axis)];
  const Expr& len = v.dims[static_cast<size_t>(axis)];
  if (st == Expr::z() || !len.is_const() || len.as_const() > (int64_t{1} << 16)) return v;
  const std::vector<std::string> vars = st.vars();
  if (vars.size() != 1 || vars[0] != "z") return v;
  for (int64_t z = 0; z < len.as_const(); ++z)
    if (st.eval({}, z) != z) return v;
  st = Expr::z();
  return v;
}

/// cuda.Gemv for every matmul with a GEMV form (the 16-bit operands read through the graph's
/// casts where it casts them up), and cuda.GemvCast for its cast back to bf16/f16.
std::vector<Rule> gemv_rules() {
  // (the rule's name says whether split domains are offered: the compile cache keys it)
  return matmul_op_rules(env_switch_on("LUMINAL_CUDA_GEMV_SPLIT") ? "cuda.gemv-split" : "cuda.gemv",
                         &kGemv, &kGemvCast, [](const EGraph& eg, MatmulParts& p) {
                           if (!decode_alternatives()) return false;
                           for (View& v : p.attrs.views)
                             v = unit_stride_k(v, p.attrs.axis);
                           // (the rules see no bucket facts: a dynamic dim is unbounded there, so a
                           // row axis must be a constant, as decode's s = 1 is once the bucket
                           // substitutes it)
                           if (p.attrs.views.size() != 2) return false;
                           return gemv_domain(p.attrs, eg.dtype(p.children[0]),
                                              eg.dtype(p.children[1]), Facts{})
                               .has_value();
                         });
}

/// cuda.GemvMatmul beside a cuda.Matmul whose first operand's class holds a one-row cuda.Gemv
/// (cuda.GemvCastMatmul: a cuda.GemvCast) of the matmul's dtype, over a k of 2, 4 or 8 that
/// neither operand reads with unit stride (cuda.Matmul's strided form, whose order of sums the
/// kernel repeats: same bits).
void apply_gemv_matmul(const Match& m, EGraph& eg) {
  // (not with the tensor-core GEMV, LUMINAL_CUDA_GEMV_MMA=1: its sums run in another order)
  if (env_int("LUMINAL_CUDA_GEMV_MMA", -1, 0, 1) == 1) return;
  const std::optional<ThenOffer> o = then_offer(eg, m.node("m"));
  if (!o) return;
  std::vector<std::pair<const OpDef*, ENodeId>> gemvs;  // (the class may grow as we add)
  for (ENodeId g : eg.nodes_of(o->a)) {
    const OpDef* op = eg.node(g).op;
    if (op != &kGemv && op != &kGemvCast) continue;
    const Attrs& ga = eg.attrs_of(g);
    if (ga.payload || eg.node(g).children.size() != 2 || ga.views.size() != 2) continue;
    const std::optional<GemvForm> f =
        gemv_form(ga, eg.dtype(eg.node(g).children[0]), eg.dtype(eg.node(g).children[1]), Facts{});
    if (f && f->rows == 1) gemvs.emplace_back(op == &kGemv ? &kGemvMatmul : &kGemvCastMatmul, g);
  }
  add_then_nodes(eg, *o, gemvs, m.root);
}

std::vector<Rule> gemv_matmul_rules() {
  // On unless LUMINAL_CUDA_GEMV_MATMUL=0: on the H200 (session 16) it took the SmolLM2 shape's
  // decode from 504 to 444 kernels a token and 0.823 -> 0.813 ms, and a first version (W forced
  // to 8 / T, other sums' order) made the 8B shape's 4.39-4.46 ms 4.47-4.49; the seeds take it
  // for small weights only (then_form_extra: none of the 8B's).
  if (!decode_alternatives() || env_int("LUMINAL_CUDA_GEMV_MATMUL", 1, 0, 1) != 1) return {};
  return {Rule{"cuda.gemv-matmul",
               Pattern::any_op([](const OpDef* op) { return op->name == "cuda.Matmul"; }).bind("m"),
               nullptr, apply_gemv_matmul}};
}

// (it offers epilogues only where cuda.Gemv / cuda.GemvCast e-nodes exist: none when
// LUMINAL_CUDA_GEMV=0; LUMINAL_CUDA_GEMV_EPILOGUE=0 leaves out the epilogues alone)
std::vector<Rule> epilogue_rules() {
  if (!env_switch_on("LUMINAL_CUDA_GEMV_EPILOGUE")) return {};
  return {epilogue_rule("cuda.gemv-epilogue", cuda_fused_op(),
                        {{&kGemv, &kGemvEpi}, {&kGemvCast, &kGemvCastEpi}})};
}

// The paired forms, with LUMINAL_CUDA_GEMV_GLU=1 (opt-in until a GPU has run them; a rule, not a
// condition: the compile cache's key names the rules in force).
std::vector<Rule> pair_rules() {
  if (!env_opt_in("LUMINAL_CUDA_GEMV_GLU")) return {};
  // (the weight: the operand the kernel shares across outputs, on the split domain the kernel
  // takes, which keeps the operands' order)
  return {gemv_pair_rule(
      "cuda.gemv-glu", cuda_fused_op(), {{&kGemv, &kGemvGlu}, {&kGemvCast, &kGemvCastGlu}},
      [](const EGraph& eg, ENodeId e) {
        const ENode& n = eg.node(e);
        if (n.children.size() != 2) return -1;
        const DType t0 = eg.dtype(n.children[0]), t1 = eg.dtype(n.children[1]);
        const std::optional<Attrs> d = gemv_domain(eg.attrs_of(e), t0, t1, Facts{});
        const std::optional<GemvForm> f = gemv_form(d ? *d : eg.attrs_of(e), t0, t1, Facts{});
        return f ? f->shared : -1;
      })};
}

}  // namespace

bool decode_alternatives() { return env_switch_on("LUMINAL_CUDA_GEMV"); }

KernelGen gemv_kernel(const char* name, Codegen& cg, const Expr& P, const Expr& K,
                      const std::string& body, const Expr& blocks, const std::string& before_wait) {
  const std::string& I = cg.idx();
  const std::string pcode = cg.c(P);
  const std::string kcode = cg.c(K);
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(" + name + ")(" + cg.params() + ") {\n";
  const std::string pk =
      "  const " + I + " P = " + pcode + ";\n  const " + I + " K = " + kcode + ";\n";
  k += (before_wait.empty() ? cg.dims_prologue() + pk : cg.dims_prologue(pk + before_wait)) + body +
       "}\n";
  KernelGen gen;
  gen.source = Codegen::unit(k);
  gen.launches.push_back(Launch{name, kBlock, {blocks, 1, 1}});
  return gen;
}

void register_gemv_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp gemv{&kGemv, "cuda.library", gemv_rules, gen_gemv};
  static const CudaOp gemv_cast{&kGemvCast, "", nullptr, gen_gemv_cast};
  static const CudaOp gemv_epi{&kGemvEpi, "cuda.library", epilogue_rules, gen_gemv_epi};
  static const CudaOp gemv_cast_epi{&kGemvCastEpi, "", nullptr, gen_gemv_cast_epi};
  ops.push_back(&gemv);
  ops.push_back(&gemv_cast);
  ops.push_back(&gemv_epi);
  ops.push_back(&gemv_cast_epi);
  static const CudaOp gemv_matmul{&kGemvMatmul, "cuda.library", gemv_matmul_rules, gen_gemv_matmul};
  static const CudaOp gemv_cast_matmul{&kGemvCastMatmul, "", nullptr, gen_gemv_cast_matmul};
  ops.push_back(&gemv_matmul);
  ops.push_back(&gemv_cast_matmul);
  static const CudaOp gemv_glu{&kGemvGlu, "cuda.library", pair_rules, gen_gemv_glu};
  static const CudaOp gemv_cast_glu{&kGemvCastGlu, "", nullptr, gen_gemv_cast_glu};
  ops.push_back(&gemv_glu);
  ops.push_back(&gemv_cast_glu);
}

}  // namespace luminal::cuda
