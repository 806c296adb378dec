#include "luminal/cuda/cublaslt/lt_prepare.hpp"

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "luminal/core/error.hpp"
#include "luminal/cuda/testing.hpp"

namespace luminal::cuda {

namespace {

struct Key {
  int device;
  LtSpec spec;
  bool operator==(const Key& o) const { return device == o.device && spec == o.spec; }
};
struct KeyHash {
  size_t operator()(const Key& k) const { return k.spec.hash() ^ static_cast<size_t>(k.device); }
};

struct HeuristicCache {
  std::mutex mu;
  std::unordered_map<Key, cublasLtMatmulHeuristicResult_t, KeyHash> results;
  LtHeuristicStats stats;
};

constexpr int kMostAnswers = 16;  // heuristic answers a test's forced pick may choose from
std::mutex pick_mu;
std::function<int(const LtSpec&)>& pick() {
  static std::function<int(const LtSpec&)>* f = new std::function<int(const LtSpec&)>;
  return *f;
}

HeuristicCache& cache() {
  static HeuristicCache* c = new HeuristicCache;  // never destroyed: used until exit
  return *c;
}

template <class T>
void set_desc(const LtApi& lt, cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
              const T& v) {
  check_lt(lt, lt.cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof v),
           "cublasLtMatmulDescSetAttribute");
}

cublasLtMatrixLayout_t make_layout(const LtApi& lt, const LtMatrixSpec& m, int32_t batch) {
  cublasLtMatrixLayout_t l = nullptr;
  check_lt(lt, lt.cublasLtMatrixLayoutCreate(&l, m.type, m.rows, m.cols, m.ld),
           "cublasLtMatrixLayoutCreate");
  auto set = [&](cublasLtMatrixLayoutAttribute_t attr, const auto& v) {
    const cublasStatus_t s = lt.cublasLtMatrixLayoutSetAttribute(l, attr, &v, sizeof v);
    if (s != CUBLAS_STATUS_SUCCESS) {
      lt.cublasLtMatrixLayoutDestroy(l);
      check_lt(lt, s, "cublasLtMatrixLayoutSetAttribute");
    }
  };
  set(CUBLASLT_MATRIX_LAYOUT_ORDER, static_cast<int32_t>(m.order));
  if (batch > 1) {
    set(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch);
    set(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, m.batch_stride);
  }
  return l;
}

}  // namespace

void TestHooks::pick_lt_algorithm(std::function<int(const LtSpec&)> f) {
  std::lock_guard<std::mutex> lock(pick_mu);
  pick() = std::move(f);
}

bool lt_pick_forced() {
  std::lock_guard<std::mutex> lock(pick_mu);
  return static_cast<bool>(pick());
}

