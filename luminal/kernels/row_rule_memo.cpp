// The memoised growth of the row rule (row_rule_memo.hpp).
#include "luminal/kernels/row_rule_memo.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "luminal/core/hash.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/row_rule.hpp"

namespace luminal::row_detail {

using namespace fusion_detail;

namespace {

using KeyId = int32_t;

/// A producer region over interned keys (Load.a is a key id).
struct MemoRegion {
  std::vector<FusedInst> insts;
  int root = -1;
  int reductions = 0;
  std::vector<KeyId> keys;  // the distinct keys its loads read
};

/// A (class, view) key and what a load of it grows into (computed on first use).
struct KeyInfo {
  ChildKey key;
  bool element = false;  // an element-level input (element_loads counts it)
  bool known = false;
  bool constant = false;     // never grown
  bool reduction = false;    // regions[0] is its row reduction (taken in either variant)
  std::vector<int> regions;  // its producers' regions, in order (DomainMemo::regions)
};

struct KeyHash {
  size_t operator()(const ChildKey& k) const {
    size_t h = k.cls;
    for (const Expr& d : k.view.dims)
      hash_combine(h, d.hash());
    for (const Expr& st : k.view.strides)
      hash_combine(h, st.hash());
    hash_combine(h, k.view.base.hash());
    return h;
  }
};
struct KeyEq {
  bool operator()(const ChildKey& a, const ChildKey& b) const {
    return a.cls == b.cls && a.view == b.view;
  }
};

/// The keys and regions of one domain, and per-growth counters by key (valid where stamp is the
/// growth's).
struct DomainMemo {
  Shape domain;
  std::unordered_map<ChildKey, KeyId, KeyHash, KeyEq> ids;
  std::vector<KeyInfo> keys;
  std::vector<MemoRegion> regions;
  std::vector<uint32_t> stamp;
  std::vector<int32_t> refs, first;  // Load instructions of the key; its first load
};

/// The memo of this thread (row_rule_memo.hpp says how long it lasts).
struct RowMemo {
  const EGraph* eg = nullptr;
  const OpDef* fused = nullptr;
  uint64_t version = 0;
  size_t nodes = 0;
  bool stale = true;
  uint32_t stamp = 0;
  std::vector<std::unique_ptr<DomainMemo>> domains;

  static RowMemo& get() {
    thread_local RowMemo m;
    return m;
  }
  /// Keeps the memo when it still describes `eg`; clears it otherwise.
  void sync(const EGraph& g, const OpDef* f) {
    if (!stale && eg == &g && fused == f && version == g.version() && nodes == g.num_nodes())
      return;
    domains.clear();
    eg = &g;
    fused = f;
    stale = false;
    seen(g);
  }
  void seen(const EGraph& g) {
    version = g.version();
    nodes = g.num_nodes();
  }
  DomainMemo& of(const Shape& domain) {
    for (auto& d : domains)
      if (d->domain == domain) return *d;
    domains.push_back(std::make_unique<DomainMemo>());
    domains.back()->domain = domain;
    return *domains.back();
  }
};

class MemoGrowth {
 public:
  MemoGrowth(const OpDef* fused, const EGraph& eg, DomainMemo& m, ClassId root, Variant variant,
             uint32_t stamp)
      : fused_(fused), eg_(eg), m_(m), root_class_(root), variant_(variant), stamp_(stamp) {}

  std::optional<SymProgram> run(const SymProgram& base) {
    for (const ChildKey& k : base.loads)
      new_load(intern(k));
    for (const FusedInst& i : base.insts) {
      push(i);
      reductions_ += is_row_reduce(i.op);
    }
    for (size_t i = 0; i < base.insts.size(); ++i)
      if (base.insts[i].op == FusedOpcode::Load) add_user(base.insts[i].a, static_cast<int>(i));
    root_ = base.root;
    count_ = base.insts.size();
    bool deduped = false;
    for (int step = 0; step < kMaxSteps; ++step) {
      bool grew = false;
      for (int l = next_open(0); l >= 0 && !grew; l = next_open(l + 1)) {
        if (grow_at(l)) {
          grew = true;
        } else {
          stuck_[l] = 1;
          set_open(l, false);
        }
      }
      if (!grew) break;
      if (!deduped) dedupe_base();  // later loads read the first load of their key already
      deduped = true;
      if (static_cast<int>(count_) > 4 * kRowMaxInsts) return std::nullopt;
    }
    if (reductions_ == 0) return std::nullopt;
    return program();
  }

 private:
  KeyId intern(const ChildKey& k) {
    auto [it, added] = m_.ids.try_emplace(k, static_cast<KeyId>(m_.keys.size()));
    if (added) {
      KeyInfo info;
      info.key = k;
      std::optional<View> v = view_over(k.view, m_.domain);
      info.element = !(v && v->strides.back() == Expr(0));
      m_.keys.push_back(std::move(info));
      m_.stamp.push_back(0);
      m_.refs.push_back(0);
      m_.first.push_back(-1);
    }
    return it->second;
  }
  void fresh(KeyId k) {
    if (m_.stamp[k] == stamp_) return;
    m_.stamp[k] = stamp_;
    m_.refs[k] = 0;
    m_.first[k] = -1;
  }
  int32_t& key_refs(KeyId k) {
    fresh(k);
    return m_.refs[k];
  }
  int32_t& key_first(KeyId k) {
    fresh(k);
    return m_.first[k];
  }

