// Softmax and normalisation layers.
#include "luminal/core/error.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

Tensor to_compute(const Tensor& x, std::string_view op) {
  prim::require_float(x, op);
  return prim::computes_in_f32(x.dtype()) ? x.cast(DType::F32) : x;
}

}  // namespace

Tensor Tensor::softmax(int axis) const {
  Tensor x = to_compute(*this, "softmax");
  axis = normalize_axis(axis, rank(), "softmax");
  Tensor e = (x - x.max(axis, true)).exp();
  // Multiplied by the reciprocal of the sum, as torch's CPU kernels do (cheaper than a true
  // division of every element).
  return (e * e.sum(axis, true).reciprocal()).cast(dtype_);
}

Tensor Tensor::log_softmax(int axis) const {
  Tensor x = to_compute(*this, "log_softmax");
  axis = normalize_axis(axis, rank(), "log_softmax");
  Tensor shifted = x - x.max(axis, true);
  return (shifted - shifted.exp().sum(axis, true).log()).cast(dtype_);
}

Tensor Tensor::layer_norm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                          double eps) const {
  Tensor x = to_compute(*this, "layer_norm");
  // The normalised axes: the last weight.rank() (else bias.rank(), else 1) axes, as torch's
  // normalized_shape; weight and bias must both have exactly that shape.
  const int n = weight ? weight->rank() : bias ? bias->rank() : 1;
  if (n > rank() || n == 0) {
    throw Error("layer_norm: " +
                (weight ? "weight " + shape_to_string(weight->shape())
                 : bias ? "bias " + shape_to_string(bias->shape())
                        : std::string("normalising the last axis")) +
                " does not fit input " + shape_to_string(shape()) +
                (rank() == 0 ? " (a scalar has no axis to normalise)" : ""));
  }
  for (const auto* p : {&weight, &bias}) {
    if (!*p) continue;
    const Tensor& t = **p;
    bool ok = t.rank() == n;
    for (int i = 0; ok && i < n; ++i)
      ok = t.dim(-1 - i) == dim(-1 - i);
    if (!ok) {
      throw Error(std::string("layer_norm: ") + (p == &weight ? "weight " : "bias ") +
                  shape_to_string(t.shape()) + " must equal the last " + std::to_string(n) +
                  " dims of the input " + shape_to_string(shape()));
    }
  }
  std::vector<int> axes;
  for (int i = rank() - n; i < rank(); ++i)
    axes.push_back(i);
  Tensor mu = x.mean(axes, true);
  Tensor d = x - mu;
  Tensor y = d * ((d * d).mean(axes, true) + eps).rsqrt();
  if (weight) y = y * weight->cast(y.dtype());
  if (bias) y = y + bias->cast(y.dtype());
  return y.cast(dtype_);
}

Tensor Tensor::rms_norm(const std::optional<Tensor>& weight, double eps) const {
  Tensor x = to_compute(*this, "rms_norm");
  if (rank() == 0) throw Error("rms_norm: a scalar input has no axis to normalise");
  if (weight && (weight->rank() != 1 || weight->dim(0) != dim(-1))) {
    throw Error("rms_norm: weight " + shape_to_string(weight->shape()) +
                " must be 1-D of the last dim of " + shape_to_string(shape()));
  }
  // As Hugging Face computes it: normalise in f32, cast back, then scale in the weight's dtype.
  Tensor y = (x * ((x * x).mean(-1, true) + eps).rsqrt()).cast(dtype_);
  if (weight) y = y * weight->cast(dtype_);
  return y;
}

}  // namespace luminal
