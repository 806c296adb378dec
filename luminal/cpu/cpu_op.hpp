#pragma once
// How a CPU op is defined (internal). Each op lives in one file: its OpDef, the rules that
// introduce it, and its kernel, tied together by a CpuOp (the op, its ruleset's name, its rules,
// and the function that makes its Kernel from an LLIR node). The registry (cpu_ops.cpp) lists
// them.
// Example: examples/snippets/cpu/cpu_op.cpp (an op and its kernel, run on its own).
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "luminal/egraph/rule.hpp"
#include "luminal/program/llir.hpp"
#include "luminal/program/op_registry.hpp"

namespace luminal::cpu {

struct KernelContext {
  const LlirNode& node;
  const DynMap& dyn;
  /// Changes whenever a value in `dyn` that the node reads changes (its shape, views, iota or
  /// payload): kernels cache per version, never compare maps.
  uint64_t dims_version;
  std::span<const uint8_t* const> in;  // contiguous buffers of the node's inputs
  uint8_t* out;  // output buffer (the in-place input's buffer for in-place ops)
  int threads;
};

/// One node's compiled kernel; may cache work that depends only on the dyn values.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(const KernelContext& k) = 0;
};

/// A CPU op: the op and its rules (RegisteredOp; rulesets "cpu.fusion", "cpu.library",
/// "cpu.inplace"), and its kernel.
struct CpuOp : RegisteredOp {
  std::unique_ptr<Kernel> (*make)(const LlirNode& n);
};

/// Every CPU op (HLIR primitives included), in registry order.
const std::vector<const CpuOp*>& cpu_ops();
/// cpu_ops() with the payload kinds they carry (fused_program), as CpuBackend answers from it.
const OpRegistry& cpu_registry();
/// The CpuOp implementing `def`, or null.
const CpuOp* find_cpu_op(const OpDef* def);

}  // namespace luminal::cpu
