#include "luminal/compiler/trace.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace luminal {

Trace::Trace() {
  const char* v = std::getenv("LUMINAL_TRACE");
  if (!v || !*v || std::string(v) == "0") return;
  on_ = true;
  if (std::string(v) != "1") {
    dir_ = v;
    std::filesystem::create_directories(dir_);
  }
}

void Trace::emit(const std::string& name, const std::string& text) const {
  if (!on_) return;
  if (dir_.empty()) {
    std::cerr << "==== " << name << " ====\n" << text;
    if (!text.empty() && text.back() != '\n') std::cerr << "\n";
    return;
  }
  std::ofstream(std::filesystem::path(dir_) / name) << text;
}

}  // namespace luminal
