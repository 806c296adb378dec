#include "luminal/egraph/prune.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "luminal/core/error.hpp"

namespace luminal {

std::string PruneReport::to_string() const {
  return "prune: removed " + std::to_string(unsupported) + " unsupported, " +
         std::to_string(dominated) + " dominated, " + std::to_string(inplace) + " in-place, " +
         std::to_string(cascade) + " cascade, " + std::to_string(cycles) + " cyclic; " +
         std::to_string(live_nodes) + " e-nodes in " + std::to_string(live_classes) +
         " classes remain reachable";
}

namespace {

constexpr uint32_t kInf = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

enum class Why : uint8_t { Live, Before, Unsupported, Dominated, Inplace, Cascade, Cycle };

// Compressed adjacency lists: the items of list i are items[start[i] .. start[i + 1]).
struct Csr {
  std::vector<uint32_t> start;
  std::vector<uint32_t> items;
  const uint32_t* begin(size_t i) const { return items.data() + start[i]; }
  const uint32_t* end(size_t i) const { return items.data() + start[i + 1]; }
};

// Builds lists from (list, item) pairs; `count` lists.
Csr make_csr(size_t count, const std::vector<std::pair<uint32_t, uint32_t>>& pairs) {
  Csr g;
  g.start.assign(count + 1, 0);
  for (const auto& [list, item] : pairs)
    ++g.start[list + 1];
  for (size_t i = 0; i < count; ++i)
    g.start[i + 1] += g.start[i];
  g.items.resize(pairs.size());
  std::vector<uint32_t> at(g.start.begin(), g.start.end() - 1);
  for (const auto& [list, item] : pairs)
    g.items[at[list]++] = item;
  return g;
}

class Pruner {
 public:
  Pruner(EGraph& eg, const std::vector<ClassId>& roots, const PruneOptions& opts,
         PruneReport& report)
      : eg_(eg), opts_(opts), report_(report) {
    // Class ids are allocated one per e-node, so every class id (canonical or not) is below
    // num_nodes().
    const size_t n = eg_.num_nodes();
    for (ClassId r : roots) {
      if (r >= n) {
        throw Error("prune: root class %c" + std::to_string(r) +
                    " does not exist (the e-graph has " + std::to_string(n) + " class ids)");
      }
      roots_.push_back(eg_.find(r));
    }
    std::sort(roots_.begin(), roots_.end());
    roots_.erase(std::unique(roots_.begin(), roots_.end()), roots_.end());
    is_root_.assign(n, 0);
    for (ClassId r : roots_)
      is_root_[r] = 1;

    class_.resize(n);
    why_.assign(n, Why::Live);
    culprit_.assign(n, kNone);
    live_.assign(n, 0);
    std::vector<std::pair<uint32_t, uint32_t>> child_pairs, parent_pairs;
    for (ENodeId i = 0; i < n; ++i) {
      class_[i] = eg_.class_of(i);
      if (eg_.is_removed(i)) {
        why_[i] = Why::Before;
        continue;
      }
      ++live_[class_[i]];
      const std::vector<ClassId>& ch = eg_.node(i).children;
      const size_t first = child_pairs.size();
      for (ClassId c : ch) {
        c = eg_.find(c);
        bool seen = false;
        for (size_t k = first; k < child_pairs.size() && !seen; ++k)
          seen = child_pairs[k].second == c;
        if (seen) continue;
        child_pairs.emplace_back(i, c);
        parent_pairs.emplace_back(c, i);
      }
    }
    children_ = make_csr(n, child_pairs);
    parents_ = make_csr(n, parent_pairs);
  }

