// Equivalence fuzz: for a graph, draw many distinct programs from its CPU search space (the first
// genome, random genomes and mutations, deduplicated by LLIR text) and check that every one of
// them, loaded and executed by the CPU backend, matches the ReferenceRuntime on the same inputs at
// several values of the dynamic dims. This is the test that keeps the rewrite set honest: any
// rule that adds a wrong alternative shows up as a program that disagrees with the oracle.
//
// Graphs: random graphs (tests/support/random_graph.hpp, one test per seed) and model blocks
// (SwiGLU MLP, RMSNorm + projection, GQA attention with a KV cache written by scatter and read
// back by gather). Model blocks must have at least 50 distinct programs, and all must match.
//
// Environment:
//   LUMINAL_FUZZ_SEEDS=n      random graphs to test (default 64; 32 under AddressSanitizer)
//   LUMINAL_FUZZ_SEED_BASE=n  first seed (default 0): LUMINAL_FUZZ_SEED_BASE=1000 explores others
//   LUMINAL_FUZZ_PROGRAMS=n   programs per random graph (default 50; the model blocks always 50)
//   LUMINAL_FUZZ_VERBOSE=1    prints one line per graph (space size, programs, time)
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/luminal.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/program/llir.hpp"
#include "luminal/runtime/host_buffer.hpp"
#include "support/llir_direct.hpp"
#include "support/random_graph.hpp"

