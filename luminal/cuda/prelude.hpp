#pragma once
// The device-side prelude every generated kernel starts with (internal to luminal/cuda).
//
// Per dtype T (tags f32 f64 f16 bf16 tf32 i8 u8 i16 u16 i32 i64 bool f8e4m3 f8e5m2):
//   S_T          storage type          C_T     compute type (float, double or long long)
//   ld_T(S_T)    the element as a compute value
//   st_T(v)      a float, double or long long value stored as T, rounded or wrapped exactly as
//                the reference stores it (narrow floats via f32, round to nearest even; integers
//                truncate, saturate from floats and wrap; Bool is v != 0)
//   rd_T(v)      st_T then ld_T: what storing and reloading gives
// plus the integer helpers wrap_add, wrap_mul, int_mod and the Expr floor helpers.
#include <string>

#include "luminal/core/dtype.hpp"

namespace luminal::cuda {

/// The prelude's source text.
const std::string& device_prelude();
/// The dtype's tag in the prelude: its DType name ("bf16").
std::string dtype_tag(DType t);
/// "float", "double" or "long long".
std::string compute_type(DType t);

}  // namespace luminal::cuda
