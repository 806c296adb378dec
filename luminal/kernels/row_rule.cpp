// The row rule (see row_rule.hpp).
#include "luminal/kernels/row_rule.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/fusion_detail.hpp"
#include "luminal/kernels/row_rule_memo.hpp"

namespace luminal {

using namespace fusion_detail;
using namespace row_detail;

namespace {

constexpr size_t kMaxRowPerClass = 2;

bool is_float_reduce(const EGraph& eg, ENodeId id, const Shape& domain) {
  const ENode& n = eg.node(id);
  if (!is_op(n.op, OpKind::SumReduce) && !is_op(n.op, OpKind::MaxReduce)) return false;
  const Attrs& a = eg.attrs_of(id);
  // Not f64: a row reduction and the SumReduce kernel add in different orders, and f64 math
  // downstream (the correctly rounded division's exact splits) turns a last-bit difference
  // between two computations of one sum into a wrong result. For f32 and narrower sums such a
  // difference stays one: their division has no split (ir/division.cpp).
  if (!is_float(a.dtype) || a.dtype == DType::F64 || n.children.size() != 1 || a.views.size() != 1)
    return false;
  if (eg.dtype(n.children[0]) != a.dtype) return false;
  const View& v = a.views[0];
  return a.axis == v.rank() - 1 && v.dims == domain;
}

/// Which loads of p some instruction still reads.
std::vector<bool> referenced(const SymProgram& p) {
  std::vector<bool> r(p.loads.size(), false);
  for (const FusedInst& i : p.insts)
    if (i.op == FusedOpcode::Load) r[i.a] = true;
  return r;
}

/// Element-level (not row-broadcast, not fully broadcast) distinct loads of p.
size_t element_loads(const SymProgram& p, const Shape& domain) {
  std::vector<const ChildKey*> seen;
  const std::vector<bool> live = referenced(p);
  for (size_t l = 0; l < p.loads.size(); ++l) {
    if (!live[l]) continue;
    const ChildKey& k = p.loads[l];
    std::optional<View> v = view_over(k.view, domain);
    if (v && v->strides.back() == Expr(0)) continue;
    bool dup = false;
    for (const ChildKey* s : seen)
      dup = dup || (s->cls == k.cls && s->view == k.view);
    if (!dup) seen.push_back(&k);
  }
  return seen.size();
}

}  // namespace

namespace row_detail {

SymProgram reduction_region(const EGraph& eg, ENodeId s) {
  const ENode& n = eg.node(s);
  const Attrs& a = eg.attrs_of(s);
  SymProgram q;
  FusedInst load;
  load.op = FusedOpcode::Load;
  load.dtype = eg.dtype(n.children[0]);
  load.a = 0;
  FusedInst red;
  red.op = is_op(n.op, OpKind::SumReduce) ? FusedOpcode::RowSum : FusedOpcode::RowMax;
  red.dtype = a.dtype;
  red.a = 0;
  q.insts = {load, red};
  q.loads = {{eg.find(n.children[0]), a.views[0]}};
  q.root = 1;
  return q;
}

std::vector<ENodeId> producers(const OpDef* fused, const EGraph& eg, ClassId c) {
  std::vector<ENodeId> out;
  for (ENodeId f : eg.nodes_of(c)) {
    const OpDef* op = eg.node(f).op;
    if (op->is_hlir && is_elementwise_kind(op->kind)) out.push_back(f);
  }
  if (auto f = largest_fused(fused, eg, c)) out.push_back(*f);
  return out;
}

std::optional<ENodeId> row_reduction_of(const EGraph& eg, ClassId c, const Shape& domain) {
  for (ENodeId s : eg.nodes_of(c))
    if (is_float_reduce(eg, s, domain)) return s;
  return std::nullopt;
}

bool reread(SymProgram& q, const EGraph& eg, bool direct, const std::optional<View>& over,
            const Shape& domain, const Expr& cn) {
  if (direct) return true;  // views over the class's own elements stand as they are
  for (ChildKey& k : q.loads) {
    const ClassId kc = eg.find(k.cls);
    bool all_zero = true;
    for (const Expr& st : k.view.strides)
      all_zero = all_zero && st == Expr(0);
    if (all_zero) {
      k.view = View{domain, std::vector<Expr>(domain.size(), Expr(0)), k.view.base};
    } else if (k.view.is_contiguous() && k.view.numel() == cn && numel(eg.shape(kc)) == cn) {
      k.view = *over;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace row_detail

namespace {

int row_reductions(const SymProgram& p) {
  int n = 0;
  for (const FusedInst& i : p.insts)
    n += is_row_reduce(i.op);
  return n;
}

/// Grows `p` (a region over `domain`) by one step at load l; true when it did.
bool grow_at(const OpDef* fused, const EGraph& eg, ClassId root, const Shape& domain,
             Variant variant, SymProgram& p, int l) {
  const ChildKey key = p.loads[l];
  const ClassId c = eg.find(key.cls);
  if (c == root || constant_of(eg, c) || constant_program_of(fused, eg, c)) return false;
  std::optional<View> over = view_over(key.view, domain);
  if (over && !over->has_base() && is_row_broadcast(*over, domain)) {
    // A reduction of the last axis: the load becomes RowSum / RowMax of its input (row r of the
    // domain reads row r of the reduction: no element offset).
    // (Equal reductions share one instruction once canonical; the limit applies there.)
    if (std::optional<ENodeId> s = row_reduction_of(eg, c, domain)) {
      p = inline_region(p, l, reduction_region(eg, *s));
      return true;
    }
  }
  // An elementwise producer of the class, inlined (reread says through which views).
  const Expr cn = numel(eg.shape(c));
  const bool direct = key.view.is_contiguous() && key.view.numel() == cn;
  if (!direct && !over) return false;
  const size_t before = element_loads(p, domain);
  for (ENodeId f : producers(fused, eg, c)) {
    std::optional<SymProgram> q = region_of(fused, eg, f);
    if (!q || !reread(*q, eg, direct, over, domain, cn)) continue;
    SymProgram next = inline_region(p, l, *q);
    if (variant == Variant::Narrow && element_loads(next, domain) > before) continue;
    p = std::move(next);
    return true;
  }
  return false;
}

/// Loads of the same class through the same view become one (so a value read in several places
/// is grown once).
void dedupe_loads(SymProgram& p) {
  std::vector<int32_t> first(p.loads.size());
  for (size_t j = 0; j < p.loads.size(); ++j) {
    first[j] = static_cast<int32_t>(j);
    for (size_t i = 0; i < j; ++i) {
      if (first[i] == static_cast<int32_t>(i) && p.loads[i].cls == p.loads[j].cls &&
          p.loads[i].view == p.loads[j].view) {
        first[j] = static_cast<int32_t>(i);
        break;
      }
    }
  }
  for (FusedInst& i : p.insts)
    if (i.op == FusedOpcode::Load) i.a = first[i.a];
}

/// RowGrowth::Plain: grows `p` one load at a time (the lowest load still read that has not failed
/// to grow) until nothing grows or kMaxSteps; nothing when it outgrows 4 * kRowMaxInsts or holds
/// no row reduction. grow_memo (row_rule_memo.hpp) takes the same steps.
std::optional<SymProgram> grow(const OpDef* fused, const EGraph& eg, ClassId root,
                               const Shape& domain, Variant variant, SymProgram p) {
  std::vector<bool> stuck;
  for (int step = 0; step < kMaxSteps; ++step) {
    stuck.resize(p.loads.size(), false);
    const std::vector<bool> live = referenced(p);
    bool grew = false;
    for (int l = 0; l < static_cast<int>(p.loads.size()) && !grew; ++l) {
      if (stuck[l] || !live[l]) continue;
      if (grow_at(fused, eg, root, domain, variant, p, l))
        grew = true;
      else
        stuck[l] = true;
    }
    if (!grew) break;
    dedupe_loads(p);
    if (static_cast<int>(p.insts.size()) > 4 * kRowMaxInsts) return std::nullopt;
  }
  if (row_reductions(p) == 0) return std::nullopt;
  return p;
}

/// Elementwise ops between a row op's value and a region that may grow into it as its epilogue.
constexpr int kEpilogueHops = 2;

/// Does class c hold a row e-node, or (within `hops` HLIR elementwise ops) read one's class? A
/// region reading such a class grows through it to the row op's reduction: RMSNorm's scaled
/// value times its weight after a cast, when the residual stream it normalises is stored (a deep
/// model's norms, whose regions back to the stream's pieces outgrow the limits: without this the
/// weight's product was a kernel of its own after every norm).
bool near_row(const OpDef* row, const EGraph& eg, ClassId c, int hops) {
  for (ENodeId n : eg.nodes_of(c)) {
    const ENode& e = eg.node(n);
    if (e.op == row) return true;
    if (hops > 0 && e.op->is_hlir && is_elementwise_kind(e.op->kind))
      for (ClassId ch : e.children)
        if (near_row(row, eg, ch, hops - 1)) return true;
  }
  return false;
}

size_t rows_in_class(const OpDef* row, const EGraph& eg, ClassId c) {
  size_t n = 0;
  for (ENodeId id : eg.nodes_of(c))
    n += eg.node(id).op == row;
  return n;
}

void apply_rows(const OpDef* row, const OpDef* fused, RowGrowth growth, bool epilogues,
                const Match& m, EGraph& eg) {
  const ENodeId e = m.root_node;
  const ClassId root = eg.find(m.root);
  if (eg.node(e).op == fused && largest_fused(fused, eg, root) != std::optional<ENodeId>(e)) return;
  if (rows_in_class(row, eg, root) >= kMaxRowPerClass) return;
  const Attrs like = eg.attrs_of(e);
  const Shape domain = like.shape;
  if (domain.empty()) return;
  std::optional<SymProgram> base = region_of(fused, eg, e);
  if (!base) return;
  // A row region ends in an op reading a value of the row broadcast along it (1/sum, the norm's
  // scale), or in elementwise work after a row op (a norm's weight after its cast: the row's
  // epilogue): without either there is nothing to grow toward.
  bool reads_row_value = false;
  for (const ChildKey& k : base->loads) {
    std::optional<View> v = view_over(k.view, domain);
    reads_row_value =
        reads_row_value || (v && !(domain.back() == Expr(1)) && is_row_broadcast(*v, domain)) ||
        (epilogues && k.view.is_contiguous() && near_row(row, eg, k.cls, kEpilogueHops));
  }
  if (!reads_row_value) return;
  const bool memo = growth == RowGrowth::Memo;
  for (Variant v : {Variant::Narrow, Variant::Wide}) {
    std::optional<SymProgram> p = memo ? grow_memo(fused, eg, root, domain, v, *base)
                                       : grow(fused, eg, root, domain, v, *base);
    if (!p) continue;
    std::optional<Built> b = canonicalize(fused, eg, *p, kRowMaxInsts, kRowMaxChildren);
    if (!b || !b->program.has_row_reduce()) continue;
    int reductions = 0;
    for (const FusedInst& i : b->program.insts)
      reductions += is_row_reduce(i.op);
    if (reductions > kRowMaxReductions) continue;
    Attrs a;
    a.dtype = like.dtype;
    a.shape = like.shape;
    a.views = b->views;
    a.payload = std::make_shared<FusedProgram>(b->program);
    const uint64_t before = eg.version();
    const ClassId c = eg.add(row, a, b->children);
    eg.merge(c, root);
    if (memo) memo_added_row(eg, before, root);
    if (rows_in_class(row, eg, eg.find(root)) >= kMaxRowPerClass) return;
  }
}

}  // namespace

std::optional<View> view_over(const View& v, const Shape& domain) {
  if (v.dims == domain) return v;
  if (!(v.numel() == numel(domain))) return std::nullopt;
  return v.reshape(domain);
}

bool is_row_broadcast(const View& v, const Shape& domain) {
  if (v.dims != domain || domain.empty()) return false;
  const int last = v.rank() - 1;
  if (!(domain[last] == Expr(1)) && !(v.strides[last] == Expr(0))) return false;
  const View rows = View::contiguous(Shape(domain.begin(), domain.end() - 1));
  for (int k = 0; k < last; ++k) {
    if (domain[k] == Expr(1)) continue;
    if (!(v.strides[k] == rows.strides[k])) return false;
  }
  return true;
}

std::vector<Rule> row_rules(const OpDef* row, const OpDef* fused, const std::string& prefix,
                            RowGrowth growth) {
  Pattern p = region_pattern(fused);
  // The guard accepts every match; it runs on all of an iteration's matches before any builder,
  // so it marks where the memo of the last iteration ends.
  auto guard = [](const Match&, const EGraph&) {
    memo_new_iteration();
    return true;
  };
  // LUMINAL_ROW_EPILOGUE=0: no region grows from a row op's value alone (near_row), for an A/B
  // of the programs before and after; read when the rules are made, and the rule's name says it,
  // so the compile cache keys it.
  const char* env = std::getenv("LUMINAL_ROW_EPILOGUE");
  const bool epilogues = !(env != nullptr && std::string(env) == "0");
  return {Rule{prefix + (epilogues ? ".fuse-rows" : ".fuse-rows-no-epilogue"), std::move(p), guard,
               [row, fused, growth, epilogues](const Match& m, EGraph& eg) {
                 apply_rows(row, fused, growth, epilogues, m, eg);
               }}};
}

}  // namespace luminal
