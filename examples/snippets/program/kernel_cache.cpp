// luminal/program/kernel_cache.hpp: compiled kernels shared by every candidate and bucket of a
// search (in memory), and across processes (on disk), by exact key.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "luminal/program/kernel_cache.hpp"
#include "luminal/program/llir.hpp"
#include "snippet.hpp"

using namespace luminal;

struct MyKernel {
  std::string source;
};

int main() {
  LlirNode node;
  node.op = hlir_op(OpKind::Exp2);
  node.attrs.shape = {Expr::var("s"), 64};
  const Facts facts{{"s", {1, 512}}};
  std::string key = kernel_key(node, facts, "sm_90 nvrtc-13.0");

  // In memory: built once, then found by key.
  KernelCache cache;  // no folder: nothing on disk
  int builds = 0;
  auto compile = [&] {
    ++builds;
    return std::make_shared<const MyKernel>(MyKernel{"__global__ void k() {}"});
  };
  auto k = cache.get_or_build<MyKernel>(key, compile);
  auto again = cache.get_or_build<MyKernel>(key, compile);
  expect(builds == 1 && k == again && cache.hits() == 1, "built once, then found by key");
  expect(!cache.load(key), "nothing on disk without a folder");

  // On disk (a backend keeps them under cache_root(opts) / "kernels"): another cache on the same
  // folder, as another process would, loads the bytes back.
  const auto dir = scratch_dir("luminal-snippet-kernel-cache");
  KernelCache(dir).store(key, std::vector<uint8_t>{1, 2, 3});  // e.g. a cubin
  auto bytes = KernelCache(dir).load(key);
  expect(bytes && *bytes == std::vector<uint8_t>{1, 2, 3}, "the bytes come back by key");
  expect(!KernelCache(dir).load(key + " "), "another key is a miss");
  std::filesystem::remove_all(dir);
}
