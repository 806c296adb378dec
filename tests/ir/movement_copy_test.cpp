// Movement ops that move data (slice, pad, unfold, repeat, contiguous, triu/tril, concat/stack)
// against host references, byte for byte.
#include "support/movement_reference.hpp"

namespace luminal {
namespace {

using namespace movement_testing;

// ---------------------------------------------------------------- slice

struct SliceCase {
  int axis;
  int64_t start;
  std::optional<int64_t> end;
  int64_t step;
};

std::string slice_str(const SliceCase& c) {
  return "slice(" + std::to_string(c.axis) + ", " + std::to_string(c.start) + ", " +
         (c.end ? std::to_string(*c.end) : "none") + ", " + std::to_string(c.step) + ")";
}

Tensor apply_slice(const Tensor& x, const SliceCase& c) {
  return c.end ? x.slice(c.axis, c.start, Dim(*c.end), c.step)
               : x.slice(c.axis, c.start, std::nullopt, c.step);
}

const SliceCase kSlices[] = {{0, 0, 3, 1},
                             {1, 0, std::nullopt, 1},
                             {1, 2, 6, 1},
                             {1, 1, std::nullopt, 2},
                             {1, 0, 7, 3},
                             {0, 1, 5, 2},
                             {1, -3, std::nullopt, 1},
                             {1, -5, -1, 2},
                             {1, 2, -2, 1},
                             {1, -100, 100, 1},
                             {0, -100, 2, 1},
                             {1, 3, 100, 3},
                             {1, 5, 2, 1},
                             {1, 7, std::nullopt, 1},
                             {1, 100, std::nullopt, 1},
                             {1, 0, 0, 1},
                             {0, 4, 5, 1},
                             {1, 0, 7, 10},
                             {1, 6, 7, 5},
                             {-1, -2, std::nullopt, 1},
                             {-2, 1, -1, 3},
                             {1, -7, -6, 1},
                             {1, -8, -7, 1}};

TEST(Slice, PythonSemanticsOverDtypes) {
  const Ints in = {5, 7};
  for (const SliceCase& c : kSlices) {
    int a = c.axis < 0 ? c.axis + 2 : c.axis;
    Ref want = r_slice(input(in), a, c.start, c.end, c.step);
    for (DType t : kTypes)
      check1(
          t, in, [&](auto& x) { return apply_slice(x[0], c); }, want, 0, slice_str(c));
    // on a transposed input (slice the same logical axis)
    check1(
        DType::F32, {7, 5}, [&](auto& x) { return apply_slice(x[0].transpose(0, 1), c); },
        r_slice(r_transpose(input({7, 5}), 0, 1), a, c.start, c.end, c.step), 0,
        "transposed " + slice_str(c));
  }
}

TEST(Slice, LinearStridesAreViews) {
  Graph g;
  auto x = g.tensor("x", {5, 7});
  EXPECT_EQ(x.slice(1, 0, 3).id(), x.id());
  EXPECT_EQ(x.slice(0, 0).id(), x.id());
  EXPECT_EQ(x.slice(0, -5, 2).id(), x.id());  // -5 resolves to 0
  auto y = x.slice(1, 0, 3);
  EXPECT_EQ(shape_to_string(y.shape()), "[5, 3]");
  EXPECT_FALSE(y.view().has_base());
  // A start or a step: a view at an element offset (View::base), no node.
  auto a = x.slice(1, 1, 3);
  EXPECT_EQ(a.id(), x.id());
  EXPECT_EQ(a.view().base, Expr(1));
  auto b = x.slice(0, -2).slice(1, 2, 7, 2);
  EXPECT_EQ(b.id(), x.id());
  EXPECT_EQ(b.view().base, Expr(3 * 7 + 2));
  EXPECT_EQ(b.view().strides[1], 2 * Expr::z());
  // Not for a merged (non-linear) stride: a gather. Block-quantized rows stay prefix slices (a
  // gather of blocks is an error, as before: views of blocks keep whole rows from row 0).
  auto m = x.transpose(0, 1).merge_dims(0);
  EXPECT_NE(m.slice(0, 1).id(), x.id());
  auto q = g.tensor("q", {4, 32}, DType::Q8_0);
  EXPECT_EQ(q.slice(0, 0, 2).id(), q.id());
  EXPECT_THROW(q.slice(0, 1), Error);
}

TEST(Slice, ChainedAndRank3) {
  const Ints in = {3, 6, 4};
  check1(
      DType::F32, in,
      [](auto& x) { return x[0].slice(1, 1, 5).slice(1, 1, std::nullopt, 2).slice(2, -3, -1); },
      r_slice(r_slice(r_slice(input(in), 1, 1, 5, 1), 1, 1, std::nullopt, 2), 2, -3, -1, 1), 0,
      "chain");
  check1(
      DType::I64, in,
      [](auto& x) {
        return x[0].permute({2, 0, 1}).slice(2, 0, 4).slice(0, 1, 3).reshape({24});
      },
      r_reshape(r_slice(r_slice(r_permute(input(in), {2, 0, 1}), 2, 0, 4, 1), 0, 1, 3, 1), {24}), 0,
      "permuted");
  check1(
      DType::F16, in,
      [](auto& x) {
        return x[0].expand({2, 3, 6, 4}).slice(2, 1, 6, 2).slice(0, 1);
      },
      r_slice(r_slice(r_expand(input(in), {2, 3, 6, 4}), 2, 1, 6, 2), 0, 1, std::nullopt, 1), 0,
      "expanded");
}

TEST(Slice, DynamicDim) {
  const SliceCase cases[] = {{0, 1, -1, 1},
                             {0, -2, std::nullopt, 1},
                             {0, 0, std::nullopt, 2},
                             {0, 1, 3, 1},
                             {0, 2, std::nullopt, 3},
                             {0, -10, 2, 1},
                             {0, 0, 2, 1},
                             {0, 3, 1, 1}};
  for (const SliceCase& c : cases) {
    std::vector<Case> runs;
    for (int64_t s : {1, 2, 3, 6})
      runs.push_back({{{"s", s}}, r_slice(input({s, 3}), 0, c.start, c.end, c.step)});
    check(
        DType::F32, {{"s", 3}}, [&](auto& x) { return apply_slice(x[0], c); }, runs, 0,
        "dyn " + slice_str(c));
  }
  // dynamic bounds: x[1 : s - 1] of an axis of 8
  std::vector<Case> runs;
  for (int64_t s : {1, 3, 8, 12})
    runs.push_back({{{"s", s}}, r_slice(input({8}), 0, 1, std::max<int64_t>(s - 1, 0), 1)});
  check(
      DType::I32, {{8}}, [](auto& x) { return x[0].slice(0, 1, Expr::var("s") - 1); }, runs, 0,
      "dyn bounds");
}

TEST(Slice, DynamicStart) {
  // x[p : p + 3] and x[p::2] of an axis of 8 (a KV-cache style window), clamped at the end
  std::vector<Case> win, tail;
  for (int64_t p : {0, 1, 5, 7, 8, 10}) {
    win.push_back({{{"p", p}}, r_slice(input({8, 2}), 0, std::min<int64_t>(p, 8), p + 3, 1)});
    tail.push_back(
        {{{"p", p}}, r_slice(input({2, 8}), 1, std::min<int64_t>(p, 8), std::nullopt, 2)});
  }
  Expr p = Expr::var("p");
  for (DType t : {DType::F32, DType::BF16, DType::I64}) {
    check(
        t, {{8, 2}}, [&](auto& x) { return x[0].slice(0, p, p + 3); }, win, 0, "window");
    check(
        t, {{2, 8}}, [&](auto& x) { return x[0].slice(1, p, std::nullopt, 2); }, tail, 0, "tail");
  }
}

// slice_exact: x[p % 5 : p % 5 + 3] of an axis of 8 (a ring's window, which always fits): the
// same values as the clamped slice, its length the given 3 (no clamp in the shape); constant
// bounds past the axis are refused.
TEST(Slice, ExactWindow) {
  std::vector<Case> win;
  for (int64_t p : {0, 1, 4, 5, 9, 12})
    win.push_back({{{"p", p}}, r_slice(input({8, 2}), 0, p % 5, p % 5 + 3, 1)});
  const Expr p = Expr::var("p");
  for (DType t : {DType::F32, DType::BF16})
    check(
        t, {{8, 2}}, [&](auto& x) { return x[0].slice_exact(0, p % 5, 3); }, win, 0, "exact");
  Graph g;
  const Tensor x = g.tensor("x", {8, 2});
  EXPECT_EQ(x.slice_exact(0, p % 5, 3).shape()[0], Expr(3));
  expect_error([&] { x.slice_exact(0, 6, 3); },
               {"slice_exact: 3 elements from 6 do not fit axis 0", "use slice"});
}

TEST(Slice, DynamicEmptyResults) {
  // the sliced axis (or an axis after it) becomes empty at run time
  std::vector<Case> runs, runs2;
  for (int64_t s : {1, 2, 4}) {
    runs.push_back({{{"s", s}}, r_slice(input({3, s}), 1, 1, std::nullopt, 1)});
    runs2.push_back({{{"s", s}}, r_slice(input({s, 2}), 0, 1, std::nullopt, 2)});
  }
  check(
      DType::F32, {{3, "s"}}, [](auto& x) { return x[0].slice(1, 1); }, runs, 0, "dyn empty inner");
  check(
      DType::F32, {{"s", 2}}, [](auto& x) { return x[0].slice(0, 1, std::nullopt, 2); }, runs2, 0,
      "dyn empty outer");
}

TEST(Slice, Errors) {
  Graph g;
  auto x = g.tensor("x", {5, 7});
  expect_error([&] { x.slice(1, 0, 3, 0); }, {"slice", "step", "[5, 7]"});
  expect_error([&] { x.slice(1, 0, 3, -1); }, {"slice", "step"});
  expect_error([&] { x.slice(2, 0, 3); }, {"slice", "axis 2"});
}

// ---------------------------------------------------------------- pad

TEST(Pad, ConstantBeforeAfterAndCrops) {
  using Pads = std::vector<std::pair<int64_t, int64_t>>;
  const Pads cases[] = {
      {{1, 2}, {0, 3}},   {{0, 0}, {2, 0}},   {{1, 1}},          {},
      {{-1, 0}, {0, -2}}, {{2, -1}, {-1, 1}}, {{-4, 0}, {0, 0}}, {{0, -4}, {-3, -3}},
      {{0, 0}, {1, 1}},   {{-2, 3}, {3, -2}}};
  const Ints in = {4, 6};
  for (const Pads& p : cases) {
    std::vector<std::pair<Dim, Dim>> pd;
    std::string what = "pad";
    for (auto [b, a] : p) {
      pd.push_back({b, a});
      what += " (" + std::to_string(b) + "," + std::to_string(a) + ")";
    }
    for (DType t : kTypes) {
      const double value = t == DType::Bool ? 1 : is_float(t) ? 1.5 : -3;
      check1(
          t, in, [&](auto& x) { return x[0].pad(pd, value); }, r_pad(input(in), p), value, what);
      check1(
          t, in, [&](auto& x) { return x[0].pad(pd); }, r_pad(input(in), p), 0, what + " zero");
    }
    check1(
        DType::F32, {6, 4}, [&](auto& x) { return x[0].transpose(0, 1).pad(pd, -7); },
        r_pad(r_transpose(input({6, 4}), 0, 1), p), -7, "transposed " + what);
  }
  check1(
      DType::F32, {2, 3, 4},
      [](auto& x) {
        return x[0].pad({{1, 0}, {0, 2}, {3, 1}}, 9);
      },
      r_pad(input({2, 3, 4}), {{1, 0}, {0, 2}, {3, 1}}), 9, "rank 3");
}

TEST(Pad, ExactWithInfinitiesAndNaN) {
  Graph g;
  auto x = g.tensor("x", {2, 2});
  auto y = x.pad({{1, 1}, {0, 1}}).output("y");
  auto z = x.pad({{0, 0}, {1, 0}}, INFINITY).output("z");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{INFINITY, -INFINITY, NAN, -0.0f});
  rt.execute();
  std::vector<float> got = rt.get<float>(y);
  const float want[] = {0, 0, 0, INFINITY, -INFINITY, 0, NAN, -0.0f, 0, 0, 0, 0};
  ASSERT_EQ(got.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else {
      EXPECT_EQ(got[i], want[i]) << i;
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << i;
    }
  }
  std::vector<float> gz = rt.get<float>(z);
  EXPECT_EQ(gz[0], INFINITY);
  EXPECT_EQ(gz[1], INFINITY);
  EXPECT_EQ(gz[2], -INFINITY);
  EXPECT_EQ(gz[3], INFINITY);
  EXPECT_TRUE(std::isnan(gz[4]));
  EXPECT_TRUE(std::signbit(gz[5]) && gz[5] == 0);
}

TEST(Pad, DynamicDims) {
  for (DType t : {DType::F32, DType::BF16, DType::I32}) {
    std::vector<Case> runs, crop, dynpad;
    for (int64_t s : {1, 2, 5}) {
      runs.push_back({{{"s", s}}, r_pad(input({s, 3}), {{1, 2}, {0, 1}})});
      crop.push_back({{{"s", s}}, r_pad(input({s, 3}), {{0, -1}, {-1, 2}})});
      dynpad.push_back({{{"s", s}}, r_pad(input({2, 3}), {{0, s}, {s, 1}})});
    }
    check(
        t, {{"s", 3}},
        [](auto& x) {
          return x[0].pad({{1, 2}, {0, 1}}, 4);
        },
        runs, 4, "dyn pad");
    check(
        t, {{"s", 3}},
        [](auto& x) {
          return x[0].pad({{0, -1}, {-1, 2}}, 4);
        },
        crop, 4, "dyn crop");
    check(
        t, {{2, 3}},
        [](auto& x) {
          return x[0].pad({{0, "s"}, {"s", 1}}, 4);
        },
        dynpad, 4, "dyn amounts");
  }
}

TEST(Pad, Errors) {
  Graph g;
  auto x = g.tensor("x", {4, 6});
  expect_error([&] { x.pad({{1, 1}, {1, 1}, {1, 1}}); }, {"pad", "[4, 6]"});
  expect_error([&] { x.pad({{-3, -2}}); }, {"pad", "[4, 6]"});
  expect_error([&] { x.pad({{0, -5}}); }, {"pad", "[4, 6]"});
  expect_error([&] { x.pad({{0, 0}, {-7, 0}}); }, {"pad", "[4, 6]"});
  auto i = g.tensor("i", {4}, DType::I32);
  EXPECT_THROW(i.pad({{1, 1}}, 0.5), Error);
}

// ---------------------------------------------------------------- unfold, repeat, contiguous

TEST(Unfold, SlidingWindows) {
  struct C {
    int64_t size, step;
  };
  for (C c : {C{3, 1}, C{3, 2}, C{2, 3}, C{10, 1}, C{1, 1}, C{4, 4}, C{3, 20}, C{5, 2}}) {
    std::string what = "unfold size " + std::to_string(c.size) + " step " + std::to_string(c.step);
    for (DType t : {DType::F32, DType::BF16, DType::I64, DType::Bool}) {
      check1(
          t, {10}, [&](auto& x) { return x[0].unfold(0, c.size, c.step); },
          r_unfold(input({10}), 0, c.size, c.step), 0, what);
    }
    if (c.size <= 7) {
      check1(
          DType::F32, {7, 3}, [&](auto& x) { return x[0].unfold(0, c.size, c.step); },
          r_unfold(input({7, 3}), 0, c.size, c.step), 0, "axis 0 " + what);
      check1(
          DType::F32, {2, 7, 3}, [&](auto& x) { return x[0].unfold(-2, c.size, c.step); },
          r_unfold(input({2, 7, 3}), 1, c.size, c.step), 0, "axis -2 " + what);
      check1(
          DType::F16, {3, 7},
          [&](auto& x) { return x[0].transpose(0, 1).unfold(0, c.size, c.step); },
          r_unfold(r_transpose(input({3, 7}), 0, 1), 0, c.size, c.step), 0, "transposed " + what);
    }
  }
  // unfold of an unfold
  check1(
      DType::F32, {9}, [](auto& x) { return x[0].unfold(0, 4, 1).unfold(0, 2, 2); },
      r_unfold(r_unfold(input({9}), 0, 4, 1), 0, 2, 2), 0, "twice");
}

TEST(Unfold, TorchExampleAndDynamic) {
  // torch.arange(1., 8).unfold(0, 2, 2) == [[1, 2], [3, 4], [5, 6]]
  Graph g;
  auto x = g.tensor("x", {7});
  auto a = x.unfold(0, 2, 1).output("a");
  auto b = x.unfold(0, 2, 2).output("b");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, 2, 3, 4, 5, 6, 7});
  rt.execute();
  EXPECT_EQ(rt.get<float>(a), (std::vector<float>{1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7}));
  EXPECT_EQ(rt.shape(a), (Ints{6, 2}));
  EXPECT_EQ(rt.get<float>(b), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(rt.shape(b), (Ints{3, 2}));

  std::vector<Case> runs;
  for (int64_t s : {3, 4, 8, 9})
    runs.push_back({{{"s", s}}, r_unfold(input({s, 2}), 0, 3, 2)});
  check(
      DType::F32, {{"s", 2}}, [](auto& x) { return x[0].unfold(0, 3, 2); }, runs, 0, "dynamic");

  expect_error([&] { x.unfold(0, 8, 1); }, {"unfold", "[7]"});
  expect_error([&] { x.unfold(0, 2, 0); }, {"unfold", "step", "[7]"});
  expect_error([&] { x.unfold(1, 2, 1); }, {"unfold", "axis 1"});
}

