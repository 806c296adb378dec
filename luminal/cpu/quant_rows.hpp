#pragma once
// Row tables of block-quantized weights (internal to the CPU backend): where each row of a
// static whole-row view of a block tensor starts, in bytes. Dequantize, QGather and QMatmul read
// weights through them, so row slices, the rotary row permutation and broadcast rows cost nothing.
#include <cstdint>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/core/error.hpp"
#include "luminal/core/shape.hpp"

namespace luminal::cpu {

/// Byte offset in a tensor of block type `t` of each row of `v` (a view whose last axis is one
/// whole row with stride 1 and whose other axes are static), in row-major order of v's outer
/// axes. Throws luminal::Error naming `op` when the view is not such a view.
inline std::vector<uint64_t> row_byte_offsets(const View& v, DType t, const char* op) {
  if (v.rank() == 0 || !v.dims.back().is_const())
    throw Error(std::string(op) + ": the " + std::string(name(t)) +
                " input is not read through a view of whole rows");
  if (v.has_base())
    throw Error(std::string(op) + ": the " + std::string(name(t)) +
                " input is read at an element offset (" + v.base.to_string() + ")");
  const int64_t row = v.dims.back().as_const();
  std::vector<int64_t> dims;
  int64_t rows = 1;
  for (int i = 0; i + 1 < v.rank(); ++i) {
    if (!v.dims[i].is_const())
      throw Error(std::string(op) + ": a view of a block-quantized tensor has a dynamic axis");
    dims.push_back(v.dims[i].as_const());
    rows *= dims.back();
  }
  std::vector<uint64_t> out(static_cast<size_t>(rows));
  std::vector<int64_t> idx(dims.size(), 0);
  std::vector<std::vector<int64_t>> axis(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    for (int64_t k = 0; k < dims[i]; ++k)
      axis[i].push_back(v.strides[i].eval({}, k));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = 0;
    for (size_t i = 0; i < dims.size(); ++i)
      off += axis[i][static_cast<size_t>(idx[i])];
    out[static_cast<size_t>(r)] = blocks::block_byte_offset(t, off, row);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

}  // namespace luminal::cpu
