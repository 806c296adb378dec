#pragma once
// Feed-forward blocks with Hugging Face's weight layout ([out, in]): swiglu_mlp is
// down(silu(gate(x)) * up(x)); geglu_tanh_mlp is down(gelu_tanh(gate(x)) * up(x)) (Gemma).
// Example: examples/snippets/nn/mlp.cpp.
#include "luminal/ir/tensor.hpp"

namespace luminal::nn {

Tensor swiglu_mlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down);
Tensor geglu_tanh_mlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down);

}  // namespace luminal::nn
