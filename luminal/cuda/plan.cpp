#include "luminal/cuda/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/cuda_op.hpp"

namespace luminal::cuda {

namespace {

unsigned to_grid(int64_t v) {
  if (v < 0) v = 0;
  return static_cast<unsigned>(std::min<int64_t>(v, 0x7FFFFFFF));
}

}  // namespace

std::vector<KernelGen> CudaPlan::generate(const LlirGraph& g, const PlanSpec& spec, int sm_count,
                                          std::vector<int>* nodes) {
  const PlanIo io = PlanIo::of(g);
  const std::vector<int> direct = PlanLayout::direct_outputs(g, io);
  GenContext ctx{spec.facts, spec.dim_names, sm_count};
  std::vector<KernelGen> gens;
  int outputs = 0;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const LlirNode& node = g.nodes[i];
    if (is_input(node)) continue;
    if (is_output(node)) {
      const int k = outputs++;
      if (io.output_in_input[k] >= 0) continue;      // written in place: nothing to copy
      if (direct[node.inputs.at(0)] == k) continue;  // its producer wrote it there
      gens.push_back(gen_view_copy(node, ctx));
    } else {
      const CudaOp* op = find_cuda_op(node.op);
      if (!op)
        throw Error("cuda backend cannot run op '" + std::string(node.op->name) + "' (node %" +
                    std::to_string(i) + "); the extraction chose an op of another backend");
      gens.push_back(op->generate(node, ctx));
    }
    nodes->push_back(i);
  }
  return gens;
}

