#include "luminal/runtime/session.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>

#include "luminal/compiler/compile_cache.hpp"
#include "luminal/core/error.hpp"
#include "luminal/core/slot_expr.hpp"

namespace luminal {

namespace {

std::string mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB (%llu bytes)", static_cast<double>(bytes) / 1048576.0,
                static_cast<unsigned long long>(bytes));
  return buf;
}

// Fills host memory with data safe to profile on: floats in [-0.5, 0.5] (no overflow through
// exp or products), integers and bools 0 (a valid index for every gather and scatter).
std::vector<uint8_t> generated_data(DType dt, uint64_t bytes, uint64_t seed) {
  std::vector<uint8_t> v(bytes, 0);
  if (!is_float(dt)) return v;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  const int64_t n = static_cast<int64_t>(bytes) / size_bytes(dt);
  for (int64_t i = 0; i < n; ++i)
    store_from_double(dt, v.data(), i, u(rng));
  return v;
}

}  // namespace

struct Session::State {
  Graph graph;
  Backend* backend = nullptr;
  /// The session's queue (null on backends without queues): every upload, copy, download, sync
  /// and execute of the session is ordered on it.
  std::unique_ptr<Queue> queue;
  CompileOptions opts;
  Trace trace;
  std::vector<std::string> dim_names;
  /// The declared range of each dim, in slot order (Graph::dim_facts walks every node: computed
  /// once here, not on every execute by name).
  std::vector<Interval> dim_ranges;
  std::vector<BucketRanges> combos;

  struct In {
    NodeId node = 0;
    std::string label;
    DType dtype = DType::F32;
    uint64_t capacity = 0;  // bytes at the largest shape of any bucket
    Buffer buf;             // the current handle (from the pool, or external memory)
    std::shared_ptr<const void> keep_alive;  // external memory (set_external)
    bool external = false;
    bool bound_external = false;  // bind_external: the value at any dims is the buffer's start
    bool has_data = false;
    bool carried = false;  // a carry target: profiled on a scratch copy
    uint64_t bytes_set = 0;
    SlotExpr numel;
  };
  struct Out {
    NodeId node = 0;
    std::string label;
    DType dtype = DType::F32;
    uint64_t capacity = 0;
    Buffer buf;
    int lives_in = -1;  // input index holding the value (in-place update or carried), or -1
    bool valid = false;
    std::vector<SlotExpr> shape;
  };
  std::vector<In> in;
  std::vector<Out> out;
  std::vector<int> in_of_node, out_of_node;  // NodeId -> index, or -1
  std::vector<std::pair<int, int>> carries;  // (output index, input index)

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
  Buffer arena;
  bool compiled = false;
  /// Every buffer the session allocated (handles move between inputs and outputs; the pool
  /// owns them).
  std::vector<Buffer> pool;
  Buffer allocate(uint64_t bytes) {
    pool.push_back(backend->allocate(bytes));
    return pool.back();
  }
  void release(Buffer b) {
    auto it = std::find(pool.begin(), pool.end(), b);
    if (it == pool.end()) return;
    backend->release(b);
    pool.erase(it);
  }
  /// Input k is about to be overwritten: an output whose value lives in its buffer keeps that
  /// value (the input takes the output's buffer), and external memory is replaced by our own.
  void prepare_write(int k) {
    In& i = in[k];
    for (Out& o : out) {
      if (o.lives_in != k) continue;
      if (o.capacity == i.capacity && !i.external) {
        std::swap(o.buf, i.buf);
      } else {
        o.valid = false;
      }
      o.lives_in = -1;
    }
    if (i.external) {
      i.keep_alive.reset();
      i.external = false;
      i.bound_external = false;
      i.buf = allocate(i.capacity);
    }
  }
  uint64_t out_bytes(const Out& o) const {
    int64_t n = size_bytes(o.dtype);
    for (const SlotExpr& d : o.shape)
      n *= d.eval(last_dims.data());
    return static_cast<uint64_t>(n);
  }

  std::vector<int64_t> last_dims;
  int last_bucket = -1, last_parity = 0;
  Stats stats;

  ~State() {
    // Plans first (they may wait for the queue), then the queue (waits for its work), then the
    // buffers, which no work uses any more.
    buckets.clear();
    queue.reset();
    for (Buffer& b : pool)
      backend->release(b);
  }
};

