// luminal/cuda/codegen.hpp: source generation for a node's kernel: typed pointers, the dims
// prologue, view offsets as C expressions, and the launches.
#include <string>
#include <vector>

#include "luminal/core/shape.hpp"
#include "luminal/cuda/codegen.hpp"
#include "luminal/program/llir.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cuda;

// out[i] = in0 read through the node's view (a transposed copy).
KernelGen gen_copy(const LlirNode& node, const GenContext& ctx) {
  Codegen cg(node, ctx);
  std::string body;
  std::string off = cg.view_offset(node.attrs.views[0], "i", "a", body);  // statements + expr
  const std::string n = cg.c(numel(node.attrs.shape));
  const std::string& I = cg.idx();
  const std::string kernel = "extern \"C\" __global__ void LMN_ENTRY(lmn_map)(" + cg.params() +
                             ") {\n" + cg.dims_prologue() + "  for (" + I +
                             " i = threadIdx.x; i < " + n + "; i += blockDim.x) {\n" + body +
                             "    out[i] = in0[" + off + "];\n  }\n}\n";
  KernelGen k;
  k.launches.push_back({"lmn_map", 256, {Expr(1), Expr(1), Expr(1)}});
  k.source = Codegen::unit(kernel);
  return k;
}

int main() {
  LlirNode node;
  node.attrs.shape = {Expr::var("s"), 4};
  node.attrs.views = {View::contiguous({4, Expr::var("s")}).permute({1, 0})};
  node.inputs = {0};
  node.input_dtypes = {DType::F32};
  const Facts facts{{"s", {1, 512}}};
  const std::vector<std::string> dims = {"s"};
  KernelGen k = gen_copy(node, GenContext{facts, dims});
  expect(k.source.find("lmn_map") != std::string::npos && k.launches.size() == 1,
         "one kernel, one launch");
}
