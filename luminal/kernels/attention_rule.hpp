#pragma once
// The attention rule, generic over a backend's ops: a matmul that contracts a row kernel's result
// over its row axis, where the row kernel's program reads the scores of another matmul over the
// same rows, becomes one e-node of the backend's attention op. Decode attention is the case it is
// for (Q @ K^T, the masked, scaled softmax row, P @ V: three kernels and two round trips of the
// scores through memory become one kernel that reads K and V once), but it is matched on
// structure only: any row program (a soft-capped or windowed softmax, a plain normalisation), any
// views. Tests: tests/cpu/attention_test.cpp (the CPU op, cpu.Attention).
//
// Matched, with D = [rows..., L] the row e-node R's shape (rows a constant count):
//   M2 = SumReduce(Mul(a, b)) over [rows..., n, L] reducing the last axis (matmul_rule.hpp), one
//        operand the class of R read broadcast along n and row-major otherwise (P), the other V;
//   R  = a row e-node (FusedProgram with row reductions) reading child j, a class S, once and
//        contiguously over D;
//   M1 = SumReduce(Mul) in S over [rows..., L, d] reducing the last axis (d constant), with the
//        shape of D; one operand constant along L (Q: a query row), the other K.
// The new e-node, in M2's class:
//   children = R's children with child j replaced by Q, then K, then V;
//   views    = R's views with view j replaced by Q's (over [rows..., L, d]), then K's (the same
//              domain), then V's (over [rows..., n, L]);
//   axis     = j; payload = R's program; dtype and shape = M2's.
// It computes out[r.., e] = sum over l of P[r.., l] * V[r.., e, l], where P is R's program over
// D with load j = S[r.., l] = sum over t of Q[r.., l, t] * K[r.., l, t]: the unfused kernels'
// value up to the order of the two products' additions. The search times it against them.
#include <functional>
#include <string>
#include <vector>

#include "luminal/egraph/op_def.hpp"
#include "luminal/egraph/rule.hpp"

namespace luminal {

/// Rows (the product of D's leading dims) above this get no attention e-node: prefill's rows
/// are a GEMM's, better served by the library matmuls.
inline constexpr int64_t kAttentionMaxRows = 1024;

/// The candidate e-node before it is added: a backend's guard reads it (dtypes, sizes).
struct AttentionCandidate {
  std::vector<ClassId> children;  // as above
  Attrs attrs;
};

/// The rule "<name>" adding `attention` e-nodes as above, from `row` e-nodes, where `accept`
/// (null: always) takes the candidate; it may rewrite the candidate first (a backend reading a
/// 16-bit operand through the graph's cast up to f32 replaces the child and its view).
Rule attention_rule(const std::string& name, const OpDef* row, const OpDef* attention,
                    std::function<bool(const EGraph&, AttentionCandidate&)> accept);

}  // namespace luminal
