#pragma once
// OpDef: the identity of an op kind inside the e-graph and the LLIR.
//
// HLIR primitives have one OpDef each (hlir_op()); a backend defines its own ops (fused
// kernels, library calls, in-place variants) as `static const OpDef` objects in the file that
// implements them. An e-node refers to its op by pointer, so comparing ops is comparing pointers.
// Example: examples/snippets/egraph/op_def.cpp.
#include <cstdint>
#include <string_view>

#include "luminal/ir/op.hpp"

namespace luminal {

class EGraph;

struct OpDef {
  std::string_view name;
  /// For HLIR primitives: the OpKind (is_hlir is true).
  OpKind kind = OpKind::Input;
  bool is_hlir = false;
  /// The op may write its output into the buffer of this input (in-place); -1 when it never
  /// does. Pruning keeps such an e-node only when that input has no other consumer.
  int inplace_input = -1;
  /// Its cost in SearchSpace::fewest_kernels_genome: 1 per kernel, less for an op that does
  /// strictly less work than its alternatives (an in-place write skips a copy).
  double seed_cost = 1.0;
  /// A call into a vendor library (cuBLASLt) rather than a kernel of the backend's own: the
  /// search also starts from the fewest-kernels program without such calls, so a library call
  /// that loses (a GEMV the library runs slower; a spec that changes with every decode step) is
  /// measured against the program that does without it.
  bool library_call = false;
  /// An op of the backend's own that a library call does better where one is offered (the
  /// generated matmul, which has no tensor-core path): the third seed avoids it, so library
  /// calls stand wherever they can, even on operands copied into a layout the library takes
  /// (the GQA attention products of a prefill).
  bool library_replaces = false;
  /// Meant to run once per load (a weight rewritten into a kernel's layout): where its class
  /// also holds a load-time Fold leaf, the fewest-kernels seed takes the leaf at no cost (it
  /// avoids other folds, which may add memory).
  bool fold_preferred = false;
  /// Its kernel reads every child through the child's view, element offset (View::base)
  /// included, whatever the view (no matcher's condition on it): a rewrite may give an e-node of
  /// it a child read through another view of the same values (horizontal fusion reads a member's
  /// value at an offset in the fused matmul's output). HLIR primitives always do.
  bool any_view = false;
  /// Added to seed_cost for one e-node of the op, for a kernel whose time grows with what it
  /// reads faster than its alternatives' (the quantized GEMV's f32-activation form, qgemv.cpp):
  /// the seeds count kernels, and a large matrix in that form costs more than a kernel's launch.
  double (*seed_extra)(const EGraph& eg, uint32_t enode) = nullptr;
};

/// The OpDef of an HLIR primitive.
const OpDef* hlir_op(OpKind k);
/// True when `op` is the HLIR primitive `k`.
inline bool is_op(const OpDef* op, OpKind k) { return op == hlir_op(k); }

}  // namespace luminal