namespace luminal {
namespace {

using testing::FuzzGraph;
using testing::FuzzInput;
using testing::FuzzOutput;

constexpr int kModelPrograms = 50;
constexpr int kMaxDraws = 2000;
// Spaces up to 10^4.5 genomes are enumerated when sampling finds too few programs.
constexpr double kMaxEnumerateLog10 = 4.5;

// Sanitizer builds run ~10x slower: fewer random graphs by default there (never fewer programs
// per model block).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kDefaultSeeds = 32;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int kDefaultSeeds = 32;
#else
constexpr int kDefaultSeeds = 64;
#endif
#else
constexpr int kDefaultSeeds = 64;
#endif

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

bool verbose() { return env_int("LUMINAL_FUZZ_VERBOSE", 0) != 0; }

using Buffers = std::map<std::string, HostBuffer, std::less<>>;

// ---------------------------------------------------------------- the oracle

/// Expected values of one output (doubles for floats, integers otherwise).
struct Expected {
  std::vector<double> f;
  std::vector<int64_t> i;
};

/// One run: dims, input data, and the reference's outputs.
struct Case {
  DynMap dyn;
  Buffers inputs;
  std::map<std::string, Expected, std::less<>> want;
};

std::string dyn_text(const DynMap& dyn) {
  std::string s;
  for (auto& [k, v] : dyn)
    s += (s.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  return s.empty() ? "static" : s;
}

std::vector<Case> reference_cases(const FuzzGraph& fg) {
  std::vector<Case> cases;
  for (size_t p = 0; p < fg.dyn_points.size(); ++p) {
    Case c;
    c.dyn = fg.dyn_points[p];
    ReferenceRuntime rt(fg.graph);
    for (size_t i = 0; i < fg.inputs.size(); ++i) {
      const FuzzInput& in = fg.inputs[i];
      HostBuffer b = testing::make_input_data(in, c.dyn, fg.seed * 1000003 + p * 7919 + i * 104729);
      rt.set_bytes(in.label, b.bytes.data(), b.bytes.size());
      c.inputs.emplace(in.label, std::move(b));
    }
    rt.execute(c.dyn);
    for (const FuzzOutput& o : fg.outputs) {
      Expected e;
      if (is_float(o.dtype)) {
        e.f = rt.get<double>(o.label);
        for (double v : e.f)
          if (!std::isfinite(v))
            throw Error("output '" + o.label + "' has a non-finite value at " + dyn_text(c.dyn));
      } else {
        e.i = rt.get<int64_t>(o.label);
      }
      c.want.emplace(o.label, std::move(e));
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// ---------------------------------------------------------------- comparing

/// What differs between `got` and `want` ("" when they match, at most a few elements shown);
/// `worst` gets the largest |got - want| / tolerance seen.
std::string compare(const FuzzOutput& o, const HostBuffer& got, const Expected& want,
                    double& worst) {
  std::ostringstream os;
  if (got.dtype != o.dtype) {
    os << "dtype " << name(got.dtype) << ", want " << name(o.dtype);
    return os.str();
  }
  const size_t n = is_float(o.dtype) ? want.f.size() : want.i.size();
  if (static_cast<size_t>(got.numel()) != n) {
    os << got.numel() << " elements, want " << n;
    return os.str();
  }
  const double eps = is_float(o.dtype) ? epsilon(o.dtype) : 0;
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    bool ok;
    double a = 0, b = 0, tol = 0;
    if (is_float(o.dtype)) {
      a = load_as_double(o.dtype, got.bytes.data(), static_cast<int64_t>(i));
      b = want.f[i];
      if (std::isnan(b)) {
        ok = std::isnan(a);
      } else if (std::isinf(b)) {
        ok = a == b;
      } else {
        tol = eps * (o.err + o.rtol_eps * std::fabs(b));
        ok = std::fabs(a - b) <= tol;  // false for a NaN
        if (tol > 0) worst = std::max(worst, std::fabs(a - b) / tol);
      }
    } else {
      a = static_cast<double>(load_as_int64(o.dtype, got.bytes.data(), static_cast<int64_t>(i)));
      b = static_cast<double>(want.i[i]);
      ok = a == b;
    }
    if (ok) continue;
    if (bad++ < 4) {
      os << (bad > 1 ? "; " : "") << "[" << i << "] got " << a << " want " << b;
      if (tol > 0) os << " (diff " << std::fabs(a - b) << " > tol " << tol << ")";
    }
  }
  if (bad == 0) return "";
  os << " -- " << bad << " of " << n << " elements differ";
  return os.str();
}

// ---------------------------------------------------------------- drawing programs

struct Program {
  std::string how;  // "first", "random", "mutation", "enumerated"
  Genome genome;
  LlirGraph llir;
  std::string text;
};

struct Draws {
  std::vector<Program> programs;
  int draws = 0;
  bool exhaustive = false;  // every genome was tried: the space holds no other program
  std::string error;
};

std::string genome_text(const Genome& g) {
  std::string s = "[";
  for (size_t i = 0; i < g.size(); ++i)
    s += (i ? "," : "") + std::to_string(g[i]);
  return s + "]";
}

/// Up to `want` programs with distinct LLIR text. Small spaces are enumerated; otherwise the
/// first genome, then random genomes and mutations of kept ones (at most kMaxDraws), then, when
/// that fell short and the space is small enough, every genome (several genomes often give one
/// program: a gene of a class that the other choices leave unreachable changes nothing).
Draws draw_programs(const SearchSpace& space, int want, uint64_t seed) {
  Draws d;
  std::unordered_set<std::string> seen;
  auto enough = [&] { return static_cast<int>(d.programs.size()) >= want; };
  auto consider = [&](const Genome& g, const char* how) {
    ++d.draws;
    LlirGraph l = to_llir(space, g);
    std::string t = l.to_text();
    if (!seen.insert(t).second) return;
    d.programs.push_back(Program{how, g, std::move(l), std::move(t)});
  };
  auto enumerate = [&] {
    const auto& sizes = space.gene_sizes();
    Genome g(sizes.size(), 0);
    for (;;) {
      consider(g, d.draws == 0 ? "first" : "enumerated");
      if (enough()) return;
      size_t i = 0;
      for (; i < g.size(); ++i) {
        if (++g[i] < sizes[i]) break;
        g[i] = 0;
      }
      if (i == g.size()) break;
    }
    d.exhaustive = true;
  };
  const double log10_size = space.log10_size();
  try {
    if (log10_size <= std::log10(2.0 * want)) {
      enumerate();
      return d;
    }
    Rng rng(seed * 0x2545F4914F6CDD1DULL + 99);
    consider(space.first_genome(), "first");
    while (!enough() && d.draws < kMaxDraws) {
      if (d.draws % 2 == 1) {
        consider(space.random_genome(rng), "random");
      } else {
        Genome g = d.programs[rng() % d.programs.size()].genome;
        space.mutate(g, 1 + static_cast<int>(rng() % 3), rng);
        consider(g, "mutation");
      }
    }
    if (!enough() && log10_size <= kMaxEnumerateLog10) enumerate();
  } catch (const std::exception& e) {
    d.error = e.what();
  }
  return d;
}

// ---------------------------------------------------------------- the check

struct CheckOptions {
  int programs = 50;
  bool require_programs = false;  // model blocks: the space must hold `programs` programs
  /// Every `multithread_every`-th program runs with 2 threads, the others with 1 (OpenMP on a
  /// busy machine makes every parallel region slow, and small kernels stay serial anyway).
  int multithread_every = 4;
  /// Compiles this graph instead of the oracle's (to check that the check catches a wrong
  /// program); same labels.
  const Graph* compiled = nullptr;
};

struct CheckResult {
  std::vector<std::string> errors;    // the check itself could not run as required
  std::vector<std::string> failures;  // one per program that disagrees with the reference
  int programs = 0;
  int draws = 0;
  bool exhaustive = false;
  double log10_size = 0;
  size_t genes = 0;
  double worst = 0;           // largest |got - want| / tolerance over every float output
  double loosest = 0;         // largest absolute tolerance / largest |want| of a float output
  int outputs_in_inputs = 0;  // outputs read from an input's buffer (in-place updates)
  std::map<std::string, int> programs_using;  // op name -> programs that use it
};

std::string context(const FuzzGraph& fg) {
  std::string s = "graph: " + fg.name + " (seed " + std::to_string(fg.seed) + ")\n";
  if (!fg.recipe.empty()) s += "recipe:\n" + fg.recipe;
  return s + "HLIR:\n" + fg.graph.to_text();
}

/// Runs one program on every case; "" when it matches the reference.
std::string run_program(cpu::CpuBackend& cpu, const Program& prog, const FuzzGraph& fg,
                        const std::vector<Case>& cases, CheckResult& r) {
  std::string problem;
  try {
    std::vector<DynMap> dyns;
    for (const Case& c : cases)
      dyns.push_back(c.dyn);
    testing::LoadedPlan exe = testing::load_plan(cpu, prog.llir, dyns);
    // Every case in turn, then the first again: a loaded program must follow the dims back.
    std::vector<const Case*> order;
    for (const Case& c : cases)
      order.push_back(&c);
    if (cases.size() > 1) order.push_back(&cases.front());
    for (const Case* cp : order) {
      const Case& c = *cp;
      testing::PlanRun run = testing::run_plan(exe, c.inputs, c.dyn);
      for (const FuzzOutput& o : fg.outputs) {
        const HostBuffer* got = &run.outputs.at(o.label);
        if (run.output_in_input.count(o.label)) ++r.outputs_in_inputs;
        std::string diff = compare(o, *got, c.want.at(o.label), r.worst);
        if (!diff.empty())
          problem += "output '" + o.label + "' at " + dyn_text(c.dyn) + ": " + diff + "\n";
      }
      // Inputs are written only where an output was placed in them (a carried state).
      for (const auto& [label, buf] : run.inputs) {
        bool holds_output = false;
        for (const auto& [o, i] : run.output_in_input)
          holds_output = holds_output || i == label;
        if (!holds_output && buf.bytes != c.inputs.at(label).bytes)
          problem += "input '" + label + "' was modified at " + dyn_text(c.dyn) + "\n";
      }
    }
  } catch (const std::exception& e) {
    problem += std::string("threw: ") + e.what() + "\n";
  }
  return problem;
}

CheckResult run_check(const FuzzGraph& fg, const CheckOptions& opt) {
  CheckResult r;
  std::vector<Case> cases;
  try {
    cases = reference_cases(fg);
  } catch (const std::exception& e) {
    r.errors.push_back(std::string("the reference failed (a generator bug): ") + e.what() + "\n" +
                       context(fg));
    return r;
  }
  for (const Case& c : cases) {
    for (const FuzzOutput& o : fg.outputs) {
      double m = 0;
      for (double v : c.want.at(o.label).f)
        m = std::max(m, std::fabs(v));
      if (m > 0) r.loosest = std::max(r.loosest, epsilon(o.dtype) * o.err / m);
    }
  }
  cpu::CpuBackend cpu(1), cpu2(2);
  BuiltSpace b;
  try {
    b = build_search_space(opt.compiled ? *opt.compiled : fg.graph, cpu, fg.graph.dim_facts());
  } catch (const std::exception& e) {
    r.errors.push_back(std::string("build_search_space threw: ") + e.what() + "\n" + context(fg));
    return r;
  }
  const SearchSpace& space = *b.space;
  r.log10_size = space.log10_size();
  r.genes = space.num_genes();

  Draws d = draw_programs(space, opt.programs, fg.seed);
  r.programs = static_cast<int>(d.programs.size());
  r.draws = d.draws;
  r.exhaustive = d.exhaustive;
  if (!d.error.empty()) r.errors.push_back("extracting a program threw: " + d.error);
  std::ostringstream space_text;
  space_text << "10^" << r.log10_size << " genomes (" << r.genes << " genes), " << r.programs
             << " distinct programs in " << d.draws << " draws"
             << (d.exhaustive ? " (every genome)" : "");
  if (r.programs < opt.programs) {
    if (opt.require_programs) {
      r.errors.push_back("the search space should hold at least " + std::to_string(opt.programs) +
                         " programs: " + space_text.str() + "\n" + context(fg));
    } else if (!d.exhaustive && r.log10_size >= std::log10(static_cast<double>(opt.programs))) {
      r.errors.push_back("the search space claims enough programs but sampling found too few: " +
                         space_text.str() + "\n" + context(fg));
    }
  }

  for (size_t p = 0; p < d.programs.size(); ++p) {
    const Program& prog = d.programs[p];
    for (const auto& [op, count] : prog.llir.op_mix())
      ++r.programs_using[op];
    const bool two = opt.multithread_every > 0 && p % opt.multithread_every == 0;
    std::string problem = run_program(two ? cpu2 : cpu, prog, fg, cases, r);
    if (!problem.empty()) problem = (two ? "(2 threads) " : "(1 thread) ") + problem;
    if (problem.empty()) continue;
    std::ostringstream os;
    os << "program " << p << " of " << r.programs << " (" << prog.how << ", genome "
       << genome_text(prog.genome) << "; " << prog.llir.op_mix_string()
       << ") disagrees with the reference:\n"
       << problem << context(fg) << "LLIR:\n"
       << prog.text;
    r.failures.push_back(os.str());
  }
  return r;
}

/// run_check, reported through gtest: every error, the first two failing programs in full.
void check_graph(const FuzzGraph& fg, const CheckOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  CheckResult r = run_check(fg, opt);
  for (const std::string& e : r.errors)
    ADD_FAILURE() << e;
  for (size_t i = 0; i < r.failures.size() && i < 2; ++i)
    ADD_FAILURE() << r.failures[i];
  EXPECT_EQ(r.failures.size(), 0u) << r.failures.size() << " of " << r.programs
                                   << " programs disagree with the reference (" << fg.name << ")";
  if (verbose()) {
    const double total_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "[fuzz] %-40s 10^%-5.2f genomes %3zu genes %3d programs %4d draws%s, %zu failing, "
        "worst err/tol %.3f, atol/max %.1e, %d in-place outputs, %.3fs\n",
        fg.name.c_str(), r.log10_size, r.genes, r.programs, r.draws, r.exhaustive ? " (all)" : "",
        r.failures.size(), r.worst, r.loosest, r.outputs_in_inputs, total_s);
    std::string ops;
    for (const auto& [op, count] : r.programs_using)
      ops += (ops.empty() ? "" : ", ") + op + " " + std::to_string(count);
    std::printf("[fuzz]   programs using each op: %s\n", ops.c_str());
  }
}

// ---------------------------------------------------------------- model blocks

/// Adds a float input with values uniform in [lo, hi].
Tensor model_input(FuzzGraph& fg, const std::string& label, const Shape& shape, DType dt, double lo,
                   double hi) {
  FuzzInput in;
  in.label = label;
  in.dtype = dt;
  in.shape = shape;
  in.lo = lo;
  in.hi = hi;
  fg.inputs.push_back(in);
  return fg.graph.tensor(label, testing::detail::dims_of(shape), dt);
}

/// Tolerance of a block output: C * sqrt(k) epsilons, absolute and relative.
FuzzOutput block_output(const Tensor& t, const std::string& label, double k, double c) {
  t.output(label);
  const double e = c * std::sqrt(k);
  return FuzzOutput{label, t.dtype(), e, e};
}

/// x @ w_gate, x @ w_up, silu(gate) * up, @ w_down.
FuzzGraph swiglu_block(DType dt) {
  FuzzGraph fg;
  fg.name = "SwiGLU MLP " + std::string(name(dt));
  fg.seed = 1001;
  fg.graph.declare_dim("s", 1, 8);
  const Expr s = Expr::var("s");
  const int64_t d = 16, h = 32;
  Tensor x = model_input(fg, "x", {s, d}, dt, -1, 1);
  Tensor wg = model_input(fg, "w_gate", {d, h}, dt, -0.5, 0.5);
  Tensor wu = model_input(fg, "w_up", {d, h}, dt, -0.5, 0.5);
  Tensor wd = model_input(fg, "w_down", {h, d}, dt, -0.5, 0.5);
  Tensor y = (x.matmul(wg).silu() * x.matmul(wu)).matmul(wd);
  fg.outputs.push_back(block_output(y, "y", h, dt == DType::F32 ? 16 : 4));
  fg.dyn_points = {{{"s", 1}}, {{"s", 3}}, {{"s", 6}}};
  return fg;
}

/// rms_norm(x, w) and its projection.
FuzzGraph rmsnorm_block() {
  FuzzGraph fg;
  fg.name = "RMSNorm + projection";
  fg.seed = 1002;
  fg.graph.declare_dim("s", 1, 8);
  const Expr s = Expr::var("s");
  const int64_t d = 32, n = 24;
  const DType dt = DType::F32;
  Tensor x = model_input(fg, "x", {s, d}, dt, -1, 1);
  Tensor w = model_input(fg, "w_norm", {d}, dt, 0.5, 1.5);
  Tensor wp = model_input(fg, "w_proj", {d, n}, dt, -0.5, 0.5);
  Tensor normed = x.rms_norm(w, 1e-5);
  Tensor y = normed.matmul(wp);
  fg.outputs.push_back(block_output(normed, "normed", d, 16));
  fg.outputs.push_back(block_output(y, "y", d, 16));
  fg.dyn_points = {{{"s", 1}}, {{"s", 2}}, {{"s", 7}}};
  return fg;
}

/// Rotates the halves of the last axis of t [s, heads, hd] by the angles (cos/sin [s, 1, hd/2]).
Tensor rope(const Tensor& t, const Tensor& cos, const Tensor& sin, int64_t hd) {
  Tensor x1 = t.slice(-1, 0, hd / 2), x2 = t.slice(-1, hd / 2);
  return concat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
}

/// GQA attention (4 query heads, 2 kv heads, head_dim 8) over a KV cache of 16 slots: the new
/// tokens' K/V are scattered into the caches at `pos` (carried, so the scatter may run in
/// place), the first `c` slots are gathered back, causal mask, softmax, output projection.
FuzzGraph attention_block(bool with_rope) {
  FuzzGraph fg;
  fg.name = with_rope ? "GQA attention + KV cache + RoPE" : "GQA attention + KV cache";
  fg.seed = with_rope ? 1004 : 1003;
  Graph& g = fg.graph;
  g.declare_dim("s", 1, 4);
  g.declare_dim("c", 1, 16);
  const Expr s = Expr::var("s"), c = Expr::var("c");
  const int64_t heads = 4, kv_heads = 2, hd = 8, hidden = heads * hd, kv_dim = kv_heads * hd;
  const int64_t slots = 16;
  const DType dt = DType::F32;
  Tensor x = model_input(fg, "x", {s, hidden}, dt, -1, 1);
  Tensor wq = model_input(fg, "wq", {hidden, hidden}, dt, -0.5, 0.5);
  Tensor wk = model_input(fg, "wk", {hidden, kv_dim}, dt, -0.5, 0.5);
  Tensor wv = model_input(fg, "wv", {hidden, kv_dim}, dt, -0.5, 0.5);
  Tensor wo = model_input(fg, "wo", {hidden, hidden}, dt, -0.5, 0.5);
  Tensor k_cache = model_input(fg, "k_cache", {slots, kv_dim}, dt, -1, 1).persist();
  Tensor v_cache = model_input(fg, "v_cache", {slots, kv_dim}, dt, -1, 1).persist();
  FuzzInput pos_in;
  pos_in.label = "pos";
  pos_in.dtype = DType::I32;
  pos_in.shape = {s};
  pos_in.fill = [](const DynMap& dyn, int64_t n, std::mt19937_64&) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = static_cast<double>(dyn.at("c") - dyn.at("s") + i);
    return v;
  };
  fg.inputs.push_back(pos_in);
  Tensor pos = g.tensor("pos", {s}, DType::I32);

  Tensor q = x.matmul(wq).reshape({s, heads, hd});
  Tensor k_new = x.matmul(wk);
  Tensor v_new = x.matmul(wv);
  if (with_rope) {
    Tensor inv_freq = (g.arange(hd / 2, 0.0, 1.0, dt) * (-std::log(10000.0) / (hd / 2))).exp();
    Tensor angle = pos.cast(dt).unsqueeze(1) * inv_freq;  // [s, hd/2]
    Tensor cos = angle.cos().unsqueeze(1), sin = angle.sin().unsqueeze(1);
    q = rope(q, cos, sin, hd);
    k_new = rope(k_new.reshape({s, kv_heads, hd}), cos, sin, hd).reshape({s, kv_dim});
  }
  Tensor rows = pos.unsqueeze(1).expand({s, kv_dim});
  Tensor k_all = k_cache.scatter_elements(0, rows, k_new);
  Tensor v_all = v_cache.scatter_elements(0, rows, v_new);
  Tensor k_out = k_all.output("k_cache_out");
  Tensor v_out = v_all.output("v_cache_out");
  g.carry(k_out, k_cache);
  g.carry(v_out, v_cache);

  Tensor ctx = g.arange(c);
  Tensor k = k_all.index_select(0, ctx).reshape({c, kv_heads, hd}).permute({1, 0, 2}).unsqueeze(1);
  Tensor v = v_all.index_select(0, ctx).reshape({c, kv_heads, hd}).permute({1, 0, 2}).unsqueeze(1);
  Tensor qh = q.permute({1, 0, 2}).reshape({kv_heads, heads / kv_heads, s, hd});
  Tensor scores = qh.matmul(k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(hd)));
  Tensor mask = ctx.unsqueeze(0).gt(pos.unsqueeze(1));  // key after the query's position
  Tensor probs = scores.masked_fill(mask, -std::numeric_limits<double>::infinity()).softmax(-1);
  Tensor attn = probs.matmul(v).reshape({heads, s, hd}).permute({1, 0, 2}).reshape({s, hidden});
  Tensor y = attn.matmul(wo);

  const double k_all_tol = 16 * std::sqrt(static_cast<double>(hidden));
  fg.outputs.push_back(FuzzOutput{"k_cache_out", dt, k_all_tol, k_all_tol});
  fg.outputs.push_back(FuzzOutput{"v_cache_out", dt, k_all_tol, k_all_tol});
  fg.outputs.push_back(block_output(y, "y", static_cast<double>(hidden * slots), 16));
  fg.dyn_points = {{{"c", 5}, {"s", 1}}, {{"c", 8}, {"s", 3}}, {{"c", 16}, {"s", 4}}};
  return fg;
}

CheckOptions model_options() {
  CheckOptions o;
  o.programs = kModelPrograms;
  o.require_programs = true;
  return o;
}

/// y = tanh(x @ w) + x and k = sum(i * j, -1); `wrong` scales y by 1 + 1e-4 and adds 1 to k.
FuzzGraph sentinel_graph(bool wrong) {
  FuzzGraph fg;
  fg.name = wrong ? "sentinel (wrong)" : "sentinel";
  fg.seed = 7;
  fg.graph.declare_dim("s", 1, 8);
  const Expr s = Expr::var("s");
  Tensor x = model_input(fg, "x", {s, 8}, DType::F32, -1, 1);
  Tensor w = model_input(fg, "w", {8, 8}, DType::F32, -0.5, 0.5);
  Tensor i = model_input(fg, "i", {s, 4}, DType::I32, -4, 4);
  Tensor j = model_input(fg, "j", {s, 4}, DType::I32, -4, 4);
  Tensor y = x.matmul(w).tanh() + x;
  Tensor k = (i * j).sum(-1);
  if (wrong) {
    y = y * 1.0001;
    k = k + 1;
  }
  fg.outputs.push_back(block_output(y, "y", 8, 16));
  k.output("k");
  fg.outputs.push_back(FuzzOutput{"k", DType::I32, 0, 0});
  fg.dyn_points = {{{"s", 2}}, {{"s", 5}}};
  return fg;
}

// The check itself: programs of a slightly different graph must all be reported, on both the
// float output (a 1e-4 relative error) and the integer one (off by one).
TEST(EquivalenceFuzz, CatchesWrongPrograms) {
  FuzzGraph oracle = sentinel_graph(false);
  FuzzGraph wrong = sentinel_graph(true);
  CheckOptions o;
  o.programs = 10;
  o.compiled = &wrong.graph;
  CheckResult r = run_check(oracle, o);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  ASSERT_GT(r.programs, 1);
  EXPECT_EQ(r.failures.size(), static_cast<size_t>(r.programs));
  for (const std::string& f : r.failures) {
    EXPECT_NE(f.find("output 'y'"), std::string::npos) << f;
    EXPECT_NE(f.find("output 'k'"), std::string::npos) << f;
  }
  // ... and the right graph passes.
  o.compiled = nullptr;
  CheckResult ok = run_check(oracle, o);
  EXPECT_TRUE(ok.errors.empty() && ok.failures.empty())
      << (ok.errors.empty() ? ok.failures[0] : ok.errors[0]);
}

TEST(EquivalenceFuzz, SwiGluMlpF32) { check_graph(swiglu_block(DType::F32), model_options()); }
TEST(EquivalenceFuzz, SwiGluMlpF16) { check_graph(swiglu_block(DType::F16), model_options()); }
TEST(EquivalenceFuzz, RmsNormProjection) { check_graph(rmsnorm_block(), model_options()); }
TEST(EquivalenceFuzz, GqaAttentionKvCache) { check_graph(attention_block(false), model_options()); }
TEST(EquivalenceFuzz, GqaAttentionKvCacheRope) {
  check_graph(attention_block(true), model_options());
}

// ---------------------------------------------------------------- random graphs

class RandomGraphs : public ::testing::TestWithParam<int> {};

TEST_P(RandomGraphs, MatchReference) {
  const uint64_t seed = static_cast<uint64_t>(env_int("LUMINAL_FUZZ_SEED_BASE", 0)) +
                        static_cast<uint64_t>(GetParam());
  FuzzGraph fg = testing::random_graph(seed);
  CheckOptions o;
  o.programs = env_int("LUMINAL_FUZZ_PROGRAMS", 50);
  check_graph(fg, o);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomGraphs,
                         ::testing::Range(0, env_int("LUMINAL_FUZZ_SEEDS", kDefaultSeeds)));

}  // namespace
}  // namespace luminal
