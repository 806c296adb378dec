// A ~100M-parameter Llama in f32 on the CPU backend, against the machine's own limits measured in
// the same run:
//
//   build/bench/bench_llm_cpu [search_graph_limit=20] [decode_steps=31] [cache_dir]
//
// Model: 12 layers, hidden 768, FFN 2048, 12/4 heads (head_dim 64), vocabulary 32000, tied
// embeddings, seeded random weights (models::CausalLM::random); KV cache of 1152 rows, buckets
// s = 1 (decode) and s in [2, 128] (prefill), greedy token head. Threads: the backend's
// (LUMINAL_CPU_THREADS, else every hardware thread). The program cache is a fresh temporary
// folder (compile is cold) unless cache_dir names one to keep (later runs load the programs).
//
// Measured, in this order:
//   copy bandwidth  memcpy of 256 MiB split over the backend's threads, median of 9 runs, counted
//                   as bytes read + bytes written per second; also a read-only stream (a sum over
//                   256 MiB split over the threads) in bytes read per second, for reference
//   sgemm           cblas_sgemm at the prefill's shapes (M = 128 tokens, weights [out, in]),
//                   OpenBLAS on the backend's thread count, the fastest of 9 (a stricter target
//                   than a median on a shared machine); weighted as the forward has them (7 per
//                   layer, the lm_head once)
//   TTFT            reset(), then a 128-token prompt to the first token id on the host
//                   (generate(prompt, 1)), median of 5 runs after a warm-up. Prefill GFLOP/s counts
//                   2 * parameters * 128 (every weight matrix once per token, the tied lm_head
//                   included; the attention products of scores and values, ~1% more, are not).
//                   Also the prefill plan alone (Backend::time, kernels only)
//   TPOT at c       a decode step that makes the context c: rewind(c - 1), then generate({id}, 1)
//                   (writes the id by handle, executes s = 1 with a dims array, reads the token
//                   id by handle: CausalLM's decode step); the median of the steps. Before each
//                   step: one memcpy of 256 MiB, then the same plan timed by Backend::time
//                   (kernels only; an untimed run, then a timed one)
//   host overhead   the median over the steps of (the step - the plan run just before it): paired,
//                   so that a shared machine's changing load cancels (medians or minima of the
//                   two series taken apart differ by more than the overhead)
//   generating      TPOT of generate(prompt, 17) as an application runs it (c grows each step)
//   kernel by kernel  CpuBackend::profile of the decode plans and the prefill plan
//
// The floor of a decode step is the bytes it must read (every weight once, the lm_head being the
// tied embedding, plus K and V of every layer over the context) divided by the copy bandwidth
// (read + write bytes per second of the memcpy): the rate at which this machine's memory moved
// bytes, measured between the decode steps (a shared machine's bandwidth moves with its other
// load). Targets (the issue): TPOT within 1.5x of the floor at context 128, host overhead under 5%
// of TPOT, prefill at least half the sgemm GFLOP/s. The benchmark prints pass/miss and exits 0;
// it exits 1 only when a result is wrong (a token id outside the vocabulary, a decode step that
// does not give the same token twice at the same context) or something throws.
#include <cblas.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "bench/timing.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/runtime/session.hpp"

namespace {

using namespace luminal;
using bench::Clock;
using bench::median;
using bench::seconds_since;

// Runs fn(t) for t in [0, threads) on that many threads (t = 0 on the caller).
template <class F>
void on_threads(int threads, F&& fn) {
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([&fn, t] { fn(t); });
  fn(0);
  for (std::thread& th : pool)
    th.join();
}

// A memcpy of `bytes` split over `threads` threads, on buffers kept for the whole run (so that
// it can run between decode steps too).
class Copier {
 public:
  Copier(size_t bytes, int threads) : src_(bytes, 1), dst_(bytes, 0), threads_(threads) {}
  // Seconds of one copy.
  double once() {
    const auto t0 = Clock::now();
    copy();
    return seconds_since(t0);
  }
  // Median seconds of `trials` copies after a warm-up one.
  double median_of(int trials) {
    return bench::median_seconds([&] { copy(); }, 1, trials);
  }
  // Bytes read + written per second by a copy that took `seconds`.
  double bandwidth(double seconds) const {
    return 2.0 * static_cast<double>(src_.size()) / seconds;
  }

