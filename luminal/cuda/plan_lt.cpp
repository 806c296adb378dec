// cuBLASLt steps of a CudaPlan (see plan.hpp). A cuda.LtMatmul node has no kernel: its LtSpec is
// resolved from the node's views at the current dims (lt_node_gemm, lib_gemm, lt_spec), prepared
// once per distinct spec in the plan (equal specs share one: the plan's steps run in a chain, so
// no two calls use the workspace at once) and enqueued with the bound pointers. With the graph
// executor each call is an island of the bucket's graph: captured (thread-local capture on the
// plan's side stream) straight into the graph after the nodes of the step before, with the step
// after depending on the captured call's last nodes; no empty nodes, so the chain keeps its
// programmatic edges out of the island. Unchanged spec and pointers: nothing to do. Moved
// pointers (a re-bind) or a new spec (a dim the matmul reads changed): the call is captured
// again on its own; when it comes out as the same kernels (function and cluster attributes: the
// algorithm kept), their new parameters are set on the island's nodes, in the template and in the
// executable, and nothing else changes. Otherwise the island's nodes are replaced and the
// executable updated (cuGraphExecUpdate; re-instantiated when the driver refuses), or, after a
// spec change, re-instantiated: other kernels may have other thread block cluster attributes,
// which an exec update accepts without applying them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <unordered_set>

#include "luminal/compiler/trace.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/graph_nodes.hpp"
#include "luminal/cuda/plan.hpp"

#ifdef LUMINAL_HAVE_CUBLASLT
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#include "luminal/cuda/cublaslt/lt_prepare.hpp"
#endif

