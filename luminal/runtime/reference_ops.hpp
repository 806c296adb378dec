#pragma once
// Element-at-a-time kernels of the ReferenceRuntime (internal).
#include <vector>

#include "luminal/core/expr.hpp"
#include "luminal/ir/op.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal::reference {

/// A View with its dyn values substituted, ready to turn logical indices into element offsets
/// (its base included).
class StridedView {
 public:
  StridedView(const View& v, const DynMap& dyn);
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const { return numel_; }
  int64_t offset(const std::vector<int64_t>& index) const;
  /// Offset of a flat row-major logical index.
  int64_t offset_of_flat(int64_t flat) const;

 private:
  struct Axis {
    bool linear = true;
    int64_t coef = 0;
    Expr stride;  // used when not linear
  };
  std::vector<int64_t> dims_;
  std::vector<Axis> axes_;
  int64_t numel_ = 1;
  int64_t base_ = 0;  // the view's element offset
};

/// Computes one node. `in` holds the inputs' buffers (in node order) and `out_shape` the
/// evaluated output shape.
HostBuffer run_node(const Node& n, const std::vector<const HostBuffer*>& in, const DynMap& dyn,
                    const std::vector<int64_t>& out_shape);

}  // namespace luminal::reference