TEST(Repeat, TorchTiling) {
  struct C {
    Ints in, reps;
  };
  const C cases[] = {
      {{2, 3}, {2, 2}}, {{2, 3}, {1, 3}}, {{2, 3}, {3, 1, 2}}, {{2, 3}, {2, 1, 1, 1}},
      {{1, 3}, {4, 2}}, {{3}, {4, 2}},    {{2, 1}, {1, 3}},    {{2, 3}, {1, 1}},
      {{2, 3}, {0, 2}}, {{}, {3}},        {{2, 3}, {2, 3, 2}}};
  for (const C& c : cases) {
    std::string what = "repeat " + str(c.in) + " " + str(c.reps);
    for (DType t : kTypes) {
      check1(
          t, c.in, [&](auto& x) { return x[0].repeat(dims(c.reps)); },
          r_repeat(input(c.in), c.reps), 0, what);
    }
    if (c.in.size() == 2) {
      Ints tin = {c.in[1], c.in[0]};
      check1(
          DType::F32, tin, [&](auto& x) { return x[0].transpose(0, 1).repeat(dims(c.reps)); },
          r_repeat(r_transpose(input(tin), 0, 1), c.reps), 0, "transposed " + what);
    }
  }
  // torch: torch.tensor([1, 2, 3]).repeat(4, 2) has shape [4, 6]
  Graph g;
  auto x = g.tensor("x", {3}, DType::I32);
  auto y = x.repeat({4, 2}).output("y");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<int>{1, 2, 3});
  rt.execute();
  EXPECT_EQ(rt.shape(y), (Ints{4, 6}));
  std::vector<int> want;
  for (int r = 0; r < 4; ++r)
    for (int v : {1, 2, 3, 1, 2, 3})
      want.push_back(v);
  EXPECT_EQ(rt.get<int>(y), want);
  EXPECT_EQ(x.repeat({4, 2}).id(), x.id());  // a view
  expect_error([&] { g.tensor("z", {2, 3}).repeat({2}); }, {"repeat", "[2, 3]"});

  std::vector<Case> runs;
  for (int64_t s : {1, 2, 4})
    runs.push_back({{{"s", s}}, r_repeat(input({s, 2}), {2, 3})});
  check(
      DType::F32, {{"s", 2}},
      [](auto& x) {
        return x[0].repeat({2, 3});
      },
      runs, 0, "dynamic input");
  std::vector<Case> runs2;
  for (int64_t s : {1, 3})
    runs2.push_back({{{"s", s}}, r_repeat(input({2, 2}), {s, 1, 2})});
  check(
      DType::F32, {{2, 2}},
      [](auto& x) {
        return x[0].repeat({"s", 1, 2});
      },
      runs2, 0, "dynamic counts");
  // repeat then reshape (a view of a view) then slice
  check1(
      DType::BF16, {2, 3},
      [](auto& x) {
        return x[0].repeat({2, 2}).reshape({24}).slice(0, 5, 20, 3);
      },
      r_slice(r_reshape(r_repeat(input({2, 3}), {2, 2}), {24}), 0, 5, 20, 3), 0,
      "repeat reshape slice");
}

