// The compile cache: keys equal across processes, a warm start that runs no candidate and makes
// no profile data, damaged or stale entries re-searched with a warning, concurrent compiles of
// one graph.
//
// Some tests run this binary again as a child process (the same test binary, a child test
// selected with --gtest_filter and told what to do through environment variables).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "luminal/compiler/compile_bucket.hpp"
#include "luminal/compiler/compile_cache.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/program/llir_serial.hpp"
#include "luminal/runtime/session.hpp"
#include "support/delegating_backend.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

struct Model {
  Graph g;
  Tensor x, w, y;
  Model() {
    g.declare_dim("s", 1, 32);
    x = g.tensor("x", {"s", 16});
    w = g.tensor("w", {16, 16});
    y = (x.matmul(w).relu() * 0.5 + x).softmax(1).output("y");
  }
};

CompileOptions opts(const fs::path& dir) {
  return CompileOptions().search_graph_limit(6).verbose(false).seed(4).cache_dir(dir).dim_buckets(
      "s", {DimBucket(1, 1), DimBucket(2, 32)});
}

fs::path fresh_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("luminal_cache_test_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs this test binary's child test with the given environment; returns its exit status.
int run_child(const std::string& env) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string cmd = env + " LUMINAL_CACHE=on '" + self +
                          "' --gtest_filter=CompileCacheChild.* --gtest_also_run_disabled_tests"
                          " > /dev/null 2>&1";
  return std::system(cmd.c_str());
}

// The child: compiles Model with the cache at $CACHE_TEST_DIR, writes its key and whether the
// first bucket was searched or loaded to $CACHE_TEST_OUT.
TEST(CompileCacheChild, DISABLED_Compile) {
  const char* dir = std::getenv("CACHE_TEST_DIR");
  const char* out = std::getenv("CACHE_TEST_OUT");
  ASSERT_TRUE(dir && out);
  Model m;
  cpu::CpuBackend cpu(1);
  Session s(m.g, cpu, opts(dir));
  s.compile();
  std::ofstream o(out);
  o << (s.reports()[0].cached ? "cached" : "searched") << " " << s.reports()[0].candidates << "\n"
    << program_key(m.g, opts(dir), cpu, {{"s", DimBucket(1, 1)}}, s.dim_names());
}

class CompileCache : public ::testing::Test {
 protected:
  void SetUp() override { setenv("LUMINAL_CACHE", "on", 1); }
  void TearDown() override { setenv("LUMINAL_CACHE", "off", 1); }
};

TEST_F(CompileCache, SameKeyInTwoProcessesAndAWarmStartSearchesNothing) {
  const fs::path dir = fresh_dir("two");
  const fs::path a = dir / "a.txt", b = dir / "b.txt";
  fs::create_directories(dir);
  ASSERT_EQ(run_child("CACHE_TEST_DIR=" + dir.string() + " CACHE_TEST_OUT=" + a.string()), 0);
  ASSERT_EQ(run_child("CACHE_TEST_DIR=" + dir.string() + " CACHE_TEST_OUT=" + b.string()), 0);
  const std::string first = slurp(a), second = slurp(b);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.substr(0, first.find('\n')), "searched 6");
  EXPECT_EQ(second.substr(0, second.find('\n')), "cached 0");
  EXPECT_EQ(first.substr(first.find('\n')), second.substr(second.find('\n')))
      << "the key differs between processes";
  fs::remove_all(dir);
}

