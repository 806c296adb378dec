// cuda.Row: a reduction over the last axis and the elementwise work around it in one kernel
// (softmax, RMSNorm, layer norm, log-softmax, ...), from the row program the shared row rule
// builds (luminal/kernels/row_rule.hpp).
//
// One block per row (grid-stride over rows), T threads, thread t owning elements t, t + T, ...
// The program runs in passes: pass p computes every RowSum / RowMax whose operand needs only the
// row values of earlier passes (each thread accumulates its elements, then a warp butterfly and
// one round through shared memory give every thread the row's value); the last pass computes the
// result per element and stores it. Softmax is three passes (max, sum, output), RMSNorm two.
//
// Each element-level load read by more than one pass is kept in registers (K = ceil(L / T)
// values per thread, unrolled) when the row's largest length in the bucket fits (at most 40
// registers a thread), so the input is read from memory once; longer rows re-read it in every
// pass (the streaming form). Values shared by a row (loads broadcast along it, reductions, the math
// on them) are computed once per row. Sums accumulate in double and round once to their dtype, max
// propagates NaN, and threads holding no element contribute the identity (0, -inf), so a fully
// masked row (all -inf) gives what the reference gives: max -inf, then NaN from -inf - -inf.
// This file picks the form and assembles the kernel; row_gen.hpp writes the element code and the
// loops of each form.
//
// cuda.RowQ8 is the same kernel for QuantizeQ8(Row(...)) to Q8_1 (an RMSNorm before a quantized
// linear layer): the f32 result row goes to shared memory instead of out, then each warp writes
// its 32-value blocks with cuda.QuantizeQ8's quantizer (split where int_value is 1), so the bytes
// equal the two kernels' and one launch and the f32 row's round trip go. Rows of a static length
// up to 8192 (32 KiB of shared memory), at least L / 4 threads (a warp quantizes at most 4
// blocks). Its rule runs after the quantized GEMV rules (ruleset cuda.rows-q8). On by default
// (LUMINAL_CUDA_ROW_Q8=0 offers it no more): on 2026-12-03 it lost on the H200 because the 8B q4_0
// search then took the f32-activation GEMVs for gate/up (2.80 -> 6.26 ms); with the seed's
// weight-scaled cost for that form (qgemv.cpp, qgemv_f32_form_extra) and the fold repair the seed
// takes RowQ8 and integer GEMVs everywhere. H100, 2026-12-06 (`REPS=10 scripts/gpu-ab.sh OUT
// LUMINAL_CUDA_ROW_Q8=1 smollm2-q4_1 lt-q4_0`): SmolLM2 q4_1 decode 0.971 -> 0.827 ms (530 -> 469
// kernels), 8B q4_0 2.804 -> 2.780 ms (657 -> 617 kernels).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/cuda/row_gen.hpp"
#include "luminal/cuda/row_prologue.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/row_rule.hpp"

