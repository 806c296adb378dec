#pragma once
// The bar `run` and `bench` draw on stderr while a model loads, when stderr is a terminal (as the
// search's bars, which compile_options() turns on then); nothing otherwise (tests capture stderr):
//
//   luminal: dequantising [#################.............] 312/538 MB
//
// One line per stage of io/progress.hpp (dequantising, caching, binding), redrawn in place and
// ended when the stage completes. A stage is drawn only once it has run for 0.2 s, so quick ones
// (binding a mapped file on the CPU) print nothing. The line is also ended when the next stage
// starts or the bar is destroyed (a load that failed), so that the error starts a line.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "luminal/io/progress.hpp"

namespace luminal::cli {

class LoadBar {
 public:
  LoadBar() : tty_(isatty(STDERR_FILENO) != 0) {}
  LoadBar(const LoadBar&) = delete;
  LoadBar& operator=(const LoadBar&) = delete;
  ~LoadBar() { end_line(); }

  /// The callback for models::CausalLM::load (empty when stderr is not a terminal). The bar must
  /// outlive the load.
  io::LoadProgress callback() {
    if (!tty_) return {};
    return [this](std::string_view stage, uint64_t done, uint64_t total) {
      update(stage, done, total);
    };
  }

 private:
  using Clock = std::chrono::steady_clock;

  void update(std::string_view stage, uint64_t done, uint64_t total) {
    const Clock::time_point now = Clock::now();
    if (stage != stage_ || done == 0) {  // a stage starts
      end_line();
      stage_ = stage;
      start_ = now;
      drawn_ = false;
    }
    if (!drawn_ && now - start_ < std::chrono::milliseconds(200)) return;
    const int width = 30;
    const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    const int fill = static_cast<int>(frac * width);
    // The unit suits the total; both numbers use it ("312/538 MB").
    const double unit = total >= 10'000'000'000ull ? 1e9 : total >= 10'000'000 ? 1e6 : 1e3;
    const char* unit_name = unit == 1e9 ? "GB" : unit == 1e6 ? "MB" : "kB";
    const int digits = unit == 1e9 ? 1 : 0;
    std::fprintf(stderr, "\rluminal: %-12s [%s%s] %.*f/%.*f %s", stage_.c_str(),
                 std::string(static_cast<size_t>(fill), '#').c_str(),
                 std::string(static_cast<size_t>(width - fill), '.').c_str(), digits,
                 static_cast<double>(done) / unit, digits, static_cast<double>(total) / unit,
                 unit_name);
    drawn_ = open_ = true;
    if (done >= total) end_line();
    std::fflush(stderr);
  }

  void end_line() {
    if (open_) std::fputc('\n', stderr);
    open_ = false;
  }

  bool tty_;
  bool drawn_ = false, open_ = false;
  std::string stage_;
  Clock::time_point start_{};
};

}  // namespace luminal::cli
