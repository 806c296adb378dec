#pragma once
// Linear layers and embeddings with Hugging Face's weight layout: linear(x, w) with x [..., in]
// and w [out, in] is x @ w^T [..., out] (+ b [out]); embedding(table, ids) with table
// [vocab, dim] and I32 ids [...] is [..., dim]. Example: examples/snippets/nn/linear.cpp.
#include <optional>

#include "luminal/ir/tensor.hpp"

namespace luminal::nn {

/// x @ weight^T (+ bias). The weight is read transposed through a view (no copy), so the GEMM
/// planner sees a column-major operand. f16/bf16 weights multiply and accumulate in f32.
Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = {});

/// Rows of `table` for integer ids.
Tensor embedding(const Tensor& table, const Tensor& ids);

/// Logits from hidden states: `lm_head` [vocab, hidden], or the embedding table when the model
/// ties them (the same tensor, read transposed).
Tensor lm_head(const Tensor& hidden, const Tensor& weight);

}  // namespace luminal::nn
