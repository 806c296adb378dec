// Graph and Tensor: thin bindings over luminal/ir/graph.hpp and luminal/ir/tensor.hpp, with
// Python's operators on tensors (+ - * / % @, unary -, < <= > >=; == and != stay identity: use
// eq()/ne()).
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.hpp"
#include "luminal/core/error.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal::py {

namespace {

std::vector<std::string> labels(const Graph& g, const std::vector<NodeId>& ids) {
  std::vector<std::string> out;
  for (NodeId id : ids)
    out.push_back(g.node(id).label);
  return out;
}

// Axes given as one int or a sequence of ints.
std::vector<int> to_axes(nb::handle h) {
  if (nb::isinstance<nb::int_>(h)) return {nb::cast<int>(h)};
  return nb::cast<std::vector<int>>(h);
}

// permute(0, 2, 1) and permute([0, 2, 1]) alike.
std::vector<int> to_order(const nb::args& args) {
  if (args.size() == 1 && !nb::isinstance<nb::int_>(args[0]))
    return nb::cast<std::vector<int>>(args[0]);
  return nb::cast<std::vector<int>>(args);
}

std::vector<Dim> shape_args(const nb::args& args) {
  if (args.size() == 1 && !nb::isinstance<nb::int_>(args[0]) && !nb::isinstance<nb::str>(args[0]))
    return to_dims(args[0]);
  return to_dims(args);
}

void bind_tensor(nb::module_& m) {
  using T = Tensor;
  auto t = nb::class_<Tensor>(m, "Tensor",
                              "A lazy value in a Graph: every method adds nodes and returns a new "
                              "Tensor; nothing runs until a session executes.");
  t.def_prop_ro(
       "shape", [](const T& x) { return shape_tuple(x.shape()); },
       "Sizes: ints, or strings for symbolic sizes ('s', 's + 1').")
      .def_prop_ro(
          "dtype", [](const T& x) { return std::string(name(x.dtype())); }, "Element dtype name.")
      .def_prop_ro("ndim", &T::rank, "Number of axes.")
      .def_prop_ro("graph", &T::graph, "The graph holding this tensor.")
      .def("__repr__",
           [](const T& x) {
             return "<luminal.Tensor " + std::string(name(x.dtype())) + shape_to_string(x.shape()) +
                    ">";
           })
      .def("output", &T::output, nb::arg("label") = "",
           "Marks the value as an output a session keeps and get() reads (label default "
           "'output<N>'); returns the output tensor.")
      .def("persist", &T::persist,
           "Keeps the buffer across executes (weights, caches; inputs and outputs).")
      .def(
          "cast", [](const T& x, nb::handle d) { return x.cast(to_dtype(d)); }, nb::arg("dtype"),
          "This tensor converted to `dtype` (floats round to nearest even).");
  // Elementwise unary.
  t.def("neg", &T::neg, "-x.")
      .def("exp", &T::exp, "e^x.")
      .def("exp2", &T::exp2, "2^x.")
      .def("log", &T::log, "Natural logarithm.")
      .def("log2", &T::log2, "Base-2 logarithm.")
      .def("sin", &T::sin, "Sine.")
      .def("cos", &T::cos, "Cosine.")
      .def("tanh", &T::tanh, "Hyperbolic tangent.")
      .def("sigmoid", &T::sigmoid, "1 / (1 + e^-x).")
      .def("relu", &T::relu, "max(x, 0).")
      .def("gelu", &T::gelu, "Exact GELU (erf).")
      .def("gelu_tanh", &T::gelu_tanh, "GELU, tanh approximation.")
      .def("silu", &T::silu, "x * sigmoid(x).")
      .def("erf", &T::erf, "Error function.")
      .def("abs", &T::abs, "|x|.")
      .def("sign", &T::sign, "-1, 0 or 1.")
      .def("sqrt", &T::sqrt, "Square root.")
      .def("rsqrt", &T::rsqrt, "1 / sqrt(x).")
      .def("reciprocal", &T::reciprocal, "1 / x.")
      .def("square", &T::square, "x * x.")
      .def("pow", nb::overload_cast<double>(&T::pow, nb::const_), nb::arg("p"), "x ** p.")
      .def("pow", nb::overload_cast<const T&>(&T::pow, nb::const_), nb::arg("p"),
           "Elementwise x ** p.")
      .def("logical_not", &T::logical_not, "not x (bool), x == 0 otherwise.")
      .def("isnan", &T::isnan, "Bool: x is NaN.")
      .def("isinf", &T::isinf, "Bool: x is infinite.");
  // Elementwise binary, as methods.
  t.def("add", &T::add, nb::arg("other"), "x + other (broadcasting; same dtype).")
      .def("sub", &T::sub, nb::arg("other"), "x - other.")
      .def("mul", &T::mul, nb::arg("other"), "x * other.")
      .def("div", &T::div, nb::arg("other"), "x / other (floats).")
      .def("fmod", &T::fmod, nb::arg("other"), "C's truncated remainder.")
      .def("remainder", &T::remainder, nb::arg("other"), "Python's remainder (sign of other).")
      .def("minimum", &T::minimum, nb::arg("other"), "Elementwise minimum.")
      .def("maximum", &T::maximum, nb::arg("other"), "Elementwise maximum.")
      .def("clamp", nb::overload_cast<double, double>(&T::clamp, nb::const_), nb::arg("lo"),
           nb::arg("hi"), "Clamps into [lo, hi].")
      .def("eq", nb::overload_cast<const T&>(&T::eq, nb::const_), nb::arg("other"), "Bool: ==.")
      .def("eq", nb::overload_cast<double>(&T::eq, nb::const_), nb::arg("other"), "Bool: ==.")
      .def("ne", nb::overload_cast<const T&>(&T::ne, nb::const_), nb::arg("other"), "Bool: !=.")
      .def("ne", nb::overload_cast<double>(&T::ne, nb::const_), nb::arg("other"), "Bool: !=.")
      .def("logical_and", &T::logical_and, nb::arg("other"), "Bool: and.")
      .def("logical_or", &T::logical_or, nb::arg("other"), "Bool: or.")
      .def("where", nb::overload_cast<const T&, const T&>(&T::where, nb::const_), nb::arg("a"),
           nb::arg("b"), "Where this (bool) is true take a, else b.")
      .def("where", nb::overload_cast<const T&, double>(&T::where, nb::const_), nb::arg("a"),
           nb::arg("b"), "Where this (bool) is true take a, else b.")
      .def("where", nb::overload_cast<double, const T&>(&T::where, nb::const_), nb::arg("a"),
           nb::arg("b"), "Where this (bool) is true take a, else b.")
      .def("masked_fill", &T::masked_fill, nb::arg("mask"), nb::arg("value"),
           "x where mask is false, value where it is true.")
      .def("matmul", &T::matmul, nb::arg("other"), "torch.matmul semantics (1-D to 5-D).");
  // Operators.
  t.def(
       "__add__", [](const T& a, const T& b) { return a + b; }, "self + other")
      .def(
          "__add__", [](const T& a, double b) { return a + b; }, "self + other")
      .def(
          "__radd__", [](const T& a, double b) { return b + a; }, "other + self")
      .def(
          "__sub__", [](const T& a, const T& b) { return a - b; }, "self - other")
      .def(
          "__sub__", [](const T& a, double b) { return a - b; }, "self - other")
      .def(
          "__rsub__", [](const T& a, double b) { return b - a; }, "other - self")
      .def(
          "__mul__", [](const T& a, const T& b) { return a * b; }, "self * other")
      .def(
          "__mul__", [](const T& a, double b) { return a * b; }, "self * other")
      .def(
          "__rmul__", [](const T& a, double b) { return b * a; }, "other * self")
      .def(
          "__truediv__", [](const T& a, const T& b) { return a / b; }, "self / other")
      .def(
          "__truediv__", [](const T& a, double b) { return a / b; }, "self / other")
      .def(
          "__rtruediv__", [](const T& a, double b) { return b / a; }, "other / self")
      .def(
          "__mod__", [](const T& a, const T& b) { return a % b; },
          "self % other (C's truncated remainder)")
      .def(
          "__mod__", [](const T& a, double b) { return a % b; },
          "self % other (C's truncated remainder)")
      .def(
          "__pow__", [](const T& a, double p) { return a.pow(p); }, "self ** p")
      .def(
          "__matmul__", [](const T& a, const T& b) { return a.matmul(b); }, "self @ other (matmul)")
      .def(
          "__neg__", [](const T& a) { return -a; }, "-self")
      .def(
          "__lt__", [](const T& a, const T& b) { return a < b; }, "Bool: self < other")
      .def(
          "__lt__", [](const T& a, double b) { return a < b; }, "Bool: self < other")
      .def(
          "__le__", [](const T& a, const T& b) { return a <= b; }, "Bool: self <= other")
      .def(
          "__le__", [](const T& a, double b) { return a <= b; }, "Bool: self <= other")
      .def(
          "__gt__", [](const T& a, const T& b) { return a > b; }, "Bool: self > other")
      .def(
          "__gt__", [](const T& a, double b) { return a > b; }, "Bool: self > other")
      .def(
          "__ge__", [](const T& a, const T& b) { return a >= b; }, "Bool: self >= other")
      .def(
          "__ge__", [](const T& a, double b) { return a >= b; }, "Bool: self >= other");
  // Reductions and normalisation.
  t.def(
       "sum",
       [](const T& x, nb::handle axis, bool keepdim) { return x.sum(to_axes(axis), keepdim); },
       nb::arg("axis"), nb::arg("keepdim") = false, "Sum over an axis or a list of axes.")
      .def(
          "mean",
          [](const T& x, nb::handle axis, bool keepdim) { return x.mean(to_axes(axis), keepdim); },
          nb::arg("axis"), nb::arg("keepdim") = false, "Mean over an axis or a list of axes.")
      .def(
          "max",
          [](const T& x, nb::handle axis, bool keepdim) { return x.max(to_axes(axis), keepdim); },
          nb::arg("axis"), nb::arg("keepdim") = false, "Maximum over an axis or a list of axes.")
      .def(
          "min",
          [](const T& x, nb::handle axis, bool keepdim) { return x.min(to_axes(axis), keepdim); },
          nb::arg("axis"), nb::arg("keepdim") = false, "Minimum over an axis or a list of axes.")
      .def("var", &T::var, nb::arg("axis"), nb::arg("keepdim") = false,
           "Biased variance over one axis.")
      .def("softmax", &T::softmax, nb::arg("axis") = -1, "Softmax over an axis.")
      .def("log_softmax", &T::log_softmax, nb::arg("axis") = -1, "Log-softmax over an axis.")
      .def("layer_norm", &T::layer_norm, nb::arg("weight") = nb::none(),
           nb::arg("bias") = nb::none(), nb::arg("eps") = 1e-5,
           "Layer norm over the last weight.ndim axes (the last axis without weight).")
      .def("rms_norm", &T::rms_norm, nb::arg("weight") = nb::none(), nb::arg("eps") = 1e-6,
           "x / sqrt(mean(x^2, -1) + eps) * weight.")
      .def("argmax", &T::argmax, nb::arg("axis"), nb::arg("keepdim") = false,
           "Index of the first maximum (i32).")
      .def("argmin", &T::argmin, nb::arg("axis"), nb::arg("keepdim") = false,
           "Index of the first minimum (i32).")
      .def("topk", &T::topk, nb::arg("k"), nb::arg("axis") = -1, nb::arg("largest") = true,
           "(values, indices) of the k largest along axis.")
      .def("argsort", &T::argsort, nb::arg("axis") = -1, nb::arg("descending") = false,
           "The positions that sort the axis (i32; ties keep their order, NaN last ascending).")
      .def("cumsum", &T::cumsum, nb::arg("axis"), "Cumulative sum.");
  // Movement and indexing.
  t.def(
       "reshape", [](const T& x, const nb::args& a) { return x.reshape(shape_args(a)); },
       "A new shape (ints and dim names), as reshape(2, 's') or reshape([2, 's']).")
      .def(
          "permute", [](const T& x, const nb::args& a) { return x.permute(to_order(a)); },
          "Reorders the axes: permute(1, 0) or permute([1, 0]).")
      .def("transpose", &T::transpose, nb::arg("a"), nb::arg("b"), "Swaps two axes.")
      .def_prop_ro(
          "T", [](const T& x) { return x.transpose(-2, -1); }, "The last two axes swapped.")
      .def(
          "expand", [](const T& x, const nb::args& a) { return x.expand(shape_args(a)); },
          "Broadcasts size-1 axes (and new leading ones) to a shape.")
      .def("squeeze", &T::squeeze, nb::arg("axis"), "Removes a size-1 axis.")
      .def("unsqueeze", &T::unsqueeze, nb::arg("axis"), "Inserts a size-1 axis.")
      .def("flatten", &T::flatten, nb::arg("start") = 0, nb::arg("end") = -1,
           "Merges axes start..end.")
      .def("contiguous", &T::contiguous, "A contiguous copy.")
      .def(
          "slice",
          [](const T& x, int axis, nb::handle start, nb::handle end, int64_t step) {
            return x.slice(axis, to_dim(start),
                           end.is_none() ? std::nullopt : std::optional<Dim>(to_dim(end)), step);
          },
          nb::arg("axis"), nb::arg("start"), nb::arg("end") = nb::none(), nb::arg("step") = 1,
          "Python slicing [start:end:step] on one axis (start and end: ints or sizes such as "
          "'s' or 's - 1').")
      .def(
          "unfold",
          [](const T& x, int axis, nb::handle size, nb::handle step) {
            return x.unfold(axis, to_dim(size), to_dim(step));
          },
          nb::arg("axis"), nb::arg("size"), nb::arg("step"),
          "Sliding windows along an axis (torch.Tensor.unfold): that axis counts the windows, a "
          "new last axis of `size` holds each.")
      .def("triu", &T::triu, nb::arg("k") = 0, "Upper triangle.")
      .def("tril", &T::tril, nb::arg("k") = 0, "Lower triangle.")
      .def("gather_flat", &T::gather_flat, nb::arg("indexes"),
           "Elements of this tensor read as flat (row-major) at integer `indexes`: the indexes' "
           "shape.")
      .def("gather_elements", &T::gather_elements, nb::arg("axis"), nb::arg("index"),
           "torch.gather.")
      .def("index_select", &T::index_select, nb::arg("axis"), nb::arg("index"),
           "Rows of an axis picked by a 1-D index.")
      .def("scatter_flat", &T::scatter_flat, nb::arg("indexes"), nb::arg("src"),
           "A copy of this tensor with flat (row-major) element indexes[i] set to src[i] "
           "(indexes and src of one shape; out-of-range indexes are skipped).")
      .def("scatter_elements", &T::scatter_elements, nb::arg("axis"), nb::arg("index"),
           nb::arg("src"), "torch.scatter: a copy with out[..index[..i..]..] = src[..i..].")
      .def("embedding", &T::embedding, nb::arg("ids"),
           "Rows of this [vocab, dim] table for integer ids: ids.shape + [dim].");
  m.def("concat", &concat, nb::arg("tensors"), nb::arg("axis"), "Concatenates along an axis.");
  m.def("stack", &stack, nb::arg("tensors"), nb::arg("axis"), "Stacks along a new axis.");
}

}  // namespace