TEST(Contiguous, CopiesAnyViewExactly) {
  for (DType t : kTypes) {
    check1(
        t, {2, 3, 4},
        [](auto& x) {
          return x[0].permute({2, 0, 1}).contiguous();
        },
        r_permute(input({2, 3, 4}), {2, 0, 1}), 0, "permuted");
    check1(
        t, {3},
        [](auto& x) {
          return x[0].expand({2, 3}).contiguous();
        },
        r_expand(input({3}), {2, 3}), 0, "expanded");
    check1(
        t, {2, 3}, [](auto& x) { return x[0].contiguous(); }, input({2, 3}), 0, "contiguous");
  }
  Graph g;
  auto x = g.tensor("x", {2, 3});
  auto c = x.transpose(0, 1).contiguous();
  EXPECT_TRUE(c.view().is_contiguous());
  EXPECT_EQ(shape_to_string(c.shape()), "[3, 2]");
}

TEST(Contiguous, KeepsNegativeZeroAndNaNPayloads) {
  Graph g;
  auto x = g.tensor("x", {4});
  auto y = x.unsqueeze(0).expand({2, 4}).contiguous().slice(1, 1, 4, 2).output("y");
  ReferenceRuntime rt(g);
  const uint32_t bits[] = {0x7fc01234u, 0x80000000u, 0xffa00001u, 0x7f800001u};
  rt.set_bytes(x, bits, sizeof(bits));
  rt.execute();
  std::vector<uint8_t> got = rt.get_bytes(y);
  ASSERT_EQ(got.size(), 16u);
  uint32_t out[4];
  std::memcpy(out, got.data(), 16);
  EXPECT_EQ(out[0], 0x80000000u);
  EXPECT_EQ(out[1], 0x7f800001u);  // a signalling NaN stays signalling
  EXPECT_EQ(out[2], 0x80000000u);
  EXPECT_EQ(out[3], 0x7f800001u);
}

