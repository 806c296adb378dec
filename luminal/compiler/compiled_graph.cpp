#include "luminal/compiler/compiled_graph.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "luminal/compiler/build_space.hpp"
#include "luminal/core/error.hpp"

namespace luminal {

namespace {

// LUMINAL_TRACE: unset/""/"0" off; "1" prints to stderr; anything else is a folder that receives
// one file per stage (diffable text).
class Trace {
 public:
  Trace() {
    const char* v = std::getenv("LUMINAL_TRACE");
    if (!v || !*v || std::string(v) == "0") return;
    on_ = true;
    if (std::string(v) != "1") {
      dir_ = v;
      std::filesystem::create_directories(dir_);
    }
  }
  bool on() const { return on_; }
  void emit(const std::string& name, const std::string& text) const {
    if (!on_) return;
    if (dir_.empty()) {
      std::cerr << "==== " << name << " ====\n" << text;
      if (!text.empty() && text.back() != '\n') std::cerr << "\n";
      return;
    }
    std::ofstream(std::filesystem::path(dir_) / name) << text;
  }

 private:
  bool on_ = false;
  std::string dir_;
};


}  // namespace

struct CompiledBucket {
  std::map<std::string, DimBucket> ranges;  // bucketed dims
  LlirGraph llir;
  std::unique_ptr<Executable> exe;
  SearchReport report;

  bool contains(const DynMap& dyn) const {
    for (const auto& [d, b] : ranges) {
      auto it = dyn.find(d);
      if (it == dyn.end() || !b.contains(it->second)) return false;
    }
    return true;
  }
  std::string name() const {
    std::string s;
    for (const auto& [d, b] : ranges)
      s += (s.empty() ? "" : " ") + d + "=" + b.to_string();
    return s;
  }
};

struct CompiledGraph::State {
  Graph graph;
  CompileOptions opts;
  std::vector<CompiledBucket> buckets;
  std::vector<SearchReport> reports;
  std::map<NodeId, HostBuffer> inputs;
  std::map<NodeId, HostBuffer> outputs;
  std::map<NodeId, NodeId> output_in_input;  // output -> input whose buffer holds its value
  std::map<NodeId, std::vector<int64_t>> output_shapes;
  bool executed = false;
};

namespace {

// Every combination of the buckets of each bucketed dim (one bucket each).
std::vector<std::map<std::string, DimBucket>> bucket_combinations(
    const std::map<std::string, std::vector<DimBucket>>& all) {
  std::vector<std::map<std::string, DimBucket>> combos{{}};
  for (const auto& [dim, list] : all) {
    std::vector<std::map<std::string, DimBucket>> next;
    for (const auto& c : combos)
      for (const DimBucket& b : list) {
        auto m = c;
        m.emplace(dim, b);
        next.push_back(std::move(m));
      }
    combos = std::move(next);
  }
  return combos;
}

CompiledBucket compile_bucket(const Graph& g, Backend& backend, const CompileOptions& opts,
                              std::map<std::string, DimBucket> ranges, const Trace& trace) {
  CompiledBucket cb;
  cb.ranges = std::move(ranges);
  SearchReport report;
  report.bucket = cb.name();
  report.hlir_nodes = g.nodes().size();
  // Trace files of a bucket start with its ranges: "s2-512.best-3.llir".
  std::string prefix;
  for (const auto& [d, b] : cb.ranges)
    prefix += (prefix.empty() ? "" : "_") + d + std::to_string(b.min()) + "-" +
              std::to_string(b.max());
  if (!prefix.empty()) prefix += ".";

  // Facts and the dyn values to profile at.
  Facts facts = g.dim_facts();
  DynMap dyn = g.dims();
  for (const auto& [d, b] : cb.ranges) {
    facts[d] = Interval{b.min(), b.max()};
    dyn[d] = b.rep();
  }
  DynMap largest = dyn;  // max_memory must hold for every value of the bucket
  for (const auto& [d, b] : cb.ranges)
    largest[d] = b.max();
  for (const Node& n : g.nodes())
    for (const Expr& e : n.shape)
      for (const std::string& v : e.vars())
        if (!dyn.count(v)) {
          throw Error("compile: dynamic dimension '" + v +
                      "' has no value to search at: call graph.set_dim(\"" + v +
                      "\", n) or give it buckets with CompileOptions::dim_buckets");
        }

  BuiltSpace built = build_search_space(g, backend, facts, opts.saturation_limits());
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
  const SearchSpace& space = *built.space;

  // Profiling buffers: zeros at the representative dims.
  std::map<std::string, HostBuffer> in_bufs, out_bufs;
  IoTable io;
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    int64_t numel = 1;
    for (int64_t d : eval_shape(n.shape, dyn))
      numel *= d;
    in_bufs[n.label] = HostBuffer{n.dtype, std::vector<uint8_t>(numel * size_bytes(n.dtype))};
  }
  for (auto& [l, b] : in_bufs)
    io.inputs[l] = &b;
  for (NodeId id : g.outputs())
    out_bufs[g.node(id).label] = HostBuffer{g.node(id).dtype, {}};
  for (auto& [l, b] : out_bufs)
    io.outputs[l] = &b;

