// --backend cpu|cuda and --dtype for the commands that run a model (run, bench).
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

void add_dtype_option(CLI::App* cmd, std::string& choice) {
  cmd->add_option("--dtype", choice,
                  "auto, f32, bf16 or f16: the dtype the model computes in (default auto: a "
                  "bf16/f16 checkpoint in its own dtype on the GPU, else f32)");
}

DType model_dtype(const std::string& choice, const io::ModelConfig& config,
                  const Backend& backend) {
  if (choice.empty() || choice == "auto") {
    const bool half = config.dtype == DType::BF16 || config.dtype == DType::F16;
    return half && backend.name() == "cuda" ? *config.dtype : DType::F32;
  }
  if (choice == "f32") return DType::F32;
  if (choice == "bf16") return DType::BF16;
  if (choice == "f16") return DType::F16;
  throw Error("--dtype: '" + choice + "' is not a dtype; give auto, f32, bf16 or f16");
}

nn::TopKForm router_form(const Backend& backend) {
  // The search picks between the router's two top-k forms on every backend (docs/moe.md). The
  // CPU kept the argmax alone from 2026-12-03, when the ranks' pairs cost about 18 instructions
  // each and the search given both forms landed on slower programs; with the pairs ranked by
  // NaN-as-infinity keys (5 instructions) the searched router decodes a tiny 128-expert
  // Qwen3-MoE GGUF 16% faster on 2 threads, prefill about equal (BENCHMARKS.md, session 26).
  (void)backend;
  return nn::TopKForm::Searched;
}

}  // namespace luminal::cli