// ---------------------------------------------------------------- triu / tril

TEST(Triangle, TriuTrilOverShapesAndK) {
  const Ints shapes[] = {{4, 4}, {3, 5}, {5, 3}, {2, 3, 4}, {2, 1, 3, 3}, {1, 1}, {1, 4}};
  for (const Ints& s : shapes) {
    for (int64_t k : {-1, 0, 1, -5, 5}) {
      std::string what = str(s) + " k=" + std::to_string(k);
      for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I32, DType::Bool, DType::F64}) {
        check1(
            t, s, [&](auto& x) { return x[0].triu(k); }, r_triangle(input(s), true, k), 0,
            "triu " + what);
        check1(
            t, s, [&](auto& x) { return x[0].tril(k); }, r_triangle(input(s), false, k), 0,
            "tril " + what);
      }
    }
  }
  // of a transposed input and of a broadcast one
  for (int64_t k : {-1, 0, 1}) {
    check1(
        DType::F32, {5, 3}, [&](auto& x) { return x[0].transpose(0, 1).triu(k); },
        r_triangle(r_transpose(input({5, 3}), 0, 1), true, k), 0, "transposed triu");
    check1(
        DType::F32, {4},
        [&](auto& x) {
          return x[0].expand({2, 3, 4}).tril(k);
        },
        r_triangle(r_expand(input({4}), {2, 3, 4}), false, k), 0, "expanded tril");
  }
}