 private:
  void copy() {
    const size_t bytes = src_.size();
    const size_t part = bytes / static_cast<size_t>(threads_) / 4096 * 4096;
    on_threads(threads_, [&](int t) {
      const size_t lo = part * static_cast<size_t>(t);
      std::memcpy(dst_.data() + lo, src_.data() + lo, t + 1 == threads_ ? bytes - lo : part);
    });
  }

  std::vector<uint8_t> src_, dst_;
  int threads_;
};

// Median seconds of reading `bytes` of floats (a sum with 8 accumulators) split over `threads`.
double time_read(size_t bytes, int threads, int trials, double* sink) {
  const size_t n = bytes / sizeof(float);
  std::vector<float> src(n, 1.0f);
  std::vector<double> sums(static_cast<size_t>(threads));
  const size_t part = n / static_cast<size_t>(threads) / 1024 * 1024;
  auto once = [&] {
    on_threads(threads, [&](int t) {
      const size_t lo = part * static_cast<size_t>(t);
      const size_t hi = t + 1 == threads ? n : lo + part;
      float acc[16] = {};
      size_t i = lo;
      for (; i + 16 <= hi; i += 16)
        for (int j = 0; j < 16; ++j)
          acc[j] += src[i + static_cast<size_t>(j)];
      for (; i < hi; ++i)
        acc[0] += src[i];
      double s = 0;
      for (float a : acc)
        s += a;
      sums[static_cast<size_t>(t)] = s;
    });
  };
  const double seconds = bench::median_seconds(once, 1, trials);
  for (double s : sums)
    *sink += s;
  return seconds;
}

// Seconds of C[M,N] = A[M,K] * B[N,K]^T (B a weight [out, in], as the model's linear layers
// store it) with OpenBLAS on `threads` threads: the fastest of `trials` runs (what the library can
// do here).
double time_sgemm(int M, int N, int K, int threads, int trials) {
  std::vector<float> a(static_cast<size_t>(M) * K, 0.5f), b(static_cast<size_t>(N) * K, 0.25f),
      c(static_cast<size_t>(M) * N);
  openblas_set_num_threads(threads);
  auto once = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a.data(), K, b.data(), K,
                0.0f, c.data(), N);
  };
  const std::vector<double> times = bench::sample_seconds(once, 1, trials);
  // The CPU backend runs OpenBLAS single-threaded inside its own pool.
  openblas_set_num_threads(1);
  return *std::min_element(times.begin(), times.end());
}

const char* verdict(bool pass) { return pass ? "pass" : "MISS"; }

