#pragma once
// EGraph: e-classes of equivalent values, each holding e-nodes {op, attrs, children}.
// Example: examples/snippets/egraph/egraph.cpp (add, merge, rebuild).
//
// Hash-consing: adding an e-node that exists returns its class. Union-find over class ids with
// deferred rebuild (as egg): merges are cheap, rebuild() re-canonicalises parents and merges
// congruent e-nodes until none remain. Class ids returned by add/merge may stop being canonical
// after later merges; find() gives the canonical one.
//
// Analysis: every class has one dtype and one shape (those of its e-nodes). Merging classes whose
// dtypes or shapes differ is a bug in a rule and throws luminal::Error naming both classes' ops.
//
// E-nodes are never deleted; pruning marks them removed (is_removed) and every query that lists
// nodes of a class skips removed ones. rebuild() also marks removed an e-node that became
// identical (same op, attributes and canonical children) to an older e-node of its class.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "luminal/egraph/attrs.hpp"
#include "luminal/egraph/op_def.hpp"

namespace luminal {

using ClassId = uint32_t;
using ENodeId = uint32_t;
using AttrId = uint32_t;

struct ENode {
  const OpDef* op = nullptr;
  AttrId attr = 0;
  std::vector<ClassId> children;
  bool operator==(const ENode&) const = default;
};

struct EClass {
  std::vector<ENodeId> nodes;    // e-nodes in this class (including removed ones)
  std::vector<ENodeId> parents;  // e-nodes that have this class as a child (may be stale)
  DType dtype = DType::F32;
  Shape shape;
};

class EGraph {
 public:
  EGraph();
  ~EGraph();
  EGraph(const EGraph&) = delete;
  EGraph& operator=(const EGraph&) = delete;

  /// Interns an attribute record.
  AttrId intern(const Attrs& a);
  const Attrs& attrs(AttrId id) const;
  const Attrs& attrs_of(ENodeId n) const { return attrs(node(n).attr); }

  /// Adds an e-node (or finds the existing one); returns its class.
  ClassId add(const OpDef* op, const Attrs& a, std::vector<ClassId> children);
  ClassId add(ENode n);
  /// The class of an existing e-node, if any (children are canonicalised first).
  std::optional<ClassId> lookup(ENode n) const;

  /// Canonical id of a class.
  ClassId find(ClassId c) const;
  /// Records that a and b are equal. Returns true when they were different classes.
  /// Throws luminal::Error when their dtypes or shapes differ.
  bool merge(ClassId a, ClassId b);
  /// Restores congruence and hash-consing after merges. Cheap when nothing is pending.
  void rebuild();
  bool needs_rebuild() const { return !pending_.empty(); }

  const ENode& node(ENodeId n) const { return nodes_[n]; }
  /// The class an e-node belongs to (canonical).
  ClassId class_of(ENodeId n) const { return find(node_class_[n]); }
  const EClass& eclass(ClassId c) const { return classes_.at(find(c)); }
  /// Canonical class ids, ascending.
  std::vector<ClassId> class_ids() const;
  /// E-nodes of a class that are not removed, in insertion order.
  std::vector<ENodeId> nodes_of(ClassId c) const;
  /// Every e-node with this op (including removed ones), in insertion order.
  const std::vector<ENodeId>& nodes_with_op(const OpDef* op) const;

  DType dtype(ClassId c) const { return eclass(c).dtype; }
  const Shape& shape(ClassId c) const { return eclass(c).shape; }

  size_t num_nodes() const { return nodes_.size(); }
  size_t num_classes() const { return classes_.size(); }
  /// E-nodes not removed.
  size_t num_live_nodes() const { return nodes_.size() - num_removed_; }

  void remove(ENodeId n);
  bool is_removed(ENodeId n) const { return removed_[n]; }
  /// Declares that, wherever `winner` and `loser` end up in the same class, `loser` is never
  /// worth choosing: pruning removes it (if the class keeps another option).
  void dominate(ENodeId winner, ENodeId loser);
  const std::vector<std::pair<ENodeId, ENodeId>>& dominations() const { return dominations_; }

  /// Counter bumped by every new e-node and every effective merge (to detect saturation).
  uint64_t version() const { return version_; }

  /// "%c3 = { Exp2(%c1) f32[4], cpu.Fused(%c1) ... }" per class.
  std::string to_text() const;

 private:
  struct NodeHash {
    size_t operator()(const ENode& n) const;
  };
  struct AttrHash {
    size_t operator()(const Attrs& a) const { return a.hash(); }
  };
  ENode canonical(ENode n) const;
  void check_analysis(ClassId a, ClassId b) const;
  ENodeId resolve_dup(ENodeId n) const;
  std::string describe_class(ClassId c) const;

  // Deques: references returned by node() and attrs() stay valid while rules add e-nodes.
  std::deque<ENode> nodes_;
  std::vector<ClassId> node_class_;
  std::vector<bool> removed_;
  size_t num_removed_ = 0;
  mutable std::vector<ClassId> parent_;  // union-find (path compression in find)
  std::unordered_map<ClassId, EClass> classes_;
  std::unordered_map<ENode, ENodeId, NodeHash> memo_;
  std::deque<Attrs> attrs_;
  std::unordered_map<Attrs, AttrId, AttrHash> attr_ids_;
  std::unordered_map<const OpDef*, std::vector<ENodeId>> by_op_;
  std::vector<ENodeId> pending_;  // e-nodes whose children may no longer be canonical
  std::vector<ClassId> dirty_;    // classes that absorbed another since the last rebuild
  // An e-node that became identical to another one of its class during rebuild is marked removed
  // and forwarded to the one kept (dominations are rewritten through this).
  std::unordered_map<ENodeId, ENodeId> dup_of_;
  std::vector<std::pair<ENodeId, ENodeId>> dominations_;
  uint64_t version_ = 0;
};

}  // namespace luminal