TEST(Triangle, ExactWithInfAndNaN) {
  Graph g;
  auto x = g.tensor("x", {2, 2});
  auto u = x.triu().output("u");
  auto l = x.tril(-1).output("l");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{INFINITY, NAN, -INFINITY, NAN});
  rt.execute();
  std::vector<float> gu = rt.get<float>(u), gl = rt.get<float>(l);
  EXPECT_EQ(gu[0], INFINITY);
  EXPECT_TRUE(std::isnan(gu[1]));
  EXPECT_EQ(gu[2], 0.0f);
  EXPECT_TRUE(std::isnan(gu[3]));
  EXPECT_EQ(gl, (std::vector<float>{0, 0, -INFINITY, 0}));
}

TEST(Triangle, DynamicAndErrors) {
  for (int64_t k : {-1, 0, 1}) {
    std::vector<Case> runs;
    for (int64_t s : {1, 2, 5})
      runs.push_back({{{"s", s}}, r_triangle(input({2, s, s}), k >= 0, k)});
    check(
        DType::F32, {{2, "s", "s"}}, [&](auto& x) { return k >= 0 ? x[0].triu(k) : x[0].tril(k); },
        runs, 0, "dyn k=" + std::to_string(k));
  }
  std::vector<Case> runs;
  for (int64_t s : {1, 3, 6})
    runs.push_back({{{"s", s}}, r_triangle(input({3, s}), false, 0)});
  check(
      DType::BF16, {{3, "s"}}, [](auto& x) { return x[0].tril(); }, runs, 0, "dyn cols");
  Graph g;
  expect_error([&] { g.tensor("x", {4}).triu(); }, {"triu", "[4]"});
  expect_error([&] { g.tensor("y", {}).tril(); }, {"tril", "[]"});
}

