#include "luminal/egraph/extract.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "luminal/core/error.hpp"
#include "luminal/core/hash.hpp"

namespace luminal {

namespace {

/// A new visit stamp for per-class scratch `seen` of `n` classes (grown and cleared as needed):
/// a class is visited in this pass when its entry equals the stamp.
uint32_t next_stamp(std::vector<uint32_t>& seen, uint32_t& stamp, size_t n) {
  if (seen.size() < n) {
    seen.assign(n, 0);
    stamp = 0;
  }
  if (++stamp == 0) {
    std::fill(seen.begin(), seen.end(), 0);
    stamp = 1;
  }
  return stamp;
}

uint64_t mix(uint64_t h, uint64_t v) { return hash_combined(h, v); }

// An e-node's cost in the fewest-kernels seed: inputs free; a library call kAvoided when the
// seed avoids them, an op a library call replaces kAvoided when the seed prefers them.
double seed_cost(const OpDef* op, SearchSpace::LibrarySeed mode) {
  if (is_op(op, OpKind::Input)) return 0;
  if (mode == SearchSpace::LibrarySeed::Avoid && op->library_call) return SearchSpace::kAvoided;
  if (mode == SearchSpace::LibrarySeed::Prefer && op->library_replaces)
    return SearchSpace::kAvoided;
  return op->seed_cost;
}

// What an e-node looks like locally: op, attributes without labels, arity.
uint64_t option_signature(const EGraph& eg, ENodeId n) {
  const ENode& e = eg.node(n);
  uint64_t h = hash_string(e.op->name);
  h = mix(h, eg.attrs(e.attr).structural_hash());
  return mix(h, e.children.size());
}

// A label with every run of digits blanked: the layer index of a weight name.
std::string blank_numbers(std::string_view label) {
  std::string out;
  for (size_t i = 0; i < label.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(label[i]))) {
      out += '#';
      while (i + 1 < label.size() && std::isdigit(static_cast<unsigned char>(label[i + 1])))
        ++i;
    } else {
      out += label[i];
    }
  }
  return out;
}

constexpr int kRoleDepth = 2;

// Role texts of classes (memoised per class and depth).
class RoleNamer {
 public:
  explicit RoleNamer(const EGraph& eg) : eg_(eg) {}
  const std::string& role(ClassId c, int depth) {
    c = eg_.find(c);
    auto key = std::make_pair(c, depth);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    // The originating HLIR e-node (the lowest id); a class without one is named by its options.
    std::optional<ENodeId> origin;
    for (ENodeId n : eg_.eclass(c).nodes)
      if (eg_.node(n).op->is_hlir && (!origin || n < *origin)) origin = n;
    std::string r;
    if (!origin) {
      std::vector<std::string> parts;
      for (ENodeId n : eg_.nodes_of(c))
        parts.push_back(local(n, 0));
      std::sort(parts.begin(), parts.end());
      r = "{";
      for (const std::string& p : parts)
        r += p + "|";
      r += "}";
    } else {
      r = local(*origin, depth);
    }
    return memo_.emplace(key, std::move(r)).first->second;
  }

 private:
  std::string local(ENodeId n, int depth) {
    const ENode& e = eg_.node(n);
    const Attrs& a = eg_.attrs(e.attr);
    std::string r(e.op->name);
    r += "<" + a.key_text(false);
    if (!a.label.empty()) r += " label~" + blank_numbers(a.label);
    r += ">";
    if (depth > 0) {
      r += "(";
      for (ClassId ch : e.children)
        r += role(ch, depth - 1) + ",";
      r += ")";
    }
    return r;
  }

  const EGraph& eg_;
  std::map<std::pair<ClassId, int>, std::string> memo_;
};

}  // namespace

