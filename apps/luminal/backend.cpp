// --backend cpu|cuda for the commands that run a model (run, bench).
#include <iostream>
#include <memory>
#include <string>

#include "apps/luminal/commands.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#ifdef LUMINAL_CLI_CUDA
#include "luminal/cuda/cuda_backend.hpp"
#endif

namespace luminal::cli {

namespace {

// Whether a GPU can be used; otherwise `why` says why.
bool gpu_available(std::string& why) {
#ifdef LUMINAL_CLI_CUDA
  return cuda::cuda_available(&why);
#else
  why = "this luminal was built without the CUDA backend (no CUDA toolkit at configure time)";
  return false;
#endif
}

}  // namespace

void add_backend_options(CLI::App* cmd, BackendChoice& choice) {
  cmd->add_option("--backend", choice.name,
                  "cpu or cuda (default: cuda when a GPU can be used, else cpu)");
  cmd->add_option("--threads", choice.threads, "CPU threads (default: all)")
      ->check(CLI::Range(0, 4096));
}

std::unique_ptr<Backend> make_backend(const BackendChoice& choice) {
  const std::string& name = choice.name;
  if (!name.empty() && name != "cpu" && name != "cuda")
    throw Error("--backend: '" + name + "' is not a backend; give cpu or cuda");
  std::string why;
  if (name == "cuda") {
    if (!gpu_available(why)) throw Error("--backend cuda: no GPU can be used: " + why);
  } else if (name.empty() && gpu_available(why)) {
#ifdef LUMINAL_CLI_CUDA
    auto gpu = std::make_unique<cuda::CudaBackend>();
    std::cerr << "luminal: backend cuda (a GPU is available; --backend cpu for the CPU)\n";
    return gpu;
#endif
  }
#ifdef LUMINAL_CLI_CUDA
  if (name == "cuda") {
    auto gpu = std::make_unique<cuda::CudaBackend>();
    std::cerr << "luminal: backend cuda\n";
    return gpu;
  }
#endif
  auto cpu = std::make_unique<cpu::CpuBackend>(choice.threads);
  if (name.empty())
    std::cerr << "luminal: backend cpu (no GPU: " << why << ")\n";
  else
    std::cerr << "luminal: backend cpu\n";
  return cpu;
}

}  // namespace luminal::cli