TEST_F(CompileCache, WarmCompileGivesTheSameProgramAndResults) {
  const fs::path dir = fresh_dir("warm");
  Model m;
  cpu::CpuBackend cpu(1);
  Session cold(m.g, cpu, opts(dir));
  cold.compile();
  EXPECT_FALSE(cold.reports()[0].cached);
  Session warm(m.g, cpu, opts(dir));
  warm.compile();
  ASSERT_TRUE(warm.reports()[0].cached) << warm.report();
  ASSERT_TRUE(warm.reports()[1].cached);
  EXPECT_EQ(warm.reports()[0].candidates, 0);
  EXPECT_NE(warm.report().find("loaded from the compile cache"), std::string::npos);
  for (const DynMap& d : {DynMap{{"s", 1}}, DynMap{{"s", 7}}})
    EXPECT_EQ(write_llir(warm.llir(d)), write_llir(cold.llir(d)));
  std::vector<float> w(256), x(7 * 16);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.1f * static_cast<float>(i % 5);
  for (Session* s : {&cold, &warm}) {
    s->set(m.w, w);
    s->set(m.x, x);
    s->execute({{"s", 7}});
  }
  EXPECT_EQ(cold.get<float>(m.y), warm.get<float>(m.y));
  // Only the cold start made profile data.
  EXPECT_GT(cold.stats().bytes_generated, 0u);
  EXPECT_EQ(warm.stats().bytes_generated, 0u);
  // Another seed is another key: searched again.
  Session other(m.g, cpu, opts(dir).seed(5));
  other.compile();
  EXPECT_FALSE(other.reports()[0].cached);
  fs::remove_all(dir);
}

TEST_F(CompileCache, CompileBucketAsksForProfileDataOnlyOnAMiss) {
  const fs::path dir = fresh_dir("lazy");
  Model m;
  cpu::CpuBackend cpu(1);
  const BucketRanges bucket{{"s", DimBucket(1, 1)}};
  ProfileData data;
  std::vector<Buffer> buffers;
  for (auto [label, bytes] : {std::pair{"x", 16 * 4}, {"w", 256 * 4}, {"y", 16 * 4}}) {
    buffers.push_back(cpu.allocate(bytes));
    const std::vector<uint8_t> zeros(bytes, 0);
    cpu.upload(buffers.back(), 0, zeros.data(), zeros.size());
    (std::string(label) == "y" ? data.outputs : data.inputs)[label] = buffers.back();
  }
  int calls = 0;
  auto profile_data = [&]() -> const ProfileData& {
    ++calls;
    return data;
  };
  const BucketPlan cold = compile_bucket(m.g, cpu, opts(dir), bucket, {"s"}, profile_data, Trace());
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(cold.report.cached);
  const BucketPlan warm = compile_bucket(m.g, cpu, opts(dir), bucket, {"s"}, profile_data, Trace());
  EXPECT_EQ(calls, 1);  // loaded: nothing to time
  EXPECT_TRUE(warm.report.cached);
  const std::string key = program_key(m.g, opts(dir), cpu, bucket, {"s"});
  EXPECT_EQ(cold.report.cache_note, "stored in " + ProgramCache(opts(dir)).file_of(key).string());
  EXPECT_EQ(warm.report.cache_note, ProgramCache(opts(dir)).file_of(key).string());
  EXPECT_EQ(write_llir(warm.llir), write_llir(cold.llir));
  for (Buffer b : buffers)
    cpu.release(b);
  fs::remove_all(dir);
}

// Damages the entry of bucket s=1 with `damage`, then compiles again: it must warn, search and
// write a good entry back.
void expect_research(const std::string& name, void (*damage)(const fs::path&)) {
  const fs::path dir = fresh_dir(name);
  Model m;
  cpu::CpuBackend cpu(1);
  Session cold(m.g, cpu, opts(dir));
  cold.compile();
  const ProgramCache cache(opts(dir));
  const fs::path entry =
      cache.file_of(program_key(m.g, opts(dir), cpu, {{"s", DimBucket(1, 1)}}, cold.dim_names()));
  ASSERT_TRUE(fs::exists(entry));
  damage(entry);
  ::testing::internal::CaptureStderr();
  Session again(m.g, cpu, opts(dir));
  again.compile();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(again.reports()[0].cached) << name;
  EXPECT_TRUE(again.reports()[1].cached) << name;
  EXPECT_NE(err.find("luminal: warning: compile cache: ignoring"), std::string::npos)
      << name << ": " << err;
  // The entry was replaced by a good one (the new search may time differently: not the same bytes).
  std::string warning;
  EXPECT_TRUE(cache.load(
      program_key(m.g, opts(dir), cpu, {{"s", DimBucket(1, 1)}}, cold.dim_names()), cpu, &warning))
      << name << ": the entry was not replaced: " << warning;
  EXPECT_NE(slurp(entry), std::string()) << name;
  fs::remove_all(dir);
}

