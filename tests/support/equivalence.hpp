#pragma once
// Equivalence fuzzing: for a graph, draw many distinct programs from its search space on a
// backend (the first genome, random genomes and mutations, deduplicated by LLIR text) and check
// that every one of them, loaded and executed by that backend, matches the ReferenceRuntime on
// the same inputs at several values of the dynamic dims. This is the check that keeps a backend's
// rewrite set honest: any rule that adds a wrong alternative shows up as a program that disagrees
// with the oracle.
//
//   cpu::CpuBackend cpu(1), cpu2(2);
//   CheckOptions o;
//   o.backend = &cpu;    // every program runs here (and the search space is built for it)
//   o.backend2 = &cpu2;  // ... except every o.multithread_every-th one, which runs here
//   check_graph(random_graph(seed), o);  // gtest failures for every disagreeing program
//
// Graphs come from tests/support/random_graph.hpp (random_graph(seed)) or
// tests/support/model_blocks.hpp (SwiGLU MLP, RMSNorm + projection, GQA attention with a KV
// cache). Each output is compared within its FuzzOutput's error bound (times
// CheckOptions::tol_scale); integer outputs exactly. Inputs must come back unmodified unless an
// output was placed in them (a carried state updated in place).
//
// Environment (the tests read the first three; check_graph reads the last):
//   LUMINAL_FUZZ_SEEDS=n      random graphs to test (default kDefaultSeeds: 64; 32 under ASan)
//   LUMINAL_FUZZ_SEED_BASE=n  first seed (default 0): LUMINAL_FUZZ_SEED_BASE=1000 explores others
//   LUMINAL_FUZZ_PROGRAMS=n   programs per random graph (default 50; the model blocks always 50)
//   LUMINAL_FUZZ_VERBOSE=1    prints one line per graph (space size, programs, time)
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "luminal/compiler/build_space.hpp"
#include "luminal/compiler/fold.hpp"
#include "luminal/luminal.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/program/llir.hpp"
#include "luminal/runtime/host_buffer.hpp"
#include "support/llir_direct.hpp"
#include "support/random_graph.hpp"
#include "support/sanitizer.hpp"

