// luminal/nn/linear.hpp: linear layers and embeddings with Hugging Face's weight layout
// ([out, in]).
#include <cstdint>
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/runtime/reference.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  Tensor x = g.tensor("x", {"s", 3});
  Tensor w = g.tensor("w", {2, 3});
  Tensor b = g.tensor("b", {2});
  Tensor table = g.tensor("table", {5, 3});
  Tensor ids = g.tensor("ids", {"s"}, DType::I32);
  Tensor y = nn::linear(x, w).output("y");     // x [..., in], w [out, in] -> [..., out] = x @ w^T
  Tensor z = nn::linear(x, w, b).output("z");  // + b [out]
  Tensor h =
      nn::embedding(table, ids).output("h");  // table [vocab, dim], ids I32 [...] -> [..., dim]

  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, 2, 3});
  rt.set(w, std::vector<float>{1, 0, 0, 0, 1, 1});
  rt.set(b, std::vector<float>{10, 20});
  rt.set(table, std::vector<float>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4});
  rt.set(ids, std::vector<int32_t>{3});
  rt.execute({{"s", 1}});
  expect(rt.get<float>(y) == std::vector<float>{1, 5}, "x @ w^T");
  expect(rt.get<float>(z) == std::vector<float>{11, 25}, "x @ w^T + b");
  expect(rt.get<float>(h) == std::vector<float>{3, 3, 3}, "row 3 of the table");
}
