#include <cstdio>

#include "luminal/luminal.hpp"

int main() {
  luminal::Graph g;
  auto a = g.tensor("a", {2});
  auto y = (a * 3.0).sum(0).output("y");
  luminal::ReferenceRuntime rt(g);
  rt.set(a, std::vector<float>{1, 2});
  rt.execute();
  float v = rt.get<float>(y)[0];
  std::printf("consumer: %g\n", v);
  return v == 9.0f ? 0 : 1;
}