  void run() {
    for (ENodeId i = 0; i < why_.size(); ++i)
      if (alive(i) && opts_.executable && !opts_.executable(eg_.node(i).op))
        kill(i, Why::Unsupported);
    cascade();
    for (;;) {
      const size_t before = eg_.num_live_nodes();
      remove_unextractable();
      remove_illegal_inplace();
      if (eg_.num_live_nodes() == before) break;
    }
    check_roots();
    remove_dominated();
    cut_cycles();
    check_roots();
    std::vector<char> reach = reachable();
    for (ENodeId i = 0; i < why_.size(); ++i)
      if (alive(i) && reach[class_[i]]) ++report_.live_nodes;
    for (char r : reach)
      report_.live_classes += r ? 1 : 0;
  }

 private:
  bool alive(ENodeId i) const { return why_[i] == Why::Live; }

  void kill(ENodeId i, Why why, ClassId culprit = kNone) {
    if (!alive(i)) return;
    eg_.remove(i);
    why_[i] = why;
    culprit_[i] = culprit;
    switch (why) {
      case Why::Unsupported: ++report_.unsupported; break;
      case Why::Dominated: ++report_.dominated; break;
      case Why::Inplace: ++report_.inplace; break;
      case Why::Cascade: ++report_.cascade; break;
      case Why::Cycle: ++report_.cycles; break;
      default: break;
    }
    if (--live_[class_[i]] == 0) emptied_.push_back(class_[i]);
  }

  // Removes e-nodes that read a class with no e-node left, until none remain.
  void cascade() {
    while (!emptied_.empty()) {
      const ClassId c = emptied_.back();
      emptied_.pop_back();
      for (const uint32_t* p = parents_.begin(c); p != parents_.end(c); ++p)
        kill(*p, Why::Cascade, c);
    }
  }

  // Classes reachable from the roots through live e-nodes.
  std::vector<char> reachable() const {
    std::vector<char> seen(why_.size(), 0);
    std::vector<ClassId> stack;
    for (ClassId r : roots_) {
      if (!seen[r] && live_[r] > 0) {
        seen[r] = 1;
        stack.push_back(r);
      }
    }
    while (!stack.empty()) {
      const ClassId c = stack.back();
      stack.pop_back();
      for (ENodeId i : eg_.eclass(c).nodes) {
        if (!alive(i)) continue;
        for (const uint32_t* d = children_.begin(i); d != children_.end(i); ++d) {
          if (!seen[*d]) {
            seen[*d] = 1;
            stack.push_back(*d);
          }
        }
      }
    }
    return seen;
  }

  // Per class, the height of its shallowest extraction over live e-nodes (leaves 0), or kInf.
  // Breadth-first from the leaves: an e-node becomes ready when its last child class is reached,
  // which (classes being reached in order of depth) is its deepest child.
  std::vector<uint32_t> depths() const {
    const size_t n = why_.size();
    std::vector<uint32_t> depth(n, kInf);
    std::vector<uint32_t> waiting(n, 0);
    std::vector<ClassId> queue;
    for (ENodeId i = 0; i < n; ++i) {
      if (!alive(i)) continue;
      waiting[i] = static_cast<uint32_t>(children_.end(i) - children_.begin(i));
      if (waiting[i] == 0 && depth[class_[i]] == kInf) {
        depth[class_[i]] = 0;
        queue.push_back(class_[i]);
      }
    }
    for (size_t head = 0; head < queue.size(); ++head) {
      const ClassId c = queue[head];
      for (const uint32_t* p = parents_.begin(c); p != parents_.end(c); ++p) {
        if (!alive(*p) || --waiting[*p] != 0) continue;
        const ClassId pc = class_[*p];
        if (depth[pc] == kInf) {
          depth[pc] = depth[c] + 1;
          queue.push_back(pc);
        }
      }
    }
    return depth;
  }

  // E-nodes that read a class with no finite extraction can only be part of a cycle.
  void remove_unextractable() {
    const std::vector<uint32_t> depth = depths();
    for (ENodeId i = 0; i < why_.size(); ++i) {
      if (!alive(i)) continue;
      for (const uint32_t* d = children_.begin(i); d != children_.end(i); ++d) {
        if (depth[*d] == kInf) {
          kill(i, Why::Cycle, *d);
          break;
        }
      }
    }
    cascade();
  }

