#include "luminal/runtime/session.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "luminal/compiler/compile_bucket.hpp"
#include "luminal/core/error.hpp"
#include "luminal/program/fold.hpp"
#include "luminal/runtime/folds.hpp"
#include "luminal/runtime/residency.hpp"

namespace luminal {

namespace {

std::vector<std::string> names(const Facts& facts) {
  std::vector<std::string> v;
  for (const auto& [d, r] : facts)
    v.push_back(d);
  return v;
}

// The ranges of every dim in each bucket.
std::vector<Facts> combo_facts(const Graph& g, const std::vector<BucketRanges>& combos) {
  std::vector<Facts> facts;
  for (const BucketRanges& c : combos)
    facts.push_back(bucket_facts(g, c));
  return facts;
}

std::string mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB (%llu bytes)", static_cast<double>(bytes) / 1048576.0,
                static_cast<unsigned long long>(bytes));
  return buf;
}

}  // namespace

struct Session::State {
  State(Graph g, CompileOptions o)
      : graph(std::move(g)),
        opts(std::move(o)),
        facts(graph.dim_facts()),
        dim_names(names(facts)),
        combos(bucket_combinations(graph, opts)),
        res(graph, dim_names, combo_facts(graph, combos)) {}

  Graph graph;
  CompileOptions opts;
  Trace trace;
  /// The declared range of each dim (Graph::dim_facts walks every node: computed once here, not
  /// on every execute by name).
  Facts facts;
  std::vector<std::string> dim_names;
  std::vector<BucketRanges> combos;
  /// The inputs' and outputs' buffers, the session's queue, and where each value lives.
  Residency res;

  struct Bucket {
    BucketPlan bp;
    std::vector<Interval> range;    // per slot
    std::vector<int> in_map;        // plan input -> session input
    std::vector<int> out_map;       // plan output -> session output
    std::vector<int> out_in_place;  // per session output: session input written in place, -1
    std::vector<uint8_t> flips;     // per carry: 1 when this plan does not write it in place
    std::array<std::vector<Buffer>, 2> bound_in, bound_out;  // per parity, session order
    bool bound = false;
  };
  std::vector<Bucket> buckets;
  std::vector<SearchReport> reports;
  /// Load-time folds, and per input whether some fold reads it (write() asks, cheaply).
  FoldStore folds;
  std::vector<uint8_t> feeds_fold;
  /// Per input: whether some bucket's program reads it (else, once folded, it is released).
  std::vector<uint8_t> step_reads;
  Buffer arena;
  bool compiled = false;

  int last_bucket = -1, last_parity = 0;
  Stats stats;

  ~State() {
    // Plans first (they may wait for the queue); then `res` waits for the queue and releases the
    // buffers, which no work uses any more.
    buckets.clear();
  }
};

Session::Session(Graph graph, Backend& backend, CompileOptions options) {
  if (graph.outputs().empty())
    throw Error("compile: the graph has no outputs; mark results with tensor.output(\"name\")");
  s_ = std::make_unique<State>(std::move(graph), std::move(options));
  State& s = *s_;
  const uint64_t total = s.res.capacity_bytes();
  if (s.opts.max_memory() && total > *s.opts.max_memory()) {
    throw Error("session: the input and output buffers need " + mib(total) +
                " at the largest dims, but max_memory is " + mib(*s.opts.max_memory()) +
                "; raise max_memory or narrow the dim ranges");
  }
  s.res.attach(backend);
}

Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

const Graph& Session::graph() const { return s_->graph; }
bool Session::compiled() const { return s_->compiled; }
const Session::Stats& Session::stats() const { return s_->stats; }
Backend& Session::backend() const { return s_->res.backend(); }
const CompileOptions& Session::options() const { return s_->opts; }
const std::vector<std::string>& Session::dim_names() const { return s_->dim_names; }
const std::vector<SearchReport>& Session::reports() const { return s_->reports; }

std::string Session::report() const {
  std::string r;
  for (const SearchReport& rep : s_->reports)
    r += rep.to_string();
  return r;
}

