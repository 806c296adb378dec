// cuBLASLt steps of a CudaPlan (see plan.hpp). A cuda.LtMatmul node has no kernel: its LtSpec is
// resolved from the node's views at the current dims (lt_node_gemm, lib_gemm, lt_spec), prepared
// once per distinct spec in the plan (equal specs share one: the plan's steps run in a chain, so
// no two calls use the workspace at once) and enqueued with the bound pointers. With the graph
// executor each call is an island of the bucket's graph: an empty entry node, the call captured
// after it (thread-local capture on the plan's side stream), an empty exit node. Unchanged spec
// and pointers: nothing to do; moved pointers (a re-bind) or a new spec (a dim the matmul reads
// changed): the island is captured again. When only pointers moved, the executable is updated
// (cuGraphExecUpdate; re-instantiated when the driver refuses). When the spec changed, it is
// re-instantiated: the new call may be another kernel with other launch attributes (thread block
// clusters on sm_90), which an exec update accepts but does not carry over correctly.
#include <algorithm>

#include "luminal/core/error.hpp"
#include "luminal/cuda/plan.hpp"

#ifdef LUMINAL_HAVE_CUBLASLT
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#include "luminal/cuda/cublaslt/lt_prepare.hpp"
#endif

namespace luminal::cuda {

#ifdef LUMINAL_HAVE_CUBLASLT

bool lt_available(std::string* why) { return lt_api(why) != nullptr; }

LtHandle& CudaBackend::Impl::lt_handle() {
  std::lock_guard<std::mutex> lock(lt_mu);
  if (!lt) {
    std::string why;
    const LtApi* api = lt_api(&why);
    if (!api) throw Error("cuda: " + why);
    bind_context();
    lt = std::make_shared<LtHandle>(*api);
  }
  return *lt;
}

struct CudaPlan::LtStep {
  int node = 0;
  GemmFamily family = GemmFamily::ColSwapped;
  LtTypes types{};
  std::vector<SlotExpr> dims, sa, sb;
  int k = 0;
  LtSpec spec;      // at the dims last resolved
  int input_a = 0;  // the matmul input that is the library's A (the other is its B)
  uint32_t align[4] = {256, 256, 256, 256};  // the least alignment of the bound pointers
  std::shared_ptr<LtPrepared> prep;
  struct Ptrs {
    CUdeviceptr in0 = 0, in1 = 0, out = 0;
    bool operator==(const Ptrs&) const = default;
  };
  std::array<Ptrs, 2> ptrs{};
  std::array<CUgraphNode, 2> entry{}, exit{};
  std::array<bool, 2> dirty{};     // the island must be captured again
  std::array<bool, 2> respec{};    // ... because its spec changed (the graph is re-instantiated)
  std::array<bool, 2> captured{};  // captured once (a capture after that is a recapture)