// ---------------------------------------------------------------- concat / stack

TEST(Concat, TwoAndThreeInputsOnEveryAxis) {
  for (int axis : {0, 1, 2, -1, -3}) {
    const int a = axis < 0 ? axis + 3 : axis;
    Ints s0 = {2, 3, 4}, s1 = s0, s2 = s0;
    s1[a] = 1;
    s2[a] = 3;
    for (DType t : kTypes) {
      Ref r0 = input(s0), r1 = input(s1, prod(s0)), r2 = input(s2, prod(s0) + prod(s1));
      check(
          t, {dims(s0), dims(s1)},
          [&](auto& x) {
            return concat({x[0], x[1]}, axis);
          },
          {{{}, r_concat({r0, r1}, a)}}, 0, "concat2 axis " + std::to_string(axis));
      check(
          t, {dims(s0), dims(s1), dims(s2)},
          [&](auto& x) {
            return concat({x[0], x[1], x[2]}, axis);
          },
          {{{}, r_concat({r0, r1, r2}, a)}}, 0, "concat3 axis " + std::to_string(axis));
    }
  }
  // views as inputs, the same tensor twice, an empty piece
  Ref r0 = input({3, 2}), r1 = input({2, 3}, 6);
  check(
      DType::F32, {{3, 2}, {2, 3}},
      [](auto& x) {
        return concat({x[0], x[1].transpose(0, 1), x[0]}, 1);
      },
      {{{}, r_concat({r0, r_transpose(r1, 0, 1), r0}, 1)}}, 0, "views");
  Ref e0 = input({2, 0}, 0), e1 = input({2, 3}, 0);
  check(
      DType::F32, {{2, 0}, {2, 3}},
      [](auto& x) {
        return concat({x[0], x[1]}, 1);
      },
      {{{}, r_concat({e0, e1}, 1)}}, 0, "empty piece");
  check(
      DType::F32, {{2, 3}}, [](auto& x) { return concat({x[0]}, 0); }, {{{}, input({2, 3})}}, 0,
      "one");
}

TEST(Concat, ExactWithInfAndNaN) {
  Graph g;
  auto a = g.tensor("a", {2});
  auto b = g.tensor("b", {1});
  auto y = concat({a, b}, 0).output("y");
  ReferenceRuntime rt(g);
  rt.set(a, std::vector<float>{INFINITY, -0.0f});
  rt.set(b, std::vector<float>{NAN});
  rt.execute();
  std::vector<float> got = rt.get<float>(y);
  EXPECT_EQ(got[0], INFINITY);
  EXPECT_TRUE(got[1] == 0 && std::signbit(got[1]));
  EXPECT_TRUE(std::isnan(got[2]));
}

TEST(Concat, DynamicDims) {
  std::vector<Case> runs;
  for (int64_t s : {1, 2, 4})
    runs.push_back({{{"s", s}}, r_concat({input({s, 2}), input({3, 2}, 2 * s)}, 0)});
  check(
      DType::F32, {{"s", 2}, {3, 2}},
      [](auto& x) {
        return concat({x[0], x[1]}, 0);
      },
      runs, 0, "dyn axis");
  std::vector<Case> runs2;
  for (int64_t s : {1, 3}) {
    runs2.push_back(
        {{{"s", s}}, r_concat({input({s, 2}), input({s, 1}, 2 * s), input({s, 2}, 3 * s)}, 1)});
  }
  check(
      DType::I64, {{"s", 2}, {"s", 1}, {"s", 2}},
      [](auto& x) {
        return concat({x[0], x[1], x[2]}, -1);
      },
      runs2, 0, "dyn other axis");
  std::vector<Case> runs3;
  for (int64_t s : {1, 3})
    runs3.push_back({{{"s", s}}, r_concat({input({s, 2}), input({s, 2}, 2 * s)}, 0)});
  check(
      DType::F32, {{"s", 2}, {"s", 2}},
      [](auto& x) {
        return concat({x[0], x[1]}, 0);
      },
      runs3, 0, "dyn both");
}

TEST(Concat, Errors) {
  Graph g;
  auto a = g.tensor("a", {2, 3});
  auto b = g.tensor("b", {2, 4});
  auto c = g.tensor("c", {2, 3, 1});
  auto d = g.tensor("d", {2, 3}, DType::I32);
  auto s = g.tensor("s", {"s", 3});
  expect_error([&] { concat({a, b}, 0); }, {"concat", "[2, 3]", "[2, 4]"});
  expect_error([&] { concat({a, c}, 0); }, {"concat", "[2, 3]", "[2, 3, 1]"});
  expect_error([&] { concat({a, d}, 0); }, {"concat", "f32", "i32"});
  expect_error([&] { concat({a, s}, 1); }, {"concat", "[2, 3]", "[s, 3]"});
  expect_error([&] { concat({a, a}, 2); }, {"concat", "axis 2"});
  expect_error([&] { concat({}, 0); }, {"concat"});
  EXPECT_NO_THROW(concat({a, b}, 1));
}

