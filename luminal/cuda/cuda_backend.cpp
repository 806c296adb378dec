#include "luminal/cuda/cuda_backend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "luminal/compiler/compile_cache.hpp"
#include "luminal/compiler/options.hpp"
#include "luminal/core/error.hpp"
#include "luminal/core/hash.hpp"
#include "luminal/cuda/backend_impl.hpp"
#include "luminal/cuda/compile_batch.hpp"
#include "luminal/cuda/cuda_op.hpp"
#ifdef LUMINAL_HAVE_CUBLASLT
#include "luminal/cuda/cublaslt/lt_api.hpp"
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#endif
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/cuda/plan.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/egraph/rule_sets.hpp"
#include "luminal/kernels/fused_program.hpp"

namespace luminal::cuda {

// ---------------------------------------------------------------- modules

Module::~Module() {
  if (module) cuda_api().cuModuleUnload(module);
}

CUfunction KernelHandle::function(const std::string& entry) const {
  CUfunction f = nullptr;
  check(cuda_api().cuModuleGetFunction(&f, module->module, (entry + suffix).c_str()),
        "cuModuleGetFunction");
  return f;
}

void CudaBackend::Impl::bind_context() const {
  thread_local CUcontext current = nullptr;
  if (current == ctx) return;
  check(cu->cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  current = ctx;
}

namespace {

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::vector<uint8_t> to_bytes(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

std::vector<KernelHandle> CudaBackend::Impl::kernels_of(const std::vector<std::string>& sources,
                                                        const std::vector<std::string>& whats) {
  const std::string& prelude = device_prelude();
  const std::string key_prefix = "kernel " + arch + " " + nvrtc + "\n";
  std::vector<size_t> missing;  // indices of distinct unknown sources
  {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < sources.size(); ++i) {
      if (sources[i].compare(0, prelude.size(), prelude) != 0)
        throw Error("cuda: generated source of " + whats[i] + " lacks the device prelude");
      if (kernels.count(sources[i])) {
        ++stats.memory_hits;
        continue;
      }
      bool dup = false;
      for (size_t j : missing)
        dup = dup || sources[j] == sources[i];
      if (!dup) missing.push_back(i);
    }
  }
  // Disk: each source's entry names its batch and suffix; the batch holds the cubin.
  struct Found {
    std::string batch_key, suffix;
  };
  std::vector<Found> found(missing.size());
  std::map<std::string, std::vector<uint8_t>> cubins;  // by batch key
  std::vector<size_t> to_compile;                      // positions in `missing`
  for (size_t m = 0; m < missing.size(); ++m) {
    std::optional<std::vector<uint8_t>> entry;
    if (disk) entry = disk->load(key_prefix + sources[missing[m]]);
    if (entry) {
      const std::string text(entry->begin(), entry->end());
      const size_t nl = text.find('\n');
      if (nl != std::string::npos) {
        Found f{text.substr(0, nl), text.substr(nl + 1)};
        bool have = cubins.count(f.batch_key) > 0;
        {
          std::lock_guard<std::mutex> lock(mu);
          have = have || batches.count(f.batch_key) > 0;
        }
        if (!have)
          if (auto bytes = disk->load(f.batch_key))
            cubins[f.batch_key] = std::move(*bytes), have = true;
        if (have) {
          found[m] = f;
          std::lock_guard<std::mutex> lock(mu);
          ++stats.disk_hits;
          continue;
        }
      }
    }
    to_compile.push_back(m);
  }
  // The rest: compiled in batches, in parallel.
  std::vector<std::string> todo, todo_whats;
  for (size_t m : to_compile) {
    todo.push_back(sources[missing[m]]);
    todo_whats.push_back(whats[missing[m]]);
  }
  CompiledBatches compiled =
      compile_batched(todo, todo_whats, arch,
                      opts.compile_threads > 0 ? opts.compile_threads : default_host_threads());
  std::vector<std::string> batch_keys;
  for (CompiledBatches::Batch& batch : compiled.batches) {
    batch_keys.push_back("batch " + arch + " " + nvrtc + " " + hex(hash_string(batch.text)) + " " +
                         std::to_string(batch.text.size()));
    if (disk) disk->store(batch_keys.back(), batch.cubin);
    cubins[batch_keys.back()] = std::move(batch.cubin);
  }
  for (size_t j = 0; j < to_compile.size(); ++j) {
    Found& f = found[to_compile[j]];
    f.batch_key = batch_keys[compiled.batch_of[j]];
    f.suffix = compiled.suffix[j];
    if (disk) disk->store(key_prefix + todo[j], to_bytes(f.batch_key + "\n" + f.suffix));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stats.compiled += to_compile.size();
  }
  // Load the new modules and record every kernel.
  bind_context();
  std::lock_guard<std::mutex> lock(mu);
  for (auto& [key, cubin] : cubins) {
    if (batches.count(key)) continue;
    auto mod = std::make_shared<Module>();
    check(cu->cuModuleLoadData(&mod->module, cubin.data()), "cuModuleLoadData");
    batches[key] = mod;
  }
  for (size_t m = 0; m < missing.size(); ++m)
    kernels[sources[missing[m]]] = KernelHandle{batches.at(found[m].batch_key), found[m].suffix};
  std::vector<KernelHandle> out;
  for (const std::string& s : sources)
    out.push_back(kernels.at(s));
  return out;
}

// ---------------------------------------------------------------- queues

CudaQueue::CudaQueue(CudaBackend::Impl& backend) : be(backend) {
  be.bind_context();
  const CudaApi& cu = *be.cu;
  try {
    check(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cu.cuMemAlloc(&err, 4), "cuMemAlloc (error word)");
    check(cu.cuMemsetD32Async(err, 0, 1, stream), "cuMemsetD32Async (error word)");
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  } catch (...) {
    if (err) cu.cuMemFree(err);
    if (stream) cu.cuStreamDestroy(stream);
    throw;
  }
}

CudaQueue::~CudaQueue() {
  const CudaApi& cu = *be.cu;
  be.bind_context();
  cu.cuStreamSynchronize(stream);
  for (CUevent e : staging_done)
    if (e) cu.cuEventDestroy(e);
  if (staging_host) cu.cuMemFreeHost(staging_host);
  if (err) cu.cuMemFree(err);
  if (stream) cu.cuStreamDestroy(stream);
}

void CudaQueue::check_error_word() {
  const CudaApi& cu = *be.cu;
  unsigned int word = 0;
  check(cu.cuMemcpyDtoHAsync(&word, err, sizeof word, stream), "cuMemcpyDtoHAsync (error word)");
  check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  if (word == 0) return;
  check(cu.cuMemsetD32Async(err, 0, 1, stream), "cuMemsetD32Async (error word)");
  check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  throw Error(
      "cuda: a Gather read an index outside its data (the CPU backend names the index "
      "and position); check the indexes fed to the graph");
}

ReaderPool& CudaBackend::Impl::readers() {
  std::call_once(readers_once, [&] {
    reader_pool = std::make_unique<ReaderPool>(opts.upload_threads > 0 ? opts.upload_threads
                                                                       : default_host_threads());
  });
  return *reader_pool;
}

namespace {

/// The device side of a staged upload on a queue: a slot is sent with an async copy on the
/// queue's stream and an event after it, which the slot's next fill waits for.
class QueueStaging final : public StagingDevice {
 public:
  QueueStaging(const CudaApi& cu, CudaQueue& q, CUdeviceptr dst) : cu_(cu), q_(q), dst_(dst) {}
  void wait(int slot) override {
    check(cu_.cuEventSynchronize(q_.staging_done[slot]), "cuEventSynchronize (staging)");
  }
  void send(int slot, uint64_t offset, uint64_t n) override {
    check(cu_.cuMemcpyHtoDAsync(dst_ + offset, q_.staging.slots[slot], n, q_.stream),
          "cuMemcpyHtoDAsync");
    check(cu_.cuEventRecord(q_.staging_done[slot], q_.stream), "cuEventRecord");
  }

 private:
  const CudaApi& cu_;
  CudaQueue& q_;
  CUdeviceptr dst_;
};

}  // namespace

CudaQueue& CudaBackend::Impl::queue(Queue* q) {
  if (!q) return *default_queue;
  auto* cq = dynamic_cast<CudaQueue*>(q);
  if (!cq || &cq->be != this)
    throw Error("cuda: a queue made by another backend was passed to this one");
  return *cq;
}

// ---------------------------------------------------------------- backend

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

namespace {

/// `fallback`, unless environment variable `name` is set: then it must be "0" or "1".
bool env_switch(const char* name, bool fallback) {
  const char* e = std::getenv(name);
  if (!e || !*e) return fallback;
  const std::string v = e;
  if (v != "0" && v != "1")
    throw Error(std::string(name) + " must be '0' (off) or '1' (on), got '" + v + "'");
  return v == "1";
}

}  // namespace

CudaBackend::CudaBackend(CudaOptions opts) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.opts = std::move(opts);
  m.cu = &cuda_api();
  if (std::string why; !nvrtc_available(&why)) throw Error(why);
  const CudaApi& cu = *m.cu;
  int count = 0;
  check(cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (m.opts.device < 0 || m.opts.device >= count)
    throw Error("cuda: device " + std::to_string(m.opts.device) +
                " does not exist; this machine has " + std::to_string(count) + " GPU(s) (0 to " +
                std::to_string(count - 1) + ")");
  check(cu.cuDeviceGet(&m.device, m.opts.device), "cuDeviceGet");
  check(cu.cuDevicePrimaryCtxRetain(&m.ctx, m.device), "cuDevicePrimaryCtxRetain");
  m.bind_context();
  char name[256] = {0};
  check(cu.cuDeviceGetName(name, sizeof name, m.device), "cuDeviceGetName");
  m.gpu_name = name;
  check(
      cu.cuDeviceGetAttribute(&m.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, m.device),
      "cuDeviceGetAttribute");
  check(
      cu.cuDeviceGetAttribute(&m.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, m.device),
      "cuDeviceGetAttribute");
  check(cu.cuDeviceGetAttribute(&m.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, m.device),
        "cuDeviceGetAttribute");
  check(cu.cuDriverGetVersion(&m.driver_version), "cuDriverGetVersion");
  m.arch = "sm_" + std::to_string(m.cc_major) + std::to_string(m.cc_minor);
  m.nvrtc = nvrtc_version();
  m.default_queue = std::make_unique<CudaQueue>(m);
  m.executor = m.opts.executor;
  if (const char* e = std::getenv("LUMINAL_CUDA_EXECUTOR"); e && *e) {
    const std::string v = e;
    if (v == "graph") {
      m.executor = CudaOptions::Executor::Graph;
    } else if (v == "stream") {
      m.executor = CudaOptions::Executor::Stream;
    } else {
      throw Error("LUMINAL_CUDA_EXECUTOR must be 'graph' or 'stream', got '" + v + "'");
    }
  }
  // griddepcontrol needs sm_90
  m.programmatic = env_switch("LUMINAL_CUDA_PDL", m.opts.programmatic_launch) && m.cc_major >= 9;
  m.lt_on = env_switch("LUMINAL_CUDA_CUBLASLT", m.opts.cublaslt);
  if (!m.lt_on) {
    m.lt_why = "cuBLASLt is off (CudaOptions::cublaslt = false or LUMINAL_CUDA_CUBLASLT=0)";
  } else if (!lt_available(&m.lt_why)) {
    m.lt_on = false;
    // Asked for but missing: said once per process, not per backend.
    static std::once_flag said;
    std::call_once(said, [&] {
      std::fprintf(stderr, "luminal: %s; CUDA matmuls use generated kernels\n", m.lt_why.c_str());
    });
  }
  m.tf32 = m.lt_on && env_switch("LUMINAL_CUDA_TF32", m.opts.allow_tf32);
  std::filesystem::path dir = m.opts.kernel_dir;
  if (dir.empty() && kernel_cache_enabled()) {
    const std::filesystem::path root = cache_root(CompileOptions());
    if (!root.empty()) dir = root / "kernels";
  }
  if (!dir.empty()) m.disk = std::make_unique<KernelCache>(dir);
}

CudaBackend::~CudaBackend() {
  Impl& m = *impl_;
  m.bind_context();
  m.default_queue.reset();  // waits for its stream
  m.lt.reset();             // the cuBLASLt handle, while the context is still held
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.kernels.clear();
    m.batches.clear();
  }
  if (m.ctx) m.cu->cuDevicePrimaryCtxRelease(m.device);
}

std::vector<RuleSet> cuda_rulesets(bool with_cublaslt) {
  std::vector<RuleSet> sets;
  for (const CudaOp* op : cuda_ops())
    if (op->rules && (with_cublaslt || op->ruleset != "cuda.cublaslt"))
      add_rules(sets, op->ruleset, op->rules());
  return sets;
}

bool cuda_executes(const OpDef* op) {
  return is_op(op, OpKind::Input) || is_op(op, OpKind::Output) || find_cuda_op(op) != nullptr;
}

const OpDef* cuda_op_named(std::string_view name) {
  for (const CudaOp* op : cuda_ops())
    if (op->def->name == name) return op->def;
  return nullptr;
}

std::vector<RuleSet> CudaBackend::rulesets() const { return cuda_rulesets(impl_->lt_on); }

bool CudaBackend::cublaslt(std::string* why) const {
  if (!impl_->lt_on && why) *why = impl_->lt_why;
  return impl_->lt_on;
}

bool CudaBackend::allow_tf32() const { return impl_->tf32; }

CudaBackend::LtStats CudaBackend::lt_stats() const {
  const auto& s = impl_->lt_stats;
  return LtStats{.prepares = s.prepares.load(),
                 .captures = s.captures.load(),
                 .recaptures = s.recaptures.load(),
                 .in_place = s.in_place.load(),
                 .calls = s.calls.load(),
                 .algo_kept = s.algo_kept.load(),
                 .resolve_host_ns = s.resolve_host_ns.load(),
                 .refresh_host_ns = s.refresh_host_ns.load()};
}

bool CudaBackend::executes(const OpDef* op) const { return cuda_executes(op); }

std::unique_ptr<Plan> CudaBackend::load(const LlirGraph& g, const PlanSpec& spec) {
  return std::make_unique<CudaPlan>(*impl_, g, spec);
}

std::unique_ptr<Queue> CudaBackend::make_queue() { return std::make_unique<CudaQueue>(*impl_); }

void* CudaBackend::stream(Queue* queue) const { return impl_->queue(queue).stream; }

std::string CudaBackend::device_key() const {
  const Impl& m = *impl_;
  // Programs with cuBLASLt steps come only from a backend that searches them, with the same
  // library version (its algorithms, so its timings) and TF32 setting.
  std::string lt;
#ifdef LUMINAL_HAVE_CUBLASLT
  if (m.lt_on) lt = " cublaslt=" + std::to_string(lt_api()->version) + (m.tf32 ? " tf32" : "");
#endif
  return "cuda " + m.gpu_name + " " + m.arch + " sms=" + std::to_string(m.sm_count) +
         " driver=" + std::to_string(m.driver_version) + " " + m.nvrtc + lt;
}

const OpDef* CudaBackend::op_named(std::string_view name) const {
  if (const OpDef* op = cuda_op_named(name)) return op;
  return Backend::op_named(name);
}

std::shared_ptr<const Payload> cuda_read_payload(std::string_view kind, std::string_view text) {
  if (kind == "fused_program") return FusedProgram::deserialize(text);
#ifdef LUMINAL_HAVE_CUBLASLT
  if (kind == "lt_epilogue") return LtEpilogue::deserialize(text);
#endif
  return nullptr;
}

std::shared_ptr<const Payload> CudaBackend::read_payload(std::string_view kind,
                                                         std::string_view text) const {
  if (auto p = cuda_read_payload(kind, text)) return p;
  return Backend::read_payload(kind, text);
}

void CudaBackend::check_external(const void* ptr, uint64_t bytes) const {
  const Impl& m = *impl_;
  m.bind_context();
  const auto p = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr));
  unsigned int type = 0;
  if (m.cu->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS)
    throw Error(
        "bind_external: the pointer is not memory CUDA knows (host memory from malloc?); "
        "pass device memory of " +
        m.gpu_name + ", or set the value with set()");
  if (type != CU_MEMORYTYPE_DEVICE)
    throw Error(
        "bind_external: the pointer is CUDA host memory, not device memory; pass device "
        "memory of " +
        m.gpu_name + ", or set the value with set()");
  int ordinal = -1;
  check(m.cu->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p),
        "cuPointerGetAttribute");
  if (ordinal != m.opts.device)
    throw Error("bind_external: the pointer is memory of GPU " + std::to_string(ordinal) +
                "; this backend runs on GPU " + std::to_string(m.opts.device));
  (void)bytes;
}

