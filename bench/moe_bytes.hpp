#pragma once
// The weight bytes a mixture-of-experts decode step reads, against the active-parameter floor
// (bench_moe_cpu on the CPU, bench_cuda's qwen3moe on CUDA; header-only, bench/ only).
//
// Read: every persistent weight input of the decode program in full, except one that only expert
// ops read as their weight (input 2: k of its E experts, one token's choice) and a table that only
// row gathers read (input 1: the rows gathered). Floor: every weight of the graph, the stacked
// experts at k of E and the embedding one row.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/io/hf_config.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/program/llir.hpp"

namespace luminal::bench {

/// The ops of a backend that read a weight by expert id (their input 2), and that gather a
/// table's rows.
struct MoeOps {
  std::vector<std::string_view> experts;  // every form: the cast-storing ones too
  std::string_view qgather;               // the quantized gather ("Gather" always counts)

  bool reads_by_expert(std::string_view op) const {
    return std::find(experts.begin(), experts.end(), op) != experts.end();
  }
};

inline double storage_of(DType t, const Shape& shape) {
  return static_cast<double>(storage_bytes(t, shape).eval({}));
}

/// The share of the experts one token reads (1 without experts).
inline double expert_share(const io::ModelConfig& cfg) {
  return cfg.num_experts > 0
             ? static_cast<double>(cfg.num_experts_per_tok) / static_cast<double>(cfg.num_experts)
             : 1.0;
}

inline double program_weight_bytes(const LlirGraph& p, const io::ModelConfig& cfg,
                                   const MoeOps& ops) {
  double total = 0;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const LlirNode& n = p.nodes[i];
    if (n.op->name != "Input" || !n.attrs.persist) continue;
    if (!models::is_weight(n.attrs.label) && !n.attrs.label.starts_with("#fold/")) continue;
    bool expert_only = true, gather_only = true;
    double gathered = 0;
    for (const LlirNode& c : p.nodes)
      for (size_t j = 0; j < c.inputs.size(); ++j) {
        if (c.inputs[j] != static_cast<int>(i)) continue;
        const std::string_view op(c.op->name);
        expert_only &= ops.reads_by_expert(op) && j == 2;
        gather_only &= (op == "Gather" || op == ops.qgather) && j == 1;
        gathered += storage_of(c.attrs.dtype, c.attrs.shape);
      }
    const double bytes = storage_of(n.attrs.dtype, n.attrs.shape);
    total += expert_only ? bytes * expert_share(cfg) : gather_only ? gathered : bytes;
  }
  return total;
}

inline double floor_weight_bytes(const Graph& g, const io::ModelConfig& cfg) {
  double total = 0;
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    if (!models::is_weight(n.label)) continue;
    const double bytes = storage_of(n.dtype, n.shape);
    if (n.label.ends_with("experts.gate_up_proj") || n.label.ends_with("experts.down_proj"))
      total += bytes * expert_share(cfg);
    else if (n.label == "model.embed_tokens.weight" && !cfg.tie_word_embeddings)
      total += bytes / static_cast<double>(cfg.vocab_size);
    else
      total += bytes;
  }
  return total;
}

}  // namespace luminal::bench
