#pragma once
// LUMINAL_TRACE: shows what the compiler did at each stage.
//
//   unset, "" or "0"  off
//   "1"               every stage printed to stderr
//   a folder path     one diffable text file per stage in that folder (created if missing)
#include <string>

namespace luminal {

class Trace {
 public:
  /// Reads LUMINAL_TRACE.
  Trace();
  bool on() const { return on_; }
  /// Writes one stage's text under `name` (a file name when tracing to a folder).
  void emit(const std::string& name, const std::string& text) const;

 private:
  bool on_ = false;
  std::string dir_;
};

}  // namespace luminal
