// Quantized GEMV (decode, m = 1) per weight type and ISA, single-threaded, beside the copy and
// read bandwidth of the same number of bytes measured in the same run:
//
//   build/bench/bench_quant_gemv [step|gemm] [type ...]      (default: every weight type)
//
// Shapes are SmolLM2-135M's matmuls, rows x k: 576x576 (q, o), 192x576 (k, v), 1536x576 (gate,
// up), 576x1536 (down), 49152x576 (the tied LM head). The K types need k % 256 == 0, so they run
// 576x1536 and 12288x1536, a matrix of about the LM head's size. The "cold" rows cycle over 6
// (8) copies of the largest matrix, about 100 MB in all, so every call reads from DRAM, as a
// decode step reading the whole model does; their memcpy and read baselines use as many bytes.
//
// The activation is quantized once (its time is printed apart); the GEMV calls the ISA's dot
// kernel on chunks of max(16, rows / 8) weight rows (a thread's share in cpu.QMatmul on 2
// threads), and reads each weight byte once.
//   m=1     weight bytes read per second
//   memcpy  bytes copied per second by memcpy on a buffer of the same size (each read and
//           written once); "ratio" is m=1 over it
//   read    a plain sum over the same number of bytes: the read bandwidth a GEMV could reach
//   m=4     weight bytes per second of the 4 x 4 prefill tile (one pass dots them with 4 rows)
// Small matrices stay in cache between calls, as do the baselines' buffers of the same size.
// Then (alone with `step`) a decode step's GEMVs on 1 and 2 threads (run_step below), and
// prefill matmuls of 64 activation rows (run_gemm).
// Each time is the fastest of 15 samples (the box is shared: other work only adds time).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/timing.hpp"
#include "luminal/core/blocks.hpp"
#include "luminal/core/dtype.hpp"
#include "luminal/cpu/qmatmul_split.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/cpu/quant/quant_index.hpp"
#include "luminal/cpu/thread_pool.hpp"

namespace {

using namespace luminal;
using cpu::quant::QuantIsa;
using cpu::quant::QuantKernels;

struct Shape {
  int64_t rows, k;
  int copies = 1;  // > 1: calls cycle over this many copies, so the weights come from DRAM
};

// Seconds of one call of f: the fastest of 15 samples, each repeating f for about 2 ms.
template <class F>
double seconds_per_call(F&& f) {
  const auto t0 = bench::Clock::now();
  f();
  const double once = std::max(bench::seconds_since(t0), 1e-9);
  const int reps = std::clamp(static_cast<int>(2e-3 / once), 1, 100000);
  const std::vector<double> t = bench::sample_seconds(
      [&] {
        for (int i = 0; i < reps; ++i)
          f();
      },
      1, 15);
  return *std::min_element(t.begin(), t.end()) / reps;
}

struct Baseline {
  double copy_gbps, read_gbps;
};

Baseline baseline(uint64_t bytes) {
  std::vector<uint8_t> a(bytes, 1), b(bytes, 2);
  const double sc = seconds_per_call([&] { std::memcpy(b.data(), a.data(), bytes); });
  std::vector<uint64_t> words(bytes / 8, 3);
  volatile uint64_t sink = 0;
  const double sr = seconds_per_call([&] {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= words.size(); i += 4)
      s0 += words[i], s1 += words[i + 1], s2 += words[i + 2], s3 += words[i + 3];
    sink = sink + s0 + s1 + s2 + s3;
  });
  return {static_cast<double>(bytes) / sc / 1e9, static_cast<double>(bytes) / sr / 1e9};
}

