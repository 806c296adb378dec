#include "luminal/egraph/extract.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "luminal/core/error.hpp"
#include "luminal/core/hash.hpp"

namespace luminal {

namespace {

uint64_t mix(uint64_t h, uint64_t v) { return hash_combined(h, v); }

// What an e-node looks like locally: op, attributes without labels, arity.
uint64_t option_signature(const EGraph& eg, ENodeId n) {
  const ENode& e = eg.node(n);
  uint64_t h = hash_string(e.op->name);
  h = mix(h, eg.attrs(e.attr).structural_hash());
  return mix(h, e.children.size());
}

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
    // Canonical order: by op name, then by a hash of the option's attributes.
    std::vector<std::pair<uint64_t, ENodeId>> keyed;
    for (ENodeId n : opts)
      keyed.emplace_back(option_signature(eg, n), n);
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      std::string_view na = eg.node(a.second).op->name, nb = eg.node(b.second).op->name;
      return na != nb ? na < nb : a.first < b.first;
    });
    for (auto& [k, n] : keyed) {
      options_[c].push_back(n);
      for (ClassId ch : eg.node(n).children)
        if (!seen[eg.find(ch)]) stack.push_back(eg.find(ch));
    }
  }
  std::sort(reach.begin(), reach.end());
  // Classes that play the same role share a gene: the role of a class is the HLIR e-node it came
  // from (op and attributes without labels), so the same op at the same place in every layer of a
  // model is one choice, however many layers there are. Option lists of such classes can differ
  // in length (deeper layers may have more fusion options); a gene's value is taken modulo each
  // class's option count, and options are ordered by op name so equal indices mean alike choices.
  std::unordered_map<uint64_t, int> gene_of_sig;
  for (ClassId c : reach) {
    const auto& opts = options_[c];
    if (opts.size() < 2) continue;
    uint64_t sig = 0;
    bool found = false;
    ENodeId origin = 0;
    for (ENodeId n : eg.eclass(c).nodes)
      if (eg.node(n).op->is_hlir && (!found || n < origin)) {
        origin = n;
        found = true;
      }
    if (found) {
      sig = option_signature(eg, origin);
    } else {
      sig = opts.size();
      for (ENodeId n : opts)
        sig = mix(sig, option_signature(eg, n));
    }
    auto [it, fresh] = gene_of_sig.emplace(sig, static_cast<int>(gene_sizes_.size()));
    if (fresh) gene_sizes_.push_back(0);
    gene_sizes_[it->second] = std::max<uint32_t>(gene_sizes_[it->second], opts.size());
    gene_[c] = it->second;
  }
}

double SearchSpace::log10_size() const {
  double s = 0;
  for (uint32_t n : gene_sizes_)
    s += std::log10(static_cast<double>(n));
  return s;
}

Genome SearchSpace::first_genome() const { return Genome(gene_sizes_.size(), 0); }

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

uint64_t SearchSpace::hash(const Genome& g) {
  uint64_t h = g.size();
  for (uint32_t v : g)
    h = mix(h, v);
  return h;
}

const std::vector<ENodeId>& SearchSpace::options(ClassId c) const {
  c = eg_->find(c);
  LUMINAL_ASSERT(c < options_.size() && !options_[c].empty(), "class not in the search space");
  return options_[c];
}

int SearchSpace::gene_of(ClassId c) const { return gene_[eg_->find(c)]; }

ENodeId SearchSpace::chosen(const Genome& g, ClassId c) const {
  c = eg_->find(c);
  const auto& opts = options(c);
  int gene = gene_[c];
  if (gene < 0) return opts[0];
  return opts[g[static_cast<size_t>(gene)] % opts.size()];
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
