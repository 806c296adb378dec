// cuBLASLt islands (lt_islands.hpp): a plan's cuBLASLt steps, their specs and prepares, the
// workspace and capture stream, and each island's nodes in the bucket's graph per parity.
#include "luminal/cuda/cublaslt/lt_islands.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <unordered_set>

#include "luminal/core/error.hpp"
#include "luminal/core/slot_expr.hpp"
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#include "luminal/cuda/cublaslt/lt_prepare.hpp"
#include "luminal/cuda/graph_nodes.hpp"

namespace luminal::cuda {

namespace {

struct LtStep {
  int node = 0;
  GemmFamily family = GemmFamily::ColSwapped;
  LtTypes types{};
  std::vector<SlotExpr> dims, sa, sb;
  std::vector<SlotExpr> sbias;  // the bias view's strides (coefficients of z), with a bias
  int k = 0;
  LtSpec spec;      // at the dims last resolved
  int input_a = 0;  // the matmul input that is the library's A (the other is its B)
  int c_input = -1, bias_input = -1;  // the node's inputs read as C (beta 1) and as the bias
  int scale_input = -1;               // ... and as the FP8 scale (one f32)
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;  // bias and activation
  uint32_t align[4] = {256, 256, 256, 256};  // the least alignment of the bound pointers
  std::shared_ptr<LtPrepared> prep;
  struct Ptrs {
    CUdeviceptr in0 = 0, in1 = 0, out = 0, c = 0, bias = 0, scale = 0;
    bool operator==(const Ptrs&) const = default;
  };
  std::array<Ptrs, 2> ptrs{};
  std::array<bool, 2> dirty{};     // the island must be captured again
  std::array<bool, 2> respec{};    // ... because its spec changed (the graph is re-instantiated)
  std::array<bool, 2> captured{};  // captured once (a capture after that is a recapture)
  bool pending = false;            // its spec not yet resolved at the deferred dims

  LtPointers pointers(int parity) const {
    const Ptrs& p = ptrs[static_cast<size_t>(parity)];
    return LtPointers{input_a == 0 ? p.in0 : p.in1,
                      input_a == 0 ? p.in1 : p.in0,
                      c_input >= 0 ? p.c : p.out,
                      p.out,
                      p.bias,
                      p.scale};
  }
};

std::string node_text(const LlirGraph& g, int i) {
  return "%" + std::to_string(i) + " (" + std::string(g.nodes[i].op->name) + ")";
}

/// One island's nodes in the graph of one parity, and what they were captured as (what an
/// in-place update must find again).
struct Island {
  std::vector<CUgraphNode> nodes;
  std::shared_ptr<const std::vector<NodeSig>> sig;
};

class Islands final : public LtIslands {
 public:
  Islands(Device& dev, const LlirGraph& g, const std::vector<std::string>& dim_names)
      : dev_(dev),
        g_(g),
        dim_names_(dim_names),
        workspace_bytes_(dev.opts.lt_workspace_bytes),
        counts_(dev.lt_totals) {}
  ~Islands() override;

  void add(const PlanSpec& spec, int node, size_t step) override;
  void bind(int parity, const std::vector<CUdeviceptr>& ptr) override;
  void resolve(const std::vector<int64_t>& dims) override;
  bool moves_spec(const std::vector<int64_t>& dims) const override;
  void defer(const std::vector<int64_t>& dims) override;
  void settle() override;
  void ran_on_stream() override { counts_.ran_on_stream(); }
  void run(int parity, size_t step, CUstream stream) override;
  uint64_t workspace_bytes() const override { return workspace_bytes_; }
  std::optional<std::vector<int64_t>> alternate_dims(const int64_t* dims) const override;
  std::vector<std::string> specs() const override;
  std::string summary(bool stream_executor, uint64_t reinstantiations) const override;

  Need splice(int parity, size_t step, Splice& sp) override;
  bool stale(int parity, size_t step) const override {
    const LtStep& st = at(step);
    return st.pending || st.dirty[static_cast<size_t>(parity)];
  }
  void forget(int parity) override {
    islands_[static_cast<size_t>(parity)].assign(steps_.size(), {});
  }