Buffer CudaBackend::allocate(uint64_t bytes) {
  Impl& m = *impl_;
  m.bind_context();
  CUdeviceptr p = 0;
  const CUresult r = m.cu->cuMemAlloc(&p, std::max<uint64_t>(bytes, 1));
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    auto [free, total] = memory_info();
    throw Error("cuda: cannot allocate " + std::to_string(bytes) + " bytes of device memory (" +
                std::to_string(free) + " of " + std::to_string(total) +
                " free); lower max_memory, the dim ranges or the model size");
  }
  check(r, "cuMemAlloc");
  return Buffer{reinterpret_cast<void*>(p), bytes};
}

void CudaBackend::release(Buffer b) {
  if (!b.ptr) return;
  Impl& m = *impl_;
  m.bind_context();
  // Any queue may still use the buffer: wait for every stream of the context (releases are rare:
  // a session's end, a replaced input, the search's scratch arena).
  m.cu->cuCtxSynchronize();
  check(m.cu->cuMemFree(reinterpret_cast<CUdeviceptr>(b.ptr)), "cuMemFree");
}

void CudaBackend::upload(Buffer dst, uint64_t offset, const void* src, uint64_t bytes,
                         Queue* queue) {
  LUMINAL_ASSERT(offset + bytes <= dst.bytes, "cuda: upload past the end of a buffer");
  if (!bytes) return;
  Impl& m = *impl_;
  CudaQueue& q = m.queue(queue);
  m.bind_context();
  const CudaApi& cu = *m.cu;
  const auto base = reinterpret_cast<CUdeviceptr>(dst.ptr) + offset;
  if (bytes < (uint64_t{1} << 20)) {
    // Small: straight from pageable memory; the caller may free it on return, so wait.
    check(cu.cuMemcpyHtoDAsync(base, src, bytes, q.stream), "cuMemcpyHtoDAsync");
    check(cu.cuStreamSynchronize(q.stream), "cuStreamSynchronize");
    return;
  }
  // Large (weights): read by the reader threads into the queue's ring of pinned buffers while
  // the chunks before are copied (staged_upload.hpp); returns once the last chunk is staged.
  if (q.staging.slots.empty()) {
    for (CUevent& e : q.staging_done)
      if (!e) check(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    check(cu.cuMemAllocHost(&q.staging_host, CudaQueue::kStagingSlots * CudaQueue::kStagingBytes),
          "cuMemAllocHost (staging)");
    for (int j = 0; j < CudaQueue::kStagingSlots; ++j)
      q.staging.slots.push_back(static_cast<uint8_t*>(q.staging_host) +
                                j * CudaQueue::kStagingBytes);
    q.staging.slot_bytes = CudaQueue::kStagingBytes;
  }
  QueueStaging device(cu, q, base);
  staged_upload(static_cast<const uint8_t*>(src), bytes, q.staging, device, m.readers());
}

void CudaBackend::download(void* dst, Buffer src, uint64_t offset, uint64_t bytes, Queue* queue) {
  LUMINAL_ASSERT(offset + bytes <= src.bytes, "cuda: download past the end of a buffer");
  Impl& m = *impl_;
  CudaQueue& q = m.queue(queue);
  m.bind_context();
  if (bytes)
    check(m.cu->cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src.ptr) + offset, bytes,
                                  q.stream),
          "cuMemcpyDtoHAsync");
  q.check_error_word();
}