void run_type(DType t) {
  const DType af = blocks::activation_format(t);
  std::vector<Shape> shapes;
  if (block_size(t) == 32)
    shapes = {{576, 576}, {192, 576}, {1536, 576}, {576, 1536}, {49152, 576}, {49152, 576, 6}};
  else
    shapes = {{576, 1536}, {12288, 1536}, {12288, 1536, 8}};
  for (const Shape& sh : shapes) {
    const uint64_t row_bytes = storage_bytes(t, sh.k), bytes = row_bytes * sh.rows;
    std::vector<uint8_t> w(bytes * sh.copies);
    blocks::fill_valid_blocks(t, w, 1);
    std::vector<const uint8_t*> rows(sh.rows * sh.copies);
    for (int64_t r = 0; r < sh.rows * sh.copies; ++r)
      rows[r] = w.data() + r * row_bytes;
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> x(4 * sh.k);
    for (float& v : x)
      v = u(rng);
    const int64_t xs = static_cast<int64_t>(storage_bytes(af, sh.k));
    const int64_t nb = sh.k / block_size(t);
    std::vector<uint8_t> xq(4 * xs);
    std::vector<float> out(4 * sh.rows);
    const Baseline base = baseline(bytes * sh.copies);
    for (QuantIsa isa : cpu::quant::available_isas()) {
      const QuantKernels& kern = cpu::quant::kernels_for(isa);
      const auto quantize = kern.quantize[cpu::quant::act_index(af)];
      const auto dot = kern.dot[cpu::quant::weight_index(t)];
      for (int i = 0; i < 4; ++i)
        quantize(x.data() + i * sh.k, xq.data() + i * xs, sh.k);
      // Rows per call: a thread's chunk in cpu.QMatmul on 2 threads, max(16, rows / 8).
      const int64_t chunk = std::max<int64_t>(16, sh.rows / 8 / 4 * 4);
      int next = 0;
      auto gemv = [&](int m) {
        const uint8_t* const* w_rows = rows.data() + sh.rows * (next++ % sh.copies);
        for (int64_t r = 0; r < sh.rows; r += chunk)
          dot(nb, w_rows + r, static_cast<int>(std::min<int64_t>(chunk, sh.rows - r)), xq.data(),
              xs, m, out.data() + m * r, m, 1);
      };
      const double sq = seconds_per_call([&] { quantize(x.data(), xq.data(), sh.k); });
      const double s1 = seconds_per_call([&] { gemv(1); });
      const double s4 = seconds_per_call([&] { gemv(4); });
      const double gb = static_cast<double>(bytes) / 1e9;
      std::printf(
          "%-5s %-10s %6lldx%-5lld%s %7.3f MB %9.1f us %6.2f GB/s %6.2f GB/s %5.2fx "
          "%6.2f GB/s %6.2f GB/s %6.0f ns\n",
          std::string(name(t)).c_str(), kern.isa, static_cast<long long>(sh.rows),
          static_cast<long long>(sh.k), sh.copies > 1 ? " cold" : "     ", gb * 1e3, s1 * 1e6,
          gb / s1, base.copy_gbps, gb / s1 / base.copy_gbps, base.read_gbps, gb / s4, sq * 1e9);
      std::fflush(stdout);
    }
  }
}

