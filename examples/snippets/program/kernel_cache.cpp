// luminal/program/kernel_cache.hpp: compiled kernels shared by every candidate and bucket of a
// search (in memory), and across processes (on disk), by exact key.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "luminal/compiler/compile_cache.hpp"
#include "luminal/compiler/options.hpp"
#include "luminal/program/kernel_cache.hpp"
#include "luminal/program/llir.hpp"
#include "snippet.hpp"

using namespace luminal;

struct MyKernel {
  std::string source;
};

int main() {
  CompileOptions opts;
  const std::filesystem::path disk = cache_root(opts) / "kernels";  // where a backend keeps them
  KernelCache cache(
      std::filesystem::path{});  // disk off: memory only (KernelCache(disk): on disk too)

  LlirNode node;
  node.op = hlir_op(OpKind::Exp2);
  node.attrs.shape = {Expr::var("s"), 64};
  const Facts facts{{"s", {1, 512}}};
  std::string key = kernel_key(node, facts, "sm_90 nvrtc-13.0");
  int builds = 0;
  auto compile = [&] {
    ++builds;
    return std::make_shared<const MyKernel>(MyKernel{"__global__ void k() {}"});
  };
  auto k = cache.get_or_build<MyKernel>(key, compile);
  auto again = cache.get_or_build<MyKernel>(key, compile);
  expect(builds == 1 && k == again && cache.hits() == 1, "built once, then found by key");
  expect(!cache.load(key), "nothing on disk when the disk is off");
  cache.store(key, std::vector<uint8_t>{1, 2, 3});  // a no-op without a disk folder
  expect(!disk.empty(), "the compile cache's root names a folder");
}