namespace luminal::cuda {

#ifdef LUMINAL_HAVE_CUBLASLT

bool lt_available(std::string* why) { return lt_api(why) != nullptr; }

LtHandle& lt_handle(Device& dev) {
  std::lock_guard<std::mutex> lock(dev.lt.mu);
  if (!dev.lt.handle) {
    std::string why;
    const LtApi* api = lt_api(&why);
    if (!api) throw Error("cuda: " + why);
    dev.bind_context();
    dev.lt.handle = std::make_shared<LtHandle>(*api);
  }
  return *dev.lt.handle;
}

struct CudaPlan::LtStep {
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

namespace {

std::string node_text(const LlirGraph& g, int i) {
  return "%" + std::to_string(i) + " (" + std::string(g.nodes[i].op->name) + ")";
}

}  // namespace

/// Resolves `st` at dims values `v` (slot order); re-prepares (sharing an equal spec of another
/// step) and marks both islands when the spec changed. Returns whether it changed.
static bool resolve_step(Device& dev, const LlirGraph& g,
                         const std::vector<std::shared_ptr<CudaPlan::LtStep>>& all,
                         CudaPlan::LtStep& st, const int64_t* v, uint64_t workspace,
                         LtCounts* counts) {
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
  if (st.bias_input >= 0) {
    std::vector<int64_t> bias;
    for (const SlotExpr& e : st.sbias)
      bias.push_back(e.eval(v));
    if (!lt_bias_fits_at(dims, sa, sb, st.k, bias))
      throw Error("cuda: cuBLASLt step " + node_text(g, st.node) +
                  ": its bias does not run along the rows of the library's D at these dims; run "
                  "without cuBLASLt (LUMINAL_CUDA_CUBLASLT=0)");
  }
  LtSpec s = lt_spec(*lg, st.types, workspace);
  if (st.c_input >= 0) s.beta = 1.0;
  s.epilogue = st.epilogue;
  s.scale_a = st.scale_input >= 0;
  std::copy(std::begin(st.align), std::end(st.align), std::begin(s.align));
  if (const std::string why = lt_fp8_problem(s); !why.empty())
    throw Error("cuda: cuBLASLt step " + node_text(g, st.node) + " at these dims: " + why +
                "; run without cuBLASLt (LUMINAL_CUDA_CUBLASLT=0)");
  if (st.prep && s == st.spec) return false;
  st.spec = s;
  st.input_a = lg->input_a;
  std::shared_ptr<LtPrepared> found;
  for (const auto& other : all)
    if (other.get() != &st && other->prep && other->prep->spec() == s) found = other->prep;
  if (!found) {
    // The step's algorithm kept when it fits the new spec (the island's kernels stay).
    found = std::make_shared<LtPrepared>(lt_handle(dev), s, static_cast<int>(dev.cu_device),
                                         st.prep.get());
    counts->prepared(found->kept());
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
  st->c_input = lt_c_input(n.attrs);
  st->bias_input = lt_bias_input(n.attrs);
  st->scale_input = lt_scale_input(n.attrs);
  st->epilogue = lt_epilogue_kind(lt_epilogue(n.attrs));
  std::string why;
  const std::optional<LtTypes> t =
      lt_types(n.input_dtypes.at(0), n.input_dtypes.at(1), n.attrs.dtype, dev_.tf32, &why);
  if (!t) throw Error("cuda: " + node_text(g_, step.node) + ": " + why);
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
      if (!c) throw Error("cuda: " + node_text(g_, step.node) + ": its bias view has an offset");
      st->sbias.emplace_back(*c, dim_names_);
    }
  // Resolved at the bucket's upper bounds until the first execute brings the real dims: a spec
  // no algorithm fits throws here, so the search rejects the candidate.
  // (The same for every step of the plan; lt_vary_ also records the dims this step reads that
  // vary in the bucket.)
  lt_workspace_bytes_ = dev_.opts.lt_workspace_bytes;
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
  resolve_step(dev_, g_, lt_, *st, lt_dims_.data(), lt_workspace_bytes_, &lt_counts_);
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
  const CudaApi& cu = *dev_.cu;
  if (!lt_workspace_) {
    dev_.bind_context();
    check(cu.cuMemAlloc(&lt_workspace_, lt_workspace_bytes_), "cuMemAlloc (cuBLASLt workspace)");
    check(cu.cuStreamCreate(&lt_capture_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
  const Bound& bd = bound_[parity];
  for (const auto& st : lt_) {
    const LlirNode& n = g_.nodes[st->node];
    auto in = [&](int i) { return i >= 0 ? bd.ptr[n.inputs[static_cast<size_t>(i)]] : 0; };
    LtStep::Ptrs p{
        in(0), in(1), bd.ptr[st->node], in(st->c_input), in(st->bias_input), in(st->scale_input)};
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
    if (lower) resolve_step(dev_, g_, lt_, *st, lt_dims_.data(), lt_workspace_bytes_, &lt_counts_);
  }
}

void CudaPlan::resolve_lt() {
  lt_dims_ = dims_;
  for (const auto& st : lt_)
    resolve_step(dev_, g_, lt_, *st, dims_.data(), lt_workspace_bytes_, &lt_counts_);
}

void CudaPlan::run_lt(int parity, size_t s) {
  const LtStep& st = *lt_[static_cast<size_t>(steps_[s].lt)];
  st.prep->enqueue(st.pointers(parity), lt_workspace_, bound_[parity].queue->stream);
  lt_counts_.called();
}

CUresult CudaPlan::capture_call(int parity, const LtStep& st, CUgraph g,
                                const std::vector<CUgraphNode>& deps) {
  const CudaApi& cu = *dev_.cu;
  check(cu.cuStreamBeginCaptureToGraph(lt_capture_, g, deps.data(), nullptr, deps.size(),
                                       CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCaptureToGraph");
  CUgraph captured = nullptr;
  try {
    st.prep->enqueue(st.pointers(parity), lt_workspace_, lt_capture_);
  } catch (...) {
    cu.cuStreamEndCapture(lt_capture_, &captured);  // a stream left capturing poisons later calls
    throw;
  }
  return cu.cuStreamEndCapture(lt_capture_, &captured);
}

struct CudaPlan::IslandSig {
  std::vector<NodeSig> nodes;
  bool kernels_only() const { return cuda::kernels_only(nodes); }
};

void CudaPlan::drop_island(int parity, size_t s) {
  Bound& bd = bound_[parity];
  // Forgotten first: no handle to a destroyed node survives a throw.
  const std::vector<CUgraphNode> gone = std::move(bd.island[s]);
  bd.island[s].clear();
  bd.heads[s].clear();
  bd.tails[s].clear();
  bd.sig[s] = nullptr;
  for (CUgraphNode n : gone)
    check(dev_.cu->cuGraphDestroyNode(n), "cuGraphDestroyNode");
}

CudaPlan::Recapture CudaPlan::capture_island(int parity, size_t pos) {
  const CudaApi& cu = *dev_.cu;
  Bound& bd = bound_[parity];
  const size_t p = static_cast<size_t>(parity);
  const size_t s = bd.chain[pos];
  LtStep& st = *lt_[static_cast<size_t>(steps_[s].lt)];
  auto done = [&](Recapture r) {
    lt_counts_.captured(st.captured[p], r == Recapture::InPlace);
    st.captured[p] = true;
    st.dirty[p] = false;
    st.respec[p] = false;
    return r;
  };
  // After a spec change, other kernels than the island's (from a new algorithm) need a
  // re-instantiation: they may have other cluster attributes, which an update takes without
  // applying.
  const bool respec = st.respec[p];
  const std::shared_ptr<const IslandSig> old = bd.sig[s];
  // An island already in an executable can be updated in place: the call captured on its own
  // first; when it comes out as the island's kernels again (the algorithm kept: only grids and
  // arguments new), their parameters are set on the island, in the template and in the
  // executable. (Not on nodes added since the executable was instantiated: the node-level
  // update needs nodes the executable was made from.)
  const bool in_place_possible =
      bd.exec && !bd.island[s].empty() && !bd.replaced[s] && old && old->kernels_only();
  const std::vector<CUgraphNode> none;
  const std::vector<CUgraphNode>& pred = pos > 0 ? bd.tails[bd.chain[pos - 1]] : none;

  if (in_place_possible) {
    ScratchGraph scratch(cu);
    check(capture_call(parity, st, scratch.g, {}), "cuStreamEndCapture");
    const std::vector<CUgraphNode> fresh = topo_order(cu, graph_nodes(cu, scratch.g));
    if (node_signature(cu, fresh) == old->nodes) {
      const bool ok = copy_kernel_params(cu, fresh, bd.island[s], bd.exec);
      return done(ok ? Recapture::InPlace : Recapture::Reinstantiate);
    }
  }
  // Otherwise the island's nodes are replaced: the call captured into the graph after the
  // step before, and the step after linked to it.
  drop_island(parity, s);
  std::unordered_set<CUgraphNode> before;  // (only needed with no step before)
  if (pred.empty())
    for (CUgraphNode n : graph_nodes(cu, bd.graph))
      before.insert(n);
  // What a failed capture left in the graph must not join the next island.
  auto drop_captured = [&] {
    for (CUgraphNode n : captured_nodes(cu, bd.graph, pred, before))
      cu.cuGraphDestroyNode(n);
  };
  CUresult ended = CUDA_SUCCESS;
  try {
    ended = capture_call(parity, st, bd.graph, pred);
  } catch (...) {
    drop_captured();
    throw;
  }
  if (ended != CUDA_SUCCESS) {
    drop_captured();
    check(ended, "cuStreamEndCapture");
  }
  bd.island[s] = topo_order(cu, captured_nodes(cu, bd.graph, pred, before));
  if (bd.exec) bd.replaced[s] = true;
  if (bd.island[s]
          .empty()) {  // nothing launched (an empty product): one empty node keeps the chain
    CUgraphNode e = nullptr;
    check(cu.cuGraphAddEmptyNode(&e, bd.graph, pred.data(), pred.size()), "cuGraphAddEmptyNode");
    bd.island[s] = {e};
  }
  bd.heads[s] = entry_nodes(cu, bd.island[s]);
  for (CUgraphNode n : bd.island[s])  // the island's last nodes: nothing in it depends on them
    if (dependents(cu, n).empty()) bd.tails[s].push_back(n);
  if (pos + 1 < bd.chain.size()) link(parity, bd.tails[s], bd.chain[pos + 1]);
  // New nodes: an exec update, or a re-instantiation when the spec changed and the island's
  // kernels did.
  auto sig = std::make_shared<IslandSig>(IslandSig{node_signature(cu, bd.island[s])});
  const bool same_kernels = old && old->nodes == sig->nodes;
  bd.sig[s] = std::move(sig);
  return done(respec && !same_kernels ? Recapture::Reinstantiate : Recapture::Update);
}

bool CudaPlan::refresh_islands(int parity, bool reinstantiate_anyway) {
  Bound& bd = bound_[parity];
  if (!bd.exec) return false;
  const size_t p = static_cast<size_t>(parity);
  static const bool traced = Trace::category("cuda.recapture");
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t in_place0 = lt_counts_.plan().in_place;
  int islands = 0;
  // A pass that threw part-way left islands captured but the executable not brought up to date:
  // the next pass re-instantiates.
  Recapture need = bd.stale ? Recapture::Reinstantiate : Recapture::InPlace;
  // In chain order: an island's predecessor is current before it is captured after it.
  for (size_t pos = 0; pos < bd.chain.size(); ++pos) {
    const int lt = steps_[bd.chain[pos]].lt;
    if (lt < 0 || !lt_[static_cast<size_t>(lt)]->dirty[p]) continue;
    bd.stale = true;
    need = std::max(need, capture_island(parity, pos));
    ++islands;
  }
  bd.stale = false;
  CUgraphExecUpdateResultInfo info{};
  const char* how = islands ? "parameters set in place" : "nothing";
  if (reinstantiate_anyway || need == Recapture::Reinstantiate ||
      (need == Recapture::Update &&
       dev_.cu->cuGraphExecUpdate(bd.exec, bd.graph, &info) != CUDA_SUCCESS)) {
    reinstantiate(parity);
    if (islands) ++lt_reinstantiations_;
    how = "re-instantiated";
  } else if (need == Recapture::Update) {
    how = "exec update";
  }
  if (traced && islands) {
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::string dims;
    for (size_t d = 0; d < dim_names_.size(); ++d)
      dims += (d ? " " : "") + dim_names_[d] + "=" + std::to_string(dims_[d]);
    std::fprintf(stderr,
                 "[cuda.recapture] plan %p parity %d (%s): %d islands captured again (%llu in "
                 "place), %s, %.1f us host\n",
                 static_cast<const void*>(this), parity, dims.c_str(), islands,
                 static_cast<unsigned long long>(lt_counts_.plan().in_place - in_place0), how, us);
  }
  return islands > 0;
}

std::vector<std::string> CudaPlan::lt_specs() const {
  std::vector<std::string> out;
  for (const auto& st : lt_)
    out.push_back(st->spec.to_string());
  return out;
}

std::string CudaPlan::lt_summary() const {
  if (lt_.empty()) return "";
  std::map<std::string, int> kinds;
  std::unordered_set<const LtPrepared*> preps;
  std::string specs;
  for (const auto& st : lt_) {
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
  const LtStats& c = lt_counts_.plan();
  return "  cuBLASLt: " + std::to_string(lt_.size()) + " steps (" + steps + "), " +
         u(preps.size()) + " prepared specs in use (" + u(c.prepares) + " prepares, " +
         u(c.algo_kept) + " kept their step's algorithm), " + u(c.captures) + " captures (" +
         u(c.recaptures) + " again, " + u(c.in_place) + " in place), " + u(lt_reinstantiations_) +
         " re-instantiations after a recapture, " + u(c.calls) + " stream calls, workspace " +
         u(lt_workspace_bytes_ >> 20) + " MiB" + (!graph_ ? ", stream executor" : "") + "\n" +
         specs;
}

namespace {
std::atomic<bool> fail_probe{false};
}

void CudaPlan::fail_lt_capture_probe_for_testing(bool fail) { fail_probe = fail; }

bool lt_capture_works(Device& dev) {
  LtHandle& h = lt_handle(dev);
  std::lock_guard<std::mutex> lock(dev.lt.mu);
  if (dev.lt.probe >= 0) return dev.lt.probe == 1;
  const CudaApi* cu = dev.cu;
  std::string why;
  if (fail_probe.exchange(false)) {
    why = "forced by a test";
  } else {
    try {
      dev.bind_context();
      LtSpec s;
      s.m = s.n = s.k = 1;
      s.a = s.b = s.c = s.d = LtMatrixSpec{CUDA_R_32F, 1, 1, 1, 0, CUBLASLT_ORDER_COL};
      LtPrepared prep(h, s, static_cast<int>(dev.cu_device));
      CUdeviceptr mem = 0;
      check(cu->cuMemAlloc(&mem, 256 * 3), "cuMemAlloc");
      const float ab[2] = {2.0f, 3.0f};
      float d = 0;
      CUstream st = nullptr;
      CUgraph g = nullptr;
      CUgraphExec ex = nullptr;
      CUresult r = cu->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
      if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(mem, ab, sizeof ab[0], st);
      if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(mem + 256, ab + 1, sizeof ab[1], st);
      if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(st);
      if (r == CUDA_SUCCESS) r = cu->cuGraphCreate(&g, 0);
      if (r == CUDA_SUCCESS)
        r = cu->cuStreamBeginCaptureToGraph(st, g, nullptr, nullptr, 0,
                                            CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      if (r == CUDA_SUCCESS) {
        CUgraph ended = nullptr;
        try {
          prep.enqueue({mem, mem + 256, mem + 512, mem + 512}, 0, st);
        } catch (const std::exception& e) {
          why = e.what();
        }
        r = cu->cuStreamEndCapture(st, &ended);
      }
      if (r == CUDA_SUCCESS && why.empty()) r = cu->cuGraphInstantiateWithFlags(&ex, g, 0);
      if (r == CUDA_SUCCESS && why.empty()) r = cu->cuGraphLaunch(ex, st);
      if (r == CUDA_SUCCESS && why.empty()) r = cu->cuStreamSynchronize(st);
      if (r == CUDA_SUCCESS && why.empty()) r = cu->cuMemcpyDtoHAsync(&d, mem + 512, sizeof d, st);
      if (r == CUDA_SUCCESS && why.empty()) r = cu->cuStreamSynchronize(st);
      if (r != CUDA_SUCCESS && why.empty()) why = "CUDA error " + std::to_string(r);
      if (why.empty() && d != 6.0f) why = "the captured product gave " + std::to_string(d);
      if (ex) cu->cuGraphExecDestroy(ex);
      if (g) cu->cuGraphDestroy(g);
      if (st) cu->cuStreamDestroy(st);
      cu->cuMemFree(mem);
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  dev.lt.probe = why.empty() ? 1 : 0;
  if (!why.empty())
    std::fprintf(stderr,
                 "luminal: cuBLASLt calls cannot be captured into CUDA graphs here (%s); plans "
                 "with cuBLASLt steps run on the stream\n",
                 why.c_str());
  return dev.lt.probe == 1;
}

void CudaPlan::destroy_lt() {
  const CudaApi& cu = *dev_.cu;
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
LtHandle& lt_handle(Device&) { throw Error("cuda: built without cuBLASLt"); }
struct CudaPlan::LtStep {};
struct CudaPlan::IslandSig {};
std::optional<std::vector<int64_t>> CudaPlan::alternate_dims(const int64_t*) const {
  return std::nullopt;
}
void CudaPlan::load_lt(const PlanSpec&, Step&) { throw Error("cuda: built without cuBLASLt"); }
void CudaPlan::bind_lt(int) {}
void CudaPlan::resolve_lt() {}
void CudaPlan::run_lt(int, size_t) {}
bool CudaPlan::refresh_islands(int parity, bool reinstantiate_anyway) {
  if (reinstantiate_anyway) reinstantiate(parity);
  return false;
}
CudaPlan::Recapture CudaPlan::capture_island(int, size_t) { return Recapture::InPlace; }
void CudaPlan::drop_island(int, size_t) {}
CUresult CudaPlan::capture_call(int, const LtStep&, CUgraph, const std::vector<CUgraphNode>&) {
  return CUDA_SUCCESS;
}
void CudaPlan::destroy_lt() {}
std::string CudaPlan::lt_summary() const { return ""; }
std::vector<std::string> CudaPlan::lt_specs() const { return {}; }
void CudaPlan::fail_lt_capture_probe_for_testing(bool) {}
bool lt_capture_works(Device&) { return false; }

#endif

}  // namespace luminal::cuda
