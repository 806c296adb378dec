// bench_cuda: decode-graph figures (see cuda_bench.hpp): dims update and prefill s change on a
// 32-layer decode graph, SmolLM2-135M's shape in bf16 on both executors, and the search wall time
// and decode of a Llama-3-8B-shaped graph.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/cuda_bench.hpp"
#include "luminal/core/blocks.hpp"
#include "luminal/cuda/codegen.hpp"
#include "luminal/cuda/plan.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/sampling.hpp"
#include "luminal/program/critical_path.hpp"

namespace luminal::bench_cuda {

namespace fs = std::filesystem;
using cuda::CudaBackend;
using cuda::GraphStats;

namespace {

/// A Llama decoder of `size` in `dtype` with greedy argmax in the graph (output "token", I32 [1]).
models::Decoder llama_with_argmax(const models::LlamaSize& size, DType dtype, int slots,
                                  int max_step) {
  models::DecoderShape shape;
  shape.slots = slots;
  shape.max_step = max_step;
  shape.dtype = dtype;
  models::Decoder d = models::build_decoder(models::llama_config(size), shape);
  nn::greedy_token(d.last_logits).output("token");
  return d;
}

}  // namespace

CompileOptions decode_opts(int limit, const fs::path& cache, int slots, int max_step, int c_rep,
                           int64_t prefill_rep) {
  std::vector<DimBucket> s_buckets = {DimBucket(1, 1)};
  if (max_step > 1) s_buckets.push_back(DimBucket(2, max_step).representative(prefill_rep));
  return CompileOptions()
      .search_graph_limit(limit)
      .seed(1)
      .verbose(false)
      .cache_dir(cache)
      .dim_buckets("s", s_buckets)
      .dim_buckets("c", {DimBucket(1, slots).representative(c_rep)});
}

/// Seeded random weights generated on the GPU, empty caches, one token id.
void fill(Session& s, const models::Decoder& d) {
  models::random_weights(s, 7, s.options());
  models::init_state(s, d);
  s.set("ids", std::vector<int32_t>{3});
}

std::string search_lines(const Session& s) {
  std::string out;
  char buf[160];
  for (const SearchReport& r : s.reports()) {
    if (r.cached) continue;
    std::snprintf(buf, sizeof buf,
                  "  search %s: %d candidates, %d rejected, first valid %.3f ms, seed %.3f ms, "
                  "best %.3f ms",
                  r.bucket.empty() ? "(one bucket)" : r.bucket.c_str(), r.candidates, r.rejected,
                  r.first_seconds * 1e3, r.seed_seconds * 1e3, r.best_seconds * 1e3);
    out += buf;
    if (r.over_fold_limit > 0)
      out += " (" + std::to_string(r.over_fold_limit) + " over fold_limit)";
    if (!r.first_rejection.empty())
      out += " (first rejection: " + r.first_rejection.substr(0, 300) + ")";
    out += "\n";
    if (!r.seed_rejection.empty())
      out += "    the fewest-kernels seed was rejected: " + r.seed_rejection.substr(0, 300) + "\n";
    if (!r.seed_repair.empty()) out += "    the nearest program that ran: " + r.seed_repair + "\n";
    if (!r.finalists.empty()) out += "    finalists: " + r.finalists + "\n";
  }
  return out;
}

fs::path temp_folder(const std::string& what) {
  if (const char* keep = std::getenv("LUMINAL_BENCH_CACHE"); keep && *keep)
    return fs::path(keep) / what;
  return fs::temp_directory_path() /
         ("luminal_bench_cuda_" + what + "_" + std::to_string(getpid()));
}

void clear_cache(const fs::path& cache) {
  if (const char* keep = std::getenv("LUMINAL_BENCH_CACHE"); keep && *keep) return;
  std::error_code ec;
  fs::remove_all(cache, ec);
}

namespace {

/// Llama-3-8B's shape: 32 layers, hidden 4096, 32/8 heads, FFN 14336, vocab 128256.
}  // namespace

int slots_covering(std::initializer_list<int> contexts, int steps) {
  const int top = std::max(contexts) + kWarmupSteps + steps;
  return (top + 255) / 256 * 256;
}

DecodeTiming time_decode(CudaBackend& be, Session& s, int ctx, int steps) {
  const DimSlot S = s.dim("s"), C = s.dim("c");
  std::vector<int64_t> dims = s.dims();
  dims[S] = 1;
  dims[C] = ctx;
  int32_t tok = 3;
  int64_t c = ctx;
  auto step = [&] {  // as a real decode: one more cached token each step
    dims[C] = c++;
    s.set("ids", std::vector<int32_t>{tok});
    s.execute(dims);
    tok = s.get<int32_t>("token")[0];
  };
  DecodeTiming r;
  r.ms_per_token = 1e3 * bench::median_seconds(step, kWarmupSteps, steps);
  dims[C] = ctx;
  Plan& plan = s.plan({{"s", 1}, {"c", ctx}});
  std::map<std::string, std::pair<int, double>> ops;  // op -> launches, ms
  const std::vector<cuda::KernelStat> stats = be.profile(plan, 0, dims.data(), 10);
  // LUMINAL_BENCH_KERNELS=N prints the first N kernels of the step (a layer and a bit).
  if (const char* v = std::getenv("LUMINAL_BENCH_KERNELS"); v != nullptr && std::atoi(v) > 0) {
    const size_t n = std::min(stats.size(), static_cast<size_t>(std::atoi(v)));
    std::printf("first %zu kernels of the decode step at context %d:\n%s", n, ctx,
                CudaBackend::format_profile({stats.begin(), stats.begin() + n}).c_str());
  }
  for (const cuda::KernelStat& k : stats) {
    r.busy_ms += k.ms;
    r.bytes += k.bytes;
    ++r.kernels;
    ops[k.op].first += 1;
    ops[k.op].second += k.ms;
  }
  std::vector<std::pair<double, std::string>> by_ms;
  for (const auto& [op, v] : ops) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s %d x %.3f ms", op.c_str(), v.first, v.second);
    by_ms.emplace_back(-v.second, buf);
  }
  std::sort(by_ms.begin(), by_ms.end());
  for (const auto& [ms, text] : by_ms)
    r.by_op += (r.by_op.empty() ? "" : ", ") + text;
  r.replay_ms = be.time(plan, 0, dims.data(), 20, 30.0) * 1e3;
  return r;
}

