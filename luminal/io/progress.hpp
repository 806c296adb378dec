#pragma once
// Progress of loading a model, for a bar or a log: a callback (LoadProgress) told, stage by
// stage, how many bytes are done out of how many; io::BindOptions::progress, CausalLM::load and
// the GGUF readers take one.
// Example: examples/snippets/io/progress.cpp (the "binding" stage of a folder's weights).
//
// Stages (each a constant string): "dequantising" (a GGUF file's weights to f32: bytes of f32
// written), "caching" (writing the dequantised copy to the cache), "binding" (tensors set into a
// session or runtime: bytes of the tensors bound; on a GPU backend, uploaded). Within a stage,
// `done` never decreases, the first call has done == 0 and, when the stage completes, the last
// done == total (a stage that fails stops short); a stage with nothing to do (total 0) makes no
// call. A stage calls at most ~130 times, whatever its size
// (ProgressMeter throttles by bytes), never per element. The callback runs on the loading thread;
// an exception it throws aborts the load.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string_view>

namespace luminal::io {

using LoadProgress = std::function<void(std::string_view stage, uint64_t done, uint64_t total)>;

/// Reports one stage through a LoadProgress (or nothing when it is empty): done = 0 at
/// construction, then after advance() whenever `done` has grown by total / 128 or more since the
/// last report, and done = total once (the advance() that reaches it, or finish()).
class ProgressMeter {
 public:
  static constexpr uint64_t kSteps = 128;

  ProgressMeter(const LoadProgress& fn, std::string_view stage, uint64_t total)
      : fn_(fn && total > 0 ? &fn : nullptr),
        stage_(stage),
        total_(total),
        step_(std::max<uint64_t>(1, total / kSteps)) {
    if (fn_) (*fn_)(stage_, 0, total_);
  }

  /// `bytes` more are done (clamped to the total).
  void advance(uint64_t bytes) {
    if (!fn_ || done_ == total_) return;
    done_ = std::min(total_, done_ + bytes);
    if (done_ == total_ || done_ - reported_ >= step_) {
      reported_ = done_;
      (*fn_)(stage_, done_, total_);
    }
  }
  /// Everything is done: reports done = total unless already reported.
  void finish() { advance(total_); }
  uint64_t done() const { return done_; }

 private:
  const LoadProgress* fn_;
  std::string_view stage_;
  uint64_t total_, step_, done_ = 0, reported_ = 0;
};

}  // namespace luminal::io
