#pragma once
// Backend: what a device provides to the compiler and to sessions: its name, its ops' rewrite
// rules (rulesets), the ops it can run (executes), one loaded program per bucket (load: a Plan)
// and its own memory (allocate, release, upload, download, copy, sync).
// Example: examples/snippets/program/backend.cpp (a backend with its own host memory that hands
// rules and plans to the CPU backend; a session compiles and runs on it).
//
// Memory belongs to the backend: host memory for the CPU, device memory for CUDA. A session
// allocates its input, output and arena buffers through it once, uploads into them, and hands
// them to plans as Bindings.
//
// A Plan is one loaded LLIR program for one bucket of dim values. Its working memory (the arena)
// is sized at the bucket's upper bounds, so nothing is re-planned while executing and every
// intermediate address is the same on every execute. Dims arrive as a flat array in the slot
// order of PlanSpec::dim_names. Buffers are bound per parity (0 and 1): a carried output that is
// not updated in place alternates between two buffers, and a backend that captures launches (a CUDA
// graph) captures one per parity.
//
// Work is ordered on queues. A backend whose work runs asynchronously (CUDA: a stream) makes a
// Queue per session with make_queue(); uploads, copies, downloads and syncs name the queue they
// are ordered on, and a plan launches on the queue it was bound with (Bindings::queue). Work on
// one queue runs in order; work on different queues is not ordered (sessions on one backend run
// side by side). A null queue is the backend's default queue, which the search uses. The CPU
// makes no queues: everything it does has finished when the call returns.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/core/expr.hpp"
#include "luminal/egraph/rule.hpp"
#include "luminal/program/llir.hpp"

namespace luminal {

/// Memory a backend allocated (or a host range it can read directly). `ptr` is the address the
/// backend's kernels use: a host pointer on the CPU, a device pointer on CUDA.
struct Buffer {
  void* ptr = nullptr;
  uint64_t bytes = 0;
  explicit operator bool() const { return ptr != nullptr || bytes != 0; }
  bool operator==(const Buffer&) const = default;
};

/// An ordered queue of a backend's work (CUDA: a stream with its own staging memory and error
/// word). Made by Backend::make_queue and handed back to the backend's calls; work on one queue
/// runs in the order it was issued. Destroying a queue waits for its work. A queue must outlive
/// the plans bound with it and belongs to the backend that made it.
class Queue {
 public:
  virtual ~Queue() = default;
};

/// What a plan is loaded for.
struct PlanSpec {
  /// The range of every dim the program uses, in this bucket.
  Facts facts;
  /// Slot order of the dims array execute() takes: dims[i] is the value of dims_names[i].
  std::vector<std::string> dim_names;
};

/// The buffers one execution reads and writes.
struct Bindings {
  std::vector<Buffer> inputs;   // one per Plan::inputs(), in that order
  std::vector<Buffer> outputs;  // one per Plan::outputs(); unused for outputs written in place
  Buffer arena;                 // at least Plan::arena_bytes()
  /// Where execute() launches (null: the backend's default queue). Both parities of a plan are
  /// normally bound with the same queue.
  Queue* queue = nullptr;
};

/// The user-visible inputs and outputs of a program, by label, in binding order.
struct PlanIo {
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  /// Per output: the index into `inputs` whose buffer holds the output's value after execute
  /// (a carried input updated in place; nothing is copied), or -1 (the output's own buffer).
  std::vector<int> output_in_input;

  /// Reads Input/Output labels and in-place chains from the program. An output counts as written
  /// in place when its value is an in-place update of an input, read through an identity view of
  /// the same element count.
  static PlanIo of(const LlirGraph& g);
};

class Plan {
 public:
  virtual ~Plan() = default;
  const PlanIo& io() const { return io_; }
  /// Arena bytes for every dim value of the bucket.
  virtual uint64_t arena_bytes() const = 0;
  /// Bytes of workspaces the plan allocated for itself (library calls), counted by sessions.
  virtual uint64_t workspace_bytes() const { return 0; }
  /// Attaches buffers to `parity` (0 or 1). Later executes of that parity use them.
  virtual void bind(int parity, const Bindings& b) = 0;
  /// Runs once on the buffers bound to `parity` with dims[i] the value of slot i. May return
  /// before the work is done (Backend::sync of the bound queue waits). Nothing allocates or looks
  /// names up here.
  virtual void execute(int parity, const int64_t* dims) = 0;

