// The README's example: a small matmul, a graph with a dynamic dimension, then the same graph
// compiled for the CPU backend (e-graph saturation + genetic search) with two dim buckets.
#include <cstdio>
#include <vector>

#include "luminal/luminal.hpp"

using luminal::DType;

static void print(const char* name, const std::vector<float>& v,
                  const std::vector<int64_t>& shape) {
  std::printf("%s [", name);
  for (size_t i = 0; i < shape.size(); ++i)
    std::printf(i ? ", %lld" : "%lld", static_cast<long long>(shape[i]));
  std::printf("] =");
  for (float x : v)
    std::printf(" %g", x);
  std::printf("\n");
}

int main() {
  // 1. A 2x3 @ 3x2 matmul.
  {
    luminal::Graph g;
    auto a = g.tensor("a", {2, 3});
    auto b = g.tensor("b", {3, 2});
    auto c = a.matmul(b).output("c");

    luminal::ReferenceRuntime rt(g);
    rt.set(a, std::vector<float>{1, 2, 3, 4, 5, 6});
    rt.set(b, std::vector<float>{7, 8, 9, 10, 11, 12});
    rt.execute();
    print("a @ b", rt.get<float>(c), rt.shape(c));  // [58 64 139 154]
  }

  // 2. A dynamic sequence length `s`: softmax(x @ w) over rows, for two values of s.
  {
    luminal::Graph g;
    auto x = g.tensor("x", {"s", 4});
    auto w = g.tensor("w", {4, 3});
    auto y = x.matmul(w).softmax(-1).output("y");
    std::printf("\nHLIR (%zu nodes):\n%s\n", g.nodes().size(), g.to_text().c_str());

    luminal::ReferenceRuntime rt(g);
    rt.set(w, std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f, 1.1f,
                                 1.2f});
    for (int64_t s : {1, 3}) {
      std::vector<float> xs(s * 4);
      for (size_t i = 0; i < xs.size(); ++i)
        xs[i] = 0.25f * static_cast<float>(i);
      rt.set(x, xs);
      rt.execute({{"s", s}});
      print(s == 1 ? "softmax(x @ w), s=1" : "softmax(x @ w), s=3", rt.get<float>(y), rt.shape(y));
    }
  }

  // 3. Compile it: the search tries candidate programs on the CPU backend and keeps the fastest,
  //    one per bucket of s (decode s=1, prefill 2..512 searched at s=16).
  {
    luminal::Graph g;
    auto x = g.tensor("x", {"s", 4});
    auto w = g.tensor("w", {4, 3});
    auto y = x.matmul(w).softmax(-1).output("y");

    luminal::cpu::CpuBackend cpu;
    auto opts = luminal::CompileOptions().search_graph_limit(20).seed(1).dim_buckets(
        "s", {luminal::DimBucket(1, 1), luminal::DimBucket(2, 512).representative(16)});
    // A session owns the buffers; weights bound before compile() are what the search times on.
    luminal::Session model(g, cpu, opts);
    model.set(w, std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f,
                                    1.1f, 1.2f});
    model.compile();  // prints progress and the reports
    for (int64_t s : {1, 3}) {
      std::vector<float> xs(s * 4);
      for (size_t i = 0; i < xs.size(); ++i)
        xs[i] = 0.25f * static_cast<float>(i);
      model.set(x, xs);
      model.execute({{"s", s}});
      print(s == 1 ? "compiled, s=1" : "compiled, s=3", model.get<float>(y), model.shape(y));
    }
    std::printf("\nchosen program for s=3:\n%s", model.llir({{"s", 3}}).to_text().c_str());
  }
  return 0;
}