DimSlot Session::dim(std::string_view name) const {
  for (size_t i = 0; i < s_->dim_names.size(); ++i)
    if (s_->dim_names[i] == name) return static_cast<DimSlot>(i);
  std::string all;
  for (const std::string& d : s_->dim_names)
    all += (all.empty() ? "" : ", ") + d;
  throw Error(
      "dim: '" + std::string(name) +
      "' is not a dynamic dimension of this graph (it has: " + (all.empty() ? "none" : all) + ")");
}

std::vector<int64_t> Session::dims() const {
  std::vector<int64_t> v(s_->dim_names.size(), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    auto it = s_->graph.dims().find(s_->dim_names[i]);
    if (it != s_->graph.dims().end()) v[i] = it->second;
  }
  return v;
}

uint64_t Session::memory_bytes() const {
  uint64_t total = s_->arena.bytes + s_->res.memory_bytes() + s_->folds.bytes();
  for (const State::Bucket& b : s_->buckets)
    total += b.bp.plan->workspace_bytes();
  return total;
}

void Session::compile() {
  State& s = *s_;
  if (s.compiled) return;
  Backend& be = s.res.backend();
  // Profiling data, made on the first bucket that is searched (not on a warm start).
  std::vector<Buffer> scratch;
  std::optional<ProfileData> data;
  // Folds and step inputs of the buckets searched so far: a later bucket's memory check counts
  // them (ProfileData::earlier_folds).
  std::map<std::string, ProfileData::Fold, std::less<>> earlier_folds;
  std::set<std::string, std::less<>> earlier_step_inputs;
  auto profile_data = [&]() -> const ProfileData& {
    if (!data) {
      data = s.res.profile_data(&scratch, &s.stats.bytes_generated);
      data->fixed_bytes = memory_bytes();
    }
    data->earlier_folds = earlier_folds;
    data->earlier_step_inputs = earlier_step_inputs;
    return *data;
  };
  try {
    for (const BucketRanges& c : s.combos) {
      State::Bucket b;
      b.bp = compile_bucket(s.graph, be, s.opts, c, s.dim_names, profile_data, s.trace);
      for (const FoldProgram& f : b.bp.folds)
        earlier_folds[f.label] = ProfileData::Fold{f.bytes, f.inputs};
      for (const std::string& l : b.bp.plan->io().inputs)
        if (!is_fold_label(l)) earlier_step_inputs.insert(l);
      s.reports.push_back(b.bp.report);
      if (s.opts.verbose()) std::cerr << b.bp.report.to_string();
      s.buckets.push_back(std::move(b));
    }
  } catch (...) {
    for (Buffer& b : scratch)
      s.res.release(b);
    s.buckets.clear();
    s.reports.clear();
    throw;
  }
  for (Buffer& b : scratch)
    s.res.release(b);

  // Slot ranges, index maps (a fold's buffer as -1 - its index) and the shared arena.
  uint64_t arena = 0;
  s.step_reads.assign(s.res.in.size(), 0);
  for (State::Bucket& b : s.buckets) {
    s.folds.adopt(b.bp.folds, s.graph, s.res);
    for (const std::string& d : s.dim_names)
      b.range.push_back(b.bp.spec.facts.at(d));
    const PlanIo& io = b.bp.plan->io();
    for (const std::string& l : io.inputs) {
      if (is_fold_label(l)) {
        const int f = s.folds.index_of(l);
        if (f < 0)
          throw Error("compile: the program reads fold " + l + " but carries no program for it");
        b.in_map.push_back(-1 - f);
        continue;
      }
      b.in_map.push_back(s.res.in_of_node[s.graph.find(l)]);
      s.step_reads[static_cast<size_t>(b.in_map.back())] = 1;
    }
    b.out_in_place.assign(s.res.out.size(), -1);
    for (size_t k = 0; k < io.outputs.size(); ++k) {
      const int o = s.res.out_of_node[s.graph.find(io.outputs[k])];
      b.out_map.push_back(o);
      if (io.output_in_input[k] >= 0) b.out_in_place[o] = b.in_map[io.output_in_input[k]];
    }
    for (auto [o, i] : s.res.carries)
      b.flips.push_back(b.out_in_place[o] == i ? 0 : 1);
    arena = std::max(arena, b.bp.plan->arena_bytes());
  }
  s.folds.allocate(s.res);
  s.folds.mark_all_stale();
  s.feeds_fold.assign(s.res.in.size(), 0);
  for (int k : s.folds.inputs())
    s.feeds_fold[static_cast<size_t>(k)] = 1;
  // Weights that only folds read are released on the first execute: count them out already.
  uint64_t released = 0;
  for (int k : s.folds.inputs())
    if (!s.step_reads[static_cast<size_t>(k)])
      released += s.res.in[static_cast<size_t>(k)].capacity;
  const uint64_t total = memory_bytes() - std::min(released, memory_bytes()) + arena;
  if (s.opts.max_memory() && total > *s.opts.max_memory()) {
    s.buckets.clear();
    throw Error("session: weights, state and buffers (" + mib(memory_bytes()) +
                ") plus the largest arena (" + mib(arena) + ") need " + mib(total) +
                ", but max_memory is " + mib(*s.opts.max_memory()));
  }
  s.arena = s.res.allocate(arena);
  s.compiled = true;
}

