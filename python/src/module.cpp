// The `_luminal` extension: the error type, dtypes, backends and compile options; graph.cpp,
// session.cpp and models.cpp bind the rest. The `luminal` package (python/luminal) re-exports
// it and adds the Python-side helpers (streaming generation).
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <Python.h>

#include <algorithm>
#include <cctype>

#include "common.hpp"
#include "luminal/compiler/options.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/program/backend.hpp"
#ifdef LUMINAL_PY_CUDA
#include "luminal/cuda/cuda_backend.hpp"
#endif

namespace luminal::py {

DType to_dtype(nb::handle h) {
  if (nb::isinstance<nb::str>(h)) return parse_dtype(nb::cast<std::string>(h));
  // NumPy scalar types (np.float32) have __name__; NumPy dtypes have name; torch dtypes print
  // as "torch.float32".
  std::string s;
  if (nb::hasattr(h, "name") && nb::isinstance<nb::str>(h.attr("name")))
    s = nb::cast<std::string>(h.attr("name"));
  else if (nb::hasattr(h, "__name__"))
    s = nb::cast<std::string>(h.attr("__name__"));
  else
    s = nb::cast<std::string>(nb::str(h));
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  if (!s.empty() && s.back() == '_') s.pop_back();  // np.bool_
  return parse_dtype(s);
}

std::optional<nb::dlpack::dtype> dlpack_dtype(DType t, bool numpy_only) {
  using C = nb::dlpack::dtype_code;
  auto d = [](C c, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1};
  };
  switch (t) {
    case DType::F32: return d(C::Float, 32);
    case DType::F64: return d(C::Float, 64);
    case DType::F16: return d(C::Float, 16);
    case DType::I8: return d(C::Int, 8);
    case DType::I16: return d(C::Int, 16);
    case DType::I32: return d(C::Int, 32);
    case DType::I64: return d(C::Int, 64);
    case DType::U8: return d(C::UInt, 8);
    case DType::U16: return d(C::UInt, 16);
    case DType::Bool: return d(C::Bool, 8);
    case DType::BF16:
      if (!numpy_only) return d(C::Bfloat, 16);
      return std::nullopt;
    case DType::F8E4M3:
      if (!numpy_only) return d(C::Float8_E4M3FN, 8);
      return std::nullopt;
    case DType::F8E5M2:
      if (!numpy_only) return d(C::Float8_E5M2, 8);
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<DType> from_dlpack(nb::dlpack::dtype d) {
  if (d.lanes != 1) return std::nullopt;
  for (DType t : kAllDTypes) {
    auto o = dlpack_dtype(t, false);
    if (o && o->code == d.code && o->bits == d.bits) return t;
  }
  return std::nullopt;
}

namespace {

// A size written as text: ints, dim names, + - * // % and parentheses ("2*s + 1", "(s // 4)").
class DimParser {
 public:
  explicit DimParser(std::string_view s) : s_(s) {}
  Expr parse() {
    Expr e = sum();
    skip();
    if (i_ != s_.size()) fail();
    return e;
  }

 private:
  void skip() {
    while (i_ < s_.size() && s_[i_] == ' ')
      ++i_;
  }
  bool eat(std::string_view tok) {
    skip();
    if (s_.substr(i_, tok.size()) != tok) return false;
    i_ += tok.size();
    return true;
  }
  [[noreturn]] void fail() const {
    throw Error(
        "a size is an int, a dim name or an expression of them with + - * // % and "
        "parentheses; cannot read '" +
        std::string(s_) + "'");
  }
  Expr sum() {
    Expr e = product();
    for (;;) {
      if (eat("+"))
        e = e + product();
      else if (eat("-"))
        e = e - product();
      else
        return e;
    }
  }
  Expr product() {
    Expr e = factor();
    for (;;) {
      if (eat("*"))
        e = e * factor();
      else if (eat("//"))
        e = e / factor();
      else if (eat("%"))
        e = e % factor();
      else
        return e;
    }
  }
  Expr factor() {
    if (eat("-")) return Expr(int64_t{0}) - factor();
    if (eat("(")) {
      Expr e = sum();
      if (!eat(")")) fail();
      return e;
    }
    skip();
    const size_t start = i_;
    if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
        ++i_;
      return Expr(std::stoll(std::string(s_.substr(start, i_ - start))));
    }
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      ++i_;
    if (i_ == start) fail();
    return Expr::var(s_.substr(start, i_ - start));
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

Dim to_dim(nb::handle e) {
  if (nb::isinstance<nb::str>(e)) {
    const std::string s = nb::cast<std::string>(e);
    const bool name = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    }) && !std::isdigit(static_cast<unsigned char>(s[0]));
    if (name) return Dim(s);
    return Dim(DimParser(s).parse());
  }
  if (nb::isinstance<nb::int_>(e) || nb::hasattr(e, "__index__")) return Dim(nb::cast<int64_t>(e));
  throw Error("a shape entry is an int, a dim name or a size expression (str); got " +
              nb::cast<std::string>(nb::repr(e)));
}

std::vector<Dim> to_dims(nb::handle seq) {
  if (nb::isinstance<nb::str>(seq) || !nb::hasattr(seq, "__iter__"))
    throw Error("a shape is a list of sizes and dim names, such as ['s', 4]; got " +
                nb::cast<std::string>(nb::repr(seq)));
  std::vector<Dim> dims;
  for (nb::handle e : seq)
    dims.push_back(to_dim(e));
  return dims;
}

nb::tuple shape_tuple(const Shape& s) {
  nb::list out;
  for (const Expr& e : s) {
    if (e.is_const())
      out.append(nb::int_(e.as_const()));
    else
      out.append(nb::str(e.to_string().c_str()));
  }
  return nb::tuple(out);
}

std::shared_ptr<const void> hold(nb::object o) {
  auto* p = new nb::object(std::move(o));
  return std::shared_ptr<const void>(p, [](const void* q) {
    auto* obj = static_cast<nb::object*>(const_cast<void*>(q));
    if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing left to release
    nb::gil_scoped_acquire gil;
    delete obj;
  });
}

namespace {

std::vector<DimBucket> to_buckets(const std::string& dim, nb::handle list) {
  std::vector<DimBucket> out;
  for (nb::handle b : list) {
    if (nb::isinstance<DimBucket>(b)) {
      out.push_back(nb::cast<DimBucket>(b));
      continue;
    }
    std::vector<int64_t> v;
    try {
      v = nb::cast<std::vector<int64_t>>(b);
    } catch (const nb::cast_error&) {
    }
    if (v.size() == 2)
      out.emplace_back(v[0], v[1]);
    else if (v.size() == 3)
      out.push_back(DimBucket(v[0], v[1]).representative(v[2]));
    else
      throw Error("dim_buckets['" + dim + "']: " + nb::cast<std::string>(nb::repr(b)) +
                  " is not a bucket; give DimBucket(min, max), (min, max) or (min, max, rep)");
  }
  return out;
}

void bind_backends(nb::module_& m) {
  nb::class_<Backend>(m, "Backend",
                      "Where a session's buffers live and its programs run (luminal.cpu(), "
                      "luminal.cuda()).")
      .def_prop_ro("name", &Backend::name, "'cpu' or 'cuda'.")
      .def_prop_ro("device", &Backend::device_key,
                   "The device as the compile cache keys it (threads and ISA, or the GPU).")
      .def("__repr__", [](const Backend& b) { return "<luminal.Backend " + b.device_key() + ">"; });
  nb::class_<cpu::CpuBackend, Backend>(m, "CpuBackend", "The CPU backend.")
      .def(nb::init<int>(), nb::arg("threads") = 0, "A CPU backend on `threads` threads (0: all).");
  m.def(
      "cpu",
      [](std::optional<int> threads) {
        if (threads && *threads < 0)
          throw Error("cpu(threads=" + std::to_string(*threads) + "): give a count >= 1 (or None)");
        return new cpu::CpuBackend(threads.value_or(0));
      },
      nb::arg("threads") = nb::none(), "The CPU backend on `threads` threads (None: every core).");
#ifdef LUMINAL_PY_CUDA
  nb::class_<cuda::CudaBackend, Backend>(m, "CudaBackend", "The CUDA backend (one GPU).");
  m.def(
      "cuda_available",
      [] {
        std::string why;
        return cuda::cuda_available(&why);
      },
      "True when a GPU can be used by the CUDA backend.");
  m.def(
      "cuda",
      [] {
        std::string why;
        if (!cuda::cuda_available(&why)) throw Error("cuda(): no GPU can be used: " + why);
        return new cuda::CudaBackend();
      },
      "The CUDA backend on the first GPU; raises luminal.Error saying why when none is usable.");
#else
  m.def(
      "cuda_available", [] { return false; }, "False: this build has no CUDA backend.");
  m.def(
      "cuda",
      []() -> Backend* {
        throw Error(
            "cuda(): this luminal was built without the CUDA backend (CMake found no CUDA "
            "toolkit headers); rebuild where cuda.h and nvrtc.h are installed");
      },
      "The CUDA backend; raises luminal.Error: this build has none.");
#endif
}

}  // namespace

void bind_options(nb::module_& m) {
  nb::class_<DimBucket>(m, "DimBucket",
                        "An inclusive range [min, max] of a dynamic dim, searched once at its "
                        "representative value (default (min + max) // 2).")
      .def(
          "__init__",
          [](DimBucket* self, int64_t min, int64_t max, std::optional<int64_t> rep) {
            DimBucket b(min, max);
            new (self) DimBucket(rep ? b.representative(*rep) : b);
          },
          nb::arg("min"), nb::arg("max"), nb::arg("representative") = nb::none())
      .def_prop_ro("min", &DimBucket::min, "The smallest value (inclusive).")
      .def_prop_ro("max", &DimBucket::max, "The largest value (inclusive).")
      .def_prop_ro("representative", &DimBucket::rep, "The value the search times it at.")
      .def("__contains__", &DimBucket::contains, "Whether a value lies in the range.")
      .def("__repr__", [](const DimBucket& b) { return "DimBucket" + b.to_string(); });

  nb::class_<CompileOptions>(
      m, "CompileOptions",
      "How the compiler searches. Every keyword is optional; unset ones keep the C++ defaults "
      "(search_graph_limit 100, seed 0, verbose True, folding True, no time budget).")
      .def(
          "__init__",
          [](CompileOptions* self, std::optional<int> search_graph_limit,
             std::optional<uint64_t> seed, std::optional<bool> verbose,
             std::optional<nb::dict> dim_buckets, std::optional<double> time_budget,
             std::optional<std::string> cache_dir, std::optional<bool> folding,
             std::optional<int> trials, std::optional<double> profile_timeout,
             std::optional<uint64_t> max_memory) {
            CompileOptions o;
            if (search_graph_limit) o.search_graph_limit(*search_graph_limit);
            if (seed) o.seed(*seed);
            if (verbose) o.verbose(*verbose);
            if (time_budget) o.time_budget(*time_budget);
            if (cache_dir) o.cache_dir(*cache_dir);
            if (folding) o.folding(*folding);
            if (trials) o.trials(*trials);
            if (profile_timeout) o.profile_timeout(*profile_timeout);
            if (max_memory) o.max_memory(*max_memory);
            if (dim_buckets)
              for (auto [k, v] : *dim_buckets) {
                const std::string dim = nb::cast<std::string>(k);
                o.dim_buckets(dim, to_buckets(dim, v));
              }
            new (self) CompileOptions(std::move(o));
          },
          nb::kw_only(), nb::arg("search_graph_limit") = nb::none(), nb::arg("seed") = nb::none(),
          nb::arg("verbose") = nb::none(), nb::arg("dim_buckets") = nb::none(),
          nb::arg("time_budget") = nb::none(), nb::arg("cache_dir") = nb::none(),
          nb::arg("folding") = nb::none(), nb::arg("trials") = nb::none(),
          nb::arg("profile_timeout") = nb::none(), nb::arg("max_memory") = nb::none(),
          "dim_buckets maps a dim name to a list of DimBucket or (min, max[, representative]).")
      .def_prop_ro(
          "search_graph_limit", [](const CompileOptions& o) { return o.search_graph_limit(); },
          "Candidates tried per bucket.")
      .def_prop_ro(
          "seed", [](const CompileOptions& o) { return o.seed(); }, "Seed of the search.")
      .def_prop_ro(
          "verbose", [](const CompileOptions& o) { return o.verbose(); },
          "Progress and reports on stderr.")
      .def_prop_ro(
          "time_budget", [](const CompileOptions& o) { return o.time_budget(); },
          "Seconds each bucket's search may take (None: no limit).")
      .def_prop_ro(
          "cache_dir", [](const CompileOptions& o) { return o.cache_dir().string(); },
          "Root of the caches (empty: the default).")
      .def_prop_ro(
          "folding", [](const CompileOptions& o) { return o.folding(); }, "Load-time folding on.")
      .def_prop_ro(
          "trials", [](const CompileOptions& o) { return o.trials(); }, "Timed runs per candidate.")
      .def_prop_ro(
          "dim_buckets",
          [](const CompileOptions& o) {
            std::map<std::string, std::vector<DimBucket>> out;
            for (const auto& [k, v] : o.dim_buckets())
              out[k] = v;
            return out;
          },
          "The buckets of each dim.");
}

}  // namespace luminal::py

NB_MODULE(_luminal, m) {
  namespace nb = nanobind;
  m.doc() = "luminal-cpp's C++ API (the `luminal` package re-exports it).";
  nb::exception<luminal::Error>(m, "Error", PyExc_RuntimeError);
  m.def(
      "dtype_name",
      [](nb::handle h) { return std::string(luminal::name(luminal::py::to_dtype(h))); },
      nb::arg("dtype"), "The canonical name of a dtype ('f32', 'bf16', 'i64', ...).");
  nb::list names;
  for (luminal::DType t : luminal::kAllDTypes)
    names.append(nb::str(std::string(luminal::name(t)).c_str()));
  m.attr("dtypes") = nb::tuple(names);
  luminal::py::bind_backends(m);
  luminal::py::bind_options(m);
  luminal::py::bind_graph(m);
  luminal::py::bind_session(m);
  luminal::py::bind_models(m);
}
