// GPU suite (skips without a GPU): the nn-level ops LLMs use, compiled for the CUDA backend and
// compared with the ReferenceRuntime (and, where the value is simple to state, with an exact
// computation in double on the host).
//
// Row ops (the row-kernel matrix): softmax, log-softmax (each also on masked rows: fully masked,
// one survivor, a 90% masked prefix, half masked at random), RMSNorm, layer norm and the row sum
// over row lengths 1, 31, 32, 33, 1000, 4096, 32768 and a dynamic length (one program for n in
// [1, 32768], run at each of those lengths), in f32, f16 and bf16. Each case runs
//   - the program the search picks (whatever it is: the unfused kernels or a fused row kernel),
//   - and up to LUMINAL_ROW_PROGRAMS (default 6) other distinct programs of the same search space
//     (tests/support/equivalence.hpp's draws), chosen to cover every op the space offers, so a
//     row kernel the search did not pick is checked too.
// Every value must be within `tol` of the exact result (double on the host, from the same
// dtype-rounded inputs), and within 2 tol of the reference (NaN and infinities exactly where the
// reference has them: a fully masked softmax row is NaN there). The bound, in units of
// E = 2^-23 (f32) and D = the output dtype's epsilon, L = log2(n), T = the row's max - min:
//   softmax       |v| (E (8 + 2T + 2L) + D)          exp2 of a rounded argument: T E; the sum: L E
//   log-softmax   (1 + |v|) E (8 + 2T + 2L) + |v| D
//   RMSNorm       |v| (E (8 + 2L) + 2D)              two roundings to D (normalised, then * w)
//   layer norm    (1 + |v|) E (8 + 2L) + 2 |v| D
//   row sum       E (2 + 2L) sum|x| + |v| D
// plus 2^-24 absolute for f16 (its subnormal step). The CPU-only tests below (no GPU needed) check
// the bound both ways: the reference itself is within it on every case, and it fails a program
// that drops one element of a reduction or divides by n - 1 (f32), or reads the next row (every
// dtype).
//
// The other ops, in f32, f16 and bf16, at several s: silu, gelu (erf and tanh), RoPE
// (nn::apply_rope at the step positions), embedding gather, masked_fill and where, argmax (with
// ties) and nn::greedy_token, matmul (nn::linear with a transposed weight, a plain [m, k] @ [k, n],
// and a GEMV), the SwiGLU MLP (nn::swiglu_mlp); causal attention over a carried KV cache
// (nn::cached_attention: a prefill, two decode steps and a prefill on the filled cache) in f32 and
// bf16; and in-graph sampling (nn::sample, nn::counter_hash / hash_uniform bit-exact against the
// host, seeded draws equal to the reference's, top-k 1 and temperature 0 equal to greedy).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/attention.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/nn/mlp.hpp"
#include "luminal/nn/rope.hpp"
#include "luminal/nn/sampling.hpp"
#include "luminal/runtime/host_buffer.hpp"
#include "support/equivalence.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

constexpr double kE = 0x1p-23;  // f32 epsilon
const double kInf = std::numeric_limits<double>::infinity();

// ------------------------------------------------------------------------------------ helpers

HostBuffer from_doubles(DType t, const std::vector<double>& v) {
  HostBuffer b{t, std::vector<uint8_t>(v.size() * static_cast<size_t>(size_bytes(t)))};
  for (size_t i = 0; i < v.size(); ++i) {
    if (is_float(t))
      store_from_double(t, b.bytes.data(), static_cast<int64_t>(i), v[i]);
    else
      store_from_int64(t, b.bytes.data(), static_cast<int64_t>(i), static_cast<int64_t>(v[i]));
  }
  return b;
}

std::vector<double> to_doubles(DType t, const std::vector<uint8_t>& bytes) {
  std::vector<double> v(bytes.size() / static_cast<size_t>(size_bytes(t)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = load_as_double(t, bytes.data(), static_cast<int64_t>(i));
  return v;
}

/// n values uniform in [lo, hi), rounded to t (as doubles: exactly the stored values).
std::vector<double> uniform(DType t, int64_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v)
    x = d(rng);
  return to_doubles(t, from_doubles(t, v).bytes);
}

/// The f16 subnormal step (its outputs of softmax over long rows reach it); 0 for other dtypes.
double floor_abs(DType t) { return t == DType::F16 ? 0x1p-24 : 0.0; }

std::string dtype_name(DType t) { return std::string(name(t)); }

/// How `got` differs from `want` (values with their tolerances): NaN must meet NaN, an infinity
/// the same infinity, a finite value |got - want| <= tol (scaled by `scale`).
struct Diff {
  int64_t bad = 0;
  std::string first;
  double worst = 0;  // largest |got - want| / tol over finite wants
};

Diff compare_values(const std::vector<double>& got, const std::vector<double>& want,
                    const std::vector<double>& tol, double scale = 1) {
  Diff d;
  if (got.size() != want.size()) {
    d.bad = 1;
    d.first = std::to_string(got.size()) + " values, want " + std::to_string(want.size());
    return d;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i], t = tol[i] * scale;
    bool ok;
    if (std::isnan(w)) {
      ok = std::isnan(g);
    } else if (std::isinf(w)) {
      ok = g == w;
    } else {
      ok = std::fabs(g - w) <= t;  // false for a NaN
      if (t > 0) d.worst = std::max(d.worst, std::fabs(g - w) / t);
    }
    if (ok) continue;
    if (d.bad++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "[%zu] got %.9g want %.9g (diff %.3g, tol %.3g)", i, g, w,
                    std::fabs(g - w), t);
      d.first = buf;
    }
  }
  return d;
}