 protected:
  PlanIo io_;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  /// The backend's rewrite rules, run in this order after the core rules (each saturated).
  virtual std::vector<RuleSet> rulesets() const = 0;
  virtual bool executes(const OpDef* op) const = 0;
  /// What a byte a kernel reads costs in the fewest-kernels seed, in kernels (0: the seeds count
  /// kernels only). A backend whose kernel launches are cheap beside its memory traffic (the CPU)
  /// sets it so that the seed stores a value read by many kernels once rather than computing it
  /// again from its wider inputs in each (SearchSpace::set_seed_byte_cost).
  virtual double seed_byte_cost() const { return 0; }
  /// What the longest chain of kernels costs in the fewest-kernels seed beside the kernel count,
  /// per kernel on it (0: the count only). A backend whose independent kernels overlap (CUDA:
  /// graph branches, programmatic dependent launch) runs a latency-bound step in about the chain's
  /// time (SearchSpace::set_seed_path_weight).
  virtual double seed_path_weight() const { return 0; }
  /// What the arithmetic of e-node n costs in the fewest-kernels seed, in kernels (0: nothing
  /// beyond its OpDef's seed cost). The CPU prices heavy arithmetic over large constant shapes,
  /// so that the seed stores such a value once instead of computing it in each of its readers.
  virtual double seed_work(const EGraph& eg, ENodeId n) const {
    (void)eg;
    (void)n;
    return 0;
  }
  /// Compiles a candidate for one bucket. Throws luminal::Error when it cannot (the search
  /// rejects it).
  virtual std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) = 0;
  /// True when this backend's kernels read weights of type `t` as stored (block types q4_0 ..
  /// q6_k; bf16/f16 matrices beside f32 activations); otherwise loaders widen them to f32 first.
  virtual bool reads_blocks(DType t) const {
    (void)t;
    return false;
  }

  // Identity, for the compile cache: a cached program is reused only with the same backend and
  // device key, and read back through op_named / read_payload.
  /// What makes programs searched here differ from elsewhere (the CPU: threads and ISA; CUDA:
  /// GPU, compute capability, driver). One line.
  virtual std::string device_key() const = 0;
  /// The op of this backend (or an HLIR primitive) with this name, or null.
  virtual const OpDef* op_named(std::string_view name) const;
  /// A payload of this backend's ops from its serialised form; throws luminal::Error for an
  /// unknown kind or malformed text.
  virtual std::shared_ptr<const Payload> read_payload(std::string_view kind,
                                                      std::string_view text) const;

  /// A new queue for one session's work, or null when the backend has none (the CPU: every call
  /// has finished when it returns). The default returns null.
  virtual std::unique_ptr<Queue> make_queue();

