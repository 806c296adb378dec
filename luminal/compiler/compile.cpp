#include "luminal/compiler/compile.hpp"

#include "luminal/compiler/build_space.hpp"
#include "luminal/core/error.hpp"

namespace luminal {

std::string BucketPlan::name() const {
  std::string s;
  for (const auto& [d, b] : ranges)
    s += (s.empty() ? "" : " ") + d + "=" + b.to_string();
  return s;
}

std::vector<BucketRanges> bucket_combinations(const Graph& g, const CompileOptions& opts) {
  const Facts all = g.dim_facts();
  for (const auto& [d, list] : opts.dim_buckets()) {
    if (!all.count(d))
      throw Error("dim_buckets(\"" + d + "\"): the graph has no dynamic dimension '" + d + "'");
  }
  std::vector<BucketRanges> combos{{}};
  for (const auto& [dim, list] : opts.dim_buckets()) {
    std::vector<BucketRanges> next;
    for (const BucketRanges& c : combos)
      for (const DimBucket& b : list) {
        BucketRanges m = c;
        m.emplace(dim, b);
        next.push_back(std::move(m));
      }
    combos = std::move(next);
  }
  return combos;
}

Facts bucket_facts(const Graph& g, const BucketRanges& ranges) {
  Facts facts = g.dim_facts();
  for (auto& [d, range] : facts) {
    auto b = ranges.find(d);
    if (b != ranges.end()) {
      range = Interval{b->second.min(), b->second.max()};
      continue;
    }
    if (range == Interval{0, INT32_MAX}) {
      throw Error("dynamic dimension '" + d +
                  "' has no range: declare it with graph.declare_dim(\"" + d +
                  "\", min, max) (and graph.set_dim to choose the value searched at) or give it "
                  "buckets with CompileOptions::dim_buckets; buffers are sized for the largest "
                  "value");
    }
  }
  return facts;
}

std::vector<int64_t> representative_dims(const Graph& g, const BucketRanges& ranges,
                                         const Facts& facts,
                                         const std::vector<std::string>& dim_names) {
  std::vector<int64_t> dims;
  for (const std::string& d : dim_names) {
    auto b = ranges.find(d);
    auto set = g.dims().find(d);
    const Interval r = facts.at(d);
    if (b != ranges.end())
      dims.push_back(b->second.rep());
    else if (set != g.dims().end() && r.contains(set->second))
      dims.push_back(set->second);
    else
      dims.push_back(r.lo + (r.hi - r.lo) / 2);
  }
  return dims;
}

BucketPlan search_bucket(const Graph& g, Backend& backend, const CompileOptions& opts,
                         BucketRanges ranges, const std::vector<std::string>& dim_names,
                         const ProfileData& data, const Trace& trace) {
  BucketPlan bp;
  bp.ranges = std::move(ranges);
  bp.spec.facts = bucket_facts(g, bp.ranges);
  bp.spec.dim_names = dim_names;
  const std::vector<int64_t> dims = representative_dims(g, bp.ranges, bp.spec.facts, dim_names);
  SearchReport report;
  report.bucket = bp.name();
  report.hlir_nodes = g.nodes().size();
  // Trace files of a bucket start with its ranges: "s2-512.best-3.llir".
  std::string prefix;
  for (const auto& [d, b] : bp.ranges)
    prefix +=
        (prefix.empty() ? "" : "_") + d + std::to_string(b.min()) + "-" + std::to_string(b.max());
  if (!prefix.empty()) prefix += ".";

  FoldOptions fold;
  fold.on = opts.folding();
  fold.min_bytes = opts.fold_min_bytes();
  fold.limit = opts.fold_limit();
  BuiltSpace built = build_search_space(g, backend, bp.spec.facts, opts.saturation_limits(), fold);
  report.lower_s = built.lower_s;
  report.saturate_s = built.saturate_s;
  report.prune_s = built.prune_s;
  report.extract_s = built.space_s;
  report.saturation = built.saturation.to_string();
  report.pruning = built.pruning.to_string();
  report.enodes = built.pruning.live_nodes;
  report.eclasses = built.pruning.live_classes;
  trace.emit(prefix + "hlir.txt", g.to_text());
  trace.emit(prefix + "saturation.txt", report.saturation);
  if (trace.on()) trace.emit(prefix + "pruned-egraph.txt", built.eg->to_text());

  auto trace_fn = [&](const std::string& name, const std::string& text) {
    trace.emit(prefix + name, text);
  };
  SearchResult r =
      search(*built.space, backend, opts, bp.spec, dims, data, std::move(report),
             trace.on() ? std::function(trace_fn)
                        : std::function<void(const std::string&, const std::string&)>{},
             &built.folds);
  bp.llir = std::move(r.llir);
  bp.plan = std::move(r.plan);
  bp.folds = std::move(r.folds);
  bp.report = std::move(r.report);
  return bp;
}

}  // namespace luminal
