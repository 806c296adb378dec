// CUDA backend figures (needs a GPU; prints why and exits 0 without one). scripts/gpu-check.sh
// runs it. Bandwidth counts bytes read plus bytes written, for the kernels and the copy alike.
//
//   build/bench/bench_cuda [search_graph_limit=20] [rows | lt | gemm | gemv [bf16|f32] | smollm2 |
//                                                   lt-<type> | smollm2-<type> | qwen3moe |
//                                                   gemma3 | expert]
//   (rows: sections 1-3 only; lt: the 8B decode with cuBLASLt; gemm: the 8B GEMM shapes,
//   generated against cuBLASLt (cuda_bench_gemm.cpp); gemv: the decode GEMV shapes, cuda.Gemv
//   against cuda.Matmul (cuda_bench_gemv.cpp); smollm2: section 8 only; lt-q4_0, smollm2-q4_1,
//   ...: section 1 and a decode step with block-quantized weights of that type, quant_decode;
//   qwen3moe, gemma3: section 1 and a bf16 decode of that shape, family_decode; expert: section 1
//   and the MoE's expert matmuls alone, expert_shapes)
//
//   1. device-to-device copy of 256 MiB (the baseline, the driver's memcpy)
//   2. fused (a + b) * c over 256 MiB f32 inputs: one fused kernel, GB/s and % of the copy
//   3. row kernels over a (4096, 32768) bf16 tensor: softmax, RMSNorm, row sum, GB/s and % of the
//      copy (cuda_bench_rows.cpp)
//   4. search wall time of the 2-layer small transformer and the 32-layer graph of the compile
//      cache bench, cold (empty kernel and program caches) and warm (a new backend, same caches)
//   5. weights upload: 1 GiB bound from a safetensors file (mapped, staged, uploaded), warm and
//      cold (the file dropped from the page cache), against a plain read() of the file
//   6. host time per execute of a 200-kernel chain, graph vs stream executor
//   7. decode steps of the small transformer (contexts 128, 512) and of a SmolLM2-135M-shaped
//      model (contexts 128, 1024), end to end, on both executors
//   8. SmolLM2-135M's shape in bf16 with greedy argmax in the graph: ms/token on both executors,
//      kernels per token, GPU busy time against replay time (cuda_bench_llm.cpp)
//   9. dims update (only c changes) on a 32-layer decode graph, and a prefill s change 16 -> 17:
//      host time and the graph executor's counters (cuda_bench_llm.cpp)
//  10. search wall time of a Llama-3-8B-shaped decode graph, cold and warm, and its decode
//      ms/token (cuda_bench_llm.cpp)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/cuda_bench.hpp"
#include "luminal/cuda/cuda_backend.hpp"
#include "luminal/cuda/staged_upload.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "tests/support/llir_direct.hpp"

