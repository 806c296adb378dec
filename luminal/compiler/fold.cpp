#include "luminal/compiler/fold.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "luminal/core/error.hpp"
#include "luminal/core/expr_static.hpp"
#include "luminal/core/hash.hpp"
#include "luminal/program/llir_serial.hpp"

namespace luminal {

namespace {

bool is_static(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](const Expr& e) { return is_static(e); });
}

bool is_static(const Attrs& a) {
  if (!is_static(a.shape)) return false;
  for (const View& v : a.views)
    if (!is_static(v.dims) || !is_static(v.strides) || !is_static(v.base)) return false;
  return is_static(a.iota_expr) && is_static(a.iota_len);
}

uint64_t static_bytes(DType dt, const Shape& shape) {
  return static_cast<uint64_t>(storage_bytes(dt, shape).as_const());
}

std::string hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The e-node of class c a fold program computes it with: the live weight-only option of the
// least depth (children are strictly shallower, so the programs never cycle), never a Fold.
std::optional<ENodeId> fold_option(const EGraph& eg, const std::vector<ENodeId>& options,
                                   const std::vector<int>& level) {
  std::optional<ENodeId> best;
  for (ENodeId n : options) {
    if (n >= level.size() || level[n] < 0 || eg.node(n).op == fold_op()) continue;
    if (!best || level[n] < level[*best]) best = n;
  }
  return best;
}

}  // namespace

FoldSpace add_fold_leaves(EGraph& eg, const Graph& g, const FoldOptions& opts) {
  FoldSpace fs;
  if (!opts.on) return fs;
  std::set<std::string, std::less<>> carried;
  for (auto [o, i] : g.carried())
    carried.insert(g.node(i).label);

  // Depths of weight-only e-nodes and classes, to a fixpoint (depths only decrease).
  const size_t n_nodes = eg.num_nodes();
  fs.node_level.assign(n_nodes, -1);
  std::unordered_map<ClassId, int> class_level;
  auto level_of = [&](ClassId c) {
    auto it = class_level.find(eg.find(c));
    return it == class_level.end() ? -1 : it->second;
  };
  std::vector<bool> eligible(n_nodes, false);
  for (ENodeId n = 0; n < n_nodes; ++n) {
    if (eg.is_removed(n)) continue;
    const ENode& e = eg.node(n);
    const Attrs& a = eg.attrs(e.attr);
    if (is_op(e.op, OpKind::Input))
      eligible[n] = a.persist && !carried.count(a.label) && is_static(a.shape);
    else if (!is_op(e.op, OpKind::Output) && e.op != fold_op())
      eligible[n] = (e.op->is_hlir || !a.payload) && is_static(a);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (ENodeId n = 0; n < n_nodes; ++n) {
      if (!eligible[n]) continue;
      int lvl = 0;
      bool ok = true;
      for (ClassId ch : eg.node(n).children) {
        const int l = level_of(ch);
        if (l < 0) {
          ok = false;
          break;
        }
        lvl = std::max(lvl, l + 1);
      }
      if (!ok || (fs.node_level[n] >= 0 && fs.node_level[n] <= lvl)) continue;
      fs.node_level[n] = lvl;
      const ClassId c = eg.class_of(n);
      auto [it, fresh] = class_level.emplace(c, lvl);
      if (!fresh) it->second = std::min(it->second, lvl);
      changed = true;
    }
  }

  // The frontier: weight-only classes that an e-node of another class reads.
  std::set<ClassId> frontier;
  for (ENodeId n = 0; n < n_nodes; ++n) {
    if (eg.is_removed(n) || level_of(eg.class_of(n)) >= 0) continue;
    for (ClassId ch : eg.node(n).children)
      if (level_of(ch) >= 0) frontier.insert(eg.find(ch));
  }

  // Bytes of the weight inputs under a class, along the fold program's options; `reads` tells
  // whether it reads an input at all.
  auto input_bytes = [&](ClassId root, bool* reads = nullptr) {
    uint64_t total = 0;
    std::set<ClassId> seen;
    std::vector<ClassId> stack{eg.find(root)};
    while (!stack.empty()) {
      const ClassId c = stack.back();
      stack.pop_back();
      if (!seen.insert(c).second) continue;
      const std::optional<ENodeId> n = fold_option(eg, eg.nodes_of(c), fs.node_level);
      if (!n) continue;
      if (is_op(eg.node(*n).op, OpKind::Input)) {
        total += static_bytes(eg.dtype(c), eg.shape(c));
        if (reads) *reads = true;
        continue;
      }
      for (ClassId ch : eg.node(*n).children)
        stack.push_back(eg.find(ch));
    }
    return total;
  };

  for (ClassId c : frontier) {
    const std::vector<ENodeId> nodes = eg.nodes_of(c);
    if (std::any_of(nodes.begin(), nodes.end(),
                    [&](ENodeId n) { return is_op(eg.node(n).op, OpKind::Input); }))
      continue;  // an input itself: nothing to fold
    const uint64_t bytes = static_bytes(eg.dtype(c), eg.shape(c));
    bool reads = false;
    const uint64_t released = input_bytes(c, &reads);
    // A constant (no input below it) of any size, unless a short cone computes it (an Iota, a
    // Constant, a cast of one: cheaper to compute where it is read). Under min_bytes, what it
    // adds to memory is not held against fold_limit (compiler/search.cpp does the same).
    const std::optional<ENodeId> how = fold_option(eg, nodes, fs.node_level);
    const bool short_cone =
        !how || level_of(c) == 0 ||
        (level_of(c) == 1 && is_unary(eg.node(*how).op->kind) && eg.node(*how).op->is_hlir) ||
        std::any_of(nodes.begin(), nodes.end(), [&](ENodeId n) {
          return is_op(eg.node(n).op, OpKind::Iota) || is_op(eg.node(n).op, OpKind::Constant);
        });
    // (a scalar is never worth a buffer: a region computes it in its registers)
    const bool constant =
        !reads && !short_cone && bytes > static_cast<uint64_t>(size_bytes(eg.dtype(c)));
    if (bytes < opts.min_bytes && !constant) continue;
    const bool small_constant = constant && bytes < opts.min_bytes;
    if (bytes > released && bytes - released > opts.limit && !small_constant) continue;
    Attrs a;
    a.dtype = eg.dtype(c);
    a.shape = eg.shape(c);
    a.label = std::string(kFoldPrefix) + "class" + std::to_string(c);
    a.persist = true;
    const ClassId leaf = eg.add(fold_op(), a, {});
    eg.merge(leaf, c);
    fs.leaves.emplace(a.label, c);
    if (constant) fs.constants.insert(c);
  }
  eg.rebuild();
  fs.node_level.resize(eg.num_nodes(), -1);
  return fs;
}

