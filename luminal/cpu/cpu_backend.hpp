#pragma once
// The CPU backend: kernels for every HLIR primitive over strided views, fused elementwise
// regions, reductions, gather/scatter (with an in-place scatter), and matmul as a generic strided
// kernel or an OpenBLAS sgemm/dgemm call. Multi-threaded (its own pool: thread_pool.hpp).
// Example: examples/snippets/cpu/cpu_backend.cpp (a matmul compiled into a Session and run).
#include <memory>
#include <string>
#include <vector>

#include "luminal/program/backend.hpp"
#include "luminal/program/op_registry.hpp"

namespace luminal::cpu {

/// One node's time in a CPU plan (CpuBackend::profile).
struct KernelTime {
  int node = 0;       // LLIR node
  std::string op;     // "cpu.BlasMatmul"
  std::string shape;  // "[1, 2048] k=768": the output shape at the dims (and a reduced axis's size)
  double ms = 0;      // median per run
};

/// Its ops are the CPU registry's (cpu_op.hpp).
class CpuBackend : public RegistryBackend {
 public:
  /// `threads` <= 0: every hardware thread (LUMINAL_CPU_THREADS overrides).
  explicit CpuBackend(int threads = 0);
  std::string name() const override { return "cpu"; }
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override;
  /// "cpu threads=N isa=<the compiler's target features> quant=<the quantized kernels' ISA>".
  std::string device_key() const override;
  /// q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k and q6_k weights run as stored (cpu.QMatmul,
  /// cpu.QGather).
  bool reads_blocks(DType t) const override;
  /// A kernel a 64 KiB read (LUMINAL_CPU_SEED_BYTES=off when the backend is made: 0): a kernel of a
  /// plan costs about a microsecond to start, about what two cores read from cache in that time.
  /// Without it the seed computed the sampler's penalised, scaled logits again from their five
  /// inputs in each of its 32 threshold passes over the vocabulary.
  double seed_byte_cost() const override;
  /// cpu.Fused, cpu.Row and elementwise primitives: their elements times their instructions'
  /// cost (cpu/seed_work.hpp); 0 with LUMINAL_CPU_SEED_BYTES=off.
  double seed_work(const EGraph& eg, ENodeId n) const override;

  /// Host memory, 256-byte aligned.
  Buffer allocate(uint64_t bytes) override;
  void release(Buffer b) override;
  /// No queues (make_queue returns null): every call has finished when it returns, and the queue
  /// is ignored.
  void upload(Buffer dst, uint64_t offset, const void* src, uint64_t bytes,
              Queue* = nullptr) override;
  void download(void* dst, Buffer src, uint64_t offset, uint64_t bytes, Queue* = nullptr) override;
  void copy(Buffer dst, Buffer src, uint64_t bytes, Queue* = nullptr) override;
  /// Kernels read host memory directly: any 8-byte-aligned range is used in place.
  Buffer wrap_host(const void* data, uint64_t bytes) override;
  /// Executes are synchronous on the CPU: nothing to wait for.
  void sync(Queue* = nullptr) override {}
  /// Seconds of one execute for the search: after a warm-up run, `trials` timed runs and more
  /// until they fill kMinTimedSeconds (at most kMaxTimedRuns); the fastest counts. On a shared
  /// machine another process can only add time to a run, and a decode step (a few ms) fits
  /// inside one burst of it: the median of three runs let such a burst choose a program 35%
  /// slower than the one it passed over (docs/quant.md, "Speed"). The dims that vary in the
  /// plan's bucket move by one every other run (CpuPlan::alternate_dims), so the shapes a decode
  /// step re-evaluates when c moves count.
  double time(Plan& plan, int parity, const int64_t* dims, int trials, double timeout_s) override;
  static constexpr double kMinTimedSeconds = 0.05;
  static constexpr int kMaxTimedRuns = 20;
  int threads() const { return threads_; }

  /// Per-node times of a plan loaded here (bound for `parity`) at `dims`: each node timed on
  /// its own, the median of `trials` runs of the program after a warm-up run. Inputs and Outputs
  /// written in place are left out.
  std::vector<KernelTime> profile(Plan& plan, int parity, const int64_t* dims, int trials);
  /// The profile as text: the time per op (count, ms, share), then the `top` slowest nodes
  /// (every node when 0).
  static std::string format_profile(const std::vector<KernelTime>& times, size_t top = 0);
  /// format_profile(profile(plan, 0, dims, 5), 40): LUMINAL_TRACE writes it for each bucket's
  /// winner as profile.txt.
  std::string profile_text(Plan& plan, const int64_t* dims) override;

 private:
  int threads_;
  double seed_byte_cost_;  // LUMINAL_CPU_SEED_BYTES, read when the backend is made
};

}  // namespace luminal::cpu
