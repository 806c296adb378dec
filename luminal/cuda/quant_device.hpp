#pragma once
// Device code shared by the CUDA kernels that read GGUF blocks (internal to luminal/cuda):
// cuda.Dequantize (dequantize.cpp), cuda.QGather (qgather.cpp) and cuda.QGemv (qgemv.cpp).
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
#include <string>

#include "luminal/core/dtype.hpp"

namespace luminal::cuda {

/// The device source above (one text for every type).
const std::string& quant_device_source();
/// "q4_0" for DType::Q4_0: the suffix of lmn_deq_ and QT_.
std::string quant_tag(DType t);
/// True for the eight weight block types the CUDA kernels read (kWeightBlockDTypes).
bool cuda_block_type(DType t);

}  // namespace luminal::cuda
