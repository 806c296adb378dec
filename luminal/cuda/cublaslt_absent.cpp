// cuBLASLt in a build without cublasLt.h (the cublaslt/ folder is not compiled then): no
// cuBLASLt op is registered, so no plan has cuBLASLt steps, and this is all of it.
#ifndef LUMINAL_HAVE_CUBLASLT
#include "luminal/core/error.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/testing.hpp"

namespace luminal::cuda {

bool lt_available(std::string* why) {
  if (why) *why = "luminal was built without cublasLt.h";
  return false;
}

std::unique_ptr<LtIslands> make_lt_islands(Device&, const LlirGraph&,
                                           const std::vector<std::string>&) {
  throw Error("cuda: built without cuBLASLt");
}

bool lt_capture_works(Device&) { return false; }

void TestHooks::fail_lt_capture_probe(bool) {}
void TestHooks::pick_lt_algorithm(std::function<int(const LtSpec&)>) {}

}  // namespace luminal::cuda
#endif
