#pragma once
// Tensor: a lazy value in a Graph, read through a View. Every method adds HLIR nodes (or only
// changes the view) and returns a new Tensor; nothing is computed until a runtime executes.
//
// Conventions (torch-like unless stated):
//   - Axes may be negative (counted from the end).
//   - Binary ops broadcast numpy-style; both tensors must have the same dtype (cast() first);
//     a scalar operand takes the tensor's dtype (a non-integral scalar with an integer tensor is
//     an error).
//   - Comparisons return Bool. Index-producing ops (argmax, argsort, topk indices, arange)
//     return I32. Index inputs may be any integer dtype.
//   - `%` / fmod() is C's truncated remainder (sign of the dividend); remainder() is Python's.
//   - Float math on f16/bf16/f8 computes in f32 and rounds once per primitive op.
// Every shape problem throws luminal::Error naming the op and the shapes involved.
// Example: examples/snippets/ir/tensor.cpp (these conventions, checked).
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/shape.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/op.hpp"

namespace luminal {

class Tensor {
 public:
  Tensor() = default;
  Tensor(Graph g, NodeId id, View view, DType dtype);

  // ---- introspection ----
  const Shape& shape() const { return view_.dims; }
  int rank() const { return view_.rank(); }
  DType dtype() const { return dtype_; }
  /// Size of one axis.
  Expr dim(int axis) const;
  Expr numel() const { return view_.numel(); }
  const View& view() const { return view_; }
  NodeId id() const { return id_; }
  Graph graph() const { return graph_; }
  bool defined() const { return id_ >= 0; }

  // ---- marking ----
  /// Marks this value as an output the runtime keeps and the user reads (label defaults to
  /// "output<N>"). Returns the output tensor; runtimes accept either it or this tensor.
  Tensor output(std::string_view label = "") const;
  /// Keeps the buffer across executions (weights, KV caches). For inputs and outputs.
  Tensor persist() const;

  // ---- elementwise unary ----
  Tensor cast(DType to) const;
  /// The values of a block-quantized tensor (q4_0 .. q6_k) decoded exactly, in `to` (a float
  /// type). Its view must keep whole rows (row slices, gathers of rows, permuted rows): anything
  /// else is an error naming the tensor.
  Tensor dequantize(DType to = DType::F32) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor sin() const;
  /// 1 - 2*sin(x/2)^2 (accurate for large |x|, e.g. RoPE angles).
  Tensor cos() const;
  /// 2*sigmoid(2x) - 1: accurate in absolute terms (a few f32 eps); relative error grows for
  /// |x| < 1e-3.
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  /// Exact GELU, 0.5*x*(1 + erf(x/sqrt(2))) (erf to ~1.5e-7 absolute).
  Tensor gelu() const;
  /// GELU, tanh approximation (as transformers' "gelu_pytorch_tanh").
  Tensor gelu_tanh() const;
  Tensor erf() const;
  Tensor silu() const;
  Tensor swish() const { return silu(); }
  Tensor abs() const;
  /// -1, 0 or 1 (NaN stays NaN for floats).
  Tensor sign() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor square() const;
  /// x^p: integral p with |p| <= 2^31 is repeated multiplication (signed for negative x);
  /// 0.5 and -0.5 are sqrt and rsqrt as in torch (not for f16, as in torch); otherwise
  /// std::pow's rules through
  /// exp2(p*log2|x|) (NaN for negative finite x with fractional p; pow(-inf, 1.5) = inf).
  /// Integer tensors take integral p in 0..16 only.
  Tensor pow(double p) const;
  /// Elementwise x^p with std::pow's rules (negative bases with integral exponents, pow(x, 0) = 1).
  Tensor pow(const Tensor& p) const;
  /// Bool: logical not. Integers/floats: x == 0.
  Tensor logical_not() const;
  Tensor isnan() const;
  Tensor isinf() const;

  // ---- elementwise binary (with broadcasting) ----
  Tensor add(const Tensor& b) const;
  Tensor sub(const Tensor& b) const;
  Tensor mul(const Tensor& b) const;
  /// Floats: true division, IEEE's correctly rounded quotient for f32 and the 16/8-bit floats
  /// (computed in f64 from Recip, Mul, Add with an exact-residual correction); f64: correctly
  /// rounded for normal results (see division.cpp), within 1 ulp for subnormal ones.
  /// Integers: an error (cast to a float dtype first).
  Tensor div(const Tensor& b) const;
  /// C's truncated remainder (fmod for floats). Integer x % 0 is 0.
  Tensor fmod(const Tensor& b) const;
  /// Python's remainder: the result has the sign of b.
  Tensor remainder(const Tensor& b) const;
  Tensor minimum(const Tensor& b) const;  // NaN propagates
  Tensor maximum(const Tensor& b) const;  // NaN propagates
  Tensor clamp(double lo, double hi) const;
  Tensor clamp(const Tensor& lo, const Tensor& hi) const;
  Tensor lt(const Tensor& b) const;
  Tensor le(const Tensor& b) const;
  Tensor gt(const Tensor& b) const;
  Tensor ge(const Tensor& b) const;
  Tensor eq(const Tensor& b) const;
  Tensor ne(const Tensor& b) const;
  Tensor lt(double b) const;
  Tensor le(double b) const;
  Tensor gt(double b) const;
  Tensor ge(double b) const;
  Tensor eq(double b) const;
  Tensor ne(double b) const;
  Tensor logical_and(const Tensor& b) const;
  Tensor logical_or(const Tensor& b) const;
  /// Where `*this` (Bool) is true take a, else b. Exact: the unselected side never leaks
  /// (inf/NaN in it do not turn into NaN).
  Tensor where(const Tensor& a, const Tensor& b) const;
  Tensor where(const Tensor& a, double b) const;
  Tensor where(double a, const Tensor& b) const;
  /// x where mask is false, value where it is true.
  Tensor masked_fill(const Tensor& mask, double value) const;

