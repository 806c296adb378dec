#include "luminal/core/error.hpp"

namespace luminal {

void internal_error(const char* file, int line, const std::string& msg) {
  throw Error(std::string("internal error at ") + file + ":" + std::to_string(line) + ": " + msg +
              " (this is a bug in luminal; please report it)");
}

}  // namespace luminal
