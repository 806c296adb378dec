#include "luminal/compiler/search.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_set>

#include "luminal/compiler/fold_repair.hpp"
#include "luminal/core/error.hpp"
#include "luminal/program/fold.hpp"

namespace luminal {

namespace {

using Clock = std::chrono::steady_clock;

// Backend::set_give_up for one candidate's timing, cleared when it ends (or throws).
class GiveUp {
 public:
  GiveUp(Backend& b, double seconds) : b_(b) { b_.set_give_up(seconds); }
  ~GiveUp() { b_.set_give_up(0); }
  GiveUp(const GiveUp&) = delete;
  GiveUp& operator=(const GiveUp&) = delete;

 private:
  Backend& b_;
};

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string fmt_time(double s) {
  char buf[32];
  if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else if (s < 1)
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

// A progress bar on a terminal, plain lines otherwise.
class Progress {
 public:
  Progress(bool enabled, int total, std::string bucket)
      : enabled_(enabled), tty_(isatty(2)), total_(total), bucket_(std::move(bucket)) {}
  void update(int done, int rejected, double best, bool force_line) {
    if (!enabled_) return;
    if (tty_) {
      const int width = 30;
      int fill = total_ > 0 ? std::min(width, done * width / total_) : width;
      std::fprintf(stderr, "\rsearch%s [%s%s] %d/%d  best %s  rejected %d ",
                   bucket_.empty() ? "" : (" " + bucket_).c_str(), std::string(fill, '#').c_str(),
                   std::string(width - fill, '.').c_str(), done, total_,
                   best > 0 ? fmt_time(best).c_str() : "-", rejected);
      std::fflush(stderr);
    } else if (force_line) {
      std::fprintf(stderr, "search%s: %d/%d candidates, best %s, rejected %d\n",
                   bucket_.empty() ? "" : (" " + bucket_).c_str(), done, total_,
                   best > 0 ? fmt_time(best).c_str() : "-", rejected);
    }
  }
  void finish() {
    if (enabled_ && tty_) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_, tty_;
  int total_;
  std::string bucket_;
};

}  // namespace

std::string SearchReport::to_string() const {
  std::ostringstream os;
  os << "search report" << (bucket.empty() ? "" : " for " + bucket) << "\n";
  if (cached) {
    os << "  loaded from the compile cache, no search: " << cache_note << "\n";
    os << "  best:       " << fmt_time(best_seconds) << " (when it was searched)\n";
    return os.str();
  }
  os << "  graph:      " << hlir_nodes << " HLIR nodes -> " << enodes << " e-nodes in " << eclasses
     << " e-classes; " << genes << " genes (10^" << static_cast<int>(log10_space) << " programs)\n";
  os << "  candidates: " << candidates << " tried, " << rejected << " rejected";
  if (!first_rejection.empty()) os << " (first: " << first_rejection << ")";
  os << "; stopped: " << stop << "\n";
  if (!seed_rejection.empty())
    os << "  seed:       the fewest-kernels program was rejected: " << seed_rejection << "\n";
  if (!seed_repair.empty())
    os << "  repair:     the nearest program that " << (seed_rejection.empty() ? "fits" : "ran")
       << ": " << seed_repair << "\n";
  os << "  best:       " << fmt_time(best_seconds) << " (first valid candidate "
     << fmt_time(first_seconds);
  if (seed_seconds > 0) os << ", the fewest-kernels seed " << fmt_time(seed_seconds);
  os << ")\n";
  if (!finalists.empty()) os << "  finalists:  " << finalists << "\n";
  if (over_fold_limit > 0) {
    os << "  folds:      " << over_fold_limit << " candidates' load-time folds passed fold_limit";
    if (fold_growth > 0)
      os << "; none fitted, so the best adds " << fold_growth
         << " bytes (fewest of those over the limit)";
    os << "\n";
  }
  os << "  op mix:     ";
  std::vector<std::pair<std::string, int>> mix(best_op_mix.begin(), best_op_mix.end());
  std::stable_sort(mix.begin(), mix.end(), [](auto& a, auto& b) { return a.second > b.second; });
  for (size_t i = 0; i < mix.size(); ++i)
    os << (i ? ", " : "") << mix[i].second << " " << mix[i].first;
  os << "\n";
  os << "  time:       lower " << fmt_time(lower_s) << ", saturate " << fmt_time(saturate_s)
     << ", prune " << fmt_time(prune_s) << ", extract " << fmt_time(extract_s) << ", compile "
     << fmt_time(compile_s) << ", profile " << fmt_time(profile_s) << "\n";
  return os.str();
}

SearchResult search(const SearchSpace& space, Backend& backend, const CompileOptions& opts,
                    const PlanSpec& spec, const std::vector<int64_t>& dims, const ProfileData& data,
                    SearchReport report,
                    const std::function<void(const std::string&, const std::string&)>& trace,
                    const FoldSpace* folds) {
  const auto start = Clock::now();
  Rng rng(opts.seed());
  SearchResult best;
  bool have_best = false;
  // The best candidate over fold_limit: fewest added bytes, then fastest.
  struct OverLimit {
    int64_t growth;
    double seconds;
    Genome genome;
    LlirGraph llir;
    std::unique_ptr<Plan> plan;
  };
  std::optional<OverLimit> over_best;
  constexpr double kOverLimitRank = 1e6;  // seconds added to their rank
  struct Ranked {
    double seconds;
    Genome genome;
    int candidate;  // its number (1 = the first tried)
  };
  std::vector<Ranked> ranked;  // valid candidates, fastest first
  int best_candidate = 0;
  std::set<Genome> seen;  // exact genomes
  Progress progress(opts.verbose(), opts.search_graph_limit(), report.bucket);
  report.genes = space.num_genes();
  report.log10_space = space.log10_size();

  auto out_of_time = [&] { return opts.time_budget() && since(start) >= *opts.time_budget(); };
  auto limit_hit = [&] { return report.candidates >= opts.search_graph_limit(); };

  // One scratch arena for every candidate, grown as needed.
  struct ScratchArena {
    Backend& backend;
    Buffer buf;
    void reserve(uint64_t bytes) {
      if (buf && buf.bytes >= bytes) return;
      if (buf) backend.release(buf);
      buf = Buffer{};
      buf = backend.allocate(bytes);
    }
    ~ScratchArena() {
      if (buf) backend.release(buf);
    }
  } arena{backend, {}};
  // Folded values are computed for the timing from the profiling data's weights (run_fold):
  // the time may not depend on them, but what a program indexes can (a MoE router's tie-break
  // comparison decides its expert ids), and a candidate reading zeros there read ids past the
  // last expert and was rejected.
  std::optional<FoldResolver> resolver;
  if (folds && !folds->leaves.empty()) resolver.emplace(space, *folds);
  struct FoldScratch {
    Backend& backend;
    const ProfileData& data;
    std::map<std::string, Buffer, std::less<>> bufs;
    Buffer get(const std::string& label, const FoldProgram& fold) {
      auto it = bufs.find(label);
      if (it != bufs.end()) return it->second;
      Buffer b = backend.allocate(fold.bytes);
      try {
        run_fold(backend, fold, b,
                 {.input =
                      [&](const std::string& l) {
                        auto in = data.inputs.find(l);
                        if (in == data.inputs.end())
                          throw Error("search: no profiling data for input '" + l + "' of fold " +
                                      fold.label);
                        return in->second;
                      },
                  .allocate = [&](uint64_t bytes) { return backend.allocate(bytes); },
                  .release = [&](Buffer a) { backend.release(a); },
                  .queue = nullptr});
      } catch (...) {
        backend.release(b);
        throw;
      }
      return bufs[label] = b;
    }
    ~FoldScratch() {
      for (auto& [l, b] : bufs)
        backend.release(b);
    }
  } fold_scratch{backend, data, {}};
  // What a candidate's folds add to the session's memory: every fold chosen so far (this
  // bucket's and earlier ones') minus the weights that only folds read. `small_constants`: the
  // part of it that constants under fold_min_bytes add (folds that read no input, compiler/
  // fold.hpp), which fold_limit does not count.
  auto fold_growth = [&](const LlirGraph& llir, int64_t* small_constants = nullptr) -> int64_t {
    std::map<std::string, const std::vector<std::string>*, std::less<>> all;
    uint64_t bytes = 0, small = 0;
    auto add = [&](const std::string& label, const std::vector<std::string>& inputs, uint64_t b) {
      if (!all.emplace(label, &inputs).second) return;
      bytes += b;
      if (inputs.empty() && b < opts.fold_min_bytes()) small += b;
    };
    for (const auto& [label, f] : data.earlier_folds)
      add(label, f.inputs, f.bytes);
    if (resolver)
      for (const std::string& p : FoldResolver::placeholders(llir)) {
        const FoldProgram& fp = resolver->program(p);
        add(fp.label, fp.inputs, fp.bytes);
      }
    if (small_constants) *small_constants = static_cast<int64_t>(small);
    if (all.empty()) return 0;
    std::set<std::string, std::less<>> read(data.earlier_step_inputs);
    for (const LlirNode& n : llir.nodes)
      if (is_op(n.op, OpKind::Input) && !is_fold_label(n.attrs.label)) read.insert(n.attrs.label);
    std::set<std::string, std::less<>> released;
    uint64_t freed = 0;
    for (const auto& [label, inputs] : all)
      for (const std::string& in : *inputs)
        if (!read.count(in) && released.insert(in).second) {
          auto it = data.inputs.find(in);
          if (it != data.inputs.end()) freed += it->second.bytes;
        }
    return static_cast<int64_t>(bytes) - static_cast<int64_t>(freed);
  };
  auto bindings = [&](const Plan& plan) {
    Bindings b;
    for (const std::string& l : plan.io().inputs) {
      if (resolver && is_fold_label(l)) {
        b.inputs.push_back(fold_scratch.get(l, resolver->program(l)));
        continue;
      }
      auto it = data.inputs.find(l);
      if (it == data.inputs.end()) throw Error("search: no profiling data for input '" + l + "'");
      b.inputs.push_back(it->second);
    }
    for (const std::string& l : plan.io().outputs) {
      auto it = data.outputs.find(l);
      if (it == data.outputs.end())
        throw Error("search: no profiling buffer for output '" + l + "'");
      b.outputs.push_back(it->second);
    }
    b.arena = arena.buf;
    return b;
  };

  // Returns false when the genome, or the program it extracts, was seen before (genes of classes
  // that other choices leave unreachable change the genome but not the program).
  std::unordered_set<std::string> programs;  // exact texts: no hash collisions
  constexpr double kGiveUp = 2.5, kGiveUpFloor = 0.1;
  // `seed`: the fewest-kernels seed, whose rejection the report names (without it the search
  // starts from random programs, and a small candidate limit keeps one of those).
  bool seed_over = false;  // the seed's folds passed fold_limit
  auto try_genome = [&](const Genome& g, bool seed = false) {
    if (!seen.insert(g).second) return false;
    auto t0 = Clock::now();
    LlirGraph llir = to_llir(space, g);
    bool fresh = programs.insert(llir.to_text()).second;
    report.extract_s += since(t0);
    if (!fresh) return false;
    ++report.candidates;
    try {
      t0 = Clock::now();
      std::unique_ptr<Plan> plan = backend.load(llir, spec);
      double load_s = since(t0);
      report.compile_s += load_s;
      if (load_s > opts.candidate_timeout()) {
        throw Error("loading took " + fmt_time(load_s) + ", over the candidate timeout of " +
                    fmt_time(opts.candidate_timeout()));
      }
      const uint64_t working = plan->arena_bytes() + plan->workspace_bytes();
      int64_t small_constants = 0;
      const int64_t growth = fold_growth(llir, &small_constants);
      // Over fold_limit: timed and kept aside, chosen only when no candidate fits (below).
      const bool over = growth - small_constants > static_cast<int64_t>(opts.fold_limit());
      const int64_t need_signed = static_cast<int64_t>(data.fixed_bytes + working) + growth;
      const uint64_t need = need_signed > 0 ? static_cast<uint64_t>(need_signed) : 0;
      if (opts.max_memory() && need > *opts.max_memory()) {
        throw Error("needs " + std::to_string(need >> 20) + " MiB (" + std::to_string(need) +
                    " bytes: " + std::to_string(data.fixed_bytes) + " in the session's buffers, " +
                    std::to_string(working) + " of working memory" +
                    (growth != 0 ? ", " + std::to_string(growth) + " added by load-time folds"
                                 : std::string()) +
                    ") but max_memory is " + std::to_string(*opts.max_memory() >> 20) + " MiB (" +
                    std::to_string(*opts.max_memory()) + " bytes)");
      }
      arena.reserve(plan->arena_bytes());
      plan->bind(0, bindings(*plan));
      t0 = Clock::now();
      // A warm-up over kGiveUp times the best so far ends the timing: the candidate cannot win,
      // and the slow programs of a search's first random generations would otherwise take most
      // of its time (a 128-token prefill's search on 2 cores: 41 of 58 s). Never below
      // kGiveUpFloor: a short program's warm-up can be several times its runs (the first touch
      // of a larger arena), and its timed runs cost little anyway.
      double t;
      {
        const GiveUp cutoff(backend,
                            have_best ? std::max(kGiveUp * report.best_seconds, kGiveUpFloor) : 0);
        t = backend.time(*plan, 0, dims.data(), opts.trials(), opts.profile_timeout());
      }
      report.profile_s += since(t0);
      if (report.first_seconds == 0) report.first_seconds = t;
      if (seed) {
        report.seed_seconds = t;
        seed_over = over;
      }
      // Candidates over fold_limit rank after every one within it as parents of mutations.
      ranked.push_back({over ? t + kOverLimitRank : t, g, report.candidates});
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const Ranked& a, const Ranked& b) { return a.seconds < b.seconds; });
      if (over) {
        ++report.over_fold_limit;
        if (!over_best || std::pair(growth, t) < std::pair(over_best->growth, over_best->seconds))
          over_best = OverLimit{growth, t, g, std::move(llir), std::move(plan)};
      } else if (!have_best || t < report.best_seconds) {
        have_best = true;
        best_candidate = report.candidates;
        report.best_seconds = t;
        report.best_op_mix = llir.op_mix();
        if (trace) {
          trace("best-" + std::to_string(report.candidates) + ".llir",
                "# candidate " + std::to_string(report.candidates) + ": " + fmt_time(t) + "\n" +
                    llir.to_text());
        }
        best.best = g;
        best.llir = std::move(llir);
        best.plan = std::move(plan);
      }
    } catch (const std::exception& e) {
      ++report.rejected;
      if (report.first_rejection.empty()) report.first_rejection = e.what();
      if (seed) report.seed_rejection = e.what();
    }
    progress.update(report.candidates, report.rejected, have_best ? report.best_seconds : 0, false);
    return true;
  };

