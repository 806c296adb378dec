// luminal/io/progress.hpp: the progress of loading a model, stage by stage ("dequantising",
// "caching", "binding"), as bytes done out of a total. Run: snippet_io_progress <model folder>.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "luminal/io/progress.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/reference.hpp"
#include "snippet.hpp"

using namespace luminal;

int main(int argc, char** argv) {
  const char* folder = argc > 1 ? argv[1] : "Llama-3.2-1B/";
  auto w = io::Weights::open(folder);
  const io::TensorView& t = w.get("model.norm.weight");
  Graph g;
  g.tensor("model.norm.weight", {t.shape[0]}, t.dtype).output("norm");
  ReferenceRuntime rt(g);

  uint64_t first = 1, last = 0, total_seen = 0;
  int calls = 0;
  io::BindOptions opts;
  opts.progress = [&](std::string_view stage, uint64_t done, uint64_t total) {
    std::fprintf(stderr, "\r%s %llu/%llu", std::string(stage).c_str(),
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
    if (calls++ == 0) first = done;
    last = done;
    total_seen = total;
  };
  io::bind(rt, w, opts);
  std::fprintf(stderr, "\n");
  expect(first == 0, "the first call has done == 0");
  expect(total_seen > 0 && last == total_seen, "the stage ends at done == total");
  expect(calls <= 130, "at most ~130 calls a stage");
}
