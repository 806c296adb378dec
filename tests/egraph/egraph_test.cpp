// E-graph core: attributes, hash-consing, union-find, congruence after rebuild, dtype/shape
// analysis, removal, dominance bookkeeping, printing.
#include "luminal/egraph/egraph.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "egraph/egraph_helpers.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using testing::constant;
using testing::ew;
using testing::input;
using testing::make_attrs;

const OpDef kFusedExp{"cpu.FusedExp"};

struct TilePayload : Payload {
  int tile = 0;
  explicit TilePayload(int t) : tile(t) {}
  std::string_view kind() const override { return "tile"; }
  std::string serialize() const override { return std::to_string(tile); }
  size_t hash() const override { return std::hash<int>{}(tile); }
  bool equals(const Payload& o) const override {
    return tile == static_cast<const TilePayload&>(o).tile;
  }
  std::string to_string() const override { return "tile=" + std::to_string(tile); }
};

struct OtherPayload : Payload {
  int tile = 0;
  explicit OtherPayload(int t) : tile(t) {}
  std::string_view kind() const override { return "other"; }
  std::string serialize() const override { return std::to_string(tile); }
  size_t hash() const override { return std::hash<int>{}(tile); }
  bool equals(const Payload& o) const override {
    return tile == static_cast<const OtherPayload&>(o).tile;
  }
  std::string to_string() const override { return "other=" + std::to_string(tile); }
};

// ---- Attrs ----

TEST(Attrs, EqualityAndHashCoverEveryField) {
  Expr s = Expr::var("s");
  Attrs a = make_attrs(DType::BF16, {s, 4096}, {View::contiguous({s, 4096})});
  Attrs b = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());

  Attrs c = a;
  c.shape = {s, 4095};
  EXPECT_FALSE(a == c);
  Attrs d = a;
  d.dtype = DType::F16;
  EXPECT_FALSE(a == d);
  Attrs e = a;
  e.views[0] = e.views[0].permute({1, 0});
  EXPECT_FALSE(a == e);
  Attrs f = a;
  f.axis = 1;
  EXPECT_FALSE(a == f);
  Attrs g = a;
  g.iota_expr = Expr::z() * 2;
  g.iota_len = s;
  EXPECT_FALSE(a == g);
  Attrs h = a;
  h.int_value = 7;
  EXPECT_FALSE(a == h);
  Attrs i = a;
  i.persist = true;
  EXPECT_FALSE(a == i);
}

TEST(Attrs, StructuralHashIgnoresLabelOnly) {
  Attrs a = make_attrs(DType::F32, {4096, 4096});
  a.label = "layers.0.wq";
  a.persist = true;
  Attrs b = a;
  b.label = "layers.1.wq";
  EXPECT_FALSE(a == b);
  EXPECT_EQ(a.structural_hash(), b.structural_hash());
  EXPECT_NE(a.hash(), b.hash());
  Attrs c = a;
  c.shape = {4096, 1024};
  EXPECT_NE(a.structural_hash(), c.structural_hash());
}

TEST(Attrs, DoublesCompareByBits) {
  Attrs nan1 = make_attrs(DType::F32, {});
  nan1.value = std::numeric_limits<double>::quiet_NaN();
  Attrs nan2 = nan1;
  EXPECT_EQ(nan1, nan2);  // NaN constants intern to one record
  EXPECT_EQ(nan1.hash(), nan2.hash());
  Attrs pz = make_attrs(DType::F32, {});
  pz.value = 0.0;
  Attrs nz = pz;
  nz.value = -0.0;
  EXPECT_FALSE(pz == nz);  // 1/x tells them apart

  EGraph eg;
  EXPECT_EQ(eg.intern(nan1), eg.intern(nan2));
  EXPECT_NE(eg.intern(pz), eg.intern(nz));
}

TEST(Attrs, PayloadsCompareByTypeThenValue) {
  Attrs a = make_attrs(DType::F32, {4});
  a.payload = std::make_shared<TilePayload>(8);
  Attrs b = a;
  b.payload = std::make_shared<TilePayload>(8);  // a different object, equal value
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  Attrs c = a;
  c.payload = std::make_shared<TilePayload>(16);
  EXPECT_FALSE(a == c);
  Attrs d = a;
  d.payload = std::make_shared<OtherPayload>(8);  // same fields, other type
  EXPECT_FALSE(a == d);
  EXPECT_FALSE(d == a);
  Attrs e = a;
  e.payload = nullptr;
  EXPECT_FALSE(a == e);
  EXPECT_FALSE(e == a);
}

