// CpuBackend::profile: every kernel of a loaded plan timed on its own (what LUMINAL_TRACE writes as
// profile.txt for the CPU, and what bench_llm_cpu prints for the decode step).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/luminal.hpp"
#include "support/expect_error.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

class NotACpuPlan : public Plan {
 public:
  uint64_t arena_bytes() const override { return 0; }
  void bind(int, const Bindings&) override {}
  void execute(int, const int64_t*) override {}
};

// Sleeps `ms[i % ms.size()]` milliseconds on its i-th execute (the warm-up is execute 0).
class SleepingPlan : public Plan {
 public:
  explicit SleepingPlan(std::vector<int> ms) : ms_(std::move(ms)) {}
  uint64_t arena_bytes() const override { return 0; }
  void bind(int, const Bindings&) override {}
  void execute(int, const int64_t*) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_[runs % ms_.size()]));
    ++runs;
  }
  int runs = 0;

 private:
  std::vector<int> ms_;
};

// The search's time on the CPU: runs until 50 ms are timed (at least `trials`, at most 20), the
// fastest counting, where the median of 3 would count a slow run.
TEST(CpuTime, RunsUntilFiftyMillisecondsAndCountsTheFastest) {
  cpu::CpuBackend cpu(1);
  SleepingPlan short_runs({2, 9, 9, 2, 9});  // warm-up 2, then 9, 9, 2, 9, 2, 9, 9, ...
  const double t = cpu.time(short_runs, 0, nullptr, 3, 0);
  EXPECT_GE(t, 0.002);
  EXPECT_LT(t, 0.0085) << "the fastest run counts, not the median";
  // 50 ms of 2-9 ms runs: more than the 3 trials, fewer than the cap.
  EXPECT_GE(short_runs.runs, 1 + 6);
  EXPECT_LE(short_runs.runs, 1 + 12);
  // Long runs: `trials` of them.
  SleepingPlan long_runs({30});
  cpu.time(long_runs, 0, nullptr, 3, 0);
  EXPECT_EQ(long_runs.runs, 1 + 3);
  // Never more than 20 (a step of microseconds), and never fewer than asked.
  SleepingPlan empty({0});
  cpu.time(empty, 0, nullptr, 3, 0);
  EXPECT_EQ(empty.runs, 1 + cpu::CpuBackend::kMaxTimedRuns);
  SleepingPlan many({0});
  cpu.time(many, 0, nullptr, 25, 0);
  EXPECT_EQ(many.runs, 1 + 25);
  // The timeout still applies to each run.
  SleepingPlan slow({1, 40});
  testing::expect_error([&] { cpu.time(slow, 0, nullptr, 3, 0.02); }, "over the timeout");
  // A warm-up over the give-up time (the search: 2.5x its best so far) is the only run.
  cpu.set_give_up(0.02);
  SleepingPlan hopeless({30});
  EXPECT_GE(cpu.time(hopeless, 0, nullptr, 3, 0), 0.03);
  EXPECT_EQ(hopeless.runs, 1);
  SleepingPlan contender({10});  // under it: timed as before
  cpu.time(contender, 0, nullptr, 3, 0);
  EXPECT_GE(contender.runs, 1 + 3);
  cpu.set_give_up(0);
}

TEST(CpuProfile, TimesEveryKernelOfAPlan) {
  Graph g;
  const Tensor x = g.tensor("x", {"s", 64});
  const Tensor w = g.tensor("w", {64, 32});
  (x.matmul(w).relu() + 1.0).output("y");
  cpu::CpuBackend cpu(2);
  Session s(
      g, cpu,
      CompileOptions().search_graph_limit(3).verbose(false).dim_buckets("s", {DimBucket(1, 16)}));
  std::vector<float> xs(8 * 64), ws(64 * 32);
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = static_cast<float>(i % 7) - 3;
  for (size_t i = 0; i < ws.size(); ++i)
    ws[i] = static_cast<float>(i % 5) * 0.25f;
  s.set("x", xs);
  s.set("w", ws);
  s.execute({{"s", 8}});
  const std::vector<float> want = s.get<float>("y");

  std::vector<int64_t> dims = s.dims();
  dims[s.dim("s")] = 8;
  Plan& plan = s.plan({{"s", 8}});
  const std::vector<cpu::KernelTime> times = cpu.profile(plan, 0, dims.data(), 3);
  const LlirGraph& llir = s.llir({{"s", 8}});
  size_t kernels = 0;
  bool matmul = false;
  for (const LlirNode& n : llir.nodes)
    kernels += !is_op(n.op, OpKind::Input);
  ASSERT_EQ(times.size(), kernels) << llir.to_text();
  for (const cpu::KernelTime& t : times) {
    ASSERT_GE(t.node, 0);
    ASSERT_LT(t.node, static_cast<int>(llir.nodes.size()));
    EXPECT_EQ(t.op, llir.nodes[static_cast<size_t>(t.node)].op->name);
    EXPECT_GE(t.ms, 0.0);
    if (t.op == "cpu.BlasMatmul" || t.op == "cpu.Matmul") {
      matmul = true;
      EXPECT_EQ(t.shape, "[8, 32] k=64");
    }
  }
  EXPECT_TRUE(matmul) << llir.to_text();
  // Profiling runs the program: the output is what execute gave.
  EXPECT_EQ(s.get<float>("y"), want);

  const std::string text = cpu::CpuBackend::format_profile(times, 2);
  EXPECT_NE(text.find("total"), std::string::npos) << text;
  EXPECT_NE(text.find("Output"), std::string::npos) << text;
  EXPECT_NE(cpu.profile_text(plan, dims.data()).find("k=64"), std::string::npos);
}

TEST(CpuProfile, RejectsPlansOfOtherBackendsAndUnboundParities) {
  cpu::CpuBackend cpu(1);
  NotACpuPlan other;
  const int64_t dims[1] = {1};
  testing::expect_error([&] { cpu.profile(other, 0, dims, 1); }, {"cpu", "profile"});
  Graph g;
  (g.tensor("a", {4}) + 1.0).output("b");
  std::unique_ptr<Plan> plan = cpu.load(testing::llir_direct(g), {});
  testing::expect_error([&] { cpu.profile(*plan, 1, dims, 1); }, {"bind"});
}

}  // namespace
}  // namespace luminal