  // ---- reductions (keepdim keeps reduced axes as size 1) ----
  Tensor sum(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor sum(int axis, bool keepdim = false) const;
  Tensor mean(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor mean(int axis, bool keepdim = false) const;
  Tensor max(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor max(int axis, bool keepdim = false) const;
  Tensor min(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor min(int axis, bool keepdim = false) const;
  /// Product; the reduced axes must have constant sizes (pairwise tree of multiplies).
  Tensor prod(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor prod(int axis, bool keepdim = false) const;
  /// Variance (biased, divide by n) over one axis.
  Tensor var(int axis, bool keepdim = false) const;

  // ---- normalisation and activations over an axis ----
  Tensor softmax(int axis) const;
  Tensor log_softmax(int axis) const;
  /// Normalises over the last `weight.rank()` axes (or the last axis without weight).
  Tensor layer_norm(const std::optional<Tensor>& weight = std::nullopt,
                    const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5) const;
  /// x / sqrt(mean(x^2, last axis) + eps) * weight.
  Tensor rms_norm(const std::optional<Tensor>& weight = std::nullopt, double eps = 1e-6) const;

  // ---- matmul ----
  /// 1-D to 5-D, batch dims broadcast (torch.matmul semantics). 16/8-bit floats multiply and
  /// accumulate in f32 and round once to the dtype.
  Tensor matmul(const Tensor& b) const;

  // ---- movement (views where possible) ----
  Tensor reshape(const std::vector<Dim>& shape) const;
  Tensor permute(const std::vector<int>& order) const;
  Tensor transpose(int a, int b) const;
  /// Broadcasts size-1 axes (and new leading axes) to `shape`.
  Tensor expand(const std::vector<Dim>& shape) const;
  /// Inserts a new axis of `size` at `axis` (stride 0).
  Tensor expand_dim(int axis, Dim size) const;
  Tensor squeeze(int axis) const;
  Tensor unsqueeze(int axis) const;
  Tensor flatten(int start = 0, int end = -1) const;
  /// Merges axis and axis+1.
  Tensor merge_dims(int axis) const;
  /// Splits axis into [dim/inner, inner].
  Tensor split_dims(int axis, Dim inner) const;
  /// Python slicing on one axis: [start, end) with step > 0; negative bounds count from the end;
  /// bounds are clamped. `end` = nullopt means the end of the axis.
  Tensor slice(int axis, Dim start, std::optional<Dim> end = std::nullopt, int64_t step = 1) const;
  /// `length` elements of axis from `start`, not clamped: for run-time bounds the caller knows
  /// fit (0 <= start, start + length <= the axis) where slice's clamps would hide the length
  /// (a ring's window, nn::cached_attention). Constant bounds are checked.
  Tensor slice_exact(int axis, Dim start, Dim length) const;
  /// Constant padding: pads[i] = {before, after} for axis i (fewer entries pad the first axes).
  Tensor pad(const std::vector<std::pair<Dim, Dim>>& pads, double value = 0) const;
  /// Sliding windows along axis: that axis becomes (d - size)/step + 1 and a new last axis of
  /// `size` holds each window (torch.Tensor.unfold).
  Tensor unfold(int axis, Dim size, Dim step) const;
  /// Tiles the tensor: repeats[i] copies along axis i (torch.Tensor.repeat).
  Tensor repeat(const std::vector<Dim>& repeats) const;
  /// A contiguous copy.
  Tensor contiguous() const;
  Tensor triu(int64_t k = 0) const;
  Tensor tril(int64_t k = 0) const;

  // ---- indexing ----
  /// Primitive gather: out[i] = flat(this)[indexes[i]]; the result has the index shape.
  Tensor gather_flat(const Tensor& indexes) const;
  /// Primitive scatter: a copy of this with flat(out)[indexes[i]] = src[i]; out-of-range skipped.
  Tensor scatter_flat(const Tensor& indexes, const Tensor& src) const;
  /// torch.gather: out[..i..] = this[..index[..i..]..] along axis.
  Tensor gather_elements(int axis, const Tensor& index) const;
  /// torch.scatter: a copy of this with out[..index[..i..]..] = src[..i..] along axis.
  Tensor scatter_elements(int axis, const Tensor& index, const Tensor& src) const;
  /// Rows of `axis` picked by a 1-D index.
  Tensor index_select(int axis, const Tensor& index) const;
  /// Rows of this [vocab, dim] table for integer ids of any shape: result ids.shape + [dim].
  Tensor embedding(const Tensor& ids) const;

  // ---- sorting and scans ----
  /// Index of the first maximum (NaN counts as the maximum); I32.
  Tensor argmax(int axis, bool keepdim = false) const;
  Tensor argmin(int axis, bool keepdim = false) const;
  /// Stable argsort along axis (I32).
  Tensor argsort(int axis, bool descending = false) const;
  /// The k largest (or smallest) along axis, sorted; returns {values, indices (I32)}.
  std::pair<Tensor, Tensor> topk(int64_t k, int axis = -1, bool largest = true) const;
  Tensor cumsum(int axis) const;

 private:
  Graph graph_;
  NodeId id_ = -1;
  View view_;
  DType dtype_ = DType::F32;
};

// Operators (tensor op tensor, and scalars on either side).
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator%(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);

/// Concatenates along an existing axis; all other dims must match.
Tensor concat(const std::vector<Tensor>& xs, int axis);
/// Stacks along a new axis.
Tensor stack(const std::vector<Tensor>& xs, int axis);

}  // namespace luminal
