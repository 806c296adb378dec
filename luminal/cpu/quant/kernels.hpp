#pragma once
// The quantized dot-product kernels of the CPU backend: one table per instruction set, chosen at
// run time (isa.hpp). This header is the whole interface between the ops (cpu.QuantizeQ8,
// cpu.QMatmul) and the per-ISA translation units, which are compiled with their own -m flags and
// include nothing else of the project: POD types and function pointers only.
//
// A weight row is `nblocks` consecutive blocks of its type (core/blocks.hpp); an activation row
// is the same number of values quantized to blocks::activation_format(weight type) (Q8_0, Q8_1 or
// Q8_K), `nblocks * block_size(weight) / block_size(format)` blocks of that format.
//
// Every ISA gives bitwise the same results: the integer dot products are exact, each output
// accumulates the per-block terms in the same 8 float lanes in the same order, and the lanes are
// summed in one fixed order. So a forced ISA (LUMINAL_CPU_ISA) changes speed, never values.
#include <cstdint>

namespace luminal::cpu::quant {

/// Quantizes `k` floats (a multiple of the format's block size) to blocks of Q8_0, Q8_1 or Q8_K,
/// bitwise as quantize_reference() (quantize_ref.hpp) does.
using QuantizeRowFn = void (*)(const float* x, uint8_t* out, int64_t k);

/// A tile of dot products: for r < rows and i < m,
///   out[r * out_rs + i * out_ms] = sum over the row of  weight_row[r] . activation_row[i]
/// where weight row r starts at w_rows[r] (nblocks blocks of the weight type) and activation row i
/// at xq + i * xq_stride (quantized, the matching format). rows <= 4 and m <= 4 are the tiles the
/// ops use; any rows, m >= 1 must be accepted. Speed: a call given many rows (a thread's whole
/// chunk) tiles them itself and, for a weight stored row after row, reads it as a few long
/// sequential streams: about twice the rate from DRAM of one call per 4 rows (docs/quant.md).
using DotRowsFn = void (*)(int64_t nblocks, const uint8_t* const* w_rows, int rows,
                           const uint8_t* xq, int64_t xq_stride, int m, float* out, int64_t out_rs,
                           int64_t out_ms);

/// Rewrites `rows` weight rows of `nblocks` Q4_0 or Q5_0 blocks as Q8_0 blocks, row after row at
/// `out` (rows * nblocks * 34 bytes): the same d, and q - 8 (q - 16) as the int8 quants. The Q8_0
/// dot of the result gives bitwise what the original type's dot gives (the same integer factors,
/// the same d); a prefill pays the unpacking once per panel instead of once per 4 activation rows.
using RepackFn = void (*)(const uint8_t* const* w_rows, int rows, int64_t nblocks, uint8_t* out);

/// A prefill GEMM: the same outputs as DotRowsFn, bitwise, for any rows and m >= 1, faster for
/// m > 4. Q4_0, Q5_0 and Q8_0 weights (the Q8_0 activation format) are rewritten once into
/// `scratch` as 4-row tiles of w + 128 bytes and f32 scales, and every group of 4 activation rows
/// passes over them in 4 x 4 register tiles: per block and output one vpdpbusd, one conversion
/// and one FMA. Q4_K, Q5_K and Q6_K weights go in sub-panels that stay in L1, unpacked once into
/// pairs of rows, each passed over by every group of 4 activation rows in 2 x 4 register tiles: per
/// 32 values and output one vpmaddubsw and one vpdpwssd (on AVX2 vpmaddwd + vpaddd). On AVX2 the
/// legacy types go in 2 x 4 register tiles of unsigned quants against aligned copies of the
/// activation (Q8_0 as int16 pairs, two vpmaddwd a block; kernels_x86_qgemm_avx2.inc).
/// `scratch` holds the table's gemm_scratch(nblocks, rows, m) bytes (its alignment does not
/// matter).
using GemmFn = void (*)(int64_t nblocks, const uint8_t* const* w_rows, int rows, const uint8_t* xq,
                        int64_t xq_stride, int m, float* out, int64_t out_rs, int64_t out_ms,
                        uint8_t* scratch);
/// The scratch bytes a GemmFn needs for `rows` weight rows of `nblocks` blocks and `m`
/// activation rows.
using GemmScratchFn = int64_t (*)(int64_t nblocks, int rows, int m);

/// One instruction set's kernels. Index the arrays with the helpers below.
struct QuantKernels {
  const char* isa;                // "portable", "avx2", "avxvnni", "avx512vnni"
  QuantizeRowFn quantize[3];      // Q8_0, Q8_1, Q8_K
  DotRowsFn dot[8];               // weight Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K
  RepackFn to_q8_0[8];            // by weight: Q4_0 and Q5_0; null for the others
  GemmFn gemm[8];                 // by weight: Q4_0, Q5_0, Q8_0 on the VNNI paths, the K types
                                  // on avx512vnni, all eight on avx2; null otherwise
  GemmScratchFn gemm_scratch[8];  // beside each non-null gemm
};

// Index of a weight type in QuantKernels::dot, of an activation format in ::quantize (the values
// of luminal::DType are not visible to the ISA units; quant_index.hpp maps them).
enum WeightIndex : int { kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ4_K, kQ5_K, kQ6_K };
enum ActIndex : int { kA8_0, kA8_1, kA8_K };

// Each translation unit defines one getter; it returns null where the unit was compiled without
// its instruction set (not x86-64, or the compiler lacks the flag).
const QuantKernels* kernels_portable();
const QuantKernels* kernels_avx2();
const QuantKernels* kernels_avxvnni();
const QuantKernels* kernels_avx512vnni();

}  // namespace luminal::cpu::quant