  // An in-place e-node overwrites its input: legal only when nothing else (outside its own
  // class, among classes still reachable) reads that input, the input is not itself an output,
  // and an Input it would overwrite is carried to this class (inplace_input_ok).
  void remove_illegal_inplace() {
    const std::vector<char> reach = reachable();
    const OpDef* input_op = hlir_op(OpKind::Input);
    for (ENodeId i = 0; i < why_.size(); ++i) {
      if (!alive(i)) continue;
      const ENode& node = eg_.node(i);
      const int k = node.op->inplace_input;
      if (k < 0) continue;
      if (static_cast<size_t>(k) >= node.children.size()) {
        throw Error("prune: " + std::string(node.op->name) + " declares in-place input " +
                    std::to_string(k) + " but has " + std::to_string(node.children.size()) +
                    " inputs (a bug in the backend op's definition)");
      }
      const ClassId self = class_[i];
      const ClassId x = eg_.find(node.children[k]);
      bool legal = !is_root_[x];
      for (const uint32_t* p = parents_.begin(x); legal && p != parents_.end(x); ++p)
        if (alive(*p) && class_[*p] != self && reach[class_[*p]]) legal = false;
      for (ENodeId m : eg_.eclass(x).nodes) {
        if (!legal) break;
        if (!alive(m) || eg_.node(m).op != input_op) continue;
        legal = opts_.inplace_input_ok && opts_.inplace_input_ok(m, self);
      }
      if (!legal) kill(i, Why::Inplace);
    }
    cascade();
  }

  void remove_dominated() {
    for (const auto& [w, l] : eg_.dominations()) {
      if (w == l || w >= why_.size() || l >= why_.size()) continue;
      if (!alive(w) || !alive(l) || class_[w] != class_[l]) continue;
      kill(l, Why::Dominated);
    }
    LUMINAL_ASSERT(emptied_.empty(), "dominance emptied a class");
  }

  // Strongly connected components of the class graph (class -> child classes of its live
  // e-nodes), iterative Tarjan. Returns the component of each class (kNone for classes without a
  // live e-node).
  std::vector<uint32_t> components() const {
    const size_t n = why_.size();
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    for (ENodeId i = 0; i < n; ++i)
      if (alive(i))
        for (const uint32_t* d = children_.begin(i); d != children_.end(i); ++d)
          edges.emplace_back(class_[i], *d);
    const Csr g = make_csr(n, edges);

    std::vector<uint32_t> index(n, kNone), low(n, 0), comp(n, kNone);
    std::vector<char> on_stack(n, 0);
    std::vector<ClassId> stack;
    struct Frame {
      ClassId c;
      uint32_t next;  // position in g.items
    };
    std::vector<Frame> frames;
    uint32_t counter = 0, num_comps = 0;
    auto open = [&](ClassId c) {
      index[c] = low[c] = counter++;
      stack.push_back(c);
      on_stack[c] = 1;
      frames.push_back({c, g.start[c]});
    };
    for (ClassId s = 0; s < n; ++s) {
      if (live_[s] == 0 || index[s] != kNone) continue;
      open(s);
      while (!frames.empty()) {
        const ClassId c = frames.back().c;
        if (frames.back().next < g.start[c + 1]) {
          const ClassId d = g.items[frames.back().next++];
          if (index[d] == kNone) {
            open(d);
          } else if (on_stack[d]) {
            low[c] = std::min(low[c], index[d]);
          }
          continue;
        }
        if (low[c] == index[c]) {
          ClassId m;
          do {
            m = stack.back();
            stack.pop_back();
            on_stack[m] = 0;
            comp[m] = num_comps;
          } while (m != c);
          ++num_comps;
        }
        frames.pop_back();
        if (!frames.empty()) {
          const ClassId parent = frames.back().c;
          low[parent] = std::min(low[parent], low[c]);
        }
      }
    }
    return comp;
  }

