#pragma once
// A GEMV and a short product reading its values in one kernel: rope's 2-term sum after the q or
// k projection (cuda.GemvMatmul / cuda.GemvCastMatmul, gemv.cpp; cuda.QGemvQ8Matmul /
// cuda.QGemvQ8SMatmul, qgemv.cpp; their store-into-scatter forms, scatter_store.cpp).
//
// GemvThenView is the node's payload: how the product reads the GEMV's values, a view over the
// product's dims with its k axis last. It is no input's view (the GEMV's values never reach
// memory), so it travels as the payload and the node's views stay one per input.
//
// The kernel: a task is an index of the product's output axes that the GEMV's values step
// through; the block's groups of W warps (the GEMV's own W, so its sums run in the same order)
// compute the T values of A each of its tasks reads (G / T tasks at once, or one task in T / G
// rounds) into shared memory; then its threads compute the tasks' outputs (one for each index of
// the axes A does not step through) as cuda.Matmul does over a strided k: each product rounded
// to the node's dtype, summed in double in k order. So the same bits as the GEMV then the matmul.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "luminal/core/shape.hpp"
#include "luminal/egraph/attrs.hpp"
#include "luminal/egraph/egraph.hpp"

namespace luminal::cuda {

struct GemvThenView final : Payload {
  View a;

  explicit GemvThenView(View v) : a(std::move(v)) {}
  std::string_view kind() const override { return "gemv_then"; }
  /// The rank, then each dim, stride and the base as write_expr forms, space-separated.
  std::string serialize() const override;
  /// Throws luminal::Error on malformed text.
  static std::shared_ptr<const GemvThenView> deserialize(std::string_view text);
  size_t hash() const override;
  bool equals(const Payload& o) const override;
  std::string to_string() const override;
};

class Codegen;
}  // namespace luminal::cuda

namespace luminal {
struct LlirNode;
}

namespace luminal::cuda {

/// The product after the GEMV: out = A @ B over the last axis of `va` / `vb` (T = 2, 4 or 8 long,
/// stepped by neither view with unit stride), A the GEMV's values, B the node's last input.
struct GemvThen {
  View va, vb;  // over the product's dims, its k axis last
};

/// The product of a GEMV-then-product node (cuda.GemvMatmul, cuda.QGemvQ8Matmul, ...): inputs
/// the GEMV's two and B; views the GEMV's two, then the product's view of B, k last; payload the
/// product's view of A (GemvThenView). Throws naming the op when the node is not so.
GemvThen then_of(const LlirNode& n);

/// The product's tasks and the views its code reads them through.
struct ThenTasks {
  int T = 0;          // A's values a task
  Expr P = Expr(1);   // the tasks
  Expr NN = Expr(1);  // outputs a task (the axes only B steps through)
  // A's view with the axes it does not step through at length 1 (the task's part, bases in);
  // the output and B by task, and by the outputs of a task (nn; B's base 0).
  View vtask, ntask_out, nout, nb_task, nb;
};

/// The tasks of `then` (throws naming `op` when the product axis is not a constant 2, 4 or 8).
ThenTasks then_tasks(const GemvThen& then, std::string_view op);

/// The opening of the block's loop over its TPB tasks and R rounds of G values: shared memory
/// lmn_a[TPB * T], then `it` (the value's slot), `task`, and `p`, the GEMV output that group g
/// computes (through A's view). Closed by then_close.
std::string then_open(Codegen& cg, const GemvThen& then, const ThenTasks& t, int G, int TPB, int R);

/// The opening of a GEMV kernel's loop over its outputs, appended to `body`: over `then`'s tasks
/// (then_open) where it is set, else over groups of G outputs, group g's output `p`. Returns the
/// condition under which the group's output exists ("task < P" or "p < P").
std::string gemv_loop_open(Codegen& cg, const GemvThen* then, const ThenTasks& t, int G, int TPB,
                           int R, std::string& body);

/// The end of the rounds, the product of tasks tb to tb + TPB - 1 (their A values in lmn_a,
/// after a barrier; thread q computes output q % NN of task tb + q / NN) and the end of the
/// tasks' loop. `n`: the node (its dtype; input n.inputs.size() - 1 is B).
std::string then_close(Codegen& cg, const GemvThen& then, const ThenTasks& t, int TPB,
                       const LlirNode& n, size_t b_input);

/// A cuda.Matmul e-node `m` a GEMV kernel could run after its GEMV: its first operand's class
/// (where the GEMV e-nodes are), its second (B), and the node's payload and last view.
struct ThenOffer {
  ClassId a, b;
  std::shared_ptr<const GemvThenView> payload;  // A's view, k last
  View vb;                                      // B's view, k last
  Attrs product;                                // the matmul's attributes
};
/// The offer, or none: a k of 2, 4 or 8 that neither operand reads with unit stride
/// (cuda.Matmul's strided form, whose order of sums the kernel repeats), A's view constants and z
/// only (a payload is outside the plan's dims slots), the first operand of the matmul's dtype.
std::optional<ThenOffer> then_offer(const EGraph& eg, ENodeId m);

/// For each (op, GEMV e-node) of `gemvs`: the e-node `op` over the GEMV's two children and B, with
/// the GEMV's attributes but the product's dtype and shape, B's view appended and A's view as the
/// payload, merged into `root` (the matmul's class).
void add_then_nodes(EGraph& eg, const ThenOffer& o,
                    const std::vector<std::pair<const OpDef*, ENodeId>>& gemvs, ClassId root);

/// The GEMV-then-product forms' seed cost grows with the weight (the larger of the GEMV's two
/// operands, children 0 and 1), 0.25 a MiB, so the seeds take them where a projection is
/// launch-bound and not where its weight's bytes bound it: on an H100 (2026-12-07) the integer
/// forms took a SmolLM2-shaped q4_1 decode step (q 0.2 MiB, k 0.06 MiB a layer) from 0.715 to
/// 0.700 ms, 60 kernels fewer, but an 8B q4_0 one (q 9 MiB, k 2.3 MiB) from 2.611 to 2.654 ms,
/// though the kernels' own times fell. Past about 1.8 MiB (quantized) or 3.8 MiB (dense, whose
/// GEMV's seed cost is higher) the separate kernels cost less.
double then_form_extra(const EGraph& eg, uint32_t enode);

/// `v` with axis `axis` moved last.
View axis_last(View v, int axis);

}  // namespace luminal::cuda
