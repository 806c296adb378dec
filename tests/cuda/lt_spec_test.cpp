// CI without a GPU: cuBLASLt's type table (lt_types), the spec of a library call (lt_spec) and
// its equality and hash, pointer alignments, and the loader's LUMINAL_CUBLASLT=off.
#include <gtest/gtest.h>

#if __has_include(<cublasLt.h>) && defined(LUMINAL_HAVE_CUBLASLT)
#include <unordered_set>

#include <cstdlib>

#include "luminal/cuda/cublaslt/lt_api.hpp"
#include "luminal/cuda/cublaslt/lt_spec.hpp"

namespace luminal::cuda {
namespace {

// LUMINAL_CUBLASLT=off: the library is never loaded, and the reason says how to undo it. (The
// first lt_api call of this process; the loader runs once.)
TEST(LtApi, OffMeansNotLoadedWithTheReason) {
  ::setenv("LUMINAL_CUBLASLT", "off", 1);
  std::string why;
  EXPECT_EQ(lt_api(&why), nullptr);
  EXPECT_NE(why.find("LUMINAL_CUBLASLT=off"), std::string::npos) << why;
  ::unsetenv("LUMINAL_CUBLASLT");
}

TEST(LtTypes, TheTypeTable) {
  std::string why;
  auto f32 = lt_types(DType::F32, DType::F32, DType::F32, false);
  ASSERT_TRUE(f32);
  EXPECT_EQ(f32->compute, CUBLAS_COMPUTE_32F);
  EXPECT_EQ(f32->scale, CUDA_R_32F);
  // TF32 only when asked for, or when the graph's operands are TF32.
  EXPECT_EQ(lt_types(DType::F32, DType::F32, DType::F32, true)->compute,
            CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(lt_types(DType::TF32, DType::TF32, DType::F32, false)->compute,
            CUBLAS_COMPUTE_32F_FAST_TF32);
  // 16-bit operands: compute 32F with an f32 scale (not the FAST_16BF down-conversion mode), D of
  // their own type or f32, C always D's type.
  for (DType t : {DType::BF16, DType::F16}) {
    for (DType d : {t, DType::F32}) {
      auto x = lt_types(t, t, d, false);
      ASSERT_TRUE(x) << name(t);
      EXPECT_EQ(x->compute, CUBLAS_COMPUTE_32F);
      EXPECT_EQ(x->scale, CUDA_R_32F);
      EXPECT_EQ(x->c, x->d);
    }
  }
  EXPECT_EQ(lt_types(DType::BF16, DType::BF16, DType::BF16, false)->a, CUDA_R_16BF);
  EXPECT_EQ(lt_types(DType::F64, DType::F64, DType::F64, false)->compute, CUBLAS_COMPUTE_64F);
  // The three FP8 pairs, f32 or bf16 out; E5M2 x E5M2 refused.
  for (auto [a, b] : {std::pair{DType::F8E4M3, DType::F8E4M3},
                      {DType::F8E4M3, DType::F8E5M2},
                      {DType::F8E5M2, DType::F8E4M3}})
    for (DType d : {DType::F32, DType::BF16})
      EXPECT_TRUE(lt_types(a, b, d, false));
  EXPECT_FALSE(lt_types(DType::F8E5M2, DType::F8E5M2, DType::F32, false, &why));
  EXPECT_NE(why.find("E5M2 x E5M2"), std::string::npos) << why;
  EXPECT_FALSE(lt_types(DType::F8E4M3, DType::F8E4M3, DType::F16, false));
  // Mixed and integer operands.
  EXPECT_FALSE(lt_types(DType::BF16, DType::F16, DType::F32, false, &why));
  EXPECT_NE(why.find("equal operand types"), std::string::npos) << why;
  EXPECT_FALSE(lt_types(DType::I32, DType::I32, DType::I32, false));
  EXPECT_FALSE(lt_types(DType::F32, DType::F32, DType::BF16, false));
}

TEST(LtSpec, DecodeProjectionSpecAndItsKey) {
  // x [1, 4096] @ W^T, W [1024, 4096] bf16: the column-major TN form.
  const auto g =
      lib_gemm_of({1, 1024, 4096}, {4096, 0, 1}, {0, 4096, 1}, 2, GemmFamily::ColSwapped);
  ASSERT_TRUE(g);
  const LtTypes t = *lt_types(DType::BF16, DType::BF16, DType::BF16, false);
  const LtSpec s = lt_spec(*g, t, 32u << 20);
  EXPECT_EQ(s.m, 1024u);
  EXPECT_EQ(s.n, 1u);
  EXPECT_EQ(s.k, 4096u);
  EXPECT_EQ(s.op_a, CUBLAS_OP_T);
  EXPECT_EQ(s.op_b, CUBLAS_OP_N);
  EXPECT_EQ(s.a.rows, 4096u);
  EXPECT_EQ(s.a.cols, 1024u);
  EXPECT_EQ(s.a.ld, 4096);
  EXPECT_EQ(s.a.order, CUBLASLT_ORDER_COL);
  EXPECT_EQ(s.d.ld, 1024);
  EXPECT_EQ(s.c, s.d);
  EXPECT_EQ(s.beta, 0.0);
  EXPECT_EQ(s.a.batch_stride, 0);
  const auto r = lib_gemm_of({1, 1024, 4096}, {4096, 0, 1}, {0, 4096, 1}, 2, GemmFamily::Row);
  const LtSpec rs = lt_spec(*r, t, 32u << 20);
  EXPECT_EQ(rs.a.order, CUBLASLT_ORDER_ROW);
  EXPECT_FALSE(rs == s);
  // Equal specs are one key; any field (an alignment, the workspace) makes another.
  std::unordered_set<LtSpec, LtSpecHash> keys = {s, lt_spec(*g, t, 32u << 20)};
  EXPECT_EQ(keys.size(), 1u);
  LtSpec s2 = s;
  s2.align[1] = 2;
  LtSpec s3 = s;
  s3.workspace = 0;
  keys.insert(s2);
  keys.insert(s3);
  EXPECT_EQ(keys.size(), 3u);
  EXPECT_NE(s.to_string().find("m=1024 n=1 k=4096"), std::string::npos) << s.to_string();
}

TEST(LtSpec, OperandTypesFollowTheInputsThroughTheFamilysSwap) {
  // x (input 0, E5M2) @ W^T (input 1, E4M3): the column-major family's A is W.
  const auto col = lib_gemm_of({16, 32, 64}, {64, 0, 1}, {0, 64, 1}, 2, GemmFamily::ColSwapped);
  const LtTypes t = *lt_types(DType::F8E5M2, DType::F8E4M3, DType::F32, false);
  const LtSpec s = lt_spec(*col, t, 0);
  EXPECT_EQ(s.a.type, CUDA_R_8F_E4M3);
  EXPECT_EQ(s.b.type, CUDA_R_8F_E5M2);
  const auto row = lib_gemm_of({16, 32, 64}, {64, 0, 1}, {0, 64, 1}, 2, GemmFamily::Row);
  const LtSpec r = lt_spec(*row, t, 0);
  EXPECT_EQ(r.a.type, CUDA_R_8F_E5M2);
  EXPECT_EQ(r.b.type, CUDA_R_8F_E4M3);
}

TEST(LtSpec, BatchStridesAndPointerAlignment) {
  // Attention scores [b=2, h=3, s=4, n=6, k=8]: batch 6, strides per stored matrix.
  const auto g = lib_gemm_of({2, 3, 4, 6, 8}, {96, 32, 8, 0, 1}, {144, 48, 0, 1, 6}, 4,
                             GemmFamily::ColSwapped);
  ASSERT_TRUE(g);
  const LtSpec s = lt_spec(*g, *lt_types(DType::F32, DType::F32, DType::F32, false), 0);
  EXPECT_EQ(s.batch, 6);
  EXPECT_EQ(s.a.batch_stride, 48);  // the library's A is the plan's second operand
  EXPECT_EQ(s.b.batch_stride, 32);
  EXPECT_EQ(s.d.batch_stride, 24);
  EXPECT_EQ(pointer_alignment(0x7f0000000000ull), 256u);
  EXPECT_EQ(pointer_alignment(0x7f0000000006ull), 2u);
  EXPECT_EQ(pointer_alignment(0x7f0000000010ull), 16u);
}

}  // namespace
}  // namespace luminal::cuda
#else
TEST(LtSpec, NoCublasLtHeader) { GTEST_SKIP() << "built without cublasLt.h"; }
#endif
