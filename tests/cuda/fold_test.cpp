// GPU: load-time folding on the CUDA backend (program/fold.hpp, runtime/folds.hpp). A weight-only
// value read by a step (a transposed, scaled copy of a weight) is chosen as a folded input, the
// fold program runs once on the GPU, the weight it replaces is released, and the outputs match
// the reference; setting the weight again folds again. The search here times a program by its
// node count (so a program reading the fold always wins where drawn); everything else is the
// real CUDA backend.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "cuda/cuda_test_util.hpp"
#include "luminal/luminal.hpp"
#include "support/fold_model.hpp"

namespace luminal {
namespace {

class CountingGpu : public Backend {
 public:
  std::string name() const override { return "fold-counting-gpu"; }
  std::vector<RuleSet> rulesets() const override { return gpu().rulesets(); }
  bool executes(const OpDef* op) const override { return gpu().executes(op); }
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override {
    auto p = gpu().load(g, spec);
    size_t ops = 0;
    for (const LlirNode& n : g.nodes)
      if (!is_op(n.op, OpKind::Input) && !is_op(n.op, OpKind::Output)) ++ops;
    nodes[p.get()] = static_cast<double>(ops);
    return p;
  }
  double time(Plan& plan, int parity, const int64_t* dims, int, double) override {
    plan.execute(parity, dims);
    gpu().sync();
    return 1e-3 * nodes.at(&plan);
  }
  std::string device_key() const override { return gpu().device_key(); }
  const OpDef* op_named(std::string_view n) const override { return gpu().op_named(n); }
  std::shared_ptr<const Payload> read_payload(std::string_view k,
                                              std::string_view t) const override {
    return gpu().read_payload(k, t);
  }
  std::unique_ptr<Queue> make_queue() override { return gpu().make_queue(); }
  Buffer allocate(uint64_t bytes) override { return gpu().allocate(bytes); }
  void release(Buffer b) override { gpu().release(b); }
  void upload(Buffer d, uint64_t o, const void* s, uint64_t n, Queue* q = nullptr) override {
    gpu().upload(d, o, s, n, q);
  }
  void download(void* d, Buffer s, uint64_t o, uint64_t n, Queue* q = nullptr) override {
    gpu().download(d, s, o, n, q);
  }
  void copy(Buffer d, Buffer s, uint64_t n, Queue* q = nullptr) override { gpu().copy(d, s, n, q); }
  void sync(Queue* q = nullptr) override { gpu().sync(q); }

  std::map<const Plan*, double> nodes;

 private:
  static cuda::CudaBackend& gpu() { return testing::gpu(); }
};

using testing::FoldModel;
using testing::random_values;

void expect_matches_reference(const FoldModel& m, Session& s, const std::vector<float>& x,
                              const std::vector<float>& w, int64_t rows) {
  const auto want = testing::fold_reference(m, x, w, rows);
  const auto got = s.get<float>("y");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << i;
}

TEST(CudaFold, ChosenFoldRunsOnTheGpuOnceAndAgainAfterTheWeightChanges) {
  LUMINAL_REQUIRE_GPU();
  FoldModel m;
  CountingGpu be;
  Session s(m.g, be, CompileOptions().search_graph_limit(40).generation_size(10).seed(3));
  const auto w = random_values(256 * 64, 1);
  const auto x = random_values(3 * 64, 2);
  s.set("w", w);
  s.set("x", x);
  s.compile();
  ASSERT_NE(s.fold_report(), "") << s.llir().to_text();
  const uint64_t before = s.memory_bytes();
  s.execute({{"s", 3}});
  EXPECT_EQ(s.stats().fold_runs, 1u);
  EXPECT_EQ(s.stats().bytes_folded, 256u * 64 * 4);
  EXPECT_EQ(s.stats().bytes_released, 256u * 64 * 4);
  EXPECT_EQ(s.memory_bytes(), before - 256u * 64 * 4);
  expect_matches_reference(m, s, x, w, 3);
  s.execute({{"s", 3}});
  EXPECT_EQ(s.stats().fold_runs, 1u);
  const auto w2 = random_values(256 * 64, 7);
  s.set("w", w2);
  s.execute({{"s", 3}});
  EXPECT_EQ(s.stats().fold_runs, 2u);
  expect_matches_reference(m, s, x, w2, 3);
}

// The real search and timing on the GPU, folding on and off: the same results either way.
TEST(CudaFold, RealSearchWithAndWithoutFoldingMatchesTheReference) {
  LUMINAL_REQUIRE_GPU();
  for (bool folding : {true, false}) {
    FoldModel m;
    Session s(m.g, testing::gpu(), CompileOptions().folding(folding).seed(5));
    const auto w = random_values(256 * 64, 3);
    const auto x = random_values(5 * 64, 4);
    s.set("w", w);
    s.set("x", x);
    s.execute({{"s", 5}});
    if (!folding) {
      EXPECT_EQ(s.stats().fold_runs, 0u);
    }
    expect_matches_reference(m, s, x, w, 5);
  }
}

}  // namespace
}  // namespace luminal