int Session::pick_bucket(std::span<const int64_t> dims) const {
  const State& s = *s_;
  for (size_t b = 0; b < s.buckets.size(); ++b) {
    const auto& range = s.buckets[b].range;
    bool ok = true;
    for (size_t d = 0; d < range.size() && ok; ++d)
      ok = range[d].contains(dims[d]);
    if (ok) return static_cast<int>(b);
  }
  // Error path: name the dim that is out of range.
  for (size_t d = 0; d < s.dim_names.size(); ++d) {
    const std::string& name = s.dim_names[d];
    if (!s.opts.dim_buckets().count(name)) check_range(name, dims[d], s.facts.at(name));
  }
  std::string msg = "execute: no bucket matches";
  for (const auto& [d, list] : s.opts.dim_buckets())
    msg += " " + d + "=" + std::to_string(dims[dim(d)]);
  msg += "; compiled buckets:";
  for (const auto& [d, list] : s.opts.dim_buckets()) {
    msg += " " + d + " in {";
    for (size_t i = 0; i < list.size(); ++i)
      msg += (i ? ", " : "") + list[i].to_string();
    msg += "}";
  }
  msg += ". Add a DimBucket covering this value to CompileOptions::dim_buckets";
  throw Error(msg);
}

// The parity whose bound buffers equal the session's current handles; re-binds both parities
// when neither does (after a hand_off, a set that moved a handle, or another bucket's run).
int Session::pick_parity(int bucket) {
  State& s = *s_;
  State::Bucket& b = s.buckets[bucket];
  const Residency& r = s.res;
  auto matches = [&](int p) {
    if (!b.bound) return false;
    for (size_t i = 0; i < r.in.size(); ++i)
      if (b.bound_in[p][i].ptr != r.in[i].buf.ptr) return false;
    for (size_t o = 0; o < r.out.size(); ++o)
      if (b.bound_out[p][o].ptr != r.out[o].buf.ptr) return false;
    return true;
  };
  if (s.last_bucket == bucket && matches(1 - s.last_parity)) return 1 - s.last_parity;
  if (matches(0)) return 0;
  if (matches(1)) return 1;
  // Parity 0: the handles as they are; parity 1: after this plan's carries swapped them.
  for (int p = 0; p < 2; ++p) {
    auto& ins = b.bound_in[p];
    auto& outs = b.bound_out[p];
    ins.resize(r.in.size());
    outs.resize(r.out.size());
    for (size_t i = 0; i < r.in.size(); ++i)
      ins[i] = r.in[i].buf;
    for (size_t o = 0; o < r.out.size(); ++o)
      outs[o] = r.out[o].buf;
    if (p == 1)
      for (size_t c = 0; c < r.carries.size(); ++c)
        if (b.flips[c]) std::swap(ins[r.carries[c].second], outs[r.carries[c].first]);
    Bindings bind;
    for (int i : b.in_map)
      bind.inputs.push_back(i >= 0 ? ins[i] : s.folds.buffer(-1 - i));
    for (int o : b.out_map)
      bind.outputs.push_back(outs[o]);
    bind.arena = s.arena;
    bind.queue = r.queue();
    b.bp.plan->bind(p, bind);
  }
  b.bound = true;
  ++s.stats.rebinds;
  return 0;
}

