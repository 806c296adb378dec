#pragma once
// LUMINAL_TRACE: shows what the compiler did at each stage, and what chosen parts of the runtime
// do at each execute.
//
//   unset, "" or "0"  off
//   "1"               every stage printed to stderr
//   a folder path     one diffable text file per stage in that folder (created if missing)
//   a category        per-execute lines on stderr for that part of the runtime:
//                       cuda.recapture  each execute that captures cuBLASLt islands again: how
//                                       many, how (in place, replaced), the graph update, the
//                                       host time
//   a comma-separated list of the above: "1,cuda.recapture"
#include <string>
#include <string_view>

namespace luminal {

class Trace {
 public:
  /// Reads LUMINAL_TRACE.
  Trace();
  bool on() const { return on_; }
  /// Writes one stage's text under `name` (a file name when tracing to a folder).
  void emit(const std::string& name, const std::string& text) const;
  /// Whether LUMINAL_TRACE lists the category `name` (read once per process).
  static bool category(std::string_view name);

 private:
  bool on_ = false;
  std::string dir_;
};

}  // namespace luminal
