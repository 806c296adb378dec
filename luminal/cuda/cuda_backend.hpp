#pragma once
// The CUDA backend: every HLIR primitive, fused elementwise regions, reductions, gather/scatter
// (with an in-place scatter) and a generic strided matmul, as kernels generated per node and
// compiled with NVRTC for the device's own architecture. The driver and NVRTC are loaded at run
// time: a program linked with luminal::cuda starts on machines without a GPU, and only
// constructing a CudaBackend there throws (cuda_available() says why beforehand).
// Example: examples/snippets/cuda/cuda_backend.cpp (a graph compiled and run on device 0, or the
// reason there is no GPU).
//
// Memory is device memory (allocate/upload/download). Work runs in order on a queue: each
// session makes its own (make_queue: a non-blocking stream with its own pinned upload staging
// and error word), so sessions on one backend do not wait for one another; calls given a null
// queue (the search, tools) use the backend's default queue. Uploads, executes and copies are
// ordered on their queue, and download() and sync() wait for it. Large uploads (weights from a
// mapped file) are read by several threads into a ring of pinned buffers while the buffers
// filled before are copied to the device (staged_upload.hpp).
// Compiled kernels are cached in memory and on disk (<cache root>/kernels, keyed by the full
// source text and the architecture and NVRTC version), so a second search or start compiles
// nothing. Candidates are timed with CUDA events.
// CudaBackend is a thin adapter: its state is a cuda::Device (device.hpp, internal) and each
// loaded program a CudaPlan (plan.hpp); docs/cuda.md, "Inside luminal/cuda".
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "luminal/cuda/options.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/program/op_registry.hpp"

