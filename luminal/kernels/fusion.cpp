// Fusion rules over the fused elementwise program (see fusion.hpp).
#include "luminal/kernels/fusion.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/fusion_detail.hpp"

namespace luminal {

namespace fusion_detail {

namespace {

// Rewrites an instruction's operands (as many as its arity, in order a, b, c) through `f`.
template <class F>
void map_operands(FusedInst& inst, F&& f) {
  const int n = arity(inst.op);
  if (n > 0) inst.a = f(inst.a);
  if (n > 1) inst.b = f(inst.b);
  if (n > 2) inst.c = f(inst.c);
}

}  // namespace

bool is_elementwise_kind(OpKind k) { return is_unary(k) || is_binary(k); }

Pattern region_pattern(const OpDef* fop) {
  return Pattern::any_op([fop](const OpDef* op) {
           return op == fop || (op->is_hlir && is_elementwise_kind(op->kind));
         })
      .bind("e");
}

FusedOpcode opcode_of(OpKind k) {
  switch (k) {
    case OpKind::Exp2: return FusedOpcode::Exp2;
    case OpKind::Log2: return FusedOpcode::Log2;
    case OpKind::Sin: return FusedOpcode::Sin;
    case OpKind::Recip: return FusedOpcode::Recip;
    case OpKind::Sqrt: return FusedOpcode::Sqrt;
    case OpKind::Cast: return FusedOpcode::Cast;
    case OpKind::Add: return FusedOpcode::Add;
    case OpKind::Mul: return FusedOpcode::Mul;
    case OpKind::Mod: return FusedOpcode::Mod;
    case OpKind::LessThan: return FusedOpcode::LessThan;
    default: break;
  }
  LUMINAL_ASSERT(false, "fusion: not an elementwise op");
  return FusedOpcode::Load;
}

/// The region an e-node computes, if it is one we can fuse (an HLIR elementwise op whose
/// semantics the program models, or the fused op's own e-node).
std::optional<SymProgram> region_of(const OpDef* fop, const EGraph& eg, ENodeId id) {
  const ENode n = eg.node(id);
  const Attrs& a = eg.attrs(n.attr);
  SymProgram p;
  if (n.op == fop) {
    const auto* prog = dynamic_cast<const FusedProgram*>(a.payload.get());
    if (!prog) return std::nullopt;
    p.insts = prog->insts;
    for (size_t i = 0; i < n.children.size(); ++i)
      p.loads.push_back({eg.find(n.children[i]), a.views[i]});
    p.root = static_cast<int>(p.insts.size()) - 1;
    return p;
  }
  if (!n.op->is_hlir || !is_elementwise_kind(n.op->kind)) return std::nullopt;
  const FusedOpcode op = opcode_of(n.op->kind);
  if (is_unary_math(op) && !is_float(a.dtype)) return std::nullopt;
  if (n.children.size() != a.views.size()) return std::nullopt;
  // One load per distinct (class, view): x * x reads x once, so inlining x's producer replaces
  // both operands.
  std::vector<int32_t> operand;
  for (size_t i = 0; i < n.children.size(); ++i) {
    const ChildKey key{eg.find(n.children[i]), a.views[i]};
    int32_t found = -1;
    for (size_t k = 0; k < p.loads.size(); ++k)
      if (p.loads[k].cls == key.cls && p.loads[k].view == key.view) found = static_cast<int32_t>(k);
    if (found >= 0) {
      operand.push_back(found);
      continue;
    }
    FusedInst load;
    load.op = FusedOpcode::Load;
    load.dtype = eg.dtype(n.children[i]);
    load.a = static_cast<int32_t>(p.loads.size());
    operand.push_back(static_cast<int32_t>(p.insts.size()));
    p.insts.push_back(load);
    p.loads.push_back(key);
  }
  if (operand.size() == 2 && p.insts[operand[0]].dtype != p.insts[operand[1]].dtype)
    return std::nullopt;
  FusedInst inst;
  inst.op = op;
  inst.dtype = a.dtype;
  inst.a = operand[0];
  if (operand.size() == 2) inst.b = operand[1];
  p.insts.push_back(inst);
  p.root = static_cast<int>(p.insts.size()) - 1;
  return p;
}

/// The HLIR Constant of a class, if it holds one.
const Attrs* constant_of(const EGraph& eg, ClassId c) {
  for (ENodeId n : eg.nodes_of(c))
    if (is_op(eg.node(n).op, OpKind::Constant)) return &eg.attrs_of(n);
  return nullptr;
}

/// The program of a fused-op e-node of the class that reads no input (a constant computed by
/// ops, e.g. isnan of a scalar constant), if any.
const FusedProgram* constant_program_of(const OpDef* fop, const EGraph& eg, ClassId c) {
  for (ENodeId n : eg.nodes_of(c)) {
    if (eg.node(n).op != fop || !eg.node(n).children.empty()) continue;
    if (const auto* p = dynamic_cast<const FusedProgram*>(eg.attrs_of(n).payload.get())) return p;
  }
  return nullptr;
}

std::optional<Built> canonicalize(const OpDef* fop, const EGraph& eg, const SymProgram& p,
                                  int max_insts, int max_children) {
  Built out;
  std::vector<FusedInst> insts;
  bool too_big = false;
  // Appends an instruction (operands already emitted) unless an equal one exists.
  auto push = [&](const FusedInst& inst) -> int {
    auto it = std::find(insts.begin(), insts.end(), inst);
    const int idx = static_cast<int>(it - insts.begin());
    if (it == insts.end()) insts.push_back(inst);
    if (static_cast<int>(insts.size()) > max_insts) too_big = true;
    return idx;
  };
  // Emits instruction i of a program without loads (a constant program), post-order.
  std::function<int(const std::vector<FusedInst>&, int, std::vector<int>&)> emit_closed =
      [&](const std::vector<FusedInst>& src, int i, std::vector<int>& memo) -> int {
    if (memo[i] >= 0) return memo[i];
    FusedInst inst = src[i];
    map_operands(inst, [&](int o) { return emit_closed(src, o, memo); });
    return memo[i] = push(inst);
  };
  std::vector<int> memo(p.insts.size(), -1);
  std::function<int(int)> emit = [&](int i) -> int {
    if (memo[i] >= 0) return memo[i];
    FusedInst inst = p.insts[i];
    if (inst.op == FusedOpcode::Load) {
      const ChildKey& key = p.loads[inst.a];
      const ClassId cls = eg.find(key.cls);
      if (const Attrs* c = constant_of(eg, cls)) {
        inst.op = FusedOpcode::Const;
        inst.a = -1;
        inst.value = c->value;
        inst.int_value = c->int_value;
        // Only the field the dtype uses matters (as the reference reads it).
        if (is_float(inst.dtype) || inst.dtype == DType::Bool)
          inst.int_value = 0;
        else
          inst.value = 0;
      } else if (const FusedProgram* cp = constant_program_of(fop, eg, cls)) {
        std::vector<int> cmemo(cp->insts.size(), -1);
        return memo[i] = emit_closed(cp->insts, static_cast<int>(cp->insts.size()) - 1, cmemo);
      } else {
        int child = -1;
        for (size_t k = 0; k < out.children.size(); ++k)
          if (out.children[k] == cls && out.views[k] == key.view) child = static_cast<int>(k);
        if (child < 0) {
          child = static_cast<int>(out.children.size());
          out.children.push_back(cls);
          out.views.push_back(key.view);
        }
        inst.a = child;
      }
    } else {
      map_operands(inst, emit);
    }
    return memo[i] = push(inst);
  };
  emit(p.root);
  if (too_big || static_cast<int>(out.children.size()) > max_children) return std::nullopt;
  out.program.insts = std::move(insts);
  return out;
}

/// p with every load of p.loads[target] replaced by the region q.
SymProgram inline_region(const SymProgram& p, int target, const SymProgram& q) {
  SymProgram out;
  out.loads = p.loads;
  std::vector<int> qmap(q.insts.size());
  for (size_t i = 0; i < q.insts.size(); ++i) {
    FusedInst inst = q.insts[i];
    if (inst.op == FusedOpcode::Load) {
      inst.a = static_cast<int32_t>(out.loads.size());
      out.loads.push_back(q.loads[q.insts[i].a]);
    } else {
      map_operands(inst, [&](int o) { return qmap[o]; });
    }
    qmap[i] = static_cast<int>(out.insts.size());
    out.insts.push_back(inst);
  }
  const int qroot = qmap[q.root];
  std::vector<int> pmap(p.insts.size());
  for (size_t i = 0; i < p.insts.size(); ++i) {
    FusedInst inst = p.insts[i];
    if (inst.op == FusedOpcode::Load && inst.a == target) {
      pmap[i] = qroot;
      continue;
    }
    if (inst.op != FusedOpcode::Load) {
      map_operands(inst, [&](int o) { return pmap[o]; });
    }
    pmap[i] = static_cast<int>(out.insts.size());
    out.insts.push_back(inst);
  }
  out.root = pmap[p.root];
  return out;
}

/// The ops a region computes (loads and constants not counted).
size_t region_ops(const FusedProgram& p) {
  size_t n = 0;
  for (const FusedInst& i : p.insts)
    n += i.op != FusedOpcode::Load && i.op != FusedOpcode::Const;
  return n;
}

namespace {

/// The fused-op e-node of class c first by (ops descending, children ascending) or, `leanest`,
/// by (children ascending, ops descending); on ties the earliest. `count` receives the number of
/// `fop` e-nodes in the class.
std::optional<ENodeId> best_fused(const OpDef* fop, const EGraph& eg, ClassId c, bool leanest,
                                  size_t* count) {
  std::optional<ENodeId> best;
  size_t best_ops = 0, best_children = 0, n = 0;
  for (ENodeId id : eg.nodes_of(c)) {
    if (eg.node(id).op != fop) continue;
    ++n;
    const auto* prog = dynamic_cast<const FusedProgram*>(eg.attrs_of(id).payload.get());
    const size_t ops = prog ? region_ops(*prog) : 0;
    const size_t children = eg.node(id).children.size();
    const bool better =
        leanest ? children < best_children || (children == best_children && ops > best_ops)
                : ops > best_ops || (ops == best_ops && children < best_children);
    if (!best || better) {
      best = id;
      best_ops = ops;
      best_children = children;
    }
  }
  if (count) *count = n;
  return best;
}

}  // namespace

std::optional<ENodeId> largest_fused(const OpDef* fop, const EGraph& eg, ClassId c, size_t* count) {
  return best_fused(fop, eg, c, false, count);
}

std::optional<ENodeId> leanest_fused(const OpDef* fop, const EGraph& eg, ClassId c) {
  return best_fused(fop, eg, c, true, nullptr);
}

}  // namespace fusion_detail

namespace {

using namespace fusion_detail;

constexpr size_t kMaxFusedPerClass = 12;

void add_fused(const OpDef* fop, EGraph& eg, ClassId root, const Attrs& like, const Built& b) {
  Attrs a;
  a.dtype = like.dtype;
  a.shape = like.shape;
  a.views = b.views;
  a.payload = std::make_shared<FusedProgram>(b.program);
  ClassId c = eg.add(fop, a, b.children);
  eg.merge(c, root);
}

/// For a load of class C (dims `cdims`) through `v`: when v reads C contiguously except for
/// broadcast axes (stride 0; C's own axes in order, at C's row-major strides, base 0), the C
/// axis each of v's axes reads (-1 where broadcast or of size 1). Otherwise nothing.
std::optional<std::vector<int>> broadcast_axes(const View& v, const Shape& cdims) {
  if (v.has_base()) return std::nullopt;
  const View cc = View::contiguous(cdims);
  const int crank = static_cast<int>(cdims.size());
  std::vector<int> axis(static_cast<size_t>(v.rank()), -1);
  bool broadcast = false;
  int j = 0;
  auto skip_ones = [&] {
    while (j < crank && cdims[static_cast<size_t>(j)] == Expr(1))
      ++j;
  };
  for (int i = 0; i < v.rank(); ++i) {
    const size_t ii = static_cast<size_t>(i);
    if (v.dims[ii] == Expr(1)) continue;
    if (v.strides[ii] == Expr(0)) {
      broadcast = true;
      continue;
    }
    skip_ones();
    if (j >= crank) return std::nullopt;
    const size_t jj = static_cast<size_t>(j);
    if (v.dims[ii] != cdims[jj] || v.strides[ii] != cc.strides[jj]) return std::nullopt;
    axis[ii] = j++;
  }
  skip_ones();
  if (j != crank || !broadcast) return std::nullopt;
  return axis;
}

/// q (a region over C's shape) as read through a broadcast view `v` of C (`axis` from
/// broadcast_axes): each of its loads' views over v's dims, at stride 0 on the broadcast axes.
std::optional<SymProgram> through_broadcast(const SymProgram& q, const View& v,
                                            const std::vector<int>& axis, size_t crank) {
  SymProgram out = q;
  for (ChildKey& k : out.loads) {
    const View& w = k.view;
    if (static_cast<size_t>(w.rank()) != crank) return std::nullopt;
    View c;
    c.dims = v.dims;
    c.base = w.base;
    for (size_t i = 0; i < axis.size(); ++i)
      c.strides.push_back(axis[i] < 0 ? Expr(0) : w.strides[static_cast<size_t>(axis[i])]);
    k.view = std::move(c);
  }
  return out;
}

/// Calls f(region, fused) with each region a load `key` of a region in class `root` can inline,
/// in the order they are tried, until f returns true: the HLIR elementwise producers of its
/// class, then at most `max_fused` of its fused e-nodes by ops (descending), each as read
/// through key's view. None when the load reads its class other than contiguously (but for
/// broadcast axes, where `broadcast`), or a constant, or the root itself.
template <class F>
void for_each_inlinable(const OpDef* fop, const EGraph& eg, ClassId root, const ChildKey& key,
                        size_t max_fused, bool broadcast, F&& f) {
  const ClassId c = eg.find(key.cls);
  if (c == root) return;
  const Shape& cdims = eg.shape(c);
  std::optional<std::vector<int>> axis;
  if (!key.view.is_contiguous() || key.view.numel() != numel(cdims)) {
    if (!broadcast) return;
    axis = broadcast_axes(key.view, cdims);
    if (!axis) return;
  }
  if (constant_of(eg, c) || constant_program_of(fop, eg, c)) return;
  std::vector<ENodeId> hlir, fused;
  for (ENodeId n : eg.nodes_of(c)) {
    const OpDef* op = eg.node(n).op;
    if (op->is_hlir && is_elementwise_kind(op->kind)) hlir.push_back(n);
    if (op == fop) fused.push_back(n);
  }
  auto ops_of = [&](ENodeId n) {
    const auto* prog = dynamic_cast<const FusedProgram*>(eg.attrs_of(n).payload.get());
    return prog ? region_ops(*prog) : 0;
  };
  std::stable_sort(fused.begin(), fused.end(), [&](ENodeId x, ENodeId y) {
    const size_t ox = ops_of(x), oy = ops_of(y);
    if (ox != oy) return ox > oy;
    return eg.node(x).children.size() < eg.node(y).children.size();
  });
  if (fused.size() > max_fused) fused.resize(max_fused);
  auto call = [&](ENodeId n, bool is_fused) {
    std::optional<SymProgram> q = region_of(fop, eg, n);
    if (q && axis) q = through_broadcast(*q, key.view, *axis, cdims.size());
    return q && f(*q, is_fused);
  };
  for (ENodeId n : hlir)
    if (call(n, false)) return;
  for (ENodeId n : fused)
    if (call(n, true)) return;
}

/// A canonical region as a program to grow (its loads in first-use order).
SymProgram as_program(const Built& b) {
  SymProgram p;
  p.insts = b.program.insts;
  for (size_t i = 0; i < b.children.size(); ++i)
    p.loads.push_back({b.children[i], b.views[i]});
  p.root = static_cast<int>(p.insts.size()) - 1;
  return p;
}

/// May a region be inlined through a broadcast (computed again for every element that reads a
/// value)? At most kCheapOps instructions other than loads and constants, none of them
/// transcendental math or a row reduction (an [E, E] pairwise region of a router's ranks would
/// compute a softmax E times), so a key such as "x below +inf, else +inf" over a matmul's value
/// costs less than the kernel that would store it. (Each step inlines one region, so a chain of
/// such regions may be inlined one after another, up to the region's instruction limit; a total
/// of 8 or 12 changed the 12-layer Qwen3-MoE seed from 298 to 310 kernels. The search times the
/// greedy region against the others.)
constexpr size_t kCheapOps = 4;
bool cheap_to_repeat(const SymProgram& q) {
  size_t ops = 0;
  for (const FusedInst& in : q.insts) {
    if (is_unary_math(in.op) || is_row_reduce(in.op)) return false;
    if (in.op == FusedOpcode::Load || in.op == FusedOpcode::Const) continue;
    ++ops;
  }
  return ops <= kCheapOps;
}

/// `base` grown greedily: each load in turn inlines the first region that fits (its class's HLIR
/// op, whose inputs are then tried in turn, else its largest fused region: a select form), and
/// the loads an inlined region brings are tried too; loads of a class in `keep` stay loads, and
/// so do loads through a broadcast unless the region is cheap to repeat (cheap_to_repeat).
/// `inlined` receives the classes whose loads were replaced.
Built grow_greedily(const OpDef* fop, const EGraph& eg, ClassId root, const Built& base,
                    const std::vector<ClassId>& keep, std::vector<ClassId>& inlined,
                    std::vector<ChildKey>& stays) {
  Built cur = base;
  // (each step inlines one load; the limits on instructions and inputs bound the growth, and
  // the step count guards against a class that reaches itself through its producers; `stays`:
  // loads that inlined nothing, which a larger region will not either)
  for (int step = 0; step < 4 * kFusedMaxInsts; ++step) {
    const SymProgram p = as_program(cur);
    bool grew = false;
    for (int l = 0; l < static_cast<int>(p.loads.size()) && !grew; ++l) {
      const ClassId c = eg.find(p.loads[l].cls);
      if (std::find(keep.begin(), keep.end(), c) != keep.end()) continue;
      const auto same = [&](const ChildKey& k) {
        return k.cls == p.loads[l].cls && k.view == p.loads[l].view;
      };
      if (std::find_if(stays.begin(), stays.end(), same) != stays.end()) continue;
      const bool through_broadcast =
          !p.loads[l].view.is_contiguous() || p.loads[l].view.numel() != numel(eg.shape(c));
      for_each_inlinable(fop, eg, root, p.loads[l], 2, true, [&](const SymProgram& q, bool) {
        if (through_broadcast && !cheap_to_repeat(q)) return false;
        std::optional<Built> b =
            canonicalize(fop, eg, inline_region(p, l, q), kFusedMaxInsts, kFusedMaxChildren);
        if (!b || b->program.insts == cur.program.insts) return false;
        cur = std::move(*b);
        inlined.push_back(c);
        grew = true;
        return true;
      });
      if (!grew) stays.push_back(p.loads[l]);
    }
    if (!grew) break;
  }
  return cur;
}

/// The largest region grown from `base` greedily (grow_greedily), offered where the
/// one-producer-at-a-time growth below stopped: it enumerates sub-regions up to
/// kMaxFusedPerClass e-nodes a class, and a region of many inputs reaches that before its largest
/// form (rope's x * cos + rotate_half(x) * sin over a GEMV's value: 12 partial regions, and the
/// product with cos left as a kernel of its own). A class inlined at one load but still read at
/// another keeps its kernel and adds its producer's inputs (a GEMV's bf16 value inlined as the
/// cast of its f32 value where rotate_half still reads the bf16 one: the GEMV twice), so such a
/// class is kept a load and the growth starts again. Nothing unless it computes more than `base`.
std::optional<Built> greedy_region(const OpDef* fop, const EGraph& eg, ClassId root,
                                   const SymProgram& base) {
  const std::optional<Built> start = canonicalize(fop, eg, base, kFusedMaxInsts, kFusedMaxChildren);
  if (!start) return std::nullopt;
  std::vector<ClassId> keep;
  std::vector<ChildKey> stays;
  Built g;
  for (int round = 0; round <= kFusedMaxChildren; ++round) {
    std::vector<ClassId> inlined;
    g = grow_greedily(fop, eg, root, *start, keep, inlined, stays);
    bool again = false;
    for (ClassId c : inlined)
      for (ClassId r : g.children)
        if (eg.find(r) == c && std::find(keep.begin(), keep.end(), c) == keep.end()) {
          keep.push_back(c);
          again = true;
        }
    if (!again) break;
  }
  if (region_ops(g.program) <= region_ops(start->program)) return std::nullopt;
  return g;
}

/// LUMINAL_FUSION_GREEDY: "all", the greedy region in every class, from the HLIR op and from
/// the largest region, not only where a class reached kMaxFusedPerClass; "off", nowhere (for an
/// A/B of the CUDA default); unset, the backend's choice (fusion.hpp). On the host (2026-12-05)
/// with "all", the CUDA fewest-kernels programs: SmolLM2 shape 30 layers 493 -> 432 kernels,
/// 12-layer Qwen3-MoE 877 / 335 / 395 -> 898 / 334 / 394 (argmax / ranks / both), 8B 524;
/// it also stops the one-at-a-time growth of the regions it outgrows (the greedy one becomes the
/// largest), which feeds the epilogue forms. Untimed on a GPU. (Read when the rules are made:
/// the rule's name says it, so the compile cache keys it.)
std::string greedy_switch() {
  const char* v = std::getenv("LUMINAL_FUSION_GREEDY");
  return v != nullptr ? std::string(v) : std::string();
}

/// How a ruleset offers the greedy region (greedy_region): never, where a class reaches the
/// limit, or in every class (LUMINAL_FUSION_GREEDY=all).
enum class Greedy { Off, AtLimit, All };

void apply_fusion(const OpDef* fop, const Match& m, EGraph& eg, Greedy greedy) {
  const bool greedy_all = greedy == Greedy::All;
  const ENodeId e = m.root_node;
  const ClassId root = eg.find(m.root);
  size_t fused_in_class = 0;
  std::optional<ENodeId> largest = largest_fused(fop, eg, root, &fused_in_class);
  // Only the HLIR op and the largest region of a class grow further: regions grow to the
  // maximal one in a few iterations without enumerating every sub-region.
  if (eg.node(e).op == fop && largest != e) return;
  std::optional<SymProgram> base = region_of(fop, eg, e);
  if (!base) return;
  const Attrs like = eg.attrs_of(e);
  if (greedy_all) {
    if (std::optional<Built> g = greedy_region(fop, eg, root, *base)) {
      add_fused(fop, eg, root, like, *g);
      ++fused_in_class;
    }
  }
  // (at the limit the class got its greedy region when it reached it, below)
  if (fused_in_class >= kMaxFusedPerClass) return;
  // The greedy region, once, when the class reaches the limit: grown from the class's HLIR op
  // (the natural inputs, not a cast of one). (Each time the class matched again it cost the
  // sampler graph of `luminal run` 2.7 s of saturation.)
  auto at_limit = [&] {
    if (greedy != Greedy::AtLimit) return;
    for (ENodeId h : eg.nodes_of(root)) {
      const OpDef* op = eg.node(h).op;
      if (!op->is_hlir || !is_elementwise_kind(op->kind)) continue;
      if (std::optional<SymProgram> hb = region_of(fop, eg, h))
        if (std::optional<Built> g = greedy_region(fop, eg, root, *hb))
          add_fused(fop, eg, root, eg.attrs_of(h), *g);
      return;
    }
  };
  // Constants inlined (when the HLIR op read one).
  if (eg.node(e).op != fop) {
    std::optional<Built> b = canonicalize(fop, eg, *base, kFusedMaxInsts, kFusedMaxChildren);
    if (b && b->children.size() < base->loads.size()) add_fused(fop, eg, root, like, *b);
  }
  // Absorb a producer of each child read contiguously, or contiguously but for broadcast axes
  // (its values computed again for each element that reads them: the search weighs that): the
  // HLIR producers, then the largest fused region of the child's class that still fits.
  bool full = false;
  for (int l = 0; l < static_cast<int>(base->loads.size()) && !full; ++l) {
    for_each_inlinable(
        fop, eg, root, base->loads[l], SIZE_MAX, true, [&](const SymProgram& q, bool fused) {
          std::optional<Built> b =
              canonicalize(fop, eg, inline_region(*base, l, q), kFusedMaxInsts, kFusedMaxChildren);
          if (!b) return false;
          add_fused(fop, eg, root, like, *b);
          full = ++fused_in_class >= kMaxFusedPerClass;
          return full || fused;  // (one fused region that fits is enough)
        });
  }
  if (full) at_limit();
}

// ---------------------------------------------------------------- where() as a select
//
// Tensor::where(cond, a, b) builds Scatter(dest = b, index, src = a) with
//   index = (flat_index + 1) * cast<i32>(cond) - 1     (i where cond holds, -1 elsewhere),
// so out[i] = cond[i] ? a[i] : b[i]. When the index class holds a fused region of exactly that
// form, the Scatter gets a fused-op alternative ending in select(cond, a, b), and fusion goes on
// through where / relu / maximum / masked_fill.

/// The value of an integer instruction that reads no load, wrapped to its dtype.
std::optional<int64_t> fold_int(const SymProgram& p, int i) {
  const FusedInst& in = p.insts[i];
  if (is_float(in.dtype)) return std::nullopt;
  auto wrap = [&](int64_t v) {
    uint8_t buf[8];
    store_from_int64(in.dtype, buf, 0, v);
    return load_as_int64(in.dtype, buf, 0);
  };
  switch (in.op) {
    case FusedOpcode::Const: return in.dtype == DType::Bool ? (in.value != 0) : wrap(in.int_value);
    case FusedOpcode::Cast: {
      if (is_float(p.insts[in.a].dtype)) return std::nullopt;
      auto x = fold_int(p, in.a);
      return x ? std::optional<int64_t>(wrap(*x)) : std::nullopt;
    }
    case FusedOpcode::Add:
    case FusedOpcode::Mul: {
      auto x = fold_int(p, in.a), y = fold_int(p, in.b);
      if (!x || !y) return std::nullopt;
      const uint64_t ux = static_cast<uint64_t>(*x), uy = static_cast<uint64_t>(*y);  // wrapping
      return wrap(static_cast<int64_t>(in.op == FusedOpcode::Add ? ux + uy : ux * uy));
    }
    default: return std::nullopt;
  }
}

/// Does instruction i load element i of an Iota(z) of `count` elements (the flat index)?
bool is_flat_index(const EGraph& eg, const SymProgram& p, int i, const Expr& count) {
  const FusedInst& in = p.insts[i];
  if (in.op != FusedOpcode::Load) return false;
  const ChildKey& key = p.loads[in.a];
  if (!key.view.is_contiguous() || key.view.numel() != count) return false;
  for (ENodeId n : eg.nodes_of(key.cls)) {
    if (!is_op(eg.node(n).op, OpKind::Iota)) continue;
    const Attrs& a = eg.attrs_of(n);
    if (a.iota_expr == Expr::z() && a.iota_len == count) return true;
  }
  return false;
}

/// If p computes `cond ? flat_index : -1`, the instruction computing cond (Bool).
std::optional<int> where_condition(const EGraph& eg, const SymProgram& p, const Expr& count) {
  const FusedInst& r = p.insts[p.root];
  if (r.op != FusedOpcode::Add || is_float(r.dtype)) return std::nullopt;
  for (auto [x, y] : {std::pair{r.a, r.b}, std::pair{r.b, r.a}}) {
    if (fold_int(p, y) != std::optional<int64_t>(-1)) continue;
    const FusedInst& m = p.insts[x];
    if (m.op != FusedOpcode::Mul) continue;
    for (auto [u, v] : {std::pair{m.a, m.b}, std::pair{m.b, m.a}}) {
      const FusedInst& plus = p.insts[u];
      const FusedInst& cast = p.insts[v];
      if (plus.op != FusedOpcode::Add || cast.op != FusedOpcode::Cast) continue;
      if (p.insts[cast.a].dtype != DType::Bool) continue;
      for (auto [f, one] : {std::pair{plus.a, plus.b}, std::pair{plus.b, plus.a}})
        if (fold_int(p, one) == std::optional<int64_t>(1) && is_flat_index(eg, p, f, count))
          return cast.a;
    }
  }
  return std::nullopt;
}

void apply_where(const OpDef* fop, const Match& m, EGraph& eg) {
  const ENode s = eg.node(m.root_node);
  const Attrs like = eg.attrs(s.attr);
  if (s.children.size() != 3 || like.views.size() != 3) return;
  const View& vd = like.views[0];
  const View& vi = like.views[1];
  const View& vs = like.views[2];
  const Expr count = numel(like.shape);
  if (!vi.is_contiguous() || vi.numel() != count || vs.numel() != count || vd.numel() != count)
    return;
  const ClassId idx = eg.find(s.children[1]);
  if (vi.numel() != numel(eg.shape(idx))) return;
  const ClassId root = eg.find(m.root);
  size_t fused_in_class = 0;
  largest_fused(fop, eg, root, &fused_in_class);
  for (ENodeId f : eg.nodes_of(idx)) {
    if (fused_in_class >= kMaxFusedPerClass) return;
    if (eg.node(f).op != fop) continue;
    std::optional<SymProgram> p = region_of(fop, eg, f);
    if (!p) continue;
    std::optional<int> cond = where_condition(eg, *p, count);
    if (!cond) continue;
    auto load = [&](ClassId c, const View& v) {
      FusedInst l;
      l.op = FusedOpcode::Load;
      l.dtype = like.dtype;
      l.a = static_cast<int32_t>(p->loads.size());
      p->loads.push_back({eg.find(c), v});
      p->insts.push_back(l);
      return static_cast<int32_t>(p->insts.size()) - 1;
    };
    FusedInst sel;
    sel.op = FusedOpcode::Select;
    sel.dtype = like.dtype;
    sel.a = *cond;
    sel.b = load(s.children[2], vs);
    sel.c = load(s.children[0], vd);
    p->insts.push_back(sel);
    p->root = static_cast<int>(p->insts.size()) - 1;
    std::optional<Built> b = canonicalize(fop, eg, *p, kFusedMaxInsts, kFusedMaxChildren);
    if (!b) continue;
    add_fused(fop, eg, root, like, *b);
    ++fused_in_class;
  }
}

}  // namespace

std::vector<Rule> fusion_rules(const OpDef* fused, const std::string& prefix, bool at_limit) {
  Pattern p = region_pattern(fused);
  const std::string sw = greedy_switch();
  const Greedy g = sw == "all"   ? Greedy::All
                   : sw == "off" ? Greedy::Off
                   : at_limit    ? Greedy::AtLimit
                                 : Greedy::Off;
  const char* name = g == Greedy::All       ? ".fuse-elementwise-greedy"
                     : g == Greedy::AtLimit ? ".fuse-elementwise-at-limit"
                                            : ".fuse-elementwise";
  return {Rule{prefix + name, std::move(p), nullptr,
               [fused, g](const Match& m, EGraph& eg) { apply_fusion(fused, m, eg, g); }},
          Rule{prefix + ".fuse-where", Pattern::op(OpKind::Scatter).bind("scatter"), nullptr,
               [fused](const Match& m, EGraph& eg) { apply_where(fused, m, eg); }}};
}

}  // namespace luminal
