#pragma once
// Evaluating FusedProgram instructions over arrays (internal; cpu.Fused and cpu.Row).
//
// A scratch holds one array of `len` 8-byte elements per instruction, each of its compute type
// (float for f32/f16/bf16/tf32/fp8, double for f64, int64 for integers and Bool). Every result
// is rounded to the instruction's dtype as the reference rounds the HLIR op, so an evaluated
// program matches the unfused kernels bit for bit. The scratch is this thread's (reused by
// every call; nothing is allocated once it is large enough).
#include <cstdint>
#include <vector>

#include "luminal/cpu/strided.hpp"
#include "luminal/kernels/fused_program.hpp"

namespace luminal::cpu {

class SlotEval {
 public:
  SlotEval() = default;
  explicit SlotEval(std::vector<FusedInst> insts) : insts_(std::move(insts)) {}

  const std::vector<FusedInst>& insts() const { return insts_; }
  /// This thread's scratch for arrays of `len` elements (valid until its next call here).
  uint8_t* scratch(int64_t len) const;
  /// Fills every Const instruction's array (len elements), or only those `only` marks.
  void fill_constants(uint8_t* s, int64_t len, const std::vector<bool>* only = nullptr) const;
  /// Instruction i (not Load, not Const, not a row reduction) over elements [0, n).
  void eval(uint8_t* s, int64_t len, int i, int64_t n) const;
  /// Load instruction i: elements [begin, begin + n) of `src` through `ix`, to [at, at + n).
  void load(uint8_t* s, int64_t len, int i, const uint8_t* src, const StridedIndex& ix,
            int64_t begin, int64_t n, int64_t at = 0) const;
  /// Element j of instruction i's array in `from` (arrays of `from_len`) copied to elements
  /// [j * seg, (j + 1) * seg) of its array in `to` (arrays of `to_len`), for j in [0, count).
  void expand(const uint8_t* from, int64_t from_len, uint8_t* to, int64_t to_len, int i,
              int64_t count, int64_t seg) const;
  /// Instruction i's elements [0, n) stored to out[begin, begin + n) in `dtype`.
  void store(const uint8_t* s, int64_t len, int i, DType dtype, uint8_t* out, int64_t begin,
             int64_t n) const;
  /// The address of element j of instruction i's array.
  static uint8_t* at(uint8_t* s, int64_t len, int i) {
    return s + static_cast<size_t>(i * len) * 8;
  }
  /// A second scratch of this thread, for arrays of `len` elements.
  uint8_t* scratch2(int64_t len) const;

 private:
  std::vector<FusedInst> insts_;
};

}  // namespace luminal::cpu