// A decode step's GEMVs: every matrix of SmolLM2-135M's 30 layers in order (q, k, v, o, gate, up,
// down; K types: down only, the rest need k % 256 == 0), each read once from DRAM (66-76 MB),
// split over `threads` as cpu.QMatmul splits them (chunks of a multiple of 4 rows, 2 a thread,
// claimed from the pool). Beside it, a plain read of the same bytes on as many threads.
void run_step(DType t, int threads) {
  const DType af = blocks::activation_format(t);
  std::vector<std::pair<int64_t, int64_t>> mats;  // rows x k
  for (int l = 0; l < 30; ++l) {
    if (block_size(t) == 32)
      for (auto rk : {std::pair<int64_t, int64_t>{576, 576},
                      {192, 576},
                      {192, 576},
                      {576, 576},
                      {1536, 576},
                      {1536, 576}})
        mats.push_back(rk);
    mats.push_back({576, 1536});
  }
  std::vector<std::vector<uint8_t>> w;
  std::vector<std::vector<const uint8_t*>> rows;
  uint64_t bytes = 0;
  for (auto [n, k] : mats) {
    const uint64_t rb = storage_bytes(t, k);
    w.emplace_back(rb * n);
    blocks::fill_valid_blocks(t, w.back(), static_cast<uint64_t>(w.size()));
    rows.emplace_back();
    for (int64_t r = 0; r < n; ++r)
      rows.back().push_back(w.back().data() + r * rb);
    bytes += rb * n;
  }
  std::vector<float> x(1536, 0.5f), out(1536);
  std::vector<uint8_t> xq(storage_bytes(af, 1536));
  const QuantKernels& kern = cpu::quant::active_kernels();
  kern.quantize[cpu::quant::act_index(af)](x.data(), xq.data(), 1536);
  const auto dot = kern.dot[cpu::quant::weight_index(t)];
  auto step = [&] {
    for (size_t i = 0; i < mats.size(); ++i) {
      const auto [n, k] = mats[i];
      const int64_t chunk = cpu::qtask_rows(n, threads, 0);
      const int64_t tasks = (n + chunk - 1) / chunk;
      cpu::parallel_for(tasks, threads, [&](int64_t c) {
        const int64_t b = c * chunk, e = std::min(n, b + chunk);
        dot(k / block_size(t), rows[i].data() + b, static_cast<int>(e - b), xq.data(), 0, 1,
            out.data() + b, 1, 1);
      });
    }
  };
  // A plain read of as many bytes, split the same way over the threads.
  std::vector<uint64_t> words(bytes / 8, 3);
  volatile uint64_t sink = 0;
  auto read = [&] {
    const int64_t parts = 4 * threads, per = static_cast<int64_t>(words.size()) / parts;
    cpu::parallel_for(parts, threads, [&](int64_t p) {
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int64_t i = p * per; i + 4 <= (p + 1) * per; i += 4)
        s0 += words[i], s1 += words[i + 1], s2 += words[i + 2], s3 += words[i + 3];
      sink = sink + s0 + s1 + s2 + s3;
    });
  };
  const double ss = seconds_per_call(step), sr = seconds_per_call(read);
  const double gb = static_cast<double>(bytes) / 1e9;
  std::printf(
      "%-5s %-10s step of %3zu GEMVs, %d thread%s %7.1f MB %9.1f us %6.2f GB/s  read %6.2f GB/s "
      "%5.2fx\n",
      std::string(name(t)).c_str(), kern.isa, mats.size(), threads, threads > 1 ? "s" : " ",
      gb * 1e3, ss * 1e6, gb / ss, gb / sr, (gb / ss) / (gb / sr));
  std::fflush(stdout);
}