std::string describe(const Diff& d, size_t n) {
  return std::to_string(d.bad) + " of " + std::to_string(n) + " differ, first " + d.first;
}

// ------------------------------------------------------------------------------------ row ops

enum class RowOp { Softmax, LogSoftmax, RmsNorm, LayerNorm, Sum };

struct RowOut {
  RowOp op;
  bool masked;  // reads the masked input xm
  std::string label;
};

const std::vector<RowOut>& row_outputs() {
  static const std::vector<RowOut> outs = {{RowOp::Softmax, false, "softmax"},
                                           {RowOp::Softmax, true, "softmax_masked"},
                                           {RowOp::LogSoftmax, false, "log_softmax"},
                                           {RowOp::LogSoftmax, true, "log_softmax_masked"},
                                           {RowOp::RmsNorm, false, "rms_norm"},
                                           {RowOp::LayerNorm, false, "layer_norm"},
                                           {RowOp::Sum, false, "row_sum"}};
  return outs;
}

constexpr double kNormEps = 1e-5;

/// The inputs of one row case, rounded to the dtype: x [rows, n] uniform in [-4, 4), xm the same
/// with masked (-inf) entries by row (r % 4: all, all but one, a 90% prefix, half at random),
/// RMSNorm's weight w [n], layer norm's weight lw and bias lb [n].
struct RowInputs {
  DType dt = DType::F32;
  int64_t rows = 0, n = 0;
  std::vector<double> x, xm, w, lw, lb;

  testing::BufferMap buffers() const {
    return {{"x", from_doubles(dt, x)},
            {"xm", from_doubles(dt, xm)},
            {"w", from_doubles(dt, w)},
            {"lw", from_doubles(dt, lw)},
            {"lb", from_doubles(dt, lb)}};
  }
  template <class Rt>
  void set_on(Rt& rt) const {
    for (const auto& [label, b] : buffers())
      rt.set_bytes(label, b.bytes.data(), b.bytes.size());
  }
};

RowInputs row_inputs(DType dt, int64_t rows, int64_t n, uint64_t seed) {
  RowInputs in;
  in.dt = dt;
  in.rows = rows;
  in.n = n;
  in.x = uniform(dt, rows * n, seed, -4, 4);
  in.w = uniform(dt, n, seed + 1, 0.5, 1.5);
  in.lw = uniform(dt, n, seed + 2, 0.5, 1.5);
  in.lb = uniform(dt, n, seed + 3, -0.5, 0.5);
  in.xm = in.x;
  std::mt19937_64 rng(seed + 4);
  for (int64_t r = 0; r < rows; ++r) {
    double* row = in.xm.data() + r * n;
    switch (r % 4) {
      case 0:  // fully masked
        std::fill(row, row + n, -kInf);
        break;
      case 1: {  // one survivor
        const int64_t keep = (r * 7 + 3) % n;
        for (int64_t j = 0; j < n; ++j)
          if (j != keep) row[j] = -kInf;
        break;
      }
      case 2: {  // a 90% prefix (threads holding only -inf merge with the others)
        const int64_t k = std::min(n - 1, n * 9 / 10);
        std::fill(row, row + k, -kInf);
        break;
      }
      default:  // half at random, one kept
        for (int64_t j = 0; j < n; ++j)
          if ((rng() & 1) && j != r % n) row[j] = -kInf;
    }
  }
  return in;
}

/// Bugs the bound must catch (the CPU-only tests): a reduction that loses one element (the one
/// that weighs most: the row's largest x for softmax, largest |x| otherwise; losing a negligible
/// one is invisible to any bound), a mean over n - 1, a program that reads the next row.
enum class Bug { None, DropOne, CountMinusOne, NextRow };

struct Expected {
  std::vector<double> v, tol;
};

