// GPU suite (skips without a GPU): every primitive against the ReferenceRuntime, per dtype, on a
// non-contiguous (permuted) view with a dynamic dim at several values. Exact where the reference
// is exact by construction (+ * fmod / sqrt, casts between every dtype pair, comparisons, max,
// gather, scatter); within a few ulp for exp2, log2, sin; sums within 1 ulp (another order of
// double additions).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/luminal.hpp"
#include "luminal/runtime/host_buffer.hpp"
#include "support/random_buffer.hpp"

namespace luminal {
namespace {

using testing::random_buffer;

enum class Cmp { Exact, Ulp1, Ulp4 };

struct Out {
  std::string label;
  Cmp cmp;
  Tensor t;
};

/// Compares two outputs of dtype t; returns "" or a description of the first mismatch.
std::string compare(DType t, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                    Cmp cmp) {
  if (got.size() != want.size()) return "sizes differ";
  const int64_t n = static_cast<int64_t>(got.size()) / size_bytes(t);
  for (int64_t i = 0; i < n; ++i) {
    if (!is_float(t)) {
      if (load_as_int64(t, got.data(), i) != load_as_int64(t, want.data(), i))
        return "element " + std::to_string(i) + ": " +
               std::to_string(load_as_int64(t, got.data(), i)) + " vs " +
               std::to_string(load_as_int64(t, want.data(), i));
      continue;
    }
    const double g = load_as_double(t, got.data(), i), w = load_as_double(t, want.data(), i);
    if (std::isnan(g) && std::isnan(w)) continue;
    const double ulps = cmp == Cmp::Exact ? 0 : cmp == Cmp::Ulp1 ? 1 : 4;
    const double tol = ulps * epsilon(t) * std::max(std::fabs(w), t == DType::F64 ? 1e-300 : 1e-30);
    if (!(std::fabs(g - w) <= tol))
      return "element " + std::to_string(i) + ": " + std::to_string(g) + " vs " + std::to_string(w);
  }
  return "";
}

void check_dtype(DType t) {
  Graph g;
  g.declare_dim("s", 1, 64);
  const bool f = is_float(t);
  Tensor x = g.tensor("x", {12, "s"}, t).permute({1, 0});  // [s, 12], non-contiguous
  Tensor y = g.tensor("y", {"s", 12}, t);
  Tensor p = g.tensor("p", {"s", 12}, t);  // positive: divisors, logs, roots
  Tensor idx = g.tensor("idx", {"s"}, DType::I32);
  std::vector<Out> outs;
  auto out = [&](Tensor v, const std::string& name, Cmp c) {
    outs.push_back({name, c, v.output(name)});
  };
  out(x + y, "add", Cmp::Exact);
  out(x * y, "mul", Cmp::Exact);
  out(x % p, "mod", Cmp::Exact);
  out(x < y, "lt", Cmp::Exact);
  out(x.max(-1), "max", Cmp::Exact);
  out(x.sum(-1), "sum", f ? Cmp::Ulp1 : Cmp::Exact);
  out(g.tensor("table", {16, 12}, t).index_select(0, idx), "gather", Cmp::Exact);
  out(g.tensor("dest", {64, 12}, t).scatter_flat(idx, x.slice(1, 0, 1).reshape({"s"})), "scatter",
      Cmp::Exact);
  for (DType to : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64,
                   DType::I8, DType::U8, DType::Bool, DType::F8E4M3, DType::F8E5M2})
    if (to != t) out(x.cast(to), "cast_" + std::string(name(to)), Cmp::Exact);
  if (f) {
    out(p.reciprocal(), "recip", Cmp::Exact);
    out(p.sqrt(), "sqrt", Cmp::Exact);
    out(x.exp2(), "exp2", Cmp::Ulp4);
    out(p.log2(), "log2", Cmp::Ulp4);
    out(x.sin(), "sin", Cmp::Ulp4);
  }
  g.set_dim("s", 5);
  Session s = compile(g, testing::gpu(),
                      CompileOptions().search_graph_limit(4).verbose(false).dim_buckets(
                          "s", {DimBucket(1, 64).representative(5)}));
  ReferenceRuntime ref(g);
  for (int len : {1, 5, 33, 64}) {
    const DynMap dyn{{"s", len}};
    const double lo = f ? -4 : -8, hi = f ? 4 : 8;
    std::vector<std::pair<std::string, HostBuffer>> in = {
        {"x", random_buffer(t, 12 * len, 1 + len, lo, hi)},
        {"y", random_buffer(t, 12 * len, 2 + len, lo, hi)},
        {"p", random_buffer(t, 12 * len, 3 + len, f ? 0.5 : 1, f ? 4 : 9)},
        {"idx", random_buffer(DType::I32, len, 4 + len, 0, 15)},
        {"table", random_buffer(t, 16 * 12, 5, lo, hi)},
        {"dest", random_buffer(t, 64 * 12, 6, lo, hi)}};
    for (auto& [label, b] : in) {
      s.set_bytes(label, b.bytes.data(), b.bytes.size());
      ref.set_bytes(label, b.bytes.data(), b.bytes.size());
    }
    s.execute(dyn);
    ref.execute(dyn);
    for (const Out& o : outs) {
      const std::string diff = compare(o.t.dtype(), s.get_bytes(o.t), ref.get_bytes(o.t), o.cmp);
      EXPECT_EQ(diff, "") << name(t) << " " << o.label << " at s=" << len;
    }
  }
}

class CudaOps : public ::testing::TestWithParam<DType> {};

TEST_P(CudaOps, MatchReference) {
  LUMINAL_REQUIRE_GPU();
  check_dtype(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaOps,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::F64,
                                           DType::I32, DType::I64, DType::I8, DType::U8),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return std::string(name(i.param));
                         });

TEST(CudaAvailability, NoGpuIsAClearError) {
  std::string why;
  if (cuda::cuda_available(&why)) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(why.empty());
  try {
    cuda::CudaBackend be;
    FAIL() << "constructing a CudaBackend without a GPU must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not available"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace luminal
