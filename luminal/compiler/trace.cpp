#include "luminal/compiler/trace.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

namespace luminal {

namespace {

constexpr std::string_view kCategories[] = {"cuda.recapture"};

bool is_category(std::string_view item) {
  for (std::string_view c : kCategories)
    if (item == c) return true;
  return false;
}

/// LUMINAL_TRACE's comma-separated items ("0" and empty items dropped).
std::vector<std::string> items() {
  std::vector<std::string> out;
  const char* v = std::getenv("LUMINAL_TRACE");
  if (!v) return out;
  std::string_view s = v;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    const std::string_view item = s.substr(0, comma);
    if (!item.empty() && item != "0") out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

Trace::Trace() {
  for (const std::string& item : items()) {
    if (is_category(item)) continue;
    on_ = true;
    if (item != "1") dir_ = item;
  }
  if (!dir_.empty()) std::filesystem::create_directories(dir_);
}

bool Trace::category(std::string_view name) {
  static const std::vector<std::string> listed = items();
  for (const std::string& item : listed)
    if (item == name) return true;
  return false;
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
