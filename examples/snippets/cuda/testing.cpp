// luminal/cuda/testing.hpp: the test hooks of the CUDA backend: a test sets one before the rare
// event it needs and resets it when it leaves. No GPU needed to set them.
#include <functional>

#include "luminal/cuda/testing.hpp"
#include "snippet.hpp"

using namespace luminal::cuda;

int main() {
  TestHooks::refuse_graph_updates(1);  // the next graph node update is refused
  TestHooks::fail_lt_capture_probe(true);
  TestHooks::pick_lt_algorithm([](const LtSpec&) { return 1; });  // the heuristic's 2nd answer
  // ... the test's sessions run here (they re-instantiate, run cuBLASLt on the stream, ...) ...
  TestHooks::refuse_graph_updates(0);  // reset on the way out
  TestHooks::fail_lt_capture_probe(false);
  TestHooks::pick_lt_algorithm(nullptr);
}
