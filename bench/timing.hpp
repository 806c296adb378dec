#pragma once
// The timing loop the benchmarks share: a steady clock, and the seconds of N calls of a function
// after untimed warm-up calls (each sample, or their median).
//
//   const double s = bench::median_seconds([&] { std::memcpy(dst, src, bytes); }, 1, 9);
#include <algorithm>
#include <chrono>
#include <vector>

namespace luminal::bench {

using Clock = std::chrono::steady_clock;

/// Seconds from `t0` to now.
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The median of `v` (the upper middle one of an even count); 0 when `v` is empty.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Seconds of each of `runs` calls of f(), in call order, after `warmup` untimed calls.
template <class F>
std::vector<double> sample_seconds(F&& f, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i)
    f();
  std::vector<double> times;
  times.reserve(static_cast<size_t>(std::max(runs, 0)));
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    f();
    times.push_back(seconds_since(t0));
  }
  return times;
}

/// Median seconds of one call of f() over `runs` calls, after `warmup` untimed calls.
template <class F>
double median_seconds(F&& f, int warmup, int runs) {
  return median(sample_seconds(f, warmup, runs));
}

}  // namespace luminal::bench