CudaPlan::CudaPlan(Device& dev, const LlirGraph& g, const PlanSpec& spec)
    : dev_(dev), g_(g), dim_names_(spec.dim_names) {
  dev_.bind_context();
  const CudaApi& cu = *dev_.cu;
  PlanLayout::check_structure(g_);
  g_.fill_input_dtypes();
  io_ = PlanIo::of(g_);

  // Kernels: one KernelGen per compute node and per Output copy.
  std::vector<int> gen_node;
  std::vector<KernelGen> gens = generate(g_, spec, dev_.sm_count, &gen_node);
  std::vector<std::string> whats;
  for (int i : gen_node)
    whats.push_back("node " + PlanLayout::node_name(g_, i));
  layout_.slots(g_);
  // A node without a kernel source is a library call (cuBLASLt).
  std::vector<std::string> sources, kernel_whats;
  std::vector<int> kernel_of(gens.size(), -1);
  for (size_t j = 0; j < gens.size(); ++j) {
    if (gens[j].source.empty()) continue;
    kernel_of[j] = static_cast<int>(sources.size());
    sources.push_back(gens[j].source);
    kernel_whats.push_back(whats[j]);
  }
  kernels_ = dev_.modules->kernels_of(sources, kernel_whats);
  graph_ = dev_.executor == CudaOptions::Executor::Graph;
  const int64_t loop_cap = int64_t{dev_.sm_count} * kLoopBlocksPerSm;
  for (size_t j = 0; j < gens.size(); ++j) {
    if (kernel_of[j] < 0) {
      Step s;
      s.node = gen_node[j];
      s.bytes = SlotExpr(gens[j].bytes, dim_names_);
      s.flops = SlotExpr(gens[j].flops, dim_names_);
      load_lt(spec, s);
      steps_.push_back(std::move(s));
      continue;
    }
    for (const Launch& l : gens[j].launches) {
      Step s;
      s.node = gen_node[j];
      s.fn = kernels_[static_cast<size_t>(kernel_of[j])].function(l.entry);
      s.launch = l;
      for (int a = 0; a < 3; ++a) {
        s.grid[a] = SlotExpr(l.grid[a], dim_names_);
        // The graph's grid: exact when it is the same for every dim value of the bucket, else
        // the largest one capped (every kernel loops grid-stride over x).
        const Interval b = l.grid[a].bounds(spec.facts);
        if (b.lo == b.hi) {
          s.graph_grid[a] = to_grid(b.hi);
        } else if (a == 0) {
          s.graph_grid[a] = to_grid(std::min(b.hi, loop_cap));
        } else {
          graph_ = false;  // only x loops: launch this plan from the stream
        }
      }
      s.bytes = SlotExpr(gens[j].bytes, dim_names_);
      s.flops = SlotExpr(gens[j].flops, dim_names_);
      steps_.push_back(std::move(s));
    }
  }

  // A driver that cannot capture cuBLASLt calls: this plan runs on the stream.
  if (graph_ && !lt_.empty() && !lt_capture_works(dev_)) graph_ = false;

  // The arena: every buffer at its largest size in the bucket.
  layout_.place(g_, spec, io_, kAlignment);

  // Dims: a device array and pinned staging slots.
  dims_.assign(dim_names_.size(), 0);
  const size_t dim_bytes = std::max<size_t>(dims_.size(), 1) * sizeof(int64_t);
  check(cu.cuMemAlloc(&dims_dev_, dim_bytes), "cuMemAlloc (plan dims)");
  void* host = nullptr;
  check(cu.cuMemAllocHost(&host, dim_bytes * kStaging), "cuMemAllocHost (dims staging)");
  staging_ = static_cast<int64_t*>(host);
  for (CUevent& e : staging_done_)
    check(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
}

CudaPlan::~CudaPlan() {
  const CudaApi& cu = *dev_.cu;
  dev_.bind_context();
  // Launches and dims copies may still run on the streams it was bound with (their queues
  // outlive the plan).
  if (dims_stream_) cu.cuStreamSynchronize(dims_stream_);
  for (const Bound& bd : bound_)
    if (bd.queue && bd.queue->stream != dims_stream_) cu.cuStreamSynchronize(bd.queue->stream);
  for (int p = 0; p < 2; ++p)
    destroy_graph(p);
  destroy_lt();
  for (CUevent e : staging_done_)
    if (e) cu.cuEventDestroy(e);
  if (staging_) cu.cuMemFreeHost(staging_);
  if (dims_dev_) cu.cuMemFree(dims_dev_);
}

void CudaPlan::bind(int parity, const Bindings& b) {
  LUMINAL_ASSERT(parity == 0 || parity == 1, "cuda: parity must be 0 or 1");
  if (b.inputs.size() != io_.inputs.size() || b.outputs.size() != io_.outputs.size())
    throw Error("cuda: bind got " + std::to_string(b.inputs.size()) + " inputs and " +
                std::to_string(b.outputs.size()) + " outputs; the plan has " +
                std::to_string(io_.inputs.size()) + " and " + std::to_string(io_.outputs.size()));
  if (b.arena.bytes < arena_bytes())
    throw Error("cuda: the bound arena has " + std::to_string(b.arena.bytes) +
                " bytes; the plan needs " + std::to_string(arena_bytes()));
  CudaQueue& queue = dev_.queue(b.queue);
  Bound& bd = bound_[parity];
  bd.bound = false;
  const std::vector<std::vector<CUdeviceptr>> old_args = bd.exec ? bd.args : decltype(bd.args){};
  const std::vector<bool> old_skip = bd.skip;
  bd.queue = &queue;
  layout_.addresses(g_, io_, b, bd.ptr);
  bd.args.assign(steps_.size(), {});
  bd.argp.assign(steps_.size(), {});
  bd.skip.assign(steps_.size(), false);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const LlirNode& node = g_.nodes[steps_[s].node];
    std::vector<CUdeviceptr>& a = bd.args[s];
    a.push_back(bd.ptr[steps_[s].node]);
    for (int in : node.inputs)
      a.push_back(bd.ptr[in]);
    a.push_back(dims_dev_);
    a.push_back(queue.err);
    for (CUdeviceptr& p : a)
      bd.argp[s].push_back(&p);
    const int k = node.op->inplace_input;
    bd.skip[s] = steps_[s].launch.skip_when_aliased && k >= 0 &&
                 bd.ptr[steps_[s].node] == bd.ptr[node.inputs[k]];
  }
  bind_lt(parity);
  if (graph_) {
    dev_.bind_context();
    if (bd.exec)
      update_graph(parity, old_args, old_skip);
    else
      build_graph(parity);
  }
  bd.bound = true;
}

