#include "luminal/runtime/host_buffer.hpp"

namespace luminal::detail {

void throw_float_into_int(std::string_view tensor, DType target) {
  throw Error("input '" + std::string(tensor) + "' is " + std::string(name(target)) +
              " but was given floating-point data; pass integer data, or declare the input with a "
              "float dtype");
}

void throw_int_out_of_range(std::string_view tensor, DType target, int64_t value, size_t index) {
  throw Error("input '" + std::string(tensor) + "': value " + std::to_string(value) + " at index " +
              std::to_string(index) + " does not fit " + std::string(name(target)) + " (range " +
              std::to_string(static_cast<int64_t>(min_value(target))) + ".." +
              std::to_string(static_cast<int64_t>(max_value(target))) + ")");
}

void require_whole_units(std::string_view tensor, DType dt, uint64_t bytes) {
  const auto unit = static_cast<uint64_t>(block_bytes(dt));
  if (bytes % unit == 0) return;
  throw Error("input '" + std::string(tensor) + "': " + std::to_string(bytes) +
              " bytes is not a whole number of " + std::string(name(dt)) +
              (is_block(dt) ? " blocks (" : " elements (") + std::to_string(unit) + " bytes each)");
}

void throw_values_into_blocks(std::string_view tensor, DType target) {
  throw Error("tensor '" + std::string(tensor) + "' is " + std::string(name(target)) +
              ", a block-quantized type: it takes its raw blocks (set_bytes or a weights file), "
              "not values");
}

void throw_values_out_of_blocks(std::string_view tensor, DType source) {
  throw Error("tensor '" + std::string(tensor) + "' is " + std::string(name(source)) +
              ", a block-quantized type: read its raw bytes, or output x.dequantize() for values");
}

void throw_float_out_of_int(std::string_view tensor, DType source, std::string_view type) {
  throw Error("output '" + std::string(tensor) + "' is " + std::string(name(source)) +
              "; it cannot be read as " + std::string(type) + " (use get<float> or get<double>)");
}

void throw_value_does_not_fit(std::string_view tensor, std::string_view type, double value,
                              size_t index) {
  throw Error("output '" + std::string(tensor) + "': value " +
              std::to_string(static_cast<int64_t>(value)) + " at index " + std::to_string(index) +
              " does not fit " + std::string(type) + "; read it with get<int64_t>");
}

bool fits(DType target, int64_t v) {
  return target == DType::I64 || in_range(target, static_cast<double>(v));
}

}  // namespace luminal::detail