// A backend with one rule fewer (another build, or an environment switch such as
// LUMINAL_CPU_ROWS=off) searched another space: its programs get another key.
TEST(CompileCacheKey, NamesTheRulesInForce) {
  struct FewerRules : testing::CpuDelegate {
    using CpuDelegate::CpuDelegate;
    std::vector<RuleSet> rulesets() const override {
      std::vector<RuleSet> r = cpu.rulesets();
      for (RuleSet& rs : r)
        if (!rs.rules.empty()) {
          rs.rules.pop_back();
          break;
        }
      return r;
    }
  };
  Model m;
  testing::CpuDelegate all(1);
  FewerRules fewer(1);
  const fs::path dir = "unused";
  const std::string a = program_key(m.g, opts(dir), all, {{"s", DimBucket(1, 1)}}, {"s"});
  const std::string b = program_key(m.g, opts(dir), fewer, {{"s", DimBucket(1, 1)}}, {"s"});
  EXPECT_NE(a, b);
  EXPECT_NE(a.find("\nrules "), std::string::npos) << a;
  EXPECT_EQ(a, program_key(m.g, opts(dir), all, {{"s", DimBucket(1, 1)}}, {"s"}));
}

TEST_F(CompileCache, TruncatedEntryIsSearchedAgain) {
  expect_research("truncated", [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) / 2); });
}

TEST_F(CompileCache, FlippedByteIsSearchedAgain) {
  expect_research("flipped", [](const fs::path& p) {
    std::string s = slurp(p);
    s[s.size() - 10] ^= 0x01;
    std::ofstream(p, std::ios::binary) << s;
  });
}

TEST_F(CompileCache, WrongVersionIsSearchedAgain) {
  expect_research("version", [](const fs::path& p) {
    std::string s = slurp(p);
    s.replace(s.find("format 2"), 8, "format 1");
    std::ofstream(p, std::ios::binary) << s;
  });
}

TEST_F(CompileCache, ConcurrentCompilesOfOneGraphBothSucceed) {
  const fs::path dir = fresh_dir("concurrent");
  fs::create_directories(dir);
  int status[2] = {-1, -1};
  std::thread t0([&] {
    status[0] =
        run_child("CACHE_TEST_DIR=" + dir.string() + " CACHE_TEST_OUT=" + (dir / "0.txt").string());
  });
  std::thread t1([&] {
    status[1] =
        run_child("CACHE_TEST_DIR=" + dir.string() + " CACHE_TEST_OUT=" + (dir / "1.txt").string());
  });
  t0.join();
  t1.join();
  EXPECT_EQ(status[0], 0);
  EXPECT_EQ(status[1], 0);
  // No temporary file left behind, and the entries read back.
  for (const auto& e : fs::directory_iterator(dir / "programs"))
    EXPECT_EQ(e.path().extension(), ".llir") << e.path();
  Model m;
  cpu::CpuBackend cpu(1);
  Session s(m.g, cpu, opts(dir));
  s.compile();
  EXPECT_TRUE(s.reports()[0].cached);
  EXPECT_TRUE(s.reports()[1].cached);
  fs::remove_all(dir);
}

TEST_F(CompileCache, OffMeansNoFiles) {
  setenv("LUMINAL_CACHE", "off", 1);
  const fs::path dir = fresh_dir("off");
  Model m;
  cpu::CpuBackend cpu(1);
  Session s(m.g, cpu, opts(dir));
  s.compile();
  EXPECT_FALSE(fs::exists(dir / "programs"));
}

TEST(CacheRoot, OptionThenXdgThenHome) {
  EXPECT_EQ(cache_root(CompileOptions().cache_dir("/x/y")), fs::path("/x/y"));
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(cache_root(CompileOptions()), fs::path("/tmp/xdg/luminal"));
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(cache_root(CompileOptions()), fs::path(std::getenv("HOME")) / ".cache" / "luminal");
  if (old) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

}  // namespace
}  // namespace luminal
