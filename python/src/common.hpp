#pragma once
// Shared by the binding units of the `_luminal` extension: dtype and shape conversions between
// Python values and the C++ API, and the registration functions of each unit.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/shape.hpp"

namespace luminal::py {

namespace nb = nanobind;

/// A dtype from a name ("f32", "float32", "bf16"), a NumPy dtype or scalar type (np.float32), or
/// a torch dtype (torch.float32). Throws luminal::Error for anything else.
DType to_dtype(nb::handle h);
/// The DLPack dtype of an element dtype, when NumPy/DLPack has one (bf16 and f8 have DLPack codes
/// but no NumPy dtype: `numpy_only` excludes them).
std::optional<nb::dlpack::dtype> dlpack_dtype(DType t, bool numpy_only);
/// The element dtype of a DLPack dtype, if luminal has it.
std::optional<DType> from_dlpack(nb::dlpack::dtype d);
/// A size from an int, a dim name ("s") or an expression of them ("2*s + 1", "(s // 4)").
Dim to_dim(nb::handle h);
/// A shape entry list from a Python sequence of sizes (see to_dim).
std::vector<Dim> to_dims(nb::handle seq);
/// A shape as a tuple: ints for constant sizes, strings for symbolic ones ("s", "s + 1").
nb::tuple shape_tuple(const Shape& s);
/// A host-memory keep-alive for the C++ API that holds a Python object (released with the GIL).
std::shared_ptr<const void> hold(nb::object o);

void bind_options(nb::module_& m);
void bind_graph(nb::module_& m);
void bind_session(nb::module_& m);
void bind_models(nb::module_& m);

}  // namespace luminal::py