namespace {

namespace fs = std::filesystem;
using luminal::bench::Clock;
using luminal::bench::seconds_since;
using luminal::cuda::CudaBackend;

double copy_gbs(CudaBackend& be, uint64_t bytes) {
  luminal::Buffer a = be.allocate(bytes), b = be.allocate(bytes);
  std::vector<uint8_t> host(bytes, 1);
  be.upload(a, 0, host.data(), bytes);
  for (int i = 0; i < 3; ++i)
    be.copy(b, a, bytes);
  be.sync();
  auto copies = [&] {
    for (int i = 0; i < 20; ++i)
      be.copy(i % 2 ? a : b, i % 2 ? b : a, bytes);
    be.sync();
  };
  const double per_copy = luminal::bench::median_seconds(copies, 0, 5) / 20;
  be.release(a);
  be.release(b);
  return 2.0 * static_cast<double>(bytes) / per_copy * 1e-9;
}

/// The kernel time of a one-kernel program (the largest launch of its profile), in seconds.
double kernel_seconds(CudaBackend& be, luminal::Session& s, const std::string& name) {
  s.execute();
  s.sync();
  luminal::Plan& plan = s.plan();
  std::vector<int64_t> dims = s.dims();
  std::vector<luminal::cuda::KernelStat> stats = be.profile(plan, 0, dims.data(), 20);
  std::printf("%s profile:\n%s", name.c_str(), CudaBackend::format_profile(stats).c_str());
  double worst = 0;
  for (const auto& k : stats)
    worst = std::max(worst, k.ms * 1e-3);
  return worst;
}

template <class T>
std::vector<T> random_values(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<T> v(n);
  for (T& x : v)
    x = static_cast<T>(d(rng));
  return v;
}

/// The Llama of luminal::models (KV cache of `slots` rows, prefill chunks of up to 128).
luminal::models::Decoder llama(const luminal::models::LlamaSize& size, int slots) {
  return luminal::models::build_decoder(luminal::models::llama_config(size),
                                        {.slots = slots, .max_step = 128});
}

/// Seeded random weights generated on the GPU, empty caches, one token id.
void fill_model(luminal::Session& s, const luminal::models::Decoder& d) {
  luminal::models::random_weights(s, 7);
  luminal::models::init_state(s, d);
  s.set("ids", std::vector<int32_t>{3});
}

luminal::CompileOptions transformer_opts(int limit, const fs::path& cache, int slots) {
  return luminal::CompileOptions()
      .search_graph_limit(limit)
      .seed(1)
      .verbose(false)
      .cache_dir(cache)
      .dim_buckets("s", {luminal::DimBucket(1, 1), luminal::DimBucket(2, 128).representative(32)})
      .dim_buckets("c", {luminal::DimBucket(1, slots).representative(128)});
}

/// Search wall time, cold then warm (a new backend, same caches), of a Llama graph.
void search_times(const luminal::models::LlamaSize& size, int limit, const char* what) {
  const fs::path cache =
      fs::temp_directory_path() / ("luminal_bench_cuda_" + std::to_string(getpid()));
  fs::remove_all(cache);
  double t[2];
  for (int round = 0; round < 2; ++round) {
    const luminal::models::Decoder d = llama(size, 512);
    const auto t0 = Clock::now();
    CudaBackend be(luminal::cuda::CudaOptions{0, cache / "kernels", 16});
    luminal::Session s(d.graph, be, transformer_opts(limit, cache, 512));
    fill_model(s, d);
    s.compile();
    t[round] = seconds_since(t0);
    if (round == 0)
      std::printf("%s: %zu kernels compiled\n", what,
                  static_cast<size_t>(be.kernel_stats().compiled));
  }
  std::printf("%s search (limit %d): cold %.2f s, warm %.3f s\n", what, limit, t[0], t[1]);
  fs::remove_all(cache);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach the log even if a timeout kills us
  std::string why;
  if (!luminal::cuda::cuda_available(&why)) {
    std::printf("bench_cuda: skipped (%s)\n", why.c_str());
    return 0;
  }
  const int limit = argc > 1 ? std::atoi(argv[1]) : 20;
  CudaBackend be(luminal::cuda::CudaOptions{0, {}, 16});  // the graph executor
  luminal::cuda::CudaOptions stream_opts{0, {}, 16};
  stream_opts.executor = luminal::cuda::CudaOptions::Executor::Stream;
  CudaBackend stream_be(stream_opts);
  std::printf("device: %s\n", be.device_key().c_str());
  const uint64_t mib256 = uint64_t{256} << 20;
  const double copy = copy_gbs(be, mib256);
  std::printf("device-to-device copy, 256 MiB: %.0f GB/s (read + write)\n", copy);

  if (argc > 2 && std::string(argv[2]) == "expert") {  // the MoE's expert matmuls alone
    luminal::bench_cuda::expert_shapes(copy);
    return 0;
  }
  if (argc > 2 && (std::string(argv[2]) == "qwen3moe" || std::string(argv[2]) == "gemma3")) {
    luminal::bench_cuda::family_decode(copy, limit, argv[2]);  // a newer family's decode only
    return 0;
  }
  if (argc > 2) {  // lt-<type> / smollm2-<type>: a block-quantized decode only
    std::string mode = argv[2];
    const bool pp = mode.size() > 3 && mode.compare(mode.size() - 3, 3, "+pp") == 0;
    if (pp) mode.resize(mode.size() - 3);
    const size_t dash = mode.find('-');
    if (dash != std::string::npos &&
        (mode.rfind("lt-", 0) == 0 || mode.rfind("smollm2-", 0) == 0)) {
      const std::string type = mode.substr(dash + 1);
      for (luminal::DType t : luminal::kWeightBlockDTypes)
        if (luminal::name(t) == type) {
          luminal::bench_cuda::quant_decode(copy, limit, mode[0] == 'l' ? "8b" : "smollm2", t, pp);
          return 0;
        }
      std::printf(
          "bench_cuda: unknown block type '%s'; give q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k\n",
          type.c_str());
      return 1;
    }
  }
  {  // fused (a + b) * c
    const int64_t n = static_cast<int64_t>(mib256 / 4);
    luminal::Graph g;
    luminal::Tensor a = g.tensor("a", {n}), b = g.tensor("b", {n}), c = g.tensor("c", {n});
    ((a + b) * c).output("y");
    luminal::Session s(g, be, luminal::CompileOptions().search_graph_limit(limit).verbose(false));
    s.set("a", random_values<float>(static_cast<size_t>(n), 1));
    s.set("b", random_values<float>(static_cast<size_t>(n), 2));
    s.set("c", random_values<float>(static_cast<size_t>(n), 3));
    s.compile();
    std::printf("fused program: %s\n", s.llir().op_mix_string().c_str());
    const double sec = kernel_seconds(be, s, "(a + b) * c");
    const double gbs = 4.0 * static_cast<double>(mib256) / sec * 1e-9;
    std::printf("fused (a + b) * c, 3 x 256 MiB f32 in: %.3f ms, %.0f GB/s = %.0f%% of copy\n",
                sec * 1e3, gbs, 100 * gbs / copy);
  }
  // Row kernels: softmax, RMSNorm, row sum (cuda_bench_rows.cpp).
  luminal::bench_cuda::row_kernels(be, copy, limit);
  if (argc > 2 && std::string(argv[2]) == "rows") return 0;
  if (argc > 2 && std::string(argv[2]) == "lt") {  // the 8B decode with cuBLASLt only
    luminal::bench_cuda::llama3_8b_cublaslt(copy, limit);
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "gemm") {  // GEMM shapes: generated vs cuBLASLt
    luminal::bench_cuda::gemm_shapes(copy, limit);
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "qgemm") {  // prefill GEMM shapes over GGUF blocks
    luminal::bench_cuda::qgemm_shapes(argc > 3 ? argv[3] : "");
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "gemv") {  // decode GEMV shapes: Gemv vs Matmul
    luminal::bench_cuda::gemv_shapes(copy, argc > 3 ? argv[3] : "");
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "smollm2") {  // the SmolLM2 decode only
    luminal::bench_cuda::smollm2_bf16(be, stream_be, copy);
    return 0;
  }
  {  // search wall time
    search_times({}, limit, "2-layer transformer (hidden 256)");
    search_times({.layers = 32, .hidden = 512, .ffn = 1536, .vocab = 4096}, 10,
                 "32-layer transformer (hidden 512)");
  }
  {  // weights upload: 1 GiB of f32 in 16 tensors bound from a safetensors file, from the page
     // cache (warm) and from the disk (cold: the file's pages dropped), with the default number
     // of reader threads and with one; a plain read() of the file from the disk is the floor
    const int64_t per = int64_t{16} << 20;  // 64 MiB each
    const fs::path file = fs::temp_directory_path() / "luminal_bench_weights.safetensors";
    luminal::Graph g;
    std::vector<float> host(static_cast<size_t>(per));
    for (size_t i = 0; i < host.size(); ++i)
      host[i] = static_cast<float>(i % 1000) * 1e-3f;
    std::vector<luminal::io::TensorView> views;
    for (int t = 0; t < 16; ++t) {
      const std::string name = "w." + std::to_string(t);
      g.tensor(name, {per}).persist().sum(0).output("sum." + std::to_string(t));
      views.push_back({name,
                       luminal::DType::F32,
                       {per},
                       {reinterpret_cast<const uint8_t*>(host.data()), host.size() * 4},
                       {}});
    }
    luminal::io::write_safetensors(file, views);
    const uint64_t file_bytes = fs::file_size(file);
    // Writes the file back and drops it from the page cache; returns the share of its pages
    // still cached (mincore), which is not 0 on a tmpfs (set TMPDIR to a folder on a disk).
    auto drop = [&] {
      const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      ::fdatasync(fd);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      void* p = ::mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0);
      std::vector<unsigned char> pages((file_bytes + 4095) / 4096);
      ::mincore(p, file_bytes, pages.data());
      ::munmap(p, file_bytes);
      ::close(fd);
      uint64_t cached = 0;
      for (unsigned char c : pages)
        cached += c & 1;
      return static_cast<double>(cached) / static_cast<double>(pages.size());
    };
    auto bind_s = [&](CudaBackend& b) {  // a new session and mapping each time
      luminal::Session s(g, b, luminal::CompileOptions().search_graph_limit(2).verbose(false));
      auto weights = std::make_shared<const luminal::io::Weights>(luminal::io::Weights::open(file));
      const auto t0 = Clock::now();
      luminal::io::bind(s, weights);
      s.sync();
      return seconds_since(t0);
    };
    auto read_s = [&] {  // read() into a 16 MiB buffer, the kernel's readahead doing the rest
      std::vector<char> buf(size_t{16} << 20);
      const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      const auto t0 = Clock::now();
      while (::read(fd, buf.data(), buf.size()) > 0) {
      }
      const double sec = seconds_since(t0);
      ::close(fd);
      return sec;
    };
    const double gb = static_cast<double>(file_bytes) * 1e-9;
    const double warm = bind_s(be);  // just written: in the page cache
    const double cached = drop();
    const double plain = read_s();
    drop();
    const double cold = bind_s(be);
    luminal::cuda::CudaOptions one_opts{0, {}, 16};
    one_opts.upload_threads = 1;
    CudaBackend one(one_opts);
    const double warm1 = bind_s(one);  // the cold bind left the file in the page cache
    drop();
    const double cold1 = bind_s(one);
    std::printf(
        "weights upload: 1 GiB of f32 (16 tensors) bound from a safetensors file, %d reader "
        "threads: warm (page cache) %.3f s = %.1f GB/s, cold (from the disk) %.3f s = %.1f GB/s\n",
        luminal::cuda::default_host_threads(), warm, gb / warm, cold, gb / cold);
    std::printf(
        "weights upload: 1 reader thread: warm %.3f s = %.1f GB/s, cold %.3f s = %.1f GB/s\n",
        warm1, gb / warm1, cold1, gb / cold1);
    std::printf(
        "weights upload: plain read() of the same file from the disk (the floor of a cold bind): "
        "%.3f s = %.1f GB/s%s\n",
        plain, gb / plain,
        cached > 0.01 ? " (the file stayed in the page cache: TMPDIR on a tmpfs? cold is warm)"
                      : "");
    fs::remove(file);
  }
  {  // host time per launch: a 200-node chain of tiny kernels, graph vs stream executor
    luminal::Graph g;
    luminal::Tensor x = g.tensor("x", {256});
    luminal::Tensor y = x;
    for (int i = 0; i < 199; ++i)
      y = y + x;
    y.output("y");
    const luminal::LlirGraph llir = luminal::testing::llir_direct(g);
    for (CudaBackend* b : {&be, &stream_be}) {
      luminal::testing::LoadedPlan lp = luminal::testing::load_plan(*b, llir);
      luminal::testing::BufferMap in;
      std::vector<float> xv(256, 1.f);
      in["x"] = luminal::to_host_buffer(xv.data(), xv.size(), luminal::DType::F32, "x");
      luminal::testing::run_plan(lp, in, {});  // binds (instantiates the graph), warm
      // run_plan released its buffers: bind fresh ones and time enqueues, then the device.
      luminal::Buffer bx = b->allocate(1024), by = b->allocate(1024),
                      arena = b->allocate(std::max<uint64_t>(lp->arena_bytes(), 256));
      luminal::Bindings bind;
      bind.inputs = {bx};
      bind.outputs = {by};
      bind.arena = arena;
      lp->bind(0, bind);
      // Host time of one execute on an idle queue (median of 200), then the rate of 2,000
      // back to back with the device.
      lp->execute(0, nullptr);
      b->sync();
      std::vector<double> host;
      for (int i = 0; i < 200; ++i) {
        const auto t0 = Clock::now();
        lp->execute(0, nullptr);
        host.push_back(seconds_since(t0) * 1e6);
        b->sync();
      }
      const double host_us = luminal::bench::median(host);
      const int n = 2000;
      const auto t0 = Clock::now();
      for (int i = 0; i < n; ++i)
        lp->execute(0, nullptr);
      b->sync();
      const double total_us = seconds_since(t0) / n * 1e6;
      std::printf(
          "200 tiny kernels, %s executor: host %.1f us per execute (enqueue on an idle queue), "
          "%.1f us per execute back to back with the device\n",
          b == &be ? "graph" : "stream", host_us, total_us);
      b->release(bx);
      b->release(by);
      b->release(arena);
    }
  }
  // Decode steps (end to end, host included) on both executors: the 2-layer transformer at
  // contexts 128 and 512, and a SmolLM2-135M-shaped model (30 layers, hidden 576, 9/3 heads,
  // vocab 49152, tied) at context 128 and 1024.
  struct DecodeCase {
    const char* name;
    luminal::models::LlamaSize size;
    int slots;
    std::vector<int> contexts;
  };
  const std::vector<DecodeCase> cases = {{"2-layer transformer", {}, 512, {128, 512}},
                                         {"SmolLM2-135M shape",
                                          {.layers = 30,
                                           .hidden = 576,
                                           .ffn = 1536,
                                           .heads = 9,
                                           .kv_heads = 3,
                                           .vocab = 49152,
                                           .tie_embeddings = true},
                                          1024,
                                          {128, 1024}}};
  for (const DecodeCase& dc : cases) {
    const luminal::models::Decoder d = llama(dc.size, dc.slots);
    const double weight_mb =
        static_cast<double>(luminal::models::parameter_count(d.config)) * 4 / 1e6;
    for (CudaBackend* b : {&be, &stream_be}) {
      const char* exec = b == &be ? "graph" : "stream";
      luminal::Session s(
          d.graph, *b,
          transformer_opts(dc.size.layers > 2 ? 10 : limit,
                           fs::temp_directory_path() / "luminal_bench_cuda_dec", dc.slots));
      fill_model(s, d);
      const auto t0 = Clock::now();
      s.compile();
      const double compile_s = seconds_since(t0);
      const luminal::DimSlot S = s.dim("s"), C = s.dim("c");
      for (int ctx : dc.contexts) {
        std::vector<int64_t> dims = s.dims();
        dims[S] = 1;
        dims[C] = ctx;
        s.set("ids", std::vector<int32_t>{5});
        auto step = [&] {
          s.execute(dims);
          s.sync();
        };
        const double ms = 1e3 * luminal::bench::median_seconds(step, 0, 50);
        std::printf(
            "%s decode step at context %d, %s executor: %.3f ms (host + device; %.0f MB of f32 "
            "weights, floor %.3f ms at the copy bandwidth; compile %.1f s)\n",
            dc.name, ctx, exec, ms, weight_mb, weight_mb * 1e6 / (copy * 1e9) * 1e3, compile_s);
      }
      if (b == &be && dc.size.layers > 2) {  // time per op kind at context 128
        luminal::Plan& plan = s.plan({{"s", 1}, {"c", 128}});
        std::vector<int64_t> dims = s.dims();
        dims[S] = 1;
        dims[C] = 128;
        std::map<std::string, std::pair<int, double>> by_op;
        double total = 0;
        for (const auto& k : b->profile(plan, 0, dims.data(), 10)) {
          by_op[k.op].first += 1;
          by_op[k.op].second += k.ms;
          total += k.ms;
        }
        std::printf("%s decode at context 128 by op (profiled, events between kernels):\n",
                    dc.name);
        for (const auto& [op, v] : by_op)
          std::printf("  %-22s %5d launches %8.3f ms %5.1f%%\n", op.c_str(), v.first, v.second,
                      100 * v.second / total);
        std::printf("  %s\n", s.llir({{"s", 1}, {"c", 128}}).op_mix_string().c_str());
      }
      if (b == &be && dc.size.layers == 2) {
        luminal::Plan& plan = s.plan({{"s", 1}, {"c", 128}});
        std::vector<int64_t> dims = s.dims();
        dims[S] = 1;
        dims[C] = 128;
        std::printf("decode step kernels at context 128:\n%s",
                    CudaBackend::format_profile(b->profile(plan, 0, dims.data(), 20)).c_str());
      }
    }
  }
  luminal::bench_cuda::smollm2_bf16(be, stream_be, copy);
  luminal::bench_cuda::dims_update(be);
  luminal::bench_cuda::llama3_8b(copy, limit);
  return 0;
}
