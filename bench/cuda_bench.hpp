#pragma once
// Sections of bench_cuda (bench/cuda_bench.cpp runs them from main) that live in their own files:
//
//   cuda_bench_rows.cpp   row kernels: softmax, RMSNorm and row sum over a (4096, 32768) bf16
//   tensor cuda_bench_llm.cpp    dims update and prefill s change on a 32-layer decode graph;
//   SmolLM2-135M's
//                         shape in bf16 with greedy argmax in the graph (graph vs stream executor);
//                         search wall time and decode of a Llama-3-8B-shaped decode graph
//
// Each prints greppable lines (scripts/gpu-check.sh copies them into its summary) and catches its
// own errors ("<section>: FAILED: ..."), so one failing section does not hide the others.
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "bench/timing.hpp"
#include "luminal/cuda/cuda_backend.hpp"
#include "luminal/cuda/driver.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::bench_cuda {

using bench::Clock;
using bench::median;
using bench::seconds_since;

// Decode timing shared by the sections (cuda_bench_llm.cpp).

/// Options of a decode session: buckets s = 1 (and s in [2, max_step] when max_step > 1) and c in
/// [1, slots] (representative c_rep), seed 1, caches in `cache`; the prefill bucket searched at
/// s = prefill_rep.
CompileOptions decode_opts(int limit, const std::filesystem::path& cache, int slots, int max_step,
                           int c_rep, int64_t prefill_rep = 16);
/// Seeded random weights generated on the GPU, empty caches, one token id.
void fill(Session& s, const models::Decoder& d);
/// One line per searched bucket: candidates, rejections (the first one's reason), the first valid
/// candidate's time against the best, and the finalists, so a seed that failed on the device shows.
std::string search_lines(const Session& s);
/// A fresh folder name under the temp directory for `what`; with LUMINAL_BENCH_CACHE=DIR, DIR/what,
/// kept across runs (an A/B of a kernel change on the same programs: the first run searches,
/// later runs load its programs and compile only the kernels whose source changed).
std::filesystem::path temp_folder(const std::string& what);
/// Removes a temp_folder() (a kept one stays).
void clear_cache(const std::filesystem::path& cache);

// Forced programs timed on fresh buffers (cuda_bench_plans.cpp).

/// A device buffer's address for the driver API.
CUdeviceptr dptr(Buffer b);
/// Fills `b` with bytes 0x3c (bf16 and f32 about 0.0115, f16 block scales about 1.06: values do
/// not change a matmul's time), on the backend's stream.
void fill_pattern(cuda::CudaBackend& be, Buffer b);
/// Loads `llir`, binds it to fresh buffers (input `label` of input_bytes(label) bytes, filled by
/// `fill_input` or else fill_pattern; output i of output_bytes(i)), times `trials` replays and
/// releases everything: ms per replay.
double forced_plan_ms(cuda::CudaBackend& be, const LlirGraph& llir,
                      const std::function<uint64_t(const std::string&)>& input_bytes,
                      const std::function<uint64_t(size_t)>& output_bytes, int trials,
                      const std::function<void(const std::string&, Buffer)>& fill_input = {});

/// The device's L2 cache size in bytes.
int l2_bytes(cuda::CudaBackend& be);
/// Copies of a `bytes`-byte weight that together pass twice the L2 (so a replay reads its weights
/// from DRAM), at least 1 and at most `most`.
int copies_past_l2(int l2, double bytes, int most);

/// A linear layer's weight shape W [n, k] of one of the models the shape sections time.
struct LinearShape {
  const char* model;
  const char* what;  // "q/o", "k/v", "gate/up", "down", "lm head"
  int64_t n, k;
};
/// Llama-3-8B's and SmolLM2-135M's projections and LM heads.
const std::vector<LinearShape>& linear_shapes();

struct DecodeTiming {
  double ms_per_token = 0;  // execute + the token back to the host + fed in again, median
  size_t kernels = 0;       // launches of the decode plan
  double busy_ms = 0;       // sum of the kernels' times (profiled copy of the graph)
  double bytes = 0;         // sum of the kernels' bytes (their cost hints: read + written)
  double replay_ms = 0;     // one execute on the device, event-timed (median)
  std::string by_op;        // profiled time by op, largest first: "cuda.Matmul 96 x 1.234 ms"
};

/// Untimed decode steps time_decode runs before its timed ones.
constexpr int kWarmupSteps = 3;
/// KV-cache slots (the top of the c bucket) that cover decoding `steps` timed steps (and the
/// warm-up) from each of `contexts`: time_decode's context grows by one a step, so a bucket that
/// ends at the largest context fails at its next step ("no bucket matches c=1025").
int slots_covering(std::initializer_list<int> contexts, int steps);
/// Decode steps at context `ctx` with the argmax token fed back each step (c runs from ctx to
/// ctx + kWarmupSteps + steps - 1: slots_covering says how many slots that needs). A session over
/// a decoder with the output "token".
DecodeTiming time_decode(cuda::CudaBackend& be, Session& s, int ctx, int steps);

/// Softmax, RMSNorm and row sum over (4096, 32768) bf16: each program's kernel time (the sum of
/// its launches) as GB/s (bytes read + written) and % of `copy_gbs` (target >= 80%).
void row_kernels(cuda::CudaBackend& be, double copy_gbs, int limit);

