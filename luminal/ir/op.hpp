#pragma once
// HLIR: the primitive ops every model lowers to.
//
// Each node writes one contiguous output of `shape` and `dtype`. Each input is read through a
// View (permute/broadcast/reshape live there, not as nodes).
//
// clang-format off
// | op                        | inputs                  | meaning                                       |
// |---------------------------|-------------------------|-----------------------------------------------|
// | Input                     | -                       | user data `label`; `persist` keeps it         |
// | Constant                  | -                       | scalar (rank 0) `value` of `dtype`            |
// | Iota                      | -                       | 1-D I32 of length `iota_len`: i -> iota_expr(z=i) |
// | Cast                      | x                       | elementwise conversion to `dtype`             |
// | Exp2 Log2 Sin Recip Sqrt  | x                       | float unary                                   |
// | Add Mul Mod               | a, b                    | elementwise; same dtype; Mod is C's % / fmod  |
// | LessThan                  | a, b                    | a < b, output Bool                            |
// | SumReduce MaxReduce       | x                       | reduce `axis` of the input view (axis dropped) |
// | Gather                    | indexes (int), data     | out[i] = data_view_flat[indexes[i]]           |
// | Scatter                   | dest, indexes (int), src| copy of dest, then out_flat[indexes[i]] = src[i] in order; out-of-range indices skipped |
// | Dequantize                | x (a block dtype)       | x's values decoded exactly to f32 (then `dtype`); x's view keeps whole rows |
// | Output                    | x                       | a value the user reads, under `label`         |
// clang-format on
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/shape.hpp"

namespace luminal {

enum class OpKind : uint8_t {
  Input,
  Constant,
  Iota,
  Cast,
  Exp2,
  Log2,
  Sin,
  Recip,
  Sqrt,
  Add,
  Mul,
  Mod,
  LessThan,
  SumReduce,
  MaxReduce,
  Gather,
  Scatter,
  Dequantize,
  Output,
};

std::string_view op_name(OpKind op);
bool is_unary(OpKind op);   // Cast Exp2 Log2 Sin Recip Sqrt
bool is_binary(OpKind op);  // Add Mul Mod LessThan
bool is_reduce(OpKind op);  // SumReduce MaxReduce

using NodeId = int32_t;

/// One input of a node: the producing node and how its contiguous output is viewed.
struct Operand {
  NodeId node = -1;
  View view;
};

struct Node {
  OpKind op = OpKind::Input;
  DType dtype = DType::F32;  // output element type
  Shape shape;               // output shape (the output is contiguous)
  std::vector<Operand> inputs;

  // Attributes (only those of `op` are meaningful).
  std::string label;      // Input, Output
  bool persist = false;   // Input: kept across runs (weights, caches); Output: kept alive
  double value = 0;       // Constant (float dtypes, and Bool)
  int64_t int_value = 0;  // Constant (integer dtypes; exact)
  Expr iota_expr;         // Iota
  Expr iota_len;          // Iota
  int axis = 0;           // SumReduce, MaxReduce: axis of the input view that is reduced
};

}  // namespace luminal