void Session::execute(std::span<const int64_t> dims) {
  State& s = *s_;
  if (!s.compiled) compile();
  if (dims.size() != s.dim_names.size()) {
    throw Error("execute: got " + std::to_string(dims.size()) + " dim values but the graph has " +
                std::to_string(s.dim_names.size()) + " dynamic dimensions (session.dim_names())");
  }
  const int b = pick_bucket(dims);
  s.res.check_inputs(dims);
  if (s.folds.dirty()) run_folds();
  const int parity = pick_parity(b);
  State::Bucket& bk = s.buckets[b];
  bk.bp.plan->execute(parity, dims.data());
  ++s.stats.executes;
  s.last_bucket = b;
  s.last_parity = parity;
  s.res.executed(dims, bk.out_in_place);
}

void Session::execute(const DynMap& dyn) {
  std::vector<int64_t> dims(s_->dim_names.size());
  dim_values(dyn, s_->facts, /*required=*/true, dims.data());
  execute(std::span<const int64_t>(dims));
}

// Runs the stale folds, then releases the weights that only folds read.
void Session::run_folds() {
  State& s = *s_;
  s.stats.bytes_folded += s.folds.run(s.res);
  s.stats.fold_runs = s.folds.runs();
  for (int k : s.folds.inputs())
    if (!s.step_reads[static_cast<size_t>(k)]) s.stats.bytes_released += s.res.release_input(k);
}

void Session::input_changed(int k) {
  State& s = *s_;
  if (static_cast<size_t>(k) < s.feeds_fold.size() && s.feeds_fold[static_cast<size_t>(k)])
    s.folds.input_changed(k);
}

std::string Session::fold_report() const { return s_->folds.report(); }

void Session::sync() { s_->res.backend().sync(s_->res.queue()); }

Queue* Session::queue() const { return s_->res.queue(); }

void Session::wait_for_stream(void* stream) {
  s_->res.backend().wait_external(stream, s_->res.queue());
}

void Session::signal_stream(void* stream) {
  s_->res.backend().signal_external(stream, s_->res.queue());
}

void Session::set_input(NodeId id, HostBuffer data) {
  set_input_bytes(id, data.bytes.data(), data.bytes.size());
}

void Session::set_input_bytes(NodeId id, const void* data, uint64_t bytes) {
  write(InputHandle{s_->res.in_of_node[id]}, data, bytes);
}

Session::InputHandle Session::input(std::string_view label) const {
  return InputHandle{s_->res.in_of_node[resolve_input(label)]};
}

Session::InputHandle Session::input(const Tensor& t) const {
  return InputHandle{s_->res.in_of_node[resolve_input(t)]};
}

Session::OutputHandle Session::output(std::string_view label) const {
  return OutputHandle{s_->res.out_of_node[resolve_output(label)]};
}

Session::OutputHandle Session::output(const Tensor& t) const {
  return OutputHandle{s_->res.out_of_node[resolve_output(t)]};
}

void Session::write(InputHandle handle, const void* data, uint64_t bytes) {
  State& s = *s_;
  LUMINAL_ASSERT(handle.index >= 0 && handle.index < static_cast<int>(s.res.in.size()),
                 "write: not an input handle of this session");
  s.res.write(handle.index, data, bytes);
  s.stats.bytes_uploaded += bytes;
  input_changed(handle.index);
}

void Session::set_from(std::string_view input, const Session& from, std::string_view output) {
  State& s = *s_;
  if (&from.backend() != &backend())
    throw Error("set_from: input '" + std::string(input) +
                "' and the session it copies from use different backends; copy through the host "
                "(get, then set) instead");
  const int k = s.res.in_of_node[resolve_input(input)];
  const int o = from.s_->res.out_of_node[from.resolve_output(output)];
  s.stats.bytes_copied += s.res.copy_from(k, from.s_->res, o);
  input_changed(k);
}

void Session::set_external(std::string_view label, const void* data, uint64_t bytes,
                           std::shared_ptr<const void> keep_alive) {
  const int k = s_->res.in_of_node[resolve_input(label)];
  if (s_->res.wrap_host(k, data, bytes, std::move(keep_alive))) {
    s_->stats.bytes_wrapped += bytes;
    input_changed(k);
  } else {
    write(InputHandle{k}, data, bytes);
  }
}

