#pragma once
// Typed host data crossing the runtime boundary, and the conversion rules every runtime follows:
//
//   into an input (set):   floats -> float dtypes round to nearest even; integers -> integer
//                          dtypes must fit the target's range; integers -> floats round;
//                          floats -> integer/bool dtypes are an error; bool inputs take 0/1.
//   out of an output (get): float dtypes -> float types; integer/bool dtypes -> any arithmetic
//                          type that holds the value (checked); float dtypes -> integer types are
//                          an error.
// Every error names the tensor.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/error.hpp"

namespace luminal {

struct HostBuffer {
  DType dtype = DType::F32;
  std::vector<uint8_t> bytes;
  /// Values held (for a block dtype, whole blocks' worth).
  int64_t numel() const {
    return static_cast<int64_t>(bytes.size()) / block_bytes(dtype) * block_size(dtype);
  }
};

namespace detail {
[[noreturn]] void throw_float_into_int(std::string_view tensor, DType target);
[[noreturn]] void throw_int_out_of_range(std::string_view tensor, DType target, int64_t value,
                                         size_t index);
[[noreturn]] void throw_float_out_of_int(std::string_view tensor, DType source,
                                         std::string_view type);
[[noreturn]] void throw_value_does_not_fit(std::string_view tensor, std::string_view type,
                                           double value, size_t index);
bool fits(DType target, int64_t v);
/// Throws unless `bytes` is a whole number of dt's elements (blocks for a block type), naming
/// the input.
void require_whole_units(std::string_view tensor, DType dt, uint64_t bytes);
[[noreturn]] void throw_values_into_blocks(std::string_view tensor, DType target);
[[noreturn]] void throw_values_out_of_blocks(std::string_view tensor, DType source);
}  // namespace detail

/// Converts host values to a buffer of `target` dtype (rules above); `tensor` names it in errors.
template <class T>
HostBuffer to_host_buffer(const T* data, size_t n, DType target, std::string_view tensor) {
  static_assert(std::is_arithmetic_v<T>, "set() takes arithmetic element types");
  if (is_block(target)) detail::throw_values_into_blocks(tensor, target);
  HostBuffer b{target, std::vector<uint8_t>(n * size_bytes(target))};
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (!is_float(target)) detail::throw_float_into_int(tensor, target);
      store_from_double(target, b.bytes.data(), static_cast<int64_t>(i),
                        static_cast<double>(data[i]));
    } else {
      int64_t v = static_cast<int64_t>(data[i]);
      if constexpr (std::is_same_v<T, uint64_t>) {
        if (data[i] > static_cast<uint64_t>(INT64_MAX))
          detail::throw_int_out_of_range(tensor, target, -1, i);
      }
      if (!is_float(target) && !detail::fits(target, v))
        detail::throw_int_out_of_range(tensor, target, v, i);
      store_from_int64(target, b.bytes.data(), static_cast<int64_t>(i), v);
    }
  }
  return b;
}

/// Converts a buffer to host values of type T (rules above).
template <class T>
std::vector<T> from_host_buffer(const HostBuffer& b, std::string_view tensor,
                                std::string_view type_name) {
  static_assert(std::is_arithmetic_v<T>, "get() returns arithmetic element types");
  if (is_block(b.dtype)) detail::throw_values_out_of_blocks(tensor, b.dtype);
  const int64_t n = b.numel();
  std::vector<T> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (is_float(b.dtype)) {
      if constexpr (!std::is_floating_point_v<T>) {
        detail::throw_float_out_of_int(tensor, b.dtype, type_name);
      } else {
        out[i] = static_cast<T>(load_as_double(b.dtype, b.bytes.data(), i));
      }
    } else {
      int64_t v = load_as_int64(b.dtype, b.bytes.data(), i);
      if constexpr (std::is_integral_v<T>) {
        bool ok = std::is_signed_v<T>
                      ? (v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                         (std::is_same_v<T, int64_t> ||
                          v <= static_cast<int64_t>(std::numeric_limits<T>::max())))
                      : (v >= 0 && (sizeof(T) >= 8 ||
                                    v <= static_cast<int64_t>(std::numeric_limits<T>::max())));
        if (!ok)
          detail::throw_value_does_not_fit(tensor, type_name, static_cast<double>(v),
                                           static_cast<size_t>(i));
      }
      out[i] = static_cast<T>(v);
    }
  }
  return out;
}

template <class T>
constexpr std::string_view type_name() {
  if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, double>)
    return "double";
  else if constexpr (std::is_same_v<T, int8_t>)
    return "int8_t";
  else if constexpr (std::is_same_v<T, uint8_t>)
    return "uint8_t";
  else if constexpr (std::is_same_v<T, int16_t>)
    return "int16_t";
  else if constexpr (std::is_same_v<T, uint16_t>)
    return "uint16_t";
  else if constexpr (std::is_same_v<T, int32_t>)
    return "int32_t";
  else if constexpr (std::is_same_v<T, uint32_t>)
    return "uint32_t";
  else if constexpr (std::is_same_v<T, int64_t>)
    return "int64_t";
  else if constexpr (std::is_same_v<T, uint64_t>)
    return "uint64_t";
  else if constexpr (std::is_same_v<T, bool>)
    return "bool";
  else
    return "arithmetic type";
}

}  // namespace luminal
