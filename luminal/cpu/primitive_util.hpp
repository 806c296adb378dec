#pragma once
// Shared pieces of the CPU primitive kernels (internal): typed element access that matches the
// reference interpreter's numerics, views evaluated and cached per dyn map, and a block-parallel
// loop (thread_pool.hpp) that rethrows a kernel's exception on the calling thread.
//
// Numerics (as luminal/runtime/reference_ops.cpp): an element is computed in its dtype's compute
// type (compute_t<T>: f32 for f32/f16/bf16/tf32/fp8, double for f64, int64 for integers and
// Bool) and rounded or wrapped once when stored.
// Example: examples/snippets/cpu/primitive_util.cpp (a bf16 element loads as float; 300 stored
// as i8 wraps to 44).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <type_traits>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/strided.hpp"
#include "luminal/cpu/thread_pool.hpp"
#include "luminal/program/llir.hpp"

namespace luminal::cpu {

// ---------------------------------------------------------------- element types

template <DType T>
struct Storage;
template <>
struct Storage<DType::F32> {
  using type = float;
};
template <>
struct Storage<DType::F64> {
  using type = double;
};
template <>
struct Storage<DType::F16> {
  using type = uint16_t;
};
template <>
struct Storage<DType::BF16> {
  using type = uint16_t;
};
template <>
struct Storage<DType::TF32> {
  using type = float;
};
template <>
struct Storage<DType::I8> {
  using type = int8_t;
};
template <>
struct Storage<DType::U8> {
  using type = uint8_t;
};
template <>
struct Storage<DType::I16> {
  using type = int16_t;
};
template <>
struct Storage<DType::U16> {
  using type = uint16_t;
};
template <>
struct Storage<DType::I32> {
  using type = int32_t;
};
template <>
struct Storage<DType::I64> {
  using type = int64_t;
};
template <>
struct Storage<DType::Bool> {
  using type = uint8_t;
};
template <>
struct Storage<DType::F8E4M3> {
  using type = uint8_t;
};
template <>
struct Storage<DType::F8E5M2> {
  using type = uint8_t;
};

template <DType T>
using storage_t = typename Storage<T>::type;

/// The type an element of dtype T is computed in.
template <DType T>
using compute_t = std::conditional_t<
    T == DType::F64, double,
    std::conditional_t<T == DType::F32 || T == DType::F16 || T == DType::BF16 || T == DType::TF32 ||
                           T == DType::F8E4M3 || T == DType::F8E5M2,
                       float, int64_t>>;

/// is_integer() as a constant expression.
constexpr bool is_int_dtype(DType t) {
  return t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::U16 ||
         t == DType::I32 || t == DType::I64;
}

/// True when the compute value is the stored value (no conversion on load or store).
template <DType T>
inline constexpr bool kNativeFloat = T == DType::F32 || T == DType::F64;

/// f32_to_bf16_bits / bf16_bits_to_f32 inline (bit-identical; tested against dtype.cpp).
inline uint16_t bf16_from_f32(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x0040u | (abs >> 16));  // NaN
  const uint32_t r = (abs + 0x7FFFu + ((abs >> 16) & 1u)) >> 16;  // nearest, ties to even
  return static_cast<uint16_t>(sign | std::min(r, 0x7F80u));
}
inline float f32_from_bf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) bits |= 0x00400000u;  // NaN: quiet
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Element `off` of a dtype-T buffer in T's compute type.
template <DType T>
inline compute_t<T> load_elem(const uint8_t* base, int64_t off) {
  storage_t<T> s;
  std::memcpy(&s, base + off * static_cast<int64_t>(sizeof(s)), sizeof(s));
  if constexpr (T == DType::F16) {
    return f16_bits_to_f32(s);
  } else if constexpr (T == DType::BF16) {
    return f32_from_bf16(s);
  } else if constexpr (T == DType::F8E4M3) {
    return f8e4m3_bits_to_f32(s);
  } else if constexpr (T == DType::F8E5M2) {
    return f8e5m2_bits_to_f32(s);
  } else if constexpr (T == DType::Bool) {
    return s != 0 ? 1 : 0;
  } else {
    return static_cast<compute_t<T>>(s);
  }
}

