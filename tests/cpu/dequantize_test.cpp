// The Dequantize primitive: the CPU kernel against the reference (bitwise) for every weight block
// type, through the row views models use (row slices, the rotary row permutation, broadcast
// rows, row gathers), to f32 and f16; and the errors of block-typed tensors in the Tensor API.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "luminal/ir/prim.hpp"
#include "luminal/nn/linear.hpp"
#include "ops_test_util.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

int64_t row_for(DType t) { return block_size(t) == 256 ? 512 : 64; }

// Every program of the e-graph's cheapest kind on the CPU, against the reference.
void check(const Graph& g, const std::string& what, std::vector<DynMap> dyns = {{}},
           int dequantizes = 1) {
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  LlirGraph p = opstest::choose(b, opstest::prefer_op("Dequantize"));
  EXPECT_GE(opstest::count_op(p, "Dequantize"), dequantizes) << p.to_text();
  opstest::check_program(g, p, dyns, opstest::kExact, what);
}

class DequantizeTest : public ::testing::TestWithParam<DType> {};

TEST_P(DequantizeTest, WholeTensorToF32AndF16) {
  const DType t = GetParam();
  const int64_t k = row_for(t);
  Graph g;
  Tensor w = g.tensor("w", {6, k}, t);
  w.dequantize().output("f32");
  w.dequantize(DType::F16).output("f16");
  check(g, std::string(name(t)) + " whole");
}

TEST_P(DequantizeTest, RowViews) {
  const DType t = GetParam();
  const int64_t k = row_for(t);
  Graph g;
  Tensor w = g.tensor("w", {12, k}, t);
  // The first 9 rows, every other row, the rotary permutation of 2 heads of 6 rows, rows
  // broadcast. (A slice from a later row is a gather, not a view: an error for block types.)
  w.slice(0, 0, 9).dequantize().output("slice");
  w.reshape({6, 2, k}).slice(1, 0, 1).dequantize().output("strided");
  w.reshape({2, 3, 2, k}).permute({0, 2, 1, 3}).dequantize().output("rotary");
  w.slice(0, 0, 1).expand({4, k}).dequantize().output("broadcast");
  check(g, std::string(name(t)) + " views");
}

TEST_P(DequantizeTest, EmbeddingRows) {
  const DType t = GetParam();
  const int64_t k = row_for(t);
  Graph g;
  g.declare_dim("s", 1, 8);
  Tensor w = g.tensor("w", {16, k}, t);
  Tensor ids = g.tensor("ids", {"s"}, DType::I32);
  nn::embedding(w.dequantize(), ids).output("rows");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  LlirGraph p = opstest::choose(b, opstest::prefer_op("Dequantize"));
  // ids within the table (random_inputs draws them in [0, 15]).
  for (int64_t s : {1, 5}) {
    DynMap dyn{{"s", s}};
    testing::BufferMap in = opstest::random_inputs(g, dyn, 3, 0, 15);
    testing::BufferMap want = opstest::run_reference(g, in, dyn);
    auto exe = testing::load_plan(cpu, p, {dyn});
    testing::BufferMap got = testing::run_executable(exe, g, in, dyn);
    opstest::expect_same(got.at("rows"), want.at("rows"), opstest::kExact,
                         std::string(name(t)) + " rows s=" + std::to_string(s));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, DequantizeTest, ::testing::ValuesIn(kWeightBlockDTypes),
                         [](const auto& info) { return std::string(name(info.param)); });

TEST(DequantizeTest, BlockOutputIsItsBytes) {
  Graph g;
  Tensor w = g.tensor("w", {3, 32}, DType::Q8_0);
  w.output("copy");
  check(g, "block output", {{}}, 0);
}

TEST(DequantizeErrors, NameTheTensorAndTheFix) {
  using testing::expect_error;
  Graph g;
  Tensor w = g.tensor("w", {4, 64}, DType::Q4_1);
  expect_error([&] { (void)(w + w); }, {"Add", "'w'", "q4_1", ".dequantize()"});
  expect_error([&] { (void)w.sum(1); }, {"'w'", ".dequantize()"});
  expect_error(
      [&] {
        (void)w.permute({1, 0}).dequantize();
      },
      {"dequantize: 'w'", "q4_1", "whole rows"});
  expect_error([&] { (void)w.slice(1, 0, 32).dequantize(); }, {"whole rows"});
  expect_error([&] { (void)w.reshape({8, 32}).dequantize(); }, {"whole rows"});
  expect_error([&] { (void)w.slice(0, 1, 3); }, {"'w'", "q4_1", ".dequantize()"});
  expect_error([&] { (void)w.dequantize(DType::I32); }, {"not a float"});
  Tensor f = g.tensor("f", {4, 64}, DType::F32);
  expect_error([&] { (void)f.dequantize(); }, {"not a block-quantized type"});
  expect_error(
      [&] {
        (void)g.tensor("bad", {4, 48}, DType::Q4_0);
      },
      {"'bad'", "q4_0", "multiple of 32"});
  expect_error([&] { (void)g.tensor("bad", {4, 384}, DType::Q4_K); }, {"multiple of 256"});
  g.declare_dim("s", 1, 4);
  expect_error([&] { (void)g.tensor("dyn", {"s", 32}, DType::Q8_0); }, {"static shape"});
  ReferenceRuntime rt(g);
  expect_error([&] { rt.set("w", std::vector<float>(256, 0.f)); }, {"'w'", "q4_1", "raw blocks"});
  expect_error([&] { rt.set_bytes("w", std::vector<uint8_t>(21).data(), 21); },
               {"'w'", "whole number of q4_1 blocks"});
}

TEST(BlockDTypes, Sizes) {
  EXPECT_EQ(storage_bytes(DType::Q4_1, 576), 18u * 20u);
  EXPECT_EQ(storage_bytes(DType::Q6_K, 512), 2u * 210u);
  EXPECT_EQ(storage_bytes(DType::F16, 7), 14u);
  EXPECT_EQ(storage_bytes(DType::Q8_0, Shape{Expr::var("s"), Expr(64)}).eval({{"s", 3}}),
            3 * 2 * 34);
  testing::expect_error([] { (void)storage_bytes(DType::Q4_K, 300); }, {"q4_k", "blocks of 256"});
  for (DType t : kBlockDTypes) {
    EXPECT_EQ(parse_dtype(name(t)), t);
    EXPECT_TRUE(is_block(t));
    EXPECT_FALSE(is_float(t));
  }
  EXPECT_EQ(parse_dtype("Q4_K"), DType::Q4_K);
}

}  // namespace
}  // namespace luminal
