// Load-time folding: which values get Fold leaves (constants that read no input too), fold
// programs, the search choosing them, a session running them once (and again after a weight
// changes), releasing the weights they replace, and the compile cache keeping them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "luminal/compiler/build_space.hpp"
#include "luminal/compiler/fold.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/moe.hpp"
#include "luminal/program/llir_serial.hpp"
#include "support/delegating_backend.hpp"
#include "support/expect_error.hpp"
#include "support/fold_model.hpp"

namespace luminal {
namespace {

// The CPU backend timing a program by its node count: a program reading a folded value runs
// fewer nodes, so the search picks it whenever it is offered and drawn.
class CountingBackend : public testing::CpuDelegate {
 public:
  std::string name() const override { return "fold-counting"; }
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override {
    auto p = cpu.load(g, spec);
    size_t ops = 0;
    for (const LlirNode& n : g.nodes)
      if (!is_op(n.op, OpKind::Input) && !is_op(n.op, OpKind::Output)) ++ops;
    nodes[p.get()] = static_cast<double>(ops);
    ++loads;
    return p;
  }
  double time(Plan& plan, int parity, const int64_t* dims, int, double) override {
    plan.execute(parity, dims);
    return 1e-3 * nodes.at(&plan);
  }
  std::map<const Plan*, double> nodes;
  int loads = 0;
};

using Model = testing::FoldModel;
using testing::random_values;

std::vector<float> reference(const Model& m, const std::vector<float>& x,
                             const std::vector<float>& w, int64_t s) {
  return testing::fold_reference(m, x, w, s);
}

size_t fold_nodes(const EGraph& eg) {
  size_t n = 0;
  for (ENodeId e = 0; e < eg.num_nodes(); ++e)
    if (!eg.is_removed(e) && eg.node(e).op == fold_op()) ++n;
  return n;
}

FoldOptions on(uint64_t limit = 0) {
  FoldOptions o;
  o.on = true;
  o.limit = limit;
  return o;
}

TEST(FoldLeaves, OfferedForAValueComputedFromWeightsAlone) {
  Model m;
  cpu::CpuBackend cpu(1);
  BuiltSpace b = build_search_space(m.g, cpu, m.g.dim_facts(), {}, on());
  ASSERT_FALSE(b.folds.leaves.empty());
  EXPECT_GT(fold_nodes(*b.eg), 0u);
  // The first genome never folds (folds sort last), so it is the program without them.
  const LlirGraph first = to_llir(*b.space, b.space->first_genome());
  EXPECT_TRUE(FoldResolver::placeholders(first).empty());
}

TEST(FoldLeaves, NotOfferedWhenOffOrNotAWeight) {
  cpu::CpuBackend cpu(1);
  {
    Model m;
    EXPECT_TRUE(build_search_space(m.g, cpu, m.g.dim_facts(), {}, {}).folds.leaves.empty());
  }
  {
    Model m(/*persist=*/false);  // a per-step input: nothing is known at load time
    EXPECT_TRUE(build_search_space(m.g, cpu, m.g.dim_facts(), {}, on()).folds.leaves.empty());
  }
  {
    Model m;
    FoldOptions o = on();
    o.min_bytes = 1 << 20;  // the value is 64 KiB
    EXPECT_TRUE(build_search_space(m.g, cpu, m.g.dim_facts(), {}, o).folds.leaves.empty());
  }
}

TEST(FoldLeaves, GrowthPastTheLimitIsNotOffered) {
  // A value larger than the weights it reads (a widened copy) grows memory: offered only when
  // fold_limit allows the growth.
  Graph g;
  g.declare_dim("s", 1, 8);
  Tensor x = g.tensor("x", {Dim("s"), 64}, DType::F64);
  Tensor w = g.tensor("w", {256, 64}).persist();
  x.matmul((w.cast(DType::F64) * 3.0).transpose(0, 1).contiguous()).output("y");
  cpu::CpuBackend cpu(1);
  EXPECT_TRUE(build_search_space(g, cpu, g.dim_facts(), {}, on(0)).folds.leaves.empty());
  EXPECT_FALSE(build_search_space(g, cpu, g.dim_facts(), {}, on(1 << 20)).folds.leaves.empty());
}

TEST(FoldProgram, ComputesTheValueFromWeightsAndIsLabelledByItsText) {
  Model m;
  cpu::CpuBackend cpu(1);
  BuiltSpace b = build_search_space(m.g, cpu, m.g.dim_facts(), {}, on());
  FoldResolver r(*b.space, b.folds);
  for (const auto& [placeholder, cls] : b.folds.leaves) {
    const FoldProgram& p = r.program(placeholder);
    EXPECT_EQ(p.inputs, std::vector<std::string>{"w"});
    EXPECT_TRUE(is_fold_label(p.label));
    EXPECT_EQ(p.label.size(), kFoldPrefix.size() + 16);
    // The label is a function of the text: read back from the cache's form, it is the same.
    const FoldProgram again = FoldProgram::from_llir(read_llir(write_llir(p.llir), cpu));
    EXPECT_EQ(again.label, p.label);
    EXPECT_EQ(again.bytes, p.bytes);
    // Another program gets another label.
    LlirGraph other = p.llir;
    for (LlirNode& n : other.nodes)
      if (is_op(n.op, OpKind::Constant)) n.attrs.value += 1;
    EXPECT_NE(FoldProgram::from_llir(std::move(other)).label, p.label);
  }
}

CompileOptions search_opts() {
  return CompileOptions().search_graph_limit(40).generation_size(10).verbose(false).seed(3);
}

TEST(FoldSession, ChosenFoldRunsOnceReleasesTheWeightAndMatchesTheReference) {
  Model m;
  CountingBackend be;
  Session s(m.g, be, search_opts());
  const auto w = random_values(256 * 64, 1);
  const auto x = random_values(4 * 64, 2);
  s.set("w", w);
  s.set("x", x);
  s.compile();
  ASSERT_NE(s.fold_report(), "") << s.llir().to_text();
  EXPECT_NE(s.llir().to_text().find("#fold/"), std::string::npos);
  const uint64_t before = s.memory_bytes();
  s.execute({{"s", 4}});
  EXPECT_EQ(s.stats().fold_runs, 1u);
  EXPECT_EQ(s.stats().bytes_folded, 256u * 64 * 4);
  EXPECT_EQ(s.stats().bytes_released, 256u * 64 * 4);  // only the fold reads w
  EXPECT_EQ(s.memory_bytes(), before - 256u * 64 * 4);
  const auto want = reference(m, x, w, 4);
  const auto got = s.get<float>("y");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << i;
  // A second execute runs no fold.
  s.execute({{"s", 4}});
  EXPECT_EQ(s.stats().fold_runs, 1u);
}

TEST(FoldSession, SettingTheWeightAgainFoldsAgain) {
  Model m;
  CountingBackend be;
  Session s(m.g, be, search_opts());
  s.set("w", random_values(256 * 64, 1));
  const auto x = random_values(2 * 64, 2);
  s.set("x", x);
  s.execute({{"s", 2}});
  ASSERT_EQ(s.stats().fold_runs, 1u) << s.llir().to_text();
  const auto w2 = random_values(256 * 64, 9);
  s.set("w", w2);  // the released weight gets a buffer again
  s.execute({{"s", 2}});
  EXPECT_EQ(s.stats().fold_runs, 2u);
  const auto want = reference(m, x, w2, 2);
  const auto got = s.get<float>("y");
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << i;
}

TEST(FoldSession, BucketsShareOneFold) {
  Model m;
  CountingBackend be;
  Session s(m.g, be, search_opts().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 8)}));
  s.set("w", random_values(256 * 64, 1));
  s.set("x", random_values(1 * 64, 2));
  s.compile();
  ASSERT_NE(s.llir({{"s", 1}}).to_text().find("#fold/"), std::string::npos);
  ASSERT_NE(s.llir({{"s", 5}}).to_text().find("#fold/"), std::string::npos);
  const std::string report = s.fold_report();
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), 1) << report;
  s.execute({{"s", 1}});
  EXPECT_EQ(s.stats().fold_runs, 1u);
}