TEST(Attrs, ToStringShowsTheFieldsThatAreSet) {
  Expr s = Expr::var("s");
  Attrs a = make_attrs(DType::F32, {s}, {View::contiguous({s, 4})});
  a.axis = 1;
  EXPECT_EQ(a.to_string(), "f32[s] (a: [s, 4] {4*z, z}) axis=1");
  Attrs w = make_attrs(DType::BF16, {4096, 1024});
  w.label = "wq";
  w.persist = true;
  EXPECT_EQ(w.to_string(), "bf16[4096, 1024] label=\"wq\" persist");
  Attrs k = make_attrs(DType::F16, {});
  k.value = 0.5;
  k.payload = std::make_shared<TilePayload>(8);
  EXPECT_EQ(k.to_string(), "f16[] value=0.5 tile=8");
  Attrs io = make_attrs(DType::I32, {s});
  io.iota_expr = Expr::z() * 2;
  io.iota_len = s;
  EXPECT_EQ(io.to_string(), "i32[s] iota=2*z len=s");
}

// ---- hash-consing ----

TEST(EGraph, HashConsingReturnsTheExistingClass) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId x2 = input(eg, "x");
  ClassId y = input(eg, "y");
  EXPECT_EQ(x, x2);
  EXPECT_NE(x, y);
  ClassId e1 = ew(eg, OpKind::Exp2, {x});
  const uint64_t v = eg.version();
  ClassId e2 = ew(eg, OpKind::Exp2, {x});
  EXPECT_EQ(e1, e2);
  EXPECT_EQ(eg.version(), v);  // nothing new
  EXPECT_EQ(eg.num_nodes(), 3u);
  EXPECT_EQ(eg.num_classes(), 3u);
  EXPECT_EQ(eg.nodes_of(e1).size(), 1u);
  EXPECT_EQ(eg.eclass(x).parents, std::vector<ENodeId>{eg.nodes_of(e1)[0]});

  // The same op with other attributes is another e-node.
  Attrs a = eg.attrs_of(eg.nodes_of(e1)[0]);
  a.dtype = DType::F16;
  ClassId e3 = eg.add(hlir_op(OpKind::Exp2), a, {x});
  EXPECT_NE(e3, e1);
  EXPECT_EQ(eg.dtype(e3), DType::F16);
  EXPECT_EQ(eg.shape(e3), (Shape{4}));

  ENode probe{hlir_op(OpKind::Exp2), eg.intern(a), {x}};
  ASSERT_TRUE(eg.lookup(probe).has_value());
  EXPECT_EQ(*eg.lookup(probe), e3);
  probe.op = hlir_op(OpKind::Log2);
  EXPECT_FALSE(eg.lookup(probe).has_value());
}

TEST(EGraph, InternSharesRecordsAndReferencesStayValid) {
  EGraph eg;
  ClassId x = input(eg, "x", {16});
  const Attrs& ref = eg.attrs_of(eg.nodes_of(x)[0]);
  const ENode& node_ref = eg.node(eg.nodes_of(x)[0]);
  for (int i = 0; i < 2000; ++i)
    input(eg, "in" + std::to_string(i), {i + 1});
  EXPECT_EQ(ref.label, "x");  // still valid after thousands of additions
  EXPECT_EQ(node_ref.op, hlir_op(OpKind::Input));
  AttrId a1 = eg.intern(make_attrs(DType::I64, {3}));
  AttrId a2 = eg.intern(make_attrs(DType::I64, {3}));
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(eg.attrs(a1).dtype, DType::I64);
}

TEST(EGraph, AddRejectsBadInput) {
  EGraph eg;
  ClassId x = input(eg, "x");
  testing::expect_error([&] { eg.add(ENode{nullptr, 0, {x}}); }, "no op");
  testing::expect_error([&] { eg.add(ENode{hlir_op(OpKind::Exp2), 99, {x}}); }, "attribute id 99");
  testing::expect_error(
      [&] {
        eg.add(hlir_op(OpKind::Exp2), make_attrs(DType::F32, {4}), {x, 42});
      },
      {"Exp2", "%c42", "does not exist"});
}

// ---- union-find and congruence ----