namespace {

/// The cuBLASLt calls of a program.
int lt_calls(const LlirGraph& g) {
  int n = 0;
  for (const LlirNode& node : g.nodes)
    n += node.op->name == std::string_view("cuda.LtMatmul") ||
         node.op->name == std::string_view("cuda.LtMatmulRow");
  return n;
}

/// Sets the prompt to `len` ids (s = c = len) and waits for the upload.
void set_prompt(Session& s, std::vector<int64_t>& dims, int64_t len) {
  dims[s.dim("s")] = len;
  dims[s.dim("c")] = len;
  s.set("ids", std::vector<int32_t>(static_cast<size_t>(len), 3));
  s.sync();
}

/// `changes` executes whose prompt length alternates b, a, b, ... (set before each, untimed):
/// the medians of the host time (until execute returns) and of the time to the end of the
/// device's work, in ms.
std::pair<double, double> time_length_changes(Session& s, std::vector<int64_t>& dims, int changes,
                                              int64_t a, int64_t b) {
  std::vector<double> host, total;
  for (int i = 0; i < changes; ++i) {
    set_prompt(s, dims, i % 2 ? a : b);
    const auto t1 = Clock::now();
    s.execute(dims);
    host.push_back(seconds_since(t1) * 1e3);
    s.sync();
    total.push_back(seconds_since(t1) * 1e3);
  }
  return {median(host), median(total)};
}

}  // namespace

