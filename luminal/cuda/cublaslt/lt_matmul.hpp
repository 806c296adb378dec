#pragma once
// cuBLASLt matmuls in the search space (internal): cuda.LtMatmul (every matrix column-major, the
// operands swapped: C^T = B^T A^T) and cuda.LtMatmulRow (row-major), added by the rules of the
// "cuda.cublaslt" ruleset as alternatives of every matmul (SumReduce over a broadcast Mul) whose
// layout is one gemm per batch index with one batch count and stride (gemm_plan.hpp) and whose
// dtypes cuBLASLt takes (lt_types), reading 16-bit operands through the graph's casts to f32 and
// storing a 16-bit output through the graph's cast down. The node's attributes are a
// cuda.Matmul's (the Mul's two views over its dims, the reduced axis, the output's dtype and
// shape); the plan turns them into an LtSpec at the current dims (lt_node_gemm + lib_gemm).
//
// Epilogues (rule "cuda.cublaslt-epilogue"): an Add of a cuBLASLt node's whole output and
//   - a tensor of the same layout becomes the node with beta = 1 and that tensor as C
//     (D = A B + C, the residual add of a transformer block), in both families;
//   - a vector broadcast along every axis but those where the output has its unit stride (a
//     per-feature bias of x @ W^T) becomes the node with CUBLASLT_EPILOGUE_BIAS, in the column
//     family only (the bias runs along the rows of the library's D, which are the output's unit
//     stride axes there).
// Both take the Add's dtype as D's (C and the bias have it too). The node's payload
// (LtEpilogue) says which; the extra inputs follow the matmul's two, C first.
//
// FP8 (E4M3 x E4M3, E4M3 x E5M2, E5M2 x E4M3): the rules read FP8 operands through the graph's
// exact casts up to f32 (Tensor::matmul on FP8 tensors rounds its result to FP8; a scaled FP8
// linear layer casts its operands up and multiplies the f32 product by its scales), in the column
// family only and only in the TN form (lt_fp8_fits). Rule "cuda.cublaslt-fp8-scale": Mul of such
// an f32 product (no epilogue yet) by one f32 value read at every index (a scalar broadcast, say
// s_in * s_w) becomes the node with that value as its A_SCALE_POINTER; epilogues may follow
// (D = scale * A B + C + bias), a bias only with a bf16 D (cuBLASLt reads an FP8 product's bias
// as bf16 when D is f32: an f32 bias stays a separate Add).
//
// Activations (rule "cuda.cublaslt-activation"): a fused elementwise node over a cuBLASLt node's
// whole output computing ReLU or the tanh GELU of it (lt_activation.hpp) becomes the node with
// that epilogue (RELU / GELU, RELU_BIAS / GELU_BIAS with a bias), both families; never on a node
// with C (cuBLASLt would add C before the activation) and nothing is added after one (no C, bias
// or scale on a node with an activation). The epilogue computes the activation in f32 on the
// accumulator and rounds once to D's type, where the graph rounds the product first; cuBLASLt's
// ReLU is max(x, 0), which may give 0 for a NaN product where Tensor::relu keeps the NaN.
#include <optional>
#include <vector>

#include "luminal/cuda/cublaslt/lt_activation.hpp"
#include "luminal/cuda/cublaslt/lt_spec.hpp"
#include "luminal/egraph/attrs.hpp"
#include "luminal/egraph/op_def.hpp"

namespace luminal::cuda {

/// The symbolic gemm of an Lt node's attributes: the Mul's dims and the coefficients of z in
/// its two views' strides.
struct LtNodeGemm {
  std::vector<Expr> dims, sa, sb;
  int k = 0;
};

/// The epilogue of a cuBLASLt node: the payload of a node with one, absent on a plain product.
/// Its extra inputs follow the matmul's two in this order: C, the bias, the scale.
struct LtEpilogue final : Payload {
  bool accumulate = false;  // C: beta = 1
  bool bias = false;        // a bias vector along D's rows
  bool scale = false;       // FP8: one f32 the product is multiplied by (A_SCALE_POINTER)
  LtActivation act = LtActivation::None;  // applied last: D = act(scale A B + bias)

  LtEpilogue(bool acc, bool b, bool s = false, LtActivation a = LtActivation::None)
      : accumulate(acc), bias(b), scale(s), act(a) {}
  std::string_view kind() const override { return "lt_epilogue"; }
  /// The letters of what it has, in the order "c" (C), "b" (bias), "s" (scale), then "r" (ReLU)
  /// or "g" (tanh GELU): "cb", "s", "br", ...
  std::string serialize() const override;
  /// Throws luminal::Error on any other text.
  static std::shared_ptr<const LtEpilogue> deserialize(std::string_view text);
  size_t hash() const override;
  bool equals(const Payload& o) const override;
  std::string to_string() const override;
};

/// The node's epilogue (both false when it has none).
LtEpilogue lt_epilogue(const Attrs& a);
/// The cuBLASLt epilogue of a node's payload (DEFAULT, BIAS, RELU, RELU_BIAS, GELU, GELU_BIAS).
cublasLtEpilogue_t lt_epilogue_kind(const LtEpilogue& e);

/// The input index of C / the bias / the scale, or -1.
int lt_c_input(const Attrs& a);
int lt_bias_input(const Attrs& a);
int lt_scale_input(const Attrs& a);

/// Whether an FP8 product with these attributes fits Hopper's FP8 form in the column family
/// (lt_fp8_problem) for every value of its dims: the TN layout (x @ W^T, both row-major), and
/// leading dimensions and batch strides provably multiples of 16 elements; checked for the
/// symbolic dims and again with each subset of the dynamic dims at 1.
bool lt_fp8_fits(const Attrs& a);

/// Whether a bias read through `bias_strides` (one stride per output axis, the output's shape
/// being `a`'s Mul dims without the reduced axis) adds bias[i] to row i of the library's D in
/// the column family: it steps with the output along the axes where the output has its unit
/// stride and is broadcast along every other axis.
/// Checked for the symbolic dims and again with each subset of the dynamic dims at 1 (the plan
/// drops size-1 axes, which can move D's rows).
bool lt_bias_fits(const Attrs& a, const std::vector<Expr>& bias_strides);
/// The same at known dims and strides (the plan re-checks at each new spec).
bool lt_bias_fits_at(const std::vector<int64_t>& dims, const std::vector<int64_t>& sa,
                     const std::vector<int64_t>& sb, int k, const std::vector<int64_t>& bias);

/// Nothing when a stride is not c * z (an offset, a non-linear view) or the layout is not one
/// gemm per batch index with composing batch axes. A plain product's axes whose strides are
/// linear only when split (kernels/split_axes.hpp) are split first: dims, sa, sb and k are then
/// over the split axes (the output's layout is the same).
std::optional<LtNodeGemm> lt_node_gemm(const Attrs& a);

/// Whether `op` is a cuBLASLt op, and its family.
bool is_lt_op(const OpDef* op);
GemmFamily lt_family(const OpDef* op);

}  // namespace luminal::cuda
