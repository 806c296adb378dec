#pragma once
// What one cuBLASLt matmul call needs besides its pointers: problem sizes, each matrix's type,
// shape, leading dimension, batch stride and order, the compute and scale types, alpha, beta, the
// epilogue, each pointer's proven alignment and the workspace limit. Equal specs can share one
// prepared call (descriptors and algorithm, lt_prepare.hpp); the heuristic cache is keyed by it.
// lt_spec() makes one from a library gemm (kernels/lib_gemm.hpp) and the operand types
// (lt_types()).
// Example: examples/snippets/cuda/lt_spec.cpp (the spec of x [8, 16] @ w^T in bf16).
#include <cublasLt.h>

#include <cstdint>
#include <optional>
#include <string>

#include "luminal/core/dtype.hpp"
#include "luminal/kernels/lib_gemm.hpp"

namespace luminal::cuda {

/// The library types of a matmul whose inputs 0 and 1 have dtypes a and b, with output d (C has
/// d's type). lt_spec gives the library's A and B the type of the input each one reads.
struct LtTypes {
  cudaDataType_t a, b, c, d, scale;
  cublasComputeType_t compute;
};

/// The type table:
///   f32 x f32 -> f32: compute 32F (32F_FAST_TF32 with allow_tf32: a down-conversion mode);
///   tf32 x tf32 -> f32/tf32: 32F_FAST_TF32 (tf32 values are stored as f32);
///   f16 x f16 and bf16 x bf16 -> the same type or f32: compute 32F, scale f32 (not
///   32F_FAST_16BF, which rounds f32 operands down to bf16);
///   f64 x f64 -> f64: compute 64F;
///   FP8 E4M3 x E4M3, E4M3 x E5M2, E5M2 x E4M3 -> f32 or bf16: compute 32F (E5M2 x E5M2 is not
///   a cuBLASLt pair; FP8 also needs the column-major "TN" form, checked by the caller).
/// Nothing (with `why`) for any other combination.
std::optional<LtTypes> lt_types(DType a, DType b, DType d, bool allow_tf32,
                                std::string* why = nullptr);

struct LtMatrixSpec {
  cudaDataType_t type = CUDA_R_32F;
  uint64_t rows = 0, cols = 0;  // as stored
  int64_t ld = 0;
  int64_t batch_stride = 0;  // elements
  cublasLtOrder_t order = CUBLASLT_ORDER_COL;
  bool operator==(const LtMatrixSpec&) const = default;
};

struct LtSpec {
  uint64_t m = 0, n = 0, k = 0;
  int32_t batch = 1;
  cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  LtMatrixSpec a, b, c, d;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  double alpha = 1.0, beta = 0.0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  // FP8: the product is multiplied by the f32 scalar at a device pointer
  // (CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, set at each enqueue); without it the library reads 1.0.
  bool scale_a = false;
  // Proven alignment in bytes of the A, B, C and D pointers (MIN_ALIGNMENT_*_BYTES preferences:
  // the library's default assumes 256).
  uint32_t align[4] = {256, 256, 256, 256};
  uint64_t workspace = 0;  // bytes an algorithm may use

  bool operator==(const LtSpec& o) const;
  size_t hash() const;
  /// "m=1024 n=1 k=4096 batch=1 A=bf16 col 4096x1024 ld 4096 op T, B=..., compute 32F, ..."
  std::string to_string() const;
};

struct LtSpecHash {
  size_t operator()(const LtSpec& s) const { return s.hash(); }
};

/// The spec of library call `g` (lib_gemm) with types `t`: C is D's matrix (the call does not
/// accumulate: beta 0), every alignment 256 (the caller lowers them to what its pointers prove).
/// Throws luminal::Error when a size does not fit cuBLASLt's types (batch count above 2^31 - 1).
LtSpec lt_spec(const LibGemm<int64_t>& g, const LtTypes& t, uint64_t workspace);

/// Whether the spec multiplies FP8 operands.
bool lt_is_fp8(const LtSpec& s);

/// Why cuBLASLt cannot take FP8 spec `s` on Hopper (empty when it can, or when `s` is not FP8):
/// FP8 runs only in the column-major "TN" form (op(A) = A^T, op(B) = B), with leading dimensions
/// and batch strides multiples of 16 elements and 16-byte aligned pointers.
std::string lt_fp8_problem(const LtSpec& s);

/// The alignment in bytes (at most 256) an address proves.
uint32_t pointer_alignment(uint64_t address);

const char* lt_type_name(cudaDataType_t t);

}  // namespace luminal::cuda
