// critical_path (program/critical_path.hpp): the most kernels on one chain of data dependencies,
// inputs and outputs not counted, branches that run beside each other counted once.
#include <gtest/gtest.h>

#include "luminal/egraph/op_def.hpp"
#include "luminal/ir/op.hpp"
#include "luminal/program/critical_path.hpp"

namespace luminal {
namespace {

LlirNode node(OpKind k, std::vector<int> inputs) {
  LlirNode n;
  n.op = hlir_op(k);
  n.inputs = std::move(inputs);
  return n;
}

TEST(LlirCriticalPath, CountsTheLongestChainOfKernels) {
  LlirGraph g;
  g.nodes = {
      node(OpKind::Input, {}),    // %0
      node(OpKind::Exp2, {0}),    // %1: chain a, 1
      node(OpKind::Sin, {1}),     // %2: chain a, 2
      node(OpKind::Recip, {0}),   // %3: chain b, 1 (beside %1 and %2)
      node(OpKind::Add, {2, 3}),  // %4: 3
      node(OpKind::Output, {4}),  // %5: not a kernel
      node(OpKind::Sqrt, {0}),    // %6: a branch of its own
      node(OpKind::Output, {6}),
  };
  EXPECT_EQ(critical_path(g), 3);
  g.nodes.push_back(node(OpKind::Mul, {4, 6}));  // after the longest chain: 4
  EXPECT_EQ(critical_path(g), 4);
  LlirGraph inputs_only;
  inputs_only.nodes = {node(OpKind::Input, {}), node(OpKind::Output, {0})};
  EXPECT_EQ(critical_path(inputs_only), 0);
}

}  // namespace
}  // namespace luminal
