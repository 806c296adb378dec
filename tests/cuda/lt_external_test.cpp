// GPU suite (skips without a GPU or cuBLASLt): a session whose program has cuBLASLt steps, its
// input bound with Session::bind_external (the zero-copy path) to device memory 16 bytes past a
// 256-byte boundary: the step is prepared again once for the lower alignment
// (MIN_ALIGNMENT_*_BYTES 16), captured again, and correct; another pointer of the same alignment
// recaptures without a prepare; every result matches the reference runtime.
#include <gtest/gtest.h>

#if __has_include(<cublasLt.h>) && defined(LUMINAL_HAVE_CUBLASLT)
#include <cmath>
#include <cstdio>

#include "cuda/cuda_test_util.hpp"
#include "cuda/lt_util.hpp"
#include "luminal/luminal.hpp"

namespace luminal::cuda {
namespace {

using testing::lt_backend;
using testing::lt_or_skip;
using testing::values;

TEST(CudaLtExternal, AnInputBoundAtA16ByteOffsetPreparesForItsAlignment) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  constexpr int64_t kMax = 64, kK = 2048, kN = 2048, kS = 48;
  Graph g;
  g.declare_dim("s", 1, kMax);
  Tensor x = g.tensor("x", {Expr::var("s"), Expr(kK)}, DType::BF16);
  Tensor w = g.tensor("w", {kN, kK}, DType::BF16);
  x.matmul(w.transpose(0, 1)).output("y");
  CudaBackend& be = lt_backend(CudaOptions::Executor::Graph);
  const uint64_t cap = kMax * kK * 2;
  Buffer a = be.allocate(cap + 256), b = be.allocate(cap + 256);
  {
    Session sess(g, be, CompileOptions().search_graph_limit(8).verbose(false));
    sess.compile();
    int lt = 0;
    for (const LlirNode& n : sess.llir({{"s", kS}}).nodes)
      lt += is_lt_op(n.op);
    // A 48 x 2048 x 2048 bf16 product: cuBLASLt is tens of times faster than the generated
    // matmul, so the search takes it.
    ASSERT_EQ(lt, 1) << sess.report();
    const std::vector<double> wv = values(kN * kK, 0.11);
    sess.set("w", wv);
    auto check = [&](const std::vector<double>& xv, const char* what) {
      ReferenceRuntime rt(g);
      rt.set("x", xv);
      rt.set("w", wv);
      rt.execute({{"s", kS}});
      const std::vector<double> want = rt.get<double>("y");
      const std::vector<float> got = sess.get<float>("y");
      ASSERT_EQ(got.size(), want.size());
      size_t bad = 0;
      for (size_t i = 0; i < got.size(); ++i)
        bad += !(std::abs(got[i] - want[i]) <= 2e-2 * (1 + std::abs(want[i])));
      std::printf("[lt-external] %s: %zu of %zu elements wrong\n", what, bad, got.size());
      EXPECT_EQ(bad, 0u) << what;
    };
    auto put = [&](Buffer block, uint64_t offset, const std::vector<double>& xv) {
      const HostBuffer h = to_host_buffer(xv.data(), xv.size(), DType::BF16, "x");
      be.upload(block, offset, h.bytes.data(), h.bytes.size());
      be.sync();
    };
    const std::vector<double> x0 = values(kS * kK, 0.37), x1 = values(kS * kK, 0.29),
                              x2 = values(kS * kK, 0.53);
    sess.set("x", x0);
    sess.execute({{"s", kS}});
    check(x0, "own buffer");

    CudaBackend::LtStats before = be.lt_stats();
    put(a, 16, x1);
    sess.bind_external("x", static_cast<char*>(a.ptr) + 16, cap);
    sess.execute({{"s", kS}});
    check(x1, "bound 16 bytes past a 256-byte boundary");
    CudaBackend::LtStats after = be.lt_stats();
    std::printf("[lt-external] 16-byte aligned: prepares %llu, recaptures %llu\n",
                static_cast<unsigned long long>(after.prepares - before.prepares),
                static_cast<unsigned long long>(after.recaptures - before.recaptures));
    EXPECT_GE(after.prepares - before.prepares, 1u) << "a lower alignment prepares again";
    EXPECT_GE(after.recaptures - before.recaptures, 1u);

    before = after;
    put(b, 48, x2);
    sess.bind_external("x", static_cast<char*>(b.ptr) + 48, cap);
    sess.execute({{"s", kS}});
    check(x2, "another 16-byte aligned pointer");
    after = be.lt_stats();
    std::printf("[lt-external] same alignment: prepares %llu, recaptures %llu (%llu in place)\n",
                static_cast<unsigned long long>(after.prepares - before.prepares),
                static_cast<unsigned long long>(after.recaptures - before.recaptures),
                static_cast<unsigned long long>(after.in_place - before.in_place));
    EXPECT_EQ(after.prepares, before.prepares) << "the same alignment needs no prepare";
    EXPECT_GE(after.recaptures - before.recaptures, 1u);
  }
  be.release(a);
  be.release(b);
}

}  // namespace
}  // namespace luminal::cuda
#else
TEST(CudaLtExternal, NoCublasLtHeader) { GTEST_SKIP() << "built without cublasLt.h"; }
#endif