  // Memory. Buffers are aligned to at least 256 bytes; contents start undefined. `queue` (null:
  // the default queue) orders a call with the work launched there; overrides keep the default
  // argument `= nullptr`.
  virtual Buffer allocate(uint64_t bytes) = 0;
  /// Frees a buffer once no queue uses it any more.
  virtual void release(Buffer b) = 0;
  /// Copies host bytes into a buffer, ordered after work already launched on `queue`.
  virtual void upload(Buffer dst, uint64_t offset, const void* src, uint64_t bytes,
                      Queue* queue = nullptr) = 0;
  /// Waits for the work launched on `queue`, then copies bytes out of a buffer.
  virtual void download(void* dst, Buffer src, uint64_t offset, uint64_t bytes,
                        Queue* queue = nullptr) = 0;
  /// download() without the wait: starts copying bytes out of a buffer into host memory at `dst`
  /// once the work launched on `queue` so far has finished, and returns. finish_download() waits
  /// for that copy alone (work launched after it may still run), then `dst` holds the bytes; it
  /// throws an error a kernel before the copy reported. One download in flight a queue: a second
  /// start finishes the first. `dst` must stay valid until then. The default downloads at once
  /// (right for backends whose calls finish before they return: the CPU).
  virtual void start_download(void* dst, Buffer src, uint64_t offset, uint64_t bytes,
                              Queue* queue = nullptr);
  virtual void finish_download(Queue* queue = nullptr);
  /// Copies between two buffers of this backend, ordered with the work launched on `queue`.
  virtual void copy(Buffer dst, Buffer src, uint64_t bytes, Queue* queue = nullptr) = 0;
  /// A buffer over host memory that kernels can read directly (zero-copy weights), or an empty
  /// Buffer when this backend cannot (CUDA device memory) or the alignment does not allow it.
  virtual Buffer wrap_host(const void* data, uint64_t bytes);
  /// Throws luminal::Error naming the problem unless `bytes` at `ptr` is memory this backend's
  /// kernels can use as a buffer (Session::bind_external). The default accepts host memory (the
  /// CPU's own); CUDA requires device memory of its GPU.
  virtual void check_external(const void* ptr, uint64_t bytes) const;
  /// Waits until every execute and copy launched on `queue` has finished.
  virtual void sync(Queue* queue = nullptr) = 0;
  /// Orders `queue` after the work already issued on `stream`, a stream of another library on
  /// this backend's device (CUDA: a CUstream, such as PyTorch's current stream), without waiting
  /// on the host. The default does nothing: right for backends whose calls finish before they
  /// return (the CPU); a backend with asynchronous queues overrides both of these.
  virtual void wait_external(void* stream, Queue* queue = nullptr);
  /// The other way: work issued on `stream` after this waits for what `queue` has launched so
  /// far. Both may throw (after ordering) an error a kernel of an earlier call on `queue`
  /// reported, read without waiting. The default does nothing.
  virtual void signal_external(void* stream, Queue* queue = nullptr);

  /// Median seconds of one execute of `plan` over `trials` runs, after one untimed warm-up run,
  /// on the queue the plan is bound with; returns (or throws) with that queue idle. Throws
  /// luminal::Error when a run exceeds `timeout_s`. The default times execute() + sync() of the
  /// default queue with a steady clock (right for backends without queues, and for plans bound
  /// by the search, which binds with the default queue).
  virtual double time(Plan& plan, int parity, const int64_t* dims, int trials, double timeout_s);
  /// A candidate whose warm-up run takes longer than `seconds` (> 0) cannot win: time() then
  /// returns that run's time without the timed runs (timed_runs). The search sets it from its
  /// best so far before each candidate and clears it (0) after; a backend with its own timing may
  /// ignore it.
  void set_give_up(double seconds) { give_up_s_ = seconds; }
  double give_up() const { return give_up_s_; }
  /// A per-kernel profile of `plan` (bound for parity 0) at `dims` as text, for LUMINAL_TRACE;
  /// empty when the backend has none (the default).
  virtual std::string profile_text(Plan& plan, const int64_t* dims);

 protected:
  /// time()'s runs: one untimed warm-up, then at least `min_runs` timed runs and more while
  /// they add up to less than `min_total_s`, at most `max_runs` (each execute() + sync()).
  /// Throws luminal::Error when a run exceeds `timeout_s` (> 0). A warm-up over give_up() (> 0)
  /// is the only run, returned as the one time. With `alt`, the runs alternate between `dims`
  /// and `alt` (the warm-up and every even run at `dims`), so what a change of dims costs (a
  /// plan re-evaluating the shapes that read them) counts as it does in a decode loop.
  std::vector<double> timed_runs(Plan& plan, int parity, const int64_t* dims, int min_runs,
                                 int max_runs, double min_total_s, double timeout_s,
                                 const int64_t* alt = nullptr);

 private:
  double give_up_s_ = 0;
};

}  // namespace luminal
