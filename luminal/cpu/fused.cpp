// cpu.Fused: the CPU backend's fused elementwise op. The program and the fusion rules live in
// luminal/kernels (shared with other backends); the kernel is in fused_kernel.cpp.
#include "luminal/cpu/fused.hpp"

#include "luminal/kernels/fusion.hpp"

namespace luminal::cpu {

namespace {
const OpDef kFused{.name = "cpu.Fused", .any_view = true};
std::vector<Rule> cpu_fusion_rules() { return fusion_rules(&kFused, "cpu"); }
}  // namespace

const OpDef* fused_op() { return &kFused; }

void register_fused_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kFused, "cpu.fusion", cpu_fusion_rules, make_fused_kernel};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