/// A 32-layer Llama decode graph (bf16): host time of an execute whose only change is c (target
/// <= 20 us) with the graph executor's counters; a prefill s change 16 -> 17: nodes updated and
/// host time.
void dims_update(cuda::CudaBackend& be);

/// SmolLM2-135M's shape in bf16, random weights, greedy argmax in the graph, contexts 128 and
/// 1024: ms per token (token fed back each step) on both executors (and the graph executor with
/// full edges when programmatic ones are on), kernels per token, GPU busy
/// time (sum of kernel times) against the replay time of one decode step.
void smollm2_bf16(cuda::CudaBackend& graph_be, cuda::CudaBackend& stream_be, double copy_gbs);

/// A Llama-3-8B-shaped decode graph (32 layers, hidden 4096, 32/8 heads, FFN 14336, vocab 128256,
/// bf16 random weights generated on the GPU), generated kernels only (no cuBLASLt): search wall
/// time cold (empty kernel and program
/// caches in a fresh folder; target < 60 s) and warm (a new backend on the same caches; target
/// < 5 s), and decode ms per token at contexts 128 and 1024.
void llama3_8b(double copy_gbs, int limit);

/// The same model with the default options (cuBLASLt matmuls in the search) and a prefill bucket
/// (s in [2, 128]): search time, the cuBLASLt calls the decode program makes, prepares and
/// recaptures, ms per token at contexts 128 and 1024 (target < 4.92 ms) with the time by op, a
/// 128-token prefill, and the host cost of a prefill whose length changes. `bench_cuda N lt` runs
/// only this.
void llama3_8b_cublaslt(double copy_gbs, int limit);

/// Every GEMM shape of a Llama-3-8B layer and its LM head (bf16; decode m = 1 and prefill
/// m = 128), each as a graph of copies on distinct weights larger than twice the L2: ms per GEMM
/// generated (search without cuBLASLt), as cuBLASLt steps of our plan, as raw cuBLASLt calls
/// captured into one graph, and what a search with cuBLASLt picks; the decode step's sum of GEMM
/// times against the weights' floor (cuda_bench_gemm.cpp). `bench_cuda N gemm` runs only this.
void gemm_shapes(double copy_gbs, int limit);

/// The decode GEMV shapes of Llama-3-8B and SmolLM2-135M, m = 1, 2, 4, 8, in bf16 and f32 (`only`:
/// "bf16" or "f32" for one of them): ms, GB/s and % of `copy_gbs` per GEMV for the forced
/// cuda.Gemv and cuda.Matmul programs, then a markdown table (cuda_bench_gemv.cpp).
/// `bench_cuda N gemv [bf16|f32]` runs only this.
void gemv_shapes(double copy_gbs, const std::string& only);

/// The prefill GEMM over GGUF blocks (cuda.QGemmQ8) on the 8B's and SmolLM2's linear-layer shapes,
/// m = 16, 128, 512, weights of block type `type` ("" for q4_0): ms, int8 TOPS and weight GB/s
/// per GEMM (cuda_bench_qgemm.cpp). `bench_cuda N qgemm [TYPE]` runs only this.
void qgemm_shapes(const std::string& type);

/// A decode step of a Llama with every matrix block-quantized in `wt` (random valid blocks, no
/// file; `model` "8b": Llama-3-8B's shape, embedding and LM head in q6_k; else SmolLM2-135M's,
/// its tied embedding in q8_0; q8_0 models keep q8_0 throughout), f32 activations, cuBLASLt on:
/// ms per token at context 128, kernels, GPU busy time, the program's ops and the time by op.
/// `bench_cuda N lt-<type>` (8B) and `bench_cuda N smollm2-<type>` run only this
/// (cuda_bench_llm.cpp). With `prefill` (modes ending in "+pp") the program has a prefill bucket
/// (s in [2, 128]) too, and a 128-token prompt is timed and its kernels listed by op.
void quant_decode(double copy_gbs, int limit, const std::string& model, DType wt,
                  bool prefill = false);

/// A decode step of a newer family's shape in bf16, random weights, argmax in the graph, contexts
/// 128 and 2048 (cuda_bench_families.cpp): `which` "qwen3moe" (Qwen3-30B-A3B cut to 12 layers:
/// ms per token and the weight bytes read per token against the active-parameter floor) or
/// "gemma3" (Gemma-3-1B). `bench_cuda N qwen3moe` / `bench_cuda N gemma3` run only this.
void family_decode(double copy_gbs, int limit, const std::string& which);

/// That MoE's expert matmuls alone (gate_up [1536, 2048] with one activation row, down
/// [2048, 768] with one a choice; 8 of 128 experts) in bf16, q8_0 and q4_k, as copies reading
/// distinct experts (over twice the L2): ms and GB/s of the chosen experts' bytes for the forced
/// cuda.ExpertGemv program at each W (LUMINAL_CUDA_EXPERT_WARPS) and for the unfused one
/// (cuda_bench_families.cpp). `bench_cuda N expert` runs only this.
void expert_shapes(double copy_gbs);

}  // namespace luminal::bench_cuda