/// The exact value and tolerance of every element of one output (see the header).
Expected exact_row(const RowOut& o, const RowInputs& in, Bug bug = Bug::None) {
  const int64_t rows = in.rows, n = in.n;
  const DType dt = in.dt;
  const double D = epsilon(dt), F = floor_abs(dt);
  const double L = std::log2(static_cast<double>(std::max<int64_t>(n, 2)));
  const std::vector<double>& X = o.masked ? in.xm : in.x;
  const double count =
      bug == Bug::CountMinusOne && n > 1 ? static_cast<double>(n - 1) : static_cast<double>(n);
  Expected e;
  const int64_t out_per_row = o.op == RowOp::Sum ? 1 : n;
  e.v.resize(static_cast<size_t>(rows * out_per_row));
  e.tol.resize(e.v.size());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = bug == Bug::NextRow ? (r + 1) % rows : r;
    const double* x = X.data() + src * n;
    double* v = e.v.data() + r * out_per_row;
    double* tol = e.tol.data() + r * out_per_row;
    double mx = -kInf, mn = kInf;
    int64_t heaviest = -1;  // the element DropOne loses
    for (int64_t j = 0; j < n; ++j) {
      if (!std::isfinite(x[j])) continue;
      mx = std::max(mx, x[j]), mn = std::min(mn, x[j]);
      const bool by_value = o.op == RowOp::Softmax || o.op == RowOp::LogSoftmax;
      if (heaviest < 0 ||
          (by_value ? x[j] > x[heaviest] : std::fabs(x[j]) > std::fabs(x[heaviest])))
        heaviest = j;
    }
    if (bug != Bug::DropOne || n == 1) heaviest = -1;
    // Whether element j takes part in the row's reductions.
    auto used = [&](int64_t j) { return j != heaviest; };
    switch (o.op) {
      case RowOp::Softmax:
      case RowOp::LogSoftmax: {
        double sum = 0;
        for (int64_t j = 0; j < n; ++j)
          if (used(j)) sum += std::exp(x[j] - mx);
        const double T = std::isfinite(mx) ? mx - mn : 0;
        const double k = kE * (8 + 2 * T + 2 * L);
        for (int64_t j = 0; j < n; ++j) {
          if (!std::isfinite(mx)) {  // fully masked: -inf - -inf, as the reference computes it
            v[j] = std::nan("");
          } else if (o.op == RowOp::Softmax) {
            v[j] = std::exp(x[j] - mx) / sum;
          } else {
            v[j] = (x[j] - mx) - std::log(sum);
          }
          tol[j] = o.op == RowOp::Softmax ? std::fabs(v[j]) * (k + D) + F
                                          : (1 + std::fabs(v[j])) * k + std::fabs(v[j]) * D + F;
        }
        break;
      }
      case RowOp::RmsNorm: {
        double ss = 0;
        for (int64_t j = 0; j < n; ++j)
          if (used(j)) ss += x[j] * x[j];
        const double r_ = 1 / std::sqrt(ss / count + kNormEps);
        for (int64_t j = 0; j < n; ++j) {
          v[j] = x[j] * r_ * in.w[static_cast<size_t>(j)];
          tol[j] = std::fabs(v[j]) * (kE * (8 + 2 * L) + 2 * D) + F;
        }
        break;
      }
      case RowOp::LayerNorm: {
        double s = 0;
        for (int64_t j = 0; j < n; ++j)
          if (used(j)) s += x[j];
        const double mu = s / count;
        double ss = 0;
        for (int64_t j = 0; j < n; ++j)
          if (used(j)) ss += (x[j] - mu) * (x[j] - mu);
        const double r_ = 1 / std::sqrt(ss / count + kNormEps);
        for (int64_t j = 0; j < n; ++j) {
          v[j] = (x[j] - mu) * r_ * in.lw[static_cast<size_t>(j)] + in.lb[static_cast<size_t>(j)];
          tol[j] = (1 + std::fabs(v[j])) * kE * (8 + 2 * L) + 2 * std::fabs(v[j]) * D + F;
        }
        break;
      }
      case RowOp::Sum: {
        double s = 0, abs_sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          if (used(j)) s += x[j];
          abs_sum += std::fabs(x[j]);
        }
        v[0] = s;
        tol[0] = kE * (2 + 2 * L) * abs_sum + std::fabs(s) * D + F;
        break;
      }
    }
  }
  return e;
}

/// Builds the row graph into `g`: every output of row_outputs() over x / xm [rows, n].
void build_row_graph(Graph& g, DType dt, int64_t rows, bool dynamic, int64_t n) {
  const Dim len = dynamic ? Dim("n") : Dim(n);
  if (dynamic) g.declare_dim("n", 1, 32768);
  Tensor x = g.tensor("x", {rows, len}, dt), xm = g.tensor("xm", {rows, len}, dt);
  Tensor w = g.tensor("w", {len}, dt), lw = g.tensor("lw", {len}, dt),
         lb = g.tensor("lb", {len}, dt);
  x.softmax(-1).output("softmax");
  xm.softmax(-1).output("softmax_masked");
  x.log_softmax(-1).output("log_softmax");
  xm.log_softmax(-1).output("log_softmax_masked");
  x.rms_norm(w, kNormEps).output("rms_norm");
  x.layer_norm(lw, lb, kNormEps).output("layer_norm");
  x.sum(-1).output("row_sum");
}

int64_t rows_for(int64_t n) { return std::clamp<int64_t>(131072 / n, 4, 64); }

/// Checks one program's outputs (label -> bytes) against the exact values and the reference's.
using Values = std::map<std::string, std::vector<double>>;

void check_row_outputs(const std::string& who, const RowInputs& in, const Values& got,
                       const Values& ref) {
  for (const RowOut& o : row_outputs()) {
    const Expected e = exact_row(o, in);
    const std::vector<double>& g = got.at(o.label);
    const std::vector<double>& r = ref.at(o.label);
    const Diff vs_exact = compare_values(g, e.v, e.tol);
    EXPECT_EQ(vs_exact.bad, 0) << who << " " << o.label
                               << " vs exact: " << describe(vs_exact, g.size());
    const Diff vs_ref = compare_values(g, r, e.tol, 2);
    EXPECT_EQ(vs_ref.bad, 0) << who << " " << o.label
                             << " vs the reference: " << describe(vs_ref, g.size());
  }
}

/// Up to `want` distinct programs of `space`: the first genome, the fewest-kernels genome, then
/// (greedily) those that bring the most ops not yet covered.
std::vector<testing::Program> covering_programs(const SearchSpace& space, int want, uint64_t seed) {
  testing::Draws d = testing::draw_programs(space, std::max(want * 4, 24), seed);
  EXPECT_EQ(d.error, "");
  std::vector<testing::Program> pool = std::move(d.programs), out;
  if (pool.empty()) return out;
  std::set<std::string> covered;
  auto take = [&](size_t i) {
    for (const auto& [op, count] : pool[i].llir.op_mix())
      covered.insert(op);
    out.push_back(std::move(pool[i]));
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
  };
  take(0);
  // The search's other seed (fused and row kernels wherever possible), when the draws hold it.
  for (size_t i = 0; i < pool.size() && static_cast<int>(out.size()) < want; ++i)
    if (pool[i].how == "fewest kernels") {
      take(i);
      break;
    }
  while (static_cast<int>(out.size()) < want && !pool.empty()) {
    size_t best = 0;
    int best_new = -1;
    for (size_t i = 0; i < pool.size(); ++i) {
      int fresh = 0;
      for (const auto& [op, count] : pool[i].llir.op_mix())
        fresh += covered.count(op) == 0;
      if (fresh > best_new) best = i, best_new = fresh;
    }
    take(best);
  }
  return out;
}