SearchSpace::SearchSpace(const EGraph& eg, std::vector<ClassId> roots) : eg_(&eg) {
  LUMINAL_ASSERT(!eg.needs_rebuild(), "SearchSpace needs a rebuilt e-graph");
  for (ClassId& r : roots)
    r = eg.find(r);
  roots_ = std::move(roots);
  ClassId max_id = 0;
  for (ClassId c : eg.class_ids())
    max_id = std::max(max_id, c);
  options_.assign(max_id + 1, {});
  gene_.assign(max_id + 1, -1);

  // Reachable classes (over every live option), in ascending id order for determinism.
  std::vector<bool> seen(max_id + 1, false);
  std::vector<ClassId> stack(roots_.begin(), roots_.end());
  std::vector<ClassId> reach;
  while (!stack.empty()) {
    ClassId c = stack.back();
    stack.pop_back();
    if (seen[c]) continue;
    seen[c] = true;
    reach.push_back(c);
    std::vector<ENodeId> opts = eg.nodes_of(c);
    if (opts.empty())
      throw Error("SearchSpace: class %" + std::to_string(c) + " has no option left");
    // Canonical order: options whose seed cost is kAvoided (a load-time fold) last, so the first
    // genome never picks one; then by op name, then by a hash of the option's attributes.
    std::vector<std::pair<uint64_t, ENodeId>> keyed;
    for (ENodeId n : opts)
      keyed.emplace_back(option_signature(eg, n), n);
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      const OpDef* oa = eg.node(a.second).op;
      const OpDef* ob = eg.node(b.second).op;
      const bool la = oa->seed_cost >= kAvoided, lb = ob->seed_cost >= kAvoided;
      if (la != lb) return lb;
      return oa->name != ob->name ? oa->name < ob->name : a.first < b.first;
    });
    for (auto& [k, n] : keyed) {
      options_[c].push_back(n);
      for (ClassId ch : eg.node(n).children)
        if (!seen[eg.find(ch)]) stack.push_back(eg.find(ch));
    }
  }
  std::sort(reach.begin(), reach.end());
  // Classes that play the same role share a gene. The role of a class is what its originating
  // HLIR e-node computes (op and attributes without labels) from what, two levels down, with
  // weight labels read with their numbers blanked ("w_gate.3" -> "w_gate.#"): the same op at
  // the same place in every layer of a model is one choice however many layers there are, while
  // same-shape ops in different roles of a layer (gate and up projections, k and v) are
  // separate choices. Keys are exact texts compared for equality.
  RoleNamer roles(eg);
  std::unordered_map<std::string, int> gene_of_role;
  // A gene's values are the kinds of option its classes offer (op, attributes, arity, and the
  // occurrence among equal ones in a class), in the order first met: a value picks the same kind
  // of option in every layer even where a class (the first or last layer) offers more or fewer.
  // A class without that kind takes an option of the same op (the kind's rank among that op's
  // options where it was met, modulo how many the class has), else value % its option count.
  struct Kind {
    std::string_view op;
    uint32_t rank = 0;  // among the options of its op in the class it was met in
  };
  std::vector<std::unordered_map<uint64_t, uint32_t>> kinds;
  std::vector<std::vector<Kind>> kind_info;
  pick_.assign(max_id + 1, {});
  std::vector<std::vector<uint64_t>> class_kinds(max_id + 1);
  for (ClassId c : reach) {
    const auto& opts = options_[c];
    if (opts.size() < 2) continue;
    auto [it, fresh] =
        gene_of_role.emplace(roles.role(c, kRoleDepth), static_cast<int>(gene_sizes_.size()));
    if (fresh) {
      gene_sizes_.push_back(0);
      kinds.emplace_back();
      kind_info.emplace_back();
    }
    const int g = it->second;
    gene_[c] = g;
    uint64_t prev = 0;
    uint64_t occurrence = 0;
    uint32_t op_rank = 0;
    for (size_t k = 0; k < opts.size(); ++k) {
      const std::string_view op = eg.node(opts[k]).op->name;
      op_rank = k > 0 && op == eg.node(opts[k - 1]).op->name ? op_rank + 1 : 0;
      const uint64_t sig = option_signature(eg, opts[k]);
      occurrence = k > 0 && sig == prev ? occurrence + 1 : 0;
      prev = sig;
      const uint64_t kind = mix(sig, occurrence);
      class_kinds[c].push_back(kind);
      if (kinds[g].emplace(kind, static_cast<uint32_t>(kinds[g].size())).second)
        kind_info[g].push_back(Kind{op, op_rank});
    }
    gene_sizes_[g] = static_cast<uint32_t>(kinds[g].size());
  }
  for (ClassId c : reach) {
    if (gene_[c] < 0) continue;
    const auto& gk = kinds[gene_[c]];
    const auto& info = kind_info[gene_[c]];
    const std::vector<ENodeId>& opts = options_[c];
    const size_t count = opts.size();
    std::vector<uint32_t>& pick = pick_[c];
    pick.resize(gene_sizes_[gene_[c]]);
    for (uint32_t v = 0; v < pick.size(); ++v) {
      // Options are sorted by op name: the same op's options are one run.
      size_t first = count, n = 0;
      for (size_t k = 0; k < count; ++k)
        if (eg.node(opts[k]).op->name == info[v].op) {
          if (first == count) first = k;
          ++n;
        }
      pick[v] = static_cast<uint32_t>(n > 0 ? first + info[v].rank % n : v % count);
    }
    for (size_t k = 0; k < count; ++k)
      pick[gk.at(class_kinds[c][k])] = static_cast<uint32_t>(k);
  }
}

