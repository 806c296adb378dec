#pragma once
// Model blocks for equivalence fuzzing (tests/support/equivalence.hpp): small graphs shaped like
// the parts of a transformer, each a FuzzGraph with its inputs' ranges, outputs' error bounds and
// dyn points. Their search spaces must hold at least kModelPrograms distinct programs, and every
// one must match the reference.
//
//   swiglu_block(dt)          SwiGLU MLP (f32 or f16)
//   rmsnorm_block()           RMSNorm and a projection
//   attention_block(rope)     GQA attention with a KV cache written by scatter and read back by
//                             gather (optionally with RoPE)
//   quantized_block(t)        a projection by block-quantized weights of type t and a tied
//                             embedding (gather rows, then the LM head from the same blocks)
//   router_block(renorm, form) a mixture of experts' router top-k (nn::router_topk: the repeated
//                             argmax with the pairwise-rank form its alternative) over rows with
//                             ties and values below -1
//   sentinel_graph(wrong)     a tiny graph and a slightly wrong copy, to check the check itself
//
//   CheckOptions o = model_options();  // kModelPrograms, required
//   o.backend = &backend;
//   check_graph(attention_block(true), o);
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "luminal/luminal.hpp"
#include "luminal/nn/moe.hpp"
#include "support/equivalence.hpp"
#include "support/random_graph.hpp"

