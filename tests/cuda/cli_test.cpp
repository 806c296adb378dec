// GPU suite (skips without a GPU, or in a build without the CLI): `luminal run --backend cuda`
// (the built binary, LUMINAL_CLI_EXE) on the tiny transformers models of tests/data/models against
// `--backend cpu` and the goldens:
//   - greedy: the 16 ids of the f32 models equal transformers' (up to the first near tie the
//     goldens record) and the CPU's; the bf16 checkpoints (widened to f32 by the CLI, which has no
//     dtype option) give the CPU's ids;
//   - sampling in the graph: a seeded run repeats, another seed draws other ids, the CPU draws the
//     same ids for the same seed, and top-k 1 at temperature 0.9 is the greedy sequence.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "support/tiny_models.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CliRun {
  int rc = -1;
  std::string out, err;
  nlohmann::json json;  // stdout parsed (--json), null when it is not JSON
};

/// Runs the CLI with `args`; stdout and stderr captured.
CliRun run_cli(const std::vector<std::string>& args) {
  CliRun r;
#ifdef LUMINAL_CLI_EXE
  static int calls = 0;
  const fs::path err_file =
      fs::temp_directory_path() /
      ("luminal_cli_test_" + std::to_string(getpid()) + "_" + std::to_string(calls++) + ".err");
  std::string cmd = quote(LUMINAL_CLI_EXE);
  for (const std::string& a : args)
    cmd += " " + quote(a);
  cmd += " 2>" + quote(err_file.string());
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, got);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream ef(err_file);
  std::stringstream ss;
  ss << ef.rdbuf();
  r.err = ss.str();
  fs::remove(err_file);
  r.json = nlohmann::json::parse(r.out, nullptr, false);
  if (r.json.is_discarded()) r.json = nullptr;
#else
  (void)args;
#endif
  return r;
}

#ifdef LUMINAL_CLI_EXE
constexpr bool kHaveCli = true;
#else
constexpr bool kHaveCli = false;
#endif

#define REQUIRE_GPU_AND_CLI()                                               \
  do {                                                                      \
    LUMINAL_REQUIRE_GPU();                                                  \
    if (!kHaveCli) GTEST_SKIP() << "built without the luminal CLI (apps/)"; \
  } while (0)

std::string join(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids)
    s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

/// `luminal run MODEL --prompt-ids ... --max-tokens n --json --backend BACKEND` plus `extra`;
/// the generated ids (the run must succeed on that backend).
std::vector<int32_t> generate(const std::string& model, const std::vector<int32_t>& prompt, int n,
                              const std::string& backend,
                              const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"run",          (testing::tiny_models_dir() / model).string(),
                                   "--prompt-ids", join(prompt),
                                   "--max-tokens", std::to_string(n),
                                   "--context",    "64",
                                   "--max-step",   "16",
                                   "--json",       "--backend",
                                   backend};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliRun r = run_cli(args);
  std::string what = "luminal";
  for (const std::string& a : args)
    what += " " + a;
  EXPECT_EQ(r.rc, 0) << what << "\nstdout: " << r.out << "\nstderr: " << r.err;
  if (r.json.is_null()) {
    ADD_FAILURE() << what << ": stdout is not JSON: " << r.out << "\nstderr: " << r.err;
    return {};
  }
  EXPECT_EQ(r.json.at("backend").get<std::string>(), backend) << what;
  EXPECT_NE(r.err.find("luminal: backend " + backend), std::string::npos) << what << "\n" << r.err;
  return r.json.at("generated_ids").get<std::vector<int32_t>>();
}

class CudaCliGreedy : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaCliGreedy, SameIdsAsTheCpuAndTransformers) {
  REQUIRE_GPU_AND_CLI();
  const std::string model = GetParam();
  const nlohmann::json gold = testing::tiny_model_goldens(model);
  const nlohmann::json& p = gold.at("prompts").at(0);
  const auto prompt = p.at("input_ids").get<std::vector<int32_t>>();
  const bool has_greedy = p.contains("greedy");
  const std::vector<int32_t> want =
      has_greedy ? p.at("greedy").at("generated_ids").get<std::vector<int32_t>>()
                 : std::vector<int32_t>{};
  const int n = has_greedy ? static_cast<int>(want.size()) : 16;
  const std::vector<int32_t> gpu = generate(model, prompt, n, "cuda");
  const std::vector<int32_t> cpu = generate(model, prompt, n, "cpu");
  ASSERT_EQ(gpu.size(), static_cast<size_t>(n)) << model;
  ASSERT_EQ(cpu.size(), static_cast<size_t>(n)) << model;
  if (!has_greedy) {  // a bf16 checkpoint: no transformers greedy run, the CPU's ids
    EXPECT_EQ(gpu, cpu) << model;
    return;
  }
  const auto margins = p.at("greedy").at("margins").get<std::vector<double>>();
  for (size_t t = 0; t < want.size(); ++t) {
    if (margins[t] < 1e-3) break;  // a near tie: later ids may differ
    ASSERT_EQ(gpu[t], want[t]) << model << " cuda, step " << t;
    ASSERT_EQ(cpu[t], want[t]) << model << " cpu, step " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaCliGreedy,
                         ::testing::Values("llama3", "qwen2", "qwen3", "mistral", "llama3-bf16"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(CudaCli, SamplingRepeatsMatchesTheCpuAndTopK1IsGreedy) {
  REQUIRE_GPU_AND_CLI();
  const std::string model = "llama3";
  const std::vector<int32_t> prompt = {1, 17, 42, 99, 5, 200, 3, 64};
  const std::vector<std::string> sample = {"--temperature",    "0.9",  "--top-p", "0.95",
                                           "--min-p",          "0.01", "--top-k", "40",
                                           "--repeat-penalty", "1.1"};
  auto with_seed = [&](const char* seed) {
    std::vector<std::string> a = sample;
    a.insert(a.end(), {"--seed", seed});
    return a;
  };
  const std::vector<int32_t> a = generate(model, prompt, 16, "cuda", with_seed("7"));
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(generate(model, prompt, 16, "cuda", with_seed("7")), a) << "the same seed again";
  EXPECT_NE(generate(model, prompt, 16, "cuda", with_seed("8")), a) << "another seed";
  EXPECT_EQ(generate(model, prompt, 16, "cpu", with_seed("7")), a) << "the CPU's draws";
  const std::vector<int32_t> greedy = generate(model, prompt, 16, "cuda");
  EXPECT_EQ(
      generate(model, prompt, 16, "cuda", {"--top-k", "1", "--temperature", "0.9", "--seed", "5"}),
      greedy);
  EXPECT_EQ(generate(model, prompt, 16, "cuda", {"--temperature", "0", "--seed", "5"}), greedy);
}

}  // namespace
}  // namespace luminal
