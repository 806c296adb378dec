#pragma once
// A Llama-style decoder built with the Tensor API, for benchmarks: token embedding, per layer
// RMSNorm -> GQA attention with RoPE and a KV cache (written by scatter, read by slicing the
// first c slots) -> residual -> RMSNorm -> SwiGLU MLP -> residual; final norm and LM head.
//
// Dims: s (tokens in this step) and c (context after it). Inputs: "ids" [s] (I32), weights per
// layer, and caches "k_cache.<l>"/"v_cache.<l>" [slots, kv_dim] carried from "k_cache_out.<l>"
// etc. Everything else comes from the dims inside the graph: positions c - s + i, the rope
// tables, the causal mask (key j visible to query i when j <= c - s + i, so a prefill on top of
// a filled cache is correct) and the cache rows the new keys and values are written to.
// Output: "logits" [s, vocab].
#include <cmath>
#include <string>

#include "luminal/luminal.hpp"

namespace bench {

struct TransformerConfig {
  int layers = 2;
  int hidden = 256;
  int ffn = 512;
  int heads = 8;
  int kv_heads = 4;
  int vocab = 1000;
  int slots = 64;  // KV cache rows
  double rope_base = 10000.0;
  luminal::DType dtype = luminal::DType::F32;
  int head_dim() const { return hidden / heads; }
  int kv_dim() const { return kv_heads * head_dim(); }
};

inline luminal::Tensor rope(const luminal::Tensor& x, const luminal::Tensor& cos,
                            const luminal::Tensor& sin, int heads, int head_dim) {
  // x [s, heads*head_dim] -> [s, heads, head_dim]; rotate the two halves.
  int half = head_dim / 2;
  auto xh = x.reshape({"s", heads, head_dim});
  auto x1 = xh.slice(2, 0, half);
  auto x2 = xh.slice(2, half, head_dim);
  auto c = cos.reshape({"s", 1, half});
  auto sn = sin.reshape({"s", 1, half});
  auto r = luminal::concat({x1 * c - x2 * sn, x2 * c + x1 * sn}, 2);
  return r.reshape({"s", heads * head_dim});
}

inline luminal::Tensor transformer(luminal::Graph& g, const TransformerConfig& cfg) {
  using luminal::DType;
  using luminal::Tensor;
  const int hd = cfg.head_dim(), kvd = cfg.kv_dim(), groups = cfg.heads / cfg.kv_heads;
  using luminal::Expr;
  const Expr s = Expr::var("s"), c = Expr::var("c");
  Tensor ids = g.tensor("ids", {"s"}, DType::I32);
  // Positions of this step's tokens, rope tables, causal mask and cache rows from the dims.
  Tensor pos = g.iota(c - s + Expr::z(), "s");  // I32 [s]
  Tensor inv_freq =
      (g.arange(hd / 2, 0.0, 1.0, DType::F32) * (-2.0 / hd * std::log(cfg.rope_base))).exp();
  Tensor angles = pos.cast(DType::F32).reshape({"s", 1}) * inv_freq.reshape({1, hd / 2});
  Tensor cos = angles.cos().cast(cfg.dtype);
  Tensor sin = angles.sin().cast(cfg.dtype);
  Tensor hidden_keys = pos.reshape({"s", 1}).lt(g.arange("c").reshape({1, "c"}));  // [s, c]
  Tensor mask = g.zeros({"s", "c"}, cfg.dtype).masked_fill(hidden_keys, -1e9);
  Tensor write_idx = g.iota((c - s) * kvd + Expr::z(), s * kvd).reshape({"s", kvd});
  Tensor x = g.tensor("embed", {cfg.vocab, cfg.hidden}, cfg.dtype).embedding(ids);
  for (int l = 0; l < cfg.layers; ++l) {
    auto w = [&](const std::string& n, std::vector<luminal::Dim> shape) {
      return g.tensor(n + "." + std::to_string(l), shape, cfg.dtype).persist();
    };
    Tensor h = x.rms_norm(w("attn_norm", {cfg.hidden}), 1e-5);
    Tensor q = rope(h.matmul(w("wq", {cfg.hidden, cfg.heads * hd})), cos, sin, cfg.heads, hd);
    Tensor k = rope(h.matmul(w("wk", {cfg.hidden, kvd})), cos, sin, cfg.kv_heads, hd);
    Tensor v = h.matmul(w("wv", {cfg.hidden, kvd}));
    Tensor k_cache = w("k_cache", {cfg.slots, kvd});
    Tensor v_cache = w("v_cache", {cfg.slots, kvd});
    Tensor k_new = k_cache.scatter_flat(write_idx, k).output("k_cache_out." + std::to_string(l));
    Tensor v_new = v_cache.scatter_flat(write_idx, v).output("v_cache_out." + std::to_string(l));
    g.carry(k_new, k_cache);
    g.carry(v_new, v_cache);
    // [c, kv_heads, hd] -> [kv_heads, c, hd]
    Tensor K = k_new.slice(0, 0, "c").reshape({"c", cfg.kv_heads, hd}).permute({1, 0, 2});
    Tensor V = v_new.slice(0, 0, "c").reshape({"c", cfg.kv_heads, hd}).permute({1, 0, 2});
    // q [s, heads, hd] -> [kv_heads, groups*s, hd]
    Tensor Q = q.reshape({"s", cfg.kv_heads, groups, hd})
                   .permute({1, 2, 0, 3})
                   .reshape({cfg.kv_heads, luminal::Expr(groups) * luminal::Expr::var("s"), hd});
    Tensor scores = Q.matmul(K.transpose(1, 2)) * (1.0 / std::sqrt(static_cast<double>(hd)));
    scores = scores.reshape({cfg.kv_heads, groups, "s", "c"}) + mask.reshape({1, 1, "s", "c"});
    Tensor att = scores.softmax(3).reshape(
        {cfg.kv_heads, luminal::Expr(groups) * luminal::Expr::var("s"), "c"});
    Tensor o = att.matmul(V)  // [kv_heads, groups*s, hd]
                   .reshape({cfg.kv_heads, groups, "s", hd})
                   .permute({2, 0, 1, 3})
                   .reshape({"s", cfg.heads * hd});
    x = x + o.matmul(w("wo", {cfg.heads * hd, cfg.hidden}));
    Tensor h2 = x.rms_norm(w("mlp_norm", {cfg.hidden}), 1e-5);
    Tensor gate = h2.matmul(w("w_gate", {cfg.hidden, cfg.ffn})).silu();
    Tensor up = h2.matmul(w("w_up", {cfg.hidden, cfg.ffn}));
    x = x + (gate * up).matmul(w("w_down", {cfg.ffn, cfg.hidden}));
  }
  Tensor head = g.tensor("lm_head", {cfg.hidden, cfg.vocab}, cfg.dtype).persist();
  return x.rms_norm(g.tensor("final_norm", {cfg.hidden}, cfg.dtype).persist(), 1e-5)
      .matmul(head)
      .output("logits");
}

}  // namespace bench