// No kernel of the s > 1 bucket reads the folded value (as no prefill GEMM reads the layout a
// decode GEMV's weights were repacked into): every candidate of that bucket reads the weight.
class NoFoldAboveOneRow : public CountingBackend {
 public:
  std::string name() const override { return "fold-counting-no-fold-above-one-row"; }
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override {
    auto p = CountingBackend::load(g, spec);
    bool fold = false;
    for (const LlirNode& n : g.nodes)
      fold |= is_op(n.op, OpKind::Input) && is_fold_label(n.attrs.label);
    reads_fold[p.get()] = fold;
    return p;
  }
  double time(Plan& plan, int parity, const int64_t* dims, int trials, double timeout) override {
    if (dims[0] > 1 && reads_fold.at(&plan)) throw Error("no kernel reads the fold for s > 1");
    return CountingBackend::time(plan, parity, dims, trials, timeout);
  }
  std::map<const Plan*, bool> reads_fold;
};

TEST(FoldSession, ALaterBucketThatCannotReadTheFoldKeepsTheWeightBesideIt) {
  // The s = 1 bucket folds w; the s > 1 bucket can only read w itself, so w stays resident
  // beside its fold: past fold_limit (0), but the alternative is no program at all (every
  // candidate of that bucket used to be rejected, and compile() threw).
  setenv("LUMINAL_CACHE", "off", 1);  // searched, whatever the environment
  Model m;
  NoFoldAboveOneRow be;
  Session s(m.g, be, search_opts().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 8)}));
  const auto w = random_values(256 * 64, 1);
  s.set("w", w);
  s.set("x", random_values(8 * 64, 2));
  s.compile();
  ASSERT_NE(s.llir({{"s", 1}}).to_text().find("#fold/"), std::string::npos);
  EXPECT_EQ(s.llir({{"s", 5}}).to_text().find("#fold/"), std::string::npos);
  ASSERT_EQ(s.reports().size(), 2u);
  EXPECT_EQ(s.reports()[0].fold_growth, 0);
  EXPECT_EQ(s.reports()[1].fold_growth, 256 * 64 * 4) << s.reports()[1].to_string();
  EXPECT_NE(s.reports()[1].to_string().find("fold_limit"), std::string::npos);
  for (int64_t rows : {1, 5}) {
    const auto x = random_values(static_cast<size_t>(rows) * 64, 3 + rows);
    s.set("x", x);
    s.execute({{"s", rows}});
    const auto want = reference(m, x, w, rows);
    const auto got = s.get<float>("y");
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << rows << " " << i;
  }
  EXPECT_EQ(s.stats().fold_runs, 1u);
  EXPECT_EQ(s.stats().bytes_released, 0u);  // the s > 1 program reads w
}

