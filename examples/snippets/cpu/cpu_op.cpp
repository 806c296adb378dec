// luminal/cpu/cpu_op.hpp: how a CPU op is defined: its OpDef, the rules that introduce it and its
// kernel (the registry in cpu_ops.cpp lists every op). Here the kernel runs on its own.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "luminal/cpu/cpu_op.hpp"
#include "luminal/program/llir.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cpu;

const OpDef kMyOp{"cpu.MyOp"};

// out[i] = 2 * in[i] over f32.
class MyKernel : public Kernel {
  void run(const KernelContext& k) override {
    const int64_t n = numel(k.node.attrs.shape).eval(k.dyn);
    const float* in = reinterpret_cast<const float*>(k.in[0]);
    float* out = reinterpret_cast<float*>(k.out);
    for (int64_t i = 0; i < n; ++i)
      out[i] = 2 * in[i];
  }
};

std::vector<Rule> my_rules() { return {}; }  // the rewrites that add cpu.MyOp e-nodes

const CpuOp& my_op() {
  static const CpuOp op{
      &kMyOp, "cpu.fusion", my_rules,
      [](const LlirNode&) -> std::unique_ptr<Kernel> { return std::make_unique<MyKernel>(); }};
  return op;
}

int main() {
  LlirNode node;
  node.op = &kMyOp;
  node.attrs.shape = {4};
  node.inputs = {0};
  std::unique_ptr<Kernel> kernel = my_op().make(node);
  const float in[4] = {1, 2, 3, 4};
  float out[4] = {};
  const uint8_t* ins[] = {reinterpret_cast<const uint8_t*>(in)};
  const DynMap dyn;
  kernel->run(KernelContext{node, dyn, 1, ins, reinterpret_cast<uint8_t*>(out), 1});
  expect(out[3] == 8, "2 * in");
  expect(find_cpu_op(hlir_op(OpKind::Add)) != nullptr, "the registry holds the primitives");
  expect(find_cpu_op(&kMyOp) == nullptr, "an op outside the registry is not found");
}
