#pragma once
// The tiny transformers models of scripts/models/make_tiny_models.py (tests/data/models): their
// folder and goldens, for the parity suites (the including test defines LUMINAL_SOURCE_DIR).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace luminal::testing {

inline std::filesystem::path tiny_models_dir() {
  return std::filesystem::path(LUMINAL_SOURCE_DIR) / "tests" / "data" / "models";
}

inline nlohmann::json tiny_model_goldens(const std::string& name) {
  std::ifstream in(tiny_models_dir() / name / "goldens.json");
  return nlohmann::json::parse(in);
}

}  // namespace luminal::testing
