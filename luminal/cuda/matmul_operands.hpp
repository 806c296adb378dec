#pragma once
// Matmul operands the graph casts up to f32 from a 16-bit float (every bf16/f16 matmul in the IR
// is cast(a, f32) @ cast(b, f32)): the 16-bit tensor and the view that reads it directly, so a
// matmul op can take the 16-bit operand (exact: the cast is) instead of a cast kernel's output.
// Shared by the generated matmul (reduce.cpp) and cuBLASLt (cublaslt/lt_matmul.cpp).
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/rule.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cuda {

/// `outer` (a view of a tensor stored contiguously with dims `shape`) read through `inner` (the
/// view that tensor's elements were computed from, over `shape`), as one view of inner's source:
/// when each axis of `outer` steps through one whole axis of `shape` (stride z * that axis'
/// contiguous stride, the same length) or is broadcast, and no axis of `shape` is used twice.
/// An `inner` at an element offset (a cast of a slice from a run-time row: the window of a
/// sliding layer's cache) composes only with `inner_base`, keeping that offset; callers whose
/// kernels read every view through its base (cuda.Attention) ask for it.
std::optional<View> compose(const View& outer, const Shape& shape, const View& inner,
                            bool inner_base = false);

/// Where the matmul operand `c` read through `v` is an exact Cast of a 16-bit float tensor up to
/// f32 (with `fp8`, also of an FP8 one): that tensor's class and the view reading it directly
/// (`inner_base`: as compose).
std::optional<std::pair<ClassId, View>> uncast(const EGraph& eg, ClassId c, const View& v,
                                               bool fp8 = false, bool inner_base = false);
/// `p` with each operand that uncast finds read through its cast instead (the 16-bit tensor
/// and the view reading it); nothing when neither operand is one.
std::optional<MatmulParts> uncast_operands(const EGraph& eg, const MatmulParts& p,
                                           bool fp8 = false);

/// The rule `name` over every matmul (kernels/matmul_rule.hpp: matmul_pattern): `add` gets the
/// parts of each match whose SumReduce reads the Mul as a reshape, and the matched class.
Rule matmul_parts_rule(const std::string& name,
                       std::function<void(EGraph&, const MatmulParts&, ClassId)> add);

/// The rules of a matmul kernel `op` and its 16-bit-storing form `cast_op`: "<name>" adds `op`
/// (merged into the matched class) for every matmul's parts, and for the parts reading its
/// 16-bit operands through the graph's casts (uncast_operands), where `takes` accepts them (it
/// may rewrite their views first); "<name>-cast" adds `cast_op` with `op`'s attributes for every
/// Cast of such an `op` value down to bf16/f16 (cast_down_rule).
std::vector<Rule> matmul_op_rules(const std::string& name, const OpDef* op, const OpDef* cast_op,
                                  std::function<bool(const EGraph&, MatmulParts&)> takes);

/// Where the matmul operand `c` is an exact Cast of a 16-bit float tensor x up to f32 through a
/// view no matmul view composes with (uncast finds nothing: a permuted tensor with merged axes,
/// as attention's output before o_proj): the attributes and the child of a Cast of x to its own
/// 16-bit type through that view (what Tensor::contiguous() writes), whose value is c's in 16
/// bits, laid out as c. A library call can read it where it would otherwise read c (and the other
/// operand in f32); the caller adds it (EGraph::add) once it knows the call takes it.
struct Copy16 {
  Attrs attrs;
  ClassId x;
};
std::optional<Copy16> copy_in_16_bits(const EGraph& eg, ClassId c);

/// The rule `name` for Cast(x) to bf16/f16 of a whole f32 value x: for every e-node of x's class
/// whose op is `op` (an f32 matmul), `add` gets that node's attributes with the cast's dtype and
/// shape, its children and the cast's class (a matmul that stores its result in 16 bits).
Rule cast_down_rule(
    const std::string& name, const OpDef* op,
    std::function<void(EGraph&, const Attrs&, const std::vector<ClassId>&, ClassId)> add);

}  // namespace luminal::cuda
