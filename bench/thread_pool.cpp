// The CPU thread pool's cost per parallel call (cpu/thread_pool.hpp), as a decode step sees it:
// hundreds of calls a step, a few to a few hundred microseconds of serial work apart.
//
//   build/bench/bench_thread_pool [threads]      (default: 2)
//
// For each gap G of serial work on the calling thread between calls (0, 5, 50, 500 us), it
// prints the median of
//   call     the time of parallel_for(threads tasks, threads, fn) with fn doing nothing: the
//            round trip (wake the workers, run, wait for the last one)
//   start    how long after the call began the last worker started its task (its wake-up)
// Each figure is the median of 2001 calls. The box is shared: other work only adds time.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/timing.hpp"
#include "luminal/cpu/thread_pool.hpp"

namespace {

using namespace luminal;

void busy_us(double us) {
  const auto t0 = bench::Clock::now();
  while (bench::seconds_since(t0) * 1e6 < us) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  std::printf("thread pool, %d threads (%d hardware)\n", threads, cpu::hardware_threads());
  std::printf("%8s %10s %10s\n", "gap us", "call us", "start us");
  for (double gap : {0.0, 5.0, 50.0, 500.0}) {
    std::vector<double> call, start;
    for (int i = 0; i < 2001; ++i) {
      busy_us(gap);
      std::atomic<int64_t> last{0};
      const auto t0 = bench::Clock::now();
      cpu::parallel_for(threads, threads, [&](int64_t t) {
        if (t == 0) return;
        const int64_t ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(bench::Clock::now() - t0).count();
        int64_t prev = last.load();
        while (ns > prev && !last.compare_exchange_weak(prev, ns)) {
        }
      });
      call.push_back(bench::seconds_since(t0) * 1e6);
      start.push_back(static_cast<double>(last.load()) / 1e3);
    }
    std::printf("%8.0f %10.2f %10.2f\n", gap, bench::median(call), bench::median(start));
  }
  return 0;
}
