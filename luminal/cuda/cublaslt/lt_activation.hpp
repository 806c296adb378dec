#pragma once
// Which activation a fused elementwise program (kernels/fused_program.hpp) applies to its one
// input, for cuBLASLt's activation epilogues (internal to the cuBLASLt rules):
//   - ReLU, Tensor::relu's form: select(x < 0, 0, x), the condition possibly or'ed with a
//     constant false (relu is maximum(x, 0), which also takes y when y is NaN: 0 never is),
//     read once constants are folded and exact widenings (to f32, f64) and roundings to the
//     result's own type set aside (a rounding to FP8 or f16 inside an f32 program is not);
//   - the tanh GELU, Tensor::gelu_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The
//     program must be built from its input and constants with adds, multiplies, exp2 and
//     reciprocals only (an analytic function), and equal that function at 64 points of
//     [-6, 6] within 1e-5: an identity test, not a proof, but a program of this form that
//     agrees at 64 points and differs elsewhere would have to be built for it.
// The erf GELU (Tensor::gelu) is neither: cuBLASLt has no erf form.
#include <cstdint>
#include <optional>

#include "luminal/kernels/fused_program.hpp"

namespace luminal::cuda {

enum class LtActivation : uint8_t { None, Relu, GeluTanh };

/// What `p` computes of its one load, or None (more than one load, or another function).
LtActivation lt_activation_of(const FusedProgram& p);

/// For a program over two loads whose only use of them is one Add of the two (act(x + b)), each
/// possibly through a cast set aside as above: the program with that Add as its one load
/// (load 0), to be read by lt_activation_of.
std::optional<FusedProgram> lt_without_sum(const FusedProgram& p);

/// The value of `p` at input x in double precision, exact widenings and roundings to the result's
/// type left out (the exact function the program rounds); nothing when it uses an op this does
/// not model (Mod, row reductions, other casts) or reads a second input.
std::optional<double> eval_fused(const FusedProgram& p, double x);

}  // namespace luminal::cuda
