#pragma once
// Test helpers: build a small graph, set its inputs, execute it on the ReferenceRuntime and read
// the outputs back as doubles.
#include <functional>
#include <vector>

#include "luminal/luminal.hpp"

namespace luminal::testing {

using UnaryOp = std::function<Tensor(const Tensor&)>;
using BinaryOp = std::function<Tensor(const Tensor&, const Tensor&)>;

/// Sets input t from doubles: as they are for float dtypes, truncated to int64 otherwise.
inline void set_values(ReferenceRuntime& rt, const Tensor& t, const std::vector<double>& v) {
  if (is_float(t.dtype())) {
    rt.set(t, v);
  } else {
    std::vector<int64_t> iv;
    for (double x : v)
      iv.push_back(static_cast<int64_t>(x));
    rt.set(t, iv);
  }
}

/// Runs op on a 1-D input of dtype t holding `in` (already representable in t).
inline std::vector<double> run_unary(DType t, const std::vector<double>& in, const UnaryOp& op,
                                     DType* out_dtype = nullptr) {
  Graph g;
  auto x = g.tensor("x", {static_cast<int64_t>(in.size())}, t);
  auto y = op(x).output("y");
  if (out_dtype) *out_dtype = y.dtype();
  ReferenceRuntime rt(g);
  if (is_float(t)) {
    rt.set(x, in);
  } else {
    rt.set(x, std::vector<int64_t>(in.begin(), in.end()));
  }
  rt.execute();
  return rt.get<double>(y);
}

struct BinaryResult {
  std::vector<double> values;
  std::vector<int64_t> shape;
  DType dtype;
};

/// Runs op(a, b) with both inputs of dtype t (float values for float dtypes, integers otherwise).
inline BinaryResult run_binary(DType t, const std::vector<int64_t>& sa,
                               const std::vector<double>& a, const std::vector<int64_t>& sb,
                               const std::vector<double>& b, const BinaryOp& op) {
  Graph g;
  auto x = g.tensor("a", std::vector<Dim>(sa.begin(), sa.end()), t);
  auto y = g.tensor("b", std::vector<Dim>(sb.begin(), sb.end()), t);
  auto z = op(x, y).output("z");
  ReferenceRuntime rt(g);
  if (is_float(t)) {
    rt.set(x, a);
    rt.set(y, b);
  } else {
    rt.set(x, std::vector<int64_t>(a.begin(), a.end()));
    rt.set(y, std::vector<int64_t>(b.begin(), b.end()));
  }
  rt.execute();
  return {rt.get<double>(z), rt.shape(z), z.dtype()};
}

}  // namespace luminal::testing