TEST(EGraph, MergeThenRebuildRestoresCongruence) {
  EGraph eg;
  ClassId a = input(eg, "a");
  ClassId b = input(eg, "b");
  ClassId fa = ew(eg, OpKind::Exp2, {a});
  ClassId fb = ew(eg, OpKind::Exp2, {b});
  EXPECT_NE(eg.find(fa), eg.find(fb));
  const uint64_t v = eg.version();
  EXPECT_TRUE(eg.merge(a, b));
  EXPECT_EQ(eg.version(), v + 1);
  EXPECT_EQ(eg.find(a), eg.find(b));
  EXPECT_TRUE(eg.needs_rebuild());
  EXPECT_NE(eg.find(fa), eg.find(fb));  // not yet: rebuild is deferred
  eg.rebuild();
  EXPECT_FALSE(eg.needs_rebuild());
  EXPECT_EQ(eg.find(fa), eg.find(fb));
  EXPECT_EQ(eg.version(), v + 2);  // the congruence merge counts too
  // The two Exp2 e-nodes became one: the newer one is marked removed as a duplicate.
  EXPECT_EQ(eg.nodes_of(fa).size(), 1u);
  EXPECT_EQ(eg.eclass(fa).nodes.size(), 2u);
  EXPECT_EQ(eg.num_live_nodes(), 3u);
  EXPECT_EQ(eg.num_classes(), 2u);
  EXPECT_EQ(eg.class_ids().size(), 2u);
  // Merging again changes nothing.
  EXPECT_FALSE(eg.merge(fa, fb));
  EXPECT_EQ(eg.version(), v + 2);
  // Adding Exp2(b) now finds the surviving e-node.
  EXPECT_EQ(ew(eg, OpKind::Exp2, {b}), eg.find(fa));
}

TEST(EGraph, CongruencePropagatesUpChains) {
  EGraph eg;
  ClassId a = input(eg, "a");
  ClassId b = input(eg, "b");
  ClassId w = input(eg, "w");
  std::vector<ClassId> ca{a}, cb{b};
  for (int i = 0; i < 20; ++i) {
    OpKind k = i % 2 ? OpKind::Sqrt : OpKind::Add;
    ca.push_back(k == OpKind::Add ? ew(eg, k, {ca.back(), w}) : ew(eg, k, {ca.back()}));
    cb.push_back(k == OpKind::Add ? ew(eg, k, {cb.back(), w}) : ew(eg, k, {cb.back()}));
  }
  eg.merge(a, b);
  eg.rebuild();
  for (size_t i = 0; i < ca.size(); ++i)
    EXPECT_EQ(eg.find(ca[i]), eg.find(cb[i])) << "level " << i;
  EXPECT_EQ(eg.num_classes(), 20u + 2u);     // {a, b}, w and one class per level
  EXPECT_EQ(eg.num_live_nodes(), 20u + 3u);  // the two inputs stay distinct e-nodes
  for (ClassId c : eg.class_ids())
    EXPECT_EQ(eg.nodes_of(c).size(), c == eg.find(a) ? 2u : 1u);
}

TEST(EGraph, CongruenceThroughSeveralMergesAndSelfLoops) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId one = constant(eg, 1.0);
  ClassId mul = ew(eg, OpKind::Mul, {x, one});
  ClassId e = ew(eg, OpKind::Exp2, {x});
  ClassId e2 = ew(eg, OpKind::Exp2, {mul});
  eg.merge(mul, x);  // x * 1 == x: the class now reads itself
  eg.rebuild();
  EXPECT_EQ(eg.find(e), eg.find(e2));
  ClassId xc = eg.find(x);
  EXPECT_EQ(eg.nodes_of(xc).size(), 2u);
  ENodeId m = testing::node_with(eg, xc, OpKind::Mul);
  ASSERT_NE(m, static_cast<ENodeId>(-1));
  EXPECT_EQ(eg.find(eg.node(m).children[0]), xc);  // children are canonical after rebuild
  // The parents of x include the Mul e-node (a self loop) and the surviving Exp2.
  std::vector<ENodeId> parents = eg.eclass(xc).parents;
  EXPECT_NE(std::find(parents.begin(), parents.end(), m), parents.end());
  EXPECT_TRUE(std::is_sorted(parents.begin(), parents.end()));
}

TEST(EGraph, NodesOfKeepInsertionOrderAfterMerges) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId a = ew(eg, OpKind::Exp2, {x});
  ClassId b = ew(eg, OpKind::Sqrt, {x});
  ClassId c = ew(eg, OpKind::Sin, {x});
  eg.merge(c, b);
  eg.merge(c, a);
  eg.rebuild();
  std::vector<ENodeId> ns = eg.nodes_of(a);
  ASSERT_EQ(ns.size(), 3u);
  EXPECT_EQ(eg.node(ns[0]).op, hlir_op(OpKind::Exp2));
  EXPECT_EQ(eg.node(ns[1]).op, hlir_op(OpKind::Sqrt));
  EXPECT_EQ(eg.node(ns[2]).op, hlir_op(OpKind::Sin));
  EXPECT_EQ(eg.nodes_with_op(hlir_op(OpKind::Sqrt)).size(), 1u);
  EXPECT_TRUE(eg.nodes_with_op(hlir_op(OpKind::Gather)).empty());
  std::vector<ClassId> ids = eg.class_ids();
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(ids.size(), 2u);
}

