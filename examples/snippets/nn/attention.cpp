// luminal/nn/attention.hpp: grouped-query attention over a KV cache the graph carries between
// executes ("<name>.k_cache" / "<name>.v_cache" inputs, their "_out" outputs carried into them).
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/nn/attention.hpp"
#include "luminal/runtime/reference.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  const int heads = 4, kv_heads = 2, hd = 8, slots = 16;
  Graph g;
  g.declare_dim("s", 1, 8);      // tokens of this step
  g.declare_dim("c", 1, slots);  // the context after it: at most the cache's rows
  // q [s, heads, hd], k and v [s, kv_heads, hd] (after rope), a cache of `slots` rows:
  Tensor q = g.tensor("q", {"s", heads, hd});
  Tensor k = g.tensor("k", {"s", kv_heads, hd});
  Tensor v = g.tensor("v", {"s", kv_heads, hd});
  Tensor o = nn::cached_attention(g, q, k, v, "layers.3", slots).output("o");  // [s, heads * hd]
  expect(g.find("layers.3.k_cache") >= 0 && g.carried().size() == 2, "a carried K and V cache");

  ReferenceRuntime rt(g);
  rt.set(q, std::vector<float>(heads * hd, 0.5f));
  rt.set(k, std::vector<float>(kv_heads * hd, 0.25f));
  rt.set(v, std::vector<float>(kv_heads * hd, 2.0f));
  rt.set("layers.3.k_cache", std::vector<float>(slots * kv_heads * hd, 0.0f));
  rt.set("layers.3.v_cache", std::vector<float>(slots * kv_heads * hd, 0.0f));
  rt.execute({{"s", 1}, {"c", 1}});  // the first token sees only itself: o = v
  expect(rt.get<float>(o) == std::vector<float>(heads * hd, 2.0f), "one key: the output is v");
}
