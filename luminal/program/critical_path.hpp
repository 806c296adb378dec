#pragma once
// The longest chain of kernels in a program: where independent kernels overlap (a CUDA graph's
// branches, programmatic dependent launch), a decode step's time grows with this more than with
// the kernel count (docs/cuda.md, "Kernels on the critical path").
#include "luminal/program/llir.hpp"

namespace luminal {

/// The most nodes other than Input and Output on one chain of data dependencies of `g` (each
/// node after the nodes it reads): a lower bound on the kernels that run one after another.
int critical_path(const LlirGraph& g);

}  // namespace luminal