void dims_update(CudaBackend& be) {
  try {
    const models::LlamaSize size{
        .layers = 32, .hidden = 512, .ffn = 1536, .heads = 8, .kv_heads = 4, .vocab = 4096};
    const int slots = 2048, max_step = 32;
    const models::Decoder d = llama_with_argmax(size, DType::BF16, slots, max_step);
    const fs::path cache = temp_folder("dims");
    Session s(d.graph, be, decode_opts(10, cache, slots, max_step, 128));
    fill(s, d);
    const auto t0 = Clock::now();
    s.compile();
    const double compile_s = seconds_since(t0);
    const DimSlot S = s.dim("s"), C = s.dim("c");
    std::vector<int64_t> dims = s.dims();
    // Decode: c changes by one each execute (the queue idle before each, so the time is the
    // host's: the dims copy from a pinned slot and the graph launch).
    dims[S] = 1;
    dims[C] = 128;
    for (int i = 0; i < 3; ++i) {  // binds the decode plan to the session's queue
      s.execute(dims);
      s.sync();
    }
    const int n = 200;
    std::vector<double> changed, same;
    const GraphStats before = be.graph_stats();
    for (int i = 0; i < n; ++i) {
      dims[C] = 129 + (i % 64);
      const auto t1 = Clock::now();
      s.execute(dims);
      changed.push_back(seconds_since(t1) * 1e6);
      s.sync();
    }
    const GraphStats after = be.graph_stats();
    const double copies = static_cast<double>(after.dims_copies - before.dims_copies);
    const double launches = static_cast<double>(after.launches - before.launches);
    for (int i = 0; i < n; ++i) {
      const auto t1 = Clock::now();
      s.execute(dims);
      same.push_back(seconds_since(t1) * 1e6);
      s.sync();
    }
    const size_t kernels = be.profile(s.plan({{"s", 1}, {"c", 128}}), 0, dims.data(), 1).size();
    std::printf(
        "dims update (32-layer Llama decode graph, hidden 512, bf16; %zu kernels; compile %.1f s): "
        "host %.1f us per execute when only c changes (median of %d; target <= 20 us), %.1f us "
        "with the same dims; graph executor over the %d c changes: %llu node updates, %llu "
        "re-instantiations, %llu instantiations, %llu launches\n",
        kernels, compile_s, median(changed), n, median(same), n,
        static_cast<unsigned long long>(after.node_updates - before.node_updates),
        static_cast<unsigned long long>(after.reinstantiations - before.reinstantiations),
        static_cast<unsigned long long>(after.instantiations - before.instantiations),
        static_cast<unsigned long long>(after.launches - before.launches));
    // Where the host time of those executes went (means; the rest is the session's own work).
    std::printf(
        "dims update, host time per changed execute (means over %.0f copies, %.0f launches): dims "
        "copy %.1f us (event wait, pinned slot, cuMemcpyHtoDAsync, record), cuGraphLaunch %.1f "
        "us\n",
        copies, launches,
        copies > 0 ? static_cast<double>(after.dims_host_ns - before.dims_host_ns) / copies / 1e3
                   : 0,
        launches > 0
            ? static_cast<double>(after.launch_host_ns - before.launch_host_ns) / launches / 1e3
            : 0);

    // Prefill: s alternates between 16 and 17 (c = s: a prompt of that length).
    for (int64_t len : {17, 16}) {  // binds the prefill plan; the loop starts with a change
      set_prompt(s, dims, len);
      s.execute(dims);
      s.sync();
    }
    const GraphStats p0 = be.graph_stats();
    const int changes = 100;
    const auto [host_ms, total_ms] = time_length_changes(s, dims, changes, 16, 17);
    const GraphStats p1 = be.graph_stats();
    std::printf(
        "prefill s change 16->17 (same graph, bucket s in [2, 32]): %.2f node updates and %.2f "
        "re-instantiations per change (%llu / %llu over %d changes), host %.1f us per execute "
        "(median), %.3f ms with the device\n",
        static_cast<double>(p1.node_updates - p0.node_updates) / changes,
        static_cast<double>(p1.reinstantiations - p0.reinstantiations) / changes,
        static_cast<unsigned long long>(p1.node_updates - p0.node_updates),
        static_cast<unsigned long long>(p1.reinstantiations - p0.reinstantiations), changes,
        host_ms * 1e3, total_ms);
    clear_cache(cache);
  } catch (const std::exception& e) {
    std::printf("dims update: FAILED: %s\n", e.what());
  }
}

