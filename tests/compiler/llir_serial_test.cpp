// Exact text forms for the compile cache: Exprs and LLIR programs (with fused payloads) read back
// to the same thing, and malformed text is an error naming the line.
#include <gtest/gtest.h>

#include "luminal/compiler/build_space.hpp"
#include "luminal/core/expr_serial.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/program/llir_serial.hpp"
#include "support/expect_error.hpp"
#include "support/random_graph.hpp"

namespace luminal {
namespace {

TEST(ExprSerial, RoundTripsEveryKind) {
  const Expr s = Expr::var("s"), c = Expr::var("c"), z = Expr::z();
  const std::vector<Expr> es = {Expr(0),
                                Expr(-7),
                                s,
                                z,
                                s * 4 + z * 3 - 2,
                                (s * c + 5) / 3,
                                (z % 7) * s,
                                min(s, c + 1),
                                max(s * 2, Expr(9)),
                                lt(s, c),
                                le(z, s * 2),
                                eq(s, Expr(3)),
                                ne(c, s),
                                logical_and(lt(z, s), ge(z, Expr(1))),
                                logical_or(eq(s, c), lt(c, Expr(2))),
                                ((s + 1) * (c - 1)) % (s + 3),
                                Expr(INT64_MAX),
                                Expr(INT64_MIN + 1)};
  for (const Expr& e : es) {
    const std::string t = write_expr(e);
    EXPECT_EQ(read_expr(t), e) << t;
  }
  testing::expect_error([] { read_expr("(+ s"); }, "missing ')'");
  testing::expect_error([] { read_expr("(pow s 2)"); }, "unknown operator 'pow'");
  testing::expect_error([] { read_expr("s s"); }, "trailing text");
}

TEST(LlirSerial, RandomProgramsReadBackExactly) {
  cpu::CpuBackend cpu(1);
  int programs = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    testing::FuzzGraph fg = testing::random_graph(seed);
    BuiltSpace b = build_search_space(fg.graph, cpu, fg.graph.dim_facts());
    Rng rng(seed);
    for (int k = 0; k < 8; ++k) {
      LlirGraph p =
          to_llir(*b.space, k == 0 ? b.space->first_genome() : b.space->random_genome(rng));
      const std::string text = write_llir(p);
      LlirGraph back = read_llir(text, cpu);
      EXPECT_EQ(write_llir(back), text);
      EXPECT_EQ(back.to_text(), p.to_text());
      ASSERT_EQ(back.nodes.size(), p.nodes.size());
      for (size_t i = 0; i < p.nodes.size(); ++i) {
        EXPECT_EQ(back.nodes[i].op, p.nodes[i].op);
        EXPECT_TRUE(back.nodes[i].attrs == p.nodes[i].attrs) << p.nodes[i].attrs.to_string();
        EXPECT_EQ(back.nodes[i].attrs.hash(), p.nodes[i].attrs.hash());
      }
      ++programs;
    }
  }
  EXPECT_EQ(programs, 96);
}

// Views with an element offset (slices at a start) keep their base through the text form (dims
// "#" strides "@" base), and the base is part of the attributes' text, hash and equality.
TEST(LlirSerial, ViewBasesReadBack) {
  cpu::CpuBackend cpu(1);
  Graph g;
  g.declare_dim("s", 2, 16);
  Tensor x = g.tensor("x", {"s", 8});
  (x.slice(0, -1).slice(1, 3) * 2.0).output("y");
  (x.slice(1, 1, std::nullopt, 2).exp()).output("z");
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  LlirGraph p = to_llir(*b.space, b.space->first_genome());
  const std::string text = write_llir(p);
  EXPECT_NE(text.find('@'), std::string::npos) << text;
  LlirGraph back = read_llir(text, cpu);
  EXPECT_EQ(write_llir(back), text);
  int bases = 0;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    EXPECT_TRUE(back.nodes[i].attrs == p.nodes[i].attrs) << p.nodes[i].attrs.to_string();
    for (const View& v : p.nodes[i].attrs.views) {
      if (!v.has_base()) continue;
      ++bases;
      Attrs without = p.nodes[i].attrs;
      for (View& w : without.views)
        w.base = Expr(0);
      EXPECT_FALSE(without == p.nodes[i].attrs);
      EXPECT_NE(without.key_text(false), p.nodes[i].attrs.key_text(false));
      EXPECT_NE(without.hash(), p.nodes[i].attrs.hash());
    }
  }
  EXPECT_GE(bases, 2) << text;
}

TEST(LlirSerial, MalformedTextNamesTheLine) {
  cpu::CpuBackend cpu(1);
  testing::expect_error([&] { read_llir("cpu.Nope\t\tf32\t\t\t\t0\t0\t0\t0\t0\t0\t-\t\n", cpu); },
                        {"line 1", "no op 'cpu.Nope'"});
  testing::expect_error([&] { read_llir("Add\t0\tf32\n", cpu); }, {"line 1", "fields"});
  testing::expect_error(
      [&] {
        read_llir(
            "Input\t\tf32\t4\t\tx\t0\t0\t0\t0\t0\t0\t-\t\nAdd\t0,5\tf32\t4\t4#1|4#"
            "1\t\t0\t0\t0\t0\t0\t0\t-\t\n",
            cpu);
      },
      {"line 2", "%5 does not run before"});
  testing::expect_error(
      [&] { read_llir("Input\t\tf32\t4\t\tx\t0\t0\t0\t0\t0\t0\tfused_program\t1 2 3;\n", cpu); },
      {"line 1", "fused_program"});
}

}  // namespace
}  // namespace luminal