Session::Session(Graph graph, Backend& backend, CompileOptions options)
    : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.graph = std::move(graph);
  s.opts = std::move(options);
  const Graph& g = s.graph;
  if (g.outputs().empty())
    throw Error("compile: the graph has no outputs; mark results with tensor.output(\"name\")");
  for (const auto& [d, r] : g.dim_facts()) {
    s.dim_names.push_back(d);
    s.dim_ranges.push_back(r);
  }
  s.combos = bucket_combinations(g, s.opts);
  std::vector<Facts> facts;
  for (const BucketRanges& c : s.combos)
    facts.push_back(bucket_facts(g, c));
  auto largest_bytes = [&](const Shape& shape, DType dt) {
    const Expr bytes = numel(shape) * Expr(size_bytes(dt));
    int64_t most = 0;
    for (const Facts& f : facts)
      most = std::max(most, bytes.bounds(f).hi);
    return static_cast<uint64_t>(most);
  };

  s.in_of_node.assign(g.nodes().size(), -1);
  s.out_of_node.assign(g.nodes().size(), -1);
  uint64_t total = 0;
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    State::In i;
    i.node = id;
    i.label = n.label;
    i.dtype = n.dtype;
    i.capacity = largest_bytes(n.shape, n.dtype);
    i.numel = SlotExpr(numel(n.shape), s.dim_names);
    s.in_of_node[id] = static_cast<int>(s.in.size());
    s.in.push_back(std::move(i));
    total += s.in.back().capacity;
  }
  for (NodeId id : g.outputs()) {
    const Node& n = g.node(id);
    State::Out o;
    o.node = id;
    o.label = n.label;
    o.dtype = n.dtype;
    o.capacity = largest_bytes(n.shape, n.dtype);
    for (const Expr& d : n.shape)
      o.shape.emplace_back(d, s.dim_names);
    s.out_of_node[id] = static_cast<int>(s.out.size());
    s.out.push_back(std::move(o));
    total += s.out.back().capacity;
  }
  for (auto [o, i] : g.carried()) {
    s.carries.emplace_back(s.out_of_node[o], s.in_of_node[i]);
    s.in[s.in_of_node[i]].carried = true;
  }
  if (s.opts.max_memory() && total > *s.opts.max_memory()) {
    throw Error("session: the input and output buffers need " + mib(total) +
                " at the largest dims, but max_memory is " + mib(*s.opts.max_memory()) +
                "; raise max_memory or narrow the dim ranges");
  }
  s.backend = &backend;
  s.queue = backend.make_queue();
  for (State::In& i : s.in)
    i.buf = s.allocate(i.capacity);
  for (State::Out& o : s.out)
    o.buf = s.allocate(o.capacity);
  s.last_dims.assign(s.dim_names.size(), 0);
}

Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

const Graph& Session::graph() const { return s_->graph; }
bool Session::compiled() const { return s_->compiled; }
const Session::Stats& Session::stats() const { return s_->stats; }
Backend& Session::backend() const { return *s_->backend; }
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
  uint64_t total = s_->arena.bytes;
  for (const State::In& i : s_->in)
    total += i.external ? i.buf.bytes : i.capacity;
  for (const State::Out& o : s_->out)
    total += o.capacity;
  for (const State::Bucket& b : s_->buckets)
    total += b.bp.plan->workspace_bytes();
  return total;
}

