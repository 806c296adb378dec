// The CPU executable: input checks (missing, wrong element count, wrong dtype), output buffers
// (copied through their view, resized per run), outputs updated inside an input's buffer (not
// copied, reported in IoTable::output_in_input), working memory, load errors and profiling.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/pattern.hpp"
#include "luminal/ir/prim.hpp"
#include "support/expect_error.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::BufferMap;
using testing::expect_error;

template <class T>
HostBuffer buffer(DType t, const std::vector<T>& v) {
  return to_host_buffer(v.data(), v.size(), t, "test");
}

std::vector<double> values(const HostBuffer& b) {
  std::vector<double> out;
  for (int64_t i = 0; i < b.numel(); ++i)
    out.push_back(load_as_double(b.dtype, b.bytes.data(), i));
  return out;
}

struct AddGraph {
  Graph g;
  AddGraph() {
    auto x = g.tensor("x", {"s", 2});
    auto y = g.tensor("y", {"s", 2});
    (x + y).output("sum");
  }
};

TEST(CpuExecutable, MissingInputIsNamed) {
  AddGraph a;
  cpu::CpuBackend cpu(1);
  BufferMap in;
  in["x"] = buffer(DType::F32, std::vector<float>{1, 2});
  expect_error([&] { testing::run_backend(cpu, a.g, in, {{"s", 1}}); }, {"input 'y'", "no data"});
}

TEST(CpuExecutable, WrongElementCountIsNamed) {
  AddGraph a;
  cpu::CpuBackend cpu(1);
  BufferMap in;
  in["x"] = buffer(DType::F32, std::vector<float>{1, 2, 3, 4});
  in["y"] = buffer(DType::F32, std::vector<float>{1, 2});
  auto exe = cpu.load(testing::llir_direct(a.g));
  expect_error(
      [&] {
        testing::run_executable(*exe, a.g, in, {{"s", 2}});
      },
      {"input 'y'", "2 elements", "needs 4"});
  // The same buffers are right at s = 1 for y but not for x.
  expect_error(
      [&] {
        testing::run_executable(*exe, a.g, in, {{"s", 1}});
      },
      {"input 'x'", "4 elements", "needs 2"});
}

TEST(CpuExecutable, WrongDtypeIsNamed) {
  AddGraph a;
  cpu::CpuBackend cpu(1);
  BufferMap in;
  in["x"] = buffer(DType::F32, std::vector<float>{1, 2});
  in["y"] = buffer(DType::I32, std::vector<int32_t>{1, 2});
  expect_error(
      [&] {
        testing::run_backend(cpu, a.g, in, {{"s", 1}});
      },
      {"input 'y'", "i32", "f32"});
}

TEST(CpuExecutable, MissingDimIsNamed) {
  AddGraph a;
  cpu::CpuBackend cpu(1);
  BufferMap in;
  in["x"] = buffer(DType::F32, std::vector<float>{1, 2});
  in["y"] = buffer(DType::F32, std::vector<float>{1, 2});
  expect_error([&] { testing::run_backend(cpu, a.g, in, {}); }, "'s'");
}

TEST(CpuExecutable, MissingOutputBufferIsNamed) {
  AddGraph a;
  cpu::CpuBackend cpu(1);
  auto exe = cpu.load(testing::llir_direct(a.g));
  HostBuffer x = buffer(DType::F32, std::vector<float>{1, 2});
  HostBuffer y = buffer(DType::F32, std::vector<float>{3, 4});
  IoTable io;
  io.inputs["x"] = &x;
  io.inputs["y"] = &y;
  expect_error([&] { exe->execute({{"s", 1}}, io); }, {"output 'sum'", "IoTable"});
}