namespace luminal::testing {

/// Most genomes draw_programs tries before falling back to enumeration (or giving up).
inline constexpr int kMaxDraws = 2000;
/// Spaces up to 10^4.5 genomes are enumerated when sampling finds too few programs.
inline constexpr double kMaxEnumerateLog10 = 4.5;

// Sanitizer builds run ~10x slower: fewer random graphs by default there (never fewer programs
// per model block).
inline constexpr int kDefaultSeeds = kSanitizerBuild ? 32 : 64;

/// The integer value of environment variable `name`, or `fallback` when unset or empty.
inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

/// LUMINAL_FUZZ_VERBOSE is set (and not 0).
inline bool verbose() { return env_int("LUMINAL_FUZZ_VERBOSE", 0) != 0; }

// ---------------------------------------------------------------- the oracle

/// Expected values of one output (doubles for floats, integers otherwise).
struct Expected {
  std::vector<double> f;
  std::vector<int64_t> i;
};

/// One run: dims, input data, and the reference's outputs.
struct Case {
  DynMap dyn;
  BufferMap inputs;
  std::map<std::string, Expected, std::less<>> want;
};

/// "s=3, c=8", or "static".
inline std::string dyn_text(const DynMap& dyn) {
  std::string s;
  for (auto& [k, v] : dyn)
    s += (s.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  return s.empty() ? "static" : s;
}

/// One case per dyn point of `fg`: seeded inputs and the ReferenceRuntime's outputs. Throws when
/// a float output is not finite (a generator bug).
inline std::vector<Case> reference_cases(const FuzzGraph& fg) {
  std::vector<Case> cases;
  for (size_t p = 0; p < fg.dyn_points.size(); ++p) {
    Case c;
    c.dyn = fg.dyn_points[p];
    ReferenceRuntime rt(fg.graph);
    for (size_t i = 0; i < fg.inputs.size(); ++i) {
      const FuzzInput& in = fg.inputs[i];
      HostBuffer b = make_input_data(in, c.dyn, fg.seed * 1000003 + p * 7919 + i * 104729);
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
/// `worst` gets the largest |got - want| / tolerance seen. A float output's tolerance is
/// epsilon * (o.err + o.rtol_eps * |want|) * tol_scale; integers must match exactly.
inline std::string compare(const FuzzOutput& o, const HostBuffer& got, const Expected& want,
                           double& worst, double tol_scale = 1) {
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
  const double eps = is_float(o.dtype) ? epsilon(o.dtype) * tol_scale : 0;
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

/// "[0,2,1]".
inline std::string genome_text(const Genome& g) {
  std::string s = "[";
  for (size_t i = 0; i < g.size(); ++i)
    s += (i ? "," : "") + std::to_string(g[i]);
  return s + "]";
}

/// Up to `want` programs with distinct LLIR text. Small spaces are enumerated; otherwise the
/// first genome, then random genomes and mutations of kept ones (at most kMaxDraws), then, when
/// that fell short and the space is small enough, every genome (several genomes often give one
/// program: a gene of a class that the other choices leave unreachable changes nothing).
inline Draws draw_programs(const SearchSpace& space, int want, uint64_t seed) {
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
    // The search's second seed (fused kernels, row kernels, in-place writes wherever possible).
    if (!enough()) consider(space.fewest_kernels_genome(), "fewest kernels");
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
  /// The backend every program runs on; the search space is built for it. Required.
  Backend* backend = nullptr;
  /// The backend every `multithread_every`-th program runs on instead (the CPU tests: the same
  /// backend with 2 threads); null: always `backend`. Its programs come from `backend`'s space.
  Backend* backend2 = nullptr;
  /// Names of the two in failure messages: "(backend 1) output 'y' at s=3: ...".
  std::string label = "backend 1";
  std::string label2 = "backend 2";
  int programs = 50;
  bool require_programs = false;  // model blocks: the space must hold `programs` programs
  /// Every `multithread_every`-th program (0, n, 2n, ...) runs on `backend2`, the others on
  /// `backend` (on the CPU: OpenMP on a busy machine makes every parallel region slow, and small
  /// kernels stay serial anyway). <= 0: none.
  int multithread_every = 4;
  /// Multiplies every float output's tolerance (a GPU's exp2f/sinf differ from glibc by an ulp
  /// or two).
  double tol_scale = 1;
  /// Compiles this graph instead of the oracle's (to check that the check catches a wrong
  /// program); same labels.
  const Graph* compiled = nullptr;
  /// Load-time folding (compiler/fold.hpp): every input of static shape is marked persistent
  /// (a weight), every weight-only value of any size is offered as a fold, and a program reading
  /// folds gets them from their fold programs, run on the same backend and inputs first.
  bool fold = false;
  /// Named program features, counted in CheckResult::programs_using beside op names (a test
  /// asserts that the draws hold programs with a rewrite it adds).
  std::vector<std::pair<std::string, std::function<bool(const LlirGraph&)>>> features;
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

/// The graph's name, seed, recipe and HLIR, for failure messages.
inline std::string fuzz_context(const FuzzGraph& fg) {
  std::string s = "graph: " + fg.name + " (seed " + std::to_string(fg.seed) + ")\n";
  if (!fg.recipe.empty()) s += "recipe:\n" + fg.recipe;
  return s + "HLIR:\n" + fg.graph.to_text();
}

/// Loads one program on `backend` for every case's dims and runs it on every case (then the
/// first again); "" when it matches the reference, else one line per problem.
inline std::string run_program(Backend& backend, const Program& prog, const FuzzGraph& fg,
                               const std::vector<Case>& cases, CheckResult& r,
                               double tol_scale = 1) {
  std::string problem;
  try {
    std::vector<DynMap> dyns;
    for (const Case& c : cases)
      dyns.push_back(c.dyn);
    LoadedPlan exe = load_plan(backend, prog.llir, dyns);
    // Every case in turn, then the first again: a loaded program must follow the dims back.
    std::vector<const Case*> order;
    for (const Case& c : cases)
      order.push_back(&c);
    if (cases.size() > 1) order.push_back(&cases.front());
    for (const Case* cp : order) {
      const Case& c = *cp;
      PlanRun run = run_plan(exe, c.inputs, c.dyn);
      for (const FuzzOutput& o : fg.outputs) {
        const HostBuffer* got = &run.outputs.at(o.label);
        if (run.output_in_input.count(o.label)) ++r.outputs_in_inputs;
        std::string diff = compare(o, *got, c.want.at(o.label), r.worst, tol_scale);
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

/// Builds `fg`'s search space on opt.backend, draws opt.programs distinct programs and runs each
/// against the reference. Problems with the check itself (no backend, the reference or the
/// search failing, too few programs) go to `errors`; disagreeing programs to `failures`.
inline CheckResult run_check(const FuzzGraph& fg, const CheckOptions& opt) {
  CheckResult r;
  if (!opt.backend) {
    r.errors.push_back("CheckOptions::backend is not set");
    return r;
  }
  std::vector<Case> cases;
  try {
    cases = reference_cases(fg);
  } catch (const std::exception& e) {
    r.errors.push_back(std::string("the reference failed (a generator bug): ") + e.what() + "\n" +
                       fuzz_context(fg));
    return r;
  }
  for (const Case& c : cases) {
    for (const FuzzOutput& o : fg.outputs) {
      double m = 0;
      for (double v : c.want.at(o.label).f)
        m = std::max(m, std::fabs(v));
      if (m > 0) r.loosest = std::max(r.loosest, epsilon(o.dtype) * o.err * opt.tol_scale / m);
    }
  }
  BuiltSpace b;
  FoldOptions fold;
  if (opt.fold) {
    fold.on = true;
    fold.min_bytes = 0;
    fold.limit = UINT64_MAX;
    Graph g = opt.compiled ? *opt.compiled : fg.graph;  // a handle: marks the graph's own inputs
    for (NodeId id : g.inputs()) {
      Node& n = g.mutable_node(id);
      bool fixed = true;
      for (const Expr& d : n.shape)
        fixed = fixed && d.is_const();
      if (fixed) n.persist = true;
    }
  }
  try {
    b = build_search_space(opt.compiled ? *opt.compiled : fg.graph, *opt.backend,
                           fg.graph.dim_facts(), {}, fold);
  } catch (const std::exception& e) {
    r.errors.push_back(std::string("build_search_space threw: ") + e.what() + "\n" +
                       fuzz_context(fg));
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
                         " programs: " + space_text.str() + "\n" + fuzz_context(fg));
    } else if (!d.exhaustive && r.log10_size >= std::log10(static_cast<double>(opt.programs))) {
      r.errors.push_back("the search space claims enough programs but sampling found too few: " +
                         space_text.str() + "\n" + fuzz_context(fg));
    }
  }

  std::optional<FoldResolver> resolver;
  if (opt.fold) resolver.emplace(space, b.folds);
  for (size_t p = 0; p < d.programs.size(); ++p) {
    const Program& prog = d.programs[p];
    for (const auto& [op, count] : prog.llir.op_mix())
      ++r.programs_using[op];
    for (const auto& [feature, has] : opt.features)
      if (has(prog.llir)) ++r.programs_using[feature];
    // Without a backend2, every program runs on `backend` (and is labelled so).
    const bool two = opt.backend2 && opt.multithread_every > 0 && p % opt.multithread_every == 0;
    Backend& be = two ? *opt.backend2 : *opt.backend;
    // Folded values, from their fold programs on the same inputs.
    std::vector<Case> folded;
    std::string problem;
    const std::vector<std::string> folds =
        resolver ? FoldResolver::placeholders(prog.llir) : std::vector<std::string>{};
    if (!folds.empty()) {
      ++r.programs_using["(load-time fold)"];
      folded = cases;
      try {
        for (const std::string& ph : folds) {
          const FoldProgram& fp = resolver->program(ph);
          LoadedPlan lp = load_plan(be, fp.llir);
          for (Case& c : folded)
            c.inputs[ph] = run_plan(lp, c.inputs, {}).outputs.at(fp.label);
        }
      } catch (const std::exception& e) {
        problem = std::string("a fold program threw: ") + e.what() + "\n";
      }
    }
    if (problem.empty())
      problem = run_program(be, prog, fg, folds.empty() ? cases : folded, r, opt.tol_scale);
    if (problem.empty()) continue;
    std::ostringstream os;
    os << "program " << p << " of " << r.programs << " (" << prog.how << ", genome "
       << genome_text(prog.genome) << "; " << prog.llir.op_mix_string()
       << ") disagrees with the reference:\n"
       << "(" << (two ? opt.label2 : opt.label) << ") " << problem << fuzz_context(fg) << "LLIR:\n"
       << prog.text;
    r.failures.push_back(os.str());
  }
  return r;
}

/// run_check, reported through gtest: every error, the first two failing programs in full; with
/// LUMINAL_FUZZ_VERBOSE, a summary line per graph. Returns the result (programs_using, for a
/// test that asserts what the draws held).
inline CheckResult check_graph(const FuzzGraph& fg, const CheckOptions& opt) {
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
  return r;
}

}  // namespace luminal::testing