double load_average() {
  double l = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

int run(int argc, char** argv) {
  const int limit = argc > 1 ? std::atoi(argv[1]) : 20;
  const int steps = argc > 2 ? std::max(3, std::atoi(argv[2])) : 31;
  // A program cache folder to keep (later runs load the programs instead of searching); default:
  // a fresh temporary folder, removed at the end (compile is cold).
  const std::string keep_cache = argc > 3 ? argv[3] : "";
  constexpr int kPrompt = 128, kSlots = 1152, kLongContext = 1024;

  cpu::CpuBackend cpu;
  const int threads = cpu.threads();
  const io::ModelConfig cfg = models::llama_config({.layers = 12,
                                                    .hidden = 768,
                                                    .ffn = 2048,
                                                    .heads = 12,
                                                    .kv_heads = 4,
                                                    .vocab = 32000,
                                                    .tie_embeddings = true});
  const int64_t params = models::parameter_count(cfg);
  const double weight_bytes = 4.0 * static_cast<double>(params);
  // K and V rows read per step at context c: layers * 2 * kv_heads * head_dim floats per position.
  const double kv_bytes_per_pos = 4.0 * 2.0 * static_cast<double>(cfg.num_hidden_layers) *
                                  static_cast<double>(cfg.num_key_value_heads * cfg.head_dim);
  std::printf(
      "bench_llm_cpu: Llama %lld layers, hidden %lld, ffn %lld, %lld/%lld heads (head_dim %lld), "
      "vocab %lld, tied embeddings, f32\n"
      "  parameters %lld = %.1f MB of f32 weights; KV %.1f KB per position; %d threads; "
      "%s; load average %.2f\n",
      static_cast<long long>(cfg.num_hidden_layers), static_cast<long long>(cfg.hidden_size),
      static_cast<long long>(cfg.intermediate_size),
      static_cast<long long>(cfg.num_attention_heads),
      static_cast<long long>(cfg.num_key_value_heads), static_cast<long long>(cfg.head_dim),
      static_cast<long long>(cfg.vocab_size), static_cast<long long>(params), weight_bytes / 1e6,
      kv_bytes_per_pos / 1e3, threads, openblas_get_config(), load_average());

  // (a) Memory bandwidth.
  const size_t kBytes = size_t{256} << 20;
  Copier copier(kBytes, threads);
  const double copy_s = copier.median_of(9);
  const double copy_bw = copier.bandwidth(copy_s);  // read + write bytes / s
  double sink = 0;
  const double read_s = time_read(kBytes, threads, 9, &sink);
  const double read_bw = static_cast<double>(kBytes) / read_s;
  std::printf(
      "\ncopy bandwidth: memcpy 256 MiB over %d threads %.2f ms = %.2f GB/s (read + write)\n"
      "read stream:    sum over 256 MiB, %d threads %.2f ms = %.2f GB/s (read; checksum %.0f)\n",
      threads, copy_s * 1e3, copy_bw / 1e9, threads, read_s * 1e3, read_bw / 1e9, sink);

  // (b) sgemm at the prefill's shapes: [128, in] x [out, in]^T.
  struct Mm {
    const char* what;
    int N, K;
    double count;  // how many the forward has
  };
  const double L = static_cast<double>(cfg.num_hidden_layers);
  const Mm mms[] = {{"q/o proj 768x768", 768, 768, 2 * L},
                    {"k/v proj 256x768", 256, 768, 2 * L},
                    {"gate/up 2048x768", 2048, 768, 2 * L},
                    {"down 768x2048", 768, 2048, L},
                    {"lm_head 32000x768", 32000, 768, 1}};
  std::printf("\nsgemm (OpenBLAS, %d threads), M = %d tokens:\n", threads, kPrompt);
  double gemm_flops = 0, gemm_s = 0;  // the forward's matmuls, as many as the model has
  for (const Mm& m : mms) {
    const double s = time_sgemm(kPrompt, m.N, m.K, threads, 9);
    const double flops = 2.0 * kPrompt * m.N * m.K;
    std::printf("  %-20s %8.3f ms  %6.1f GFLOP/s\n", m.what, s * 1e3, flops / s / 1e9);
    gemm_flops += m.count * flops;
    gemm_s += m.count * s;
  }
  const double sgemm_gflops = gemm_flops / gemm_s / 1e9;
  std::printf("  the forward's matmuls together: %.1f GFLOP in %.1f ms = %.1f GFLOP/s\n",
              gemm_flops / 1e9, gemm_s * 1e3, sgemm_gflops);

  // The model. A fresh program cache: compile is cold.
  const auto cache =
      !keep_cache.empty()
          ? std::filesystem::path(keep_cache)
          : std::filesystem::temp_directory_path() /
                ("luminal_bench_llm_cpu_" + std::to_string(static_cast<long long>(getpid())));
  // A temporary cache is removed however the compile ends (it throws when every candidate fails).
  struct RemoveTemporary {
    std::filesystem::path dir;
    ~RemoveTemporary() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } remove_temporary{keep_cache.empty() ? cache : std::filesystem::path()};
  if (keep_cache.empty()) std::filesystem::remove_all(cache);
  const auto t_compile = Clock::now();
  models::CausalLM lm = models::CausalLM::random(cfg, cpu, {.slots = kSlots, .max_step = kPrompt},
                                                 CompileOptions()
                                                     .search_graph_limit(limit)
                                                     .seed(1)
                                                     .verbose(false)
                                                     .profile_timeout(30)
                                                     .cache_dir(cache),
                                                 7);
  const double compile_s = seconds_since(t_compile);
  Session& session = lm.session();
  std::printf(
      "\nmodel: random weights + compile (search of %d candidates per bucket) %.1f s; "
      "session memory %.1f MB\n",
      limit, compile_s, static_cast<double>(session.memory_bytes()) / 1e6);
  std::printf("  decode plan (s = 1): %s\n",
              session.llir({{"s", 1}, {"c", kPrompt}}).op_mix_string().c_str());
  std::printf("  prefill plan (s = %d): %s\n", kPrompt,
              session.llir({{"s", kPrompt}, {"c", kPrompt}}).op_mix_string().c_str());

  bool ok = true;
  auto check_token = [&](int32_t id) {
    if (id < 0 || id >= cfg.vocab_size) {
      std::printf("ERROR: token id %d outside the vocabulary\n", id);
      ok = false;
    }
  };

  // (c) TTFT.
  std::vector<int32_t> prompt(kPrompt);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(cfg.vocab_size));
  lm.reset();
  int32_t first = lm.generate(prompt, 1).tokens.at(0);  // warm-up
  check_token(first);
  std::vector<double> ttfts;
  for (int r = 0; r < 5; ++r) {
    lm.reset();
    const auto t0 = Clock::now();
    const int32_t id = lm.generate(prompt, 1).tokens.at(0);
    ttfts.push_back(seconds_since(t0));
    if (id != first) {
      std::printf("ERROR: prefill gave token %d, earlier %d\n", id, first);
      ok = false;
    }
  }
  const double ttft = median(ttfts);
  const double prefill_gflops = 2.0 * static_cast<double>(params) * kPrompt / ttft / 1e9;
  // The prefill plan alone (kernels only; it rewrites cache rows 0..127 with the same values).
  const std::vector<int64_t> base_dims = session.dims();
  double prefill_plan = 0;
  {
    std::vector<int64_t> dims = base_dims;
    dims[session.dim("s")] = kPrompt;
    dims[session.dim("c")] = kPrompt;
    Plan& plan = session.plan({{"s", kPrompt}, {"c", kPrompt}});
    prefill_plan = cpu.time(plan, 0, dims.data(), 5, 60.0);
  }

  // (d), (e) Decode steps at a held context: rewind to c - 1, then one token.
  struct DecodeResult {
    int context;
    double tpot, floor, bw;
    double plan, host;  // medians: of the plan runs, of (step - the plan run before it)
  };
  std::vector<DecodeResult> decode;
  for (int ctx : {kPrompt, kLongContext}) {
    lm.reset();
    lm.generate(prompt, 1);
    while (lm.context() < ctx - 1) {
      const int n = std::min(kPrompt, ctx - 1 - lm.context());
      lm.generate(std::vector<int32_t>(prompt.begin(), prompt.begin() + n), 1);
    }
    lm.rewind(ctx - 1);
    const int32_t id = 17;
    lm.generate({id}, 1);  // warm-up: binds the decode plan
    // The same plan, kernels only, timed after each step (so that a change of the machine's load
    // shows in both): Backend::time runs it once untimed, then once timed, rewriting cache row
    // ctx - 1 with the values the step wrote.
    std::vector<int64_t> dims = base_dims;
    dims[session.dim("s")] = 1;
    dims[session.dim("c")] = ctx;
    Plan& plan = session.plan({{"s", 1}, {"c", ctx}});
    int32_t expect = -1;
    std::vector<double> t, plan_t, copy_t;
    for (int i = 0; i < steps; ++i) {
      // The copy first: its dirty lines are written back during whatever runs next, which is
      // the plan's untimed warm-up run; the timed plan run and the step each follow a whole
      // decode step.
      copy_t.push_back(copier.once());
      plan_t.push_back(cpu.time(plan, 0, dims.data(), 1, 60.0));
      lm.rewind(ctx - 1);
      const auto t0 = Clock::now();
      const int32_t next = lm.generate({id}, 1).tokens.at(0);
      t.push_back(seconds_since(t0));
      check_token(next);
      if (expect >= 0 && next != expect) {
        std::printf("ERROR: decode at context %d gave token %d, earlier %d\n", ctx, next, expect);
        ok = false;
      }
      expect = next;
    }
    // The floor at the copy bandwidth measured between these steps (the machine's memory
    // bandwidth moves with its other load; the one measured at the start is printed too).
    const double bw = copier.bandwidth(median(copy_t));
    const double floor = (weight_bytes + kv_bytes_per_pos * ctx) / bw;
    std::vector<double> host;
    for (size_t i = 0; i < t.size(); ++i)
      host.push_back(t[i] - plan_t[i]);
    decode.push_back({ctx, median(t), floor, bw, median(plan_t), median(host)});
  }

  // Generation as an application runs it: the context grows by one every step (c = 129 .. 144),
  // so every kernel sees new dims each step.
  constexpr int kGenerated = 16;
  double tpot_generating = 0;
  {
    lm.reset();
    std::vector<double> gaps;
    auto last = Clock::now();
    int seen = 0;
    lm.generate(prompt, kGenerated + 1, {}, [&](int32_t id, std::string_view) {
      const auto now = Clock::now();
      if (seen++ > 0) gaps.push_back(std::chrono::duration<double>(now - last).count());
      last = now;
      check_token(id);
      return true;
    });
    tpot_generating = median(gaps);
  }

  std::printf("\n| measurement | result | target | |\n|---|---|---|---|\n");
  std::printf(
      "| copy bandwidth at the start (memcpy 256 MiB, %d threads, read + write) | %.2f GB/s | | "
      "|\n",
      threads, copy_bw / 1e9);
  std::printf("| read stream (sum over 256 MiB, %d threads) | %.2f GB/s | | |\n", threads,
              read_bw / 1e9);
  std::printf("| sgemm at the forward's shapes (M = 128, %d threads) | %.1f GFLOP/s | | |\n",
              threads, sgemm_gflops);
  std::printf(
      "| TTFT, %d-token prompt (the prefill plan alone: %.1f ms) | %.1f ms (%.0f tok/s) | | |\n",
      kPrompt, prefill_plan * 1e3, ttft * 1e3, kPrompt / ttft);
  std::printf(
      "| prefill GFLOP/s (2 x params x %d / TTFT) | %.1f = %.0f%% of sgemm | >= 50%% | %s |\n",
      kPrompt, prefill_gflops, 100.0 * prefill_gflops / sgemm_gflops,
      verdict(prefill_gflops >= 0.5 * sgemm_gflops));
  for (const DecodeResult& d : decode) {
    const double ratio = d.tpot / d.floor;
    const double host = d.host;
    std::printf(
        "| TPOT at context %d (floor: %.1f MB / %.2f GB/s copied between the steps = %.1f ms) | "
        "%.1f ms = %.2fx floor | %s | %s |\n",
        d.context, (d.floor * d.bw) / 1e6, d.bw / 1e9, d.floor * 1e3, d.tpot * 1e3, ratio,
        d.context == kPrompt ? "<= 1.5x" : "", d.context == kPrompt ? verdict(ratio <= 1.5) : "");
    std::printf(
        "| host overhead per step at context %d (step - plan run, paired; plan %.2f ms) "
        "| %.3f ms = %.1f%% of TPOT | < 5%% | %s |\n",
        d.context, d.plan * 1e3, host * 1e3, 100.0 * host / d.tpot, verdict(host < 0.05 * d.tpot));
  }
  std::printf("| TPOT generating %d tokens after the prompt (c = %d..%d, median) | %.1f ms | | |\n",
              kGenerated, kPrompt + 1, kPrompt + kGenerated, tpot_generating * 1e3);
  // Where the time goes: each kernel of the plans timed on its own.
  for (int ctx : {kPrompt, kLongContext}) {
    std::vector<int64_t> dims = base_dims;
    dims[session.dim("s")] = 1;
    dims[session.dim("c")] = ctx;
    Plan& plan = session.plan({{"s", 1}, {"c", ctx}});
    std::printf("\ndecode step at context %d, kernel by kernel:\n%s", ctx,
                cpu::CpuBackend::format_profile(cpu.profile(plan, 0, dims.data(), 5), 12).c_str());
  }
  {
    std::vector<int64_t> dims = base_dims;
    dims[session.dim("s")] = kPrompt;
    dims[session.dim("c")] = kPrompt;
    Plan& plan = session.plan({{"s", kPrompt}, {"c", kPrompt}});
    std::printf("\nprefill of %d tokens, kernel by kernel:\n%s", kPrompt,
                cpu::CpuBackend::format_profile(cpu.profile(plan, 0, dims.data(), 3), 12).c_str());
  }
  std::printf("\nload average at the end %.2f\n", load_average());
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::printf("ERROR: %s\n", e.what());
    return 1;
  }
}
