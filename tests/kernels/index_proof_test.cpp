// distinct_index (luminal/kernels/index_proof.hpp): scatter indexes built from iotas and a value
// known only at run time, proven distinct where they are and not where they are not. Each case
// also evaluates the index for several run-time values with the reference runtime, and checks
// that a proof is never given for indexes that meet.
#include "luminal/kernels/index_proof.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "luminal/compiler/lower.hpp"
#include "luminal/luminal.hpp"

namespace luminal {
namespace {

struct Index {
  Graph g;
  Tensor idx, out;
  void set(const Tensor& t) {
    idx = t;
    out = t.cast(DType::I64).output("idx");
  }
};

bool proven(const Index& x) {
  EGraph eg;
  const Lowered l = lower(x.g, eg);
  eg.rebuild();
  return distinct_index(eg, l.class_of[x.idx.id()], View::contiguous(x.idx.shape()));
}

/// The index's values with the input "pos" holding p (the reference runtime).
std::vector<int64_t> values(const Index& x, int64_t p) {
  ReferenceRuntime rt(x.g);
  rt.set("pos", std::vector<int64_t>{p});
  rt.execute();
  return rt.get<int64_t>(x.out);
}

bool meet(const Index& x, int64_t p) {
  std::vector<int64_t> v = values(x, p);
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) != v.end();
}

/// torch's `cache[:, :, pos] = k` for a cache [1, heads, slots, d] (ops_shape._index_put): the
/// flat index of element (0, h, 0, j) of k is h * slots * d + pos * d + j, the iotas broadcast
/// over [1, heads, 1, d], pos (an i64 input [1]) made non-negative by a where.
Index cache_write(int64_t heads, int64_t slots, int64_t d, DType pos_dtype = DType::I64) {
  Index x;
  Graph& g = x.g;
  const std::vector<Dim> out{1, heads, 1, d};
  auto placed = [&](const Tensor& t, int axis) {
    std::vector<Dim> dims(4, 1);
    dims[axis] = t.dim(0);
    return t.reshape(dims).expand(out);
  };
  Tensor b = placed(g.arange(1, DType::I64), 0) * g.constant(double(heads * slots * d), DType::I64);
  Tensor h = placed(g.arange(heads, DType::I64), 1) * g.constant(double(slots * d), DType::I64);
  Tensor j = placed(g.arange(d, DType::I64), 3);
  Tensor pos = g.tensor("pos", {1}, pos_dtype).cast(DType::I64);
  pos = pos.lt(0.0).where(pos + g.constant(double(slots), DType::I64), pos);
  Tensor p = placed(pos, 2) * g.constant(double(d), DType::I64);
  x.set(b + h + j + p);
  return x;
}

TEST(IndexProof, ACacheWriteAtARunTimePositionIsDistinct) {
  for (int64_t heads : {1, 2, 8})
    for (int64_t d : {1, 16, 128}) {
      const Index x = cache_write(heads, 64, d);
      EXPECT_TRUE(proven(x)) << heads << " heads, d " << d;
      for (int64_t p : {0, 5, 63, -1, 1000, -70})
        EXPECT_FALSE(meet(x, p)) << p;
    }
  EXPECT_TRUE(proven(cache_write(4, 64, 16, DType::I32)));
}

TEST(IndexProof, IndexesThatMeetOrDependOnDataAreNotProven) {
  {
    // Two positions read from data (pos [2]): the writes meet when they are equal.
    Index x;
    Graph& g = x.g;
    Tensor j = g.arange(4, DType::I64).reshape({1, 4}).expand({2, 4});
    Tensor pos = g.tensor("pos", {2}, DType::I64);
    x.set(j + pos.reshape({2, 1}).expand({2, 4}) * g.constant(4.0, DType::I64));
    EXPECT_FALSE(proven(x));
  }
  {
    // Rows that overlap: j + 2 * h over [3, 4] meets itself (h = 1, j = 0 and h = 0, j = 2).
    Index x;
    Graph& g = x.g;
    Tensor j = g.arange(4, DType::I64).reshape({1, 4}).expand({3, 4});
    Tensor h = g.arange(3, DType::I64).reshape({3, 1}).expand({3, 4});
    Tensor pos = g.tensor("pos", {1}, DType::I64);
    x.set(j + h * g.constant(2.0, DType::I64) + pos.reshape({1, 1}).expand({3, 4}));
    EXPECT_FALSE(proven(x));
    EXPECT_TRUE(meet(x, 7));
  }
  {
    // The run-time value scales the iota: pos = 0 puts every write at one index.
    Index x;
    Graph& g = x.g;
    Tensor pos = g.tensor("pos", {1}, DType::I64).expand({8});
    x.set(g.arange(8, DType::I64) * pos);
    EXPECT_FALSE(proven(x));
    EXPECT_TRUE(meet(x, 0));
  }
  {
    // Narrowed to i8: 0..299 wraps onto itself.
    Index x;
    Graph& g = x.g;
    Tensor pos = g.tensor("pos", {1}, DType::I64).expand({300});
    x.set((g.arange(300, DType::I64) + pos).cast(DType::I8));
    EXPECT_FALSE(proven(x));
    EXPECT_TRUE(meet(x, 0));
  }
  {
    // A repeated iota: z % 8 over 16 positions.
    Index x;
    Graph& g = x.g;
    Tensor pos = g.tensor("pos", {1}, DType::I32).expand({16});
    x.set(g.iota(Expr::z() % 8, 16) + pos);
    EXPECT_FALSE(proven(x));
    EXPECT_TRUE(meet(x, 3));
  }
  {
    // The same run-time value added to a distinct iota, in i32 and wrapping: still distinct.
    Index x;
    Graph& g = x.g;
    Tensor pos = g.tensor("pos", {1}, DType::I32).expand({16});
    x.set(g.iota(Expr::z() * 3, 16) + pos * g.constant(7.0, DType::I32));
    EXPECT_TRUE(proven(x));
    EXPECT_FALSE(meet(x, 2147483000));
  }
}

}  // namespace
}  // namespace luminal