TEST(Stack, NewAxis) {
  for (int axis : {0, 1, 2, -1, -2}) {
    const int a = axis < 0 ? axis + 3 : axis;
    Ints s = {2, 3};
    Ints u = s;
    u.insert(u.begin() + a, 1);
    for (DType t : {DType::F32, DType::BF16, DType::I32, DType::Bool}) {
      Ref r0 = r_reshape(input(s), u), r1 = r_reshape(input(s, 6), u),
          r2 = r_reshape(input(s, 12), u);
      check(
          t, {dims(s), dims(s)},
          [&](auto& x) {
            return stack({x[0], x[1]}, axis);
          },
          {{{}, r_concat({r0, r1}, a)}}, 0, "stack2 " + std::to_string(axis));
      check(
          t, {dims(s), dims(s), dims(s)},
          [&](auto& x) {
            return stack({x[0], x[1], x[2]}, axis);
          },
          {{{}, r_concat({r0, r1, r2}, a)}}, 0, "stack3 " + std::to_string(axis));
    }
  }
  std::vector<Case> runs;
  for (int64_t s : {1, 3}) {
    runs.push_back(
        {{{"s", s}},
         r_concat({r_reshape(input({s}), {s, 1}), r_reshape(input({s}, s), {s, 1})}, 1)});
  }
  check(
      DType::F32, {{"s"}, {"s"}},
      [](auto& x) {
        return stack({x[0], x[1]}, 1);
      },
      runs, 0, "dyn");
  Graph g;
  auto a = g.tensor("a", {2, 3});
  auto b = g.tensor("b", {3, 2});
  expect_error([&] { stack({a, b}, 0); }, {"stack", "[2, 3]", "[3, 2]"});
  expect_error([&] { stack({a, a}, 3); }, {"stack", "axis 3"});
  expect_error([&] { stack({}, 0); }, {"stack"});
}

// ---------------------------------------------------------------- combinations

TEST(Movement, PipelineAtSeveralDynamicValues) {
  // [s, 4] -> pad -> transpose -> slice with a step -> unfold -> reshape -> repeat
  std::vector<Case> runs;
  for (int64_t s : {1, 2, 3, 7}) {
    Ref r = r_pad(input({s, 4}), {{1, 1}, {0, 2}});
    r = r_transpose(r, 0, 1);
    r = r_slice(r, 0, 0, std::nullopt, 2);
    r = r_unfold(r, 1, 2, 1);
    r = r_reshape(r, {3, (s + 1) * 2});
    r = r_repeat(r, {2, 1});
    runs.push_back({{{"s", s}}, r});
  }
  Build b = [](const std::vector<Tensor>& x) {
    Expr s = Expr::var("s");
    return x[0]
        .pad({{1, 1}, {0, 2}}, 2)
        .transpose(0, 1)
        .slice(0, 0, std::nullopt, 2)
        .unfold(1, 2, 1)
        .reshape({3, (s + 1) * 2})
        .repeat({2, 1});
  };
  for (DType t : {DType::F32, DType::BF16, DType::I64})
    check(t, {{"s", 4}}, b, runs, 2, "pipeline");
}