  LtPointers pointers(int parity) const {
    const Ptrs& p = ptrs[static_cast<size_t>(parity)];
    return LtPointers{input_a == 0 ? p.in0 : p.in1, input_a == 0 ? p.in1 : p.in0, p.out, p.out};
  }
};

namespace {

std::string node_text(const LlirGraph& g, int i) {
  return "%" + std::to_string(i) + " (" + std::string(g.nodes[i].op->name) + ")";
}

std::vector<CUgraphNode> between(const CudaApi& cu, CUgraphNode entry, CUgraphNode exit) {
  std::vector<CUgraphNode> seen, todo = {entry};
  while (!todo.empty()) {
    CUgraphNode n = todo.back();
    todo.pop_back();
    // (with edge data: a query without it fails on a programmatic edge cuBLASLt may capture)
    size_t count = 0;
    check(cu.cuGraphNodeGetDependentNodes(n, nullptr, nullptr, &count),
          "cuGraphNodeGetDependentNodes");
    std::vector<CUgraphNode> next(count);
    std::vector<CUgraphEdgeData> edges(count);
    if (count)
      check(cu.cuGraphNodeGetDependentNodes(n, next.data(), edges.data(), &count),
            "cuGraphNodeGetDependentNodes");
    for (CUgraphNode x : next)
      if (x != exit && std::find(seen.begin(), seen.end(), x) == seen.end()) {
        seen.push_back(x);
        todo.push_back(x);
      }
  }
  return seen;
}

}  // namespace

/// Resolves `st` at dims values `v` (slot order); re-prepares (sharing an equal spec of another
/// step) and marks both islands when the spec changed. Returns whether it changed.
static bool resolve_step(CudaBackend::Impl& be, const LlirGraph& g,
                         const std::vector<std::shared_ptr<CudaPlan::LtStep>>& all,
                         CudaPlan::LtStep& st, const int64_t* v, uint64_t workspace) {
  std::vector<int64_t> dims, sa, sb;
  for (const SlotExpr& e : st.dims)
    dims.push_back(e.eval(v));
  for (const SlotExpr& e : st.sa)
    sa.push_back(e.eval(v));
  for (const SlotExpr& e : st.sb)
    sb.push_back(e.eval(v));
  const std::optional<LibGemm<int64_t>> lg = lib_gemm_of(dims, sa, sb, st.k, st.family);
  if (!lg)
    throw Error("cuda: cuBLASLt step " + node_text(g, st.node) +
                " is not one gemm per batch index at these dims (a leading dimension below its "
                "row length); run without cuBLASLt (LUMINAL_CUDA_CUBLASLT=0)");
  LtSpec s = lt_spec(*lg, st.types, workspace);
  std::copy(std::begin(st.align), std::end(st.align), std::begin(s.align));
  if (st.prep && s == st.spec) return false;
  st.spec = s;
  st.input_a = lg->input_a;
  std::shared_ptr<LtPrepared> found;
  for (const auto& other : all)
    if (other.get() != &st && other->prep && other->prep->spec() == s) found = other->prep;
  if (!found) {
    found = std::make_shared<LtPrepared>(be.lt_handle(), s, static_cast<int>(be.device));
    ++be.lt_stats.prepares;
  }
  st.prep = std::move(found);
  st.dirty = {true, true};
  st.respec = {true, true};
  return true;
}

void CudaPlan::load_lt(const PlanSpec& spec, Step& step) {
  const LlirNode& n = g_.nodes[step.node];
  const std::optional<LtNodeGemm> sym = lt_node_gemm(n.attrs);
  if (!sym) throw Error("cuda: " + node_text(g_, step.node) + " is not one gemm per batch index");
  auto st = std::make_shared<LtStep>();
  st->node = step.node;
  st->family = lt_family(n.op);
  std::string why;
  const std::optional<LtTypes> t =
      lt_types(n.input_dtypes.at(0), n.input_dtypes.at(1), n.attrs.dtype, false, &why);
  if (!t) throw Error("cuda: " + node_text(g_, step.node) + ": " + why);
  st->types = *t;
  for (const Expr& e : sym->dims)
    st->dims.emplace_back(e, dim_names_);
  for (const Expr& e : sym->sa)
    st->sa.emplace_back(e, dim_names_);
  for (const Expr& e : sym->sb)
    st->sb.emplace_back(e, dim_names_);
  st->k = sym->k;
  // Resolved at the bucket's upper bounds until the first execute brings the real dims: a spec
  // no algorithm fits throws here, so the search rejects the candidate.
  // (The same for every step of the plan; lt_vary_ also records the dims this step reads that
  // vary in the bucket.)
  lt_workspace_bytes_ = be_.opts.lt_workspace_bytes;
  lt_dims_.resize(dim_names_.size());
  lt_vary_.resize(dim_names_.size(), Interval{1, 0});
  for (size_t d = 0; d < dim_names_.size(); ++d) {
    const Interval b = Expr::var(dim_names_[d]).bounds(spec.facts);
    lt_dims_[d] = b.hi == INT64_MAX ? std::max<int64_t>(b.lo, 1) : b.hi;
    if (b.lo >= b.hi) continue;
    for (const std::vector<Expr>* v : {&sym->dims, &sym->sa, &sym->sb})
      for (const Expr& e : *v)
        if (e.has_var(dim_names_[d])) lt_vary_[d] = b;
  }
  resolve_step(be_, g_, lt_, *st, lt_dims_.data(), lt_workspace_bytes_);
  step.lt = static_cast<int>(lt_.size());
  lt_.push_back(std::move(st));
}

std::optional<std::vector<int64_t>> CudaPlan::alternate_dims(const int64_t* dims) const {
  std::vector<int64_t> alt(dims, dims + dim_names_.size());
  bool moved = false;
  for (size_t d = 0; d < lt_vary_.size(); ++d) {
    const Interval& r = lt_vary_[d];
    if (r.lo > r.hi) continue;
    alt[d] = dims[d] + 1 <= r.hi ? dims[d] + 1 : dims[d] - 1;
    moved = moved || alt[d] != dims[d];
  }
  if (!moved) return std::nullopt;
  return alt;
}

void CudaPlan::bind_lt(int parity) {
  if (lt_.empty()) return;
  const CudaApi& cu = *be_.cu;
  if (!lt_workspace_) {
    be_.bind_context();
    check(cu.cuMemAlloc(&lt_workspace_, lt_workspace_bytes_), "cuMemAlloc (cuBLASLt workspace)");
    check(cu.cuStreamCreate(&lt_capture_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
  const Bound& bd = bound_[parity];
  for (const auto& st : lt_) {
    const LlirNode& n = g_.nodes[st->node];
    LtStep::Ptrs p{bd.ptr[n.inputs[0]], bd.ptr[n.inputs[1]], bd.ptr[st->node]};
    if (!(p == st->ptrs[parity])) st->dirty[parity] = true;
    st->ptrs[parity] = p;
    // A pointer less aligned than the spec says (an external binding): prepare for it.
    const LtPointers lp = st->pointers(parity);
    const uint32_t al[4] = {pointer_alignment(lp.a), pointer_alignment(lp.b),
                            pointer_alignment(lp.c), pointer_alignment(lp.d)};
    bool lower = false;
    for (int i = 0; i < 4; ++i)
      if (al[i] < st->align[i]) {
        st->align[i] = al[i];
        lower = true;
      }
    if (lower) resolve_step(be_, g_, lt_, *st, lt_dims_.data(), lt_workspace_bytes_);
  }
}

void CudaPlan::resolve_lt() {
  lt_dims_ = dims_;
  for (const auto& st : lt_)
    resolve_step(be_, g_, lt_, *st, dims_.data(), lt_workspace_bytes_);
}

void CudaPlan::run_lt(int parity, size_t s) {
  const LtStep& st = *lt_[static_cast<size_t>(steps_[s].lt)];
  st.prep->enqueue(st.pointers(parity), lt_workspace_, bound_[parity].queue->stream);
  ++be_.lt_stats.calls;
}

void CudaPlan::add_island(int parity, size_t s, CUgraphNode* prev) {
  const CudaApi& cu = *be_.cu;
  Bound& bd = bound_[parity];
  LtStep& st = *lt_[static_cast<size_t>(steps_[s].lt)];
  CUgraphNode& entry = st.entry[static_cast<size_t>(parity)];
  CUgraphNode& exit = st.exit[static_cast<size_t>(parity)];
  check(cu.cuGraphAddEmptyNode(&entry, bd.graph, *prev ? prev : nullptr, *prev ? 1 : 0),
        "cuGraphAddEmptyNode");
  check(cu.cuGraphAddEmptyNode(&exit, bd.graph, &entry, 1), "cuGraphAddEmptyNode");
  st.captured[static_cast<size_t>(parity)] = false;
  capture_island(parity, st);
  *prev = exit;
}

void CudaPlan::capture_island(int parity, LtStep& st) {
  const CudaApi& cu = *be_.cu;
  Bound& bd = bound_[parity];
  const size_t p = static_cast<size_t>(parity);
  for (CUgraphNode n : between(cu, st.entry[p], st.exit[p]))
    check(cu.cuGraphDestroyNode(n), "cuGraphDestroyNode");
  check(cu.cuStreamBeginCaptureToGraph(lt_capture_, bd.graph, &st.entry[p], nullptr, 1,
                                       CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCaptureToGraph");
  std::vector<CUgraphNode> last;
  try {
    st.prep->enqueue(st.pointers(parity), lt_workspace_, lt_capture_);
    CUstreamCaptureStatus status{};
    const CUgraphNode* deps = nullptr;
    const CUgraphEdgeData* edges = nullptr;
    size_t ndeps = 0;
    check(cu.cuStreamGetCaptureInfo(lt_capture_, &status, nullptr, nullptr, &deps, &edges, &ndeps),
          "cuStreamGetCaptureInfo");
    last.assign(deps, deps + ndeps);
  } catch (...) {
    CUgraph g = nullptr;
    cu.cuStreamEndCapture(lt_capture_, &g);  // a stream left capturing poisons later calls
    for (CUgraphNode n : between(cu, st.entry[p], st.exit[p]))  // what it captured before failing
      cu.cuGraphDestroyNode(n);
    throw;
  }
  CUgraph g = nullptr;
  check(cu.cuStreamEndCapture(lt_capture_, &g), "cuStreamEndCapture");
  for (CUgraphNode n : last)
    if (n != st.entry[p])
      check(cu.cuGraphAddDependencies(bd.graph, &n, &st.exit[p], nullptr, 1),
            "cuGraphAddDependencies");
  ++be_.lt_stats.captures;
  if (st.captured[p]) ++be_.lt_stats.recaptures;
  st.captured[p] = true;
  st.dirty[p] = false;
  st.respec[p] = false;
}

bool CudaPlan::refresh_islands(int parity, bool reinstantiate_anyway) {
  Bound& bd = bound_[parity];
  if (!bd.exec) return false;
  bool any = false, respec = false;
  for (const auto& st : lt_)
    if (st->dirty[static_cast<size_t>(parity)]) {
      respec = respec || st->respec[static_cast<size_t>(parity)];
      capture_island(parity, *st);
      any = true;
    }
  CUgraphExecUpdateResultInfo info{};
  if (reinstantiate_anyway || respec ||
      (any && be_.cu->cuGraphExecUpdate(bd.exec, bd.graph, &info) != CUDA_SUCCESS))
    reinstantiate(parity);
  return any;
}

void CudaPlan::destroy_lt() {
  const CudaApi& cu = *be_.cu;
  lt_.clear();
  if (lt_workspace_) cu.cuMemFree(lt_workspace_);
  lt_workspace_ = 0;
  if (lt_capture_) cu.cuStreamDestroy(lt_capture_);
  lt_capture_ = nullptr;
}

#else  // built without cublasLt.h: no cuBLASLt ops are registered, so no plan has these steps

bool lt_available(std::string* why) {
  if (why) *why = "luminal was built without cublasLt.h";
  return false;
}
LtHandle& CudaBackend::Impl::lt_handle() { throw Error("cuda: built without cuBLASLt"); }
struct CudaPlan::LtStep {};
std::optional<std::vector<int64_t>> CudaPlan::alternate_dims(const int64_t*) const {
  return std::nullopt;
}
void CudaPlan::load_lt(const PlanSpec&, Step&) { throw Error("cuda: built without cuBLASLt"); }
void CudaPlan::bind_lt(int) {}
void CudaPlan::resolve_lt() {}
void CudaPlan::run_lt(int, size_t) {}
void CudaPlan::add_island(int, size_t, CUgraphNode*) {}
bool CudaPlan::refresh_islands(int parity, bool reinstantiate_anyway) {
  if (reinstantiate_anyway) reinstantiate(parity);
  return false;
}
void CudaPlan::capture_island(int, LtStep&) {}
void CudaPlan::destroy_lt() {}

#endif

}  // namespace luminal::cuda
