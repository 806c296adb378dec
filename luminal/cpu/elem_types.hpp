#pragma once
// Value-level numerics for CPU kernels that compute several ops per element without storing
// intermediates (internal; cpu.Fused and cpu.Matmul). Built on primitive_util.hpp's element
// access, so fused results match the primitive kernels and the reference bit for bit.
//
// A value of dtype T lives in compute_t<T> (float for f32/f16/bf16/tf32/fp8, double for f64,
// int64 for integers and Bool); round_to<T> gives what storing and reloading it would give, and
// convert_to<T> what a Cast to T gives.
// Example: examples/snippets/cpu/elem_types.cpp (a Mul as the reference stores it in bf16; a Cast
// f32 -> i8 that wraps).
#include <cstdint>
#include <cstring>

#include "luminal/cpu/primitive_util.hpp"

namespace luminal::cpu::num {

/// `v` (any compute type) stored into a dtype-T element and read back: the reference's Cast
/// (float sources truncate/saturate into integers, narrow floats round via f32, Bool is v != 0).
template <DType T, class C>
inline compute_t<T> convert_to(C v) {
  if constexpr (kNativeFloat<T> && std::is_same_v<C, compute_t<T>>) {
    return v;
  } else if constexpr (T == DType::I64 && std::is_same_v<C, int64_t>) {
    return v;
  } else {
    uint8_t buf[sizeof(storage_t<T>)];
    store_elem<T>(buf, 0, v);
    return load_elem<T>(buf, 0);
  }
}

/// A value of T's compute type rounded (or wrapped) to T.
template <DType T>
inline compute_t<T> round_to(compute_t<T> v) {
  return convert_to<T>(v);
}

inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
/// C's truncated remainder; x % 0 (and x % -1, avoiding INT64_MIN % -1) is 0, as the reference.
inline int64_t int_mod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  return a % b;
}

}  // namespace luminal::cpu::num