void Session::bind_external(std::string_view label, void* ptr, uint64_t bytes,
                            std::shared_ptr<const void> keep_alive) {
  const int k = s_->res.in_of_node[resolve_input(label)];
  s_->res.bind_external(k, ptr, bytes, std::move(keep_alive));
  s_->stats.bytes_wrapped += bytes;
  input_changed(k);
}

uint64_t Session::output_bytes(OutputHandle handle) const {
  LUMINAL_ASSERT(handle.index >= 0 && handle.index < static_cast<int>(s_->res.out.size()),
                 "output_bytes: not an output handle of this session");
  return s_->res.value_bytes(handle.index);
}

void Session::read(OutputHandle handle, void* dst, uint64_t bytes) const {
  LUMINAL_ASSERT(handle.index >= 0 && handle.index < static_cast<int>(s_->res.out.size()),
                 "read: not an output handle of this session");
  s_->res.read(handle.index, dst, bytes);
  s_->stats.bytes_downloaded += bytes;
}

void Session::start_read(OutputHandle handle, void* dst, uint64_t bytes) const {
  LUMINAL_ASSERT(handle.index >= 0 && handle.index < static_cast<int>(s_->res.out.size()),
                 "start_read: not an output handle of this session");
  s_->res.start_read(handle.index, dst, bytes);
  s_->stats.bytes_downloaded += bytes;
}

void Session::finish_read() const { s_->res.finish_read(); }

void Session::copy_output_to_input(OutputHandle out, InputHandle in) {
  State& s = *s_;
  LUMINAL_ASSERT(out.index >= 0 && out.index < static_cast<int>(s.res.out.size()),
                 "copy_output_to_input: not an output handle of this session");
  LUMINAL_ASSERT(in.index >= 0 && in.index < static_cast<int>(s.res.in.size()),
                 "copy_output_to_input: not an input handle of this session");
  s.stats.bytes_copied += s.res.copy_in(in.index, out.index);
  input_changed(in.index);
}

void Session::copy_output(OutputHandle handle, void* dst, uint64_t bytes, bool wait) const {
  LUMINAL_ASSERT(handle.index >= 0 && handle.index < static_cast<int>(s_->res.out.size()),
                 "copy_output: not an output handle of this session");
  s_->res.copy_out(handle.index, dst, bytes, wait);
  s_->stats.bytes_copied += bytes;
}

HostBuffer Session::output_value(NodeId id) const {
  const OutputHandle handle{s_->res.out_of_node[id]};
  HostBuffer hb{s_->res.out[handle.index].dtype, std::vector<uint8_t>()};
  if (s_->res.out[handle.index].valid) hb.bytes.resize(output_bytes(handle));
  read(handle, hb.bytes.data(), hb.bytes.size());
  return hb;
}

std::vector<int64_t> Session::output_shape(NodeId id) const {
  return s_->res.shape(s_->res.out_of_node[id]);
}

void Session::move_output_to_input(NodeId output, NodeId input) {
  s_->res.hand_off(s_->res.out_of_node[output], s_->res.in_of_node[input]);
  input_changed(s_->res.in_of_node[input]);
}

Plan& Session::bucket_plan(const DynMap& dyn) const {
  if (!s_->compiled) throw Error("plan: the session is not compiled yet; call compile()");
  std::vector<int64_t> dims(s_->dim_names.size());
  dim_values(dyn, s_->facts, /*required=*/false, dims.data());
  return *s_->buckets[pick_bucket(dims)].bp.plan;
}

const Plan& Session::plan(const DynMap& dyn) const { return bucket_plan(dyn); }

Plan& Session::plan(const DynMap& dyn) { return bucket_plan(dyn); }

const LlirGraph& Session::llir(const DynMap& dyn) const {
  const Plan& p = plan(dyn);
  for (const State::Bucket& b : s_->buckets)
    if (b.bp.plan.get() == &p) return b.bp.llir;
  throw Error("llir: no bucket");  // unreachable
}

const void* Session::buffer_address(std::string_view label) const {
  const Residency& r = s_->res;
  const NodeId id = s_->graph.find(label);
  if (r.in_of_node[id] >= 0) return r.in[r.in_of_node[id]].buf.ptr;
  return r.out[r.out_of_node[id]].buf.ptr;
}

Session compile(const Graph& g, Backend& backend, const CompileOptions& options) {
  Session s(g, backend, options);
  s.compile();
  return s;
}

}  // namespace luminal
