#pragma once
// Random matmul layouts for the GEMM planner and the library-call tests: a logical
// A[batch, m, k] @ B[batch, k, n] stored in random axis orders with padded leading dimensions,
// read through the views of the matmul pattern (a broadcast Mul reduced over k), with the output
// row-major over the non-k axes in a random order. `reference` is the product computed from the
// views directly.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace luminal::testing {

struct GemmCase {
  std::vector<int64_t> dims, sa, sb;  // the Mul's dims and the strides of views a and b
  int k = 0;                          // the reduced axis
  int64_t a_elems = 0, b_elems = 0, out_elems = 0;
  std::string what;
};

inline GemmCase random_gemm_case(uint64_t seed, int64_t max_dim = 7) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::vector<int64_t> v) { return v[rng() % v.size()]; };
  const int64_t B = pick({1, 1, 2, 3}), M = std::min(max_dim, pick({1, 2, 5, 7})),
                Nn = std::min(max_dim, pick({1, 3, 4, 6})), K = pick({1, 4, 9, 16});
  // Storage of an operand with logical axes (r0, r1, r2) of sizes s: a random order, the
  // innermost stride 1, each outer one the inner extent plus 0-2 elements of padding.
  auto store = [&](const std::vector<int64_t>& s, std::vector<int64_t>* stride) {
    std::vector<int> order = {0, 1, 2};
    std::shuffle(order.begin(), order.end(), rng);
    stride->assign(3, 0);
    int64_t st = 1;
    for (int i = 2; i >= 0; --i) {
      (*stride)[static_cast<size_t>(order[static_cast<size_t>(i)])] = st;
      st *=
          s[static_cast<size_t>(order[static_cast<size_t>(i)])] + (i == 2 ? 0 : int64_t(rng() % 3));
    }
    int64_t last = 0;
    for (int i = 0; i < 3; ++i)
      last += (s[static_cast<size_t>(i)] - 1) * (*stride)[static_cast<size_t>(i)];
    return last + 1;
  };
  std::vector<int64_t> as, bs;  // a: (batch, m, k); b: (batch, k, n)
  GemmCase c;
  c.a_elems = store({B, M, K}, &as);
  c.b_elems = store({B, K, Nn}, &bs);
  // Output axes in a random order, k inserted at a random position.
  std::vector<char> roles = {'b', 'm', 'n'};
  std::shuffle(roles.begin(), roles.end(), rng);
  roles.insert(roles.begin() + static_cast<long>(rng() % 4), 'k');
  for (size_t i = 0; i < roles.size(); ++i) {
    const char r = roles[i];
    if (r == 'k') c.k = static_cast<int>(i);
    c.dims.push_back(r == 'b' ? B : r == 'm' ? M : r == 'n' ? Nn : K);
    c.sa.push_back(r == 'b' ? as[0] : r == 'm' ? as[1] : r == 'k' ? as[2] : 0);
    c.sb.push_back(r == 'b' ? bs[0] : r == 'k' ? bs[1] : r == 'n' ? bs[2] : 0);
    c.what += r;
  }
  c.out_elems = B * M * Nn;
  c.what += " B=" + std::to_string(B) + " M=" + std::to_string(M) + " N=" + std::to_string(Nn) +
            " K=" + std::to_string(K) + " a strides (b,m,k)=" + std::to_string(as[0]) + "," +
            std::to_string(as[1]) + "," + std::to_string(as[2]) +
            " b strides (b,k,n)=" + std::to_string(bs[0]) + "," + std::to_string(bs[1]) + "," +
            std::to_string(bs[2]);
  return c;
}

/// `n` small integers in [-5, 5] (exact in every float dtype down to FP8, and their products'
/// sums exact in f32 for the cases' k), varied by `seed`.
inline std::vector<double> gemm_values(int64_t n, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<double>((i * 7 + seed * 13) % 11) - 5.0;
  return v;
}

/// The product of case `c` from its views: out (row-major over the non-k dims) = sum over k of
/// a[view a] * b[view b], in double.
inline std::vector<double> gemm_reference(const GemmCase& c, const std::vector<double>& a,
                                          const std::vector<double>& b) {
  std::vector<int64_t> odims;
  std::vector<int> oaxes;
  for (size_t i = 0; i < c.dims.size(); ++i)
    if (static_cast<int>(i) != c.k) {
      odims.push_back(c.dims[i]);
      oaxes.push_back(static_cast<int>(i));
    }
  std::vector<double> out(static_cast<size_t>(c.out_elems), 0.0);
  for (int64_t o = 0; o < c.out_elems; ++o) {
    int64_t rest = o, oa = 0, ob = 0;
    for (int j = static_cast<int>(odims.size()) - 1; j >= 0; --j) {
      const int64_t idx = rest % odims[static_cast<size_t>(j)];
      rest /= odims[static_cast<size_t>(j)];
      oa += idx * c.sa[static_cast<size_t>(oaxes[static_cast<size_t>(j)])];
      ob += idx * c.sb[static_cast<size_t>(oaxes[static_cast<size_t>(j)])];
    }
    double s = 0;
    for (int64_t kk = 0; kk < c.dims[static_cast<size_t>(c.k)]; ++kk)
      s += a[static_cast<size_t>(oa + kk * c.sa[static_cast<size_t>(c.k)])] *
           b[static_cast<size_t>(ob + kk * c.sb[static_cast<size_t>(c.k)])];
    out[static_cast<size_t>(o)] = s;
  }
  return out;
}

}  // namespace luminal::testing