void smollm2_bf16(CudaBackend& graph_be, CudaBackend& stream_be, double copy_gbs) {
  try {
    const models::LlamaSize size = models::smollm2_135m_size();
    const std::initializer_list<int> contexts = {128, 1024};
    const int steps = 50;
    const int slots = slots_covering(contexts, steps);
    const models::Decoder d = llama_with_argmax(size, DType::BF16, slots, 1);
    const double weight_mb = static_cast<double>(models::parameter_count(d.config)) * 2 / 1e6;
    const fs::path cache = temp_folder("smollm2");
    // The graph executor with full edges instead of programmatic ones (when those are on): the
    // same programs (from the compile cache), so the difference is the launch gap PDL hides.
    cuda::CudaOptions full_opts;
    full_opts.programmatic_launch = false;
    CudaBackend full_be(full_opts);
    std::vector<std::pair<CudaBackend*, const char*>> runs = {{&graph_be, "graph"}};
    if (graph_be.programmatic_launch()) runs.push_back({&full_be, "graph (full edges, no PDL)"});
    runs.push_back({&stream_be, "stream"});
    for (const auto& [b, exec] : runs) {
      Session s(d.graph, *b, decode_opts(10, cache, slots, 1, 128));
      fill(s, d);
      const auto t0 = Clock::now();
      s.compile();
      const double compile_s = seconds_since(t0);
      for (int ctx : contexts) {
        const DecodeTiming t = time_decode(*b, s, ctx, steps);
        std::printf(
            "SmolLM2-135M shape bf16 decode at context %d, %s executor: %.3f ms/token (argmax "
            "in the graph, token fed back), %zu kernels/token, GPU busy %.3f ms of a %.3f ms "
            "replay (%.0f%%); %.0f MB of bf16 weights, floor %.3f ms at the copy bandwidth; "
            "compile %.1f s (torch.compile + CUDA graph 1.07 ms, llama.cpp 1.065 ms; target "
            "<= 0.8 ms)\n",
            ctx, exec, t.ms_per_token, t.kernels, t.busy_ms, t.replay_ms,
            100 * t.busy_ms / t.replay_ms, weight_mb, weight_mb * 1e6 / (copy_gbs * 1e9) * 1e3,
            compile_s);
      }
    }
    clear_cache(cache);
  } catch (const std::exception& e) {
    std::printf("SmolLM2-135M shape bf16 decode: FAILED: %s\n", e.what());
  }
}

