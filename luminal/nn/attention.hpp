#pragma once
// Grouped-query attention over a KV cache carried between executes: q [s, heads, hd], k and v
// [s, kv_heads, hd] (after rope) and a cache of `slots` rows give o [s, heads * hd].
// Example: examples/snippets/nn/attention.cpp.
//
// Adds the inputs "<name>.k_cache" and "<name>.v_cache" ([slots, kv_heads * hd], persisted), the
// outputs "<name>.k_cache_out" / "<name>.v_cache_out" carried into them (Graph::carry, so the
// compiler may write the new rows in place), using the dims s (tokens in this step) and c
// (context after it). This step's keys and values go to rows c - s + i; the context is the
// first c rows. Key j is visible to query i when j <= c - s + i, so a prefill on top of a
// filled cache (a second chat turn, a long prompt in chunks) is correct. Each KV head is read
// by its group of query heads through a stride-0 axis ([kv_heads, group, c, hd]: never a copy),
// so the GEMM planner merges the group axis into M. Scores are scaled by 1/sqrt(hd) (or
// AttentionOptions::scale), soft-capped where asked (cap * tanh(score / cap), Gemma), masked
// with -inf and soft-maxed in f32 for 16-bit inputs. A sliding window (Gemma 3's local layers)
// also hides keys `window` or more positions before the query: a mask over the same cache, and
// with AttentionOptions::window_read the step reads only the rows some query of it can see
// (rows max(0, c - s - window + 1) .. c - 1: at most s + window - 1 of them, whatever c).
// With AttentionOptions::ring the cache of a windowed layer is a ring instead: R = slots / 2
// positions, position p in rows p mod R and p mod R + R, so its memory is 2 (window + s - 1) rows
// whatever the context (c may pass slots), and the rows a step reads are one slice from
// first mod R, as with window_read.
#include <optional>
#include <string>

#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal::nn {

struct AttentionOptions {
  std::optional<double> scale;    // default 1/sqrt(head_dim)
  std::optional<double> softcap;  // scores -> softcap * tanh(scores / softcap)
  std::optional<int64_t> window;  // key j visible to a query at position p when p - j < window
  /// With a window: read the cache from the first row a query of the step can see (its offset
  /// and length are expressions in s and c) instead of masking the rows before it; the same
  /// values, the scores and P @ V over min(c, s + window - 1) keys instead of c.
  bool window_read = false;
  /// With a window: the cache's `slots` rows are a ring of R = slots / 2 positions, each
  /// written twice (rows p mod R and p mod R + R, so a window is one slice). Needs an even slots
  /// and R >= window + s - 1 for the largest s the graph declares (the positions a step's first
  /// query sees and the step's own, all at once); the caller keeps the context contiguous (a
  /// rewind by more than R - window + 1 positions loses rows the next step reads).
  bool ring = false;
};

Tensor cached_attention(Graph& g, const Tensor& q, const Tensor& k, const Tensor& v,
                        const std::string& name, int slots, const AttentionOptions& opts = {});

}  // namespace luminal::nn
