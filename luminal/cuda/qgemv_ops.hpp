#pragma once
// cuda.QGemv and its forms (decode GEMVs over block-quantized weights): the ops and the rules
// that offer them (qgemv_rules.cpp), shared with their kernels' generators (qgemv.cpp), which say
// what each form computes.
#include <utility>
#include <vector>

#include "luminal/cuda/cuda_op.hpp"

namespace luminal::cuda {

/// The most activation rows that share one read of the weight.
inline constexpr int kQGemvMaxRows = 8;

/// The forms: f32 activations, and the integer forms over the GGUF blocks (Q8) and the split
/// layout (Q8S).
enum class QGemvForm { F32, Q8, Q8S };

extern const OpDef kQGemv, kQGemvEpi;                // f32 activations (and an epilogue)
extern const OpDef kQGemvQ8, kQGemvQ8Epi;            // integer, GGUF blocks
extern const OpDef kQGemvQ8S, kQGemvQ8SEpi;          // integer, split layout
extern const OpDef kQGemvQ8Glu, kQGemvQ8SGlu;        // gate and up paired
extern const OpDef kQGemvQ8Matmul, kQGemvQ8SMatmul;  // rope's product after the GEMV

/// The rules: the f32 and integer forms (LUMINAL_CUDA_QGEMV), their epilogue forms, the paired
/// gate/up forms and the GEMV-then-product forms.
std::vector<Rule> qgemv_rules();
std::vector<Rule> qgemv_epilogue_rules();
std::vector<Rule> qgemv_glu_rules();
std::vector<Rule> qgemv_matmul_rules();

/// The activation rows `x` (read through `xv`) of a weight read through `wv`: their count (the
/// longest constant axis x steps through and W does not, or 1) and that axis (or -1).
std::pair<int, int> row_axis(const View& xv, const View& wv, int axis);

}  // namespace luminal::cuda