namespace luminal::testing {

/// Distinct programs every model block's search space must hold (all are checked).
inline constexpr int kModelPrograms = 50;

/// Adds a float input with values uniform in [lo, hi].
inline Tensor model_input(FuzzGraph& fg, const std::string& label, const Shape& shape, DType dt,
                          double lo, double hi) {
  FuzzInput in;
  in.label = label;
  in.dtype = dt;
  in.shape = shape;
  in.lo = lo;
  in.hi = hi;
  fg.inputs.push_back(in);
  return fg.graph.tensor(label, detail::dims_of(shape), dt);
}

/// Tolerance of a block output: C * sqrt(k) epsilons, absolute and relative.
inline FuzzOutput block_output(const Tensor& t, const std::string& label, double k, double c) {
  t.output(label);
  const double e = c * std::sqrt(k);
  return FuzzOutput{label, t.dtype(), e, e};
}

/// x @ w_gate, x @ w_up, silu(gate) * up, @ w_down.
inline FuzzGraph swiglu_block(DType dt) {
  FuzzGraph fg;
  fg.name = "SwiGLU MLP " + std::string(name(dt));
  fg.seed = 1001;
  fg.graph.declare_dim("s", 1, 8);
  const Expr s = Expr::var("s");
  const int64_t d = 16, h = 32;
  Tensor x = model_input(fg, "x", {s, d}, dt, -1, 1);
  Tensor wg = model_input(fg, "w_gate", {d, h}, dt, -0.5, 0.5);
  Tensor wu = model_input(fg, "w_up", {d, h}, dt, -0.5, 0.5);
  Tensor wd = model_input(fg, "w_down", {h, d}, dt, -0.5, 0.5);
  Tensor y = (x.matmul(wg).silu() * x.matmul(wu)).matmul(wd);
  fg.outputs.push_back(block_output(y, "y", h, dt == DType::F32 ? 16 : 4));
  fg.dyn_points = {{{"s", 1}}, {{"s", 3}}, {{"s", 6}}};
  return fg;
}

/// rms_norm(x, w) and its projection.
inline FuzzGraph rmsnorm_block() {
  FuzzGraph fg;
  fg.name = "RMSNorm + projection";
  fg.seed = 1002;
  fg.graph.declare_dim("s", 1, 8);
  const Expr s = Expr::var("s");
  const int64_t d = 32, n = 24;
  const DType dt = DType::F32;
  Tensor x = model_input(fg, "x", {s, d}, dt, -1, 1);
  Tensor w = model_input(fg, "w_norm", {d}, dt, 0.5, 1.5);
  Tensor wp = model_input(fg, "w_proj", {d, n}, dt, -0.5, 0.5);
  Tensor normed = x.rms_norm(w, 1e-5);
  Tensor y = normed.matmul(wp);
  fg.outputs.push_back(block_output(normed, "normed", d, 16));
  fg.outputs.push_back(block_output(y, "y", d, 16));
  fg.dyn_points = {{{"s", 1}}, {{"s", 2}}, {{"s", 7}}};
  return fg;
}

/// Rotates the halves of the last axis of t [s, heads, hd] by the angles (cos/sin [s, 1, hd/2]).
inline Tensor rope(const Tensor& t, const Tensor& cos, const Tensor& sin, int64_t hd) {
  Tensor x1 = t.slice(-1, 0, hd / 2), x2 = t.slice(-1, hd / 2);
  return concat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
}

/// GQA attention (4 query heads, 2 kv heads, head_dim 8) over a KV cache of 16 slots: the new
/// tokens' K/V are scattered into the caches at `pos` (carried, so the scatter may run in
/// place), the first `c` slots are gathered back, causal mask, softmax, output projection.
inline FuzzGraph attention_block(bool with_rope) {
  FuzzGraph fg;
  fg.name = with_rope ? "GQA attention + KV cache + RoPE" : "GQA attention + KV cache";
  fg.seed = with_rope ? 1004 : 1003;
  Graph& g = fg.graph;
  g.declare_dim("s", 1, 4);
  g.declare_dim("c", 1, 16);
  const Expr s = Expr::var("s"), c = Expr::var("c");
  const int64_t heads = 4, kv_heads = 2, hd = 8, hidden = heads * hd, kv_dim = kv_heads * hd;
  const int64_t slots = 16;
  const DType dt = DType::F32;
  Tensor x = model_input(fg, "x", {s, hidden}, dt, -1, 1);
  Tensor wq = model_input(fg, "wq", {hidden, hidden}, dt, -0.5, 0.5);
  Tensor wk = model_input(fg, "wk", {hidden, kv_dim}, dt, -0.5, 0.5);
  Tensor wv = model_input(fg, "wv", {hidden, kv_dim}, dt, -0.5, 0.5);
  Tensor wo = model_input(fg, "wo", {hidden, hidden}, dt, -0.5, 0.5);
  Tensor k_cache = model_input(fg, "k_cache", {slots, kv_dim}, dt, -1, 1).persist();
  Tensor v_cache = model_input(fg, "v_cache", {slots, kv_dim}, dt, -1, 1).persist();
  FuzzInput pos_in;
  pos_in.label = "pos";
  pos_in.dtype = DType::I32;
  pos_in.shape = {s};
  pos_in.fill = [](const DynMap& dyn, int64_t n, std::mt19937_64&) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = static_cast<double>(dyn.at("c") - dyn.at("s") + i);
    return v;
  };
  fg.inputs.push_back(pos_in);
  Tensor pos = g.tensor("pos", {s}, DType::I32);

  Tensor q = x.matmul(wq).reshape({s, heads, hd});
  Tensor k_new = x.matmul(wk);
  Tensor v_new = x.matmul(wv);
  if (with_rope) {
    Tensor inv_freq = (g.arange(hd / 2, 0.0, 1.0, dt) * (-std::log(10000.0) / (hd / 2))).exp();
    Tensor angle = pos.cast(dt).unsqueeze(1) * inv_freq;  // [s, hd/2]
    Tensor cos = angle.cos().unsqueeze(1), sin = angle.sin().unsqueeze(1);
    q = rope(q, cos, sin, hd);
    k_new = rope(k_new.reshape({s, kv_heads, hd}), cos, sin, hd).reshape({s, kv_dim});
  }
  Tensor rows = pos.unsqueeze(1).expand({s, kv_dim});
  Tensor k_all = k_cache.scatter_elements(0, rows, k_new);
  Tensor v_all = v_cache.scatter_elements(0, rows, v_new);
  Tensor k_out = k_all.output("k_cache_out");
  Tensor v_out = v_all.output("v_cache_out");
  g.carry(k_out, k_cache);
  g.carry(v_out, v_cache);

