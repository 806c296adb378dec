#pragma once
// Where a session's values live (internal to Session): one record per graph input and output,
// the buffers the session allocated (a pool: handles move between inputs and outputs), and the
// bookkeeping of every call that changes where a value lives.
//
// Each input and output owns a buffer of its largest size over every bucket, allocated once. An
// input's buffer may instead be external memory (set_external, bind_external) until it is written
// another way. An output's value lives in its own buffer, or in an input's (`lives_in`: an input
// updated in place, or the carried input its value was handed to); when that input is written,
// the output keeps its value by taking the input's buffer where it can, else loses it.
//
// Byte counts for Session::Stats are returned to the caller, which counts them.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "luminal/compiler/search.hpp"
#include "luminal/core/slot_expr.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/program/backend.hpp"

namespace luminal {

class Residency {
 public:
  /// What inputs and outputs share: the node, its label and dtype, and its buffer.
  struct Slot {
    NodeId node = 0;
    std::string label;
    DType dtype = DType::F32;
    Shape shape;
    uint64_t capacity = 0;  // bytes at the largest shape of any bucket
    Buffer buf;             // the current handle (from the pool, or external memory)
  };
  struct In : Slot {
    std::shared_ptr<const void> keep_alive;  // external memory (set_external, bind_external)
    bool external = false;
    bool bound_external = false;  // bind_external: the value at any dims is the buffer's start
    bool has_data = false;
    bool carried = false;   // a carry target: profiled on a scratch copy
    bool released = false;  // only load-time folds read it: its buffer is gone until it is set
    uint64_t bytes_set = 0;
    SlotExpr numel;
  };
  struct Out : Slot {
    int lives_in = -1;  // input index holding the value (in-place update or carried), or -1
    bool valid = false;
    std::vector<SlotExpr> shape_slots;  // the shape over the dims array
  };

  /// Records of every input and output of `g` (no buffers yet), each sized at its largest over
  /// `facts` (one per bucket); dims in the slot order of `dim_names`.
  Residency(const Graph& g, const std::vector<std::string>& dim_names,
            const std::vector<Facts>& facts);
  Residency(const Residency&) = delete;
  Residency& operator=(const Residency&) = delete;
  /// Waits for the queue's work, then releases every pooled buffer.
  ~Residency();

  /// Makes the queue on `backend` and allocates every input and output buffer.
  void attach(Backend& backend);
  Backend& backend() const { return *backend_; }
  Queue* queue() const { return queue_.get(); }

  Buffer allocate(uint64_t bytes);
  /// Releases a pooled buffer (not external memory).
  void release(Buffer b);
  /// Bytes of every input and output at its largest (what attach allocates).
  uint64_t capacity_bytes() const;
  /// Bytes the inputs and outputs hold now (an external input: its memory).
  uint64_t memory_bytes() const;

  // Inputs by index into `in`. Each throws naming the input (same messages as Session's).
  /// Uploads `bytes` as input k's value (Session::write).
  void write(int k, const void* data, uint64_t bytes);
  /// Input k takes a copy of output `o` of `from`, on the same backend (Session::set_from);
  /// returns the bytes copied.
  uint64_t copy_from(int k, const Residency& from, int o);
  /// Input k takes a copy of this residency's output `o`, ordered on the queue without a wait
  /// (Session::copy_output_to_input); returns the bytes copied.
  uint64_t copy_in(int k, int o);
  /// Uses host memory as input k's value in place when the backend can read it and it fills the
  /// buffer; false when not (carried, or not wrappable: the caller uploads it instead).
  bool wrap_host(int k, const void* data, uint64_t bytes, std::shared_ptr<const void> keep_alive);
  /// Uses the backend's memory at `ptr` as input k's buffer (Session::bind_external).
  void bind_external(int k, void* ptr, uint64_t bytes, std::shared_ptr<const void> keep_alive);
  /// Output o's value becomes input i's (Runtime::hand_off, carried state).
  void hand_off(int o, int i);
  /// Frees input k's buffer (or lets go of its external memory): no program reads it any more
  /// (load-time folds hold what they need). Writing it later gives it a buffer again. Returns the
  /// bytes freed.
  uint64_t release_input(int k);

  /// Throws naming an input without data, or whose value does not fit `dims`.
  void check_inputs(std::span<const int64_t> dims) const;
  /// After an execute at `dims`: every output is valid, in its own buffer or in the input
  /// `out_in_place` names; carried outputs not updated in place swap handles with their input,
  /// or are copied into it when its memory is the caller's (bind_external).
  void executed(std::span<const int64_t> dims, const std::vector<int>& out_in_place);

  /// Output o's value: its bytes at the last execute's dims, and the buffer holding it.
  uint64_t value_bytes(int o) const;
  Buffer value_buffer(int o) const;
  /// Waits for the queue, then downloads output o's value (`bytes` = value_bytes(o)).
  void read(int o, void* dst, uint64_t bytes) const;
  /// read() without the wait (Backend::start_download); finish_read() waits for that copy alone.
  void start_read(int o, void* dst, uint64_t bytes) const;
  void finish_read() const;
  /// Copies output o's value into the backend's own memory at `dst` (checked with
  /// check_external) on the backend, then (with `wait`) waits for the queue.
  void copy_out(int o, void* dst, uint64_t bytes, bool wait = true) const;
  /// Throws, naming `op`, unless output o has a value of `bytes` bytes.
  void check_value(int o, uint64_t bytes, const char* op) const;
  /// Output o's shape at the last execute's dims (host dims: no wait).
  std::vector<int64_t> shape(int o) const;

  /// The buffers the search profiles on: inputs without data get generated data in their own
  /// buffers (they have no visible value), and so does the tail past a value set for smaller
  /// dims; carried inputs with data get scratch copies (`scratch`, to release afterwards), so
  /// nothing visible changes. Outputs lose their values. Waits for the queue. `generated` gets
  /// the bytes of generated data uploaded.
  ProfileData profile_data(std::vector<Buffer>* scratch, uint64_t* generated);

  std::vector<In> in;
  std::vector<Out> out;
  std::vector<int> in_of_node, out_of_node;  // NodeId -> index, or -1
  std::vector<std::pair<int, int>> carries;  // (output index, input index)

 private:
  /// copy_from and copy_in: input k takes a copy of `from`'s output `o` (errors named `op`; a
  /// value not computed yet says `run_first`).
  uint64_t copy_value(int k, const Residency& from, int o, const char* op, const char* run_first);
  /// Outputs whose value lives in input k's buffer lose it (all but `keep`). With `rescue`, one
  /// of the input's capacity takes the input's own buffer instead, keeping its value.
  void drop_values_in(int k, const Out* keep = nullptr, bool rescue = false);
  /// Input k's buffer becomes `b` from the pool, forgetting external memory.
  void own(int k, Buffer b);
  /// Input k is about to be overwritten on the queue (its outputs rescued, external memory
  /// replaced by a pooled buffer).
  void prepare_write(int k);
  /// Input k uses external memory `b`.
  void use_external(int k, Buffer b, bool bound, std::shared_ptr<const void> keep_alive,
                    uint64_t bytes_set);

  Backend* backend_ = nullptr;
  std::unique_ptr<Queue> queue_;
  std::vector<Buffer> pool_;
  std::vector<int64_t> dims_;  // the dims of the outputs' values (the last execute's)
};

}  // namespace luminal
