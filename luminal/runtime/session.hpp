#pragma once
// Session: a graph's resident state on one backend, and the plans that run it.
// Example: examples/snippets/runtime/session.cpp (a weight set once, two buckets of s compiled,
// executed with dims by name, then on the hot path).
//
// Weights are set (or bound: io::bind) once and stay resident; compile() searches each bucket on
// the data bound so far. The hot path takes dims as a flat array in slot order (dim(), dims())
// and inputs and outputs as handles resolved once (input(), output()), written and read by
// handle (write(), read(): a read waits for the session's queue, then downloads): no string or
// map work, no allocation.
//
// Buffers belong to the backend. Every input and output buffer is allocated once, at the largest
// size any bucket needs; set() uploads into it and never reallocates. The buckets' plans share
// one arena sized for the largest of them, so no pointer moves while executing. Carried state
// (Graph::carry) and hand_off swap buffer handles, never bytes: a carried output not updated in
// place alternates between two buffers, and each plan is bound once per parity (carried state in
// the caller's memory, bind_external, takes a copy instead).
//
// Each session orders its work on its own queue (Backend::make_queue; a CUDA stream), so two
// sessions on one backend run side by side; the search times candidates on the backend's
// default queue.
//
// `luminal::compile(g, backend, options)` makes a session and compiles it in one call, timing
// candidates on generated data (set inputs afterwards).
//
// The parts: where values live (buffers, external memory, hand_off) is runtime/residency.hpp;
// each bucket's program comes from compile_bucket (compiler/compile_bucket.hpp: the compile cache,
// else a search); load-time folds (runtime/folds.hpp) run on the first execute and again after a
// weight they read is set; Session itself picks the bucket and parity and executes.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/compiler/compile.hpp"
#include "luminal/compiler/options.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/runtime/runtime.hpp"

namespace luminal {

/// Index of a dynamic dimension in a session's dims array.
using DimSlot = int;

class Session : public Runtime {
 public:
  /// Allocates every input and output buffer on `backend`. Nothing is searched yet. Throws when a
  /// dynamic dimension has neither a declared range nor buckets (its buffers would be unbounded),
  /// or when the buffers alone exceed max_memory.
  Session(Graph graph, Backend& backend, CompileOptions options = {});
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session() override;

  /// Searches every bucket, timing candidates on the data bound so far (inputs not set get
  /// generated data; carried state is profiled on scratch copies, so nothing visible changes),
  /// then binds the winners. Runs once; execute() calls it if needed.
  void compile();
  bool compiled() const;

  /// Dims by name, over the graph's set_dim values. Picks the bucket, runs, carries state.
  void execute(const DynMap& dyn = {}) override;
  /// The hot path: one value per slot (see dim()). No string or map lookups, no allocation.
  void execute(std::span<const int64_t> dims);
  /// Waits for launched work (reading an output or a carried value also does).
  void sync();
  /// Orders the session's queue after the work already issued on `stream`, another library's
  /// stream on the backend's device (CUDA: a CUstream such as PyTorch's current stream), without
  /// waiting on the host: an execute after this reads what that work wrote. Nothing on the CPU.
  void wait_for_stream(void* stream);
  /// Orders work issued on `stream` after this behind the session's work so far (its executes
  /// and copy_output(wait = false) copies), without waiting on the host. Both this and
  /// wait_for_stream throw, after ordering the streams, an error a kernel of an earlier execute
  /// reported, read without a wait: at a later call, once that execute has finished on the
  /// device. Nothing on the CPU.
  void signal_stream(void* stream);
  /// The session's queue (Backend::make_queue at construction; null on backends without
  /// queues, the CPU). Every upload, copy, download, sync and execute of the session is ordered
  /// on it, so sessions sharing a backend do not wait for one another; the search uses the
  /// backend's default queue.
  Queue* queue() const;

  /// The slot of a dynamic dimension; throws listing the dims for an unknown name.
  DimSlot dim(std::string_view name) const;
  /// Dim names in slot order (sorted).
  const std::vector<std::string>& dim_names() const;
  /// A dims array holding the graph's set_dim values (0 where none was set).
  std::vector<int64_t> dims() const;

  /// An input or an output resolved once (input(), output()): the hot-path calls write() and
  /// read() take it instead of a label, so a decode step looks nothing up by name.
  struct InputHandle {
    int index = -1;
  };
  struct OutputHandle {
    int index = -1;
  };
  /// Throws naming the label when it is unknown or not an input (an output).
  InputHandle input(std::string_view label) const;
  InputHandle input(const Tensor& t) const;
  OutputHandle output(std::string_view label) const;
  OutputHandle output(const Tensor& t) const;
  /// set_bytes() by handle: `bytes` of raw data in the input's dtype (whole elements, at most
  /// what the input holds at its largest dims). No lookup, no allocation.
  void write(InputHandle in, const void* data, uint64_t bytes);
  /// get_bytes() by handle: waits for the session's queue, then copies the output's value at the
  /// last execute's dims into `dst`, which must hold `bytes` = output_bytes(out). No lookup, no
  /// allocation.
  void read(OutputHandle out, void* dst, uint64_t bytes) const;
  /// read() without the wait: starts copying the output's value at the last execute's dims into
  /// `dst` (`bytes` = output_bytes(out)) once the work issued so far has finished, and returns.
  /// finish_read() waits for that copy alone, so executes issued after the start keep running
  /// (CausalLM::generate reads a step's token while the next step runs). One read in flight: a
  /// second start finishes the first. `dst` must stay valid until finish_read(). On the CPU the
  /// copy happens at the start.
  void start_read(OutputHandle out, void* dst, uint64_t bytes) const;
  void finish_read() const;
  /// Sets input `in` to the output's value at the last execute's dims with a copy on the backend,
  /// ordered after the work issued so far and without a wait: a decode step's token fed to the
  /// next step before the host has read it. Throws on a dtype mismatch, an output larger than
  /// the input holds, or an output not computed yet.
  void copy_output_to_input(OutputHandle out, InputHandle in);
  /// The bytes of the output's value at the last execute's dims.
  uint64_t output_bytes(OutputHandle out) const;
  /// read() into the backend's own memory (CUDA: device memory of its GPU, such as a PyTorch
  /// tensor's data_ptr(); the CPU: host memory): a copy on the backend, with no host round
  /// trip, after which the session's queue is idle. `bytes` = output_bytes(out). With `wait`
  /// false the copy is only ordered on the session's queue (signal_stream() orders a reader).
  void copy_output(OutputHandle out, void* dst, uint64_t bytes, bool wait = true) const;