  Tensor ctx = g.arange(c);
  Tensor k = k_all.index_select(0, ctx).reshape({c, kv_heads, hd}).permute({1, 0, 2}).unsqueeze(1);
  Tensor v = v_all.index_select(0, ctx).reshape({c, kv_heads, hd}).permute({1, 0, 2}).unsqueeze(1);
  Tensor qh = q.permute({1, 0, 2}).reshape({kv_heads, heads / kv_heads, s, hd});
  Tensor scores = qh.matmul(k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(hd)));
  Tensor mask = ctx.unsqueeze(0).gt(pos.unsqueeze(1));  // key after the query's position
  Tensor probs = scores.masked_fill(mask, -std::numeric_limits<double>::infinity()).softmax(-1);
  Tensor attn = probs.matmul(v).reshape({heads, s, hd}).permute({1, 0, 2}).reshape({s, hidden});
  Tensor y = attn.matmul(wo);

  const double k_all_tol = 16 * std::sqrt(static_cast<double>(hidden));
  fg.outputs.push_back(FuzzOutput{"k_cache_out", dt, k_all_tol, k_all_tol});
  fg.outputs.push_back(FuzzOutput{"v_cache_out", dt, k_all_tol, k_all_tol});
  fg.outputs.push_back(block_output(y, "y", static_cast<double>(hidden * slots), 16));
  fg.dyn_points = {{{"c", 5}, {"s", 1}}, {{"c", 8}, {"s", 3}}, {{"c", 16}, {"s", 4}}};
  return fg;
}

/// The largest |value| fill_valid_blocks (core/blocks.hpp) gives a block type.
inline double generated_block_max(DType t) {
  switch (t) {
    case DType::Q4_0: return 8.0 / 256;
    case DType::Q4_1: return 15.0 / 256 + 1.0 / 16;
    case DType::Q5_0: return 16.0 / 256;
    case DType::Q5_1: return 31.0 / 256 + 1.0 / 16;
    case DType::Q8_0: return 128.0 / 256;
    case DType::Q4_K: return 63.0 * 15 / 256 + 63.0 / 16;
    case DType::Q5_K: return 63.0 * 31 / 256 + 63.0 / 16;
    case DType::Q6_K: return 128.0 * 32 / 256;
    default: return 1;
  }
}

/// Block-quantized weights (persistent) of type t, k = 256: h = x + e[ids] (rows gathered from
/// the embedding table e), y = h @ w^T and logits = h @ e^T (the tied head reads e's blocks
/// again). Programs that quantize the activation to 8 bits (cpu.QMatmul) differ from the
/// reference by the rounding of h: each of the k terms by at most |w| |h| / 254 with independent
/// signs, so the tolerance is 6 sqrt(k) of that (Hoeffding: a false failure has probability
/// below 1e-7), about a tenth of the outputs' size: a wrong row or block still fails.
/// `rows` > 0: that many constant rows (decode's shape) instead of s in [1, 8].
inline FuzzGraph quantized_block(DType t, int64_t rows = 0) {
  FuzzGraph fg;
  fg.name = "quantized projection + tied embedding " + std::string(name(t)) +
            (rows > 0 ? ", " + std::to_string(rows) + " rows" : "");
  fg.seed = 1100 + static_cast<uint64_t>(t);
  if (rows == 0) fg.graph.declare_dim("s", 1, 8);
  const Expr s = rows > 0 ? Expr(rows) : Expr::var("s");
  const int64_t k = 256, n = 24, vocab = 12;
  Tensor x = model_input(fg, "x", {s, k}, DType::F32, -1, 1);
  Tensor e = model_input(fg, "embed", {vocab, k}, t, 0, 0).persist();
  Tensor w = model_input(fg, "w", {n, k}, t, 0, 0).persist();
  FuzzInput ids;
  ids.label = "ids";
  ids.dtype = DType::I32;
  ids.shape = {s};
  ids.lo = 0;
  ids.hi = vocab - 1;
  fg.inputs.push_back(ids);
  Tensor id = rows > 0 ? fg.graph.tensor("ids", {rows}, DType::I32)
                       : fg.graph.tensor("ids", {Dim("s")}, DType::I32);
  Tensor table = e.dequantize();
  Tensor h = x + table.embedding(id);
  Tensor y = h.matmul(w.dequantize().transpose(0, 1));
  Tensor logits = h.matmul(table.transpose(0, 1));
  const double wmax = generated_block_max(t);
  const double bound = 6 * std::sqrt(static_cast<double>(k)) * wmax * (1 + wmax) / 254;
  const double eps = epsilon(DType::F32);
  const double rtol = 64 * std::sqrt(static_cast<double>(k));
  y.output("y");
  logits.output("logits");
  fg.outputs.push_back(FuzzOutput{"y", DType::F32, bound / eps, rtol});
  fg.outputs.push_back(FuzzOutput{"logits", DType::F32, bound / eps, rtol});
  if (rows == 0) fg.dyn_points = {{{"s", 1}}, {{"s", 3}}, {{"s", 8}}};
  return fg;
}