double SearchSpace::log10_size() const {
  double s = 0;
  for (uint32_t n : gene_sizes_)
    s += std::log10(static_cast<double>(n));
  return s;
}

Genome SearchSpace::first_genome() const { return Genome(gene_sizes_.size(), 0); }

Genome SearchSpace::fewest_kernels_genome(LibrarySeed mode) const {
  return fewest_kernels_impl(mode, nullptr);
}

void SearchSpace::set_seed_bias(SeedBias bias) {
  SeedBias b;
  b.penalty = bias.penalty;
  for (ClassId c : bias.avoid)
    b.avoid.insert(eg_->find(c));
  for (ClassId c : bias.free_folds)
    b.free_folds.insert(eg_->find(c));
  bias_ = std::move(b);
}

void SearchSpace::set_free_folds(const std::set<ClassId>& classes) {
  free_folds_.clear();
  for (ClassId c : classes)
    free_folds_.insert(eg_->find(c));
}

void SearchSpace::set_seed_byte_cost(double per_byte, const std::function<double(ENodeId)>& work) {
  byte_extra_.clear();
  if (!(per_byte > 0) && !work) return;
  byte_extra_.assign(eg_->num_nodes(), 0.0);
  std::unordered_map<ClassId, double> bytes_of;  // canonical class -> bytes at constant shape
  auto bytes = [&](ClassId c) {
    c = eg_->find(c);
    auto it = bytes_of.find(c);
    if (it != bytes_of.end()) return it->second;
    const Expr count = numel(eg_->shape(c));
    const DType t = eg_->dtype(c);
    const bool whole = count.is_const() && count.as_const() > 0 &&
                       (!is_block(t) || count.as_const() % block_size(t) == 0);
    return bytes_of[c] = whole ? static_cast<double>(storage_bytes(t, count.as_const())) : 0.0;
  };
  for (const std::vector<ENodeId>& opts : options_)
    for (ENodeId n : opts) {
      double total = 0;
      if (per_byte > 0)
        for (ClassId ch : eg_->node(n).children)
          total += bytes(ch);
      byte_extra_[n] = per_byte * total + (work ? work(n) : 0.0);
    }
}

Genome SearchSpace::biased_genome() const {
  return fewest_kernels_impl(LibrarySeed::Use, bias_ ? &*bias_ : nullptr);
}

