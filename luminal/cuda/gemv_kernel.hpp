#pragma once
// The generated GEMV's pieces shared by its CUDA-core form (gemv.cpp) and its tensor-core form
// (gemv_mma.cpp): the block size and the kernel wrapper.
#include <optional>
#include <string>

#include "luminal/cuda/codegen.hpp"
#include "luminal/cuda/gemv_form.hpp"

namespace luminal::cuda {

inline constexpr int kGemvBlock = 256;
inline constexpr int kGemvWarps = kGemvBlock / 32;

/// A kernel of either form: the dims prologue, P (outputs along the shared operand) and K, then
/// `body`, launched as `name` on `blocks` blocks of kGemvBlock threads. `before_wait`: statements
/// run before the kernel waits for the one before it (after P and K; the weight's L2 prefetch).
KernelGen gemv_kernel(const char* name, Codegen& cg, const Expr& P, const Expr& K,
                      const std::string& body, const Expr& blocks,
                      const std::string& before_wait = "");

/// The tensor-core form of a GEMV node (gemv_mma.cpp), or nothing where it does not apply or is
/// not chosen (LUMINAL_CUDA_GEMV_MMA): `form` its GemvForm, `P` its outputs along the shared
/// operand, `out_full` the output over the operands' axes, `w_view` the weight's view without the
/// row axis.
std::optional<KernelGen> gen_gemv_mma(const LlirNode& n, const GenContext& ctx,
                                      const GemvForm& form, DType product_t, const Expr& P,
                                      const View& out_full, const View& w_view, Codegen& cg);

}  // namespace luminal::cuda