Values outputs_of(const Runtime& rt) {
  Values m;
  for (const RowOut& o : row_outputs())
    m[o.label] = rt.get<double>(o.label);
  return m;
}

struct RowCase {
  DType dt;
  int64_t n;  // 0: dynamic
};

std::string row_case_name(const ::testing::TestParamInfo<RowCase>& i) {
  return dtype_name(i.param.dt) + (i.param.n ? "_n" + std::to_string(i.param.n) : "_dynamic");
}

const std::vector<int64_t>& row_lengths() {
  static const std::vector<int64_t> v = {1, 31, 32, 33, 1000, 4096, 32768};
  return v;
}

class CudaRowOps : public ::testing::TestWithParam<RowCase> {};

TEST_P(CudaRowOps, SearchedAndAlternativeProgramsMatch) {
  LUMINAL_REQUIRE_GPU();
  const RowCase c = GetParam();
  const bool dynamic = c.n == 0;
  const int64_t rows = dynamic ? 4 : rows_for(c.n);
  const std::vector<int64_t> lengths = dynamic ? row_lengths() : std::vector<int64_t>{c.n};
  Graph g;
  build_row_graph(g, c.dt, rows, dynamic, c.n);
  CompileOptions opts = CompileOptions().search_graph_limit(12).seed(1).verbose(false);
  if (dynamic) opts.dim_buckets("n", {DimBucket(1, 32768).representative(4096)});
  Session s(g, testing::gpu(), opts);
  ReferenceRuntime ref(g);
  std::vector<RowInputs> cases;
  std::vector<DynMap> dyns;
  for (int64_t n : lengths) {
    cases.push_back(row_inputs(c.dt, rows, n, 100 + static_cast<uint64_t>(n)));
    dyns.push_back(dynamic ? DynMap{{"n", n}} : DynMap{});
  }
  // The search times candidates on the longest case's data (masked rows included; every buffer
  // filled, so the representative length reads real values).
  cases.back().set_on(s);
  s.compile();
  std::vector<Values> want;
  for (size_t k = 0; k < cases.size(); ++k) {
    cases[k].set_on(ref);
    ref.execute(dyns[k]);
    want.push_back(outputs_of(ref));
    cases[k].set_on(s);
    s.execute(dyns[k]);
    const std::string who = "searched program (" + s.llir(dyns[k]).op_mix_string() +
                            ") at n=" + std::to_string(cases[k].n);
    check_row_outputs(who, cases[k], outputs_of(s), want.back());
  }
  RecordProperty("searched", s.llir(dyns.front()).op_mix_string());
  std::printf("[rows] %s %s: searched %s\n", dtype_name(c.dt).c_str(),
              dynamic ? "dynamic n" : ("n=" + std::to_string(c.n)).c_str(),
              s.llir(dyns.front()).op_mix_string().c_str());

  // Other programs of the same space, covering every op it offers.
  const int programs = testing::env_int("LUMINAL_ROW_PROGRAMS", 6);
  BuiltSpace b = build_search_space(g, testing::gpu(), g.dim_facts());
  const std::vector<testing::Program> progs =
      covering_programs(*b.space, programs, 7 + static_cast<uint64_t>(c.n));
  std::map<std::string, int> ops;
  for (const testing::Program& p : progs) {
    for (const auto& [op, count] : p.llir.op_mix())
      ++ops[op];
    testing::LoadedPlan lp = testing::load_plan(testing::gpu(), p.llir, dyns);
    for (size_t k = 0; k < cases.size(); ++k) {
      const testing::PlanRun run = testing::run_plan(lp, cases[k].buffers(), dyns[k]);
      Values got;
      for (const auto& [label, buf] : run.outputs)
        got[label] = to_doubles(buf.dtype, buf.bytes);
      check_row_outputs(
          p.how + " program (" + p.llir.op_mix_string() + ") at n=" + std::to_string(cases[k].n),
          cases[k], got, want[k]);
    }
  }
  std::string mix;
  for (const auto& [op, count] : ops)
    mix += (mix.empty() ? "" : ", ") + op + " " + std::to_string(count);
  std::printf("[rows]   %zu other programs (10^%.1f in the space) use: %s\n", progs.size(),
              b.space->log10_size(), mix.c_str());
  EXPECT_GE(progs.size(), 1u);
}

std::vector<RowCase> all_row_cases() {
  std::vector<RowCase> v;
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    for (int64_t n : row_lengths())
      v.push_back({dt, n});
    v.push_back({dt, 0});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(LengthsAndDtypes, CudaRowOps, ::testing::ValuesIn(all_row_cases()),
                         row_case_name);

// The bound, checked without a GPU. A correct implementation (the reference) is within it on
// every case ...
TEST(RowTolerance, TheReferenceIsWithinTheBound) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    for (int64_t n : row_lengths()) {
      const int64_t rows = std::min<int64_t>(rows_for(n), 16);
      Graph g;
      build_row_graph(g, dt, rows, false, n);
      ReferenceRuntime ref(g);
      const RowInputs in = row_inputs(dt, rows, n, 100 + static_cast<uint64_t>(n));
      in.set_on(ref);
      ref.execute();
      for (const RowOut& o : row_outputs()) {
        const Expected e = exact_row(o, in);
        const std::vector<double> r = ref.get<double>(o.label);
        const Diff d = compare_values(r, e.v, e.tol);
        EXPECT_EQ(d.bad, 0) << dtype_name(dt) << " n=" << n << " " << o.label << ": "
                            << describe(d, r.size());
        RecordProperty(dtype_name(dt) + " n=" + std::to_string(n) + " " + o.label,
                       "worst err/tol " + std::to_string(d.worst));
      }
    }
  }
}

