#pragma once
// Device code shared by the CUDA kernels that read GGUF blocks (internal to luminal/cuda):
// cuda.Dequantize and cuda.QGather (dequantize.cpp), cuda.QGemv and cuda.QGemvQ8 (qgemv.cpp),
// cuda.QuantizeQ8 (quantize_q8.cpp).
//
// The source text declares, after the prelude:
//   S_<block dtype>             unsigned char (a block tensor's parameter is its bytes)
//   lmn_deq_<t>(blk, e)         value e of the block at `blk`, bit-exact with blocks::dequantize
//                               (the same f32 operations in the same order, each rounded once)
//   struct QT_<t>               the GEMV's view of type t, in units of 32 values (a legacy block,
//                               a K sub-block or Q6_K chunk): enum BB (bytes a block), UPB (units a
//                               block), HAS_B (a min term); Raw (a unit's bytes in registers);
//                               load(row, u, raw) (aligned loads: u16 for 2-byte-aligned blocks,
//                               u32/u64/uint4 where the block size allows); dec(raw, q, a0, a1, b)
//                               (value j of the unit is a0 q[j] + b for j < 16, a1 q[j] + b
//                               after, q[j] a small integer as an exact float)
//   struct QI_<t>               the integer form's view of type t (quant_dp4a_device.cpp): four
//                               lanes share a unit; load(row, u, t, raw) lane t's bytes;
//                               ints(raw, t, v0, v1, w0, w1, a, b) its two int8x4 words, the
//                               activation words they meet, its scale and the unit's min
//   lmn_x(x, xk, u, w0, w1, ..)  an activation unit (Q8_1, or Q8_K when xk) for the integer form
//   struct QS_<t>               QI_<t> over the split layout (cuda.QRepack): load(body, head, u,
//                               t, raw); xw(q, t, xv) lane t's words of a split Q8_1 unit
#include <optional>
#include <string>

#include "luminal/core/dtype.hpp"

#include "luminal/egraph/egraph.hpp"

namespace luminal {
struct OpDef;
}

namespace luminal::cuda {

/// The device source above (one text for every type).
const std::string& quant_device_source();
/// The QI_ structs and lmn_x (part of quant_device_source()).
const char* dp4a_unit_source();
/// "q4_0" for DType::Q4_0: the suffix of lmn_deq_ and QT_.
std::string quant_tag(DType t);
/// cuda.QuantizeQ8 (quantize_q8.cpp): activation rows quantized for cuda.QGemvQ8.
const OpDef* quantize_q8_op();
/// cuda.DequantizeBF16 (dequantize.cpp): Dequantize(W) written as bf16, every execute (the
/// weight a prefill's cuBLASLt call reads, qgemm.cpp's rule "cuda.qgemm-lt").
const OpDef* dequantize_bf16_op();
/// The activation format cuda.QGemvQ8 reads beside weights of type `weight`: Q8_K for the K
/// types, Q8_1 for the legacy ones (Q4_0, Q5_0 and Q8_0 use its d and q, which equal Q8_0's).
DType cuda_activation_format(DType weight);
/// True for the eight weight block types the CUDA kernels read (kWeightBlockDTypes).
bool cuda_block_type(DType t);

/// A type's split layout (cuda.QRepack, quant_repack.cpp): each block's `body` bytes (the block
/// less its `head` bytes of scales, which sit at byte `head_at` of the block), then the heads.
struct SplitLayout {
  int body = 0, head = 0, head_at = 0;
};
/// The split layout of q4_0, q4_1, q5_0, q5_1, q8_0 and q6_k (whose GGUF blocks are not 16-byte
/// multiples), else nothing.
std::optional<SplitLayout> split_layout(DType t);
/// Adds cuda.QRepack(weight) (quant_repack.cpp: the block weight rewritten in its split layout,
/// read whole) to `eg`: its class, the same for every rule that asks.
ClassId add_qrepack(EGraph& eg, ClassId weight);
/// The device code cuda.QGemmQ8 adds after quant_device_source() (qgemm.cpp): QB_<t>::get(row,
/// u, t, b0, b1, a, b) (the K types: a, a2, b), lane t's B fragment words of unit u and its scales;
/// QBS_<t> the same over the split layout (body, head); the s8 MMAs.
const char* qgemm_device_source();
/// cuda.QGemmBF16's weight decoding (qgemm_bf16.cpp), after qgemm_device_source(): R::load(row,
/// head, u, t, raw) and R::dec(raw, u, t, b0, b1, a, a2, b) for R = QRG<QI_<t><4>>,
/// QRS<QS_<t><4>> (split layout), QRG_q8_0, QRS_q8_0 and QRK<QB_<k type>>; lmn_bf2(a, b, x, h)
/// two values of a word as a q + b in bf16.
const char* qgemm_bf16_decode_source();
/// Whether only linear layers read the block weight `w` (its HLIR readers are Dequantize(w),
/// read only by Muls), so a split copy of it replaces it in memory (qgemv.cpp).
bool only_matmuls_read(const EGraph& eg, ClassId w);

}  // namespace luminal::cuda