/// Options for a model block: kModelPrograms programs, required. Set the backend(s) before use.
inline CheckOptions model_options() {
  CheckOptions o;
  o.programs = kModelPrograms;
  o.require_programs = true;
  return o;
}

/// nn::router_topk(p, 4) over p [s, 37]: ids exactly, the chosen values (renormalised or not)
/// within a division's rounding. Values are multiples of 1/8 in [-2, 1] (ties in every row, some
/// below -1) or, in every third row, uniform in [0, 1).
inline FuzzGraph router_block(bool renormalise, nn::TopKForm form = nn::TopKForm::Searched) {
  FuzzGraph fg;
  fg.name = std::string("router top-k") + (renormalise ? ", renormalised" : "") +
            (form == nn::TopKForm::Searched ? ""
             : form == nn::TopKForm::Ranks  ? ", ranks"
                                            : ", argmax");
  fg.seed = 1007;
  fg.graph.declare_dim("s", 1, 8);
  const Expr s = Expr::var("s");
  constexpr int64_t E = 37;
  FuzzInput in;
  in.label = "p";
  in.shape = {s, Expr(E)};
  in.fill = [](const DynMap&, int64_t n, std::mt19937_64& rng) {
    std::uniform_int_distribution<int> level(-16, 8);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = (i / E) % 3 == 2 ? u(rng) : level(rng) / 8.0;
    return v;
  };
  fg.inputs.push_back(in);
  Tensor p = fg.graph.tensor("p", {s, E});
  const nn::TopK top = nn::router_topk(p, 4, renormalise, form);
  top.ids.output("ids");
  top.weights.output("w");
  fg.outputs.push_back(FuzzOutput{"ids", DType::I32, 0, 0});
  fg.outputs.push_back(FuzzOutput{"w", DType::F32, 0, 4});
  fg.dyn_points = {{{"s", 1}}, {{"s", 3}}, {{"s", 8}}};
  return fg;
}

/// y = tanh(x @ w) + x and k = sum(i * j, -1); `wrong` scales y by 1 + 1e-4 and adds 1 to k.
inline FuzzGraph sentinel_graph(bool wrong) {
  FuzzGraph fg;
  fg.name = wrong ? "sentinel (wrong)" : "sentinel";
  fg.seed = 7;
  fg.graph.declare_dim("s", 1, 8);
  const Expr s = Expr::var("s");
  Tensor x = model_input(fg, "x", {s, 8}, DType::F32, -1, 1);
  Tensor w = model_input(fg, "w", {8, 8}, DType::F32, -0.5, 0.5);
  Tensor i = model_input(fg, "i", {s, 4}, DType::I32, -4, 4);
  Tensor j = model_input(fg, "j", {s, 4}, DType::I32, -4, 4);
  Tensor y = x.matmul(w).tanh() + x;
  Tensor k = (i * j).sum(-1);
  if (wrong) {
    y = y * 1.0001;
    k = k + 1;
  }
  fg.outputs.push_back(block_output(y, "y", 8, 16));
  k.output("k");
  fg.outputs.push_back(FuzzOutput{"k", DType::I32, 0, 0});
  fg.dyn_points = {{{"s", 2}}, {{"s", 5}}};
  return fg;
}

}  // namespace luminal::testing