void llama3_8b(double copy_gbs, int limit) {
  const fs::path cache = temp_folder("llama8b");
  try {
    const std::initializer_list<int> contexts = {128, 1024};
    const int steps = 30;
    const int slots = std::max(2048, slots_covering(contexts, steps));
    const models::Decoder d = llama_with_argmax(models::llama3_8b_size(), DType::BF16, slots, 1);
    const double weight_gb = static_cast<double>(models::parameter_count(d.config)) * 2 / 1e9;
    clear_cache(cache);
    double search_s[2] = {0, 0};
    for (int round = 0; round < 2; ++round) {
      const char* which = round == 0 ? "cold" : "warm";
      // A new backend each round: nothing in memory; round 0 finds empty caches on disk.
      // Generated kernels only (llama3_8b_cublaslt runs the default, with cuBLASLt).
      cuda::CudaOptions opts{0, cache / "kernels", 16};
      opts.cublaslt = false;
      CudaBackend be(opts);
      const auto [free0, total0] = be.memory_info();
      // A time budget well past the target keeps the bench inside gpu-check's limit; the line
      // says when it stopped the search.
      Session s(d.graph, be, decode_opts(limit, cache, slots, 1, 512).time_budget(150));
      const auto t0 = Clock::now();
      fill(s, d);
      be.sync();
      const double weights_s = seconds_since(t0);
      const auto t1 = Clock::now();
      s.compile();
      search_s[round] = seconds_since(t1);
      const std::vector<SearchReport>& reports = s.reports();
      int candidates = 0, rejected = 0;
      double compile_kernels_s = 0, profile_s = 0;
      bool cached = true;
      std::string stop;
      for (const SearchReport& r : reports) {
        stop += (stop.empty() ? "" : "; ") + (r.cached ? std::string("cached") : r.stop);
        candidates += r.candidates;
        rejected += r.rejected;
        compile_kernels_s += r.compile_s;
        profile_s += r.profile_s;
        cached = cached && r.cached;
      }
      std::printf(
          "Llama-3-8B shape (32 layers, hidden 4096, 32/8 heads, FFN 14336, vocab 128256, bf16, "
          "%.1f GB of weights), generated kernels only, search wall time %s: %.1f s (target %s); "
          "%s%d candidates, %d "
          "rejected (stopped: %s), kernel compile %.1f s, profiling %.1f s, %llu kernels "
          "compiled; random weights on the GPU %.1f s; GPU memory free %.1f of %.1f GB before\n",
          weight_gb, which, search_s[round], round == 0 ? "< 60 s" : "< 5 s",
          cached ? "loaded from the compile cache, " : "", candidates, rejected, stop.c_str(),
          compile_kernels_s, profile_s, static_cast<unsigned long long>(be.kernel_stats().compiled),
          weights_s, static_cast<double>(free0) / 1e9, static_cast<double>(total0) / 1e9);
      if (round == 1) {
        for (int ctx : contexts) {
          const DecodeTiming t = time_decode(be, s, ctx, steps);
          std::printf(
              "Llama-3-8B shape bf16 decode at context %d, generated kernels only: %.3f ms/token "
              "(argmax "
              "in the graph, token fed back), %zu kernels/token, GPU busy %.3f ms of a %.3f ms "
              "replay; floor %.3f ms (%.1f GB at the copy bandwidth; torch.compile + CUDA graph "
              "4.92 ms, llama.cpp 4.75 ms)\n  by op: %s\n",
              ctx, t.ms_per_token, t.kernels, t.busy_ms, t.replay_ms, weight_gb / copy_gbs * 1e3,
              weight_gb, t.by_op.c_str());
        }
      }
    }
  } catch (const std::exception& e) {
    std::printf("Llama-3-8B shape: FAILED: %s\n", e.what());
  }
  clear_cache(cache);
}

/// The cuBLASLt steps of the plan of `s`'s bucket at `dyn`: the first line of the plan's summary,
/// then its distinct specs (what the bucket prepares at the dims it last ran) with how many steps
/// share each.
std::string spec_census(Session& s, const DynMap& dyn) {
  const auto* p = dynamic_cast<const cuda::CudaPlan*>(&s.plan(dyn));
  if (!p) return "";
  const std::string summary = p->lt_summary();
  if (summary.empty()) return "  (no cuBLASLt steps)\n";
  std::map<std::string, int> specs;
  for (const std::string& spec : p->lt_specs())
    ++specs[spec];
  std::string out = summary.substr(0, summary.find('\n') + 1) + "  " +
                    std::to_string(specs.size()) + " distinct specs:\n";
  for (const auto& [spec, n] : specs)
    out += "    " + std::to_string(n) + " x " + spec + "\n";
  return out;
}

