#pragma once
// A SmolLM2-shaped q4_1 decode step (30 layers, q4_1 projections, the tied embedding in q8_0, 256
// cache slots, greedy token) under the CUDA rules with load-time folding, as a search on the
// device builds it, and what a program's folds add to memory as the search counts it against
// fold_limit (compiler/search.cpp). No GPU: the rules and the folds' programs only.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "cuda/cuda_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/compiler/fold.hpp"
#include "luminal/compiler/fold_repair.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/sampling.hpp"

namespace luminal::testing {

inline Graph smollm2_q4_1_decode() {
  const models::LlamaSize size = models::smollm2_135m_size();
  models::DecoderShape shape;
  shape.slots = 256;
  shape.max_step = 1;
  shape.block_weights =
      models::matrix_block_types(models::llama_config(size), shape, [](std::string_view label) {
        return label.find("embed") != std::string_view::npos ? DType::Q8_0 : DType::Q4_1;
      });
  models::Decoder d = models::build_decoder(models::llama_config(size), shape);
  nn::greedy_token(d.last_logits).output("token");
  return std::move(d.graph);
}

/// `g`'s search space over the decode bucket (s 1, c 1..256) with folds offered.
struct FoldedSpace {
  explicit FoldedSpace(const Graph& g) {
    for (NodeId id : g.inputs()) {
      const Node& n = g.node(id);
      if (numel(n.shape).is_const())
        input_bytes[n.label] = storage_bytes(n.dtype, n.shape).as_const();
    }
    Facts facts = g.dim_facts();
    facts["s"] = {1, 1};
    facts["c"] = {1, 256};
    fo.on = true;
    b = build_search_space(g, rules, facts, {}, fo);
    resolver = std::make_unique<FoldResolver>(*b.space, b.folds);
  }
  /// As the search counts it (fold_limit 0): the folds' bytes less those of the weights that
  /// only folds read; constants under fold_min_bytes not counted.
  FoldExcess excess(const LlirGraph& l) const {
    FoldExcess e;
    std::set<std::string> read, freed;
    for (const LlirNode& n : l.nodes)
      if (is_op(n.op, OpKind::Input) && !is_fold_label(n.attrs.label)) read.insert(n.attrs.label);
    for (const std::string& p : FoldResolver::placeholders(l)) {
      const FoldProgram& f = resolver->program(p);
      if (f.inputs.empty() && f.bytes < fo.min_bytes) continue;
      e.bytes += static_cast<int64_t>(f.bytes);
      for (const std::string& in : f.inputs)
        (read.count(in) ? e.kept : freed).insert(in);
    }
    for (const std::string& in : freed)
      e.bytes -= input_bytes.at(in);
    return e;
  }

  CudaRulesOnly rules{true};
  FoldOptions fo;
  std::map<std::string, int64_t> input_bytes;
  BuiltSpace b;
  std::unique_ptr<FoldResolver> resolver;
};

}  // namespace luminal::testing