// Random chains of movement ops against the composed loop references: views of views (merged,
// split, repeated, broadcast, sliced) exercise the view algebra and its simplifications.
TEST(Movement, RandomChains) {
  std::mt19937_64 rng(20240611);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  using Op = std::function<Tensor(const Tensor&)>;
  for (int trial = 0; trial < 1000; ++trial) {
    Ints shape;
    for (int64_t r = pick(1, 4); r-- > 0;)
      shape.push_back(pick(1, 4));
    Ref ref = input(shape);
    std::vector<Op> ops;
    std::string desc = "start " + str(shape);
    for (int64_t n = pick(2, 6); n-- > 0;) {
      const Ints s = ref.shape;
      const int r = static_cast<int>(s.size());
      if (prod(s) > 400) break;
      const int ax = r ? static_cast<int>(pick(0, r - 1)) : 0;
      switch (r == 0 ? 3 : pick(0, 10)) {
        case 0: {  // permute
          std::vector<int> order(r);
          for (int i = 0; i < r; ++i)
            order[i] = i;
          std::shuffle(order.begin(), order.end(), rng);
          ops.push_back([order](const Tensor& t) { return t.permute(order); });
          ref = r_permute(ref, order);
          desc += " permute " + str(Ints(order.begin(), order.end()));
          break;
        }
        case 1:
        case 2:
        case 3: {  // reshape to a random factorisation (with some size-1 axes)
          Ints primes;
          int64_t m = prod(s);
          for (int64_t p = 2; p <= m; ++p)
            while (m % p == 0) {
              primes.push_back(p);
              m /= p;
            }
          std::shuffle(primes.begin(), primes.end(), rng);
          Ints to;
          for (int64_t p : primes) {
            if (to.empty() || pick(0, 1))
              to.push_back(p);
            else
              to.back() *= p;
          }
          if (pick(0, 3) == 0) to.insert(to.begin() + pick(0, static_cast<int64_t>(to.size())), 1);
          if (prod(s) == 0) to = {0, pick(1, 3)};
          ops.push_back([to](const Tensor& t) { return t.reshape(dims(to)); });
          ref = r_reshape(ref, to);
          desc += " reshape " + str(to);
          break;
        }
        case 4: {  // slice
          const int64_t d = s[ax];
          const int64_t st = pick(-d - 1, d), en = pick(-d - 1, d + 1), step = pick(1, 3);
          const bool open = pick(0, 2) == 0;
          ops.push_back([=](const Tensor& t) {
            return open ? t.slice(ax, st, std::nullopt, step) : t.slice(ax, st, Dim(en), step);
          });
          ref = r_slice(ref, ax, st, open ? std::nullopt : std::optional<int64_t>(en), step);
          desc += " slice(" + std::to_string(ax) + ", " + std::to_string(st) + ", " +
                  (open ? std::string("none") : std::to_string(en)) + ", " + std::to_string(step) +
                  ")";
          break;
        }
        case 5: {  // broadcast: a new leading axis, or a size-1 axis widened
          Ints to = s;
          if (pick(0, 1)) to.insert(to.begin(), pick(1, 3));
          for (size_t i = to.size() - s.size(); i < to.size(); ++i)
            if (to[i] == 1 && pick(0, 1)) to[i] = pick(2, 3);
          ops.push_back([to](const Tensor& t) { return t.expand(dims(to)); });
          ref = r_expand(ref, to);
          desc += " expand " + str(to);
          break;
        }
        case 6: {  // repeat
          Ints reps(s.size() + pick(0, 1));
          for (int64_t& x : reps)
            x = pick(1, 2);
          ops.push_back([reps](const Tensor& t) { return t.repeat(dims(reps)); });
          ref = r_repeat(ref, reps);
          desc += " repeat " + str(reps);
          break;
        }
        case 7: {  // pad (possibly cropping)
          std::vector<std::pair<int64_t, int64_t>> p;
          std::vector<std::pair<Dim, Dim>> pd;
          for (int i = 0; i <= ax; ++i) {
            int64_t b = pick(-1, 2), e = pick(-1, 2);
            if (-std::min<int64_t>(b, 0) - std::min<int64_t>(e, 0) > s[i]) b = e = 1;
            p.push_back({b, e});
            pd.push_back({b, e});
          }
          ops.push_back([pd](const Tensor& t) { return t.pad(pd); });
          ref = r_pad(ref, p);
          desc += " pad";
          for (auto [b, e] : p)
            desc += " (" + std::to_string(b) + "," + std::to_string(e) + ")";
          break;
        }
        case 8: {  // unfold
          const int64_t d = s[ax];
          const int64_t size = pick(std::min<int64_t>(d, 1), d), step = pick(1, 3);
          ops.push_back([=](const Tensor& t) { return t.unfold(ax, size, step); });
          ref = r_unfold(ref, ax, size, step);
          desc += " unfold(" + std::to_string(ax) + ", " + std::to_string(size) + ", " +
                  std::to_string(step) + ")";
          break;
        }
        case 9: {  // merge or split
          if (ax + 1 < r && pick(0, 1)) {
            ops.push_back([ax](const Tensor& t) { return t.merge_dims(ax); });
            Ints to = s;
            to[ax] *= to[ax + 1];
            to.erase(to.begin() + ax + 1);
            ref = r_reshape(ref, to);
            desc += " merge_dims(" + std::to_string(ax) + ")";
          } else {
            Ints divs = {1};
            for (int64_t q = 2; q <= s[ax]; ++q)
              if (s[ax] % q == 0) divs.push_back(q);
            const int64_t inner = divs[pick(0, static_cast<int64_t>(divs.size()) - 1)];
            ops.push_back([=](const Tensor& t) { return t.split_dims(ax, inner); });
            Ints to = s;
            to[ax] /= inner;
            to.insert(to.begin() + ax + 1, inner);
            ref = r_reshape(ref, to);
            desc += " split_dims(" + std::to_string(ax) + ", " + std::to_string(inner) + ")";
          }
          break;
        }
        default: {  // contiguous or triu
          if (r >= 2 && pick(0, 1)) {
            const int64_t k = pick(-1, 1);
            ops.push_back([k](const Tensor& t) { return t.triu(k); });
            ref = r_triangle(ref, true, k);
            desc += " triu(" + std::to_string(k) + ")";
          } else {
            ops.push_back([](const Tensor& t) { return t.contiguous(); });
            desc += " contiguous";
          }
        }
      }
    }
    try {
      check1(
          DType::F32, shape,
          [&](auto& x) {
            Tensor t = x[0];
            for (const Op& f : ops)
              t = f(t);
            return t;
          },
          ref, 0, desc);
    } catch (const Error& e) {
      ADD_FAILURE() << desc << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace luminal
