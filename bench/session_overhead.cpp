// Framework time per execute: what a session costs around the kernels. A 200-node elementwise
// program (every op reads its own constant) runs on a backend whose kernels do nothing, through
// the slot path (dims as a flat array): bucket choice, input checks, parity choice, carries.
//
//   build/bench/bench_session_overhead [nodes=200] [executes=10000]
//
// Prints the median and 90th percentile of one execute, in microseconds.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/timing.hpp"
#include "luminal/luminal.hpp"

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
  void download(void*, luminal::Buffer, uint64_t, uint64_t, luminal::Queue* = nullptr) override {}
  void copy(luminal::Buffer, luminal::Buffer, uint64_t, luminal::Queue* = nullptr) override {}
  void sync(luminal::Queue* = nullptr) override {}
};

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
  return 0;
}