// A prefill matmul: 64 activation rows against rows x k weights, split over `threads` as
// cpu.QMatmul splits it (chunks as above; inside each, panels of about 128 KiB of weight rows that
// every group of 4 activation rows passes over, Q4_0 and Q5_0 panels first unpacked to Q8_0).
// Integer multiply-adds per second.
void run_gemm(DType t, int64_t n, int64_t k, int threads) {
  const DType af = blocks::activation_format(t);
  const int64_t m = 64, rb = static_cast<int64_t>(storage_bytes(t, k));
  const int64_t xs = static_cast<int64_t>(storage_bytes(af, k));
  std::vector<uint8_t> w(static_cast<size_t>(rb * n)), xq(static_cast<size_t>(xs * m));
  blocks::fill_valid_blocks(t, w, 3);
  std::vector<const uint8_t*> rows(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r)
    rows[static_cast<size_t>(r)] = w.data() + r * rb;
  std::vector<float> x(static_cast<size_t>(k), 0.25f), out(static_cast<size_t>(m * n));
  const QuantKernels& kern = cpu::quant::active_kernels();
  for (int64_t i = 0; i < m; ++i)
    kern.quantize[cpu::quant::act_index(af)](x.data(), xq.data() + i * xs, k);
  const auto own_dot = kern.dot[cpu::quant::weight_index(t)];
  const auto repack = kern.to_q8_0[cpu::quant::weight_index(t)];
  const int64_t nb = k / block_size(t);
  const int64_t panel = cpu::qpanel_rows(rb);
  const int64_t chunk = cpu::qtask_rows(n, threads, panel);
  const auto gemm = kern.gemm[cpu::quant::weight_index(t)];
  const double s = seconds_per_call([&] {
    cpu::parallel_for((n + chunk - 1) / chunk, threads, [&](int64_t c) {
      const int64_t b = c * chunk, e = std::min(n, b + chunk);
      for (int64_t p0 = b; p0 < e; p0 += panel) {
        const int64_t p1 = std::min(e, p0 + panel);
        const uint8_t* const* prow = rows.data() + p0;
        if (gemm) {  // the ISA's GEMM: the panel packed once, every activation row over it
          thread_local std::vector<uint8_t> scratch;
          scratch.resize(static_cast<size_t>(kern.gemm_scratch[cpu::quant::weight_index(t)](
              nb, static_cast<int>(p1 - p0), static_cast<int>(m))));
          gemm(nb, prow, static_cast<int>(p1 - p0), xq.data(), xs, static_cast<int>(m),
               out.data() + p0, 1, n, scratch.data());
          continue;
        }
        auto dot = own_dot;
        if (repack) {  // Q4_0, Q5_0: the panel unpacked to Q8_0 once, as cpu.QMatmul does
          thread_local std::vector<uint8_t> q8;
          thread_local std::vector<const uint8_t*> q8_rows;
          q8.resize(static_cast<size_t>((p1 - p0) * nb * 34));
          q8_rows.resize(static_cast<size_t>(p1 - p0));
          repack(prow, static_cast<int>(p1 - p0), nb, q8.data());
          for (int64_t j = 0; j < p1 - p0; ++j)
            q8_rows[static_cast<size_t>(j)] = q8.data() + j * nb * 34;
          prow = q8_rows.data();
          dot = kern.dot[cpu::quant::kQ8_0];
        }
        for (int64_t i = 0; i < m; i += 4)
          dot(nb, prow, static_cast<int>(p1 - p0), xq.data() + i * xs, xs, 4,
              out.data() + i * n + p0, 1, n);
      }
    });
  });
  std::printf("%-5s %-10s [64 x %lld] x [%lld x %lld]^T, %d thread%s %9.1f us %7.1f GMAC/s\n",
              std::string(name(t)).c_str(), kern.isa, static_cast<long long>(k),
              static_cast<long long>(n), static_cast<long long>(k), threads,
              threads > 1 ? "s" : " ", s * 1e6, static_cast<double>(m * n * k) / s / 1e9);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // `step` first: only the decode-step and prefill figures; `gemm`: only the prefill ones.
  const bool step_only = argc > 1 && std::string(argv[1]) == "step";
  const bool gemm_only = argc > 1 && std::string(argv[1]) == "gemm";
  std::vector<std::string> types(argv + (step_only || gemm_only ? 2 : 1), argv + argc);
  auto wanted = [&](DType t) {
    return types.empty() || std::find(types.begin(), types.end(), name(t)) != types.end();
  };
  if (!step_only && !gemm_only) {
    std::printf("quantized GEMV, 1 thread; ISAs here: ");
    for (QuantIsa i : cpu::quant::available_isas())
      std::printf("%s ", cpu::quant::isa_name(i));
    std::printf("(detected %s)\n", cpu::quant::isa_name(cpu::quant::detect()));
    std::printf("%-5s %-10s %17s %10s %12s %11s %11s %6s %11s %11s %9s\n", "type", "isa",
                "rows x k", "weights", "m=1 time", "m=1", "memcpy", "ratio", "read", "m=4",
                "quantize");
    for (DType t : kWeightBlockDTypes)
      if (wanted(t)) run_type(t);
  }
  if (!gemm_only) {
    std::printf("\na decode step's GEMVs from DRAM, %s (the active ISA):\n",
                cpu::quant::active_kernels().isa);
    for (DType t : kWeightBlockDTypes) {
      if (!wanted(t)) continue;
      run_step(t, 1);
      run_step(t, 2);
    }
  }
  std::printf("\nprefill matmuls (64 activation rows), %s:\n", cpu::quant::active_kernels().isa);
  for (DType t : kWeightBlockDTypes) {
    if (!wanted(t)) continue;
    for (int th : {1, 2}) {
      if (block_size(t) == 32) {
        run_gemm(t, 1536, 576, th);
        run_gemm(t, 49152, 576, th);
      }
      run_gemm(t, 576, 1536, th);
    }
  }
  return 0;
}