namespace luminal::cuda {

class Device;  // device.hpp (internal)

/// True when a GPU can be used (driver loaded, a device present); otherwise `why` says why.
bool cuda_available(std::string* why);

/// The backend's rules and ops, usable without a GPU (CI builds CUDA search spaces and compiles
/// their kernels with NVRTC on machines without one); the "cuda.cublaslt" ruleset only when asked.
std::vector<RuleSet> cuda_rulesets(bool with_cublaslt = false);
bool cuda_executes(const OpDef* op);
/// LUMINAL_CUDA_SEED_PATH: the fewest-kernels seed's weight on the longest chain of kernels
/// (Backend::seed_path_weight), a number from 0 (the default: the kernel count only) to 16.
double cuda_seed_path_weight();
/// A CUDA op (or HLIR primitive) by name, or null.
const OpDef* cuda_op_named(std::string_view name);
/// The payload of a CUDA op read back from its serialised form (fused programs, cuBLASLt
/// epilogues); null for a kind the CUDA ops do not use.
std::shared_ptr<const Payload> cuda_read_payload(std::string_view kind, std::string_view text);

/// One kernel translation unit of a program: the node it computes (or copies, for an Output)
/// and its source.
struct GeneratedKernel {
  int node = 0;
  std::string what;    // "node %4 (cuda.Fused)"
  std::string source;  // CUDA C++, prelude included
};
/// Every kernel `g` needs for the bucket `spec`, as CudaBackend::load generates them (no GPU
/// needed). Throws luminal::Error for a node no CUDA op implements.
std::vector<GeneratedKernel> generate_kernels(const LlirGraph& g, const PlanSpec& spec,
                                              int sm_count = 132);

/// Its ops are the CUDA registry's (cuda_op.hpp); rulesets() leaves the cuBLASLt ruleset out
/// unless cuBLASLt is on.
class CudaBackend final : public RegistryBackend {
 public:
  explicit CudaBackend(CudaOptions opts = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda"; }
  std::vector<RuleSet> rulesets() const override;
  double seed_path_weight() const override { return cuda_seed_path_weight(); }
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override;
  /// "cuda <GPU name> sm_90 sms=132 driver=13000 nvrtc-13.0".
  std::string device_key() const override;
  /// True for q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k and q6_k: models upload those weights as
  /// stored (Dequantize, cuda.QGemv and cuda.QGather read them; docs/quant.md).
  bool reads_blocks(DType t) const override;

  Buffer allocate(uint64_t bytes) override;
  /// Device memory of this backend's GPU (cuPointerGetAttribute), else a luminal::Error saying
  /// what the pointer is.
  void check_external(const void* ptr, uint64_t bytes) const override;
  /// A new stream (non-blocking: not ordered with the default stream or other queues) with its
  /// own upload staging and error word. Destroying it waits for its stream.
  std::unique_ptr<Queue> make_queue() override;
  /// The CUstream of `queue` (null: the default queue), as a void* (interop, tests).
  void* stream(Queue* queue = nullptr) const;

  /// Waits for every queue's work before freeing (a buffer may be in use on any of them).
  void release(Buffer b) override;
  /// Small uploads wait for their copy; large ones go through the queue's ring of pinned staging
  /// buffers (4 x 16 MiB), each chunk read by upload_threads threads while the chunks before it
  /// are copied to the device, and return once the last chunk is staged. Either way the source
  /// may be freed on return.
  void upload(Buffer dst, uint64_t offset, const void* src, uint64_t bytes,
              Queue* queue = nullptr) override;
  /// Waits for the queue, then checks its error word like sync().
  void download(void* dst, Buffer src, uint64_t offset, uint64_t bytes,
                Queue* queue = nullptr) override;
  /// Into the queue's pinned read buffer with its error word, an event after them; the finish
  /// waits for that event (not the stream), copies the bytes out and throws what the word says.
  void start_download(void* dst, Buffer src, uint64_t offset, uint64_t bytes,
                      Queue* queue = nullptr) override;
  void finish_download(Queue* queue = nullptr) override;
  void copy(Buffer dst, Buffer src, uint64_t bytes, Queue* queue = nullptr) override;
  /// Waits for the queue's stream; throws luminal::Error when one of its kernels reported a bad
  /// index since its last sync (a Gather index outside its data).
  void sync(Queue* queue = nullptr) override;
  /// `stream` is a CUstream of this backend's GPU (PyTorch's current stream): ordered by an
  /// event recorded there and waited for on the queue's stream (cuStreamWaitEvent).
  void wait_external(void* stream, Queue* queue = nullptr) override;
  /// An event recorded on the queue's stream that `stream` waits for; the queue's error word is
  /// copied to the host on the way and checked at the next call, without a wait.
  void signal_external(void* stream, Queue* queue = nullptr) override;
  /// Median of `trials` executes timed with CUDA events on the plan's bound stream, after one
  /// warm-up run.
  double time(Plan& plan, int parity, const int64_t* dims, int trials, double timeout_s) override;

  /// format_profile(profile(plan, 0, dims, 10)), then the plan's cuBLASLt summary (steps,
  /// prepared specs, captures, recaptures, stream calls) when it has cuBLASLt steps:
  /// LUMINAL_TRACE writes it for each bucket's chosen program (profile.txt).
  std::string profile_text(Plan& plan, const int64_t* dims) override;
  /// Per-launch times of one plan (median of `trials`) on its bound stream, with its bytes and
  /// flops.
  std::vector<KernelStat> profile(Plan& plan, int parity, const int64_t* dims, int trials);
  /// The profile as a table: node, op, ms, GB/s, GFLOP/s, share of the total.
  static std::string format_profile(const std::vector<KernelStat>& stats);

  /// "sm_90".
  const std::string& arch() const;
  int sm_count() const;
  KernelCacheStats kernel_stats() const;
  GraphStats graph_stats() const;
  /// The executor plans of this backend use (CudaOptions::executor after the environment).
  CudaOptions::Executor executor() const;
  /// Whether graph kernel nodes are joined by programmatic edges (CudaOptions::programmatic_launch
  /// after LUMINAL_CUDA_PDL, on sm_90 and later only).
  bool programmatic_launch() const;
  /// How graph kernel nodes wait for each other (CudaOptions::graph_edges, after
  /// LUMINAL_CUDA_GRAPH_EDGES).
  CudaOptions::GraphEdges graph_edges() const;
  /// Whether cuBLASLt matmuls join the search (CudaOptions::cublaslt after LUMINAL_CUDA_CUBLASLT,
  /// and libcublasLt loaded); `why` says why not.
  bool cublaslt(std::string* why = nullptr) const;
  /// Whether cuBLASLt f32 products may use TF32 (CudaOptions::allow_tf32 after
  /// LUMINAL_CUDA_TF32; false without cuBLASLt).
  bool allow_tf32() const;
  using LtStats = cuda::LtStats;
  LtStats lt_stats() const;
  /// Free and total device memory in bytes.
  std::pair<uint64_t, uint64_t> memory_info() const;

  /// The device behind this backend (internal to luminal: tests and benchmarks reach the driver,
  /// the context and the cuBLASLt handle through it; device.hpp).
  Device& device() { return *dev_; }

 private:
  std::unique_ptr<Device> dev_;
};

}  // namespace luminal::cuda
