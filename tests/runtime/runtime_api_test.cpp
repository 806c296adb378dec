// The runtime data API: typed set/get conversions and every error it promises.
#include <gtest/gtest.h>

#include "support/check.hpp"

namespace luminal {
namespace {

// Runs f and checks it throws luminal::Error whose message contains every needle.
template <class F>
void expect_error(F&& f, std::initializer_list<const char*> needles) {
  try {
    f();
    ADD_FAILURE() << "no exception thrown";
  } catch (const Error& e) {
    for (const char* n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(RuntimeApi, SetConvertsToTheInputDtype) {
  Graph g;
  auto h = g.tensor("h", {3}, DType::F16);
  auto b = g.tensor("b", {3}, DType::BF16);
  auto i = g.tensor("i", {3}, DType::I8);
  auto q = g.tensor("q", {2}, DType::Bool);
  auto oh = h.output("oh");
  auto ob = b.output("ob");
  auto oi = i.output("oi");
  auto oq = q.output("oq");
  ReferenceRuntime rt(g);
  rt.set(h,
         std::vector<float>{1.0f / 3, 65504.0f, 1e6f});  // rounds to nearest even; overflow -> inf
  rt.set(b, std::vector<double>{1.0 / 3, -2.5, 1e-40});
  rt.set(i, std::vector<int64_t>{-128, 127, 0});
  rt.set(q, std::vector<bool>{true, false});
  rt.execute();
  std::vector<double> hv = rt.get<double>(oh);
  EXPECT_EQ(hv[0], 0.333251953125);
  EXPECT_EQ(hv[1], 65504.0);
  EXPECT_TRUE(std::isinf(hv[2]));
  std::vector<double> bv = rt.get<double>(ob);
  EXPECT_EQ(bv[0], 0.333984375);
  EXPECT_EQ(bv[1], -2.5);
  EXPECT_EQ(rt.get<int>(oi), (std::vector<int>{-128, 127, 0}));
  EXPECT_EQ(rt.get<int>(oq), (std::vector<int>{1, 0}));
  EXPECT_EQ(rt.get<float>(oi), (std::vector<float>{-128, 127, 0}));  // ints read as floats
}

TEST(RuntimeApi, SetRejectsLossyData) {
  Graph g;
  auto i = g.tensor("ids", {2}, DType::I32);
  auto u = g.tensor("u", {2}, DType::U8);
  auto q = g.tensor("mask", {2}, DType::Bool);
  ReferenceRuntime rt(g);
  expect_error([&] { rt.set(i, std::vector<float>{1, 2}); }, {"'ids'", "i32", "floating-point"});
  expect_error([&] { rt.set(u, std::vector<int>{1, 256}); }, {"'u'", "256", "index 1", "u8"});
  expect_error([&] { rt.set(u, std::vector<int>{-1, 0}); }, {"'u'", "-1"});
  expect_error([&] { rt.set(q, std::vector<int>{0, 2}); }, {"'mask'", "2"});
  expect_error(
      [&] {
        rt.set(i, std::vector<int64_t>{int64_t{1} << 40, 0});
      },
      {"'ids'", "does not fit"});
}

TEST(RuntimeApi, GetRejectsLossyReads) {
  Graph g;
  auto x = g.tensor("x", {1});
  auto y = (x * 2.0).output("y");
  auto big = g.tensor("big", {1}, DType::I64);
  auto ob = big.output("ob");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1.5f});
  rt.set(big, std::vector<int64_t>{int64_t{1} << 40});
  rt.execute();
  expect_error([&] { rt.get<int>(y); }, {"'y'", "f32", "int32_t"});
  expect_error([&] { rt.get<int32_t>(ob); }, {"'ob'", "int32_t", "get<int64_t>"});
  EXPECT_EQ(rt.get<int64_t>(ob), (std::vector<int64_t>{int64_t{1} << 40}));
  EXPECT_EQ(rt.get<float>(y), (std::vector<float>{3.0f}));
}

TEST(RuntimeApi, UnsetInput) {
  Graph g;
  auto x = g.tensor("tokens", {2});
  (x + 1.0).output("y");
  ReferenceRuntime rt(g);
  expect_error([&] { rt.execute(); }, {"'tokens'", "no data", "set"});
}

TEST(RuntimeApi, WrongElementCount) {
  Graph g;
  auto x = g.tensor("x", {2, 3});
  auto d = g.tensor("d", {"s", 4});
  (x.sum(1)).output("y");
  (d.sum(1)).output("z");
  ReferenceRuntime rt(g);
  expect_error([&] { rt.set(x, std::vector<float>(5)); }, {"'x'", "[2, 3]", "6", "5"});
  rt.set(x, std::vector<float>(6));
  rt.set(d, std::vector<float>(10));  // unknown until s is known
  expect_error([&] { rt.execute({{"s", 3}}); }, {"'d'", "10", "12"});
}

TEST(RuntimeApi, MissingDynamicDim) {
  Graph g;
  auto x = g.tensor("x", {"seq", 2});
  x.sum(0).output("y");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>(4));
  expect_error([&] { rt.execute(); }, {"'seq'", "set_dim"});
  g.set_dim("seq", 2);
  rt.execute();  // now fine
  EXPECT_EQ(rt.get<float>("y"), (std::vector<float>{0, 0}));
}

TEST(RuntimeApi, ZIsNotADynamicDimension) {
  Graph g;
  auto x = g.tensor("x", {2});
  x.output("y");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>(2));
  expect_error([&] { rt.execute({{"z", 1}}); }, {"'z'", "index variable"});
}

TEST(RuntimeApi, DimOutsideDeclaredRange) {
  Graph g;
  auto x = g.tensor("x", {"s"});
  g.declare_dim("s", 1, 8);
  x.output("y");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>(9));
  expect_error([&] { rt.execute({{"s", 9}}); }, {"s = 9", "[1, 8]"});
}

