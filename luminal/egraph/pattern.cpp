#include "luminal/egraph/pattern.hpp"

#include "luminal/core/error.hpp"

namespace luminal {

// ---- building patterns ----

Pattern Pattern::var(std::string name) {
  if (name.empty()) throw Error("Pattern::var: a variable needs a name");
  Pattern p;
  p.is_var_ = true;
  p.name_ = std::move(name);
  return p;
}

Pattern Pattern::op(const OpDef* op, std::vector<Pattern> children) {
  if (op == nullptr) throw Error("Pattern::op: no op given");
  Pattern p;
  p.op_ = op;
  p.children_ = std::move(children);
  return p;
}

Pattern Pattern::op(OpKind k, std::vector<Pattern> children) {
  return op(hlir_op(k), std::move(children));
}

Pattern Pattern::any_op(std::function<bool(const OpDef*)> pred) {
  Pattern p;
  p.any_op_ = true;
  p.op_pred_ = std::move(pred);
  return p;
}

Pattern Pattern::where(std::function<bool(const Attrs&)> pred) && {
  if (is_var_) throw Error("Pattern::where: variable '" + name_ + "' cannot have a predicate");
  preds_.push_back(std::move(pred));
  return std::move(*this);
}

Pattern Pattern::bind(std::string name) && {
  if (is_var_) throw Error("Pattern::bind: variable '" + name_ + "' is already named");
  name_ = std::move(name);
  return std::move(*this);
}

bool Pattern::accepts(const OpDef* op, const Attrs& a) const {
  if (is_var_) return true;
  if (any_op_) {
    if (op_pred_ && !op_pred_(op)) return false;
  } else if (op != op_) {
    return false;
  }
  for (const auto& pred : preds_)
    if (!pred(a)) return false;
  return true;
}

// ---- matches ----

namespace {

// The names bound in a match, comma-separated ("none" when there are none), for errors.
template <class T>
std::string names_of(const std::vector<std::pair<std::string, T>>& bound) {
  std::string names;
  for (const auto& [name, value] : bound)
    names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

}  // namespace

ClassId Match::cls(std::string_view var) const {
  for (const auto& [name, c] : classes)
    if (name == var) return c;
  throw Error("Match::cls: pattern variable '" + std::string(var) +
              "' is not bound in this match (variables: " + names_of(classes) + ")");
}

ENodeId Match::node(std::string_view name) const {
  for (const auto& [n, id] : nodes)
    if (n == name) return id;
  throw Error("Match::node: no e-node is bound to '" + std::string(name) +
              "' in this match (bound: " + names_of(nodes) + "; name one with Pattern::bind)");
}

// ---- the matcher ----

namespace {

// Depth-first search over a stack of goals (pattern, class). Each solution of the whole stack is a
// match; backtracking restores the stack and the bindings, so no state is copied per branch.
class Matcher {
 public:
  Matcher(const EGraph& eg, size_t limit, std::vector<Match>& out)
      : eg_(eg), limit_(limit), out_(out) {}

  void match_root(const Pattern& p, ENodeId n) {
    root_node_ = n;
    try_node(p, n);
  }
  bool full() const { return out_.size() >= limit_; }

 private:
  void solve() {
    if (full()) return;
    if (goals_.empty()) {
      emit();
      return;
    }
    const auto [p, c] = goals_.back();
    goals_.pop_back();
    if (p->is_var()) {
      bool bound = false, same = true;
      for (const auto& [name, bc] : vars_) {
        if (*name == p->name()) {
          bound = true;
          same = bc == c;
          break;
        }
      }
      if (!bound) {
        vars_.emplace_back(&p->name(), c);
        solve();
        vars_.pop_back();
      } else if (same) {
        solve();
      }
    } else {
      for (ENodeId m : eg_.eclass(c).nodes) {
        if (full()) break;
        if (eg_.is_removed(m)) continue;
        if (!p->accepts(eg_.node(m).op, eg_.attrs_of(m))) continue;
        try_node(*p, m);
      }
    }
    goals_.emplace_back(p, c);
  }

  // The op and attributes of `n` are already accepted by `p`.
  void try_node(const Pattern& p, ENodeId n) {
    const ENode& node = eg_.node(n);
    const size_t pushed = p.constrains_children() ? p.children().size() : 0;
    if (pushed > 0 && node.children.size() != pushed) return;
    for (size_t i = pushed; i-- > 0;)
      goals_.emplace_back(&p.children()[i], eg_.find(node.children[i]));
    const bool named = !p.name().empty();
    if (named) nodes_.emplace_back(&p.name(), n);
    solve();
    if (named) nodes_.pop_back();
    goals_.resize(goals_.size() - pushed);
  }

  void emit() {
    Match m;
    m.root_node = root_node_;
    m.root = eg_.class_of(root_node_);
    m.classes.reserve(vars_.size());
    for (const auto& [name, c] : vars_)
      m.classes.emplace_back(*name, c);
    m.nodes.reserve(nodes_.size());
    for (const auto& [name, n] : nodes_)
      m.nodes.emplace_back(*name, n);
    out_.push_back(std::move(m));
  }

  const EGraph& eg_;
  size_t limit_;
  std::vector<Match>& out_;
  ENodeId root_node_ = 0;
  std::vector<std::pair<const Pattern*, ClassId>> goals_;
  std::vector<std::pair<const std::string*, ClassId>> vars_;
  std::vector<std::pair<const std::string*, ENodeId>> nodes_;
};

}  // namespace

std::vector<Match> match(const EGraph& eg, const Pattern& p, size_t limit) {
  if (p.is_var()) {
    throw Error("match: the root of a pattern must be an op, not the variable '" + p.name() + "'");
  }
  std::vector<Match> out;
  if (limit == 0) return out;
  Matcher m(eg, limit, out);
  auto try_root = [&](ENodeId n) {
    if (eg.is_removed(n)) return;
    if (!p.accepts(eg.node(n).op, eg.attrs_of(n))) return;
    m.match_root(p, n);
  };
  if (p.constrains_children()) {
    for (ENodeId n : eg.nodes_with_op(p.op_def())) {
      if (m.full()) break;
      try_root(n);
    }
  } else {
    for (size_t n = 0; n < eg.num_nodes() && !m.full(); ++n)
      try_root(static_cast<ENodeId>(n));
  }
  return out;
}

}  // namespace luminal