// Random graphs, random merges: after rebuild the e-graph is congruence-closed (no two live
// e-nodes share op, attributes and canonical children) and agrees with a naive closure.
TEST(EGraph, RandomMergesMatchNaiveCongruenceClosure) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 30; ++trial) {
    EGraph eg;
    std::vector<ClassId> cls;
    std::vector<std::tuple<int, int, int>> terms;  // (op, child0, child1) over term indices
    for (int i = 0; i < 4; ++i) {
      cls.push_back(input(eg, "in" + std::to_string(i)));
      terms.emplace_back(-1 - i, -1, -1);
    }
    const OpKind kinds[] = {OpKind::Exp2, OpKind::Add, OpKind::Mul};
    for (int i = 0; i < 60; ++i) {
      int k = static_cast<int>(rng() % 3);
      int c0 = static_cast<int>(rng() % cls.size()), c1 = static_cast<int>(rng() % cls.size());
      if (k == 0) c1 = -1;
      ClassId id = k == 0 ? ew(eg, kinds[k], {cls[c0]}) : ew(eg, kinds[k], {cls[c0], cls[c1]});
      cls.push_back(id);
      terms.emplace_back(k, c0, c1);
    }
    // Naive closure over term indices.
    std::vector<int> rep(terms.size());
    for (size_t i = 0; i < rep.size(); ++i)
      rep[i] = static_cast<int>(i);
    std::function<int(int)> root = [&](int i) { return rep[i] == i ? i : rep[i] = root(rep[i]); };
    auto unite = [&](int a, int b) {
      a = root(a);
      b = root(b);
      if (a == b) return false;
      rep[std::max(a, b)] = std::min(a, b);
      return true;
    };
    for (size_t i = 0; i < terms.size(); ++i)  // hash-consing already unified equal terms
      for (size_t j = 0; j < i; ++j)
        if (cls[i] == cls[j]) unite(static_cast<int>(i), static_cast<int>(j));
    for (int m = 0; m < 6; ++m) {
      int a = static_cast<int>(rng() % terms.size()), b = static_cast<int>(rng() % terms.size());
      eg.merge(cls[a], cls[b]);
      unite(a, b);
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < terms.size(); ++i)
        for (size_t j = 0; j < i; ++j) {
          auto [k1, a1, b1] = terms[i];
          auto [k2, a2, b2] = terms[j];
          if (k1 != k2 || k1 < 0) continue;
          if (root(a1) != root(a2)) continue;
          if (b1 >= 0 && root(b1) != root(b2)) continue;
          changed |= unite(static_cast<int>(i), static_cast<int>(j));
        }
    }
    eg.rebuild();
    for (size_t i = 0; i < terms.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        EXPECT_EQ(eg.find(cls[i]) == eg.find(cls[j]), root(int(i)) == root(int(j)))
            << "trial " << trial << " terms " << i << ", " << j;
    // No two live e-nodes are identical.
    std::set<std::tuple<const OpDef*, AttrId, std::vector<ClassId>>> seen;
    for (ClassId c : eg.class_ids())
      for (ENodeId n : eg.nodes_of(c)) {
        std::vector<ClassId> ch;
        for (ClassId x : eg.node(n).children)
          ch.push_back(eg.find(x));
        EXPECT_TRUE(seen.emplace(eg.node(n).op, eg.node(n).attr, ch).second);
        EXPECT_EQ(eg.class_of(n), c);
      }
  }
}

// ---- analysis ----

TEST(EGraph, MergeKeepsDtypeAndShape) {
  EGraph eg;
  Expr s = Expr::var("s");
  ClassId x = input(eg, "x", {s, 64}, DType::BF16);
  ClassId y = input(eg, "y", {s, 64}, DType::BF16);
  ClassId e = ew(eg, OpKind::Exp2, {x});
  eg.merge(e, y);
  eg.rebuild();
  EXPECT_EQ(eg.dtype(e), DType::BF16);
  EXPECT_EQ(eg.shape(y), (Shape{s, 64}));
}