/// Truncates toward zero, NaN -> 0, saturating at the int64 range (as dtype.cpp).
inline int64_t float_to_int64_sat(double v) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (std::isnan(v)) return 0;
  if (v >= kTwo63) return INT64_MAX;
  if (v < -kTwo63) return INT64_MIN;
  return static_cast<int64_t>(v);
}

/// Stores a compute value C (float, double or int64) into element i of a dtype-T buffer with the
/// reference's rounding: floats round once (via f32 for the narrow formats), integers truncate
/// and wrap, Bool stores v != 0.
template <DType T, class C>
inline void store_elem(uint8_t* base, int64_t i, C v) {
  storage_t<T> s;
  if constexpr (T == DType::F64) {
    s = static_cast<double>(v);
  } else if constexpr (T == DType::Bool) {
    s = v != C(0) ? 1 : 0;
  } else if constexpr (is_int_dtype(T)) {
    int64_t w;
    if constexpr (std::is_floating_point_v<C>)
      w = float_to_int64_sat(static_cast<double>(v));
    else
      w = v;
    s = static_cast<storage_t<T>>(static_cast<uint64_t>(w));
  } else {
    const float f = static_cast<float>(v);
    if constexpr (T == DType::F32)
      s = f;
    else if constexpr (T == DType::TF32)
      s = round_to_tf32(f);
    else if constexpr (T == DType::F16)
      s = f32_to_f16_bits(f);
    else if constexpr (T == DType::BF16)
      s = bf16_from_f32(f);
    else if constexpr (T == DType::F8E4M3)
      s = f32_to_f8e4m3_bits(f);
    else
      s = f32_to_f8e5m2_bits(f);
  }
  std::memcpy(base + i * static_cast<int64_t>(sizeof(s)), &s, sizeof(s));
}

/// Calls fn(std::integral_constant<DType, t>{}) for the runtime dtype t.
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& fn) {
  switch (t) {
    case DType::F32: return fn(std::integral_constant<DType, DType::F32>{});
    case DType::F64: return fn(std::integral_constant<DType, DType::F64>{});
    case DType::F16: return fn(std::integral_constant<DType, DType::F16>{});
    case DType::BF16: return fn(std::integral_constant<DType, DType::BF16>{});
    case DType::TF32: return fn(std::integral_constant<DType, DType::TF32>{});
    case DType::I8: return fn(std::integral_constant<DType, DType::I8>{});
    case DType::U8: return fn(std::integral_constant<DType, DType::U8>{});
    case DType::I16: return fn(std::integral_constant<DType, DType::I16>{});
    case DType::U16: return fn(std::integral_constant<DType, DType::U16>{});
    case DType::I32: return fn(std::integral_constant<DType, DType::I32>{});
    case DType::I64: return fn(std::integral_constant<DType, DType::I64>{});
    case DType::Bool: return fn(std::integral_constant<DType, DType::Bool>{});
    case DType::F8E4M3: return fn(std::integral_constant<DType, DType::F8E4M3>{});
    case DType::F8E5M2: return fn(std::integral_constant<DType, DType::F8E5M2>{});
    default: break;  // block types: only the quantized ops read them
  }
  LUMINAL_ASSERT(false, "dispatch_dtype: " + std::string(name(t)) + " has no element kernel");
  return fn(std::integral_constant<DType, DType::F32>{});
}

/// Which compute type a dtype uses.
enum class ComputeKind { F32, F64, Int };
inline ComputeKind compute_kind(DType t) {
  if (t == DType::F64) return ComputeKind::F64;
  if (is_float(t)) return ComputeKind::F32;
  return ComputeKind::Int;
}