  auto trace_fn = [&](const std::string& name, const std::string& text) {
    trace.emit(prefix + name, text);
  };
  SearchResult r =
      search(space, backend, opts, dyn, largest, io, std::move(report),
             trace.on() ? std::function(trace_fn)
                        : std::function<void(const std::string&, const std::string&)>{});
  cb.llir = std::move(r.llir);
  cb.exe = std::move(r.executable);
  cb.report = std::move(r.report);
  return cb;
}

}  // namespace

CompiledGraph::CompiledGraph(Graph g, Backend& backend, const CompileOptions& opts)
    : s_(std::make_unique<State>()) {
  s_->graph = std::move(g);
  s_->opts = opts;
  if (s_->graph.outputs().empty())
    throw Error("compile: the graph has no outputs; mark results with tensor.output(\"name\")");
  for (const auto& [d, list] : opts.dim_buckets()) {
    bool used = false;
    for (const Node& n : s_->graph.nodes())
      for (const Expr& e : n.shape)
        used = used || e.has_var(d);
    if (!used) {
      throw Error("dim_buckets(\"" + d + "\"): the graph has no dynamic dimension '" + d + "'");
    }
  }
  Trace trace;
  for (auto& ranges : bucket_combinations(opts.dim_buckets())) {
    s_->buckets.push_back(compile_bucket(s_->graph, backend, opts, std::move(ranges), trace));
    s_->reports.push_back(s_->buckets.back().report);
    if (opts.verbose()) std::cerr << s_->buckets.back().report.to_string();
  }
}

CompiledGraph::CompiledGraph(CompiledGraph&&) noexcept = default;
CompiledGraph& CompiledGraph::operator=(CompiledGraph&&) noexcept = default;
CompiledGraph::~CompiledGraph() = default;

const Graph& CompiledGraph::graph() const { return s_->graph; }
const std::vector<SearchReport>& CompiledGraph::reports() const { return s_->reports; }

std::string CompiledGraph::report() const {
  std::string s;
  for (const SearchReport& r : s_->reports)
    s += r.to_string();
  return s;
}

namespace {
const CompiledBucket& pick_bucket(const std::vector<CompiledBucket>& buckets,
                                  const std::map<std::string, std::vector<DimBucket>>& all,
                                  const DynMap& dyn) {
  for (const CompiledBucket& b : buckets)
    if (b.contains(dyn)) return b;
  std::string msg = "execute: no bucket matches";
  for (const auto& [d, list] : all) {
    auto it = dyn.find(d);
    msg += " " + d + "=" + (it == dyn.end() ? std::string("(unset)") : std::to_string(it->second));
  }
  msg += "; compiled buckets:";
  for (const auto& [d, list] : all) {
    msg += " " + d + " in {";
    for (size_t i = 0; i < list.size(); ++i)
      msg += (i ? ", " : "") + list[i].to_string();
    msg += "}";
  }
  msg += ". Add a DimBucket covering this value to CompileOptions::dim_buckets";
  throw Error(msg);
}
}  // namespace