void CudaBackend::copy(Buffer dst, Buffer src, uint64_t bytes, Queue* queue) {
  LUMINAL_ASSERT(bytes <= dst.bytes && bytes <= src.bytes, "cuda: copy past the end of a buffer");
  if (!bytes || dst.ptr == src.ptr) return;
  Impl& m = *impl_;
  CudaQueue& q = m.queue(queue);
  m.bind_context();
  check(m.cu->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst.ptr),
                                reinterpret_cast<CUdeviceptr>(src.ptr), bytes, q.stream),
        "cuMemcpyDtoDAsync");
}

void CudaBackend::sync(Queue* queue) {
  Impl& m = *impl_;
  CudaQueue& q = m.queue(queue);
  m.bind_context();
  q.check_error_word();
}

double CudaBackend::time(Plan& plan, int parity, const int64_t* dims, int trials,
                         double timeout_s) {
  auto* p = dynamic_cast<CudaPlan*>(&plan);
  if (!p) throw Error("cuda: time() needs a plan loaded by this backend");
  Impl& m = *impl_;
  m.bind_context();
  const CudaApi& cu = *m.cu;
  // The queue the plan is bound with for this parity (the search's: the default queue).
  CudaQueue& q = p->queue(parity);
  const CUstream stream = q.stream;
  const auto start = std::chrono::steady_clock::now();
  auto check_timeout = [&] {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s)
      throw Error("cuda: a candidate took longer than the " + std::to_string(timeout_s) +
                  " s timeout");
  };
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  plan.execute(parity, dims);  // warm-up (and the dims copy)
  check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  check_timeout();
  // cuBLASLt steps over a dim that varies in the bucket: alternate it between two values and
  // time by wall clock from the execute to the end of its work, so the host work a changing dim
  // causes (a new spec prepared, the call captured again, the graph re-instantiated) counts.
  if (const std::optional<std::vector<int64_t>> alt = p->alternate_dims(dims)) {
    plan.execute(parity, alt->data());
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
    std::vector<double> wall;
    for (int t = 0; t < std::max(trials, 2); ++t) {
      const auto t0 = std::chrono::steady_clock::now();
      plan.execute(parity, t % 2 ? alt->data() : dims);
      check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
      wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      check_timeout();
    }
    plan.execute(parity, dims);  // leave the plan at the dims it was asked for
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
    q.check_error_word();
    return median(wall);
  }
  CUevent a = nullptr, b = nullptr;
  check(cu.cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cu.cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<double> times;
  try {
    for (int t = 0; t < std::max(trials, 1); ++t) {
      check(cu.cuEventRecord(a, stream), "cuEventRecord");
      plan.execute(parity, dims);
      check(cu.cuEventRecord(b, stream), "cuEventRecord");
      check(cu.cuEventSynchronize(b), "cuEventSynchronize");
      float ms = 0;
      check(cu.cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
      times.push_back(ms * 1e-3);
      check_timeout();
    }
  } catch (...) {
    cu.cuEventDestroy(a);
    cu.cuEventDestroy(b);
    throw;
  }
  cu.cuEventDestroy(a);
  cu.cuEventDestroy(b);
  q.check_error_word();
  return median(times);
}

std::vector<KernelStat> CudaBackend::profile(Plan& plan, int parity, const int64_t* dims,
                                             int trials) {
  auto* p = dynamic_cast<CudaPlan*>(&plan);
  if (!p) throw Error("cuda: profile() needs a plan loaded by this backend");
  return p->profile(parity, dims, trials);
}

GraphStats CudaBackend::graph_stats() const {
  const auto& g = impl_->graphs;
  return GraphStats{g.instantiations.load(),   g.launches.load(),    g.node_updates.load(),
                    g.reinstantiations.load(), g.dims_copies.load(), g.dims_host_ns.load(),
                    g.launch_host_ns.load()};
}

CudaOptions::Executor CudaBackend::executor() const { return impl_->executor; }
bool CudaBackend::programmatic_launch() const { return impl_->programmatic; }

std::string CudaBackend::profile_text(Plan& plan, const int64_t* dims) {
  std::string out = format_profile(profile(plan, 0, dims, 10));
  if (const auto* p = dynamic_cast<const CudaPlan*>(&plan)) out += p->lt_summary();
  return out;
}

std::string CudaBackend::format_profile(const std::vector<KernelStat>& stats) {
  double total = 0;
  for (const KernelStat& s : stats)
    total += s.ms;
  std::string out =
      "  node  op                      kernel              ms      GB/s   GFLOP/s  share\n";
  char line[256];
  for (const KernelStat& s : stats) {
    const double sec = s.ms * 1e-3;
    std::snprintf(line, sizeof line, "  %%%-4d %-23s %-16s %8.4f %8.1f %8.1f %5.1f%%\n", s.node,
                  s.op.c_str(), s.entry.c_str(), s.ms, sec > 0 ? s.bytes / sec * 1e-9 : 0.0,
                  sec > 0 ? s.flops / sec * 1e-9 : 0.0, total > 0 ? 100.0 * s.ms / total : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "  total %.4f ms over %zu launches\n", total, stats.size());
  return out + line;
}

const std::string& CudaBackend::arch() const { return impl_->arch; }
int CudaBackend::sm_count() const { return impl_->sm_count; }

KernelCacheStats CudaBackend::kernel_stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

std::pair<uint64_t, uint64_t> CudaBackend::memory_info() const {
  size_t free = 0, total = 0;
  impl_->bind_context();
  check(impl_->cu->cuMemGetInfo(&free, &total), "cuMemGetInfo");
  return {free, total};
}

}  // namespace luminal::cuda
