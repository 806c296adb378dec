// SlotEval (see fused_eval.hpp).
#include "luminal/cpu/fused_eval.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "luminal/cpu/elem_types.hpp"
#include "luminal/cpu/int_mod_array.hpp"
#include "luminal/cpu/op_math.hpp"

namespace luminal::cpu {

namespace {

uint8_t* grow(std::unique_ptr<uint8_t[]>& buf, size_t& size, size_t bytes) {
  if (size < bytes) {
    buf.reset(new uint8_t[bytes]);
    size = bytes;
  }
  return buf.get();
}

}  // namespace

uint8_t* SlotEval::scratch(int64_t len) const {
  thread_local std::unique_ptr<uint8_t[]> buf;
  thread_local size_t size = 0;
  return grow(buf, size, insts_.size() * static_cast<size_t>(len) * 8);
}

uint8_t* SlotEval::scratch2(int64_t len) const {
  thread_local std::unique_ptr<uint8_t[]> buf;
  thread_local size_t size = 0;
  return grow(buf, size, insts_.size() * static_cast<size_t>(len) * 8);
}

namespace {
namespace eval_base {
#include "luminal/cpu/fused_eval_loops.inc"
}  // namespace eval_base
}  // namespace

// The same loops for AVX2 (8 float lanes; 64-bit integer compares and blends, which the baseline's
// SSE2 lacks, so its comparisons and selects run an element at a time), chosen at run time. Only
// "avx2": no FMA, so no contraction of a * b + c, and both copies give the same bits. Both copies
// sit in anonymous namespaces: no symbol of either is visible outside this unit.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LUMINAL_EVAL_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2")
namespace {
namespace eval_avx2 {
#include "luminal/cpu/fused_eval_loops.inc"
}  // namespace eval_avx2
}  // namespace
#pragma GCC pop_options
#endif

namespace {

bool use_avx2() {
#if defined(LUMINAL_EVAL_AVX2)
  static const bool on = [] {
    const char* v = std::getenv("LUMINAL_CPU_EVAL_AVX2");
    return __builtin_cpu_supports("avx2") && !(v != nullptr && std::string(v) == "0");
  }();
  return on;
#else
  return false;
#endif
}

}  // namespace

#if defined(LUMINAL_EVAL_AVX2)
#define LUMINAL_EVAL(call) (use_avx2() ? eval_avx2::call : eval_base::call)
#else
#define LUMINAL_EVAL(call) eval_base::call
#endif

void SlotEval::fill_constants(uint8_t* s, int64_t len, const std::vector<bool>* only) const {
  LUMINAL_EVAL(fill_constants(insts_, s, len, only));
}

void SlotEval::load(uint8_t* s, int64_t len, int i, const uint8_t* src, const StridedIndex& ix,
                    int64_t begin, int64_t n, int64_t at) const {
  LUMINAL_EVAL(load(insts_, s, len, i, src, ix, begin, n, at));
}

void SlotEval::expand(const uint8_t* from, int64_t from_len, uint8_t* to, int64_t to_len, int i,
                      int64_t count, int64_t seg) const {
  LUMINAL_EVAL(expand(insts_, from, from_len, to, to_len, i, count, seg));
}

void SlotEval::eval(uint8_t* s, int64_t len, int i, int64_t n) const {
  LUMINAL_EVAL(eval(insts_, s, len, i, n));
}

void SlotEval::store(const uint8_t* s, int64_t len, int i, DType dtype, uint8_t* out, int64_t begin,
                     int64_t n) const {
  LUMINAL_EVAL(store(s, len, i, dtype, out, begin, n));
}

}  // namespace luminal::cpu