  // Inside a strongly connected set of classes, an e-node may only read classes shallower than
  // its own: depth strictly falls along every chosen edge there, so no choice closes a cycle. The
  // shallowest e-node of each class reads only shallower classes, so every class keeps one.
  void cut_cycles() {
    const std::vector<uint32_t> depth = depths();
    const std::vector<uint32_t> comp = components();
    for (ENodeId i = 0; i < why_.size(); ++i) {
      if (!alive(i)) continue;
      const ClassId c = class_[i];
      for (const uint32_t* d = children_.begin(i); d != children_.end(i); ++d) {
        if (comp[*d] == comp[c] && depth[*d] >= depth[c]) {
          kill(i, Why::Cycle, *d);
          break;
        }
      }
    }
    LUMINAL_ASSERT(emptied_.empty(), "cycle cutting emptied a class");
  }

  void check_roots() const {
    for (ClassId r : roots_)
      if (live_[r] == 0) throw Error(explain(r));
  }

  // Follows removals caused by an empty child class down from an empty root, to the class whose
  // own e-nodes could not be kept.
  std::string explain(ClassId root) const {
    ClassId c = root;
    std::vector<ClassId> seen;
    for (;;) {
      seen.push_back(c);
      ClassId next = kNone;
      bool only_followed = true;
      for (ENodeId i : eg_.eclass(c).nodes) {
        if (why_[i] == Why::Before) continue;
        const ClassId d = culprit_[i];
        if (d != kNone && live_[d] == 0 && std::find(seen.begin(), seen.end(), d) == seen.end()) {
          if (next == kNone) next = d;
        } else {
          only_followed = false;
        }
      }
      if (!only_followed || next == kNone) break;
      c = next;
    }
    std::string msg = "cannot execute " + describe(c) +
                      " on this backend: no executable alternative for an output";
    bool cyclic = false, inplace = false;
    for (ENodeId i : eg_.eclass(c).nodes) {
      cyclic |= why_[i] == Why::Cycle;
      inplace |= why_[i] == Why::Inplace;
    }
    if (cyclic) msg += " (every alternative left depends on its own result)";
    if (inplace) msg += " (its in-place forms are not legal here)";
    if (c != root)
      msg += "; it feeds output class %c" + std::to_string(root) + " " + describe(root);
    return msg;
  }

  // "Exp2 f32[4]" or "Exp2 / cpu.Exp2 f32[4]".
  std::string describe(ClassId c) const {
    std::vector<std::string_view> ops;
    for (ENodeId i : eg_.eclass(c).nodes) {
      std::string_view name = eg_.node(i).op->name;
      if (std::find(ops.begin(), ops.end(), name) == ops.end()) ops.push_back(name);
    }
    std::string s;
    for (size_t k = 0; k < ops.size(); ++k) {
      if (k) s += " / ";
      s += ops[k];
    }
    s += " ";
    s += name(eg_.dtype(c));
    s += shape_to_string(eg_.shape(c));
    return s;
  }

  EGraph& eg_;
  const PruneOptions& opts_;
  PruneReport& report_;
  std::vector<ClassId> roots_;
  std::vector<char> is_root_;
  std::vector<ClassId> class_;    // per e-node, canonical
  std::vector<Why> why_;          // per e-node
  std::vector<ClassId> culprit_;  // per e-node removed by cascade: the empty child class
  std::vector<uint32_t> live_;    // per class: live e-nodes
  std::vector<ClassId> emptied_;
  Csr children_;  // per e-node: distinct canonical child classes
  Csr parents_;   // per class: e-nodes (live at the start) that read it
};

}  // namespace

PruneReport prune(EGraph& eg, const std::vector<ClassId>& roots, const PruneOptions& opts) {
  eg.rebuild();
  PruneReport report;
  Pruner pruner(eg, roots, opts, report);
  pruner.run();
  return report;
}

}  // namespace luminal
