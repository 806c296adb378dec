// luminal/compiler/compile_cache.hpp: each bucket's winning program, kept on disk by exact key so
// that a second start skips the search; an unusable entry is a warning, never an error.
#include <filesystem>
#include <string>
#include <vector>

#include "luminal/compiler/build_space.hpp"
#include "luminal/compiler/compile.hpp"
#include "luminal/compiler/compile_cache.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/program/llir_serial.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {"s", 8});
  x.sqrt().output("y");
  g.declare_dim("s", 1, 16);
  cpu::CpuBackend backend(1);
  const auto root = scratch_dir("luminal-snippet-compile-cache");
  const CompileOptions opts = CompileOptions().cache_dir(root);
  const std::vector<std::string> dim_names = {"s"};
  const BucketRanges ranges = bucket_combinations(g, opts).front();

  ProgramCache cache(opts);        // root and switches from options/env
  if (!cache.enabled()) return 0;  // LUMINAL_CACHE=off
  expect(cache.dir() == root / "programs", "programs/ under the root");
  std::string key = program_key(g, opts, backend, ranges, dim_names);
  std::string warning;
  expect(!cache.load(key, backend, &warning) && warning.empty(), "a plain miss: no warning");

  BuiltSpace b = build_search_space(g, backend, bucket_facts(g, ranges));
  LlirGraph winner = to_llir(*b.space, b.space->first_genome());
  cache.store(key, winner, /*folds=*/{}, /*best_seconds=*/1e-6, &warning);
  if (auto hit = cache.load(key, backend, &warning))  // a program searched before
    expect(write_llir(hit->llir) == write_llir(winner), "the same program comes back");
  else
    expect(false, "a stored program loads");

  std::filesystem::resize_file(cache.file_of(key), 10);  // a truncated entry
  expect(!cache.load(key, backend, &warning) && !warning.empty(), "ignored, with a warning");
  std::filesystem::remove_all(root);
}