const LlirGraph& CompiledGraph::llir(const DynMap& dyn) const {
  return pick_bucket(s_->buckets, s_->opts.dim_buckets(), merged_dims(dyn)).llir;
}

void CompiledGraph::execute(const DynMap& dyn_in) {
  s_->executed = false;
  const DynMap dyn = merged_dims(dyn_in);
  check_dims(dyn);
  const CompiledBucket& b = pick_bucket(s_->buckets, s_->opts.dim_buckets(), dyn);
  IoTable io;
  for (NodeId id : s_->graph.inputs()) {
    const Node& n = s_->graph.node(id);
    auto it = s_->inputs.find(id);
    if (it == s_->inputs.end()) {
      throw Error("input '" + n.label + "' has no data: call runtime.set(\"" + n.label +
                  "\", ...) before execute()");
    }
    io.inputs[n.label] = &it->second;
  }
  s_->output_in_input.clear();
  for (NodeId id : s_->graph.outputs()) {
    HostBuffer& hb = s_->outputs[id];
    hb.dtype = s_->graph.node(id).dtype;
    io.outputs[s_->graph.node(id).label] = &hb;
  }
  b.exe->execute(dyn, io);
  for (const auto& [out_label, in_label] : io.output_in_input)
    s_->output_in_input[s_->graph.find(out_label)] = s_->graph.find(in_label);
  for (NodeId id : s_->graph.outputs())
    s_->output_shapes[id] = eval_shape(s_->graph.node(id).shape, dyn);
  s_->executed = true;
  carry_state();
}

void CompiledGraph::set_input(NodeId id, HostBuffer data) {
  // An output whose value lives in this input's buffer keeps that buffer.
  for (auto it = s_->output_in_input.begin(); it != s_->output_in_input.end();) {
    if (it->second != id) {
      ++it;
      continue;
    }
    s_->outputs[it->first] = std::move(s_->inputs[id]);
    it = s_->output_in_input.erase(it);
  }
  s_->inputs[id] = std::move(data);
}

const HostBuffer& CompiledGraph::output_buffer(NodeId id) const {
  if (!s_->executed) {
    throw Error("get: output '" + s_->graph.node(id).label +
                "' has no value yet: call execute() first");
  }
  auto alias = s_->output_in_input.find(id);
  if (alias != s_->output_in_input.end()) return s_->inputs.at(alias->second);
  return s_->outputs.at(id);
}

std::vector<int64_t> CompiledGraph::output_shape(NodeId id) const {
  output_buffer(id);
  return s_->output_shapes.at(id);
}

void CompiledGraph::move_output_to_input(NodeId output, NodeId input) {
  output_buffer(output);
  auto alias = s_->output_in_input.find(output);
  if (alias != s_->output_in_input.end()) {
    if (alias->second == input) return;  // updated in place already
    s_->inputs[input] = s_->inputs.at(alias->second);
  } else {
    s_->inputs[input] = std::move(s_->outputs[output]);
    s_->outputs[output] = HostBuffer{s_->graph.node(output).dtype, {}};
  }
  // The output keeps reading the value, now held by the input.
  for (auto it = s_->output_in_input.begin(); it != s_->output_in_input.end();)
    it = it->second == input ? s_->output_in_input.erase(it) : std::next(it);
  s_->output_in_input[output] = input;
}

CompiledGraph Graph::compile(Backend& backend, const CompileOptions& options) const {
  return CompiledGraph(*this, backend, options);
}
CompiledGraph Graph::compile(Backend& backend) const { return compile(backend, CompileOptions()); }

}  // namespace luminal
