#pragma once
// Test hooks of the CUDA backend (internal to luminal/cuda): the few places where a test makes
// the driver or cuBLASLt do what they rarely do. Production code only reads them; tests set them
// and reset them when they leave.
// Example: examples/snippets/cuda/testing.cpp (each hook set, then reset).
#include <functional>

namespace luminal::cuda {

struct LtSpec;  // cublaslt/lt_spec.hpp

struct TestHooks {
  /// The next `n` graph node updates are refused as a driver would refuse them (the executable
  /// is then re-instantiated from its template).
  static void refuse_graph_updates(int n);
  /// The next device's cuBLASLt capture probe fails as on a driver that cannot capture library
  /// calls (its plans with cuBLASLt steps then run on the stream).
  static void fail_lt_capture_probe(bool fail);
  /// While set, a cuBLASLt prepare asks `pick` which heuristic answer to take for its spec: an
  /// index i >= 0 takes the heuristic's i-th answer (neither the kept algorithm nor the cache;
  /// throws luminal::Error "... fewer than i + 1 algorithms ..." when the heuristic returns
  /// fewer), a negative one prepares as usual. Null: as usual.
  static void pick_lt_algorithm(std::function<int(const LtSpec&)> pick);
};

}  // namespace luminal::cuda
