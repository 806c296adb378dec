#pragma once
// Rotary position embeddings as Hugging Face computes them: the inverse frequencies on the host
// (rope_inv_freq, f32 like HF), set once into an input; the positions (step_positions:
// c - s + i, I32 [s]) and the rotation (apply_rope on q [s, heads, hd]) in the graph.
// Example: examples/snippets/nn/rope.cpp.
//
// apply_rope follows HF's rotate_half convention: the first and second halves of each head are
// the pairs, out = x * cos + rotate_half(x) * sin with angles pos * inv_freq (in f32).
#include <string>
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal::nn {

struct RopeScaling {
  enum class Kind { None, Linear, Llama3 };
  Kind kind = Kind::None;
  double factor = 1.0;
  double low_freq_factor = 1.0;         // llama3
  double high_freq_factor = 4.0;        // llama3
  double original_max_position = 8192;  // llama3

  static RopeScaling none() { return {}; }
  static RopeScaling linear(double factor) { return {Kind::Linear, factor}; }
  static RopeScaling llama3(double factor, double low_freq_factor, double high_freq_factor,
                            double original_max_position) {
    return {Kind::Llama3, factor, low_freq_factor, high_freq_factor, original_max_position};
  }
};

/// The inverse frequencies, head_dim / 2 of them, computed like transformers: in f32,
/// 1 / base^(2j / head_dim), then scaled (linear: / factor; llama3: its piecewise rule).
/// Throws luminal::Error for an odd head_dim or a non-positive base or factor.
std::vector<float> rope_inv_freq(int head_dim, double base, const RopeScaling& scaling = {});

/// The positions of this step's tokens, c - s + i for i in [0, s) (I32 [s]), from the dims s
/// (tokens in this step) and c (context after it).
Tensor step_positions(Graph& g);

/// Rotates x [s, heads, head_dim] by positions (I32 [s]) and inv_freq (f32 [head_dim / 2]).
/// The angles and their cos/sin are computed in f32 and cast to x's dtype.
Tensor apply_rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq);

}  // namespace luminal::nn
