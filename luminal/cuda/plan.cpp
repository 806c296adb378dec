#include "luminal/cuda/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/step_deps.hpp"

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
  const std::vector<int> direct = direct_outputs(g, io);
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
  check_llir(g_, "cuda");
  g_.fill_input_dtypes();
  // Slots, aliases and the arena: every buffer at its largest size in the bucket.
  // With dataflow edges, arena ranges are reused only kReuseGap steps after their last reader,
  // so a reuse rarely ties a kernel to an unrelated recent one (LUMINAL_CUDA_REUSE_GAP).
  dataflow_ = dev_.executor == CudaOptions::Executor::Graph &&
              dev_.graph_edges == CudaOptions::GraphEdges::Dataflow;
  layout_ = PlanLayout(
      g_, spec,
      {.backend = "cuda",
       .alignment = kAlignment,
       .direct_outputs = true,
       .reuse_gap = dataflow_ ? env_int("LUMINAL_CUDA_REUSE_GAP", kReuseGap, 0, 4096) : 0});
  io_ = layout_.io();

  // Kernels: one KernelGen per compute node and per Output copy.
  std::vector<int> gen_node;
  std::vector<KernelGen> gens = generate(g_, spec, dev_.sm_count, &gen_node);
  std::vector<std::string> whats;
  for (int i : gen_node)
    whats.push_back("node " + node_name(g_, i));
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
      s.library = true;
      if (!lt_) lt_ = make_lt_islands(dev_, g_, dim_names_);
      lt_->add(spec, s.node, steps_.size());
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
  if (graph_ && lt_ && !lt_capture_works(dev_)) graph_ = false;

  // Dims: a device array and pinned staging slots.
  dims_ = std::make_unique<DimsStaging>(*dev_.cu, dim_names_.size());
  dataflow_ = dataflow_ && graph_;  // a plan launched from the stream has no edges
  stream_pdl_ = graph_ && dev_.programmatic && env_switch_on("LUMINAL_CUDA_STREAM_PDL");
  if (graph_) {
    const GraphSteps& steps = *this;
    graph_exec_ = std::make_unique<GraphExecutor>(dev_, steps, lt_.get(), this);
  }
}

CudaPlan::~CudaPlan() {
  const CudaApi& cu = *dev_.cu;
  dev_.bind_context();
  // Launches and dims copies may still run on the streams it was bound with (their queues
  // outlive the plan).
  const CUstream dims_stream = dims_->stream();
  if (dims_stream) cu.cuStreamSynchronize(dims_stream);
  for (const Bound& bd : bound_)
    if (bd.queue && bd.queue->stream != dims_stream) cu.cuStreamSynchronize(bd.queue->stream);
  graph_exec_.reset();  // both parities' graphs
  lt_.reset();          // the cuBLASLt steps, their workspace and capture stream
  dims_.reset();
}

void CudaPlan::bind(int parity, const Bindings& b) {
  LUMINAL_ASSERT(parity == 0 || parity == 1, "cuda: parity must be 0 or 1");
  layout_.check(b);
  CudaQueue& queue = dev_.queue(b.queue);
  Bound& bd = bound_[parity];
  bd.bound = false;
  const bool built = graph_ && graph_exec_->built(parity);
  const std::vector<std::vector<CUdeviceptr>> old_args = built ? bd.args : decltype(bd.args){};
  const std::vector<bool> old_skip = bd.skip;
  const std::vector<std::vector<size_t>> old_deps = bd.deps;
  bd.queue = &queue;
  layout_.addresses(b, bd.ptr);
  bd.extent = layout_.extents(b);
  bd.args.assign(steps_.size(), {});
  bd.argp.assign(steps_.size(), {});
  bd.skip.assign(steps_.size(), false);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const LlirNode& node = g_.nodes[steps_[s].node];
    std::vector<CUdeviceptr>& a = bd.args[s];
    a.push_back(bd.ptr[steps_[s].node]);
    for (int in : node.inputs)
      a.push_back(bd.ptr[in]);
    a.push_back(dims_->device());
    a.push_back(queue.err);
    for (CUdeviceptr& p : a)
      bd.argp[s].push_back(&p);
    const int k = node.op->inplace_input;
    bd.skip[s] = steps_[s].launch.skip_when_aliased && k >= 0 &&
                 bd.ptr[steps_[s].node] == bd.ptr[node.inputs[k]];
  }
  if (lt_) lt_->bind(parity, bd.ptr);
  if (dataflow_) bd.deps = dataflow(parity);
  if (graph_) {
    dev_.bind_context();
    if (built) {
      // The launches that run and their edges, and per step whether its arguments moved.
      const bool same_launches =
          old_skip == bd.skip && old_args.size() == bd.args.size() && old_deps == bd.deps;
      std::vector<bool> moved(steps_.size(), false);
      for (size_t s = 0; same_launches && s < steps_.size(); ++s)
        moved[s] = old_args[s] != bd.args[s];
      graph_exec_->rebind(parity, queue.stream, same_launches, moved);
    } else {
      graph_exec_->build(parity, queue.stream);
    }
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
  return dims_->update(dims, stream);
}

void CudaPlan::update_grids() {
  if (grids_at_ == dims_->version()) return;
  for (Step& s : steps_)
    for (int a = 0; a < 3; ++a)
      s.grid_now[a] = to_grid(s.grid[a].eval(dims_->values().data()));
  grids_at_ = dims_->version();
}