namespace luminal::cuda {

namespace {

using rows::match_online;
using rows::Online;
using rows::RowGen;

const OpDef kRow{"cuda.Row"};
// A row kernel whose result goes out as Q8_1 blocks (in place of cuda.Row + cuda.QuantizeQ8:
// one launch fewer, the f32 row never stored): below their 1.5 in the seed.
const OpDef kRowQ8{.name = "cuda.RowQ8", .seed_cost = 1.1};
constexpr int64_t kMaxRowQ8 = 8192;  // its f32 row in shared memory: 32 KiB

/// Registers a thread may spend on kept values (of the 64 the launch bounds allow; more spills).
constexpr int kMaxCachedRegs = 40;

/// The chunked form (16-byte loads and stores, rows kept packed, 512 threads so two blocks share
/// an SM) is the default where it applies; LUMINAL_CUDA_ROW_CHUNKS=0 turns it off (to compare).
bool chunks_enabled() { return env_switch_on("LUMINAL_CUDA_ROW_CHUNKS"); }

/// cuda.RowQ8 quantizes four 32-value blocks a warp at a time, eight lanes a block
/// (lmn_q8_1_oct), where one warp a block did them one after another: a row has one block, so
/// those chains were most of its time. LUMINAL_CUDA_ROW_Q8_OCT=0: a warp a block (to compare).
bool oct_quantize() { return env_switch_on("LUMINAL_CUDA_ROW_Q8_OCT"); }

/// See gen_row_node's chunked form: loads read by the last pass alone kept in registers.
bool prefetch_enabled() { return env_switch_on("LUMINAL_CUDA_ROW_PREFETCH"); }

int pow2_ceil(int64_t x) {
  int p = 1;
  while (p < x && p < 1024)
    p <<= 1;
  return p;
}

/// How row_code writes a row: `threads` > 0 forces the block's thread count (a row computed
/// inside another kernel, which launched them); `store` names a shared array the results go to,
/// indexed by the element (empty: the node's output, out[rb + l]); `inputs` names the inputs
/// (empty: in<c>).
struct RowOptions {
  int threads = 0;
  std::string store = {};
  std::vector<std::string> inputs = {};
};

/// The statements computing one row (its first flat index `rb`, its length `L`: both declared
/// by the caller) of row node `n`, and the form's thread count and shared reduction slots
/// (`lmn_red`, declared by the caller). `q8`: the program's result is f32 (cuda.RowQ8).
struct RowCode {
  std::string body;
  int T = 32;
  int red_slots = 0;
};
RowCode row_code(const LlirNode& n, const GenContext& ctx, Codegen& cg, bool q8,
                 const RowOptions& opt) {
  const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
  if (!prog) throw Error(std::string(n.op->name) + ": the node has no FusedProgram payload");
  prog->validate();
  const DType rt = q8 ? DType::F32 : n.attrs.dtype;  // the program's result
  if (prog->insts.back().dtype != rt)
    throw Error(std::string(n.op->name) + ": the program's result dtype is not " +
                std::string(name(rt)));
  if (q8 &&
      (n.attrs.dtype != DType::Q8_1 || n.attrs.shape.empty() || !n.attrs.shape.back().is_const() ||
       n.attrs.shape.back().as_const() % 32 != 0 || n.attrs.shape.back().as_const() > kMaxRowQ8))
    throw Error("cuda.RowQ8: writes q8_1 rows of a static length, a multiple of 32 up to " +
                std::to_string(kMaxRowQ8));
  if (n.attrs.shape.empty()) throw Error("cuda.Row: a row op needs an output of rank >= 1");
  RowGen g{.n = n,
           .prog = *prog,
           .cg = cg,
           .domain = n.attrs.shape,
           .views = {},
           .uniform = {},
           .stage = {},
           .cached = {},
           .chunked = {},
           .keep = nan_payload_kept(*prog),
           .keep_in = {}};
  g.inputs = opt.inputs;
  const Shape& D = g.domain;
  const Expr L = D.back();
  cg.require(L);
  for (const View& v : n.attrs.views) {
    std::optional<View> over = view_over(v, D);
    if (!over)
      throw Error("cuda.Row: input view " + v.to_string() + " has no form over the output shape " +
                  shape_to_string(D));
    g.views.push_back(*over);
  }
  // Levels and passes.
  const size_t N = prog->insts.size();
  rows::Levels lv = rows::levels(*prog, [&](int c) {
    return g.views[static_cast<size_t>(c)].strides.back() == Expr(0) || L == Expr(1);
  });
  g.uniform = std::move(lv.uniform);
  g.stage = std::move(lv.stage);
  const int passes = lv.passes;
  const std::vector<std::vector<int>>& reds = lv.reds;
  const int root = static_cast<int>(N) - 1;
  // Per pass, the reductions it computes and the element instructions it evaluates.
  std::vector<std::vector<int>> work(passes + 2);
  for (int p = 1; p <= passes; ++p) {
    std::vector<int> targets;
    for (int r : reds[p])
      targets.push_back(prog->insts[r].a);
    work[p] = g.closure(targets);
  }
  work[passes + 1] = g.closure({root});
  // Loads read in more than one loop are kept in registers when the row fits.
  const int nloads = static_cast<int>(n.attrs.views.size());
  std::vector<int> uses(nloads, 0);
  for (int p = 1; p <= passes + 1; ++p) {
    std::vector<bool> seen(nloads, false);
    for (int j : work[p]) {
      const FusedInst& in = prog->insts[j];
      if (in.op == FusedOpcode::Load && !seen[in.a]) {
        seen[in.a] = true;
        ++uses[in.a];
      }
    }
  }
  g.keep_in.assign(nloads, false);
  for (size_t j = 0; j < N; ++j)
    if (prog->insts[j].op == FusedOpcode::Load && g.keep[j]) g.keep_in[prog->insts[j].a] = true;
  g.cached.assign(nloads, -1);
  int ncached = 0;
  for (int c = 0; c < nloads; ++c)
    if (uses[c] > 1) g.cached[c] = ncached++;
  const Interval lb = L.bounds(ctx.facts);
  const int64_t lmax = lb.hi;
  // RowQ8: enough warps that each quantizes at most 4 of the row's 32-value blocks.
  const int q8_threads =
      q8 ? static_cast<int>(std::min<int64_t>(512, pow2_ceil(std::max<int64_t>(32, lmax / 4))))
         : 32;
  // Chunks: every kept load contiguous and aligned along the row, V from the widest dtype's 16
  // bytes; kept packed (a 16-byte chunk of bf16 is 4 registers), so long rows fit with 512
  // threads and two blocks share an SM (one's loads overlap the other's math).
  if (chunks_enabled() && ncached > 0 && L.is_const() && lmax > 0) {
    int widest = 1;
    for (int c = 0; c < nloads; ++c)
      if (g.cached[c] >= 0) widest = std::max(widest, size_bytes(n.input_dtypes.at(c)));
    widest = std::max(widest, size_bytes(rt));  // the chunk's store too
    const int v = 16 / widest;
    bool ok = v > 1;
    int regs = 0;  // per chunk, every kept load
    for (int c = 0; c < nloads && ok; ++c) {
      if (g.cached[c] < 0) continue;
      ok = aligned_chunks(g.views[c], static_cast<int>(D.size()) - 1, v);
      regs += std::max(1, v * size_bytes(n.input_dtypes.at(c)) / 4);
    }
    if (ok) {
      const int64_t chunks = lmax / v;
      int t =
          opt.threads > 0 ? opt.threads : std::clamp(pow2_ceil((chunks + 7) / 8), q8_threads, 512);
      int64_t kc = (chunks + t - 1) / t;
      if (kc * regs > kMaxCachedRegs && opt.threads == 0) {
        t = 1024;
        kc = (chunks + t - 1) / t;
      }
      if (kc * regs <= 48) {
        g.V = v;
        g.T = t;
        g.K = static_cast<int>(kc);
        g.use_cache = true;
        // A load the last pass alone reads (an RMSNorm's weight) is kept too where registers
        // allow: it is then read before the reductions, not after them, and its latency hides
        // behind theirs. LUMINAL_CUDA_ROW_PREFETCH=0: read where it is used (to compare).
        for (int c = 0; c < nloads && passes > 0 && prefetch_enabled(); ++c) {
          const int bytes = size_bytes(n.input_dtypes.at(c));
          const int extra = std::max(1, v * bytes / 4);
          if (g.cached[c] >= 0 || uses[c] != 1 || v * bytes > 16 ||
              kc * (regs + extra) > kMaxCachedRegs ||
              !aligned_chunks(g.views[c], static_cast<int>(D.size()) - 1, v))
            continue;
          g.cached[c] = ncached++;
          regs += extra;
        }
      }
    }
  }
  // Otherwise one element at a time: kept in registers when they fit, else re-read every pass.
  if (g.V == 1 && lmax != INT64_MAX && lmax > 0) {
    g.T = opt.threads > 0 ? opt.threads : std::clamp(pow2_ceil((lmax + 7) / 8), q8_threads, 1024);
    g.K = static_cast<int>((lmax + g.T - 1) / g.T);
    int regs = 0;  // per kept element: f64 takes two registers
    for (int c = 0; c < nloads; ++c)
      if (g.cached[c] >= 0) regs += n.input_dtypes.at(c) == DType::F64 ? 2 : 1;
    g.use_cache = ncached > 0 && g.K * regs <= kMaxCachedRegs;
  } else if (g.V == 1) {
    g.T = opt.threads > 0 ? opt.threads : 1024;
  }
  if (!g.use_cache) {
    // Without a cache every loop reads its loads: K does not matter.
    if (lmax != INT64_MAX && lmax > 0 && ncached > 0) g.T = opt.threads > 0 ? opt.threads : 1024;
    g.cached.assign(nloads, -1);
  }
  // In the chunked form, loads that are not kept but contiguous and aligned along the row are read
  // a chunk at a time too.
  g.chunked.assign(nloads, false);
  if (g.chunked_form())
    for (int c = 0; c < nloads; ++c) {
      const int bytes = g.V * size_bytes(n.input_dtypes.at(c));
      g.chunked[c] = g.cached[c] < 0 && bytes <= 16 &&
                     aligned_chunks(g.views[c], static_cast<int>(D.size()) - 1, g.V);
    }
  const std::string& I = cg.idx();
  const std::string T = std::to_string(g.T);

  // Row-uniform instructions, emitted once each as soon as their stage is reached.
  std::vector<bool> emitted(N, false);
  auto uniform_code = [&](int upto_stage) {
    std::string s;
    for (size_t j = 0; j < N; ++j) {
      const FusedInst& in = prog->insts[j];
      if (!g.uniform[j] || emitted[j] || is_row_reduce(in.op) || g.stage[j] > upto_stage) continue;
      emitted[j] = true;
      std::string rhs;
      if (in.op == FusedOpcode::Load) {
        const std::string off = cg.view_offset(g.views[in.a], "rb", "u" + std::to_string(j), s);
        rhs = "ld_" + dtype_tag(in.dtype) + "(" + g.in(in.a) + "[" + off + "])";
      } else {
        rhs = inst_code(in);
      }
      s += "    const C_" + dtype_tag(in.dtype) + " v" + std::to_string(j) + " = " + rhs + ";\n";
    }
    return s;
  };

  std::string body;
  body += uniform_code(0);
  if (g.chunked_form()) {
    for (int c = 0; c < nloads; ++c) {
      if (g.cached[c] < 0) continue;
      const DType t = n.input_dtypes.at(static_cast<size_t>(c));
      const std::string vt = vector_type(g.V * size_bytes(t));
      const std::string cs = "c" + std::to_string(c);
      std::string fill = "      const " + I + " i = rb + l0;\n";
      const std::string off = cg.view_offset(g.views[c], "i", "o" + std::to_string(c), fill);
      fill += "      " + cs + "[k] = *reinterpret_cast<const " + vt + "*>(" + g.in(c) + " + " +
              off + ");\n";
      body += "    " + vt + " " + cs + "[" + std::to_string(g.K) + "];\n";
      body += g.chunk_loop(fill);
    }
  } else if (g.use_cache) {
    for (int c = 0; c < nloads; ++c) {
      if (g.cached[c] < 0) continue;
      // The load instruction's dtype.
      DType t = n.input_dtypes.at(static_cast<size_t>(c));
      const std::string tag = dtype_tag(t);
      std::string inner;
      const std::string off = cg.view_offset(g.views[c], "i", "o" + std::to_string(c), inner);
      inner += "      c" + std::to_string(c) + "[k] = " + load_fn(t, g.keep_in[c]) + "(" + g.in(c) +
               "[" + off + "]);\n";
      body += "    C_" + tag + " c" + std::to_string(c) + "[" + std::to_string(g.K) + "];\n";
      body += g.loop(inner);
    }
  }
  int red_slot = 0;
  // Rows re-read from memory (too long to keep) with softmax's max-then-sum shape: the online
  // form finds the max and the sum of exponentials in one pass (the sum rescaled whenever the
  // running max grows), so the row is read twice, not three times.
  std::optional<Online> online;
  if (!g.use_cache && passes == 2) online = match_online(*prog, reds, g.uniform);
  int first_pass = 1;
  if (online) {
    const Online& o = *online;
    const std::string c = "v" + std::to_string(o.c);
    auto inst = [&](int j) {
      return "      const C_f32 v" + std::to_string(j) + " = " +
             inst_code(prog->insts[j], g.keep[j]) + ";\n";
    };
    // The term at the running max M: the program's own instructions with m bound to M.
    const std::string term = "      {\n      const C_f32 v" + std::to_string(o.m) + " = M;\n" +
                             inst(o.neg) + inst(o.diff) + inst(o.scaled) + inst(o.e) +
                             "      S = S + (double)v" + std::to_string(o.e) + ";\n      }\n";
    const std::string ninf = "__int_as_float((int)0xFF800000)";
    // S rescaled from the running max `from` to Mn.
    auto rescale = [&](const std::string& sum, const std::string& from) {
      return sum + " * exp2(((double)" + from + " - (double)Mn) * (double)" + c + ")";
    };
    body += "    float M = " + ninf + ";\n    double S = 0.0;\n";
    const std::string step = "      const float Mn = lmn_maxn(M, v" + std::to_string(o.u) + ");\n" +
                             "      if (Mn != M) {\n        if (M != " + ninf +
                             ") S = " + rescale("S", "M") + ";\n        M = Mn;\n      }\n" +
                             // A thread that has seen only -inf adds nothing (never -inf - -inf).
                             "      if (M != " + ninf + ") {\n" + term + "      }\n";
    body += g.loop(g.element_code(g.closure({o.u})) + step);
    // Merging two (max, sum) pairs: each sum rescaled to the larger max; a -inf max adds 0.
    const std::string merge =
        "    {\n      const float Mn = lmn_maxn(M, M2);\n      const double a = M == " + ninf +
        " ? 0.0 : " + rescale("S", "M") + ";\n      const double b = M2 == " + ninf +
        " ? 0.0 : " + rescale("S2", "M2") + ";\n      M = Mn;\n      S = a + b;\n    }\n";
    body +=
        "    for (int s = 16; s > 0; s >>= 1) {\n      const float M2 = "
        "__shfl_xor_sync(0xffffffffu, "
        "M, s);\n      const double S2 = __shfl_xor_sync(0xffffffffu, S, s);\n" +
        merge + "    }\n";
    body +=
        "    if ((threadIdx.x & 31) == 0) {\n      lmn_red[0][threadIdx.x >> 5] = M;\n"
        "      lmn_red[1][threadIdx.x >> 5] = S;\n    }\n    __syncthreads();\n";
    body += "    M = (float)lmn_red[0][0];\n    S = lmn_red[1][0];\n";
    body += "    for (int w = 1; w < " + std::to_string(std::max(1, g.T / 32)) +
            "; ++w) {\n      const float M2 = (float)lmn_red[0][w];\n      const double S2 = "
            "lmn_red[1][w];\n" +
            merge + "    }\n";
    // The reference's NaNs: a NaN max is its canonical NaN, and a fully masked row's sum is NaN
    // (each of its terms is -inf - -inf).
    body += "    if (M != M) M = __int_as_float(0x7FC00000);\n";
    body += "    if (M == " + ninf + ") S = __longlong_as_double(0x7FF8000000000000LL);\n";
    body += "    const C_f32 v" + std::to_string(o.m) + " = rd_f32(M);\n";
    body += "    const C_f32 v" + std::to_string(o.s) + " = rd_f32(S);\n";
    red_slot = 2;
    body += uniform_code(1);
    body += uniform_code(2);
    first_pass = 3;
  }
  for (int p = first_pass; p <= passes; ++p) {
    // Every row reduction is over a float of at most 32 bits (the rule leaves f64 out). Max runs
    // in float with NaN propagating (one max.NaN instruction; its NaN is made the reference's
    // once, after the block's reduction). Sums accumulate in double; in the chunked form a
    // chunk's V values are summed in f32 first (one conversion to double per chunk).
    std::string acc_inner, acc_head, acc_tail;
    for (int r : reds[p]) {
      const FusedInst& in = prog->insts[r];
      if (in.dtype == DType::F64)  // (the row rule leaves f64 reductions out)
        throw Error("cuda.Row: an f64 row reduction is not supported");
      const std::string acc = "a" + std::to_string(r), x = "v" + std::to_string(in.a);
      if (in.op == FusedOpcode::RowMax) {
        body += "    float " + acc + " = __int_as_float((int)0xFF800000);\n";
        acc_inner += "      " + acc + " = lmn_maxn(" + acc + ", " + x + ");\n";
      } else if (g.chunked_form()) {
        const std::string part = "p" + std::to_string(r);
        body += "    double " + acc + " = 0.0;\n";
        acc_head += "      float " + part + " = 0.0f;\n";
        acc_inner += "      " + part + " = " + part + " + " + x + ";\n";
        acc_tail += "      " + acc + " = " + acc + " + (double)" + part + ";\n";
      } else {
        body += "    double " + acc + " = 0.0;\n";
        acc_inner += "      " + acc + " = " + acc + " + (double)" + x + ";\n";
      }
    }
    body +=
        g.loop(g.element_code(work[p]) + acc_inner, g.chunk_loads(work[p]) + acc_head, acc_tail);
    // The block's reduction of each accumulator: a warp butterfly, then one slot per warp.
    for (int r : reds[p]) {
      const FusedInst& in = prog->insts[r];
      const bool mx = in.op == FusedOpcode::RowMax;
      const std::string acc = "a" + std::to_string(r);
      auto comb = [&](const std::string& x, const std::string& y) {
        return mx ? "lmn_maxn(" + x + ", " + y + ")" : x + " + " + y;
      };
      const std::string slot = "lmn_red[" + std::to_string(red_slot++) + "]";
      body += "    for (int s = 16; s > 0; s >>= 1) " + acc + " = " +
              comb(acc, "__shfl_xor_sync(0xffffffffu, " + acc + ", s)") + ";\n";
      body += "    if ((threadIdx.x & 31) == 0) " + slot + "[threadIdx.x >> 5] = " + acc + ";\n";
      body += "    __syncthreads();\n";
      body += "    " + acc + " = " + (mx ? "(float)" : "") + slot + "[0];\n";
      body += "    for (int w = 1; w < " + std::to_string(std::max(1, g.T / 32)) + "; ++w) " + acc +
              " = " + comb(acc, (mx ? "(float)" : "") + slot + "[w]") + ";\n";
      if (mx)
        body += "    if (" + acc + " != " + acc + ") " + acc + " = __int_as_float(0x7FC00000);\n";
      body += "    const C_" + dtype_tag(in.dtype) + " v" + std::to_string(r) + " = rd_" +
              dtype_tag(in.dtype) + "(" + acc + ");\n";
    }
    body += uniform_code(p);
  }
  // The result.
  const std::string ot = dtype_tag(rt);
  {
    // The result is stored from its unrounded value when its instruction ends in a rounding to
    // the output dtype (st(rd(x)) == st(x)): one conversion instead of two.
    std::vector<int> order = work[passes + 1];
    std::string value = "v" + std::to_string(root);
    const FusedInst& last = prog->insts[root];
    if (!order.empty() && order.back() == root && last.op != FusedOpcode::Load) {
      bool rounded = false;
      const std::string e = unrounded_code(last, &rounded);
      if (rounded) {
        order.pop_back();
        value = e;
      }
    }
    const std::string code = g.element_code(order);
    if (g.chunked_form()) {
      // A chunk's results go out in one aligned vector store.
      const std::string vt = vector_type(g.V * size_bytes(rt));
      const std::string head = g.chunk_loads(order) + "      union { " + vt + " v; S_" + ot +
                               " e[" + std::to_string(g.V) + "]; } so;\n";
      const std::string tail = "      *reinterpret_cast<" + vt + "*>(" +
                               (opt.store.empty() ? "out + rb" : opt.store) + " + l0) = so.v;\n";
      body += g.loop(code + "      so.e[j] = st_" + ot + "(" + value + ");\n", head, tail);
    } else {
      body += g.loop(code + "      " + (opt.store.empty() ? "out[i]" : opt.store + "[l]") +
                     " = st_" + ot + "(" + value + ");\n");
    }
  }
  RowCode rc;
  rc.body = std::move(body);
  rc.T = g.T;
  rc.red_slots = red_slot;
  return rc;
}

/// RowQ8's store: the f32 row in shared `lmn_rowq` (its T threads' results, after a
/// __syncthreads) written as Q8_1 blocks at `orow` (split where int_value is 1), a warp a block
/// of 32 or four blocks a warp (quant_dp4a_device.cpp's quantizers).
std::string q8_blocks_code(const LlirNode& n, int T, const std::string& orow) {
  const std::string nb = std::to_string(n.attrs.shape.back().as_const() / 32);
  std::string body = "    __syncthreads();\n    {\n      const int lane = threadIdx.x & 31;\n";
  body += "      unsigned char* orow = " + orow + ";\n";
  if (oct_quantize()) {
    // Four blocks a warp at a time, eight lanes a block (lmn_q8_1_oct: the same bytes).
    body += "      for (int b0 = (threadIdx.x >> 5) * 4; b0 < " + nb +
            "; b0 += " + std::to_string(T / 32 * 4) + ") {\n";
    body += "        const int b = b0 + (lane >> 3);\n        const bool live = b < " + nb +
            ";\n        const float4 v = live ? *reinterpret_cast<const float4*>(lmn_rowq + b * "
            "32 + (lane & 7) * 4) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n";
    body += n.attrs.int_value == 1
                ? "        lmn_q8_1_oct_to(v.x, v.y, v.z, v.w, orow + b * 32, orow + " + nb +
                      " * 32 + b * 4, lane, live);\n"
                : "        lmn_q8_1_oct(v.x, v.y, v.z, v.w, orow + b * 36, lane, live);\n";
    body += "      }\n";
  } else {
    body += "      for (int b = threadIdx.x >> 5; b < " + nb + "; b += " + std::to_string(T / 32) +
            ")\n";
    body += n.attrs.int_value == 1
                ? "        lmn_q8_1_warp_to(lmn_rowq[b * 32 + lane], orow + b * 32, orow + " + nb +
                      " * 32 + b * 4, lane);\n"
                : "        lmn_q8_1_warp(lmn_rowq[b * 32 + lane], orow + b * 36, lane);\n";
  }
  body += "    }\n";
  return body;
}

/// `q8`: cuda.RowQ8, the f32 result row kept in shared memory and written as Q8_1 blocks (split
/// when int_value is 1), as cuda.QuantizeQ8 writes them.
KernelGen gen_row_node(const LlirNode& n, const GenContext& ctx, bool q8) {
  Codegen cg(n, ctx);
  const RowCode rc = row_code(n, ctx, cg, q8, RowOptions{.store = q8 ? "lmn_rowq" : ""});
  std::string body = rc.body;
  const int T = rc.T;
  const int red_slot = rc.red_slots;
  const std::string& I = cg.idx();
  const Shape& D = n.attrs.shape;
  const Expr L = D.back();
  const Expr count = numel(D);
  const auto* prog = static_cast<const FusedProgram*>(n.attrs.payload.get());
  const size_t N = prog->insts.size();
  const DType rt = q8 ? DType::F32 : n.attrs.dtype;
  if (q8) {
    const std::string nb = std::to_string(n.attrs.shape.back().as_const() / 32);
    body += q8_blocks_code(n, T, "out + (long long)row * " + nb + " * 36");
  }
  body += "    __syncthreads();\n";  // the shared slots are reused by the next row

  // At most 64 registers a thread (65536 / 1024), so 1024 / T blocks fit an SM.
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(T) + ", " +
                  std::to_string(std::max(1, 1024 / T)) + ") LMN_ENTRY(lmn_row)(" + cg.params() +
                  ") {\n";
  const std::string lcode = cg.c(L), ncode = cg.c(count);
  std::string head = "  __shared__ double lmn_red[" + std::to_string(std::max(red_slot, 1)) +
                     "][32];\n  const " + I + " L = " + lcode + ";\n  const " + I +
                     " R = L > 0 ? " + ncode + " / L : 0;\n";
  if (q8)
    head += "  __shared__ __align__(16) float lmn_rowq[" +
            std::to_string(n.attrs.shape.back().as_const()) + "];\n";
  k += cg.dims_prologue() + head + "  for (" + I +
       " row = blockIdx.x; row < R; row += gridDim.x) {\n" + "    const " + I + " rb = row * L;\n" +
       body + "  }\n}\n";
  KernelGen out;
  out.source = Codegen::unit(q8 ? quant_device_source() + k : k);
  const Expr rows = ceil_div(count, max(L, Expr(1)));
  const int per_sm = std::max(1, 2048 / T);
  out.launches.push_back(
      Launch{"lmn_row", T, {min(rows, Expr(int64_t{ctx.sm_count} * per_sm)), 1, 1}});
  int64_t in_bytes = 0;
  for (DType t : n.input_dtypes)
    in_bytes += size_bytes(t);
  out.bytes = count * (in_bytes + size_bytes(rt));
  out.flops = count * static_cast<int64_t>(N);
  return out;
}

KernelGen gen_row(const LlirNode& n, const GenContext& ctx) { return gen_row_node(n, ctx, false); }

KernelGen gen_row_q8(const LlirNode& n, const GenContext& ctx) {
  return gen_row_node(n, ctx, true);
}

std::vector<Rule> rules() { return row_rules(&kRow, cuda_fused_op(), "cuda"); }

/// QuantizeQ8 nodes: the rules below replace one that reads a cuda.Row's output.
Pattern quantize_pattern() {
  return Pattern::any_op([](const OpDef* op) { return op == quantize_q8_op(); }).bind("q");
}

/// The cuda.Row e-nodes whose whole output QuantizeQ8 node `q` (attributes `qa`) reads
/// contiguously, in rows of its length; none when `q` reads anything else.
std::vector<ENodeId> rows_read_whole(const EGraph& eg, ENodeId q, const Attrs& qa) {
  if (qa.shape.empty() || qa.views.size() != 1 || !qa.views[0].is_contiguous()) return {};
  const ClassId c = eg.find(eg.node(q).children[0]);
  if (!(numel(eg.shape(c)) == numel(qa.shape))) return {};
  std::vector<ENodeId> rows;
  for (ENodeId r : eg.nodes_of(c))
    if (!eg.is_removed(r) && eg.node(r).op == &kRow && !eg.attrs_of(r).shape.empty() &&
        eg.attrs_of(r).shape.back() == qa.shape.back())
      rows.push_back(r);
  return rows;
}

/// A cuda.Row writing bf16 for QuantizeQ8(Row(...)) to BF16 (cuda.QGemmBF16's activation rows,
/// qgemm_bf16.cpp): the row program with a cast to bf16 appended, the same bits (both round to
/// nearest even), one kernel instead of two (an 8B prefill's norms before q/k/v and gate/up: 64 a
/// step).
Rule row_bf16_rule() {
  return Rule{"cuda.row-bf16", quantize_pattern(), nullptr, [](const Match& m, EGraph& eg) {
                const ENodeId q = m.node("q");
                const Attrs qa = eg.attrs_of(q);
                if (qa.dtype != DType::BF16 || qa.int_value != 0) return;
                for (ENodeId r : rows_read_whole(eg, q, qa)) {
                  Attrs a = eg.attrs_of(r);
                  const auto* prog = dynamic_cast<const FusedProgram*>(a.payload.get());
                  if (!prog || prog->insts.empty() || a.dtype != DType::F32 ||
                      static_cast<int>(prog->insts.size()) >= kFusedMaxInsts)
                    continue;
                  std::vector<FusedInst> insts = prog->insts;
                  FusedInst cast;
                  cast.op = FusedOpcode::Cast;
                  cast.dtype = DType::BF16;
                  cast.a = static_cast<int32_t>(insts.size()) - 1;
                  insts.push_back(cast);
                  const std::vector<ClassId> children = eg.node(r).children;
                  a.dtype = DType::BF16;
                  a.shape = qa.shape;
                  a.payload = std::make_shared<FusedProgram>(std::move(insts));
                  eg.merge(eg.add(&kRow, a, children), m.root);
                }
              }};
}

/// cuda.RowQ8 for QuantizeQ8(Row(...)) to Q8_1: QuantizeQ8 reading a cuda.Row's whole output
/// contiguously, rows of the same length (at most kMaxRowQ8); and row_bf16_rule (these run
/// after the library rules that add the QuantizeQ8 nodes).
std::vector<Rule> row_q8_rules() {
  std::vector<Rule> out;
  // With LUMINAL_CUDA_ROW_BF16=1 until a GPU has run it (rules, not conditions: the compile
  // cache's key names them)
  if (env_opt_in("LUMINAL_CUDA_ROW_BF16")) out.push_back(row_bf16_rule());
  // Unless LUMINAL_CUDA_ROW_Q8=0
  if (!env_switch_on("LUMINAL_CUDA_ROW_Q8")) return out;
  out.push_back(Rule{"cuda.row-q8", quantize_pattern(), nullptr, [](const Match& m, EGraph& eg) {
                       const ENodeId q = m.node("q");
                       const Attrs qa = eg.attrs_of(q);
                       if (qa.dtype != DType::Q8_1 || qa.shape.empty() ||
                           !qa.shape.back().is_const() || qa.shape.back().as_const() > kMaxRowQ8)
                         return;
                       for (ENodeId r : rows_read_whole(eg, q, qa)) {
                         Attrs a = eg.attrs_of(r);
                         const std::vector<ClassId> children = eg.node(r).children;
                         a.dtype = DType::Q8_1;
                         a.shape = qa.shape;
                         a.int_value = qa.int_value;
                         eg.merge(eg.add(&kRowQ8, a, children), m.root);
                       }
                     }});
  return out;
}

}  // namespace

std::string row_into_shared(const LlirNode& row, const GenContext& ctx, Codegen& cg, int threads,
                            const std::string& dest, const std::vector<std::string>& inputs) {
  const Shape& D = row.attrs.shape;
  const bool q8 = row.op == &kRowQ8;
  if ((row.op != &kRow && !q8) || D.empty() || !D.back().is_const() || !(numel(D) == D.back()) ||
      inputs.size() != row.input_dtypes.size() || inputs.size() != row.attrs.views.size() ||
      (q8 && (row.attrs.dtype != DType::Q8_1 || D.back().as_const() % 32 != 0 ||
              D.back().as_const() > kMaxRowQ8)))
    throw Error(std::string(row.op ? row.op->name : "a node") +
                ": a row computed inside a kernel must be one cuda.Row (or cuda.RowQ8) row of a "
                "constant length, with a name for each input");
  const RowCode rc =
      row_code(row, ctx, cg, q8,
               RowOptions{.threads = threads, .store = q8 ? "lmn_rowq" : dest, .inputs = inputs});
  const std::string& I = cg.idx();
  const std::string len = std::to_string(D.back().as_const());
  return "  {\n    __shared__ double lmn_red[" + std::to_string(std::max(rc.red_slots, 1)) +
         "][32];\n" +
         (q8 ? "    __shared__ __align__(16) float lmn_rowq[" + len + "];\n" : std::string()) +
         "    const " + I + " rb = 0;\n    const " + I + " L = " + len + ";\n" + rc.body +
         (q8 ? q8_blocks_code(row, rc.T, dest) : std::string()) + "    __syncthreads();\n  }\n";
}

const OpDef* cuda_row_op() { return &kRow; }
const OpDef* cuda_row_q8_op() { return &kRowQ8; }

void register_row_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp row{&kRow, "cuda.rows", rules, gen_row};
  ops.push_back(&row);
}

void register_row_q8_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp row_q8{&kRowQ8, "cuda.rows-q8", row_q8_rules, gen_row_q8};
  ops.push_back(&row_q8);
}

}  // namespace luminal::cuda