void bind_graph(nb::module_& m) {
  nb::class_<Graph>(m, "Graph",
                    "The nodes of one model plus its dynamic dims. Copies share the same nodes.")
      .def(nb::init<>(), "An empty graph.")
      .def(
          "tensor",
          [](Graph& g, std::string_view label, nb::handle shape, nb::handle dtype) {
            return g.tensor(label, to_dims(shape), dtype.is_none() ? DType::F32 : to_dtype(dtype));
          },
          nb::arg("label"), nb::arg("shape"), nb::arg("dtype") = nb::none(),
          "A named input; shape entries are ints or dim names ('s'); dtype default 'f32'.")
      .def(
          "constant",
          [](Graph& g, double v, nb::handle dtype) {
            return g.constant(v, dtype.is_none() ? DType::F32 : to_dtype(dtype));
          },
          nb::arg("value"), nb::arg("dtype") = nb::none(), "A scalar constant.")
      .def(
          "full",
          [](Graph& g, nb::handle shape, double v, nb::handle dtype) {
            return g.full(to_dims(shape), v, dtype.is_none() ? DType::F32 : to_dtype(dtype));
          },
          nb::arg("shape"), nb::arg("value"), nb::arg("dtype") = nb::none(),
          "A tensor of `shape` filled with `value` (no memory).")
      .def(
          "zeros",
          [](Graph& g, nb::handle shape, nb::handle dtype) {
            return g.zeros(to_dims(shape), dtype.is_none() ? DType::F32 : to_dtype(dtype));
          },
          nb::arg("shape"), nb::arg("dtype") = nb::none(), "Zeros of `shape`.")
      .def(
          "ones",
          [](Graph& g, nb::handle shape, nb::handle dtype) {
            return g.ones(to_dims(shape), dtype.is_none() ? DType::F32 : to_dtype(dtype));
          },
          nb::arg("shape"), nb::arg("dtype") = nb::none(), "Ones of `shape`.")
      .def(
          "arange",
          [](Graph& g, nb::handle n, nb::handle dtype) {
            return g.arange(to_dim(n), dtype.is_none() ? DType::I32 : to_dtype(dtype));
          },
          nb::arg("n"), nb::arg("dtype") = nb::none(),
          "0, 1, ..., n-1 (i32 by default); n is an int, a dim name or a size ('s + 1').")
      .def(
          "iota",
          [](Graph& g, nb::handle expr, nb::handle n) { return g.iota(to_dim(expr).e, to_dim(n)); },
          nb::arg("expr"), nb::arg("n"),
          "i32 tensor of length n whose element i is `expr` (a size; the name z stands for i): "
          "a dynamic size as a value, negative ones included.")
      .def("set_dim", &Graph::set_dim, nb::arg("name"), nb::arg("value"),
           "Sets a dynamic dim's value for the next executes.")
      .def("declare_dim", &Graph::declare_dim, nb::arg("name"), nb::arg("min"), nb::arg("max"),
           "Declares a dynamic dim's range; values outside are rejected at execute.")
      .def_prop_ro(
          "dims",
          [](const Graph& g) {
            return std::map<std::string, int64_t>(g.dims().begin(), g.dims().end());
          },
          "The set_dim values.")
      .def(
          "dim_range",
          [](const Graph& g, std::string_view n) {
            const Interval r = g.dim_range(n);
            return std::make_pair(r.lo, r.hi);
          },
          nb::arg("name"), "A dim's (min, max).")
      .def("carry", &Graph::carry, nb::arg("output"), nb::arg("input"),
           "After every execute the input takes the output's value (a KV cache), without a copy.")
      .def_prop_ro(
          "inputs", [](const Graph& g) { return labels(g, g.inputs()); }, "Input labels.")
      .def_prop_ro(
          "outputs", [](const Graph& g) { return labels(g, g.outputs()); }, "Output labels.")
      .def("to_text", &Graph::to_text, "One line per node.")
      .def("to_dot", &Graph::to_dot, "Graphviz DOT.")
      .def("__repr__", [](const Graph& g) {
        return "<luminal.Graph " + std::to_string(g.nodes().size()) + " nodes, " +
               std::to_string(g.inputs().size()) + " inputs, " +
               std::to_string(g.outputs().size()) + " outputs>";
      });
  bind_tensor(m);
}

}  // namespace luminal::py
