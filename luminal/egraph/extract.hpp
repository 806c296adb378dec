#pragma once
// Extraction: choosing one e-node per class, and the genes the search varies. A SearchSpace is
// built after prune(); a Genome picks one e-node per reachable class.
// Example: examples/snippets/egraph/extract.cpp.
//
// Every class reachable from the roots with more than one option gets a gene; classes that came
// from alike HLIR nodes (same op and attributes up to input labels, e.g. the same op in every
// layer of a model) share one gene, so repeated layers do not grow the search. Options are
// ordered by op name; a gene's values are the kinds of option its classes offer (op and
// attributes), so one value picks the same kind of option in every layer; a class that lacks
// that kind takes an option of the same op, else the value modulo its option count. Any genome is a
// valid choice set because pruning made every option executable and every choice acyclic. Classes
// with one option have no gene.
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "luminal/egraph/egraph.hpp"

namespace luminal {

using Genome = std::vector<uint32_t>;
using Rng = std::mt19937_64;

class SearchSpace {
 public:
  SearchSpace(const EGraph& eg, std::vector<ClassId> roots);

  const EGraph& egraph() const { return *eg_; }
  const std::vector<ClassId>& roots() const { return roots_; }
  /// Number of genes (shared choices with more than one option).
  size_t num_genes() const { return gene_sizes_.size(); }
  /// Options of each gene.
  const std::vector<uint32_t>& gene_sizes() const { return gene_sizes_; }
  /// log10 of the number of distinct genomes.
  double log10_size() const;

  Genome first_genome() const;  // every gene 0 (its first kind of option)
  /// The genome that, class by class, picks the option with the fewest non-Input e-nodes below
  /// it (tree cost: an e-node counts 1 plus its children's costs), each shared gene taking the
  /// option most of its classes prefer, then improved gene by gene on program_cost (rounds of
  /// trying every value of every gene, until one changes nothing or 16 have run), then by pairs
  /// of genes (pair_descent: a change that costs at most one, then two, kernels a class alone, with
  /// a partner's that reads what it computes) and gene by gene again. It favours the largest fused
  /// regions and library ops: the search's starting point for programs of many small
  /// kernels, which random genomes rarely reach.
  /// `mode` says how library calls (OpDef::library_call) count: Use, one each like a kernel (the
  /// first seed); Avoid, kAvoided each (the second seed: the gene descent on program_cost drops
  /// every one a change of one gene can replace; a shared gene whose other values some class
  /// cannot take may keep one); Prefer, the ops they replace (OpDef::library_replaces) cost
  /// kAvoided each instead (the third seed: library calls wherever one can stand, with the copies
  /// that make an operand's layout one the library takes).
  enum class LibrarySeed { Use, Avoid, Prefer };
  Genome fewest_kernels_genome(LibrarySeed mode = LibrarySeed::Use) const;
  /// A bias for one more seed, for a rewrite that pays only where several classes take it
  /// together (the compiler's horizontal fusion: one fused matmul replaces several only when
  /// every reader of each reads the fused one): an option costs `penalty` more per child in
  /// `avoid`, and a Fold leaf of a class in `free_folds` costs nothing (a fold that replaces the
  /// weights it reads, such as their concatenation).
  struct SeedBias {
    std::set<ClassId> avoid;
    std::set<ClassId> free_folds;
    double penalty = 1.0;
  };
  /// Sets the bias (classes are canonicalised); biased_genome() is the fewest-kernels genome
  /// (LibrarySeed::Use) under it, descent included.
  void set_seed_bias(SeedBias bias);
  bool has_seed_bias() const { return bias_.has_value(); }
  const std::optional<SeedBias>& seed_bias() const { return bias_; }
  Genome biased_genome() const;
  /// Classes whose Fold leaf costs nothing in every seed (load-time folding's constants: a value
  /// that reads no input, computed once; compiler/fold.hpp).
  void set_free_folds(const std::set<ClassId>& classes);
  /// Each option's seed cost grows by `per_byte` times the bytes of the values it reads (its
  /// children's classes at constant shapes; a child of a symbolic shape counts 0), so the seeds
  /// weigh memory traffic beside kernel counts (Backend::seed_byte_cost; 0, the default: kernels
  /// only).
  /// `work` (optional): each option's price beyond that (Backend::seed_work), added likewise.
  void set_seed_byte_cost(double per_byte, const std::function<double(ENodeId)>& work = nullptr);
  /// The program cost grows by `weight` times its longest chain's cost (the seed costs of the
  /// options along the most expensive chain of data dependencies), so the seeds weigh the kernels
  /// that run one after another beside the kernel count (Backend::seed_path_weight; 0, the
  /// default: the count only).
  void set_seed_path_weight(double weight) { path_weight_ = weight; }
  /// Whether some option of some class is a library call (OpDef::library_call).
  bool has_library_calls() const;
  /// The cost of the program `g` picks: the seed costs of the e-nodes it runs (each class once;
  /// inputs free), about its number of kernels, with `mode` as above (and the longest chain's
  /// cost times set_seed_path_weight's weight).
  double program_cost(const Genome& g, LibrarySeed mode = LibrarySeed::Use) const;
  /// The seed cost of an avoided library call: more than any program of kernels.
  static constexpr double kAvoided = 1e9;
  Genome random_genome(Rng& rng) const;
  /// Changes `count` random genes to a different value (where they have one).
  void mutate(Genome& g, int count, Rng& rng) const;

