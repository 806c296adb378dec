// CI without a GPU: the CUDA code generator's NaN-payload analysis (nan_payload_kept), which
// decides where the kernels may load and round 16-bit floats without NaN checks, and
// the forms load_fn / inst_code then emit (the fast forms by default, the careful ones with
// LUMINAL_CUDA_FAST_NAN=0).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "luminal/cuda/codegen.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "support/fused_insts.hpp"

namespace luminal {
namespace {

using testing::inst;

/// Sets LUMINAL_CUDA_FAST_NAN for one scope.
struct FastNan {
  explicit FastNan(bool on) { ::setenv("LUMINAL_CUDA_FAST_NAN", on ? "1" : "0", 1); }
  ~FastNan() { ::unsetenv("LUMINAL_CUDA_FAST_NAN"); }
};

TEST(CudaCodegen, NanPayloadReachesTheResultOnlyThroughCastsAndSelectArms) {
  using O = FusedOpcode;
  const DType B = DType::BF16, F = DType::F32;
  // %0 = load0 bf16, %1 = cast f32 %0, %2 = load1 bf16, %3 = cast f32 %2, %4 = mul %1 %3,
  // %5 = lt %4 %1 (bool), %6 = cast bf16 %4, %7 = load2 bf16, %8 = select %5 %6 %7,
  // %9 = cast f32 %8 (the root)
  FusedProgram p({inst(O::Load, B, 0), inst(O::Cast, F, 0), inst(O::Load, B, 1),
                  inst(O::Cast, F, 2), inst(O::Mul, F, 1, 3), inst(O::LessThan, DType::Bool, 4, 1),
                  inst(O::Cast, B, 4), inst(O::Load, B, 2), inst(O::Select, B, 5, 6, 7),
                  inst(O::Cast, F, 8)});
  p.validate();
  const std::vector<bool> keep = cuda::nan_payload_kept(p);
  // The root, the select's arms, the cast and the load behind them keep their payloads; the
  // product's operands (the multiply makes any NaN canonical), and the condition, do not.
  const std::vector<bool> want = {false, false, false, false, true, false, true, true, true, true};
  EXPECT_EQ(keep, want);
  // A float-to-integer cast passes no payload on (NaN gives 0 whatever its bits).
  FusedProgram q({inst(O::Load, B, 0), inst(O::Cast, DType::I32, 0)});
  EXPECT_EQ(cuda::nan_payload_kept(q), (std::vector<bool>{false, true}));
}

TEST(CudaCodegen, FastNanFormsOnlyWhereThePayloadIsNotKeptAndTheFlagIsOn) {
  using O = FusedOpcode;
  const FusedInst add = inst(O::Add, DType::BF16, 0, 1);
  const FusedInst add32 = inst(O::Add, DType::F32, 0, 1);
  ::unsetenv("LUMINAL_CUDA_FAST_NAN");
  EXPECT_TRUE(cuda::fast_nan());  // the default
  EXPECT_EQ(cuda::inst_code(add, false), "rdm_bf16(v0 + v1)");
  {
    FastNan on(true);
    EXPECT_EQ(cuda::inst_code(add, false), "rdm_bf16(v0 + v1)");
    EXPECT_EQ(cuda::inst_code(add, true), "rd_bf16(v0 + v1)");
    EXPECT_EQ(cuda::inst_code(add32, false), "rd_f32(v0 + v1)");  // f32 rounding is free
    EXPECT_EQ(cuda::load_fn(DType::F16, false), "ldm_f16");
    EXPECT_EQ(cuda::load_fn(DType::F16, true), "ld_f16");
    EXPECT_EQ(cuda::load_fn(DType::F8E4M3, false), "ld_f8e4m3");
  }
  {
    FastNan off(false);
    EXPECT_EQ(cuda::inst_code(add, false), "rd_bf16(v0 + v1)");
    EXPECT_EQ(cuda::load_fn(DType::BF16, false), "ld_bf16");
    EXPECT_FALSE(cuda::fast_nan());
  }
}

// A view's element offset (View::base, a slice at a start) starts every generated offset, also
// with an axis left out (reductions); it bounds the index width and vector loads start aligned.
TEST(CudaCodegen, ViewOffsetsStartAtTheBase) {
  LlirNode node;
  node.attrs.shape = {Expr(2), Expr(3)};
  const View v = *View::contiguous({4, Expr::var("s")}).slice(0, Expr(1), Expr(2));  // rows 1, 2
  ASSERT_EQ(v.base, Expr::var("s"));
  node.attrs.views = {v};
  node.inputs = {0};
  node.input_dtypes = {DType::F32};
  const Facts facts{{"s", {1, 512}}};
  const std::vector<std::string> dims = {"s"};
  const cuda::GenContext ctx{facts, dims};
  cuda::Codegen cg(node, ctx);
  std::string body;
  cg.view_offset(v, "i", "o", body);
  EXPECT_NE(body.find("o = ((int)(d0));"), std::string::npos) << body;
  std::string skipped;
  cg.view_offset(v, "i", "r", skipped, 1);
  EXPECT_NE(skipped.find("r = ((int)(d0));"), std::string::npos) << skipped;
  std::string plain;
  cg.view_offset(View::contiguous({4, Expr::var("s")}), "i", "p", plain);
  EXPECT_EQ(plain.find("d0"), std::string::npos) << plain;
  // The largest offset counts the base: 3 rows of s from s.
  EXPECT_EQ(cuda::view_max_offset(v, facts), 512 + 512 + 511);
  // Vector loads: only from a base that starts a vector.
  const View aligned = *View::contiguous({4, Expr(8)}).slice(0, Expr(1), Expr(2));
  const View odd = *View::contiguous({4, Expr(8)}).slice(1, Expr(1), Expr(4));
  EXPECT_TRUE(cuda::aligned_chunks(aligned, 1, 4));
  EXPECT_FALSE(cuda::aligned_chunks(odd, 1, 4));
}

}  // namespace
}  // namespace luminal