FoldProgram FoldProgram::from_llir(LlirGraph llir) {
  FoldProgram p;
  int output = -1;
  for (size_t i = 0; i < llir.nodes.size(); ++i) {
    LlirNode& n = llir.nodes[i];
    if (is_op(n.op, OpKind::Output)) {
      if (output >= 0) throw Error("fold program: more than one output");
      output = static_cast<int>(i);
    } else if (is_op(n.op, OpKind::Input)) {
      if (n.attrs.label.empty() || is_fold_label(n.attrs.label))
        throw Error("fold program: reads an input that is not a weight ('" + n.attrs.label + "')");
      p.inputs.push_back(n.attrs.label);
    }
  }
  if (output < 0) throw Error("fold program: no output");
  LlirNode& out = llir.nodes[static_cast<size_t>(output)];
  if (!is_static(out.attrs.shape)) throw Error("fold program: the output's shape is not static");
  out.attrs.label = std::string(kFoldPrefix);
  p.label = std::string(kFoldPrefix) + hex(hash_string(write_llir(llir)));
  out.attrs.label = p.label;
  p.dtype = out.attrs.dtype;
  p.shape = out.attrs.shape;
  p.bytes = static_bytes(p.dtype, p.shape);
  p.llir = std::move(llir);
  return p;
}

