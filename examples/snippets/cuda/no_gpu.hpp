#pragma once
// What the CUDA snippets that need a GPU share: no_gpu() says whether this machine has none (and
// why, on stderr); such a snippet then stops, passing.
#include <iostream>
#include <string>

#include "luminal/cuda/cuda_backend.hpp"

inline bool no_gpu() {
  std::string why;
  if (luminal::cuda::cuda_available(&why)) return false;
  std::cerr << why << "\n";
  return true;
}
