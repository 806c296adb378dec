// The genetic search: determinism, limits, rejected candidates, report.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "luminal/compiler/compiled_graph.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using testing::expect_error;

// The CPU backend with deterministic, fake timings (a hash of the program) and optional
// failures, recording every program it was asked to load.
class FakeTimedBackend : public Backend {
 public:
  struct Exe : Executable {
    std::unique_ptr<Executable> inner;
    double seconds;
    double sleep_s;
    void execute(const DynMap& dyn, IoTable& io) override { inner->execute(dyn, io); }
    uint64_t memory_bytes(const DynMap& dyn) const override { return inner->memory_bytes(dyn); }
    double profile(const DynMap& dyn, IoTable& io, int, double) override {
      inner->execute(dyn, io);
      if (sleep_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
      return seconds;
    }
  };
  std::string name() const override { return "fake"; }
  std::vector<RuleSet> rulesets() const override { return cpu.rulesets(); }
  bool executes(const OpDef* op) const override { return cpu.executes(op); }
  std::unique_ptr<Executable> load(const LlirGraph& g) override {
    std::string text = g.to_text();
    loaded.push_back(text);
    if (fail_when_blas && text.find("cpu.BlasMatmul") != std::string::npos)
      throw Error("fake: refusing a BLAS program");
    auto e = std::make_unique<Exe>();
    e->inner = cpu.load(g);
    e->seconds = 1e-3 * (1.0 + static_cast<double>(std::hash<std::string>{}(text) % 1000) / 1000);
    e->sleep_s = sleep_s;
    return e;
  }

  cpu::CpuBackend cpu{1};
  std::vector<std::string> loaded;
  bool fail_when_blas = false;
  double sleep_s = 0;
};

struct Model {
  Graph g;
  Tensor x, w, y;
  Model() {
    x = g.tensor("x", {4, 8});
    w = g.tensor("w", {8, 8});
    Tensor a = (x.exp() * 2.0 + 1.0).sqrt() + x.sin();
    Tensor b = a.matmul(w).relu() * 0.5 - a.matmul(w.transpose(0, 1));
    y = (b.sigmoid() + b.abs()).output("y");
  }
};

TEST(Search, SameSeedSameSearch) {
  Model m;
  FakeTimedBackend a, b, c;
  auto opts =
      CompileOptions().search_graph_limit(25).generation_size(5).mutations(2).verbose(false);
  CompiledGraph ca = m.g.compile(a, CompileOptions(opts).seed(11));
  CompiledGraph cb = m.g.compile(b, CompileOptions(opts).seed(11));
  CompiledGraph cc = m.g.compile(c, CompileOptions(opts).seed(12));
  ASSERT_GT(a.loaded.size(), 5u);
  EXPECT_EQ(a.loaded, b.loaded);
  EXPECT_EQ(ca.llir().to_text(), cb.llir().to_text());
  EXPECT_NE(a.loaded, c.loaded);
  EXPECT_GT(ca.reports()[0].genes, 0u);
}

TEST(Search, RespectsTheCandidateLimit) {
  Model m;
  FakeTimedBackend fake;
  CompiledGraph c = m.g.compile(fake, CompileOptions().search_graph_limit(7).verbose(false));
  EXPECT_EQ(fake.loaded.size(), 7u);
  EXPECT_EQ(c.reports()[0].candidates, 7);
  EXPECT_NE(c.reports()[0].stop.find("candidate limit"), std::string::npos);
}

TEST(Search, RespectsTheTimeBudget) {
  Model m;
  FakeTimedBackend fake;
  fake.sleep_s = 0.02;
  auto t0 = std::chrono::steady_clock::now();
  CompiledGraph c =
      m.g.compile(fake, CompileOptions().search_graph_limit(1000).time_budget(0.2).verbose(false));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 2.0);
  EXPECT_LT(c.reports()[0].candidates, 30);
  EXPECT_EQ(c.reports()[0].stop, "time budget");
}

TEST(Search, RejectedCandidatesAreCountedNeverChosen) {
  Model m;
  FakeTimedBackend fake;
  fake.fail_when_blas = true;
  CompiledGraph c = m.g.compile(fake, CompileOptions().search_graph_limit(30).verbose(false));
  const SearchReport& r = c.reports()[0];
  EXPECT_GT(r.rejected, 0);
  EXPECT_NE(r.first_rejection.find("refusing a BLAS program"), std::string::npos);
  EXPECT_EQ(c.llir().to_text().find("cpu.BlasMatmul"), std::string::npos);
  EXPECT_EQ(r.best_op_mix.count("cpu.BlasMatmul"), 0u);
  // The winner is the fastest valid program that was tried.
  EXPECT_GT(r.best_seconds, 0);
  // And it computes the right thing.
  ReferenceRuntime ref(m.g);
  std::vector<float> x(32), w(64);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.05f * static_cast<float>(i % 5) - 0.1f;
  for (Runtime* rt : {static_cast<Runtime*>(&c), static_cast<Runtime*>(&ref)}) {
    rt->set(m.x, x);
    rt->set(m.w, w);
    rt->execute();
  }
  auto a = c.get<float>(m.y), b = ref.get<float>(m.y);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-5);
}

TEST(Search, AllCandidatesRejectedIsAnError) {
  Graph g;
  Tensor x = g.tensor("x", {4});
  (x.exp() + 1.0).output("y");
  FakeTimedBackend fake;
  // Force failure of everything through max_memory = 0 bytes on a graph that needs memory.
  expect_error(
      [&] { g.compile(fake, CompileOptions().search_graph_limit(5).max_memory(0).verbose(false)); },
      {"all", "rejected", "max_memory"});
}

TEST(Search, ReportNamesPhasesAndOpMix) {
  Model m;
  cpu::CpuBackend cpu(1);
  CompiledGraph c = m.g.compile(cpu, CompileOptions().search_graph_limit(5).verbose(false));
  std::string r = c.report();
  for (const char* part : {"search report", "HLIR nodes", "e-nodes", "genes", "candidates", "best",
                           "op mix", "saturate", "prune", "extract", "compile", "profile"})
    EXPECT_NE(r.find(part), std::string::npos) << part << " missing in\n" << r;
}

}  // namespace
}  // namespace luminal
