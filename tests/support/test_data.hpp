#pragma once
// Where tests/data/gguf is, for the GGUF and SmolLM2 suites: LUMINAL_SOURCE_DIR when the build
// defines it; else this header's path (under ccache's base_dir it is relative to the build folder,
// so it is tried from every ancestor of the working directory and of the executable, looking for
// `marker`, a file the folder holds).
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace luminal::testing {

inline std::filesystem::path gguf_data_dir(const std::string& marker) {
  namespace fs = std::filesystem;
#ifdef LUMINAL_SOURCE_DIR
  (void)marker;
  return fs::path(LUMINAL_SOURCE_DIR) / "tests" / "data" / "gguf";
#else
  const fs::path self(__FILE__);  // tests/support/test_data.hpp
  const auto from = [](fs::path here) { return here / "tests" / "data" / "gguf"; };
  if (self.is_absolute()) return self.parent_path().parent_path() / "data" / "gguf";
  std::vector<fs::path> starts = {fs::current_path()};
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) starts.push_back(exe.parent_path());
  for (fs::path p : starts) {
    for (; !p.empty(); p = p.parent_path()) {
      if (fs::exists(p / self)) return (p / self).parent_path().parent_path() / "data" / "gguf";
      if (fs::exists(from(p) / marker)) return from(p);
      if (p == p.parent_path()) break;
    }
  }
  return from(fs::current_path());
#endif
}

}  // namespace luminal::testing
