// luminal/cuda/cuda_op.hpp: how a CUDA op is defined: its OpDef, its rules and its source
// generator (codegen.hpp); the registry in cuda_ops.cpp lists every op.
#include <vector>

#include "luminal/cuda/codegen.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/egraph/rule.hpp"
#include "luminal/program/llir.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cuda;

const OpDef kMyOp{"cuda.MyOp"};
std::vector<Rule> my_rules() { return {}; }  // the rewrites that add cuda.MyOp e-nodes
KernelGen gen_my_op(const LlirNode&, const GenContext&) { return KernelGen{}; }

int main() {
  static const CudaOp op{&kMyOp, "cuda.library", my_rules, gen_my_op};
  expect(op.generate == gen_my_op && op.ruleset == "cuda.library", "an op and its generator");
  expect(find_cuda_op(hlir_op(OpKind::Add)) != nullptr, "the registry holds the primitives");
  expect(find_cuda_op(&kMyOp) == nullptr, "an op outside the registry is not found");
}
