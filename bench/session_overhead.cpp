// Framework time around the kernels, on a backend whose plans do nothing:
//  - a session: a 200-node elementwise program (every op reads its own constant) executed through
//    the slot path (dims as a flat array): bucket choice, input checks, parity choice, carries;
//  - a decode step of models::CausalLM: the 12-layer Llama of bench_llm_cpu (narrow widths, the
//    same node count) generating greedily: the id written by handle, execute with a dims array,
//    the token read by handle, the stop checks; the gap between two tokens' callbacks.
//
//   build/bench/bench_session_overhead [nodes=200] [executes=10000] [tokens=1000]
//
// Prints the median and 90th percentile of one execute, and the median of nine rounds' median
// decode steps, in microseconds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "bench/timing.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/synthetic.hpp"

namespace {

// A plan that launches nothing: the session's own work is all that is timed.
class NullPlan : public luminal::Plan {
 public:
  explicit NullPlan(const luminal::LlirGraph& g) { io_ = luminal::PlanIo::of(g); }
  uint64_t arena_bytes() const override { return 0; }
  void bind(int, const luminal::Bindings&) override {}
  void execute(int, const int64_t*) override {}
};

class NullBackend : public luminal::Backend {
 public:
  std::string name() const override { return "null"; }
  std::vector<luminal::RuleSet> rulesets() const override { return {}; }
  bool executes(const luminal::OpDef*) const override { return true; }
  std::string device_key() const override { return "null"; }
  std::unique_ptr<luminal::Plan> load(const luminal::LlirGraph& g,
                                      const luminal::PlanSpec&) override {
    return std::make_unique<NullPlan>(g);
  }
  luminal::Buffer allocate(uint64_t bytes) override {
    return luminal::Buffer{std::malloc(std::max<uint64_t>(bytes, 1)), bytes};
  }
  void release(luminal::Buffer b) override { std::free(b.ptr); }
  void upload(luminal::Buffer, uint64_t, const void*, uint64_t,
              luminal::Queue* = nullptr) override {}
  void download(void* dst, luminal::Buffer, uint64_t, uint64_t bytes,
                luminal::Queue* = nullptr) override {
    std::memset(dst, 0, bytes);  // token id 0
  }
  void copy(luminal::Buffer, luminal::Buffer, uint64_t, luminal::Queue* = nullptr) override {}
  void sync(luminal::Queue* = nullptr) override {}
};

// The median gap between two generated tokens of a 12-layer CausalLM on `null`, over 9 rounds.
void decode_step(NullBackend& null, int tokens) {
  using namespace luminal;
  const io::ModelConfig cfg = models::llama_config({.layers = 12,
                                                    .hidden = 64,
                                                    .ffn = 128,
                                                    .heads = 4,
                                                    .kv_heads = 2,
                                                    .vocab = 97,
                                                    .tie_embeddings = true});
  models::CausalLM lm =
      models::CausalLM::random(cfg, null, {.slots = tokens + 8, .max_step = 128},
                               CompileOptions().search_graph_limit(1).verbose(false), 7);
  std::vector<double> medians;
  for (int round = 0; round < 9; ++round) {
    lm.reset();
    std::vector<double> gaps;
    auto last = std::chrono::steady_clock::now();
    lm.generate({1}, tokens, {}, [&](int32_t, std::string_view) {
      const auto now = std::chrono::steady_clock::now();
      gaps.push_back(std::chrono::duration<double, std::micro>(now - last).count());
      last = now;
      return true;
    });
    gaps.erase(gaps.begin());  // the prompt's step
    std::sort(gaps.begin(), gaps.end());
    medians.push_back(gaps[gaps.size() / 2]);
  }
  std::sort(medians.begin(), medians.end());
  std::printf(
      "decode step: CausalLM, %zu-node graph, %d greedy tokens a round, host time per token\n"
      "  median %.3f us (rounds' medians from %.3f to %.3f us)\n",
      lm.decoder().graph.nodes().size(), tokens, medians[4], medians.front(), medians.back());
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 200;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 10000;
  luminal::Graph g;
  g.declare_dim("s", 1, 512);
  luminal::Tensor x = g.tensor("x", {"s", 16});
  luminal::Tensor h = x;
  int made = 1;
  while (made + 2 <= nodes) {  // each step adds a constant and an op
    const double c = 1.0 + 1e-4 * made;
    h = made % 3 == 0 ? h * c : h + c;
    made += 2;
  }
  h.output("y");
  NullBackend null;
  luminal::Session s(g, null, luminal::CompileOptions().search_graph_limit(1).verbose(false));
  s.set(x, std::vector<float>(16 * 256, 1.f));
  s.compile();
  const luminal::DimSlot S = s.dim("s");
  std::vector<int64_t> dims = s.dims();
  dims[S] = 256;
  std::vector<double> us = luminal::bench::sample_seconds([&] { s.execute(dims); }, 0, runs);
  for (double& t : us)
    t *= 1e6;
  std::sort(us.begin(), us.end());
  std::printf(
      "session overhead: %zu-node program (%d HLIR nodes), %d executes through the slot path\n"
      "  median %.3f us, p90 %.3f us, min %.3f us (target: under 10 us)\n",
      s.llir({{"s", 256}}).nodes.size(), static_cast<int>(g.nodes().size()), runs,
      us[us.size() / 2], us[us.size() * 9 / 10], us.front());
  decode_step(null, argc > 3 ? std::atoi(argv[3]) : 1000);
  return 0;
}
