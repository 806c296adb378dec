// Graph::alternative: a declared exact reformulation is lowered into its primary's e-class (the
// search picks either form), only when the primary is needed; a session runs the result; and
// declarations that cannot be one class are errors naming the problem.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "luminal/compiler/build_space.hpp"
#include "luminal/compiler/lower.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/runtime/session.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

std::set<std::string> ops_of(const EGraph& eg, ClassId c) {
  std::set<std::string> out;
  for (ENodeId n : eg.nodes_of(eg.find(c)))
    out.insert(std::string(eg.node(n).op->name));
  return out;
}

TEST(Alternative, LoweredIntoThePrimarysClass) {
  Graph g;
  Tensor x = g.tensor("x", {4});
  Tensor twice = x * 2.0;
  Tensor sum = x + x;
  g.alternative(twice, sum);
  twice.exp().output("y");
  EGraph eg;
  Lowered low = lower(g, eg);
  EXPECT_EQ(eg.find(low.class_of[twice.id()]), eg.find(low.class_of[sum.id()]));
  const std::set<std::string> ops = ops_of(eg, low.class_of[twice.id()]);
  EXPECT_TRUE(ops.count("Mul") && ops.count("Add")) << ops.size();
}

TEST(Alternative, NotLoweredWhenThePrimaryIsNotNeeded) {
  Graph g;
  Tensor x = g.tensor("x", {4});
  Tensor twice = x * 2.0;
  g.alternative(twice, x + x);
  x.exp().output("y");
  EGraph eg;
  lower(g, eg);
  for (ENodeId n = 0; n < static_cast<ENodeId>(eg.num_nodes()); ++n)
    EXPECT_NE(eg.node(n).op->name, "Add");
}

TEST(Alternative, OnlyInTheBucketsItsBoundAllows) {
  for (int64_t hi : {8, 9, 512}) {
    Graph g;
    g.declare_dim("s", 1, 512);
    Tensor x = g.tensor("x", {"s", 4});
    Tensor twice = x * 2.0;
    Tensor sum = x + x;
    g.alternative(twice, sum, std::pair<Expr, int64_t>{Expr::var("s") * Expr(4), 36});
    twice.exp().output("y");
    EGraph eg;
    Lowered low = lower(g, eg, {{"s", {1, hi}}});
    EXPECT_EQ(ops_of(eg, low.class_of[twice.id()]).count("Add"), hi <= 9 ? 1u : 0u) << hi;
  }
}

TEST(Alternative, SessionsRunEitherForm) {
  Graph g;
  g.declare_dim("s", 1, 8);
  Tensor x = g.tensor("x", {"s", 5});
  Tensor m = x.max(1);  // [s]
  Tensor alt = (-x).min(1) * -1.0;
  g.alternative(m, alt);
  m.reshape({"s", 1}).expand({"s", 5}).sub(x).output("y");
  cpu::CpuBackend cpu(1);
  for (uint64_t seed : {1, 2, 3}) {
    Session s(g, cpu, CompileOptions().search_graph_limit(6).verbose(false).seed(seed));
    s.compile();
    const std::vector<float> xs = {1, 5, -2, 3, 0, -1, -7, 2, 2, 9};
    s.set(x, xs);
    s.execute({{"s", 2}});
    EXPECT_EQ(s.get<float>("y"), (std::vector<float>{4, 0, 7, 2, 5, 10, 16, 7, 7, 0}));
  }
}

TEST(Alternative, DeclarationsThatCannotShareAClassAreErrors) {
  Graph g;
  Tensor x = g.tensor("x", {4, 3});
  Tensor a = x * 2.0;
  Tensor q = g.tensor("q", {3, 3});
  testing::expect_error([&] { g.alternative(a, x.sum(1)); },
                        {"alternative", "same dtype and shape"});
  testing::expect_error([&] { g.alternative(a, a.cast(DType::F16)); },
                        {"alternative", "same dtype and shape"});
  testing::expect_error([&] { g.alternative(x, a); }, {"alternative", "primary", "Input"});
  testing::expect_error([&] { g.alternative(q * 2.0, (q + q).transpose(0, 1)); },
                        {"alternative", "whole node read contiguously"});
  testing::expect_error([&] { g.alternative(a, a); }, {"alternative", "its own"});
  EXPECT_TRUE(g.alternatives().empty());
}

}  // namespace
}  // namespace luminal
