// bench_cuda: row kernels over a (4096, 32768) bf16 tensor (see cuda_bench.hpp).
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "bench/cuda_bench.hpp"
#include "luminal/luminal.hpp"

namespace luminal::bench_cuda {

namespace {

constexpr int64_t kRows = 4096, kLen = 32768;

/// Kernel time of a session's program: the sum of its launches' medians (event-timed), in seconds.
double program_seconds(cuda::CudaBackend& be, Session& s, size_t& launches) {
  s.execute();
  s.sync();
  std::vector<int64_t> dims = s.dims();
  const std::vector<cuda::KernelStat> stats = be.profile(s.plan(), 0, dims.data(), 20);
  double sec = 0;
  for (const cuda::KernelStat& k : stats)
    sec += k.ms * 1e-3;
  launches = stats.size();
  return sec;
}

}  // namespace

void row_kernels(cuda::CudaBackend& be, double copy_gbs, int limit) {
  // One input for the three programs: bf16 values in [2^-7, 2^-6) (as the row sum always used).
  std::vector<uint16_t> x(static_cast<size_t>(kRows * kLen));
  std::mt19937_64 rng(4);
  for (uint16_t& h : x)
    h = static_cast<uint16_t>(0x3C00 + (rng() & 0x3FF));
  const double in_bytes = static_cast<double>(x.size()) * 2;
  struct Case {
    const char* name;
    double out_bytes;  // bytes written (and read besides x: RMSNorm's weight)
  };
  const Case cases[] = {{"softmax", in_bytes},
                        {"rms_norm", in_bytes + kLen * 2},
                        {"row sum", static_cast<double>(kRows) * 2}};
  for (const Case& c : cases) {
    try {
      Graph g;
      Tensor t = g.tensor("x", {kRows, kLen}, DType::BF16);
      const std::string name = c.name;
      if (name == "softmax") {
        t.softmax(-1).output("y");
      } else if (name == "rms_norm") {
        t.rms_norm(g.tensor("w", {kLen}, DType::BF16), 1e-5).output("y");
      } else {
        t.sum(-1).output("y");
      }
      Session s(g, be, CompileOptions().search_graph_limit(limit).verbose(false));
      s.set_bytes("x", x.data(), x.size() * 2);
      if (name == "rms_norm") s.set("w", std::vector<float>(kLen, 1.0f));
      s.compile();
      size_t launches = 0;
      const double sec = program_seconds(be, s, launches);
      const double gbs = (in_bytes + c.out_bytes) / sec * 1e-9;
      std::printf(
          "row kernel %s (4096, 32768) bf16: %.3f ms, %.0f GB/s = %.0f%% of copy (target >= "
          "80%%); %zu launch%s: %s\n",
          c.name, sec * 1e3, gbs, 100 * gbs / copy_gbs, launches, launches == 1 ? "" : "es",
          s.llir().op_mix_string().c_str());
    } catch (const std::exception& e) {
      std::printf("row kernel %s: FAILED: %s\n", c.name, e.what());
    }
  }
}

}  // namespace luminal::bench_cuda