LtHeuristicStats lt_heuristic_stats() {
  HeuristicCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

LtHandle::LtHandle(const LtApi& api) : api_(api) {
  check_lt(api_, api_.cublasLtCreate(&h_), "cublasLtCreate");
}

LtHandle::~LtHandle() {
  if (h_) api_.cublasLtDestroy(h_);
}

LtPrepared::LtPrepared(const LtHandle& h, const LtSpec& spec, int device, const LtPrepared* keep)
    : h_(h), spec_(spec) {
  const LtApi& lt = h.api();
  try {
    check_lt(lt, lt.cublasLtMatmulDescCreate(&desc_, spec.compute, spec.scale),
             "cublasLtMatmulDescCreate");
    set_desc(lt, desc_, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(spec.op_a));
    set_desc(lt, desc_, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(spec.op_b));
    set_desc(lt, desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(spec.epilogue));
    a_ = make_layout(lt, spec.a, spec.batch);
    b_ = make_layout(lt, spec.b, spec.batch);
    c_ = make_layout(lt, spec.c, spec.batch);
    d_ = make_layout(lt, spec.d, spec.batch);

    int forced = -1;
    {
      std::lock_guard<std::mutex> lock(pick_mu);
      if (pick()) forced = pick()(spec);
    }
    if (forced >= kMostAnswers)
      throw Error("cuBLASLt: a test's forced pick takes one of the heuristic's first " +
                  std::to_string(kMostAnswers) + " answers, not answer " + std::to_string(forced));
    if (forced < 0 && keep &&
        std::equal(std::begin(keep->spec_.align), std::end(keep->spec_.align),
                   std::begin(spec.align))) {
      cublasLtMatmulHeuristicResult_t r{};
      if (lt.cublasLtMatmulAlgoCheck(h.get(), desc_, a_, b_, c_, d_, &keep->algo_, &r) ==
              CUBLAS_STATUS_SUCCESS &&
          r.workspaceSize <= spec.workspace) {
        algo_ = keep->algo_;
        algo_workspace_ = r.workspaceSize;
        kept_ = true;
        return;
      }
    }
    HeuristicCache& c = cache();
    const Key key{device, spec};
    if (forced < 0) {
      std::lock_guard<std::mutex> lock(c.mu);
      if (auto it = c.results.find(key); it != c.results.end()) {
        ++c.stats.hits;
        algo_ = it->second.algo;
        algo_workspace_ = it->second.workspaceSize;
        return;
      }
    }
    cublasLtMatmulPreference_t pref = nullptr;
    check_lt(lt, lt.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    cublasLtMatmulHeuristicResult_t results[kMostAnswers]{};
    const int want = forced < 0 ? 1 : forced + 1;
    int found = 0;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    auto pref_set = [&](cublasLtMatmulPreferenceAttributes_t attr, const auto& v) {
      if (s == CUBLAS_STATUS_SUCCESS)
        s = lt.cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof v);
    };
    pref_set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(spec.workspace));
    pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, spec.align[0]);
    pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, spec.align[1]);
    pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, spec.align[2]);
    pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, spec.align[3]);
    if (s == CUBLAS_STATUS_SUCCESS)
      s = lt.cublasLtMatmulAlgoGetHeuristic(h.get(), desc_, a_, b_, c_, d_, pref, want, results,
                                            &found);
    lt.cublasLtMatmulPreferenceDestroy(pref);
    {
      std::lock_guard<std::mutex> lock(c.mu);
      ++c.stats.queries;
    }
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || (s == CUBLAS_STATUS_SUCCESS && found == 0))
      throw Error("cuBLASLt has no algorithm for " + spec.to_string());
    check_lt(lt, s, "cublasLtMatmulAlgoGetHeuristic");
    if (forced >= found)
      throw Error("cuBLASLt: the heuristic returns fewer than " + std::to_string(forced + 1) +
                  " algorithms for " + spec.to_string() + " (a test's forced pick)");
    const cublasLtMatmulHeuristicResult_t& result = results[forced < 0 ? 0 : forced];
    algo_ = result.algo;
    algo_workspace_ = result.workspaceSize;
    if (forced >= 0) return;  // not cached: the heuristic's first answer stays the cached one
    std::lock_guard<std::mutex> lock(c.mu);
    c.results.emplace(key, result);
  } catch (...) {
    destroy();
    throw;
  }
}

LtPrepared::~LtPrepared() { destroy(); }

void LtPrepared::destroy() {
  const LtApi& lt = h_.api();
  for (cublasLtMatrixLayout_t* l : {&a_, &b_, &c_, &d_})
    if (*l) {
      lt.cublasLtMatrixLayoutDestroy(*l);
      *l = nullptr;
    }
  if (desc_) lt.cublasLtMatmulDescDestroy(desc_);
  desc_ = nullptr;
}

void LtPrepared::enqueue(const LtPointers& p, CUdeviceptr workspace, CUstream stream) const {
  const LtApi& lt = h_.api();
  const float alpha32 = static_cast<float>(spec_.alpha), beta32 = static_cast<float>(spec_.beta);
  const bool f64 = spec_.scale == CUDA_R_64F;
  const void* alpha = f64 ? static_cast<const void*>(&spec_.alpha) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&spec_.beta) : &beta32;
  auto ptr = [](CUdeviceptr x) { return reinterpret_cast<void*>(static_cast<uintptr_t>(x)); };
  if (spec_.epilogue == CUBLASLT_EPILOGUE_BIAS || spec_.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
      spec_.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS) {
    if (!p.bias) throw Error("cuBLASLt: a bias epilogue without a bias pointer");
    set_desc(lt, desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ptr(p.bias));
  }
  if (spec_.scale_a) {
    if (!p.scale) throw Error("cuBLASLt: a scaled FP8 matmul without a scale pointer");
    set_desc(lt, desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, ptr(p.scale));
  }
  check_lt(lt,
           lt.cublasLtMatmul(h_.get(), desc_, alpha, ptr(p.a), a_, ptr(p.b), b_, beta, ptr(p.c), c_,
                             ptr(p.d), d_, &algo_, ptr(workspace), spec_.workspace, stream),
           "cublasLtMatmul");
}

}  // namespace luminal::cuda