const FoldProgram& FoldResolver::program(std::string_view placeholder) {
  if (auto it = memo_.find(placeholder); it != memo_.end()) return *it->second;
  auto leaf = folds_.leaves.find(placeholder);
  if (leaf == folds_.leaves.end())
    throw Error("fold: no leaf '" + std::string(placeholder) + "' in this search space");
  const EGraph& eg = space_.egraph();
  LlirGraph llir;
  std::unordered_map<ClassId, int> index;
  // Children first (depth-first, iterative): the cone of the leaf's class over weight inputs.
  std::vector<std::pair<ClassId, size_t>> stack{{eg.find(leaf->second), 0}};
  std::unordered_map<ClassId, ENodeId> pick;
  auto choose = [&](ClassId c) {
    auto it = pick.find(c);
    if (it != pick.end()) return it->second;
    const std::optional<ENodeId> n = fold_option(eg, space_.options(c), folds_.node_level);
    if (!n)
      throw Error("fold " + std::string(placeholder) + ": class %" + std::to_string(c) +
                  " has no weight-only option left after pruning");
    return pick[c] = *n;
  };
  while (!stack.empty()) {
    auto& [c, next] = stack.back();
    const ENode& e = eg.node(choose(c));
    if (next < e.children.size()) {
      const ClassId ch = eg.find(e.children[next++]);
      if (!index.count(ch)) stack.emplace_back(ch, 0);
      continue;
    }
    if (!index.count(c)) {
      LlirNode ln;
      ln.op = e.op;
      ln.attrs = eg.attrs(e.attr);
      for (ClassId ch : e.children) {
        ln.inputs.push_back(index.at(eg.find(ch)));
        ln.input_dtypes.push_back(eg.dtype(ch));
      }
      index[c] = static_cast<int>(llir.nodes.size());
      llir.nodes.push_back(std::move(ln));
    }
    stack.pop_back();
  }
  const ClassId root = eg.find(leaf->second);
  LlirNode out;
  out.op = hlir_op(OpKind::Output);
  out.attrs.dtype = eg.dtype(root);
  out.attrs.shape = eg.shape(root);
  out.attrs.views = {View::contiguous(out.attrs.shape)};
  out.attrs.persist = true;
  out.inputs = {index.at(root)};
  out.input_dtypes = {eg.dtype(root)};
  llir.nodes.push_back(std::move(out));
  auto p = std::make_unique<FoldProgram>(FoldProgram::from_llir(std::move(llir)));
  return *memo_.emplace(std::string(placeholder), std::move(p)).first->second;
}

std::vector<std::string> FoldResolver::placeholders(const LlirGraph& step) {
  std::vector<std::string> out;
  for (const LlirNode& n : step.nodes)
    if (is_op(n.op, OpKind::Input) && is_fold_label(n.attrs.label) &&
        std::find(out.begin(), out.end(), n.attrs.label) == out.end())
      out.push_back(n.attrs.label);
  return out;
}

LlirGraph FoldResolver::relabel(LlirGraph step, std::vector<FoldProgram>* used) {
  for (LlirNode& n : step.nodes) {
    if (!is_op(n.op, OpKind::Input) || !is_fold_label(n.attrs.label)) continue;
    const FoldProgram& p = program(n.attrs.label);
    n.attrs.label = p.label;
    if (std::none_of(used->begin(), used->end(),
                     [&](const FoldProgram& u) { return u.label == p.label; }))
      used->push_back(p);
  }
  return step;
}

void run_fold(Backend& backend, const FoldProgram& fold, Buffer out, const FoldRunContext& ctx) {
  std::unique_ptr<Plan> plan = backend.load(fold.llir, PlanSpec{});
  Bindings b;
  for (const std::string& l : plan->io().inputs)
    b.inputs.push_back(ctx.input(l));
  b.outputs.assign(plan->io().outputs.size(), out);
  const Buffer arena = plan->arena_bytes() ? ctx.allocate(plan->arena_bytes()) : Buffer{};
  b.arena = arena;
  b.queue = ctx.queue;
  try {
    plan->bind(0, b);
    plan->execute(0, nullptr);
    backend.sync(ctx.queue);
  } catch (...) {
    if (arena) ctx.release(arena);
    throw;
  }
  plan.reset();
  if (arena) ctx.release(arena);
}

}  // namespace luminal