 private:
  LtStep& at(size_t step) const { return *steps_[static_cast<size_t>(of_step_.at(step))]; }
  /// A pending step resolved at dims_.
  void settle(LtStep& st) {
    if (st.pending) resolve_step(st, dims_.data());
  }
  /// Resolves `st` at dims values `v` (slot order); re-prepares (sharing an equal spec of another
  /// step) and marks both islands stale when the spec changed. Returns whether it changed.
  bool resolve_step(LtStep& st, const int64_t* v);
  /// The step's call captured (on the side stream) into `g` after `deps`; the stream never stays
  /// capturing. Returns cuStreamEndCapture's result; throws what the call threw.
  CUresult capture_call(int parity, const LtStep& st, CUgraph g,
                        const std::vector<CUgraphNode>& deps);
  /// Destroys an island's nodes (its nodes, heads, tails and signature forgotten first).
  void drop(Island& island, Splice& sp);

  Device& dev_;
  const LlirGraph& g_;
  const std::vector<std::string> dim_names_;
  const uint64_t workspace_bytes_;
  std::vector<std::unique_ptr<LtStep>> steps_;
  std::vector<int> of_step_;                    // per plan step: its index in steps_, or -1
  std::array<std::vector<Island>, 2> islands_;  // per parity, per step of steps_
  CUdeviceptr workspace_ = 0;
  CUstream capture_ = nullptr;  // the side stream islands are captured on
  LtCounts counts_;
  std::vector<std::shared_ptr<LtPrepared>> recent_;  // the last prepares, newest last
  std::vector<int64_t> dims_;   // the dims the steps' specs were last resolved at
  std::vector<Interval> vary_;  // per dim slot: its range when a step's spec reads it and it
                                // varies in the bucket, else empty (lo > hi)
};

}  // namespace

std::unique_ptr<LtIslands> make_lt_islands(Device& dev, const LlirGraph& g,
                                           const std::vector<std::string>& dim_names) {
  return std::make_unique<Islands>(dev, g, dim_names);
}

Islands::~Islands() {
  const CudaApi& cu = *dev_.cu;
  steps_.clear();
  if (workspace_) cu.cuMemFree(workspace_);
  workspace_ = 0;
  if (capture_) cu.cuStreamDestroy(capture_);
  capture_ = nullptr;
}

bool Islands::resolve_step(LtStep& st, const int64_t* v) {
  std::vector<int64_t> dims, sa, sb;
  for (const SlotExpr& e : st.dims)
    dims.push_back(e.eval(v));
  for (const SlotExpr& e : st.sa)
    sa.push_back(e.eval(v));
  for (const SlotExpr& e : st.sb)
    sb.push_back(e.eval(v));
  const std::optional<LibGemm<int64_t>> lg = lib_gemm_of(dims, sa, sb, st.k, st.family);
  if (!lg)
    throw Error("cuda: cuBLASLt step " + node_text(g_, st.node) +
                " is not one gemm per batch index at these dims (a leading dimension below its "
                "row length); run without cuBLASLt (LUMINAL_CUDA_CUBLASLT=0)");
  if (st.bias_input >= 0) {
    std::vector<int64_t> bias;
    for (const SlotExpr& e : st.sbias)
      bias.push_back(e.eval(v));
    if (!lt_bias_fits_at(dims, sa, sb, st.k, bias))
      throw Error("cuda: cuBLASLt step " + node_text(g_, st.node) +
                  ": its bias does not run along the rows of the library's D at these dims; run "
                  "without cuBLASLt (LUMINAL_CUDA_CUBLASLT=0)");
  }
  st.pending = false;
  LtSpec s = lt_spec(*lg, st.types, workspace_bytes_);
  if (st.c_input >= 0) s.beta = 1.0;
  s.epilogue = st.epilogue;
  s.scale_a = st.scale_input >= 0;
  std::copy(std::begin(st.align), std::end(st.align), std::begin(s.align));
  if (const std::string why = lt_fp8_problem(s); !why.empty())
    throw Error("cuda: cuBLASLt step " + node_text(g_, st.node) + " at these dims: " + why +
                "; run without cuBLASLt (LUMINAL_CUDA_CUBLASLT=0)");
  if (st.prep && s == st.spec) return false;
  st.spec = s;
  st.input_a = lg->input_a;
  std::shared_ptr<LtPrepared> found;
  for (const auto& other : steps_)
    if (other.get() != &st && other->prep && other->prep->spec() == s) found = other->prep;
  if (!lt_pick_forced())
    for (const auto& r : recent_)
      if (!found && r->spec() == s) found = r;
  if (!found) {
    // The step's algorithm kept when it fits the new spec (the island's kernels stay).
    found = std::make_shared<LtPrepared>(lt_handle(dev_), s, static_cast<int>(dev_.cu_device),
                                         st.prep.get());
    counts_.prepared(found->kept());
    if (recent_.size() == kRecentPrepares) recent_.erase(recent_.begin());
    recent_.push_back(found);
  }
  st.prep = std::move(found);
  st.dirty = {true, true};
  st.respec = {true, true};
  return true;
}

void Islands::add(const PlanSpec& spec, int node, size_t step) {
  const LlirNode& n = g_.nodes[node];
  const std::optional<LtNodeGemm> sym = lt_node_gemm(n.attrs);
  if (!sym) throw Error("cuda: " + node_text(g_, node) + " is not one gemm per batch index");
  auto st = std::make_unique<LtStep>();
  st->node = node;
  st->family = lt_family(n.op);
  st->c_input = lt_c_input(n.attrs);
  st->bias_input = lt_bias_input(n.attrs);
  st->scale_input = lt_scale_input(n.attrs);
  st->epilogue = lt_epilogue_kind(lt_epilogue(n.attrs));
  std::string why;
  const std::optional<LtTypes> t =
      lt_types(n.input_dtypes.at(0), n.input_dtypes.at(1), n.attrs.dtype, dev_.tf32, &why);
  if (!t) throw Error("cuda: " + node_text(g_, node) + ": " + why);
  st->types = *t;
  for (const Expr& e : sym->dims)
    st->dims.emplace_back(e, dim_names_);
  for (const Expr& e : sym->sa)
    st->sa.emplace_back(e, dim_names_);
  for (const Expr& e : sym->sb)
    st->sb.emplace_back(e, dim_names_);
  st->k = sym->k;
  if (st->bias_input >= 0)
    for (const Expr& e : n.attrs.views.at(static_cast<size_t>(st->bias_input)).strides) {
      const std::optional<Expr> c = coefficient(e);
      if (!c) throw Error("cuda: " + node_text(g_, node) + ": its bias view has an offset");
      st->sbias.emplace_back(*c, dim_names_);
    }
  // Resolved at the bucket's upper bounds until the first execute brings the real dims: a spec
  // no algorithm fits throws here, so the search rejects the candidate.
  // (The same for every step of the plan; vary_ also records the dims this step reads that
  // vary in the bucket.)
  dims_.resize(dim_names_.size());
  vary_.resize(dim_names_.size(), Interval{1, 0});
  for (size_t d = 0; d < dim_names_.size(); ++d) {
    const Interval b = Expr::var(dim_names_[d]).bounds(spec.facts);
    dims_[d] = b.hi == INT64_MAX ? std::max<int64_t>(b.lo, 1) : b.hi;
    if (b.lo >= b.hi) continue;
    for (const std::vector<Expr>* v : {&sym->dims, &sym->sa, &sym->sb})
      for (const Expr& e : *v)
        if (e.has_var(dim_names_[d])) vary_[d] = b;
  }
  resolve_step(*st, dims_.data());
  if (of_step_.size() <= step) of_step_.resize(step + 1, -1);
  of_step_[step] = static_cast<int>(steps_.size());
  steps_.push_back(std::move(st));
  for (std::vector<Island>& islands : islands_)
    islands.resize(steps_.size());
}

std::optional<std::vector<int64_t>> Islands::alternate_dims(const int64_t* dims) const {
  std::vector<int64_t> alt(dims, dims + dim_names_.size());
  bool moved = false;
  for (size_t d = 0; d < vary_.size(); ++d) {
    const Interval& r = vary_[d];
    if (r.lo > r.hi) continue;
    alt[d] = dims[d] + 1 <= r.hi ? dims[d] + 1 : dims[d] - 1;
    moved = moved || alt[d] != dims[d];
  }
  if (!moved) return std::nullopt;
  return alt;
}

void Islands::bind(int parity, const std::vector<CUdeviceptr>& ptr) {
  const CudaApi& cu = *dev_.cu;
  if (!workspace_) {
    dev_.bind_context();
    check(cu.cuMemAlloc(&workspace_, workspace_bytes_), "cuMemAlloc (cuBLASLt workspace)");
    check(cu.cuStreamCreate(&capture_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
  for (const auto& st : steps_) {
    const LlirNode& n = g_.nodes[st->node];
    auto in = [&](int i) { return i >= 0 ? ptr[n.inputs[static_cast<size_t>(i)]] : 0; };
    LtStep::Ptrs p{
        in(0), in(1), ptr[st->node], in(st->c_input), in(st->bias_input), in(st->scale_input)};
    if (!(p == st->ptrs[parity])) st->dirty[parity] = true;
    st->ptrs[parity] = p;
    // A pointer less aligned than the spec says (an external binding): prepare for it.
    const LtPointers lp = st->pointers(parity);
    const uint32_t al[4] = {pointer_alignment(lp.a), pointer_alignment(lp.b),
                            pointer_alignment(lp.c), pointer_alignment(lp.d)};
    if (lp.bias && pointer_alignment(lp.bias) < 16)
      throw Error("cuda: cuBLASLt step " + node_text(g_, st->node) +
                  ": its bias is not 16-byte aligned; bind it 16-byte aligned");
    bool lower = false;
    for (int i = 0; i < 4; ++i)
      if (al[i] < st->align[i]) {
        st->align[i] = al[i];
        lower = true;
      }
    if (lower) resolve_step(*st, dims_.data());
  }
}

void Islands::resolve(const std::vector<int64_t>& dims) {
  dims_ = dims;
  for (const auto& st : steps_)
    resolve_step(*st, dims_.data());
}

bool Islands::moves_spec(const std::vector<int64_t>& dims) const {
  for (size_t d = 0; d < vary_.size() && d < dims.size(); ++d)
    if (vary_[d].lo <= vary_[d].hi && dims[d] != dims_[d]) return true;
  return false;
}

void Islands::defer(const std::vector<int64_t>& dims) {
  dims_ = dims;
  for (const auto& st : steps_)
    st->pending = true;
}

void Islands::settle() {
  for (const auto& st : steps_)
    settle(*st);
}

void Islands::run(int parity, size_t step, CUstream stream) {
  LtStep& st = at(step);
  settle(st);
  st.prep->enqueue(st.pointers(parity), workspace_, stream);
  counts_.called();
}

CUresult Islands::capture_call(int parity, const LtStep& st, CUgraph g,
                               const std::vector<CUgraphNode>& deps) {
  const CudaApi& cu = *dev_.cu;
  check(cu.cuStreamBeginCaptureToGraph(capture_, g, deps.data(), nullptr, deps.size(),
                                       CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCaptureToGraph");
  CUgraph captured = nullptr;
  try {
    st.prep->enqueue(st.pointers(parity), workspace_, capture_);
  } catch (...) {
    cu.cuStreamEndCapture(capture_, &captured);  // a stream left capturing poisons later calls
    throw;
  }
  return cu.cuStreamEndCapture(capture_, &captured);
}

void Islands::drop(Island& island, Splice& sp) {
  // Forgotten first: no handle to a destroyed node survives a throw.
  const std::vector<CUgraphNode> gone = std::move(island.nodes);
  island.nodes.clear();
  sp.heads.clear();
  sp.tails.clear();
  island.sig = nullptr;
  for (CUgraphNode n : gone)
    check(dev_.cu->cuGraphDestroyNode(n), "cuGraphDestroyNode");
}

GraphSplicer::Need Islands::splice(int parity, size_t step, Splice& sp) {
  const CudaApi& cu = *dev_.cu;
  const size_t p = static_cast<size_t>(parity);
  LtStep& st = at(step);
  settle(st);
  Island& island = islands_[p][static_cast<size_t>(of_step_[step])];
  auto done = [&](Need r) {
    counts_.captured(st.captured[p], r == Need::InPlace);
    st.captured[p] = true;
    st.dirty[p] = false;
    st.respec[p] = false;
    return r;
  };
  // After a spec change, other kernels than the island's (from a new algorithm) need a
  // re-instantiation: they may have other cluster attributes, which an update takes without
  // applying.
  const bool respec = st.respec[p];
  const std::shared_ptr<const std::vector<NodeSig>> old = island.sig;
  // An island already in an executable can be updated in place: the call captured on its own
  // first; when it comes out as the island's kernels again (the algorithm kept: only grids and
  // arguments new), their parameters are set on the island, in the template and in the
  // executable. (Not on nodes added since the executable was instantiated: the node-level
  // update needs nodes the executable was made from.)
  const bool in_place_possible =
      sp.exec && !island.nodes.empty() && sp.in_exec && old && kernels_only(*old);
  const std::vector<CUgraphNode>& pred = sp.pred;

  if (in_place_possible) {
    ScratchGraph scratch(cu);
    check(capture_call(parity, st, scratch.g, {}), "cuStreamEndCapture");
    const std::vector<CUgraphNode> fresh = topo_order(cu, graph_nodes(cu, scratch.g));
    if (node_signature(cu, fresh) == *old) {
      const bool ok = copy_kernel_params(cu, fresh, island.nodes, sp.exec);
      return done(ok ? Need::InPlace : Need::Reinstantiate);
    }
  }
  // Otherwise the island's nodes are replaced: the call captured into the graph after the
  // step before (the executor then links the step after to it).
  drop(island, sp);
  std::unordered_set<CUgraphNode> before;  // (only needed with no step before)
  if (pred.empty())
    for (CUgraphNode n : graph_nodes(cu, sp.graph))
      before.insert(n);
  // What a failed capture left in the graph must not join the next island.
  auto drop_captured = [&] {
    for (CUgraphNode n : captured_nodes(cu, sp.graph, pred, before))
      cu.cuGraphDestroyNode(n);
  };
  CUresult ended = CUDA_SUCCESS;
  try {
    ended = capture_call(parity, st, sp.graph, pred);
  } catch (...) {
    drop_captured();
    throw;
  }
  if (ended != CUDA_SUCCESS) {
    drop_captured();
    check(ended, "cuStreamEndCapture");
  }
  island.nodes = topo_order(cu, captured_nodes(cu, sp.graph, pred, before));
  sp.replaced = true;
  if (island.nodes.empty()) {
    // Nothing launched (an empty product): one empty node keeps the chain.
    CUgraphNode e = nullptr;
    check(cu.cuGraphAddEmptyNode(&e, sp.graph, pred.data(), pred.size()), "cuGraphAddEmptyNode");
    island.nodes = {e};
  }
  sp.heads = entry_nodes(cu, island.nodes);
  for (CUgraphNode n : island.nodes)  // the island's last nodes: nothing in it depends on them
    if (dependents(cu, n).empty()) sp.tails.push_back(n);
  // New nodes: an exec update, or a re-instantiation when the spec changed and the island's
  // kernels did.
  auto sig = std::make_shared<const std::vector<NodeSig>>(node_signature(cu, island.nodes));
  const bool same_kernels = old && *old == *sig;
  island.sig = std::move(sig);
  return done(respec && !same_kernels ? Need::Reinstantiate : Need::Update);
}

std::vector<std::string> Islands::specs() const {
  std::vector<std::string> out;
  for (const auto& st : steps_)
    out.push_back(st->spec.to_string());
  return out;
}

std::string Islands::summary(bool stream_executor, uint64_t reinstantiations) const {
  std::map<std::string, int> kinds;
  std::unordered_set<const LtPrepared*> preps;
  std::string specs;
  for (const auto& st : steps_) {
    const LlirNode& n = g_.nodes[st->node];
    const std::string e = lt_epilogue(n.attrs).to_string();
    ++kinds[std::string(family_name(st->family)) + (e == "epilogue=" ? "" : " " + e)];
    preps.insert(st->prep.get());
    specs += "    " + node_text(g_, st->node) + ": " + st->spec.to_string() + "\n";
  }
  std::string steps;
  for (const auto& [k, c] : kinds)
    steps += (steps.empty() ? "" : ", ") + std::to_string(c) + " " + k;
  auto u = [](uint64_t v) { return std::to_string(v); };
  const LtStats& c = counts_.plan();
  return "  cuBLASLt: " + std::to_string(steps_.size()) + " steps (" + steps + "), " +
         u(preps.size()) + " prepared specs in use (" + u(c.prepares) + " prepares, " +
         u(c.algo_kept) + " kept their step's algorithm), " + u(c.captures) + " captures (" +
         u(c.recaptures) + " again, " + u(c.in_place) + " in place), " + u(reinstantiations) +
         " re-instantiations after a recapture, " + u(c.calls) + " stream calls, workspace " +
         u(workspace_bytes_ >> 20) + " MiB" + (stream_executor ? ", stream executor" : "") + "\n" +
         specs;
}

}  // namespace luminal::cuda