// ... and it fails real bugs: in f32, a reduction that loses one element or divides by n - 1
// (about 1/n of the value: 3e-5 at n = 32768); in every dtype, reading the next row.
TEST(RowTolerance, TheBoundCatchesBugs) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    for (int64_t n : {33, 1000, 4096, 32768}) {
      const RowInputs in = row_inputs(dt, 4, n, 100 + static_cast<uint64_t>(n));
      for (const RowOut& o : row_outputs()) {
        const Expected good = exact_row(o, in);
        std::vector<Bug> bugs = {Bug::NextRow};
        if (dt == DType::F32) {
          bugs.push_back(Bug::DropOne);
          if (o.op == RowOp::RmsNorm || o.op == RowOp::LayerNorm)
            bugs.push_back(Bug::CountMinusOne);
        }
        for (Bug bug : bugs) {
          const Expected bad = exact_row(o, in, bug);
          const Diff d = compare_values(bad.v, good.v, good.tol);
          EXPECT_GT(d.bad, 0) << dtype_name(dt) << " n=" << n << " " << o.label << " bug "
                              << static_cast<int>(bug) << " passes the bound";
        }
      }
    }
  }
}

// ------------------------------------------------------------------------------ other LLM ops

/// The elementwise, gather, argmax and matmul ops of an LLM over s tokens, in one graph per dtype.
TEST(CudaLlmOps, ElementwiseGatherArgmaxMatmulMatchTheReference) {
  LUMINAL_REQUIRE_GPU();
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    const std::string dn = dtype_name(dt);
    const int64_t d = 96, heads = 4, hd = 16, vocab = 50, k = 1000, nout = 257;
    Graph g;
    g.declare_dim("s", 1, 64);
    g.declare_dim("c", 1, 512);
    Tensor x = g.tensor("x", {"s", d}, dt);
    x.silu().output("silu");
    x.gelu().output("gelu");
    x.gelu_tanh().output("gelu_tanh");
    Tensor xr = g.tensor("xr", {"s", heads, hd}, dt);
    Tensor inv = g.tensor("inv_freq", {hd / 2}, DType::F32);
    nn::apply_rope(xr, nn::step_positions(g), inv).output("rope");
    Tensor table = g.tensor("table", {vocab, d}, dt);
    Tensor ids = g.tensor("ids", {"s"}, DType::I32);
    nn::embedding(table, ids).output("embedding");
    Tensor mask = g.tensor("mask", {"s", d}, DType::Bool);
    x.masked_fill(mask, -kInf).output("masked_fill");
    Tensor y = g.tensor("y", {"s", d}, dt);
    mask.where(x, y).output("where");
    Tensor ties = g.tensor("ties", {"s", d}, dt);  // small integers: many ties
    ties.argmax(-1).output("argmax");
    nn::greedy_token(ties).output("greedy");
    Tensor a = g.tensor("a", {"s", k}, dt), wl = g.tensor("wl", {nout, k}, dt);
    nn::linear(a, wl).output("linear");
    Tensor m1 = g.tensor("m1", {33, 64}, dt), m2 = g.tensor("m2", {64, 40}, dt);
    m1.matmul(m2).output("matmul");
    Tensor v1 = g.tensor("v1", {k}, dt);
    v1.matmul(wl.transpose(0, 1)).output("gemv");
    const int64_t md = 64, mh = 128;  // SwiGLU MLP: down(silu(gate(x)) * up(x))
    Tensor xm = g.tensor("xm", {"s", md}, dt), wg = g.tensor("wg", {mh, md}, dt),
           wu = g.tensor("wu", {mh, md}, dt), wd = g.tensor("wd", {md, mh}, dt);
    nn::swiglu_mlp(xm, wg, wu, wd).output("mlp");

    Session ses(g, testing::gpu(),
                CompileOptions().search_graph_limit(8).verbose(false).dim_buckets(
                    "s", {DimBucket(1, 1), DimBucket(2, 64).representative(7)}));
    ReferenceRuntime ref(g);
    const std::vector<float> invv = nn::rope_inv_freq(static_cast<int>(hd), 10000.0);
    // Every input of a step of s tokens.
    auto make_inputs = [&](int64_t s) {
      const uint64_t seed = 1000 + static_cast<uint64_t>(s);
      std::map<std::string, HostBuffer> in;
      in["x"] = from_doubles(dt, uniform(dt, s * d, seed, -6, 6));
      in["xr"] = from_doubles(dt, uniform(dt, s * heads * hd, seed + 1, -1, 1));
      in["inv_freq"] = to_host_buffer(invv.data(), invv.size(), DType::F32, "inv_freq");
      in["table"] = from_doubles(dt, uniform(dt, vocab * d, seed + 2, -2, 2));
      std::vector<int32_t> idv(static_cast<size_t>(s));
      for (int64_t i = 0; i < s; ++i)
        idv[static_cast<size_t>(i)] = static_cast<int32_t>((i * 17 + s) % vocab);
      in["ids"] = to_host_buffer(idv.data(), idv.size(), DType::I32, "ids");
      std::vector<double> mv(static_cast<size_t>(s * d)), tv(static_cast<size_t>(s * d));
      std::mt19937_64 rng(seed + 3);
      for (size_t i = 0; i < mv.size(); ++i) {
        mv[i] = static_cast<double>(rng() % 3 == 0);
        tv[i] = static_cast<double>(rng() % 6);
      }
      in["mask"] = from_doubles(DType::Bool, mv);
      in["y"] = from_doubles(dt, uniform(dt, s * d, seed + 4, -6, 6));
      in["ties"] = from_doubles(dt, tv);
      in["a"] = from_doubles(dt, uniform(dt, s * k, seed + 5, -1, 1));
      in["wl"] = from_doubles(dt, uniform(dt, nout * k, seed + 6, -1, 1));
      in["m1"] = from_doubles(dt, uniform(dt, 33 * 64, seed + 7, -1, 1));
      in["m2"] = from_doubles(dt, uniform(dt, 64 * 40, seed + 8, -1, 1));
      in["v1"] = from_doubles(dt, uniform(dt, k, seed + 9, -1, 1));
      in["xm"] = from_doubles(dt, uniform(dt, s * md, seed + 10, -2, 2));
      in["wg"] = from_doubles(dt, uniform(dt, mh * md, seed + 11, -0.25, 0.25));
      in["wu"] = from_doubles(dt, uniform(dt, mh * md, seed + 12, -0.25, 0.25));
      in["wd"] = from_doubles(dt, uniform(dt, md * mh, seed + 13, -0.25, 0.25));
      return in;
    };
    // The search times candidates on full buffers (s = 64: every gather index valid).
    for (auto& [label, b] : make_inputs(64))
      ses.set_bytes(label, b.bytes.data(), b.bytes.size());
    ses.compile();
    for (int64_t s : {1, 7, 33}) {
      const DynMap dyn{{"s", s}, {"c", s + 40}};
      std::map<std::string, HostBuffer> in = make_inputs(s);
      for (auto& [label, b] : in) {
        ses.set_bytes(label, b.bytes.data(), b.bytes.size());
        ref.set_bytes(label, b.bytes.data(), b.bytes.size());
      }
      ses.execute(dyn);
      ref.execute(dyn);
      const std::string at =
          dn + " s=" + std::to_string(s) + " (" + ses.llir(dyn).op_mix_string() + "): ";
      auto values = [&](const Runtime& rt, const char* label) { return rt.get<double>(label); };
      // Exact: gathers, selections, argmax (ties: the lowest index).
      for (const char* label : {"embedding", "masked_fill", "where"})
        EXPECT_EQ(values(ses, label), values(ref, label)) << at << label;
      for (const char* label : {"argmax", "greedy"}) {
        const std::vector<int64_t> got = ses.get<int64_t>(label);
        EXPECT_EQ(got, ref.get<int64_t>(label)) << at << label;
        const std::vector<double> t = to_doubles(dt, in["ties"].bytes);
        for (int64_t i = 0; i < s; ++i) {
          const auto row = t.begin() + i * d;
          EXPECT_EQ(got[static_cast<size_t>(i)], std::max_element(row, row + d) - row)
              << at << label << " row " << i;
        }
      }
      // Activations: f32 chains whose exp2 may differ by 2 ulp, rounded once to the dtype.
      const double D = epsilon(dt), F = floor_abs(dt);
      for (const char* label : {"silu", "gelu", "gelu_tanh"}) {
        const std::vector<double> want = values(ref, label), got = values(ses, label);
        std::vector<double> tol(want.size());
        for (size_t i = 0; i < want.size(); ++i)
          tol[i] = std::fabs(want[i]) * D + 32 * kE * (1 + std::fabs(want[i])) + F;
        const Diff df = compare_values(got, want, tol);
        EXPECT_EQ(df.bad, 0) << at << label << ": " << describe(df, got.size());
      }
      // RoPE: cos/sin in f32 (sin within 2 ulp) rounded to the dtype, then three roundings in it;
      // |x| <= 1. A position off by one moves the first pair by ~|x|.
      {
        const std::vector<double> want = values(ref, "rope"), got = values(ses, "rope");
        const std::vector<double> tol(want.size(), 4 * D + 64 * kE + F);
        const Diff df = compare_values(got, want, tol);
        EXPECT_EQ(df.bad, 0) << at << "rope: " << describe(df, got.size());
      }
      // Matmuls against exact sums: products exact in f32, sums within E (2 + 2 log2 k) of
      // sum |a b|, rounded once to the dtype; against the reference within twice that.
      auto check_matmul = [&](const char* label, const std::vector<double>& A,
                              const std::vector<double>& B, int64_t m, int64_t kk, int64_t nn,
                              bool b_transposed) {
        std::vector<double> want(static_cast<size_t>(m * nn)), tol(want.size());
        const double L = std::log2(static_cast<double>(kk));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < nn; ++j) {
            double acc = 0, mag = 0;
            for (int64_t q = 0; q < kk; ++q) {
              const double p = A[static_cast<size_t>(i * kk + q)] *
                               B[static_cast<size_t>(b_transposed ? j * kk + q : q * nn + j)];
              acc += p;
              mag += std::fabs(p);
            }
            want[static_cast<size_t>(i * nn + j)] = acc;
            tol[static_cast<size_t>(i * nn + j)] = kE * (2 + 2 * L) * mag + std::fabs(acc) * D;
          }
        const std::vector<double> got = values(ses, label);
        const Diff de = compare_values(got, want, tol);
        EXPECT_EQ(de.bad, 0) << at << label << " vs exact: " << describe(de, got.size());
        const Diff dr = compare_values(got, values(ref, label), tol, 2);
        EXPECT_EQ(dr.bad, 0) << at << label << " vs the reference: " << describe(dr, got.size());
      };
      const std::vector<double> av = to_doubles(dt, in["a"].bytes),
                                wv = to_doubles(dt, in["wl"].bytes);
      check_matmul("linear", av, wv, s, k, nout, true);
      check_matmul("matmul", to_doubles(dt, in["m1"].bytes), to_doubles(dt, in["m2"].bytes), 33, 64,
                   40, false);
      check_matmul("gemv", to_doubles(dt, in["v1"].bytes), wv, 1, k, nout, true);
      // SwiGLU against exact: each hidden activation carries the roundings of gate, up, silu and
      // the product (4 D for 16-bit), then the down projection's sum.
      {
        const std::vector<double> X = to_doubles(dt, in["xm"].bytes),
                                  G = to_doubles(dt, in["wg"].bytes),
                                  U = to_doubles(dt, in["wu"].bytes),
                                  W = to_doubles(dt, in["wd"].bytes);
        const double k_act = 4 * D + kE * (8 + 2 * std::log2(static_cast<double>(md)) +
                                           2 * std::log2(static_cast<double>(mh)));
        std::vector<double> want(static_cast<size_t>(s * md)), tol(want.size());
        for (int64_t i = 0; i < s; ++i) {
          std::vector<double> act(static_cast<size_t>(mh));
          for (int64_t h = 0; h < mh; ++h) {
            double gs = 0, us = 0;
            for (int64_t q = 0; q < md; ++q) {
              gs += X[static_cast<size_t>(i * md + q)] * G[static_cast<size_t>(h * md + q)];
              us += X[static_cast<size_t>(i * md + q)] * U[static_cast<size_t>(h * md + q)];
            }
            act[static_cast<size_t>(h)] = gs / (1 + std::exp(-gs)) * us;
          }
          for (int64_t o = 0; o < md; ++o) {
            double acc = 0, mag = 0;
            for (int64_t h = 0; h < mh; ++h) {
              const double p = act[static_cast<size_t>(h)] * W[static_cast<size_t>(o * mh + h)];
              acc += p;
              mag += std::fabs(p);
            }
            want[static_cast<size_t>(i * md + o)] = acc;
            tol[static_cast<size_t>(i * md + o)] = k_act * mag + std::fabs(acc) * D + F;
          }
        }
        const std::vector<double> got = values(ses, "mlp");
        const Diff de = compare_values(got, want, tol);
        EXPECT_EQ(de.bad, 0) << at << "mlp vs exact: " << describe(de, got.size());
        const Diff dr = compare_values(got, values(ref, "mlp"), tol, 2);
        EXPECT_EQ(dr.bad, 0) << at << "mlp vs the reference: " << describe(dr, got.size());
      }
    }
  }
}