  int add_region(const SymProgram& q) {
    MemoRegion r;
    r.insts = q.insts;
    r.root = q.root;
    for (FusedInst& i : r.insts) {
      r.reductions += is_row_reduce(i.op);
      if (i.op != FusedOpcode::Load) continue;
      i.a = intern(q.loads[i.a]);
      if (std::find(r.keys.begin(), r.keys.end(), i.a) == r.keys.end()) r.keys.push_back(i.a);
    }
    m_.regions.push_back(std::move(r));
    return static_cast<int>(m_.regions.size()) - 1;
  }

  /// What a load of key k grows into (grow_at's choices that do not depend on the region).
  const KeyInfo& info(KeyId k) {
    if (m_.keys[k].known) return m_.keys[k];
    const ChildKey key = m_.keys[k].key;
    const ClassId c = eg_.find(key.cls);
    const Shape& domain = m_.domain;
    bool constant = constant_of(eg_, c) || constant_program_of(fused_, eg_, c);
    bool reduction = false;
    std::vector<int> regions;
    std::optional<View> over = constant ? std::nullopt : view_over(key.view, domain);
    if (over && !over->has_base() && is_row_broadcast(*over, domain))
      if (std::optional<ENodeId> s = row_reduction_of(eg_, c, domain)) {
        reduction = true;
        regions.push_back(add_region(reduction_region(eg_, *s)));
      }
    const Expr cn = numel(eg_.shape(c));
    const bool direct = key.view.is_contiguous() && key.view.numel() == cn;
    if (!constant && !reduction && (direct || over))
      for (ENodeId f : producers(fused_, eg_, c)) {
        std::optional<SymProgram> q = region_of(fused_, eg_, f);
        if (q && reread(*q, eg_, direct, over, domain, cn)) regions.push_back(add_region(*q));
      }
    KeyInfo& out = m_.keys[k];
    out.known = true;
    out.constant = constant;
    out.reduction = reduction;
    out.regions = std::move(regions);
    return out;
  }

  /// grow_at over the counted region.
  bool grow_at(int l) {
    const KeyId k = load_key_[l];
    const KeyInfo& in = info(k);
    if (eg_.find(in.key.cls) == root_class_ || in.constant || in.regions.empty()) return false;
    if (in.reduction) {
      inline_at(l, in.regions[0]);
      return true;
    }
    for (int r : in.regions) {
      if (variant_ == Variant::Narrow && element_inputs_after(l, m_.regions[r]) > elements_)
        continue;
      inline_at(l, r);
      return true;
    }
    return false;
  }

  /// element_loads of the region after load l is replaced by q.
  int element_inputs_after(int l, const MemoRegion& q) {
    const KeyId kl = load_key_[l];
    auto refs_after = [&](KeyId k) { return key_refs(k) - (k == kl ? refs_[l] : 0); };
    int n = elements_ - (m_.keys[kl].element && refs_after(kl) == 0 ? 1 : 0);
    for (KeyId k : q.keys)
      n += m_.keys[k].element && refs_after(k) == 0;
    return n;
  }

  /// inline_region then dedupe_loads: load l's Load instructions forward to q's root; q's loads
  /// become new loads, each read through the first load of its key.
  void inline_at(int l, int region) {
    const MemoRegion& q = m_.regions[region];
    const int base = static_cast<int>(insts_.size());
    const int qroot = base + q.root;
    for (int u = head_[l]; u >= 0; u = next_user_[u])
      fwd_[u] = qroot;
    const KeyId kl = load_key_[l];
    count_ -= static_cast<size_t>(refs_[l]);
    if ((key_refs(kl) -= refs_[l]) == 0 && m_.keys[kl].element) --elements_;
    refs_[l] = 0;
    head_[l] = -1;
    set_open(l, false);
    for (const FusedInst& i : q.insts) {
      FusedInst x = i;
      if (x.op == FusedOpcode::Load) {
        new_load(x.a);
        x.a = key_first(x.a);
        push(x);
        add_user(x.a, static_cast<int>(insts_.size()) - 1);
        continue;
      }
      const int ar = arity(x.op);
      if (ar > 0) x.a += base;
      if (ar > 1) x.b += base;
      if (ar > 2) x.c += base;
      push(x);
    }
    count_ += q.insts.size();
    reductions_ += q.reductions;
  }

  /// The first growth's dedupe_loads: a load of the base that repeats an earlier load's key
  /// gives its Load instructions to that load (q's loads are read that way when inlined).
  void dedupe_base() {
    for (int l = 0; l < static_cast<int>(load_key_.size()); ++l) {
      const int f = key_first(load_key_[l]);
      if (f == l || refs_[l] == 0) continue;
      for (int u = head_[l], next; u >= 0; u = next) {
        next = next_user_[u];
        insts_[u].a = f;
        next_user_[u] = head_[f];
        head_[f] = u;
      }
      refs_[f] += refs_[l];
      refs_[l] = 0;
      head_[l] = -1;
      set_open(l, false);
      set_open(f, !stuck_[f]);
    }
  }

