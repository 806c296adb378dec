#pragma once
// Patterns: trees of ops with variables and attribute predicates, matched against an e-graph.
// Example: examples/snippets/egraph/pattern.cpp (the matmul pattern: SumReduce over the last axis
// of a Mul).
//
// A variable matches any class (the same name twice must match the same class). An op pattern
// matches every e-node of that op whose attributes satisfy the predicate and whose children match
// the child patterns; `bind` names the matched e-node so rules can read its attributes. An op
// pattern without child patterns leaves the children unconstrained (any arity); with child
// patterns the e-node must have exactly that many children.
// Removed e-nodes never match.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "luminal/egraph/egraph.hpp"

namespace luminal {

class Pattern {
 public:
  static Pattern var(std::string name);
  static Pattern op(const OpDef* op, std::vector<Pattern> children = {});
  static Pattern op(OpKind k, std::vector<Pattern> children = {});
  /// Any e-node (of any op) whose op satisfies `pred`; children are not constrained.
  static Pattern any_op(std::function<bool(const OpDef*)> pred);

  /// Adds an attribute predicate (several are and-ed).
  Pattern where(std::function<bool(const Attrs&)> pred) &&;
  /// Names the matched e-node.
  Pattern bind(std::string name) &&;

  bool is_var() const { return is_var_; }
  const std::string& name() const { return name_; }
  const OpDef* op_def() const { return op_; }
  const std::vector<Pattern>& children() const { return children_; }
  bool accepts(const OpDef* op, const Attrs& a) const;
  bool constrains_children() const { return !any_op_; }

 private:
  bool is_var_ = false;
  bool any_op_ = false;
  std::string name_;  // variable name, or binding name of an op pattern
  const OpDef* op_ = nullptr;
  std::function<bool(const OpDef*)> op_pred_;
  std::vector<Pattern> children_;
  std::vector<std::function<bool(const Attrs&)>> preds_;
};

/// One way a pattern matched.
struct Match {
  ClassId root = 0;  // class of the matched root e-node
  ENodeId root_node = 0;
  std::vector<std::pair<std::string, ClassId>> classes;  // variables
  std::vector<std::pair<std::string, ENodeId>> nodes;    // bound e-nodes

  /// Throws luminal::Error naming the variable when absent.
  ClassId cls(std::string_view var) const;
  ENodeId node(std::string_view name) const;
};

/// Every match of `p` (an op pattern) in `eg`, in e-node order. At most `limit` matches.
std::vector<Match> match(const EGraph& eg, const Pattern& p, size_t limit = SIZE_MAX);

}  // namespace luminal