TEST(CpuExecutable, OutputsAreCopiedThroughTheirViewAndResized) {
  Graph g;
  auto x = g.tensor("x", {2, "s"});
  x.permute({1, 0}).output("t");  // an Output reading through a permuted view
  x.output("same");               // an Output of an Input: a copy, not an alias
  (x * 2.0).output("twice");
  cpu::CpuBackend cpu(2);
  auto exe = cpu.load(testing::llir_direct(g));
  for (int64_t s : {3, 1, 4}) {
    std::vector<float> xv;
    for (int64_t i = 0; i < 2 * s; ++i)
      xv.push_back(static_cast<float>(i));
    BufferMap in;
    in["x"] = buffer(DType::F32, xv);
    IoTable io;
    io.inputs["x"] = &in["x"];
    HostBuffer t, same, twice{DType::I8, std::vector<uint8_t>(100, 7)};  // stale contents
    io.outputs["t"] = &t;
    io.outputs["same"] = &same;
    io.outputs["twice"] = &twice;
    io.output_in_input["same"] = "stale";  // cleared by a copy
    exe->execute({{"s", s}}, io);
    EXPECT_TRUE(io.output_in_input.empty());
    EXPECT_EQ(t.dtype, DType::F32);
    std::vector<double> want_t, want_twice;
    for (int64_t j = 0; j < s; ++j)
      for (int64_t i = 0; i < 2; ++i)
        want_t.push_back(static_cast<double>(i * s + j));
    for (float v : xv)
      want_twice.push_back(2.0 * v);
    EXPECT_EQ(values(t), want_t) << "s=" << s;
    EXPECT_EQ(values(same), std::vector<double>(xv.begin(), xv.end()));
    EXPECT_EQ(twice.dtype, DType::F32);
    EXPECT_EQ(values(twice), want_twice);
    EXPECT_NE(same.bytes.data(), in["x"].bytes.data());
  }
}

TEST(CpuExecutable, LaterNodesReadAnOutputsValue) {
  // output() returns a tensor of the Output node; ops built on it read the Output's value.
  Graph g;
  auto x = g.tensor("x", {2, "s"});
  auto y = (x * 2.0).output("y");
  (y + 1.0).output("z");
  auto t = x.permute({1, 0}).output("t");  // copied through a view, then read again
  (t * 3.0).sum(0).output("u");
  cpu::CpuBackend cpu(1);
  auto exe = cpu.load(testing::llir_direct(g));
  for (int64_t s : {3, 5}) {
    std::vector<float> xv;
    for (int64_t i = 0; i < 2 * s; ++i)
      xv.push_back(static_cast<float>(i));
    BufferMap in;
    in["x"] = buffer(DType::F32, xv);
    BufferMap out = testing::run_executable(*exe, g, in, {{"s", s}});
    std::vector<double> want_y, want_z, want_u(2, 0.0);
    for (int64_t i = 0; i < 2 * s; ++i) {
      want_y.push_back(2.0 * xv[i]);
      want_z.push_back(2.0 * xv[i] + 1);
      want_u[i / s] += 3.0 * xv[i];
    }
    EXPECT_EQ(values(out.at("y")), want_y);
    EXPECT_EQ(values(out.at("z")), want_z);
    EXPECT_EQ(values(out.at("u")), want_u);
  }
}

