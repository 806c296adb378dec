#pragma once
// Feed-forward blocks with Hugging Face's weight layout ([out, in]).
//
//   Tensor y = nn::swiglu_mlp(x, w_gate, w_up, w_down);   // down(silu(gate(x)) * up(x))
#include "luminal/ir/tensor.hpp"

namespace luminal::nn {

Tensor swiglu_mlp(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down);

}  // namespace luminal::nn