void CudaPlan::launch(int parity, size_t s, bool pdl) {
  update_grids();
  Bound& bd = bound_[parity];
  const Step& st = steps_[s];
  if (bd.skip[s] || st.grid_now[0] == 0 || st.grid_now[1] == 0 || st.grid_now[2] == 0) return;
  if (pdl) {
    // As the graph's programmatic edges: every kernel waits for the one before in lmn_pdl.
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = st.grid_now[0];
    cfg.gridDimY = st.grid_now[1];
    cfg.gridDimZ = st.grid_now[2];
    cfg.blockDimX = static_cast<unsigned>(st.launch.block);
    cfg.blockDimY = 1;
    cfg.blockDimZ = 1;
    cfg.hStream = bd.queue->stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    check(dev_.cu->cuLaunchKernelEx(&cfg, st.fn, bd.argp[s].data(), nullptr), "cuLaunchKernelEx");
    return;
  }
  check(dev_.cu->cuLaunchKernel(st.fn, st.grid_now[0], st.grid_now[1], st.grid_now[2],
                                static_cast<unsigned>(st.launch.block), 1, 1, 0, bd.queue->stream,
                                bd.argp[s].data(), nullptr),
        "cuLaunchKernel");
}

void CudaPlan::run_step(int parity, size_t s, bool pdl) {
  if (steps_[s].library)
    lt_->run(parity, s, bound_[parity].queue->stream);
  else
    launch(parity, s, pdl);
}

void CudaPlan::execute(int parity, const int64_t* dims) {
  Bound& bd = bound_[parity];
  if (!bd.bound) throw Error("cuda: execute before bind (parity " + std::to_string(parity) + ")");
  dev_.bind_context();
  if (graph_) {
    using Clock = GraphExecutor::Clock;
    auto ns = [](Clock::time_point a, Clock::time_point b) {
      return static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
    };
    const auto t0 = Clock::now();
    const bool copied = update_dims(dims, bd.queue->stream);
    if (lt_ && dev_.new_dims == CudaOptions::NewDims::Stream && lt_->moves_spec(dims_->values())) {
      // Dims that move a cuBLASLt spec (a new prompt length): this execute runs on the stream,
      // each step prepared just before its call while the device runs the ones before; the
      // islands are captured again if the next execute keeps these dims.
      lt_->defer(dims_->values());
      lt_->ran_on_stream();
      for (size_t s = 0; s < steps_.size(); ++s)
        run_step(parity, s, stream_pdl_);
      return;
    }
    if (lt_) {
      const auto r0 = Clock::now();
      if (copied)
        lt_->resolve(dims_->values());
      else
        lt_->settle();  // steps a stream run at these dims left unresolved (it threw)
      const auto r1 = Clock::now();
      graph_exec_->refresh(parity);
      dev_.lt_totals.host_time(ns(r0, r1), ns(r1, Clock::now()));
    }
    graph_exec_->launch(parity, bd.queue->stream, copied, t0);
    return;
  }
  if (update_dims(dims, bd.queue->stream) && lt_) lt_->resolve(dims_->values());
  for (size_t s = 0; s < steps_.size(); ++s)
    run_step(parity, s);
}

std::optional<std::vector<int64_t>> CudaPlan::alternate_dims(const int64_t* dims) const {
  if (!lt_) return std::nullopt;
  return lt_->alternate_dims(dims);
}

std::string CudaPlan::lt_summary() const {
  if (!lt_) return "";
  return lt_->summary(!graph_, graph_exec_ ? graph_exec_->splice_reinstantiations() : 0);
}

std::vector<std::string> CudaPlan::lt_specs() const {
  if (!lt_) return {};
  return lt_->specs();
}

bool CudaPlan::in_graph(int parity, size_t s) const {
  const std::array<unsigned, 3>& grid = steps_[s].graph_grid;
  return !bound_[parity].skip[s] && grid[0] > 0 && grid[1] > 0 && grid[2] > 0;
}

CUDA_KERNEL_NODE_PARAMS CudaPlan::kernel_params(int parity, size_t s) const {
  const Bound& bd = bound_[parity];
  const Step& st = steps_[s];
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = st.fn;
  p.gridDimX = st.graph_grid[0];
  p.gridDimY = st.graph_grid[1];
  p.gridDimZ = st.graph_grid[2];
  p.blockDimX = static_cast<unsigned>(st.launch.block);
  p.blockDimY = 1;
  p.blockDimZ = 1;
  p.sharedMemBytes = 0;
  // The driver copies the argument values when the node is added or updated.
  p.kernelParams = const_cast<void**>(bd.argp[s].data());
  return p;
}

std::string CudaPlan::dims_text() const {
  std::string dims;
  for (size_t d = 0; d < dim_names_.size(); ++d)
    dims += (d ? " " : "") + dim_names_[d] + "=" + std::to_string(dims_->values()[d]);
  return dims;
}

const std::vector<std::vector<size_t>>* CudaPlan::dependencies(int parity) const {
  return dataflow_ ? &bound_[parity].deps : nullptr;
}

std::vector<std::vector<size_t>> CudaPlan::dataflow(int parity) const {
  const Bound& bd = bound_[parity];
  std::vector<StepAccess> access;
  for (size_t s = 0; s < steps_.size(); ++s) {
    StepAccess& a = access.emplace_back(node_access(g_, steps_[s].node, bd.ptr, bd.extent));
    a.library = steps_[s].library;
    a.runs = a.library || in_graph(parity, s);
  }
  return step_dependencies(access);
}

}  // namespace luminal::cuda