  /// The e-node chosen for class `c` by `g`.
  ENodeId chosen(const Genome& g, ClassId c) const;
  /// Classes reachable from the roots under `g`, children before parents (execution order).
  std::vector<ClassId> topo_order(const Genome& g) const;

  /// Options of a class (canonical order) and its gene (-1 when it has one option).
  const std::vector<ENodeId>& options(ClassId c) const;
  int gene_of(ClassId c) const;
  /// The option that value `value` of class c's gene picks there.
  ENodeId option_for(ClassId c, uint32_t value) const;
  /// The genome whose every gene takes the value whose options score highest in total over the
  /// classes sharing it (tests and benchmarks pick programs by op this way).
  Genome best_scoring_genome(const std::function<double(ENodeId)>& score) const;

 private:
  /// Option n of class c in the seed: seed_cost, but a Fold leaf (a childless option the seed
  /// avoids) costs nothing beside an op meant to run once per load (OpDef::fold_preferred) or
  /// for a class of free_folds_.
  double option_cost(ClassId c, ENodeId n, LibrarySeed mode, const SeedBias* bias) const;
  Genome fewest_kernels_impl(LibrarySeed mode, const SeedBias* bias) const;
  /// Rounds of trying every value of every gene, keeping each that lowers the program cost
  /// (`lowest`, g's), until a round changes nothing or 16 have run.
  void gene_descent(Genome& g, double& lowest, LibrarySeed mode, const SeedBias* bias) const;
  /// After the one-gene descent: changes of two genes at once (a gene and a partner, one whose
  /// classes read what the first one's options read) that lower the program cost, kept; true if
  /// any was.
  bool pair_descent(Genome& g, double& lowest, LibrarySeed mode, const SeedBias* bias,
                    double width) const;
  double program_cost_impl(const Genome& g, LibrarySeed mode, const SeedBias* bias) const;
  /// program_cost_impl with set_seed_path_weight's term: the option costs plus the weight times
  /// the most kernels (options of nonzero cost) on one chain of data dependencies, in one pass.
  double cost_with_chain(const Genome& g, LibrarySeed mode, const SeedBias* bias) const;

  const EGraph* eg_;
  std::vector<ClassId> roots_;
  std::optional<SeedBias> bias_;
  std::set<ClassId> free_folds_;    // canonical
  std::vector<double> byte_extra_;  // per e-node: set_seed_byte_cost's additions (empty: none)
  double path_weight_ = 0;          // set_seed_path_weight
  std::vector<uint32_t> gene_sizes_;
  // indexed by canonical class id
  std::vector<std::vector<ENodeId>> options_;
  std::vector<int> gene_;
  // per class with a gene: the option index each value of its gene picks
  std::vector<std::vector<uint32_t>> pick_;
};

}  // namespace luminal