Genome SearchSpace::fewest_kernels_impl(LibrarySeed mode, const SeedBias* bias) const {
  const size_t n = options_.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> cost(n, inf);
  std::vector<int> best(n, -1);
  // Fixpoint over every class (children may come after parents in id order; an option on a
  // cycle stays infinite while an acyclic one exists).
  for (size_t pass = 0; pass < n + 1; ++pass) {
    bool changed = false;
    for (ClassId c = 0; c < n; ++c) {
      const std::vector<ENodeId>& opts = options_[c];
      for (size_t k = 0; k < opts.size(); ++k) {
        const ENode& e = eg_->node(opts[k]);
        double w = option_cost(c, opts[k], mode, bias);
        for (ClassId ch : e.children)
          w += cost[eg_->find(ch)];
        if (w < cost[c]) {
          cost[c] = w;
          best[c] = static_cast<int>(k);
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  // Each gene takes the value that costs its classes least in total: a class pays, for the option
  // the value picks there (values are taken modulo its option count), that option's cost above
  // its best one. Shared genes cover alike classes whose option lists may differ.
  std::vector<std::vector<double>> excess(gene_sizes_.size());
  for (size_t i = 0; i < excess.size(); ++i)
    excess[i].assign(gene_sizes_[i], 0.0);
  for (ClassId c = 0; c < n; ++c) {
    if (gene_[c] < 0 || best[c] < 0) continue;
    const std::vector<ENodeId>& opts = options_[c];
    std::vector<double>& ex = excess[gene_[c]];
    for (size_t v = 0; v < ex.size(); ++v) {
      const ENode& e = eg_->node(opts[pick_[c][v]]);
      double w = option_cost(c, opts[pick_[c][v]], mode, bias);
      for (ClassId ch : e.children)
        w += cost[eg_->find(ch)];
      ex[v] += w == inf ? 1e300 : (w - cost[c]) / std::max(cost[c], 1.0);
    }
  }
  Genome g(gene_sizes_.size(), 0);
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = static_cast<uint32_t>(std::min_element(excess[i].begin(), excess[i].end()) -
                                 excess[i].begin());
  // The tree costs above count a shared class once per use and cannot see that two choices need
  // the same class (or force two versions of one value): a descent over genes, one at a time, on
  // the program's true cost (each class it runs counted once) keeps every change that lowers it.
  double lowest = program_cost_impl(g, mode, bias);
  gene_descent(g, lowest, mode, bias);
  // Pairs whose first change costs at most a kernel a class, then (from there, keeping only what
  // lowers the cost further) at most two; after each, single changes again (a pair that paid may
  // open them). The narrow pass first: the wide one takes the first pair that pays, which could
  // pre-empt a better narrow one.
  for (double width : {1.0, 2.0})
    if (pair_descent(g, lowest, mode, bias, width)) gene_descent(g, lowest, mode, bias);
  return g;
}

void SearchSpace::gene_descent(Genome& g, double& lowest, LibrarySeed mode,
                               const SeedBias* bias) const {
  for (int round = 0; round < 16; ++round) {
    bool improved = false;
    for (size_t i = 0; i < g.size(); ++i) {
      uint32_t keep = g[i];
      for (uint32_t v = 0; v < gene_sizes_[i]; ++v) {
        if (v == keep) continue;
        g[i] = v;
        const double c = program_cost_impl(g, mode, bias);
        if (c < lowest - 1e-9) {
          lowest = c;
          keep = v;
          improved = true;
        }
      }
      g[i] = keep;
    }
    if (!improved) break;
  }
}

bool SearchSpace::pair_descent(Genome& g, double& lowest, LibrarySeed mode, const SeedBias* bias,
                               double width) const {
  // Partners of gene A under g: the genes of the classes g runs that read what g's options of
  // A's classes read. An epilogue that stores a residual stream pays only when the kernel that
  // read the stream's pieces reads the stored stream instead: neither change lowers the cost
  // alone, and the first costs nothing (a plateau). Likewise gate and up over one quantized
  // activation: either moved to the integer form alone still needs the f32 value.
  const size_t n = options_.size(), genes = gene_sizes_.size();
  std::vector<std::vector<ClassId>> members(genes);
  for (ClassId c = 0; c < n; ++c)
    if (gene_[c] >= 0) members[gene_[c]].push_back(c);
  std::vector<std::vector<int>> readers;  // class -> genes of the classes g runs that read it
  auto index_readers = [&] {
    readers.assign(n, {});
    for (ClassId c : topo_order(g)) {
      if (gene_[c] < 0) continue;
      for (ClassId ch : eg_->node(chosen(g, c)).children) {
        const ClassId k = eg_->find(ch);
        if (k < n) readers[k].push_back(gene_[c]);
      }
    }
  };
  index_readers();
  bool any = false;
  for (size_t a = 0; a < genes; ++a) {
    std::vector<int> partners;
    for (ClassId m : members[a])
      for (ClassId ch : eg_->node(chosen(g, m)).children) {
        const ClassId k = eg_->find(ch);
        if (k < n) partners.insert(partners.end(), readers[k].begin(), readers[k].end());
      }
    std::sort(partners.begin(), partners.end());
    partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
    partners.erase(std::remove(partners.begin(), partners.end(), static_cast<int>(a)),
                   partners.end());
    if (partners.empty()) continue;
    const uint32_t keep_a = g[a];
    bool taken = false;
    for (uint32_t va = 0; va < gene_sizes_[a] && !taken; ++va) {
      if (va == keep_a) continue;
      g[a] = va;
      // Only a change that costs at most about `width` kernels a class on its own (two GEMVs that
      // read one value: either moved to another form alone keeps the old value's kernel; a
      // projection that stores the residual stream while the next layer still reads its pieces
      // keeps both the old product and the add: two). With only a width of one, a 30-layer
      // SmolLM2-shaped q4_1 seed given cuda.FusedQ8 stopped at a separate Add after most down
      // projections: 363 kernels on the critical path against 339 (335 with a second pass at
      // two; tests/cuda/fused_q8_test.cpp).
      if (program_cost_impl(g, mode, bias) >
          lowest + width * static_cast<double>(members[a].size()) + 1e-9)
        continue;
      for (size_t pi = 0; pi < partners.size() && !taken; ++pi) {
        const int b = partners[pi];
        const uint32_t keep_b = g[b];
        for (uint32_t vb = 0; vb < gene_sizes_[b] && !taken; ++vb) {
          if (vb == keep_b) continue;
          // Only a partner value that reads what A's classes now compute.
          bool reads_a = false;
          for (size_t i = 0; i < members[b].size() && !reads_a; ++i) {
            const ClassId m = members[b][i];
            for (ClassId ch : eg_->node(options_[m][pick_[m][vb]]).children)
              reads_a =
                  reads_a || (eg_->find(ch) < n && gene_[eg_->find(ch)] == static_cast<int>(a));
          }
          if (!reads_a) continue;
          g[b] = vb;
          const double c = program_cost_impl(g, mode, bias);
          if (c < lowest - 1e-9) {
            lowest = c;
            taken = true;
          }
        }
        if (!taken) g[b] = keep_b;
      }
    }
    if (taken) {
      any = true;
      index_readers();
    } else {
      g[a] = keep_a;
    }
  }
  return any;
}

double SearchSpace::option_cost(ClassId c, ENodeId n, LibrarySeed mode,
                                const SeedBias* bias) const {
  const ENode& e = eg_->node(n);
  if (bias) {
    double extra = 0;
    for (ClassId ch : e.children)
      if (bias->avoid.count(eg_->find(ch))) extra += bias->penalty;
    if (extra > 0) return option_cost(c, n, mode, nullptr) + extra;
  }
  // A Fold leaf (a childless option the seeds avoid): free where the class's fold is.
  if (e.children.empty() && e.op->seed_cost >= kAvoided && !is_op(e.op, OpKind::Input)) {
    const ClassId cc = eg_->find(c);
    if (free_folds_.count(cc) || (bias && bias->free_folds.count(cc))) return 0;
    for (ENodeId o : options_[c])
      if (eg_->node(o).op->fold_preferred) return 0;
  }
  double extra = e.op->seed_extra ? e.op->seed_extra(*eg_, n) : 0.0;
  if (!byte_extra_.empty() && !is_op(e.op, OpKind::Input)) extra += byte_extra_[n];
  return seed_cost(e.op, mode) + extra;
}

bool SearchSpace::has_library_calls() const {
  for (const std::vector<ENodeId>& opts : options_)
    for (ENodeId n : opts)
      if (eg_->node(n).op->library_call) return true;
  return false;
}

double SearchSpace::program_cost(const Genome& g, LibrarySeed mode) const {
  return program_cost_impl(g, mode, nullptr);
}

double SearchSpace::program_cost_impl(const Genome& g, LibrarySeed mode,
                                      const SeedBias* bias) const {
  if (path_weight_ > 0) return cost_with_chain(g, mode, bias);
  // The seeds' descents call this thousands of times: the classes g runs are visited once each,
  // depth first, with scratch kept per thread and a visit stamp instead of clearing it. (The
  // order of the sum differs between genomes, as the topological order did before; no cycle is
  // checked: pruning made every choice acyclic, and topo_order still reports one.)
  thread_local std::vector<uint32_t> seen;
  thread_local uint32_t stamp = 0;
  thread_local std::vector<ClassId> stack;
  const uint32_t now = next_stamp(seen, stamp, options_.size());
  double total = 0;
  stack.clear();
  for (ClassId r : roots_)
    if (seen[r] != now) {
      seen[r] = now;
      stack.push_back(r);
    }
  while (!stack.empty()) {
    const ClassId c = stack.back();
    stack.pop_back();
    const ENodeId o = chosen(g, c);
    total += option_cost(c, o, mode, bias);
    for (ClassId ch : eg_->node(o).children) {
      const ClassId k = eg_->find(ch);
      if (seen[k] != now) {
        seen[k] = now;
        stack.push_back(k);
      }
    }
  }
  return total;
}

double SearchSpace::cost_with_chain(const Genome& g, LibrarySeed mode, const SeedBias* bias) const {
  // As program_cost_impl, but each class is finished after its children (the program is acyclic:
  // a class met again is either finished or not yet started), so its chain, the most kernels on
  // one path from an input to it, is known from theirs.
  thread_local std::vector<uint32_t> seen;
  thread_local std::vector<double> chain;
  thread_local uint32_t stamp = 0;
  thread_local std::vector<std::pair<ClassId, bool>> stack;
  const uint32_t now = next_stamp(seen, stamp, options_.size());
  if (chain.size() < options_.size()) chain.assign(options_.size(), 0.0);
  double total = 0, longest = 0;
  stack.clear();
  for (ClassId r : roots_)
    stack.emplace_back(r, false);
  while (!stack.empty()) {
    const auto [c, children_done] = stack.back();
    stack.pop_back();
    const ENodeId o = chosen(g, c);
    if (children_done) {
      const double cost = option_cost(c, o, mode, bias);
      total += cost;
      double deepest = 0;
      for (ClassId ch : eg_->node(o).children)
        deepest = std::max(deepest, chain[eg_->find(ch)]);
      chain[c] = deepest + (cost > 0 ? 1.0 : 0.0);
      longest = std::max(longest, chain[c]);
      continue;
    }
    if (seen[c] == now) continue;
    seen[c] = now;
    stack.emplace_back(c, true);
    for (ClassId ch : eg_->node(o).children) {
      const ClassId k = eg_->find(ch);
      if (seen[k] != now) stack.emplace_back(k, false);
    }
  }
  return total + path_weight_ * longest;
}

Genome SearchSpace::random_genome(Rng& rng) const {
  Genome g(gene_sizes_.size());
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = static_cast<uint32_t>(rng() % gene_sizes_[i]);
  return g;
}

void SearchSpace::mutate(Genome& g, int count, Rng& rng) const {
  if (g.empty()) return;
  for (int i = 0; i < count; ++i) {
    size_t k = rng() % g.size();
    uint32_t n = gene_sizes_[k];
    if (n < 2) continue;
    g[k] = static_cast<uint32_t>((g[k] + 1 + rng() % (n - 1)) % n);
  }
}

const std::vector<ENodeId>& SearchSpace::options(ClassId c) const {
  c = eg_->find(c);
  LUMINAL_ASSERT(c < options_.size() && !options_[c].empty(), "class not in the search space");
  return options_[c];
}

int SearchSpace::gene_of(ClassId c) const { return gene_[eg_->find(c)]; }

ENodeId SearchSpace::option_for(ClassId c, uint32_t value) const {
  c = eg_->find(c);
  const auto& opts = options(c);
  if (gene_[c] < 0) return opts[0];
  return opts[pick_[c][value % pick_[c].size()]];
}

Genome SearchSpace::best_scoring_genome(const std::function<double(ENodeId)>& score) const {
  std::vector<std::vector<double>> total(gene_sizes_.size());
  for (size_t i = 0; i < total.size(); ++i)
    total[i].assign(gene_sizes_[i], 0.0);
  for (ClassId c = 0; c < gene_.size(); ++c) {
    if (gene_[c] < 0) continue;
    std::vector<double>& t = total[static_cast<size_t>(gene_[c])];
    for (uint32_t v = 0; v < t.size(); ++v)
      t[v] += score(option_for(c, v));
  }
  Genome g(gene_sizes_.size(), 0);
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = static_cast<uint32_t>(std::max_element(total[i].begin(), total[i].end()) -
                                 total[i].begin());
  return g;
}

ENodeId SearchSpace::chosen(const Genome& g, ClassId c) const {
  c = eg_->find(c);
  const int gene = gene_[c];
  return option_for(c, gene < 0 ? 0 : g[static_cast<size_t>(gene)]);
}

std::vector<ClassId> SearchSpace::topo_order(const Genome& g) const {
  std::vector<ClassId> order;
  std::vector<uint8_t> state(options_.size(), 0);  // 0 new, 1 open, 2 done
  std::vector<std::pair<ClassId, size_t>> stack;   // class, next child
  for (ClassId r : roots_) {
    if (state[r]) continue;
    stack.emplace_back(r, 0);
    state[r] = 1;
    while (!stack.empty()) {
      auto& [c, next] = stack.back();
      const ENode& n = eg_->node(chosen(g, c));
      if (next < n.children.size()) {
        ClassId ch = eg_->find(n.children[next++]);
        if (state[ch] == 1) throw Error("extraction: cycle through class %" + std::to_string(ch));
        if (state[ch] == 0) {
          state[ch] = 1;
          stack.emplace_back(ch, 0);
        }
        continue;
      }
      state[c] = 2;
      order.push_back(c);
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace luminal