  // The finalists (search.hpp): the best and the next fastest within kMargin of it, loaded again
  // and timed in alternating rounds, so that a burst of load on the machine cannot decide
  // between them. Each keeps the lowest time it got in the rounds; the lowest wins. The first
  // timings do not count: the best is the best partly because its first timing was lucky (a
  // quiet moment, a warm cache), and keeping it would let that luck win again. The rounds cost
  // at most about a quarter of the profiling time so far (at least a second's worth).
  auto retime_finalists = [&] {
    constexpr int kFinalists = 4, kRounds = 3;
    constexpr double kMargin = 0.25;
    constexpr double kUntimed = std::numeric_limits<double>::infinity();
    struct Finalist {
      int candidate;
      Genome genome;
      LlirGraph llir;
      std::unique_ptr<Plan> plan;
      double first, low;
      std::string times;
    };
    std::vector<Finalist> fs;
    for (const Ranked& r : ranked) {
      if (static_cast<int>(fs.size()) >= kFinalists - 1) break;
      if (r.seconds > report.best_seconds * (1 + kMargin)) break;
      if (r.genome == best.best) continue;
      fs.push_back({r.candidate, r.genome, {}, nullptr, r.seconds, kUntimed, {}});
    }
    if (fs.empty()) return;
    double round_s = report.best_seconds;
    for (const Finalist& f : fs)
      round_s += f.first;
    round_s *= opts.trials() + 1;
    const double budget = std::max(1.0, 0.25 * report.profile_s);
    const int rounds = std::min(kRounds, static_cast<int>(budget / round_s));
    if (rounds < 1) return;
    const auto t_start = Clock::now();
    // Load the others again: a load that fails now, or whose workspaces would not fit
    // max_memory beside the others' (all are held at once, sharing one arena), drops it.
    uint64_t arena_bytes = best.plan->arena_bytes();
    uint64_t workspaces = best.plan->workspace_bytes();
    std::vector<Finalist> all;
    for (Finalist& f : fs) {
      try {
        f.llir = to_llir(space, f.genome);
        f.plan = backend.load(f.llir, spec);
      } catch (const std::exception&) {
        continue;
      }
      const uint64_t arena_next = std::max(arena_bytes, f.plan->arena_bytes());
      const uint64_t ws_next = workspaces + f.plan->workspace_bytes();
      if (opts.max_memory() && data.fixed_bytes + arena_next + ws_next > *opts.max_memory())
        continue;
      arena_bytes = arena_next;
      workspaces = ws_next;
      all.push_back(std::move(f));
    }
    if (all.empty()) return;
    // The best goes first.
    all.insert(all.begin(), Finalist{best_candidate,
                                     best.best,
                                     std::move(best.llir),
                                     std::move(best.plan),
                                     report.best_seconds,
                                     kUntimed,
                                     {}});
    std::vector<bool> live(all.size(), true);
    arena.reserve(arena_bytes);
    for (Finalist& f : all)
      f.plan->bind(0, bindings(*f.plan));
    for (int r = 0; r < rounds; ++r)
      for (size_t i = 0; i < all.size(); ++i) {
        if (!live[i]) continue;
        try {
          const double t =
              backend.time(*all[i].plan, 0, dims.data(), opts.trials(), opts.profile_timeout());
          all[i].low = std::min(all[i].low, t);
          all[i].times += (all[i].times.empty() ? "" : ", ") + fmt_time(t);
        } catch (const std::exception&) {
          live[i] = i == 0;  // the best keeps its first time
        }
      }
    if (all[0].low == kUntimed) all[0].low = all[0].first;
    size_t win = 0;
    for (size_t i = 1; i < all.size(); ++i)
      if (live[i] && all[i].low < all[win].low) win = i;
    std::ostringstream os;
    os << all.size() << " timed again in " << rounds << " rounds:";
    for (size_t i = 0; i < all.size(); ++i)
      os << (i ? ";" : "") << " #" << all[i].candidate << " " << fmt_time(all[i].first) << " ("
         << all[i].times << ")";
    os << "; winner #" << all[win].candidate
       << (win == 0 ? " (unchanged)" : " (was #" + std::to_string(all[0].candidate) + ")");
    report.finalists = os.str();
    report.profile_s += since(t_start);
    Finalist& w = all[win];
    best.best = std::move(w.genome);
    best.llir = std::move(w.llir);
    best.plan = std::move(w.plan);
    report.best_seconds = w.low;
    report.best_op_mix = best.llir.op_mix();
    if (trace && win != 0) {
      trace("best-final.llir", "# candidate " + std::to_string(w.candidate) + ": " +
                                   fmt_time(w.low) + " after timing the finalists again\n" +
                                   best.llir.to_text());
    }
  };

