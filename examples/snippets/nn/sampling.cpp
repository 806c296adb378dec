// luminal/nn/sampling.hpp: token sampling inside the graph; the per-request parameters are small
// inputs, so one compiled graph serves every setting. Temperature 0 is greedy.
#include <cstdint>
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/nn/sampling.hpp"
#include "luminal/runtime/reference.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  Tensor logits = g.tensor("logits", {1, 8});
  Tensor seen = g.tensor("seen", {8});           // nonzero: seen before (the repetition penalty)
  nn::SamplerInputs in = nn::sampler_inputs(g);  // "sampler.temperature", ...
  Tensor token = nn::sample(logits, in, seen).output("token");  // I32, one id per row

  ReferenceRuntime rt(g);
  rt.set(logits, std::vector<float>{0, 1, 5, 2, 0, 0, 4, 0});
  rt.set(seen, std::vector<float>(8, 0.0f));
  const int64_t step = 0;
  nn::set_sampler_inputs(rt, in, {.temperature = 0}, step);  // greedy: the argmax
  rt.execute();
  expect(rt.get<int32_t>(token) == std::vector<int32_t>{2}, "greedy picks the largest logit");
  nn::set_sampler_inputs(rt, in, {.temperature = 0.8, .top_k = 2, .top_p = 0.95, .seed = 7}, step);
  rt.execute();
  const int32_t t = rt.get<int32_t>(token)[0];
  expect(t == 2 || t == 6, "top-k 2 keeps the two largest logits");
}
