#include "luminal/compiler/fold_repair.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "luminal/egraph/op_def.hpp"

namespace luminal {

namespace {

/// The genes of the classes with an option that reads one of `weights` (an Input of that label)
/// and of the fold leaves of `program` that read one of them.
std::set<size_t> genes_near(
    const SearchSpace& space, const FoldSpace& folds, const LlirGraph& program,
    const std::set<std::string>& weights,
    const std::function<std::vector<std::string>(const std::string&)>& fold_inputs) {
  const EGraph& eg = space.egraph();
  std::set<size_t> genes;
  auto add = [&](ClassId c) {
    if (const int gene = space.gene_of(c); gene >= 0) genes.insert(static_cast<size_t>(gene));
  };
  for (ENodeId n = 0; n < eg.num_nodes(); ++n) {
    if (eg.is_removed(n) || !is_op(eg.node(n).op, OpKind::Input)) continue;
    if (!weights.count(eg.attrs_of(n).label)) continue;
    for (ENodeId p : eg.eclass(eg.class_of(n)).parents)
      if (!eg.is_removed(p)) add(eg.class_of(p));
  }
  for (const std::string& p : FoldResolver::placeholders(program)) {
    auto leaf = folds.leaves.find(p);
    if (leaf == folds.leaves.end()) continue;
    for (const std::string& in : fold_inputs(p))
      if (weights.count(in)) add(leaf->second);
  }
  return genes;
}

}  // namespace

std::optional<FoldRepair> repair_fold_excess(
    const SearchSpace& space, const FoldSpace& folds, Genome g,
    const std::function<FoldExcess(const LlirGraph&)>& excess, int max_changes, int tries) {
  // (the weights each fold reads: its program, resolved as the search's resolver does)
  FoldResolver resolver(space, folds);
  auto fold_inputs = [&](const std::string& p) { return resolver.program(p).inputs; };
  LlirGraph program = to_llir(space, g);
  FoldExcess now = excess(program);
  for (int changes = 0; changes <= max_changes; ++changes) {
    if (now.bytes <= 0) return FoldRepair{std::move(g), changes};
    if (changes == max_changes) break;
    std::vector<std::pair<double, Genome>> near;
    for (size_t gene : genes_near(space, folds, program, now.kept, fold_inputs))
      for (uint32_t v = 0; v < space.gene_sizes()[gene]; ++v) {
        if (v == g[gene]) continue;
        Genome n = g;
        n[gene] = v;
        near.emplace_back(space.program_cost(n), std::move(n));
      }
    std::stable_sort(near.begin(), near.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    bool moved = false;
    const std::string text = program.to_text();
    int tried = 0;
    for (size_t i = 0; i < near.size() && tried < tries; ++i) {
      LlirGraph p = to_llir(space, near[i].second);
      if (p.to_text() == text) continue;  // (a gene no reachable class reads: the same program)
      ++tried;
      FoldExcess e = excess(p);
      if (e.bytes < now.bytes) {
        g = std::move(near[i].second);
        program = std::move(p);
        now = std::move(e);
        moved = true;
        break;
      }
    }
    if (!moved) break;
  }
  return std::nullopt;
}

}  // namespace luminal