/// A Scatter whose dest is an input, as cpu.ScatterInPlace (found through the backend's rules),
/// so the value the Output exposes lives in the input's buffer.
TEST(CpuExecutable, InPlaceOutputIsReportedNotCopied) {
  Graph g;
  auto cache = g.tensor("cache", {8}).persist();
  auto idx = g.tensor("idx", {"s"}, DType::I32);
  auto src = g.tensor("src", {"s"});
  prim::scatter(cache, idx, src).output("new_cache");
  LlirGraph llir = testing::llir_direct(g);
  // The in-place alternative, as the backend's rule builds it (payload included).
  cpu::CpuBackend cpu(2);
  EGraph eg;
  std::vector<ClassId> cls;
  for (const LlirNode& n : llir.nodes) {
    std::vector<ClassId> kids;
    for (int i : n.inputs)
      kids.push_back(cls[i]);
    cls.push_back(eg.add(n.op, n.attrs, kids));
  }
  const OpDef* inplace = nullptr;
  for (const RuleSet& rs : cpu.rulesets()) {
    for (const Rule& r : rs.rules) {
      for (const Match& m : match(eg, r.pattern)) {
        if (!is_op(eg.node(m.root_node).op, OpKind::Scatter)) continue;
        if (r.guard && !r.guard(m, eg)) continue;
        r.apply(m, eg);
      }
    }
  }
  eg.rebuild();
  int scatter = -1;
  for (size_t i = 0; i < llir.nodes.size(); ++i)
    if (is_op(llir.nodes[i].op, OpKind::Scatter)) scatter = static_cast<int>(i);
  ASSERT_GE(scatter, 0);
  for (ENodeId e : eg.nodes_of(cls[scatter])) {
    const OpDef* op = eg.node(e).op;
    if (op->inplace_input == 0) {
      inplace = op;
      llir.nodes[scatter].op = op;
      llir.nodes[scatter].attrs = eg.attrs_of(e);
    }
  }
  if (!inplace) GTEST_SKIP() << "no in-place Scatter among the CPU ops";
  auto exe = cpu.load(llir);
  HostBuffer c = buffer(DType::F32, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  HostBuffer i = buffer(DType::I32, std::vector<int32_t>{2, 9, 2, 7});
  HostBuffer s = buffer(DType::F32, std::vector<float>{20, 90, 21, 70});
  const uint8_t* data = c.bytes.data();
  IoTable io;
  io.inputs["cache"] = &c;
  io.inputs["idx"] = &i;
  io.inputs["src"] = &s;
  HostBuffer out;
  io.outputs["new_cache"] = &out;
  exe->execute({{"s", 4}}, io);
  ASSERT_EQ(io.output_in_input.count("new_cache"), 1u);
  EXPECT_EQ(io.output_in_input.at("new_cache"), "cache");
  EXPECT_TRUE(out.bytes.empty());  // nothing copied
  EXPECT_EQ(c.bytes.data(), data);
  EXPECT_EQ(values(c), (std::vector<double>{0, 1, 21, 3, 4, 5, 6, 70}));
  // Nothing of the in-place chain is in the arena.
  EXPECT_EQ(exe->memory_bytes({{"s", 4}}), 0u);
}

TEST(CpuExecutable, MemoryIsReusedAndGrowsWithDims) {
  Graph g;
  auto x = g.tensor("x", {"s", 64});
  auto y = x;
  for (int i = 0; i < 10; ++i)
    y = (y * 1.5 + 1.0).exp2();
  y.sum(-1).output("y");
  cpu::CpuBackend cpu(1);
  auto exe = cpu.load(testing::llir_direct(g));
  const uint64_t m4 = exe->memory_bytes({{"s", 4}});
  const uint64_t m64 = exe->memory_bytes({{"s", 64}});
  EXPECT_GT(m4, 0u);
  EXPECT_GT(m64, m4);
  // 30 intermediates of s*64 floats; the plan reuses them.
  EXPECT_LT(m64, 6u * 64 * 64 * 4);
  BufferMap in;
  in["x"] = buffer(DType::F32, std::vector<float>(64 * 4, 0.0f));
  BufferMap out = testing::run_executable(*exe, g, in, {{"s", 4}});
  EXPECT_EQ(out.at("y").numel(), 4);
  EXPECT_EQ(exe->memory_bytes({{"s", 4}}), m4);
}

TEST(CpuExecutable, LoadRejectsForeignOps) {
  static const OpDef kForeign{"cuda.Mystery"};
  AddGraph a;
  LlirGraph llir = testing::llir_direct(a.g);
  for (LlirNode& n : llir.nodes)
    if (is_op(n.op, OpKind::Add)) n.op = &kForeign;
  cpu::CpuBackend cpu(1);
  expect_error([&] { cpu.load(llir); }, {"cuda.Mystery", "cpu"});
}

TEST(CpuExecutable, ProfileTimesAndTimesOut) {
  AddGraph a;
  cpu::CpuBackend cpu(1);
  auto exe = cpu.load(testing::llir_direct(a.g));
  HostBuffer x = buffer(DType::F32, std::vector<float>(2000, 1.0f));
  HostBuffer y = buffer(DType::F32, std::vector<float>(2000, 2.0f));
  HostBuffer sum;
  IoTable io;
  io.inputs["x"] = &x;
  io.inputs["y"] = &y;
  io.outputs["sum"] = &sum;
  const double t = exe->profile({{"s", 1000}}, io, 5, 10.0);
  EXPECT_GT(t, 0.0);
  EXPECT_LT(t, 10.0);
  EXPECT_EQ(values(sum)[0], 3.0);
  expect_error([&] { exe->profile({{"s", 1000}}, io, 3, 1e-12); }, {"timeout", "took"});
}

}  // namespace
}  // namespace luminal