TEST(EGraph, MergingDifferentDtypesNamesBothClasses) {
  EGraph eg;
  ClassId x = input(eg, "x", {4}, DType::F32);
  ClassId e = ew(eg, OpKind::Exp2, {x});
  ClassId h = input(eg, "h", {4}, DType::F16);
  ClassId c =
      eg.add(hlir_op(OpKind::Cast), make_attrs(DType::F16, {4}, {View::contiguous({4})}), {x});
  EXPECT_EQ(eg.dtype(c), DType::F16);
  eg.merge(c, h);  // fine: both f16[4]
  const uint64_t v = eg.version();
  testing::expect_error([&] { eg.merge(e, c); },
                        {"cannot merge", "Exp2", "Cast", "Input", "f32[4]", "f16[4]",
                         "dtypes differ", "%c" + std::to_string(eg.find(e))});
  EXPECT_EQ(eg.version(), v);
  EXPECT_NE(eg.find(e), eg.find(c));
}

TEST(EGraph, MergingDifferentShapesNamesBothShapes) {
  EGraph eg;
  Expr s = Expr::var("s");
  ClassId x = input(eg, "x", {s, 4});
  ClassId y = input(eg, "y", {4, s});
  ClassId sx = ew(eg, OpKind::Sqrt, {x});
  testing::expect_error([&] { eg.merge(sx, y); },
                        {"Sqrt", "Input", "f32[s, 4]", "f32[4, s]", "shapes differ"});
  ClassId z = input(eg, "z", {4, s}, DType::I32);
  testing::expect_error([&] { eg.merge(x, z); }, "dtypes and shapes differ");
}

// ---- removal, dominance, printing ----

TEST(EGraph, RemoveHidesNodesFromQueries) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId e = ew(eg, OpKind::Exp2, {x});
  ClassId f = eg.add(&kFusedExp, make_attrs(DType::F32, {4}, {View::contiguous({4})}), {x});
  eg.merge(e, f);
  eg.rebuild();
  ENodeId hl = testing::node_with(eg, e, OpKind::Exp2);
  EXPECT_EQ(eg.nodes_of(e).size(), 2u);
  eg.remove(hl);
  eg.remove(hl);  // idempotent
  EXPECT_TRUE(eg.is_removed(hl));
  EXPECT_EQ(eg.nodes_of(e).size(), 1u);
  EXPECT_EQ(eg.num_live_nodes(), 2u);
  EXPECT_EQ(eg.nodes_with_op(hlir_op(OpKind::Exp2)).size(), 1u);  // lists removed ones too
}

TEST(EGraph, DominationsFollowDeduplicatedNodes) {
  EGraph eg;
  ClassId a = input(eg, "a");
  ClassId b = input(eg, "b");
  ClassId fa = ew(eg, OpKind::Exp2, {a});
  ClassId fb = ew(eg, OpKind::Exp2, {b});
  ClassId ga = eg.add(&kFusedExp, make_attrs(DType::F32, {4}, {View::contiguous({4})}), {a});
  ENodeId exp_b = eg.nodes_of(fb)[0];
  ENodeId fused = eg.nodes_of(ga)[0];
  eg.merge(ga, fb);
  eg.dominate(fused, exp_b);
  eg.merge(a, b);
  eg.rebuild();  // Exp2(b) is now a duplicate of Exp2(a)
  ASSERT_EQ(eg.dominations().size(), 1u);
  EXPECT_EQ(eg.dominations()[0].first, fused);
  EXPECT_EQ(eg.dominations()[0].second, eg.nodes_of(fa)[0]);
  EXPECT_TRUE(eg.is_removed(exp_b));
  testing::expect_error([&] { eg.dominate(fused, 1000); }, "unknown e-node 1000");
}

TEST(EGraph, ToTextListsClassesAndNodes) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId e = ew(eg, OpKind::Exp2, {x});
  ClassId f = eg.add(&kFusedExp, make_attrs(DType::F32, {4}, {View::contiguous({4})}), {x});
  eg.merge(e, f);
  eg.rebuild();
  std::string t = eg.to_text();
  EXPECT_NE(t.find("%c0 = { Input() f32[4] label=\"x\" }"), std::string::npos) << t;
  EXPECT_NE(t.find("Exp2(%c0) f32[4] (a: [4] {z}), cpu.FusedExp(%c0) f32[4] (a: [4] {z})"),
            std::string::npos)
      << t;
  eg.remove(testing::node_with(eg, e, OpKind::Exp2));
  EXPECT_NE(eg.to_text().find("[removed]"), std::string::npos);
}

}  // namespace
}  // namespace luminal