TEST(FoldSession, OffKeepsTheWeight) {
  Model m;
  CountingBackend be;
  Session s(m.g, be, search_opts().folding(false));
  s.set("w", random_values(256 * 64, 1));
  s.set("x", random_values(4 * 64, 2));
  s.execute({{"s", 4}});
  EXPECT_EQ(s.fold_report(), "");
  EXPECT_EQ(s.stats().fold_runs, 0u);
  EXPECT_EQ(s.llir().to_text().find("#fold/"), std::string::npos);
}

TEST(FoldSession, CompileCacheKeepsTheFolds) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("luminal-fold-cache-" + std::to_string(getpid()));
  fs::remove_all(dir);
  setenv("LUMINAL_CACHE", "on", 1);
  Model m;
  const auto w = random_values(256 * 64, 1);
  const auto x = random_values(3 * 64, 2);
  std::string first_llir;
  {
    CountingBackend be;
    Session s(m.g, be, search_opts().cache_dir(dir));
    s.set("w", w);
    s.set("x", x);
    s.execute({{"s", 3}});
    ASSERT_FALSE(s.reports()[0].cached);
    ASSERT_EQ(s.stats().fold_runs, 1u) << s.llir().to_text();
    first_llir = s.llir().to_text();
  }
  CountingBackend be;
  Session s(m.g, be, search_opts().cache_dir(dir));
  s.set("w", w);
  s.set("x", x);
  s.execute({{"s", 3}});
  setenv("LUMINAL_CACHE", "off", 1);
  fs::remove_all(dir);
  EXPECT_TRUE(s.reports()[0].cached);
  EXPECT_EQ(s.llir().to_text(), first_llir);
  EXPECT_EQ(s.stats().fold_runs, 1u);
  const auto want = reference(m, x, w, 3);
  const auto got = s.get<float>("y");
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << i;
}

// A constant: y = sum_j x[i, j] * (i < j), the [E, E] comparison of two iotas (a MoE router's
// tie-break) reads no input.
Graph constant_mask(int64_t e) {
  Graph g;
  Tensor x = g.tensor("x", {e, e});
  Tensor i = g.arange(e).reshape({e, 1}).expand({e, e});
  Tensor j = g.arange(e).reshape({1, e}).expand({e, e});
  (x * i.lt(j).cast(DType::F32)).sum(1).output("y");  // (the comparison is one op over iotas)
  return g;
}

