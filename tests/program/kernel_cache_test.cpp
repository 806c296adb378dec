// KernelCache: exact keys (labels ignored, facts and arch included), one build per key, disk
// entries that store their key and reject damage.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "luminal/egraph/op_def.hpp"
#include "luminal/program/kernel_cache.hpp"

namespace luminal {
namespace {

LlirNode exp_node(const std::string& label, const Expr& len) {
  LlirNode n;
  n.op = hlir_op(OpKind::Exp2);
  n.attrs.dtype = DType::F32;
  n.attrs.shape = {len};
  n.attrs.views = {View::contiguous({len})};
  n.attrs.label = label;
  n.input_dtypes = {DType::F32};
  return n;
}

TEST(KernelCache, KeysAreExactAndIgnoreLabels) {
  const Expr s = Expr::var("s");
  const Facts small{{"s", {1, 64}}}, big{{"s", {1, 1 << 20}}};
  EXPECT_EQ(kernel_key(exp_node("a", s), small, "cpu"), kernel_key(exp_node("b", s), small, "cpu"));
  EXPECT_NE(kernel_key(exp_node("a", s), small, "cpu"), kernel_key(exp_node("a", s), big, "cpu"));
  EXPECT_NE(kernel_key(exp_node("a", s), small, "sm_90"),
            kernel_key(exp_node("a", s), small, "sm_80"));
  EXPECT_NE(kernel_key(exp_node("a", s), small, "cpu"),
            kernel_key(exp_node("a", s * 2), small, "cpu"));
}

TEST(KernelCache, BuildsOncePerKey) {
  KernelCache cache;
  int built = 0;
  auto build = [&]() -> std::shared_ptr<const int> { return std::make_shared<int>(++built); };
  auto a = cache.get_or_build<int>("k1", build);
  auto b = cache.get_or_build<int>("k1", build);
  auto c = cache.get_or_build<int>("k2", build);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(*c, 2);
  EXPECT_EQ(cache.builds(), 2u);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_THROW(
      cache.get_or_build<int>(
          "k3", []() -> std::shared_ptr<const int> { throw std::runtime_error("compile failed"); }),
      std::runtime_error);
  EXPECT_EQ(cache.builds(), 2u);  // a failed build caches nothing
}

TEST(KernelCache, DiskEntriesStoreTheirKeyAndRejectDamage) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("luminal_kernel_cache_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  KernelCache cache(dir);
  const std::vector<uint8_t> cubin = {0, 1, 2, 255, '\n', 7};
  EXPECT_FALSE(cache.load("key"));
  cache.store("key", cubin);
  EXPECT_EQ(cache.load("key"), cubin);
  EXPECT_FALSE(cache.load("other key"));
  KernelCache again(dir);  // another process sees it
  EXPECT_EQ(again.load("key"), cubin);
  // A flipped byte, then a truncation: misses, never wrong bytes.
  const auto file = cache.file_of("key");
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string flipped = bytes;
  flipped.back() ^= 1;
  std::ofstream(file, std::ios::binary) << flipped;
  EXPECT_FALSE(cache.load("key"));
  std::ofstream(file, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_FALSE(cache.load("key"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace luminal