CudaQueue& CudaPlan::queue(int parity) const {
  LUMINAL_ASSERT(parity == 0 || parity == 1, "cuda: parity must be 0 or 1");
  const Bound& bd = bound_[parity];
  if (!bd.bound) throw Error("cuda: the plan is not bound (parity " + std::to_string(parity) + ")");
  return *bd.queue;
}

bool CudaPlan::update_dims(const int64_t* dims, CUstream stream) {
  const CudaApi& cu = *dev_.cu;
  if (dims_stream_ != stream) {
    // The dims array moves to another stream (a plan the search timed, now bound to a session's
    // queue): nothing on the old stream may still read it or write it.
    if (dims_stream_) check(cu.cuStreamSynchronize(dims_stream_), "cuStreamSynchronize");
    dims_stream_ = stream;
  }
  const size_t k = dims_.size();
  if (dims_valid_ && (k == 0 || std::memcmp(dims_.data(), dims, k * sizeof(int64_t)) == 0))
    return false;
  if (k > 0) {
    std::memcpy(dims_.data(), dims, k * sizeof(int64_t));
    const int slot = next_slot_;
    next_slot_ = (next_slot_ + 1) % kStaging;
    // The slot's previous copy must have run before its bytes change.
    check(cu.cuEventSynchronize(staging_done_[slot]), "cuEventSynchronize (dims staging)");
    int64_t* host = staging_ + static_cast<size_t>(slot) * k;
    std::memcpy(host, dims, k * sizeof(int64_t));
    check(cu.cuMemcpyHtoDAsync(dims_dev_, host, k * sizeof(int64_t), stream),
          "cuMemcpyHtoDAsync (dims)");
    check(cu.cuEventRecord(staging_done_[slot], stream), "cuEventRecord");
  }
  grids_valid_ = false;  // the launches' grids, for the stream executor (the graph's are fixed)
  dims_valid_ = true;
  return k > 0;
}

void CudaPlan::update_grids() {
  if (grids_valid_) return;
  for (Step& s : steps_)
    for (int a = 0; a < 3; ++a)
      s.grid_now[a] = to_grid(s.grid[a].eval(dims_.data()));
  grids_valid_ = true;
}

void CudaPlan::launch(int parity, size_t s) {
  update_grids();
  Bound& bd = bound_[parity];
  const Step& st = steps_[s];
  if (bd.skip[s] || st.grid_now[0] == 0 || st.grid_now[1] == 0 || st.grid_now[2] == 0) return;
  check(dev_.cu->cuLaunchKernel(st.fn, st.grid_now[0], st.grid_now[1], st.grid_now[2],
                                static_cast<unsigned>(st.launch.block), 1, 1, 0, bd.queue->stream,
                                bd.argp[s].data(), nullptr),
        "cuLaunchKernel");
}

void CudaPlan::run_step(int parity, size_t s) {
  if (steps_[s].lt >= 0)
    run_lt(parity, s);
  else
    launch(parity, s);
}

void CudaPlan::execute(int parity, const int64_t* dims) {
  Bound& bd = bound_[parity];
  if (!bd.bound) throw Error("cuda: execute before bind (parity " + std::to_string(parity) + ")");
  dev_.bind_context();
  if (graph_) {
    using Clock = std::chrono::steady_clock;
    auto ns = [](Clock::time_point a, Clock::time_point b) {
      return static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
    };
    const auto t0 = Clock::now();
    const bool copied = update_dims(dims, bd.queue->stream);
    if (!lt_.empty()) {
      const auto r0 = Clock::now();
      if (copied) resolve_lt();
      const auto r1 = Clock::now();
      refresh_islands(parity);
      dev_.lt_totals.host_time(ns(r0, r1), ns(r1, Clock::now()));
    }
    const auto t1 = Clock::now();
    check(dev_.cu->cuGraphLaunch(bd.exec, bd.queue->stream), "cuGraphLaunch");
    const auto t2 = Clock::now();
    dev_.graphs.launched(ns(t1, t2), copied, ns(t0, t1));
    return;
  }
  if (update_dims(dims, bd.queue->stream) && !lt_.empty()) resolve_lt();
  for (size_t s = 0; s < steps_.size(); ++s)
    run_step(parity, s);
}

}  // namespace luminal::cuda