TEST(FoldLeaves, AConstantOfAnySizeIsOfferedAndFreeInTheSeeds) {
  const Graph g = constant_mask(16);  // 1 KiB, far under fold_min_bytes
  cpu::CpuBackend cpu(1);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts(), {}, on());
  // (the comparison, and its cast where a region reads the comparison)
  ASSERT_FALSE(b.folds.constants.empty());
  EXPECT_EQ(b.folds.leaves.size(), b.folds.constants.size());
  // The seed reads it: the comparison runs once, at load.
  const LlirGraph seed = to_llir(*b.space, b.space->fewest_kernels_genome());
  EXPECT_EQ(FoldResolver::placeholders(seed).size(), 1u) << seed.to_text();
  // Not an Iota alone, nor a cast of one (cheaper where it is read), nor a value of weights
  // under fold_min_bytes.
  Graph iota;
  Tensor x = iota.tensor("x", {16});
  (x + iota.arange(16).cast(DType::F32)).output("y");
  EXPECT_TRUE(build_search_space(iota, cpu, iota.dim_facts(), {}, on()).folds.leaves.empty());
  Graph small;
  Tensor w = small.tensor("w", {16}).persist();
  (small.tensor("x", {16}) + w.exp()).output("y");
  EXPECT_TRUE(build_search_space(small, cpu, small.dim_facts(), {}, on()).folds.leaves.empty());
}

TEST(FoldSession, AConstantIsComputedOnceAndAddsNoGrowthPastTheLimit) {
  const int64_t e = 16;
  const Graph g = constant_mask(e);
  CountingBackend be;
  Session s(g, be, search_opts());  // fold_limit 0: no fold may add memory, but a small constant
  const auto x = random_values(e * e, 4);
  s.set("x", x);
  s.execute();
  ASSERT_NE(s.llir().to_text().find("#fold/"), std::string::npos) << s.llir().to_text();
  EXPECT_EQ(s.stats().fold_runs, 1u);
  EXPECT_EQ(s.stats().bytes_folded, static_cast<uint64_t>(e * e * 4));
  const auto got = s.get<float>("y");
  for (int64_t r = 0; r < e; ++r) {
    double want = 0;
    for (int64_t c = r + 1; c < e; ++c)
      want += x[static_cast<size_t>(r * e + c)];
    ASSERT_NEAR(got[static_cast<size_t>(r)], want, 1e-5 * (1 + std::abs(want))) << r;
  }
  s.execute();
  EXPECT_EQ(s.stats().fold_runs, 1u);
}

// The search times each candidate on its folds' true values: a MoE router's ranks read the
// [E, E] tie-break comparison, a constant the seed folds. On equal probabilities every rank is 0
// without it, so reading zeros there the seed chose expert 0 + 1 + ... + 15 for its first slot
// and the expert matmul rejected the id (the search then kept a program without the fold).
TEST(FoldSession, CandidatesAreTimedOnTheFoldsTrueValues) {
  const int64_t e = 16, k = 4, n = 3, d = 5;
  Graph g;
  Tensor probs = g.tensor("probs", {1, e});
  Tensor x = g.tensor("x", {1, d});
  Tensor w = g.tensor("w", {e, n, d}).persist();
  const nn::TopK top = nn::router_topk(probs, k, false, nn::TopKForm::Ranks);
  nn::expert_linear(x, w, top.ids).output("y");
  top.ids.output("ids");
  CountingBackend be;
  Session s(g, be, search_opts());
  const auto wv = random_values(e * n * d, 5);
  const auto xv = random_values(d, 6);
  s.set("w", wv);
  s.set("x", xv);
  s.set("probs", std::vector<float>(static_cast<size_t>(e), 0.5f));  // all equal: ties everywhere
  s.execute();
  ASSERT_EQ(s.reports().size(), 1u);
  EXPECT_EQ(s.reports()[0].rejected, 0) << s.reports()[0].first_rejection;
  EXPECT_NE(s.llir().to_text().find("#fold/"), std::string::npos) << s.llir().to_text();
  // Equal probabilities: the first experts, in order.
  EXPECT_EQ(s.get<int32_t>("ids"), (std::vector<int32_t>{0, 1, 2, 3}));
  const auto y = s.get<float>("y");
  for (int64_t c = 0; c < k; ++c)
    for (int64_t r = 0; r < n; ++r) {
      double want = 0;
      for (int64_t i = 0; i < d; ++i)
        want += double{wv[static_cast<size_t>((c * n + r) * d + i)]} * xv[static_cast<size_t>(i)];
      ASSERT_NEAR(y[static_cast<size_t>(c * n + r)], want, 1e-5 * (1 + std::abs(want))) << c;
    }
}

}  // namespace
}  // namespace luminal
