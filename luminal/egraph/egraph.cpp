#include "luminal/egraph/egraph.hpp"

#include <algorithm>
#include <cstdint>

#include "luminal/core/error.hpp"
#include "luminal/core/hash.hpp"

namespace luminal {

namespace {

inline size_t mix(uint64_t x) { return static_cast<size_t>(hash_mix(x)); }

std::string class_name(ClassId c) { return "%c" + std::to_string(c); }

void sort_unique(std::vector<uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

size_t EGraph::NodeHash::operator()(const ENode& n) const {
  size_t h = mix(reinterpret_cast<uintptr_t>(n.op));
  h = mix(h ^ (static_cast<uint64_t>(n.attr) * 0x9e3779b97f4a7c15ULL));
  for (ClassId c : n.children)
    h = mix(h + 0x632be59bd9b4e019ULL + c);
  return h;
}

EGraph::EGraph() = default;
EGraph::~EGraph() = default;

// ---- attributes ----

AttrId EGraph::intern(const Attrs& a) {
  auto it = attr_ids_.find(a);
  if (it != attr_ids_.end()) return it->second;
  const auto id = static_cast<AttrId>(attrs_.size());
  attrs_.push_back(a);
  attr_ids_.emplace(attrs_.back(), id);
  return id;
}

const Attrs& EGraph::attrs(AttrId id) const {
  LUMINAL_ASSERT(id < attrs_.size(), "unknown attribute id " + std::to_string(id));
  return attrs_[id];
}

// ---- adding and finding ----

ClassId EGraph::add(const OpDef* op, const Attrs& a, std::vector<ClassId> children) {
  return add(ENode{op, intern(a), std::move(children)});
}

ENode EGraph::canonical(ENode n) const {
  for (ClassId& c : n.children)
    c = find(c);
  return n;
}

ClassId EGraph::add(ENode n) {
  if (n.op == nullptr) throw Error("EGraph::add: the e-node has no op");
  if (n.attr >= attrs_.size()) {
    throw Error("EGraph::add: " + std::string(n.op->name) + " uses attribute id " +
                std::to_string(n.attr) + ", but only " + std::to_string(attrs_.size()) +
                " are interned (use intern())");
  }
  for (ClassId c : n.children) {
    if (c >= parent_.size()) {
      throw Error("EGraph::add: " + std::string(n.op->name) + " reads class " + class_name(c) +
                  ", which does not exist (the e-graph has " + std::to_string(parent_.size()) +
                  " class ids)");
    }
  }
  n = canonical(std::move(n));
  const auto id = static_cast<ENodeId>(nodes_.size());
  auto [it, inserted] = memo_.try_emplace(n, id);
  if (!inserted) return find(node_class_[it->second]);

  const auto cid = static_cast<ClassId>(parent_.size());
  parent_.push_back(cid);
  node_class_.push_back(cid);
  removed_.push_back(false);
  nodes_.push_back(std::move(n));
  const ENode& stored = nodes_.back();

  EClass& ec = classes_[cid];
  ec.nodes.push_back(id);
  const Attrs& a = attrs_[stored.attr];
  ec.dtype = a.dtype;
  ec.shape = a.shape;

  for (size_t i = 0; i < stored.children.size(); ++i) {
    const ClassId c = stored.children[i];
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j)
      seen = stored.children[j] == c;
    if (!seen) classes_.at(c).parents.push_back(id);
  }
  by_op_[stored.op].push_back(id);
  ++version_;
  return cid;
}

std::optional<ClassId> EGraph::lookup(ENode n) const {
  for (ClassId c : n.children)
    if (c >= parent_.size()) return std::nullopt;
  n = canonical(std::move(n));
  auto it = memo_.find(n);
  if (it == memo_.end()) return std::nullopt;
  return find(node_class_[it->second]);
}

ClassId EGraph::find(ClassId c) const {
  LUMINAL_ASSERT(c < parent_.size(), "unknown e-class " + class_name(c));
  ClassId root = c;
  while (parent_[root] != root)
    root = parent_[root];
  while (parent_[c] != root) {
    const ClassId next = parent_[c];
    parent_[c] = root;
    c = next;
  }
  return root;
}

// ---- merging and rebuilding ----

std::string EGraph::describe_class(ClassId c) const {
  const EClass& ec = eclass(c);
  std::vector<std::string_view> ops;
  for (ENodeId n : ec.nodes) {
    std::string_view name = nodes_[n].op->name;
    if (std::find(ops.begin(), ops.end(), name) == ops.end()) ops.push_back(name);
  }
  std::string s = class_name(find(c)) + " {";
  for (size_t i = 0; i < ops.size() && i < 8; ++i) {
    s += i ? ", " : "";
    s += ops[i];
  }
  if (ops.size() > 8) s += ", ... " + std::to_string(ops.size() - 8) + " more";
  s += "} ";
  s += name(ec.dtype);
  s += shape_to_string(ec.shape);
  return s;
}

void EGraph::check_analysis(ClassId a, ClassId b) const {
  const EClass& ea = eclass(a);
  const EClass& eb = eclass(b);
  const bool same_dtype = ea.dtype == eb.dtype;
  const bool same_shape = ea.shape == eb.shape;
  if (same_dtype && same_shape) return;
  std::string what = !same_dtype && !same_shape ? "dtypes and shapes differ"
                     : !same_dtype              ? "dtypes differ"
                                                : "shapes differ";
  throw Error("e-graph: cannot merge " + describe_class(a) + " with " + describe_class(b) + ": " +
              what +
              " (every e-class has one dtype and one shape; the rewrite rule that merged them is "
              "wrong)");
}

bool EGraph::merge(ClassId a, ClassId b) {
  a = find(a);
  b = find(b);
  if (a == b) return false;
  check_analysis(a, b);
  EClass* ea = &classes_.at(a);
  EClass* eb = &classes_.at(b);
  // Union by size (e-nodes + parents), ties to the smaller id: deterministic, and the lists that
  // move are the short ones.
  const size_t sa = ea->nodes.size() + ea->parents.size();
  const size_t sb = eb->nodes.size() + eb->parents.size();
  const bool a_root = sa > sb || (sa == sb && a < b);
  const ClassId root = a_root ? a : b;
  const ClassId loser = a_root ? b : a;
  EClass& r = a_root ? *ea : *eb;
  EClass& l = a_root ? *eb : *ea;
  parent_[loser] = root;
  pending_.insert(pending_.end(), l.parents.begin(), l.parents.end());
  r.nodes.insert(r.nodes.end(), l.nodes.begin(), l.nodes.end());
  r.parents.insert(r.parents.end(), l.parents.begin(), l.parents.end());
  classes_.erase(loser);
  dirty_.push_back(root);
  ++version_;
  return true;
}

void EGraph::rebuild() {
  bool new_dups = false;
  while (!pending_.empty()) {
    std::vector<ENodeId> todo;
    todo.swap(pending_);
    sort_unique(todo);
    for (ENodeId p : todo) {
      ENode& cur = nodes_[p];
      ENode canon = canonical(cur);
      if (canon == cur) continue;
      auto it = memo_.find(cur);
      const bool owner = it != memo_.end() && it->second == p;
      if (owner) memo_.erase(it);
      cur = std::move(canon);
      if (!owner) continue;  // a duplicate already: only its children needed updating
      auto [slot, inserted] = memo_.try_emplace(cur, p);
      if (inserted) continue;
      // Congruent with an existing e-node: same class, and one of the two is a duplicate.
      const ENodeId q = slot->second;
      const ENodeId keep = std::min(p, q);
      const ENodeId dup = std::max(p, q);
      slot->second = keep;
      remove(dup);
      dup_of_[dup] = keep;
      new_dups = true;
      merge(node_class_[p], node_class_[q]);
    }
  }
  if (!dirty_.empty()) {
    sort_unique(dirty_);
    for (ClassId c : dirty_) {
      auto it = classes_.find(c);
      if (it == classes_.end()) continue;  // merged into another since
      std::sort(it->second.nodes.begin(), it->second.nodes.end());
      sort_unique(it->second.parents);
    }
    dirty_.clear();
  }
  if (new_dups) {
    for (auto& [w, l] : dominations_) {
      w = resolve_dup(w);
      l = resolve_dup(l);
    }
  }
}

// ---- queries ----

std::vector<ClassId> EGraph::class_ids() const {
  std::vector<ClassId> ids;
  ids.reserve(classes_.size());
  for (const auto& [id, ec] : classes_)
    ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<ENodeId> EGraph::nodes_of(ClassId c) const {
  std::vector<ENodeId> out;
  for (ENodeId n : eclass(c).nodes)
    if (!removed_[n]) out.push_back(n);
  if (!dirty_.empty()) std::sort(out.begin(), out.end());  // merged lists are sorted on rebuild
  return out;
}

const std::vector<ENodeId>& EGraph::nodes_with_op(const OpDef* op) const {
  static const std::vector<ENodeId> kNone;
  auto it = by_op_.find(op);
  return it == by_op_.end() ? kNone : it->second;
}

// ---- removal and dominance ----

void EGraph::remove(ENodeId n) {
  LUMINAL_ASSERT(n < nodes_.size(), "remove: unknown e-node " + std::to_string(n));
  if (removed_[n]) return;
  removed_[n] = true;
  ++num_removed_;
}

ENodeId EGraph::resolve_dup(ENodeId n) const {
  for (auto it = dup_of_.find(n); it != dup_of_.end(); it = dup_of_.find(n))
    n = it->second;
  return n;
}

void EGraph::dominate(ENodeId winner, ENodeId loser) {
  if (winner >= nodes_.size() || loser >= nodes_.size()) {
    throw Error("EGraph::dominate: unknown e-node " +
                std::to_string(winner >= nodes_.size() ? winner : loser) + " (the e-graph has " +
                std::to_string(nodes_.size()) + ")");
  }
  dominations_.emplace_back(resolve_dup(winner), resolve_dup(loser));
}

// ---- printing ----

std::string EGraph::to_text() const {
  std::string s;
  for (ClassId c : class_ids()) {
    const EClass& ec = classes_.at(c);
    std::vector<ENodeId> ns = ec.nodes;
    std::sort(ns.begin(), ns.end());
    s += class_name(c) + " = { ";
    for (size_t i = 0; i < ns.size(); ++i) {
      const ENode& n = nodes_[ns[i]];
      if (i) s += ", ";
      s += n.op->name;
      s += "(";
      for (size_t k = 0; k < n.children.size(); ++k) {
        if (k) s += ", ";
        s += class_name(find(n.children[k]));
      }
      s += ") ";
      s += attrs_[n.attr].to_string();
      if (removed_[ns[i]]) s += " [removed]";
    }
    s += " }\n";
  }
  return s;
}

}  // namespace luminal