/// Copies one element of `es` bytes (1, 2, 4 or 8).
inline void copy_elem(uint8_t* dst, const uint8_t* src, int es) {
  switch (es) {
    case 1: *dst = *src; break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    default: std::memcpy(dst, src, 8); break;
  }
}

// ---------------------------------------------------------------- views per dyn map

/// A View evaluated at dyn values. When the view holds no elements no stride is evaluated
/// (a stride may divide by a dim that is 0 now), and `idx` is left empty.
struct EvalView {
  std::vector<int64_t> dims;
  int64_t numel = 0;
  StridedIndex idx;  // valid when numel > 0
  bool identity() const { return numel == 0 || idx.is_identity(); }
};

EvalView eval_view(const View& v, const DynMap& dyn);

/// Views of a node evaluated once per dims version, and only when a dim they read changed (a
/// decode step bumps the version, but most views read no dim). Pass the same views every time.
class ViewCache {
 public:
  /// Returns true when the views were (re-)evaluated.
  bool update(const std::vector<View>& views, const DynMap& dyn, uint64_t version);
  const EvalView& operator[](size_t i) const { return views_[i]; }

 private:
  uint64_t version_ = 0;  // 0: never evaluated
  std::vector<EvalView> views_;
  std::vector<std::string> names_;  // the dims the views read
  std::vector<int64_t> values_;     // their values when last evaluated
};

/// Calls fn(S{}) with S the unsigned integer type of `es` bytes (1, 2, 4, else 8): for kernels
/// that move elements without looking at them.
template <class F>
void dispatch_size(int es, F&& fn) {
  switch (es) {
    case 1: fn(uint8_t{}); break;
    case 2: fn(uint16_t{}); break;
    case 4: fn(uint32_t{}); break;
    default: fn(uint64_t{}); break;
  }
}

// ---------------------------------------------------------------- parallel loops

/// Elements below which a kernel runs on one thread.
inline constexpr int64_t kParallelMin = 1 << 15;

/// Runs fn(begin, end) over [0, n) in blocks of `block`, on up to `threads` threads when
/// `work` >= kParallelMin. An exception thrown by fn is rethrown after the loop (the one of the
/// lowest block), never escaping the parallel region.
template <class F>
void parallel_blocks(int64_t n, int64_t block, int threads, int64_t work, F&& fn) {
  if (n <= 0) return;
  const int64_t nb = (n + block - 1) / block;
  if (threads <= 1 || nb == 1 || work < kParallelMin) {
    for (int64_t b = 0; b < nb; ++b)
      fn(b * block, std::min(n, (b + 1) * block));
    return;
  }
  parallel_for(nb, threads, [&](int64_t b) { fn(b * block, std::min(n, (b + 1) * block)); });
}

/// Copies the elements of `v` (over `src`, elements of `es` bytes) into contiguous `dst`.
void copy_view(const uint8_t* src, const EvalView& v, uint8_t* dst, int es, int threads);

// ---------------------------------------------------------------- input dtypes

/// The dtype of input `i` of `n` (LlirNode::input_dtypes). Throws luminal::Error when they are
/// not filled.
DType input_dtype(const LlirNode& n, int i);

// ---------------------------------------------------------------- kernel factories

std::unique_ptr<Kernel> make_constant_kernel(const LlirNode& n);
std::unique_ptr<Kernel> make_iota_kernel(const LlirNode& n);
std::unique_ptr<Kernel> make_elementwise_kernel(const LlirNode& n);  // unary, Cast, binary
std::unique_ptr<Kernel> make_reduce_kernel(const LlirNode& n);
std::unique_ptr<Kernel> make_gather_kernel(const LlirNode& n);
std::unique_ptr<Kernel> make_scatter_kernel(const LlirNode& n);
std::unique_ptr<Kernel> make_dequantize_kernel(const LlirNode& n);

}  // namespace luminal::cpu
