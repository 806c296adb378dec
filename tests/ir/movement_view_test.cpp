// Movement ops that are views (reshape, permute, expand, squeeze, flatten, merge/split) against
// host references, byte for byte.
#include "support/movement_reference.hpp"

namespace luminal {
namespace {

using namespace movement_testing;

// ---------------------------------------------------------------- reshape

TEST(Reshape, ContiguousIsAViewAndExact) {
  const Ints in = {2, 3, 4};
  for (const Ints& to :
       {Ints{24}, Ints{6, 4}, Ints{4, 3, 2}, Ints{2, 1, 12, 1}, Ints{1, 24}, Ints{2, 3, 4}}) {
    Graph g;
    auto x = g.tensor("x", dims(in));
    EXPECT_EQ(x.reshape(dims(to)).id(), x.id()) << str(to);
    check_all_types(
        in, [&](auto& x) { return x[0].reshape(dims(to)); }, r_reshape(input(in), to), 0, str(to));
  }
}

TEST(Reshape, AfterPermuteEveryOrder) {
  const Ints in = {2, 3, 4};
  const std::vector<Ints> targets = {{24},   {6, 4},    {4, 6},    {2, 12},
                                     {3, 8}, {4, 3, 2}, {2, 2, 6}, {1, 24, 1}};
  for (const auto& order : permutations(3)) {
    Ref p = r_permute(input(in), order);
    for (const Ints& to : targets) {
      std::string what = "permute " + str(Ints(order.begin(), order.end())) + " reshape " + str(to);
      check1(
          DType::F32, in, [&](auto& x) { return x[0].permute(order).reshape(dims(to)); },
          r_reshape(p, to), 0, what);
      // and back through another permute and reshape
      if (to.size() == 3) {
        check1(
            DType::BF16, in,
            [&](auto& x) {
              return x[0].permute(order).reshape(dims(to)).permute({2, 0, 1}).reshape({24});
            },
            r_reshape(r_permute(r_reshape(p, to), {2, 0, 1}), {24}), 0, what);
      }
    }
  }
  for (DType t : kTypes) {
    check1(
        t, {2, 3, 4, 5},
        [](auto& x) {
          return x[0].permute({0, 2, 1, 3}).reshape({8, 15});
        },
        r_reshape(r_permute(input({2, 3, 4, 5}), {0, 2, 1, 3}), {8, 15}), 0, "rank 4");
  }
}

TEST(Reshape, OfBroadcastRepeatAndSlicedViews) {
  // [3] broadcast to [4, 3] then reshaped: [12], [2, 6], [6, 2], [3, 4] (the last cannot be a view)
  for (const Ints& to :
       {Ints{12}, Ints{2, 6}, Ints{6, 2}, Ints{3, 4}, Ints{4, 3, 1}, Ints{2, 2, 3}}) {
    check_all_types(
        {3},
        [&](auto& x) {
          return x[0].expand({4, 3}).reshape(dims(to));
        },
        r_reshape(r_expand(input({3}), {4, 3}), to), 0, "expand " + str(to));
  }
  // [2, 3] tiled to [4, 6] then reshaped
  for (const Ints& to :
       {Ints{24}, Ints{8, 3}, Ints{4, 2, 3}, Ints{2, 12}, Ints{3, 8}, Ints{6, 4}}) {
    check1(
        DType::F32, {2, 3},
        [&](auto& x) {
          return x[0].repeat({2, 2}).reshape(dims(to));
        },
        r_reshape(r_repeat(input({2, 3}), {2, 2}), to), 0, "repeat " + str(to));
  }
  // a view that keeps the first columns of each row
  for (const Ints& to : {Ints{12}, Ints{2, 6}, Ints{6, 2}, Ints{4, 3}}) {
    check1(
        DType::I32, {4, 5}, [&](auto& x) { return x[0].slice(1, 0, 3).reshape(dims(to)); },
        r_reshape(r_slice(input({4, 5}), 1, 0, 3, 1), to), 0, "slice " + str(to));
    check1(
        DType::F16, {5, 4},
        [&](auto& x) { return x[0].transpose(0, 1).slice(1, 0, 3).reshape(dims(to)); },
        r_reshape(r_slice(r_transpose(input({5, 4}), 0, 1), 1, 0, 3, 1), to), 0,
        "t slice " + str(to));
  }
  // merged then split again differently
  check1(
      DType::F32, {2, 3, 4},
      [](auto& x) {
        return x[0].permute({2, 1, 0}).reshape({12, 2}).reshape({2, 3, 4});
      },
      r_reshape(r_permute(input({2, 3, 4}), {2, 1, 0}), {2, 3, 4}), 0, "chain");
}

TEST(Reshape, DynamicDims) {
  for (DType t : {DType::F32, DType::BF16, DType::I64}) {
    std::vector<Case> flat, perm, split;
    for (int64_t s : {1, 2, 5}) {
      flat.push_back({{{"s", s}}, r_reshape(input({s, 32, 4}), {s, 128})});
      perm.push_back({{{"s", s}}, r_reshape(r_permute(input({32, s, 4}), {1, 0, 2}), {s, 128})});
      split.push_back({{{"s", s}}, r_reshape(input({s, 128}), {s, 4, 32})});
    }
    check(
        t, {{"s", 32, 4}},
        [](auto& x) {
          return x[0].reshape({"s", 128});
        },
        flat, 0, "s,32,4 -> s,128");
    check(
        t, {{32, "s", 4}},
        [](auto& x) {
          return x[0].permute({1, 0, 2}).reshape({"s", 128});
        },
        perm, 0, "permuted -> s,128");
    check(
        t, {{"s", 128}},
        [](auto& x) {
          return x[0].reshape({"s", 4, 32});
        },
        split, 0, "s,128 -> s,4,32");
  }
  // the whole tensor into one dynamic axis, after a permute
  std::vector<Case> cases;
  for (int64_t s : {1, 3, 4})
    cases.push_back({{{"s", s}}, r_reshape(r_permute(input({s, 3}), {1, 0}), {3 * s})});
  check(
      DType::F32, {{"s", 3}},
      [](auto& x) { return x[0].transpose(0, 1).reshape({Expr::var("s") * 3}); }, cases, 0,
      "flatten dyn");
  Graph g;
  auto x = g.tensor("x", {"s", 32, 4});
  EXPECT_EQ(x.reshape({"s", 128}).id(), x.id());
  expect_error([&] { x.reshape({"t", 128}); }, {"reshape", "[s, 32, 4]", "[t, 128]"});
}

TEST(Reshape, Errors) {
  Graph g;
  auto x = g.tensor("x", {2, 3});
  expect_error([&] { x.reshape({4}); }, {"reshape", "[2, 3]", "[4]"});
  expect_error([&] { x.reshape({7, 1}); }, {"reshape", "[2, 3]", "[7, 1]"});
}

// ---------------------------------------------------------------- permute, transpose, expand

TEST(Permute, EveryOrderOfRank3And4) {
  for (const auto& order : permutations(3)) {
    for (DType t : kTypes) {
      check1(
          t, {2, 3, 4}, [&](auto& x) { return x[0].permute(order); },
          r_permute(input({2, 3, 4}), order), 0,
          "permute " + str(Ints(order.begin(), order.end())));
    }
  }
  for (const auto& order : permutations(4)) {
    check1(
        DType::F32, {2, 3, 1, 4}, [&](auto& x) { return x[0].permute(order); },
        r_permute(input({2, 3, 1, 4}), order), 0,
        "permute4 " + str(Ints(order.begin(), order.end())));
  }
  // negative axes, permute of a permute, rank 0
  check1(
      DType::I64, {2, 3, 4},
      [](auto& x) {
        return x[0].permute({-1, 0, -2}).permute({2, 0, 1});
      },
      r_permute(r_permute(input({2, 3, 4}), {2, 0, 1}), {2, 0, 1}), 0, "negative");
  check1(
      DType::F32, {}, [](auto& x) { return x[0].permute({}); }, input({}), 0, "rank 0");
  Graph g;
  auto x = g.tensor("x", {2, 3, 4});
  EXPECT_EQ(x.permute({2, 0, 1}).id(), x.id());
  expect_error([&] { x.permute({0, 1}); }, {"permute", "[2, 3, 4]"});
  expect_error([&] { x.permute({0, 1, 1}); }, {"permute", "[2, 3, 4]"});
  expect_error([&] { x.permute({0, 1, 3}); }, {"permute", "[2, 3, 4]"});
}

TEST(Transpose, PairsOfAxes) {
  const std::pair<int, int> pairs[] = {{0, 1}, {1, 0}, {0, 2}, {-1, -2}, {1, 1}, {-3, 2}};
  for (auto [a, b] : pairs) {
    int na = a < 0 ? a + 3 : a, nb = b < 0 ? b + 3 : b;
    for (DType t : {DType::F32, DType::F16, DType::Bool}) {
      check1(
          t, {2, 3, 4}, [&](auto& x) { return x[0].transpose(a, b); },
          r_transpose(input({2, 3, 4}), na, nb), 0,
          "transpose " + std::to_string(a) + "," + std::to_string(b));
    }
  }
  Graph g;
  auto x = g.tensor("x", {2, 3});
  expect_error([&] { x.transpose(0, 2); }, {"transpose", "axis 2"});
}

TEST(Expand, NumpyBroadcasting) {
  struct C {
    Ints in, out;
  };
  const C cases[] = {
      {{3}, {2, 3}},          {{1, 3}, {4, 3}},   {{2, 1}, {2, 5}}, {{2, 1, 3}, {5, 2, 4, 3}},
      {{1}, {2, 3, 4}},       {{}, {2, 2}},       {{2, 3}, {2, 3}}, {{1, 1}, {3, 1, 2}},
      {{3, 1, 1}, {3, 2, 2}}, {{1, 4}, {1, 0, 4}}};
  for (const C& c : cases) {
    for (DType t : kTypes) {
      check1(
          t, c.in, [&](auto& x) { return x[0].expand(dims(c.out)); }, r_expand(input(c.in), c.out),
          0, "expand " + str(c.in) + " -> " + str(c.out));
    }
  }
  // of a transposed input, then made contiguous
  check1(
      DType::F32, {3, 1},
      [](auto& x) {
        return x[0].transpose(0, 1).expand({4, 3}).contiguous();
      },
      r_expand(r_transpose(input({3, 1}), 0, 1), {4, 3}), 0, "transposed");
  // dynamic target
  std::vector<Case> cases2;
  for (int64_t s : {1, 2, 6})
    cases2.push_back({{{"s", s}}, r_expand(input({1, 3}), {2, s, 3})});
  check(
      DType::F32, {{1, 3}},
      [](auto& x) {
        return x[0].expand({2, "s", 3});
      },
      cases2, 0, "dynamic");
  std::vector<Case> cases3;
  for (int64_t s : {1, 4})
    cases3.push_back({{{"s", s}}, r_expand(input({s, 1}), {s, 5})});
  check(
      DType::BF16, {{"s", 1}},
      [](auto& x) {
        return x[0].expand({"s", 5});
      },
      cases3, 0, "dynamic same");

  Graph g;
  auto x = g.tensor("x", {2, 3});
  EXPECT_EQ(x.expand({4, 2, 3}).id(), x.id());
  expect_error([&] { x.expand({2, 4}); }, {"expand", "[2, 3]", "[2, 4]"});
  expect_error([&] { x.expand({3}); }, {"expand", "[2, 3]", "[3]"});
  expect_error([&] { x.expand({3, 3}); }, {"expand", "[2, 3]", "[3, 3]"});
}

TEST(ExpandDim, InsertsABroadcastAxis) {
  for (int axis : {0, 1, 2, -1, -3}) {
    int a = axis < 0 ? axis + 3 : axis;
    Ints out = {2, 3};
    out.insert(out.begin() + a, 4);
    Ref want = remap(input({2, 3}), out, [&](Ints o) -> std::optional<Ints> {
      o.erase(o.begin() + a);
      return o;
    });
    for (DType t : {DType::F32, DType::I32, DType::BF16}) {
      check1(
          t, {2, 3}, [&](auto& x) { return x[0].expand_dim(axis, 4); }, want, 0,
          "axis " + std::to_string(axis));
    }
  }
  std::vector<Case> cases;
  for (int64_t s : {1, 3}) {
    cases.push_back({{{"s", s}}, remap(input({2}), {2, s}, [](Ints o) -> std::optional<Ints> {
                       return Ints{o[0]};
                     })});
  }
  check(
      DType::F32, {{2}}, [](auto& x) { return x[0].expand_dim(1, "s"); }, cases, 0, "dynamic");
  Graph g;
  auto x = g.tensor("x", {2, 3});
  expect_error([&] { x.expand_dim(4, 2); }, {"expand", "axis 4"});
}

TEST(SqueezeUnsqueeze, SizeOneAxes) {
  for (DType t : kTypes) {
    check1(
        t, {2, 1, 3}, [](auto& x) { return x[0].squeeze(1); }, r_reshape(input({2, 1, 3}), {2, 3}),
        0, "sq 1");
    check1(
        t, {2, 3, 1}, [](auto& x) { return x[0].squeeze(-1); }, r_reshape(input({2, 3, 1}), {2, 3}),
        0, "sq -1");
    check1(
        t, {2, 3}, [](auto& x) { return x[0].unsqueeze(0); }, r_reshape(input({2, 3}), {1, 2, 3}),
        0, "unsq 0");
    check1(
        t, {2, 3}, [](auto& x) { return x[0].unsqueeze(-1); }, r_reshape(input({2, 3}), {2, 3, 1}),
        0, "unsq -1");
    check1(
        t, {2, 3}, [](auto& x) { return x[0].unsqueeze(2); }, r_reshape(input({2, 3}), {2, 3, 1}),
        0, "unsq 2");
  }
  // on a transposed input
  check1(
      DType::F32, {3, 1, 2}, [](auto& x) { return x[0].transpose(0, 2).squeeze(1).unsqueeze(1); },
      r_reshape(r_transpose(input({3, 1, 2}), 0, 2), {2, 1, 3}), 0, "transposed");
  check1(
      DType::F32, {1}, [](auto& x) { return x[0].squeeze(0); }, input({}), 0, "to rank 0");
  check1(
      DType::F32, {}, [](auto& x) { return x[0].unsqueeze(0); }, input({1}), 0, "from rank 0");
  Graph g;
  auto x = g.tensor("x", {2, 3});
  expect_error([&] { x.squeeze(0); }, {"squeeze", "[2, 3]"});
  expect_error([&] { x.squeeze(2); }, {"squeeze", "axis 2"});
  expect_error([&] { x.unsqueeze(3); }, {"unsqueeze", "axis 3"});
}

TEST(Flatten, RangesOfAxes) {
  const Ints in = {2, 3, 4, 5};
  struct C {
    int s, e;
    Ints out;
  };
  const C cases[] = {{0, -1, {120}},       {1, 2, {2, 12, 5}},   {0, 1, {6, 4, 5}},
                     {-2, -1, {2, 3, 20}}, {2, 2, {2, 3, 4, 5}}, {1, 3, {2, 60}}};
  for (const C& c : cases) {
    std::string what = "flatten " + std::to_string(c.s) + "," + std::to_string(c.e);
    check1(
        DType::F32, in, [&](auto& x) { return x[0].flatten(c.s, c.e); },
        r_reshape(input(in), c.out), 0, what);
    // after a permute the merged axes are not contiguous
    check1(
        DType::BF16, in,
        [&](auto& x) {
          return x[0].permute({3, 1, 0, 2}).flatten(c.s, c.e);
        },
        r_reshape(r_permute(input(in), {3, 1, 0, 2}),
                  [&] {
                    Ints p = {5, 3, 2, 4}, out;
                    int s = c.s < 0 ? c.s + 4 : c.s, e = c.e < 0 ? c.e + 4 : c.e;
                    for (int i = 0; i < 4; ++i) {
                      if (i > s && i <= e)
                        out.back() *= p[i];
                      else
                        out.push_back(p[i]);
                    }
                    return out;
                  }()),
        0, "permuted " + what);
  }
  check1(
      DType::I32, {}, [](auto& x) { return x[0].flatten(); }, input({1}), 0, "rank 0");
  check1(
      DType::I32, {7}, [](auto& x) { return x[0].flatten(); }, input({7}), 0, "rank 1");
  std::vector<Case> dyn;
  for (int64_t s : {1, 3})
    dyn.push_back({{{"s", s}}, r_reshape(r_transpose(input({s, 2, 3}), 0, 2), {3, 2 * s})});
  check(
      DType::F32, {{"s", 2, 3}}, [](auto& x) { return x[0].transpose(0, 2).flatten(1); }, dyn, 0,
      "dynamic");
  Graph g;
  auto x = g.tensor("x", {2, 3, 4});
  expect_error([&] { x.flatten(2, 1); }, {"flatten", "[2, 3, 4]"});
  expect_error([&] { x.flatten(0, 3); }, {"flatten", "axis 3"});
}

TEST(MergeSplit, MergeDimsAndSplitDims) {
  const Ints in = {2, 3, 4};
  for (DType t : {DType::F32, DType::I64, DType::F16}) {
    check1(
        t, in, [](auto& x) { return x[0].merge_dims(0); }, r_reshape(input(in), {6, 4}), 0,
        "merge 0");
    check1(
        t, in, [](auto& x) { return x[0].merge_dims(-2); }, r_reshape(input(in), {2, 12}), 0,
        "merge -2");
    check1(
        t, in,
        [](auto& x) {
          return x[0].permute({2, 0, 1}).merge_dims(1);
        },
        r_reshape(r_permute(input(in), {2, 0, 1}), {4, 6}), 0, "merge permuted");
    check1(
        t, in,
        [](auto& x) {
          return x[0].permute({2, 0, 1}).merge_dims(0);
        },
        r_reshape(r_permute(input(in), {2, 0, 1}), {8, 3}), 0, "merge permuted 0");
    check1(
        t, in, [](auto& x) { return x[0].split_dims(2, 2); }, r_reshape(input(in), {2, 3, 2, 2}), 0,
        "split");
    check1(
        t, in, [](auto& x) { return x[0].split_dims(-1, 4); }, r_reshape(input(in), {2, 3, 1, 4}),
        0, "split 4");
    check1(
        t, in, [](auto& x) { return x[0].split_dims(0, 1); }, r_reshape(input(in), {2, 1, 3, 4}), 0,
        "split 1");
    // split of a merged non-contiguous axis (may need a copy)
    check1(
        t, in,
        [](auto& x) {
          return x[0].permute({2, 0, 1}).merge_dims(1).split_dims(1, 3);
        },
        r_permute(input(in), {2, 0, 1}), 0, "merge split");
    check1(
        t, in,
        [](auto& x) {
          return x[0].permute({2, 0, 1}).merge_dims(1).split_dims(1, 2);
        },
        r_reshape(r_permute(input(in), {2, 0, 1}), {4, 3, 2}), 0, "merge split other");
    check1(
        t, {3, 4}, [](auto& x) { return x[0].transpose(0, 1).merge_dims(0).split_dims(0, 4); },
        r_reshape(r_transpose(input({3, 4}), 0, 1), {3, 4}), 0, "t merge split");
    check1(
        t, {4},
        [](auto& x) {
          return x[0].expand({3, 4}).merge_dims(0).split_dims(0, 3);
        },
        r_reshape(r_expand(input({4}), {3, 4}), {4, 3}), 0, "expand merge split");
  }
  std::vector<Case> dyn;
  for (int64_t s : {1, 2, 5})
    dyn.push_back({{{"s", s}}, r_reshape(input({4 * s, 3}), {s, 4, 3})});
  check(
      DType::F32, {{Expr::var("s") * 4, 3}}, [](auto& x) { return x[0].split_dims(0, 4); }, dyn, 0,
      "dyn split");
  std::vector<Case> dyn2;
  for (int64_t s : {1, 2, 5})
    dyn2.push_back({{{"s", s}}, r_reshape(r_transpose(input({s, 6}), 0, 1), {3, 2, s})});
  check(
      DType::F32, {{"s", 6}}, [](auto& x) { return x[0].transpose(0, 1).split_dims(0, 2); }, dyn2,
      0, "dyn t split");
  Graph g;
  auto x = g.tensor("x", {2, 6});
  expect_error([&] { x.split_dims(1, 4); }, {"split_dims", "[2, 6]", "4"});
  expect_error([&] { x.split_dims(1, 0); }, {"split_dims", "[2, 6]"});
  expect_error([&] { x.merge_dims(1); }, {"merge_dims", "[2, 6]"});
}

}  // namespace
}  // namespace luminal
