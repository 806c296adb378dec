#pragma once
// cpu.Fused: one fused elementwise region on the CPU (internal). The program it carries and the
// rules that build it are backend-neutral: luminal/kernels/fused_program.hpp and fusion.hpp
// (ruleset "cpu.fusion" here).
#include <memory>

#include "luminal/cpu/cpu_op.hpp"
#include "luminal/egraph/op_def.hpp"
#include "luminal/kernels/fused_program.hpp"

namespace luminal::cpu {

/// The cpu.Fused op.
const OpDef* fused_op();
/// Its kernel (fused_kernel.cpp). Throws luminal::Error for a node without a valid program.
std::unique_ptr<Kernel> make_fused_kernel(const LlirNode& n);

}  // namespace luminal::cpu
