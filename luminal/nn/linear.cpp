#include "luminal/nn/linear.hpp"

#include "luminal/core/error.hpp"

namespace luminal::nn {

Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
  if (weight.shape().size() != 2) {
    throw Error("nn::linear: the weight must be [out, in], got rank " +
                std::to_string(weight.shape().size()));
  }
  if (x.shape().empty() || x.shape().back() != weight.shape()[1]) {
    throw Error("nn::linear: input " + shape_to_string(x.shape()) +
                " does not end in the weight's " + "in-features " + weight.shape()[1].to_string() +
                " (weight " + shape_to_string(weight.shape()) + ", stored [out, in])");
  }
  Tensor y = x.matmul(weight.transpose(0, 1));
  if (bias) {
    if (bias->shape().size() != 1 || bias->shape()[0] != weight.shape()[0]) {
      throw Error("nn::linear: bias " + shape_to_string(bias->shape()) + " must be [" +
                  weight.shape()[0].to_string() + "]");
    }
    y = y + *bias;
  }
  return y;
}

Tensor embedding(const Tensor& table, const Tensor& ids) { return table.embedding(ids); }

Tensor lm_head(const Tensor& hidden, const Tensor& weight) { return linear(hidden, weight); }

}  // namespace luminal::nn
