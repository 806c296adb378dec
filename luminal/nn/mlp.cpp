#include "luminal/nn/mlp.hpp"

#include "luminal/nn/linear.hpp"

namespace luminal::nn {

Tensor swiglu_mlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down) {
  return linear(linear(x, gate).silu() * linear(x, up), down);
}

Tensor geglu_tanh_mlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down) {
  return linear(linear(x, gate).gelu_tanh() * linear(x, up), down);
}

}  // namespace luminal::nn
