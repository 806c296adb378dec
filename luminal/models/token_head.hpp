#pragma once
// The token head of a causal LM: what its graph computes from the last position's logits, as
// output "token" (I32 [1]), and whether a SamplingConfig can run on it. SamplerShape::needed_by
// gives the smallest head for a config, add_token_head adds it to a decoder's graph, and
// TokenHead::check throws, naming what is missing, for a config the head cannot serve.
// Example: examples/snippets/models/token_head.cpp (the heads of greedy and top-p configs).
//
// Without the sampler the head is nn::greedy_token (the argmax, ~13 nodes). With it, nn::sample:
// its settings are graph inputs ("sampler.temperature", ...; set_sampler_inputs), so every
// SamplingConfig the shape serves uses the same compiled program, and the repetition penalty's
// set of seen tokens is a carried [vocab] input ("sampler.seen") that the graph updates from the
// ids of every step.
#include "luminal/models/decoder.hpp"
#include "luminal/nn/sampling.hpp"
#include "luminal/runtime/runtime.hpp"

namespace luminal::models {

/// Which token head to build.
struct SamplerShape {
  /// The in-graph sampler (temperature, top-k, top-p, min-p, repetition penalty; ~1100 nodes,
  /// ~390 without top-k and top-p) instead of the argmax of the last logits, whose ~13 nodes
  /// compile much faster. Without it, only greedy configs run (!needs_sampler()).
  bool sampler = false;
  /// With the sampler: its top-k and top-p filters (a bisection each, most of its nodes and
  /// time). A config that needs a filter left out is rejected.
  nn::SamplerFilters filters = {};
  /// The smallest head for `c`: the sampler when c.needs_sampler(), with only the filters c uses
  /// (nn::SamplerFilters::needed_by); else the argmax.
  static SamplerShape needed_by(const nn::SamplingConfig& c) {
    return {.sampler = c.needs_sampler(), .filters = nn::SamplerFilters::needed_by(c)};
  }
};

/// A head added to a decoder's graph.
struct TokenHead {
  SamplerShape shape;
  /// The sampler's inputs (with the sampler).
  nn::SamplerInputs inputs;
  /// Throws when `c` needs what the head lacks: the sampler, or one of its filters (the message
  /// names the SamplerShape field to set).
  void check(const nn::SamplingConfig& c) const;
  /// Sets the sampler's inputs to `c` at counter `step` (nothing without the sampler).
  void set(Runtime& rt, const nn::SamplingConfig& c, int64_t step) const;
  /// Forgets the seen tokens of the repetition penalty (nothing without the sampler).
  void clear_seen(Runtime& rt, int64_t vocab) const;
};

/// Adds the head to `d.graph` on d.last_logits; the output is "token".
TokenHead add_token_head(Decoder& d, const SamplerShape& shape);

}  // namespace luminal::models
