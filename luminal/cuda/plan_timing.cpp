// Timing and profiles of a CudaPlan (see plan.hpp): CudaBackend::time and CudaBackend::profile.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "luminal/core/error.hpp"
#include "luminal/cuda/plan.hpp"

namespace luminal::cuda {

double CudaPlan::time(int parity, const int64_t* dims, int trials, double timeout_s) {
  dev_.bind_context();
  const CudaApi& cu = *dev_.cu;
  // The queue the plan is bound with for this parity (the search's: the default queue).
  CudaQueue& q = queue(parity);
  const CUstream stream = q.stream;
  const auto start = std::chrono::steady_clock::now();
  auto check_timeout = [&] {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s)
      throw Error("cuda: a candidate took longer than the " + std::to_string(timeout_s) +
                  " s timeout");
  };
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  execute(parity, dims);  // warm-up (and the dims copy)
  check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  check_timeout();
  // cuBLASLt steps over a dim that varies in the bucket: alternate it between two values and
  // time by wall clock from the execute to the end of its work, so the host work a changing dim
  // causes (a new spec prepared, the call captured again, the graph re-instantiated) counts.
  if (const std::optional<std::vector<int64_t>> alt = alternate_dims(dims)) {
    execute(parity, alt->data());
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
    std::vector<double> wall;
    for (int t = 0; t < std::max(trials, 2); ++t) {
      const auto t0 = std::chrono::steady_clock::now();
      execute(parity, t % 2 ? alt->data() : dims);
      check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
      wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      check_timeout();
    }
    execute(parity, dims);  // leave the plan at the dims it was asked for
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
    q.check_error_word();
    return median(wall);
  }
  CUevent a = nullptr, b = nullptr;
  check(cu.cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cu.cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<double> times;
  try {
    for (int t = 0; t < std::max(trials, 1); ++t) {
      check(cu.cuEventRecord(a, stream), "cuEventRecord");
      execute(parity, dims);
      check(cu.cuEventRecord(b, stream), "cuEventRecord");
      check(cu.cuEventSynchronize(b), "cuEventSynchronize");
      float ms = 0;
      check(cu.cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
      times.push_back(ms * 1e-3);
      check_timeout();
    }
  } catch (...) {
    cu.cuEventDestroy(a);
    cu.cuEventDestroy(b);
    throw;
  }
  cu.cuEventDestroy(a);
  cu.cuEventDestroy(b);
  q.check_error_word();
  return median(times);
}

std::vector<KernelStat> CudaPlan::profile(int parity, const int64_t* dims, int trials) {
  Bound& bd = bound_[parity];
  if (!bd.bound) throw Error("cuda: profile before bind");
  const CudaApi& cu = *dev_.cu;
  const CUstream stream = bd.queue->stream;
  dev_.bind_context();
  execute(parity, dims);  // warm-up (and the dims copy)
  if (graph_ && !lt_) {
    // A separate copy of the graph with an event record after each kernel: the graph that is
    // timed and executed carries no events.
    std::vector<std::vector<float>> times = graph_exec_->profile(parity, stream, trials);
    bd.queue->check_error_word();
    return summarize(times, dims);
  }
  std::vector<std::vector<float>> times(steps_.size());
  std::vector<CUevent> ev(steps_.size() + 1);
  for (CUevent& e : ev)
    check(cu.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  for (int t = 0; t < std::max(trials, 1); ++t) {
    if (update_dims(dims, stream) && lt_) lt_->resolve(dims_->values());
    check(cu.cuEventRecord(ev[0], stream), "cuEventRecord");
    for (size_t s = 0; s < steps_.size(); ++s) {
      run_step(parity, s);
      check(cu.cuEventRecord(ev[s + 1], stream), "cuEventRecord");
    }
    check(cu.cuEventSynchronize(ev.back()), "cuEventSynchronize");
    for (size_t s = 0; s < steps_.size(); ++s) {
      float ms = 0;
      check(cu.cuEventElapsedTime(&ms, ev[s], ev[s + 1]), "cuEventElapsedTime");
      times[s].push_back(ms);
    }
  }
  for (CUevent e : ev)
    cu.cuEventDestroy(e);
  bd.queue->check_error_word();
  return summarize(times, dims);
}

std::vector<KernelStat> CudaPlan::summarize(std::vector<std::vector<float>>& times,
                                            const int64_t* dims) const {
  std::vector<KernelStat> out;
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (times[s].empty()) continue;
    std::vector<float>& v = times[s];
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    KernelStat k;
    k.node = steps_[s].node;
    k.op = std::string(g_.nodes[k.node].op->name);
    k.entry = steps_[s].launch.entry;
    k.ms = v[v.size() / 2];
    k.bytes = static_cast<double>(steps_[s].bytes.eval(dims));
    k.flops = static_cast<double>(steps_[s].flops.eval(dims));
    out.push_back(k);
  }
  return out;
}

std::string format_kernel_stats(const std::vector<KernelStat>& stats) {
  double total = 0;
  for (const KernelStat& s : stats)
    total += s.ms;
  std::string out =
      "  node  op                      kernel              ms      GB/s   GFLOP/s  share\n";
  char line[256];
  for (const KernelStat& s : stats) {
    const double sec = s.ms * 1e-3;
    std::snprintf(line, sizeof line, "  %%%-4d %-23s %-16s %8.4f %8.1f %8.1f %5.1f%%\n", s.node,
                  s.op.c_str(), s.entry.c_str(), s.ms, sec > 0 ? s.bytes / sec * 1e-9 : 0.0,
                  sec > 0 ? s.flops / sec * 1e-9 : 0.0, total > 0 ? 100.0 * s.ms / total : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "  total %.4f ms over %zu launches\n", total, stats.size());
  return out + line;
}

}  // namespace luminal::cuda
