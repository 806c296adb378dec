// GPU suite (skips without a GPU): the row ops LLMs use, compiled for the CUDA backend and
// compared with the ReferenceRuntime (and, where the value is simple to state, with an exact
// computation in double on the host).
//
// Row ops (the row-kernel matrix): softmax, log-softmax (each also on masked rows: fully masked,
// one survivor, a 90% masked prefix, half masked at random), RMSNorm, layer norm and the row sum
// over row lengths 1, 31, 32, 33, 1000, 4096, 32768, a dynamic length (one program for n in
// [1, 32768], run at each of those lengths) and 131072 (too long to keep on chip: re-read, with
// softmax's max and sum in one online pass), in f32, f16 and bf16. Each case runs
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

#include "cuda/nn_check.hpp"

namespace luminal {
namespace {

using namespace testing::nn_check;

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

/// Longer than a row kernel keeps on chip: re-read from memory, softmax in the online form.
constexpr int64_t kStreamedRow = 131072;

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
    v.push_back({dt, kStreamedRow});
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

}  // namespace
}  // namespace luminal
