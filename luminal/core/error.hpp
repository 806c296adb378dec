#pragma once
// The one exception type every public API throws. Messages name the thing that is wrong and,
// where there is one, the fix.
#include <stdexcept>
#include <string>

namespace luminal {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// Internal invariant; stays on in release builds (a broken invariant must never run on).
[[noreturn]] void internal_error(const char* file, int line, const std::string& msg);

}  // namespace luminal

#define LUMINAL_ASSERT(cond, msg)                                    \
  do {                                                               \
    if (!(cond)) ::luminal::internal_error(__FILE__, __LINE__, msg); \
  } while (0)