// Causal attention over a carried KV cache: a 5-token prefill, two decode steps and a 3-token
// prefill on top of the filled cache; the output and both caches against the reference each step.
TEST(CudaLlmOps, CachedCausalAttentionMatchesTheReference) {
  LUMINAL_REQUIRE_GPU();
  for (DType dt : {DType::F32, DType::BF16}) {
    const int64_t heads = 8, kv = 2, hd = 32, slots = 64;
    Graph g;
    g.declare_dim("s", 1, 8);
    g.declare_dim("c", 1, slots);
    Tensor q = g.tensor("q", {"s", heads, hd}, dt);
    Tensor k = g.tensor("k", {"s", kv, hd}, dt);
    Tensor v = g.tensor("v", {"s", kv, hd}, dt);
    nn::cached_attention(g, q, k, v, "l0", static_cast<int>(slots)).output("o");
    Session ses(g, testing::gpu(),
                CompileOptions().search_graph_limit(8).verbose(false).dim_buckets(
                    "s", {DimBucket(1, 1), DimBucket(2, 8).representative(5)}));
    ReferenceRuntime ref(g);
    const HostBuffer zeros = from_doubles(dt, std::vector<double>(slots * kv * hd, 0.0));
    for (Runtime* rt : {static_cast<Runtime*>(&ses), static_cast<Runtime*>(&ref)}) {
      rt->set_bytes("l0.k_cache", zeros.bytes.data(), zeros.bytes.size());
      rt->set_bytes("l0.v_cache", zeros.bytes.data(), zeros.bytes.size());
    }
    int64_t c = 0;
    int step = 0;
    for (int64_t s : {5, 1, 1, 3}) {
      c += s;
      const uint64_t seed = 500 + static_cast<uint64_t>(step);
      const HostBuffer qb = from_doubles(dt, uniform(dt, s * heads * hd, seed, -1, 1)),
                       kb = from_doubles(dt, uniform(dt, s * kv * hd, seed + 1, -1, 1)),
                       vb = from_doubles(dt, uniform(dt, s * kv * hd, seed + 2, -1, 1));
      for (Runtime* rt : {static_cast<Runtime*>(&ses), static_cast<Runtime*>(&ref)}) {
        rt->set_bytes("q", qb.bytes.data(), qb.bytes.size());
        rt->set_bytes("k", kb.bytes.data(), kb.bytes.size());
        rt->set_bytes("v", vb.bytes.data(), vb.bytes.size());
      }
      const DynMap dyn{{"s", s}, {"c", c}};
      ses.execute(dyn);
      ref.execute(dyn);
      const std::string at = dtype_name(dt) + " step " + std::to_string(step) +
                             " (s=" + std::to_string(s) + ", c=" + std::to_string(c) + "; " +
                             ses.llir(dyn).op_mix_string() + "): ";
      // f32: a few dozen E; bf16: the softmax weights and the sums round to D (|v| <= 1).
      const double D = epsilon(dt);
      const std::vector<double> want = ref.get<double>("o"), got = ses.get<double>("o");
      std::vector<double> tol(want.size());
      for (size_t i = 0; i < want.size(); ++i)
        tol[i] = dt == DType::F32 ? 64 * kE * (1 + std::fabs(want[i]))
                                  : D * (std::fabs(want[i]) + 2) + 64 * kE;
      const Diff df = compare_values(got, want, tol);
      EXPECT_EQ(df.bad, 0) << at << "o: " << describe(df, got.size());
      // The caches (carried, written in place): exact copies of the new rows.
      for (const char* label : {"l0.k_cache_out", "l0.v_cache_out"})
        EXPECT_EQ(ses.get<double>(label), ref.get<double>(label)) << at << label;
      ++step;
    }
  }
}

