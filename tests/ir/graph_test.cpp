#include <gtest/gtest.h>

#include "luminal/luminal.hpp"

namespace luminal {
namespace {

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

TEST(Graph, NodesInCreationOrderAndText) {
  Graph g;
  auto x = g.tensor("x", {"s", 4});
  auto y = (x * 2.0 + 1.0).output("y");
  (void)y;
  const auto& nodes = g.nodes();
  ASSERT_GE(nodes.size(), 5u);
  EXPECT_EQ(nodes[0].op, OpKind::Input);
  EXPECT_EQ(nodes.back().op, OpKind::Output);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const Operand& o : nodes[i].inputs)
      EXPECT_LT(o.node, static_cast<NodeId>(i));
  std::string text = g.to_text();
  EXPECT_TRUE(contains(text, "%0 = Input \"x\"() : f32[s, 4]")) << text;
  EXPECT_TRUE(contains(text, "Mul(")) << text;
  EXPECT_TRUE(contains(text, "Output \"y\"")) << text;
  // Deterministic: the same program gives the same text.
  Graph h;
  auto x2 = h.tensor("x", {"s", 4});
  (x2 * 2.0 + 1.0).output("y");
  EXPECT_EQ(text, h.to_text());
}

TEST(Graph, DotExport) {
  Graph g;
  auto a = g.tensor("a", {2});
  (a + a).output("o");
  std::string dot = g.to_dot();
  EXPECT_TRUE(contains(dot, "digraph luminal {")) << dot;
  EXPECT_TRUE(contains(dot, "n0 -> n")) << dot;
  EXPECT_TRUE(contains(dot, "Input \\\"a\\\"")) << dot;
}

TEST(Graph, LabelsMustBeUnique) {
  Graph g;
  g.tensor("x", {2});
  EXPECT_THROW(g.tensor("x", {3}), Error);
  EXPECT_THROW(g.tensor("", {3}), Error);
  auto y = g.tensor("y", {2});
  y.output("out");
  EXPECT_THROW(y.output("out"), Error);
}

TEST(Graph, FindByLabel) {
  Graph g;
  auto x = g.tensor("x", {2});
  auto o = (x + 1.0).output("o");
  EXPECT_EQ(g.find("x"), x.id());
  EXPECT_EQ(g.find("o"), o.id());
  try {
    g.find("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "'nope'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "x, o")) << e.what();
  }
}

// An input and an output may share a label: find gives the first (the input), as a scan would;
// a copy of the Graph handle shares the labels added through it.
TEST(Graph, FindAnInputAndAnOutputOfOneLabel) {
  Graph g;
  auto x = g.tensor("kv", {2});
  auto o = (x * 2.0).output("kv");
  EXPECT_EQ(g.find("kv"), x.id());
  EXPECT_NE(o.id(), x.id());
  Graph h = g;
  auto y = h.tensor("later", {2});
  EXPECT_EQ(g.find("later"), y.id());
  EXPECT_THROW(g.tensor("later", {1}), Error);
}

TEST(Graph, DimsAndFacts) {
  Graph g;
  auto x = g.tensor("x", {"s", "c"});
  (void)x;
  g.declare_dim("s", 1, 512);
  Facts f = g.dim_facts();
  EXPECT_EQ(f.at("s"), (Interval{1, 512}));
  EXPECT_EQ(f.at("c"), (Interval{0, INT32_MAX}));
  g.set_dim("s", 3);
  EXPECT_EQ(g.dims().at("s"), 3);
  EXPECT_THROW(g.set_dim("s", 513), Error);
  EXPECT_THROW(g.declare_dim("c", 5, 1), Error);
}

TEST(Graph, ZIsReservedForTheIndexVariable) {
  Graph g;
  try {
    g.tensor("x", {"z", 4});
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "'z' is reserved")) << e.what();
  }
  EXPECT_THROW(g.set_dim("z", 1), Error);
  EXPECT_THROW(g.declare_dim("z", 1, 2), Error);
}

TEST(Graph, PersistOnlyOnInputsAndOutputs) {
  Graph g;
  auto w = g.tensor("w", {2}).persist();
  EXPECT_TRUE(g.node(w.id()).persist);
  EXPECT_THROW((w + 1.0).persist(), Error);
}

TEST(Graph, ShapeErrorsNameBothShapes) {
  Graph g;
  auto a = g.tensor("a", {2, 3});
  auto b = g.tensor("b", {4, 3});
  try {
    (void)(a + b);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "[2, 3]") && contains(e.what(), "[4, 3]")) << e.what();
  }
  try {
    (void)a.matmul(b);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "matmul")) << e.what();
  }
  try {
    (void)a.reshape({5});
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "reshape") && contains(e.what(), "[5]")) << e.what();
  }
  auto i = g.tensor("i", {2, 3}, DType::I32);
  EXPECT_THROW((void)(a + i), Error);  // dtypes differ
  EXPECT_THROW((void)(i / i), Error);  // integer true division
  EXPECT_THROW((void)(i + 0.5), Error);
  EXPECT_THROW((void)i.exp(), Error);
}

TEST(Graph, ViewsAddNoNodes) {
  Graph g;
  auto x = g.tensor("x", {2, 3, 4});
  size_t before = g.nodes().size();
  auto y =
      x.permute({2, 0, 1}).unsqueeze(0).squeeze(0).transpose(0, 1).expand_dim(0, 5).flatten(1, 2);
  EXPECT_EQ(g.nodes().size(), before);
  EXPECT_EQ(y.shape(), (Shape{5, 8, 3}));
}

}  // namespace
}  // namespace luminal
