#pragma once
// The fused elementwise program: a backend-neutral kernel IR every backend's fused op carries as
// its payload (the CPU's cpu.Fused; CUDA's next).
//
// The e-node / LLIR node has the region's output dtype and shape; its children are the region's
// external inputs, child i read through attrs.views[i] (the same tensor may appear twice with
// different views); its payload is a FusedProgram, a small SSA list whose last instruction is
// the result:
//
//   %0 = load 0 f16              // child 0 at output element i, through views[0]
//   %1 = const 0.5 f16
//   %2 = mul %0 %1 f16           // computed in f32, rounded to f16 (as the reference does)
//   %3 = cast %2 f32
//
// Each instruction rounds its result to its dtype exactly as the reference rounds the HLIR op,
// so a fused region matches the unfused program bit for bit. Loads read child i at the
// row-major multi-index of the flat output index over that view's dims (every view has the
// output's element count). The rules that build these programs are in fusion.hpp.
// Example: examples/snippets/kernels/fused_program.cpp (the program above, built and read back).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/egraph/attrs.hpp"

namespace luminal {

enum class FusedOpcode : uint8_t {
  Load,   // a = child index
  Const,  // value (floats, Bool) / int_value (integers)
  Exp2,   // unary (float dtypes): a
  Log2,
  Sin,
  Recip,
  Sqrt,
  Cast,  // a (any dtype) to this instruction's dtype
  Add,   // binary: a, b of one dtype
  Mul,
  Mod,
  LessThan,  // result Bool
  Select,    // a (Bool) ? b : c
  // Row reductions (only in the programs of row ops, luminal/kernels/row_rule.hpp): the sum or
  // max of element value a over the last axis of the node's shape, the same for every element
  // of a row. Float dtypes only; sums accumulate in double and round to their dtype (16-bit
  // ones through f32, as the SumReduce kernel), max propagates NaN.
  RowSum,
  RowMax,
};

std::string_view opcode_name(FusedOpcode op);
/// Exp2 Log2 Sin Recip Sqrt (float dtypes only).
bool is_unary_math(FusedOpcode op);
/// Add Mul Mod LessThan.
bool is_binary(FusedOpcode op);
/// Operands an instruction reads (Load and Const: 0; Select: 3).
int arity(FusedOpcode op);
/// RowSum RowMax.
bool is_row_reduce(FusedOpcode op);

struct FusedInst {
  FusedOpcode op = FusedOpcode::Load;
  DType dtype = DType::F32;  // dtype of the result
  int32_t a = -1, b = -1, c = -1;
  double value = 0;
  int64_t int_value = 0;

  /// Values compare bitwise (a NaN constant equals itself).
  bool operator==(const FusedInst& o) const;
};

struct FusedProgram final : Payload {
  std::vector<FusedInst> insts;

  FusedProgram() = default;
  explicit FusedProgram(std::vector<FusedInst> i) : insts(std::move(i)) {}

  std::string_view kind() const override { return "fused_program"; }
  /// One instruction per ';': "opcode dtype a b c value-bits-hex int_value".
  std::string serialize() const override;
  /// Reads serialize()'s form back; throws luminal::Error on malformed text.
  static std::shared_ptr<const FusedProgram> deserialize(std::string_view text);
  size_t hash() const override;
  bool equals(const Payload& o) const override;
  /// "%0=load0:f32 %1=exp2(%0):f32 ..."
  std::string to_string() const override;

  /// Number of children the loads reference (largest load index + 1).
  int num_children() const;
  /// Throws luminal::Error when an operand is not an earlier instruction or dtypes disagree.
  void validate() const;
  /// True when some instruction is a row reduction (a row op's program, not an elementwise one).
  bool has_row_reduce() const;
};

/// Fusion limits (a program above them is not built).
inline constexpr int kFusedMaxInsts = 32;
inline constexpr int kFusedMaxChildren = 8;

}  // namespace luminal