void llama3_8b_cublaslt(double copy_gbs, int limit) {
  const fs::path cache = temp_folder("llama8b_lt");
  try {
    const std::initializer_list<int> contexts = {128, 1024};
    const int steps = 30;
    const int slots = std::max(2048, slots_covering(contexts, steps));
    const int max_step = 128;  // a decode bucket (s = 1) and a prefill bucket (s in [2, 128])
    const models::Decoder d =
        llama_with_argmax(models::llama3_8b_size(), DType::BF16, slots, max_step);
    const double weight_gb = static_cast<double>(models::parameter_count(d.config)) * 2 / 1e9;
    clear_cache(cache);
    // Round 0: a cold search. Round 1: a new backend and session on the same compile cache (the
    // warm search: programs read back, plans loaded, cuBLASLt calls prepared again).
    for (int round = 0; round < 2; ++round) {
      const char* start = round == 0 ? "cold start" : "warm start";
      cuda::CudaOptions opts{0, cache / "kernels", 16};
      opts.cublaslt = true;
      CudaBackend be(opts);
      std::string why;
      if (!be.cublaslt(&why)) {
        std::printf("Llama-3-8B shape with cuBLASLt: skipped (%s)\n", why.c_str());
        return;
      }
      Session s(d.graph, be, decode_opts(limit, cache, slots, max_step, 512).time_budget(150));
      fill(s, d);
      be.sync();
      const auto t0 = Clock::now();
      s.compile();
      const double search_s = seconds_since(t0);
      const CudaBackend::LtStats after_search = be.lt_stats();
      const LlirGraph& prog = s.llir({{"s", 1}, {"c", 128}});
      const int lt = lt_calls(prog);
      std::printf(
          "Llama-3-8B shape with cuBLASLt in the search: search %s %.1f s (target %s), %d "
          "cuBLASLt calls in the decode program (%s); prepares %llu, captures %llu during the "
          "search; workspace %.0f MiB\n",
          round == 0 ? "cold" : "warm", search_s, round == 0 ? "< 60 s" : "< 5 s", lt,
          prog.op_mix_string().c_str(), static_cast<unsigned long long>(after_search.prepares),
          static_cast<unsigned long long>(after_search.captures),
          static_cast<double>(s.plan({{"s", 1}, {"c", 128}}).workspace_bytes()) / (1 << 20));
      for (int ctx : contexts) {
        const CudaBackend::LtStats before = be.lt_stats();
        const DecodeTiming t = time_decode(be, s, ctx, steps);
        const CudaBackend::LtStats after = be.lt_stats();
        std::printf(
            "Llama-3-8B shape bf16 decode at context %d with cuBLASLt (%s): %.3f ms/token, %zu "
            "steps/token, GPU busy %.3f ms of a %.3f ms replay; during the decode steps, the "
            "profile and the timing: prepares %llu, recaptures %llu; floor %.3f ms "
            "(torch.compile + CUDA graph 4.92 ms, llama.cpp 4.75 ms; target < 4.92 ms)\n  by op: "
            "%s\n",
            ctx, start, t.ms_per_token, t.kernels, t.busy_ms, t.replay_ms,
            static_cast<unsigned long long>(after.prepares - before.prepares),
            static_cast<unsigned long long>(after.recaptures - before.recaptures),
            weight_gb / copy_gbs * 1e3, t.by_op.c_str());
      }
      // Prefill: 128 tokens at once (TTFT of a 128-token prompt), then chunks whose length
      // alternates 100 / 101 (a new spec for every cuBLASLt step reading s: re-prepared and
      // recaptured; the graph updated when the algorithms stay, else re-instantiated), twice
      // in a row (how much the host time varies inside one process).
      std::vector<int64_t> dims = s.dims();
      const LlirGraph& pre = s.llir({{"s", 128}, {"c", 128}});
      auto prefill = [&](int64_t len) {
        set_prompt(s, dims, len);
        s.execute(dims);
        (void)s.get<int32_t>("token");
      };
      const double pre_ms = 1e3 * bench::median_seconds([&] { prefill(128); }, 2, 10);
      // What each bucket prepares: its distinct specs (the prefill's at s = 128, just run).
      if (round == 0) {
        std::printf(
            "Llama-3-8B shape cuBLASLt steps of the decode bucket (s 1; specs at the "
            "dims it last ran):\n%s",
            spec_census(s, {{"s", 1}, {"c", 128}}).c_str());
        std::printf("Llama-3-8B shape cuBLASLt steps of the prefill bucket at s 128:\n%s",
                    spec_census(s, {{"s", 128}, {"c", 128}}).c_str());
      }
      prefill(100);
      for (int rep = 0; rep < 2; ++rep) {
        const GraphStats g0 = be.graph_stats();
        const CudaBackend::LtStats l0 = be.lt_stats();
        const int changes = 20;
        const auto [host_ms, total_ms] = time_length_changes(s, dims, changes, 100, 101);
        const GraphStats g1 = be.graph_stats();
        const CudaBackend::LtStats l1 = be.lt_stats();
        auto per = [&](uint64_t a, uint64_t b) { return static_cast<double>(b - a) / changes; };
        std::printf(
            "Llama-3-8B shape bf16 prefill with cuBLASLt (%s): 128 tokens %.2f ms (%d cuBLASLt "
            "calls; %s); s alternating 100 / 101 (run %d): host %.3f ms per execute (mean: "
            "specs and prepares %.3f ms, recaptures and graph update %.3f ms), %.2f ms with the "
            "device (median), per change %.1f prepares (%.1f keeping their algorithm), %.1f "
            "recaptures (%.1f in place), %.2f re-instantiations, %.2f executes on the stream\n",
            start, pre_ms, lt_calls(pre), rep == 0 ? pre.op_mix_string().c_str() : "as above",
            rep + 1, host_ms, per(l0.resolve_host_ns, l1.resolve_host_ns) / 1e6,
            per(l0.refresh_host_ns, l1.refresh_host_ns) / 1e6, total_ms,
            per(l0.prepares, l1.prepares), per(l0.algo_kept, l1.algo_kept),
            per(l0.recaptures, l1.recaptures), per(l0.in_place, l1.in_place),
            per(g0.reinstantiations, g1.reinstantiations), per(l0.stream_runs, l1.stream_runs));
      }
      // The same length every time (the graph as captured): what a new length adds is the
      // difference.
      const auto [same_host, same_total] = time_length_changes(s, dims, 10, 100, 100);
      std::printf(
          "Llama-3-8B shape bf16 prefill with cuBLASLt (%s): s 100 every time: host %.3f ms per "
          "execute, %.2f ms with the device (median)\n",
          start, same_host, same_total);
    }
  } catch (const std::exception& e) {
    std::printf("Llama-3-8B shape with cuBLASLt: FAILED: %s\n", e.what());
  }
  clear_cache(cache);
}

