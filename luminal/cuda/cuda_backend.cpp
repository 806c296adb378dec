// CudaBackend: the Backend interface over a cuda::Device (device.hpp) and its plans (plan.hpp).
// Each call forwards; the state lives in the Device.
#include "luminal/cuda/cuda_backend.hpp"

#include <cstdlib>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/cuda/plan.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/cuda/queue.hpp"
#ifdef LUMINAL_HAVE_CUBLASLT
#include "luminal/cuda/cublaslt/lt_api.hpp"
#endif

namespace luminal::cuda {

namespace {

CudaPlan& cuda_plan(Plan& plan, const char* call) {
  auto* p = dynamic_cast<CudaPlan*>(&plan);
  if (!p) throw Error(std::string("cuda: ") + call + "() needs a plan loaded by this backend");
  return *p;
}

}  // namespace

bool cuda_available(std::string* why) {
  std::string w;
  if (!driver_available(&w)) {
    if (why) *why = w;
    return false;
  }
  if (!nvrtc_available(&w)) {
    if (why) *why = w;
    return false;
  }
  if (why) why->clear();
  return true;
}

std::vector<RuleSet> cuda_rulesets(bool with_cublaslt) {
  return cuda_registry().rulesets(with_cublaslt ? "" : "cuda.cublaslt");
}
bool cuda_executes(const OpDef* op) { return cuda_registry().executes(op); }
double cuda_seed_path_weight() {
  const char* v = std::getenv("LUMINAL_CUDA_SEED_PATH");
  if (v == nullptr || *v == 0) return 0;
  char* end = nullptr;
  const double w = std::strtod(v, &end);
  if (end == v || *end != 0 || !(w >= 0 && w <= 16))
    throw Error(std::string("LUMINAL_CUDA_SEED_PATH must be a number from 0 to 16, not '") + v +
                "'");
  return w;
}
const OpDef* cuda_op_named(std::string_view name) { return cuda_registry().named(name); }
std::shared_ptr<const Payload> cuda_read_payload(std::string_view kind, std::string_view text) {
  return cuda_registry().read_payload(kind, text);
}

std::vector<GeneratedKernel> generate_kernels(const LlirGraph& graph, const PlanSpec& spec,
                                              int sm_count) {
  LlirGraph g = graph;
  check_llir(g, "cuda");
  g.fill_input_dtypes();
  std::vector<int> nodes;
  std::vector<KernelGen> gens = CudaPlan::generate(g, spec, sm_count, &nodes);
  std::vector<GeneratedKernel> out;
  for (size_t j = 0; j < gens.size(); ++j)
    if (!gens[j].source.empty())  // (a library call has no kernel)
      out.push_back(GeneratedKernel{nodes[j], "node " + node_name(g, nodes[j]), gens[j].source});
  return out;
}

CudaBackend::CudaBackend(CudaOptions opts)
    : RegistryBackend(cuda_registry()),
      dev_(std::make_unique<Device>(std::move(opts), lt_available)) {}

CudaBackend::~CudaBackend() = default;

std::vector<RuleSet> CudaBackend::rulesets() const { return cuda_rulesets(dev_->lt_on); }

std::unique_ptr<Plan> CudaBackend::load(const LlirGraph& g, const PlanSpec& spec) {
  return std::make_unique<CudaPlan>(*dev_, g, spec);
}

bool CudaBackend::reads_blocks(DType t) const { return cuda_block_type(t); }

std::string CudaBackend::device_key() const {
  const Device& m = *dev_;
  // Programs with cuBLASLt steps come only from a backend that searches them, with the same
  // library version (its algorithms, so its timings) and TF32 setting.
  std::string lt;
#ifdef LUMINAL_HAVE_CUBLASLT
  if (m.lt_on) lt = " cublaslt=" + std::to_string(lt_api()->version) + (m.tf32 ? " tf32" : "");
#endif
  return "cuda " + m.gpu_name + " " + m.arch + " sms=" + std::to_string(m.sm_count) +
         " driver=" + std::to_string(m.driver_version) + " " + m.nvrtc + lt;
}

Buffer CudaBackend::allocate(uint64_t bytes) { return dev_->allocate(bytes); }
void CudaBackend::check_external(const void* ptr, uint64_t bytes) const {
  dev_->check_external(ptr, bytes);
}
std::unique_ptr<Queue> CudaBackend::make_queue() { return std::make_unique<CudaQueue>(*dev_); }
void* CudaBackend::stream(Queue* queue) const { return dev_->queue(queue).stream; }
void CudaBackend::release(Buffer b) { dev_->release(b); }
void CudaBackend::upload(Buffer dst, uint64_t offset, const void* src, uint64_t bytes,
                         Queue* queue) {
  dev_->upload(dst, offset, src, bytes, queue);
}
void CudaBackend::download(void* dst, Buffer src, uint64_t offset, uint64_t bytes, Queue* queue) {
  dev_->download(dst, src, offset, bytes, queue);
}
void CudaBackend::start_download(void* dst, Buffer src, uint64_t offset, uint64_t bytes,
                                 Queue* queue) {
  dev_->start_download(dst, src, offset, bytes, queue);
}
void CudaBackend::finish_download(Queue* queue) { dev_->finish_download(queue); }
void CudaBackend::copy(Buffer dst, Buffer src, uint64_t bytes, Queue* queue) {
  dev_->copy(dst, src, bytes, queue);
}
void CudaBackend::sync(Queue* queue) { dev_->sync(queue); }
void CudaBackend::wait_external(void* stream, Queue* queue) {
  dev_->queue(queue).wait(static_cast<CUstream>(stream));
}
void CudaBackend::signal_external(void* stream, Queue* queue) {
  dev_->queue(queue).signal(static_cast<CUstream>(stream));
}
std::pair<uint64_t, uint64_t> CudaBackend::memory_info() const { return dev_->memory_info(); }

double CudaBackend::time(Plan& plan, int parity, const int64_t* dims, int trials,
                         double timeout_s) {
  return cuda_plan(plan, "time").time(parity, dims, trials, timeout_s);
}

std::vector<KernelStat> CudaBackend::profile(Plan& plan, int parity, const int64_t* dims,
                                             int trials) {
  return cuda_plan(plan, "profile").profile(parity, dims, trials);
}

std::string CudaBackend::profile_text(Plan& plan, const int64_t* dims) {
  std::string out = format_profile(profile(plan, 0, dims, 10));
  if (const auto* p = dynamic_cast<const CudaPlan*>(&plan)) out += p->lt_summary();
  return out;
}

std::string CudaBackend::format_profile(const std::vector<KernelStat>& stats) {
  return format_kernel_stats(stats);
}

const std::string& CudaBackend::arch() const { return dev_->arch; }
int CudaBackend::sm_count() const { return dev_->sm_count; }
KernelCacheStats CudaBackend::kernel_stats() const { return dev_->modules->stats(); }
GraphStats CudaBackend::graph_stats() const { return dev_->graphs.stats(); }
CudaOptions::Executor CudaBackend::executor() const { return dev_->executor; }
bool CudaBackend::programmatic_launch() const { return dev_->programmatic; }
CudaOptions::GraphEdges CudaBackend::graph_edges() const { return dev_->graph_edges; }

bool CudaBackend::cublaslt(std::string* why) const {
  if (!dev_->lt_on && why) *why = dev_->lt_why;
  return dev_->lt_on;
}

bool CudaBackend::allow_tf32() const { return dev_->tf32; }
CudaBackend::LtStats CudaBackend::lt_stats() const { return dev_->lt_totals.stats(); }

}  // namespace luminal::cuda