void Session::compile() {
  State& s = *s_;
  if (s.compiled) return;
  Backend& be = *s.backend;
  ProfileData data;
  std::vector<Buffer> scratch;
  bool have_data = false;
  auto prepare_data = [&] {
    if (have_data) return;
    have_data = true;
    // Profiling data: bound inputs as they are; inputs without data get generated data in their
    // own buffers (they have no visible value); carried inputs with data get scratch copies.
    for (size_t k = 0; k < s.in.size(); ++k) {
      State::In& i = s.in[k];
      if (!i.has_data) {
        std::vector<uint8_t> bytes = generated_data(i.dtype, i.capacity, 0x5eed + k);
        be.upload(i.buf, 0, bytes.data(), bytes.size(), s.queue.get());
        s.stats.bytes_generated += bytes.size();
        data.inputs[i.label] = i.buf;
      } else if (i.bytes_set < i.capacity && !i.external) {
        // Set for smaller dims than a bucket is timed at: the tail gets generated data too (it is
        // past the value the user set, so nothing visible changes).
        std::vector<uint8_t> bytes = generated_data(i.dtype, i.capacity - i.bytes_set, 0x5eed + k);
        be.upload(i.buf, i.bytes_set, bytes.data(), bytes.size(), s.queue.get());
        s.stats.bytes_generated += bytes.size();
        if (i.carried) {
          Buffer c = s.allocate(i.capacity);
          scratch.push_back(c);
          be.copy(c, i.buf, i.capacity, s.queue.get());
          data.inputs[i.label] = c;
        } else {
          data.inputs[i.label] = i.buf;
        }
      } else if (i.carried) {
        Buffer c = s.allocate(i.capacity);
        scratch.push_back(c);
        be.copy(c, i.buf, i.capacity, s.queue.get());
        data.inputs[i.label] = c;
      } else {
        data.inputs[i.label] = i.buf;
      }
    }
    for (State::Out& o : s.out) {
      data.outputs[o.label] = o.buf;
      o.valid = false;
      o.lives_in = -1;
    }
    data.fixed_bytes = memory_bytes();
    // The search runs on the backend's default queue: what this session's queue wrote (set,
    // generated data, scratch copies) must have landed first. The search returns with the
    // default queue idle (Backend::time), so nothing is needed afterwards.
    be.sync(s.queue.get());
  };
  const ProgramCache cache(s.opts);
  auto warn = [&](const std::string& w) {
    if (!w.empty()) std::cerr << "luminal: warning: " << w << "\n";
  };
  try {
    for (BucketRanges& c : s.combos) {
      State::Bucket b;
      const std::string key =
          cache.enabled() ? program_key(s.graph, s.opts, be, c, s.dim_names) : std::string();
      std::string warning;
      std::optional<CachedProgram> hit = cache.load(key, be, &warning);
      warn(warning);
      if (hit) {
        b.bp.ranges = c;
        b.bp.spec.facts = bucket_facts(s.graph, c);
        b.bp.spec.dim_names = s.dim_names;
        try {
          b.bp.plan = be.load(hit->llir, b.bp.spec);
          b.bp.llir = std::move(hit->llir);
          b.bp.report.bucket = b.bp.name();
          b.bp.report.hlir_nodes = s.graph.nodes().size();
          b.bp.report.cached = true;
          b.bp.report.cache_note = hit->file.string();
          b.bp.report.best_seconds = hit->best_seconds;
          b.bp.report.best_op_mix = b.bp.llir.op_mix();
        } catch (const std::exception& e) {
          warn("compile cache: " + hit->file.string() + " does not load (" + e.what() +
               "); searching again");
          b.bp.plan.reset();
        }
      }
      if (!b.bp.plan) {
        prepare_data();
        b.bp = search_bucket(s.graph, be, s.opts, c, s.dim_names, data, s.trace);
        if (cache.enabled()) {
          warning.clear();
          cache.store(key, b.bp.llir, b.bp.report.best_seconds, &warning);
          warn(warning);
          b.bp.report.cache_note =
              warning.empty() ? "stored in " + cache.file_of(key).string() : warning;
        }
      }
      s.reports.push_back(b.bp.report);
      if (s.opts.verbose()) std::cerr << b.bp.report.to_string();
      s.buckets.push_back(std::move(b));
    }
  } catch (...) {
    for (Buffer& b : scratch)
      s.release(b);
    s.buckets.clear();
    s.reports.clear();
    throw;
  }
  for (Buffer& b : scratch)
    s.release(b);

  // Slot ranges, index maps and the shared arena.
  uint64_t arena = 0;
  for (State::Bucket& b : s.buckets) {
    for (const std::string& d : s.dim_names)
      b.range.push_back(b.bp.spec.facts.at(d));
    const PlanIo& io = b.bp.plan->io();
    for (const std::string& l : io.inputs)
      b.in_map.push_back(s.in_of_node[s.graph.find(l)]);
    b.out_in_place.assign(s.out.size(), -1);
    for (size_t k = 0; k < io.outputs.size(); ++k) {
      const int o = s.out_of_node[s.graph.find(io.outputs[k])];
      b.out_map.push_back(o);
      if (io.output_in_input[k] >= 0) b.out_in_place[o] = b.in_map[io.output_in_input[k]];
    }
    for (auto [o, i] : s.carries)
      b.flips.push_back(b.out_in_place[o] == i ? 0 : 1);
    arena = std::max(arena, b.bp.plan->arena_bytes());
  }
  const uint64_t total = memory_bytes() + arena;
  if (s.opts.max_memory() && total > *s.opts.max_memory()) {
    s.buckets.clear();
    throw Error("session: weights, state and buffers (" + mib(memory_bytes()) +
                ") plus the largest arena (" + mib(arena) + ") need " + mib(total) +
                ", but max_memory is " + mib(*s.opts.max_memory()));
  }
  s.arena = s.allocate(arena);
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
  const Facts declared = s.graph.dim_facts();
  for (size_t d = 0; d < s.dim_names.size(); ++d) {
    const std::string& name = s.dim_names[d];
    if (s.opts.dim_buckets().count(name)) continue;
    const Interval r = declared.at(name);
    if (!r.contains(dims[d])) {
      throw Error("dynamic dimension " + name + " = " + std::to_string(dims[d]) +
                  " is outside its declared range [" + std::to_string(r.lo) + ", " +
                  std::to_string(r.hi) + "]");
    }
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
  auto matches = [&](int p) {
    if (!b.bound) return false;
    for (size_t i = 0; i < s.in.size(); ++i)
      if (b.bound_in[p][i].ptr != s.in[i].buf.ptr) return false;
    for (size_t o = 0; o < s.out.size(); ++o)
      if (b.bound_out[p][o].ptr != s.out[o].buf.ptr) return false;
    return true;
  };
  if (s.last_bucket == bucket && matches(1 - s.last_parity)) return 1 - s.last_parity;
  if (matches(0)) return 0;
  if (matches(1)) return 1;
  // Parity 0: the handles as they are; parity 1: after this plan's carries swapped them.
  for (int p = 0; p < 2; ++p) {
    auto& ins = b.bound_in[p];
    auto& outs = b.bound_out[p];
    ins.resize(s.in.size());
    outs.resize(s.out.size());
    for (size_t i = 0; i < s.in.size(); ++i)
      ins[i] = s.in[i].buf;
    for (size_t o = 0; o < s.out.size(); ++o)
      outs[o] = s.out[o].buf;
    if (p == 1)
      for (size_t c = 0; c < s.carries.size(); ++c)
        if (b.flips[c]) std::swap(ins[s.carries[c].second], outs[s.carries[c].first]);
    Bindings bind;
    for (int i : b.in_map)
      bind.inputs.push_back(ins[i]);
    for (int o : b.out_map)
      bind.outputs.push_back(outs[o]);
    bind.arena = s.arena;
    bind.queue = s.queue.get();
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
  for (State::In& i : s.in) {
    if (!i.has_data) {
      throw Error("input '" + i.label + "' has no data: call runtime.set(\"" + i.label +
                  "\", ...) before execute()");
    }
    if (i.numel.is_const()) continue;
    const uint64_t want = static_cast<uint64_t>(i.numel.eval(dims.data())) * size_bytes(i.dtype);
    if (i.bound_external ? want > i.bytes_set : want != i.bytes_set) {
      const Node& n = s.graph.node(i.node);
      throw Error("input '" + i.label + "' was given " +
                  std::to_string(i.bytes_set / size_bytes(i.dtype)) + " elements but its shape " +
                  shape_to_string(n.shape) + " needs " +
                  std::to_string(want / size_bytes(i.dtype)) + " at these dims");
    }
  }
  const int parity = pick_parity(b);
  State::Bucket& bk = s.buckets[b];
  bk.bp.plan->execute(parity, dims.data());
  ++s.stats.executes;
  s.last_bucket = b;
  s.last_parity = parity;
  std::copy(dims.begin(), dims.end(), s.last_dims.begin());
  for (size_t o = 0; o < s.out.size(); ++o) {
    s.out[o].lives_in = bk.out_in_place[o];
    s.out[o].valid = true;
  }
  // Carried state: swap handles (an in-place update needs nothing).
  for (auto [o, i] : s.carries) {
    State::Out& out = s.out[o];
    State::In& in = s.in[i];
    if (out.lives_in == i) continue;
    std::swap(in.buf, out.buf);
    out.lives_in = i;
    in.bytes_set = static_cast<uint64_t>(in.numel.eval(dims.data())) * size_bytes(in.dtype);
  }
}

void Session::execute(const DynMap& dyn_in) {
  // Runtime::merged_dims and check_dims over the ranges computed at construction: `dyn_in` over
  // the graph's set_dim values, each checked against its declared range (values of names that
  // are not dims of the graph are ignored).
  const State& s = *s_;
  if (dyn_in.count("z"))
    throw Error(
        "execute: 'z' is the index variable, not a dynamic dimension; remove it from the dyn "
        "map");
  std::vector<int64_t> dims(s.dim_names.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const std::string& d = s.dim_names[i];
    auto it = dyn_in.find(d);
    if (it == dyn_in.end()) {
      it = s.graph.dims().find(d);
      if (it == s.graph.dims().end())
        throw Error("dynamic dimension '" + d + "' has no value: call graph.set_dim(\"" + d +
                    "\", n) or pass {{\"" + d + "\", n}} to execute()");
    }
    dims[i] = it->second;
    const Interval& r = s.dim_ranges[i];
    if (!r.contains(dims[i]))
      throw Error("dynamic dimension " + d + " = " + std::to_string(dims[i]) +
                  " is outside its declared range [" + std::to_string(r.lo) + ", " +
                  std::to_string(r.hi) + "]");
  }
  execute(std::span<const int64_t>(dims));
}

void Session::sync() { s_->backend->sync(s_->queue.get()); }

Queue* Session::queue() const { return s_->queue.get(); }

void Session::set_input(NodeId id, HostBuffer data) {
  set_input_bytes(id, data.bytes.data(), data.bytes.size());
}

void Session::set_input_bytes(NodeId id, const void* data, uint64_t bytes) {
  write(InputHandle{s_->in_of_node[id]}, data, bytes);
}

Session::InputHandle Session::input(std::string_view label) const {
  return InputHandle{s_->in_of_node[resolve_input(label)]};
}

Session::InputHandle Session::input(const Tensor& t) const {
  return InputHandle{s_->in_of_node[resolve_input(t)]};
}

Session::OutputHandle Session::output(std::string_view label) const {
  return OutputHandle{s_->out_of_node[resolve_output(label)]};
}

Session::OutputHandle Session::output(const Tensor& t) const {
  return OutputHandle{s_->out_of_node[resolve_output(t)]};
}

void Session::write(InputHandle handle, const void* data, uint64_t bytes) {
  State& s = *s_;
  LUMINAL_ASSERT(handle.index >= 0 && handle.index < static_cast<int>(s.in.size()),
                 "write: not an input handle of this session");
  const int k = handle.index;
  State::In& in = s.in[k];
  if (bytes % size_bytes(in.dtype) != 0) {
    throw Error("input '" + in.label + "': " + std::to_string(bytes) +
                " bytes is not a whole number of " + std::string(name(in.dtype)) + " elements (" +
                std::to_string(size_bytes(in.dtype)) + " bytes each)");
  }
  const NodeId id = in.node;
  if (bytes > in.capacity) {
    throw Error("input '" + in.label + "' was given " +
                std::to_string(bytes / size_bytes(in.dtype)) + " elements, more than its shape " +
                shape_to_string(s.graph.node(id).shape) + " holds at the largest dims (" +
                std::to_string(in.capacity / size_bytes(in.dtype)) + ")");
  }
  s.prepare_write(k);
  s.backend->upload(in.buf, 0, data, bytes, s.queue.get());
  s.stats.bytes_uploaded += bytes;
  in.bytes_set = bytes;
  in.has_data = true;
}

void Session::set_from(std::string_view input, const Session& from, std::string_view output) {
  State& s = *s_;
  const State& f = *from.s_;
  if (f.backend != s.backend)
    throw Error("set_from: input '" + std::string(input) +
                "' and the session it copies from use different backends; copy through the host "
                "(get, then set) instead");
  const int k = s.in_of_node[resolve_input(input)];
  const State::Out& o = f.out[f.out_of_node[from.resolve_output(output)]];
  State::In& in = s.in[k];
  if (!o.valid)
    throw Error("set_from: output '" + o.label + "' has no value yet: execute its session first");
  if (o.dtype != in.dtype)
    throw Error("set_from: output '" + o.label + "' is " + std::string(name(o.dtype)) +
                " but input '" + in.label + "' is " + std::string(name(in.dtype)));
  const uint64_t bytes = f.out_bytes(o);
  if (bytes > in.capacity)
    throw Error("set_from: output '" + o.label + "' has " +
                std::to_string(bytes / size_bytes(o.dtype)) + " elements, more than input '" +
                in.label + "' holds (" + std::to_string(in.capacity / size_bytes(in.dtype)) + ")");
  // The source is written on the other session's queue: finish that work before copying.
  f.backend->sync(f.queue.get());
  s.prepare_write(k);
  s.backend->copy(in.buf, o.lives_in >= 0 ? f.in[o.lives_in].buf : o.buf, bytes, s.queue.get());
  s.stats.bytes_copied += bytes;
  in.bytes_set = bytes;
  in.has_data = true;
}

void Session::set_external(std::string_view label, const void* data, uint64_t bytes,
                           std::shared_ptr<const void> keep_alive) {
  State& s = *s_;
  const NodeId id = resolve_input(label);
  State::In& in = s.in[s.in_of_node[id]];
  const DType dt = in.dtype;
  if (bytes % size_bytes(dt) != 0) {
    throw Error("input '" + in.label + "': " + std::to_string(bytes) +
                " bytes is not a whole number of " + std::string(name(dt)) + " elements");
  }
  if (in.carried) {
    set_input_bytes(id, data, bytes);  // carried state is written in place: keep our own copy
    return;
  }
  // Only a value filling the whole buffer is used in place: the search may time a bucket at larger
  // dims than the value was set for, reading past it.
  const Buffer wrapped = bytes == in.capacity ? s.backend->wrap_host(data, bytes) : Buffer{};
  if (!wrapped) {
    set_input_bytes(id, data, bytes);
    return;
  }
  const int k = s.in_of_node[id];
  for (State::Out& o : s.out)
    if (o.lives_in == k) o.valid = false, o.lives_in = -1;
  if (!in.external) s.release(in.buf);  // the memory is used in place from now on
  in.buf = wrapped;
  in.external = true;
  in.bound_external = false;
  in.keep_alive = std::move(keep_alive);
  in.bytes_set = bytes;
  in.has_data = true;
  s.stats.bytes_wrapped += bytes;
}

void Session::bind_external(std::string_view label, void* ptr, uint64_t bytes,
                            std::shared_ptr<const void> keep_alive) {
  State& s = *s_;
  const NodeId id = resolve_input(label);
  const int k = s.in_of_node[id];
  State::In& in = s.in[k];
  auto fail = [&](const std::string& why) {
    throw Error("bind_external: input '" + in.label + "': " + why);
  };
  if (in.carried)
    fail("it is carried state (written in place by the graph); set its value with set() instead");
  if (ptr == nullptr) fail("the pointer is null");
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
    fail("the pointer is not 16-byte aligned; pass an aligned buffer (or copy it with set())");
  if (bytes < in.capacity)
    fail(std::to_string(bytes) + " bytes is less than the input takes at its largest dims (" +
         std::to_string(in.capacity) + " bytes: " +
         std::to_string(in.capacity / size_bytes(in.dtype)) + " " + std::string(name(in.dtype)) +
         " elements); pass a larger buffer, or narrow the dims' ranges");
  s.backend->check_external(ptr, bytes);
  for (State::Out& o : s.out)
    if (o.lives_in == k) o.valid = false, o.lives_in = -1;
  if (!in.external) s.release(in.buf);  // the memory is used in place from now on
  in.buf = Buffer{ptr, bytes};
  in.external = true;
  in.bound_external = true;
  in.keep_alive = std::move(keep_alive);
  in.bytes_set = in.capacity;
  in.has_data = true;
  s.stats.bytes_wrapped += bytes;
}

uint64_t Session::output_bytes(OutputHandle handle) const {
  LUMINAL_ASSERT(handle.index >= 0 && handle.index < static_cast<int>(s_->out.size()),
                 "output_bytes: not an output handle of this session");
  return s_->out_bytes(s_->out[handle.index]);
}

void Session::read(OutputHandle handle, void* dst, uint64_t bytes) const {
  const State& s = *s_;
  LUMINAL_ASSERT(handle.index >= 0 && handle.index < static_cast<int>(s.out.size()),
                 "read: not an output handle of this session");
  const State::Out& o = s.out[handle.index];
  if (!o.valid) {
    throw Error("get: output '" + o.label + "' has no value yet: call execute() first");
  }
  if (bytes != s.out_bytes(o))
    throw Error("read: output '" + o.label + "' holds " + std::to_string(s.out_bytes(o)) +
                " bytes at the last execute's dims, not " + std::to_string(bytes));
  s.backend->sync(s.queue.get());
  const Buffer src = o.lives_in >= 0 ? s.in[o.lives_in].buf : o.buf;
  s.backend->download(dst, src, 0, bytes, s.queue.get());
  s_->stats.bytes_downloaded += bytes;
}

HostBuffer Session::output_value(NodeId id) const {
  const OutputHandle handle{s_->out_of_node[id]};
  HostBuffer hb{s_->out[handle.index].dtype, std::vector<uint8_t>()};
  if (s_->out[handle.index].valid) hb.bytes.resize(output_bytes(handle));
  read(handle, hb.bytes.data(), hb.bytes.size());
  return hb;
}

std::vector<int64_t> Session::output_shape(NodeId id) const {
  const State& s = *s_;
  const State::Out& o = s.out[s.out_of_node[id]];
  if (!o.valid) {
    throw Error("get: output '" + o.label + "' has no value yet: call execute() first");
  }
  s.backend->sync(s.queue.get());  // a shape is read after the work that produced it
  std::vector<int64_t> shape;
  for (const SlotExpr& d : o.shape)
    shape.push_back(d.eval(s.last_dims.data()));
  return shape;
}

void Session::move_output_to_input(NodeId output, NodeId input) {
  State& s = *s_;
  const int ik = s.in_of_node[input];
  State::Out& o = s.out[s.out_of_node[output]];
  State::In& in = s.in[ik];
  if (!o.valid) {
    throw Error("hand_off: output '" + o.label + "' has no value yet: call execute() first");
  }
  if (o.lives_in == ik) return;  // already there
  const uint64_t bytes = s.out_bytes(o);
  // Other outputs reading the input's old value lose it.
  for (State::Out& other : s.out)
    if (&other != &o && other.lives_in == ik) other.valid = false, other.lives_in = -1;
  if (o.lives_in >= 0) {
    // The value sits in another input's buffer (updated in place): copy it over.
    if (in.external) {
      in.external = false;
      in.keep_alive.reset();
      in.buf = s.allocate(in.capacity);
    }
    s.backend->copy(in.buf, s.in[o.lives_in].buf, bytes, s.queue.get());
  } else if (in.external) {
    in.external = false;
    in.keep_alive.reset();
    in.buf = o.buf;
    o.buf = s.allocate(o.capacity);
  } else {
    std::swap(in.buf, o.buf);
  }
  o.lives_in = ik;
  in.bytes_set = bytes;
  in.has_data = true;
}

Plan& Session::bucket_plan(const DynMap& dyn) const {
  if (!s_->compiled) throw Error("plan: the session is not compiled yet; call compile()");
  const DynMap merged = merged_dims(dyn);
  std::vector<int64_t> dims(s_->dim_names.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    auto it = merged.find(s_->dim_names[i]);
    if (it != merged.end()) dims[i] = it->second;
  }
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
  const NodeId id = s_->graph.find(label);
  if (s_->in_of_node[id] >= 0) return s_->in[s_->in_of_node[id]].buf.ptr;
  return s_->out[s_->out_of_node[id]].buf.ptr;
}

Session compile(const Graph& g, Backend& backend, const CompileOptions& options) {
  Session s(g, backend, options);
  s.compile();
  return s;
}

}  // namespace luminal
