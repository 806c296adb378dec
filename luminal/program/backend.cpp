#include "luminal/program/backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"

namespace luminal {

namespace {

std::string seconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g s", s);
  return buf;
}

}  // namespace

double Executable::profile(const DynMap& dyn, IoTable& io, int trials, double timeout_s) {
  trials = std::max(trials, 1);
  std::vector<double> times;
  times.reserve(static_cast<size_t>(trials));
  for (int t = 0; t < trials; ++t) {
    const auto start = std::chrono::steady_clock::now();
    execute(dyn, io);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout_s > 0 && s > timeout_s) {
      throw Error("profile: a run took " + seconds(s) + ", over the timeout of " +
                  seconds(timeout_s) + " (trial " + std::to_string(t + 1) + " of " +
                  std::to_string(trials) + ")");
    }
    times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  const size_t m = times.size() / 2;
  return times.size() % 2 == 1 ? times[m] : 0.5 * (times[m - 1] + times[m]);
}

}  // namespace luminal
