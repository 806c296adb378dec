#pragma once
// How a matmul reads as a GEMV (cuda.Gemv and its epilogue, product and scatter forms, gemv.cpp):
// which operand is the shared weight, which axis holds the rows that share it, and the domain
// the kernel runs over (split where repeated heads make a stride non-linear).
#include <optional>

#include "luminal/core/shape.hpp"
#include "luminal/egraph/attrs.hpp"

namespace luminal::cuda {

/// The most rows (m) that share one read of the weight.
inline constexpr int kGemvMaxRows = 8;

/// How a matmul's attributes read as a GEMV: the shared operand, the row axis (-1: none) and
/// its length, and the chunk width.
struct GemvForm {
  int shared = 1;  // operand read once per output column
  int row_axis = -1;
  int rows = 1;  // length of row_axis (a constant, 2 to 8), else 1
  int vec = 1;   // elements of the wider dtype per 16-byte chunk
};

/// The GEMV form of matmul attributes `a` over operand dtypes `t0`, `t1`, or nothing: both
/// operands contiguous along k in aligned 16-byte chunks, float, and for some operand w every
/// output axis it does not step through (stride 0 where the other operand steps) at most 8 long
/// in all (so the weight is read once for at most 8 rows).
std::optional<GemvForm> gemv_form(const Attrs& a, DType t0, DType t1, const Facts& facts);

/// The attributes a GEMV reads `a` (two views) through, or nothing when it has no GEMV form: `a`
/// itself where it has one; else (unless LUMINAL_CUDA_GEMV_SPLIT=0) its domain with axes split
/// where that makes every stride linear (kernels/split_axes.hpp, as cuda.GemvKN): grouped-query
/// heads repeated by repeat_interleave read a KV head through c*(z/g), one batch index a query
/// head, so no operand is shared by few enough rows and Q @ K^T ran as cuda.Matmul, each query head
/// reading its KV head again; split into [kv, g], the g heads are the rows of one GEMV. The output,
/// row-major over the domain, keeps its layout. On by default since it ran on an H100 (2026-12-05).
std::optional<Attrs> gemv_domain(const Attrs& a, DType t0, DType t1, const Facts& facts);

}  // namespace luminal::cuda