  // Generation 0: the first genome, the one with the fewest kernels, the same without library
  // calls and with them wherever they can stand (when they differ: try_genome skips a program
  // seen before), then random ones.
  using Seed = SearchSpace::LibrarySeed;
  try_genome(space.first_genome());
  Genome seed;
  if (!limit_hit()) {
    seed = space.fewest_kernels_genome();
    try_genome(seed, true);
  }
  // A rejected seed (one of its kernels fails to load, compile or run on the profiling data):
  // its neighbours, one choice changed, by program cost (cheapest first), until one runs (at
  // most kSeedRepairs tries), so that the search still starts next to the fewest kernels rather
  // than from random programs (session 25: a Qwen3-MoE seed rejected for one class kept a
  // 7297-kernel program, 5.4x slower, under bench_cuda's limit of 10 candidates).
  if (!report.seed_rejection.empty() && !limit_hit()) {
    constexpr int kSeedRepairs = 4;
    std::vector<std::pair<double, Genome>> near;
    for (size_t i = 0; i < seed.size(); ++i)
      for (uint32_t v = 0; v < space.gene_sizes()[i]; ++v) {
        if (v == seed[i]) continue;
        Genome g = seed;
        g[i] = v;
        near.emplace_back(space.program_cost(g), std::move(g));
      }
    std::stable_sort(near.begin(), near.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    int tries = 0;
    for (const auto& [cost, g] : near) {
      if (tries >= kSeedRepairs || limit_hit()) break;
      const int rejected = report.rejected;
      if (!try_genome(g)) continue;  // (a program seen before)
      ++tries;
      if (report.rejected == rejected) {
        report.seed_repair =
            "candidate " + std::to_string(report.candidates) + ", one choice changed";
        break;
      }
    }
  }
  // A seed whose folds pass fold_limit ranks after every program within it, so it cannot win
  // (fold_repair.hpp: SmolLM2's q4_1 decode seed folded a weight it also read as stored, and a
  // random program 1.6x slower won): the program a few genes away that fits.
  if (seed_over && resolver && !limit_hit()) {
    auto excess = [&](const LlirGraph& l) {
      FoldExcess e;
      int64_t small = 0;
      e.bytes = fold_growth(l, &small) - small - static_cast<int64_t>(opts.fold_limit());
      std::set<std::string, std::less<>> read(data.earlier_step_inputs);
      for (const LlirNode& n : l.nodes)
        if (is_op(n.op, OpKind::Input) && !is_fold_label(n.attrs.label)) read.insert(n.attrs.label);
      for (const std::string& p : FoldResolver::placeholders(l))
        for (const std::string& in : resolver->program(p).inputs)
          if (read.count(in)) e.kept.insert(in);
      return e;
    };
    const auto t0 = Clock::now();
    std::optional<FoldRepair> r;
    try {
      r = repair_fold_excess(space, *folds, seed, excess);
    } catch (const std::exception&) {
      // (a program whose folds the resolver cannot build: no repair, the search goes on)
    }
    report.extract_s += since(t0);
    const int rejected = report.rejected;
    if (r && try_genome(r->genome) && report.rejected == rejected)
      report.seed_repair = "candidate " + std::to_string(report.candidates) +
                           ", its folds within fold_limit after " + std::to_string(r->changes) +
                           " choice" + (r->changes == 1 ? "" : "s") + " changed";
  }
  if (space.has_library_calls())
    for (Seed mode : {Seed::Avoid, Seed::Prefer})
      if (!limit_hit()) try_genome(space.fewest_kernels_genome(mode));
  // Rewrites that pay only when several classes take them together (horizontal fusion).
  if (space.has_seed_bias() && !limit_hit()) try_genome(space.biased_genome());
  int misses = 0;
  for (int i = 1; i < opts.generation_size() && !limit_hit() && !out_of_time() && misses < 256;) {
    if (try_genome(space.random_genome(rng)))
      ++i;
    else
      ++misses;
  }
  progress.update(report.candidates, report.rejected, have_best ? report.best_seconds : 0, true);
  // Later generations: mutations of the best so far.
  while (!limit_hit() && !out_of_time() && misses < 256) {
    int parents =
        std::max<int>(1, std::min<int>(opts.keep_best(), static_cast<int>(ranked.size())));
    std::vector<Genome> pool;
    for (int p = 0; p < parents && p < static_cast<int>(ranked.size()); ++p)
      pool.push_back(ranked[p].genome);
    if (pool.empty()) pool.push_back(space.random_genome(rng));
    for (int i = 0; i < opts.generation_size() && !limit_hit() && !out_of_time() && misses < 256;) {
      Genome g = pool[static_cast<size_t>(i) % pool.size()];
      space.mutate(g, opts.mutations(), rng);
      if (try_genome(g)) {
        ++i;
        misses = 0;
      } else {
        ++misses;
      }
    }
    progress.update(report.candidates, report.rejected, have_best ? report.best_seconds : 0, true);
  }
  progress.finish();
  if (have_best) retime_finalists();
  report.stop = limit_hit() ? "candidate limit (" + std::to_string(opts.search_graph_limit()) + ")"
                : out_of_time() ? "time budget"
                                : "no unseen program left";
  // No candidate fits fold_limit: the one that passes it by the fewest bytes (the fastest of
  // those), rather than no program. This happens where an earlier bucket's folds replaced
  // weights that every candidate of this bucket still reads in their stored form (a decode GEMV
  // reading a repacked layout, a prefill GEMM reading the file's): both copies stay resident.
  if (!have_best && over_best) {
    have_best = true;
    report.best_seconds = over_best->seconds;
    report.best_op_mix = over_best->llir.op_mix();
    report.fold_growth = over_best->growth;
    best.best = std::move(over_best->genome);
    best.llir = std::move(over_best->llir);
    best.plan = std::move(over_best->plan);
  }
  if (!have_best) {
    throw Error("search: all " + std::to_string(report.candidates) +
                " candidates were rejected; first error: " + report.first_rejection);
  }
  // LUMINAL_TRACE: the winner's kernels timed one by one (backends that can: CUDA). Bound again
  // first: the arena may have been regrown for a later candidate.
  if (trace && best.plan) {
    try {
      arena.reserve(best.plan->arena_bytes());
      best.plan->bind(0, bindings(*best.plan));
      const std::string profile = backend.profile_text(*best.plan, dims.data());
      if (!profile.empty()) trace("profile.txt", profile);
    } catch (const std::exception& e) {
      trace("profile.txt", std::string("profiling failed: ") + e.what() + "\n");
    }
  }
  // The winner reads its folds by content label: the label a session and the compile cache
  // share across buckets. Loaded again under those labels.
  if (resolver && !FoldResolver::placeholders(best.llir).empty()) {
    best.llir = resolver->relabel(std::move(best.llir), &best.folds);
    best.plan.reset();
    best.plan = backend.load(best.llir, spec);
  }
  best.report = std::move(report);
  return best;
}

}  // namespace luminal