TEST(RuntimeApi, UnknownTensor) {
  Graph g;
  auto x = g.tensor("x", {1});
  auto y = (x + 1.0);
  y.output("y");
  auto not_output = x * 3.0;
  ReferenceRuntime rt(g);
  expect_error([&] { rt.set("nope", std::vector<float>{1}); }, {"'nope'", "known: x, y"});
  expect_error([&] { rt.get<float>("nope"); }, {"'nope'"});
  expect_error([&] { rt.set(y, std::vector<float>{1}); }, {"not an input"});
  expect_error([&] { rt.set("y", std::vector<float>{1}); }, {"'y' is an output"});
  rt.set(x, std::vector<float>{1});
  rt.execute();
  expect_error([&] { rt.get<float>(not_output); }, {"not an output", ".output("});
  expect_error([&] { rt.get<float>("x"); }, {"'x' is an input"});
  Graph other;
  auto z = other.tensor("z", {1});
  expect_error([&] { rt.set(z, std::vector<float>{1}); }, {"different graph"});
}

TEST(RuntimeApi, GetBeforeExecute) {
  Graph g;
  auto x = g.tensor("x", {1});
  auto y = x.output("y");
  ReferenceRuntime rt(g);
  expect_error([&] { rt.get<float>(y); }, {"'y'", "execute"});
}

TEST(RuntimeApi, OutputReadableThroughOriginalTensorOrLabel) {
  Graph g;
  auto x = g.tensor("x", {2});
  auto y = x * 2.0;
  y.output("double");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, 2});
  rt.execute();
  EXPECT_EQ(rt.get<float>(y), (std::vector<float>{2, 4}));
  EXPECT_EQ(rt.get<float>("double"), (std::vector<float>{2, 4}));
  std::vector<uint8_t> bytes = rt.get_bytes(y);
  ASSERT_EQ(bytes.size(), 8u);
  float v[2];
  std::memcpy(v, bytes.data(), 8);
  EXPECT_EQ(v[1], 4.0f);
}

TEST(RuntimeApi, SetBytes) {
  Graph g;
  auto x = g.tensor("x", {2}, DType::BF16);
  auto y = x.output("y");
  ReferenceRuntime rt(g);
  uint16_t raw[2] = {0x3F80, 0xC000};  // 1.0, -2.0
  rt.set_bytes(x, raw, sizeof raw);
  rt.execute();
  EXPECT_EQ(rt.get<float>(y), (std::vector<float>{1.0f, -2.0f}));
  expect_error([&] { rt.set_bytes("x", raw, 3); }, {"'x'", "3 bytes", "bf16"});
}

TEST(RuntimeApi, InputsPersistAcrossExecutions) {
  Graph g;
  auto w = g.tensor("w", {2}).persist();
  auto x = g.tensor("x", {2});
  auto y = (w * x).output("y");
  ReferenceRuntime rt(g);
  rt.set(w, std::vector<float>{2, 3});
  for (float k : {1.0f, 10.0f}) {
    rt.set(x, std::vector<float>{k, k});
    rt.execute();
    EXPECT_EQ(rt.get<float>(y), (std::vector<float>{2 * k, 3 * k}));
  }
}

TEST(RuntimeApi, OnlyNeededInputsMustBeSet) {
  Graph g;
  auto used = g.tensor("used", {1});
  g.tensor("unused", {1});
  auto y = (used + 1.0).output("y");
  ReferenceRuntime rt(g);
  rt.set(used, std::vector<float>{1});
  rt.execute();
  EXPECT_EQ(rt.get<float>(y), (std::vector<float>{2}));
}

}  // namespace
}  // namespace luminal