  void new_load(KeyId k) {
    const int n = static_cast<int>(load_key_.size());
    load_key_.push_back(k);
    refs_.push_back(0);
    head_.push_back(-1);
    stuck_.push_back(0);
    if (open_.size() * 64 < load_key_.size()) open_.push_back(0);
    if (key_first(k) < 0) key_first(k) = n;
  }
  void push(const FusedInst& i) {
    insts_.push_back(i);
    fwd_.push_back(-1);
    next_user_.push_back(-1);
  }
  void add_user(int l, int inst) {
    next_user_[inst] = head_[l];
    head_[l] = inst;
    if (refs_[l]++ == 0 && !stuck_[l]) set_open(l, true);
    if (key_refs(load_key_[l])++ == 0 && m_.keys[load_key_[l]].element) ++elements_;
  }
  void set_open(int l, bool on) {
    const uint64_t bit = uint64_t{1} << (l & 63);
    if (on)
      open_[static_cast<size_t>(l) >> 6] |= bit;
    else
      open_[static_cast<size_t>(l) >> 6] &= ~bit;
  }
  /// The lowest load from `from` on that is read and not stuck, or -1.
  int next_open(int from) const {
    size_t w = static_cast<size_t>(from) >> 6;
    if (w >= open_.size()) return -1;
    uint64_t bits = open_[w] & (~uint64_t{0} << (from & 63));
    for (;;) {
      if (bits) return static_cast<int>(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
      if (++w >= open_.size()) return -1;
      bits = open_[w];
    }
  }
  int resolve(int i) const {
    while (fwd_[i] >= 0)
      i = fwd_[i];
    return i;
  }

  /// The region as a SymProgram (post-order from the root; the loads it reads).
  SymProgram program() const {
    SymProgram out;
    std::vector<int> at(insts_.size(), -1), load_at(load_key_.size(), -1);
    std::vector<std::pair<int, bool>> todo{{resolve(root_), false}};
    while (!todo.empty()) {
      auto [i, expanded] = todo.back();
      todo.pop_back();
      if (at[i] >= 0) continue;
      FusedInst x = insts_[i];
      const int ar = x.op == FusedOpcode::Load ? 0 : arity(x.op);
      int32_t* ops[3] = {&x.a, &x.b, &x.c};
      if (!expanded) {
        todo.emplace_back(i, true);
        for (int o = ar - 1; o >= 0; --o)
          todo.emplace_back(resolve(*ops[o]), false);
        continue;
      }
      if (x.op == FusedOpcode::Load) {
        if (load_at[x.a] < 0) {
          load_at[x.a] = static_cast<int>(out.loads.size());
          out.loads.push_back(m_.keys[load_key_[x.a]].key);
        }
        x.a = load_at[x.a];
      }
      for (int o = 0; o < ar; ++o)
        *ops[o] = at[resolve(*ops[o])];
      at[i] = static_cast<int>(out.insts.size());
      out.insts.push_back(x);
    }
    out.root = at[resolve(root_)];
    return out;
  }

  const OpDef* fused_;
  const EGraph& eg_;
  DomainMemo& m_;
  ClassId root_class_;
  Variant variant_;
  uint32_t stamp_;
  std::vector<FusedInst> insts_;
  std::vector<int> fwd_;         // per instruction: the instruction that replaced it, or -1
  std::vector<int> next_user_;   // per Load instruction: the next Load of its load, or -1
  std::vector<KeyId> load_key_;  // per load
  std::vector<int> refs_;        // per load: its Load instructions
  std::vector<int> head_;        // per load: its first Load instruction (a list via next_user_)
  std::vector<uint8_t> stuck_;   // per load
  std::vector<uint64_t> open_;   // per load: read and not stuck
  size_t count_ = 0;             // instructions of grow()'s region (forwarded loads excluded)
  int reductions_ = 0;
  int elements_ = 0;  // element_loads
  int root_ = -1;
};

}  // namespace

void memo_new_iteration() {
  RowMemo& m = RowMemo::get();
  if (!m.domains.empty()) m.domains.clear();
  m.stale = true;
}

void memo_added_row(const EGraph& eg, uint64_t version_before, ClassId root) {
  RowMemo& m = RowMemo::get();
  // One new e-node (its own class) and one effective merge, into a root that stays canonical.
  if (!m.stale && m.eg == &eg && m.version == version_before && m.nodes + 1 == eg.num_nodes() &&
      eg.version() == version_before + 2 && eg.find(root) == root)
    m.seen(eg);
}

std::optional<SymProgram> grow_memo(const OpDef* fused, const EGraph& eg, ClassId root,
                                    const Shape& domain, Variant variant, const SymProgram& base) {
  RowMemo& m = RowMemo::get();
  m.sync(eg, fused);
  return MemoGrowth(fused, eg, m.of(domain), root, variant, ++m.stamp).run(base);
}

}  // namespace luminal::row_detail