namespace {

/// Sets every weight of `g`: block-typed ones to valid random blocks (blocks::fill_valid_blocks:
/// random quants, scales 1/256, mins -1/16; one buffer per type, its prefix for each weight), the
/// float ones (the norms) to 1. Returns the weights' bytes.
uint64_t fill_quant_weights(Session& s, const Graph& g) {
  std::map<DType, std::vector<uint8_t>> pool;
  uint64_t total = 0;
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    if (!models::is_weight(n.label)) continue;
    const uint64_t bytes = static_cast<uint64_t>(storage_bytes(n.dtype, n.shape).as_const());
    total += bytes;
    if (is_block(n.dtype)) {
      std::vector<uint8_t>& p = pool[n.dtype];
      if (p.size() < bytes) {
        p.resize(bytes);
        blocks::fill_valid_blocks(n.dtype, p, 7);
      }
      s.set_bytes(n.label, p.data(), bytes);
    } else {
      s.set(n.label, std::vector<float>(bytes / size_bytes(n.dtype), 1.0f));
    }
  }
  return total;
}

}  // namespace

void quant_decode(double copy_gbs, int limit, const std::string& model, DType wt, bool prefill) {
  const bool big = model == "8b";
  const std::string what =
      std::string(big ? "Llama-3-8B" : "SmolLM2-135M") + " shape " + std::string(name(wt));
  const fs::path cache = temp_folder("quant");
  try {
    const models::LlamaSize size = big ? models::llama3_8b_size() : models::smollm2_135m_size();
    // LUMINAL_BENCH_CONTEXT: the decode's context (default 128; 1024 for the attention A/Bs).
    // LUMINAL_BENCH_PREFILL_REP: the length the prefill bucket is searched at (default 16; the
    // prefill timed is 128 tokens, and `luminal run` searches at the bucket's middle).
    const int ctx = cuda::env_int("LUMINAL_BENCH_CONTEXT", 128, 1, 32768), steps = 30;
    const int64_t prefill_rep = cuda::env_int("LUMINAL_BENCH_PREFILL_REP", 16, 2, 128);
    const int slots = slots_covering({ctx}, steps);
    // Every matrix in `wt`; the embedding and LM head as llama.cpp's files store them (the 8B's
    // in q6_k, SmolLM2's tied one in q8_0), except for q8_0 models.
    models::DecoderShape shape;
    shape.slots = slots;
    shape.max_step = prefill ? 128 : 1;
    // Only the last row's logits, as `luminal bench` and llama-bench compute them (until session
    // 33 this prefill computed all 128 rows': for the 8B a 128 x 128256 LM-head GEMM, 3.0 ms).
    shape.logits = models::Logits::Last;
    shape.block_weights =
        models::matrix_block_types(models::llama_config(size), shape, [&](std::string_view label) {
          const bool table = label.find("embed") != std::string_view::npos ||
                             label.find("lm_head") != std::string_view::npos;
          return !table || wt == DType::Q8_0 ? wt : big ? DType::Q6_K : DType::Q8_0;
        });
    models::Decoder d = models::build_decoder(models::llama_config(size), shape);
    nn::greedy_token(d.last_logits).output("token");
    CudaBackend be(cuda::CudaOptions{0, cache / "kernels", 16});
    Session s(d.graph, be,
              decode_opts(limit, cache, slots, shape.max_step, ctx, prefill_rep)
                  .time_budget(prefill ? 120 : 90));
    const uint64_t weight_bytes = fill_quant_weights(s, d.graph);
    models::init_state(s, d);
    s.set("ids", std::vector<int32_t>{3});
    const auto t0 = Clock::now();
    s.compile();
    const double compile_s = seconds_since(t0);
    const LlirGraph& prog = s.llir({{"s", 1}, {"c", ctx}});
    const DecodeTiming t = time_decode(be, s, ctx, steps);
    const double gb = static_cast<double>(weight_bytes) / 1e9;
    std::printf(
        "%s decode at context %d: %.3f ms/token (argmax in the graph, token fed back), %zu "
        "kernels/token (%d on the critical path), GPU busy %.3f ms of a %.3f ms replay; %.2f GB "
        "of weights as blocks, floor %.3f ms at the copy bandwidth; session %.2f GB; compile "
        "%.1f s (llama.cpp on the H200: 8B q4_0 3.01 ms, q4_k_m 3.68 ms; SmolLM2 q4_1 1.10 ms)\n"
        "  program: %s\n  by op: %s\n",
        what.c_str(), ctx, t.ms_per_token, t.kernels, critical_path(prog), t.busy_ms, t.replay_ms,
        gb, gb / copy_gbs * 1e3, static_cast<double>(s.memory_bytes()) / 1e9, compile_s,
        prog.op_mix_string().c_str(), t.by_op.c_str());
    if (prefill) {
      // A 128-token prompt (s = c = 128) at once: the time to its first token.
      std::vector<int64_t> dims = s.dims();
      const double pre_ms = 1e3 * bench::median_seconds(
                                      [&] {
                                        set_prompt(s, dims, 128);
                                        s.execute(dims);
                                        (void)s.get<int32_t>("token");
                                      },
                                      2, 10);
      Plan& plan = s.plan({{"s", 128}, {"c", 128}});
      const std::vector<cuda::KernelStat> stats = be.profile(plan, 0, dims.data(), 5);
      std::map<std::string, std::pair<int, double>> ops;
      for (const cuda::KernelStat& k : stats) {
        ops[k.op].first += 1;
        ops[k.op].second += k.ms;
      }
      std::string by_op;
      for (const auto& [op, v] : ops)
        by_op += (by_op.empty() ? "" : ", ") + op + " " + std::to_string(v.first) + " x " +
                 std::to_string(v.second).substr(0, 6) + " ms";
      std::printf(
          "%s prefill of 128 tokens (the last row's logits): %.2f ms (%.0f tok/s; llama.cpp on the "
          "H100: 8B q4_0 18.9 ms, "
          "SmolLM2 q4_1 8.1 ms)\n  program: %s\n  by op (each timed alone): %s\n",
          what.c_str(), pre_ms, 128e3 / pre_ms,
          s.llir({{"s", 128}, {"c", 128}}).op_mix_string().c_str(), by_op.c_str());
    }
    std::printf("%s", search_lines(s).c_str());
  } catch (const std::exception& e) {
    std::printf("%s decode: FAILED: %s\n", what.c_str(), e.what());
  }
  clear_cache(cache);
}

}  // namespace luminal::bench_cuda