// In-graph sampling: the counter hash and its uniforms bit-exact against the host twin; seeded
// draws equal to the reference's (cross-backend: equal where the top-2 perturbed scores differ by
// more than 1e-5 relative, as the LLM issue states; the log may differ by an ulp), repeatable,
// changed by another seed; temperature 0 and top-k 1 are the argmax.
TEST(CudaLlmOps, SamplingInTheGraph) {
  LUMINAL_REQUIRE_GPU();
  const int64_t rows = 8, V = 1000;
  Graph g;
  Tensor logits = g.tensor("logits", {rows, V});
  Tensor seen = g.tensor("seen", {rows, V});
  nn::SamplerInputs in = nn::sampler_inputs(g);
  nn::sample(logits, in, seen).output("token");
  nn::greedy_token(logits).output("greedy");
  Tensor h = nn::counter_hash(in.seed, in.step, rows, V);
  h.output("hash");
  nn::hash_uniform(h).output("uniform");
  Session ses(g, testing::gpu(), CompileOptions().search_graph_limit(4).verbose(false));
  ReferenceRuntime ref(g);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> x(static_cast<size_t>(rows * V)), sv(x.size(), 0.f);
  for (float& v : x)
    v = nd(rng);
  for (size_t i = 0; i < sv.size(); i += 13)
    sv[i] = 1.f;
  for (Runtime* rt : {static_cast<Runtime*>(&ses), static_cast<Runtime*>(&ref)}) {
    rt->set("logits", x);
    rt->set("seen", sv);
  }
  auto run = [&](Runtime& rt, const nn::SamplingConfig& cfg, int64_t step) {
    nn::set_sampler_inputs(rt, in, cfg, step);
    rt.execute();
    return rt.get<int32_t>("token");
  };
  // The perturbed score of each token as nn::sample ranks them (z - log E, E = -log u), for the
  // near-tie rule.
  auto near_tie = [&](const nn::SamplingConfig& cfg, int64_t step, int64_t row) {
    std::vector<double> score(static_cast<size_t>(V));
    for (int64_t j = 0; j < V; ++j) {
      const size_t i = static_cast<size_t>(row * V + j);
      double z = x[i];
      if (sv[i] != 0) z = z > 0 ? z / cfg.repetition_penalty : z * cfg.repetition_penalty;
      z /= cfg.temperature;
      const float u = nn::hash_uniform_host(nn::counter_hash_host(cfg.seed, step, row, j));
      score[static_cast<size_t>(j)] = z - std::log(-std::log(static_cast<double>(u)));
    }
    std::partial_sort(score.begin(), score.begin() + 2, score.end(), std::greater<>());
    return score[0] - score[1] <= 1e-5 * std::max(1.0, std::fabs(score[0]));
  };
  const nn::SamplingConfig cfg{.temperature = 0.9,
                               .top_k = 40,
                               .top_p = 0.9,
                               .min_p = 0.02,
                               .repetition_penalty = 1.3,
                               .seed = 42};
  nn::set_sampler_inputs(ses, in, cfg, 3);
  ses.compile();
  for (int64_t step : {0, 3, 11}) {
    const std::vector<int32_t> a = run(ses, cfg, step);
    // The hash and its uniforms, bit-exact.
    const std::vector<int64_t> hv = ses.get<int64_t>("hash");
    const std::vector<float> uv = ses.get<float>("uniform");
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < V; j += 37) {
        const int64_t want = nn::counter_hash_host(cfg.seed, step, r, j);
        ASSERT_EQ(hv[static_cast<size_t>(r * V + j)], want) << "step " << step;
        ASSERT_EQ(uv[static_cast<size_t>(r * V + j)], nn::hash_uniform_host(want));
      }
    const std::vector<int32_t> want = run(ref, cfg, step);
    for (int64_t r = 0; r < rows; ++r) {
      if (a[static_cast<size_t>(r)] == want[static_cast<size_t>(r)]) continue;
      EXPECT_TRUE(near_tie(cfg, step, r))
          << "step " << step << " row " << r << ": token " << a[static_cast<size_t>(r)]
          << ", the reference draws " << want[static_cast<size_t>(r)];
    }
    EXPECT_EQ(run(ses, cfg, step), a) << "the same seed and step draw again";
    nn::SamplingConfig other = cfg;
    other.seed = 43;
    EXPECT_NE(run(ses, other, step), a) << "another seed draws the same 8 tokens";
  }
  // Greedy: the argmax of the logits (ties: the lowest index), also as top-k 1 at temperature 1.
  std::vector<int32_t> argmax(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = x.begin() + r * V;
    argmax[static_cast<size_t>(r)] = static_cast<int32_t>(std::max_element(row, row + V) - row);
  }
  EXPECT_EQ(run(ses, {}, 5), argmax);
  EXPECT_EQ(ses.get<int32_t>("greedy"), argmax);
  EXPECT_EQ(run(ses, {.temperature = 1.0, .top_k = 1, .seed = 3}, 5), argmax);
  const std::vector<int32_t> hot = run(ses, {.temperature = 1.0, .seed = 3}, 5);
  EXPECT_NE(hot, argmax) << "sampling at temperature 1 drew the argmax in all 8 rows";
}

}  // namespace
}  // namespace luminal
