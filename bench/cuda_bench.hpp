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
#include <string>

#include "bench/timing.hpp"
#include "luminal/cuda/cuda_backend.hpp"

namespace luminal::bench_cuda {

using bench::Clock;
using bench::median;
using bench::seconds_since;

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

/// A decode step of a Llama with every matrix block-quantized in `wt` (random valid blocks, no
/// file; `model` "8b": Llama-3-8B's shape, embedding and LM head in q6_k; else SmolLM2-135M's,
/// its tied embedding in q8_0; q8_0 models keep q8_0 throughout), f32 activations, cuBLASLt on:
/// ms per token at context 128, kernels, GPU busy time, the program's ops and the time by op.
/// `bench_cuda N lt-<type>` (8B) and `bench_cuda N smollm2-<type>` run only this
/// (cuda_bench_llm.cpp).
void quant_decode(double copy_gbs, int limit, const std::string& model, DType wt);

}  // namespace luminal::bench_cuda