  /// Uses `bytes` of host memory at `data` as an input's value without a copy when the backend
  /// can read it directly (the CPU, 8-byte aligned), else uploads it once. `keep_alive` keeps
  /// the memory valid for as long as the session uses it. Not for carried inputs (written in
  /// place).
  void set_external(std::string_view label, const void* data, uint64_t bytes,
                    std::shared_ptr<const void> keep_alive);

  /// Uses the backend's own memory at `ptr` (CUDA: device memory of the backend's GPU, such as a
  /// PyTorch tensor's data_ptr(); the CPU: host memory) as input `label`'s buffer, without a
  /// copy. `bytes` must hold the input at its largest dims (the search may time a bucket there),
  /// `ptr` must be 16-byte aligned, and the memory must stay valid and unchanged while executes
  /// read it (`keep_alive` is held until the input is set another way). The next execute re-binds
  /// the plans to the new pointer (Stats::rebinds). A carried input bound this way is the state
  /// itself: every execute leaves the new value in that memory (written in place where the
  /// program updates it in place, else copied there after the step), as a torch.compile'd
  /// model's in-place KV cache expects; its memory need only hold the value at the dims it is
  /// executed at (the search times carried state on scratch copies), checked at each execute.
  void bind_external(std::string_view label, void* ptr, uint64_t bytes,
                     std::shared_ptr<const void> keep_alive = {});

  /// Sets input `input` to the current value of `output` of `from`, a session on the same
  /// backend, with a copy on the backend (no host round trip): e.g. weights generated by a graph.
  /// Waits for `from`'s queue first. Throws on another backend, a dtype mismatch, an output
  /// larger than the input holds, or an output not computed yet.
  void set_from(std::string_view input, const Session& from, std::string_view output);

  struct Stats {
    uint64_t bytes_uploaded = 0;    // host -> backend (set, set_bytes, bind)
    uint64_t bytes_generated = 0;   // generated data the search timed on (host -> backend)
    uint64_t bytes_downloaded = 0;  // backend -> host (get)
    uint64_t bytes_wrapped = 0;     // memory used in place (set_external, bind_external)
    uint64_t bytes_copied = 0;      // backend -> backend (set_from, copy_output)
    uint64_t executes = 0;
    uint64_t rebinds = 0;       // plans re-bound because buffers moved (hand_off, bucket switches)
    uint64_t bytes_folded = 0;  // values computed by load-time folds (each run counted)
    uint64_t fold_runs = 0;     // fold programs run
    uint64_t bytes_released = 0;  // weights freed because only folds read them
  };
  const Stats& stats() const;
  /// Weights + state + input/output buffers + folded values + arena + workspaces, in bytes
  /// (weights released after folding not counted).
  uint64_t memory_bytes() const;
  /// The load-time folds the chosen programs read (CompileOptions::folding): one line each, with
  /// its dtype, shape, bytes and the weights it is computed from; "" when there are none.
  std::string fold_report() const;
  Backend& backend() const;
  const CompileOptions& options() const;

  /// The search reports of every bucket, joined.
  std::string report() const;
  const std::vector<SearchReport>& reports() const;
  /// The chosen LLIR of the bucket that `dyn` selects.
  const LlirGraph& llir(const DynMap& dyn = {}) const;
  /// The loaded plan of that bucket (tests and tools).
  const Plan& plan(const DynMap& dyn = {}) const;
  /// The same plan, mutable, for what runs a plan directly (Backend::time, the backends'
  /// profile()): that writes the session buffers it is bound to (outputs, state updated in
  /// place) but swaps no carried state, unlike execute().
  Plan& plan(const DynMap& dyn = {});
  /// The backend address of an output's buffer, or of an input's (tests: stable pointers).
  const void* buffer_address(std::string_view label) const;

  const Graph& graph() const override;

 protected:
  void set_input(NodeId id, HostBuffer data) override;
  void set_input_bytes(NodeId id, const void* data, uint64_t bytes) override;
  HostBuffer output_value(NodeId id) const override;
  std::vector<int64_t> output_shape(NodeId id) const override;
  void move_output_to_input(NodeId output, NodeId input) override;

 private:
  struct State;
  int pick_bucket(std::span<const int64_t> dims) const;
  Plan& bucket_plan(const DynMap& dyn) const;  // plan(): the plan of the bucket `dyn` selects
  int pick_parity(int bucket);
  void run_folds();
  void input_changed(int k);
  std::unique_ptr<State> s_;
};

/// Makes a session and compiles it, timing candidates on generated data.
Session compile(const Graph& g, Backend& backend, const CompileOptions& options = {});

}  // namespace luminal
