// Session and compile(): luminal/runtime/session.hpp with NumPy (or any DLPack / buffer-protocol
// array) in and out. An array whose dtype is the input's is used in place (Session::set_external,
// the array kept alive by the session); another dtype is converted by the runtime's rules
// (runtime/host_buffer.hpp). get() reads an output into a new NumPy array of its shape (or into
// `out=`). `Reference` is the ReferenceRuntime (the correctness oracle) with the same calls.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "common.hpp"
#include "luminal/core/error.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::py {

namespace {

using CpuArray = nb::ndarray<nb::ro, nb::device::cpu>;

// The label of an input or output given as a label or a Tensor.
std::string label_of(const Runtime& s, nb::handle key, bool input) {
  if (nb::isinstance<nb::str>(key)) return nb::cast<std::string>(key);
  if (!nb::isinstance<Tensor>(key))
    throw Error(std::string(input ? "set" : "get") +
                ": give an input/output label (str) or a Tensor, not " +
                nb::cast<std::string>(nb::repr(key)));
  const Tensor& t = nb::cast<const Tensor&>(key);
  const Graph& g = s.graph();
  if (!(t.graph() == g)) throw Error("the tensor belongs to a different graph than this session's");
  const Node& n = g.node(t.id());
  if (n.op == OpKind::Input || n.op == OpKind::Output) return n.label;
  for (NodeId o : g.outputs()) {
    const Operand& in = g.node(o).inputs[0];
    if (in.node == t.id() && in.view == t.view()) return g.node(o).label;
  }
  throw Error("this tensor (" + shape_to_string(t.shape()) +
              ") is neither an input nor an output; call .output(\"name\") on it before making "
              "the session");
}

const Node& labelled(const Runtime& s, const std::string& label) {
  return s.graph().node(s.graph().find(label));
}

bool c_contiguous(const CpuArray& a) {
  int64_t expect = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expect) return false;
    expect *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

// `value` as a C-contiguous CPU array: as it is when it already is one, else through
// numpy.ascontiguousarray (lists, scalars, strided views: a copy).
std::pair<CpuArray, nb::object> as_array(nb::handle value) {
  CpuArray a;
  if (nb::try_cast(value, a, false) && c_contiguous(a)) return {a, nb::borrow(value)};
  nb::object np = nb::module_::import_("numpy");
  nb::object c = np.attr("ascontiguousarray")(value);
  if (!nb::try_cast(c, a, false))
    throw Error("set: " + nb::cast<std::string>(nb::repr(nb::type_name(value.type()))) +
                " is not an array NumPy can read");
  return {a, c};
}

template <class T>
void set_converted(Runtime& s, const std::string& label, const CpuArray& a) {
  const T* p = static_cast<const T*>(a.data());
  s.set(label, std::vector<T>(p, p + a.size()));
}

// `session`: s as a Session (null for the reference).
void set_value(Runtime& s, Session* session, nb::handle key, nb::handle value) {
  const std::string label = label_of(s, key, true);
  const DType dt = labelled(s, label).dtype;
  auto [a, owner] = as_array(value);
  const std::optional<DType> have = from_dlpack(a.dtype());
  if (have == dt) {
    // Same dtype: used in place where the backend reads host memory (the CPU), else uploaded.
    if (session)
      session->set_external(label, a.data(), a.nbytes(), hold(owner));
    else
      s.set_bytes(label, a.data(), a.nbytes());
    return;
  }
  using C = nb::dlpack::dtype_code;
  const auto code = static_cast<C>(a.dtype().code);
  const int bits = a.dtype().bits;
  if (code == C::Float && bits == 32) return set_converted<float>(s, label, a);
  if (code == C::Float && bits == 64) return set_converted<double>(s, label, a);
  if (code == C::Int && bits == 8) return set_converted<int8_t>(s, label, a);
  if (code == C::Int && bits == 16) return set_converted<int16_t>(s, label, a);
  if (code == C::Int && bits == 32) return set_converted<int32_t>(s, label, a);
  if (code == C::Int && bits == 64) return set_converted<int64_t>(s, label, a);
  if (code == C::UInt && bits == 8) return set_converted<uint8_t>(s, label, a);
  if (code == C::UInt && bits == 16) return set_converted<uint16_t>(s, label, a);
  if (code == C::UInt && bits == 32) return set_converted<uint32_t>(s, label, a);
  if (code == C::UInt && bits == 64) return set_converted<uint64_t>(s, label, a);
  if (code == C::Bool) return set_converted<uint8_t>(s, label, a);
  if (code == C::Float && bits == 16) {
    // f16 into another float dtype: widened to f32 by NumPy first (exact).
    nb::object f32 = nb::module_::import_("numpy").attr("asarray")(owner, "float32");
    return set_converted<float>(s, label, nb::cast<CpuArray>(f32));
  }
  throw Error("set: input '" + label + "' is " + std::string(name(dt)) +
              " and the array's dtype cannot be converted to it; give an array of dtype " +
              std::string(name(dt)) + " (or f32/f64/an integer dtype)");
}

/// The output's bytes at the last execute into host memory (`bytes` must be what it holds).
void read_into(const Runtime& s, const Session* session, const std::string& label, const Tensor& t,
               void* dst, uint64_t bytes) {
  if (session) {  // (Session::read checks the size)
    session->read(session->output(label), dst, bytes);
    return;
  }
  const std::vector<uint8_t> v = s.get_bytes(t);
  if (v.size() != bytes)
    throw Error("get: output '" + label + "' holds " + std::to_string(v.size()) +
                " bytes, out= " + std::to_string(bytes));
  if (bytes) std::memcpy(dst, v.data(), bytes);
}

/// get(out=): the output's bytes into `out`, a C-contiguous DLPack array of its dtype and size
/// (bf16 too: a torch tensor). Host memory: read (downloaded); a session's device memory (a
/// CUDA tensor on a CUDA session): copied there on the GPU, with no host round trip.
nb::object get_into(const Runtime& s, const Session* session, const std::string& label, DType dt,
                    const Tensor& t, uint64_t bytes, int64_t count, nb::handle out, bool wait) {
  nb::ndarray<nb::c_contig> o;
  if (!nb::try_cast(out, o, false) || from_dlpack(o.dtype()) != dt || o.nbytes() != bytes)
    throw Error("get: out= must be a writable C-contiguous " + std::string(name(dt)) +
                " array (a torch tensor for bf16; NumPy or torch otherwise, not requiring grad) "
                "of " +
                std::to_string(count) + " elements for output '" + label + "'");
  if (o.device_type() != nb::device::cpu::value) {
    if (o.device_type() != nb::device::cuda::value || !session ||
        session->backend().name() != "cuda")
      throw Error("get: out= for output '" + label +
                  "' is device memory; only a session on the CUDA backend writes into it (and "
                  "into a CUDA array only); give a host array here");
    session->copy_output(session->output(label), o.data(), bytes, wait);
    return nb::borrow(out);
  }
  read_into(s, session, label, t, o.data(), bytes);
  return nb::borrow(out);
}

nb::object get_value(const Runtime& s, const Session* session, nb::handle key, nb::handle out,
                     bool wait = true) {
  const std::string label = label_of(s, key, false);
  const Node& node = labelled(s, label);
  const NodeId id = s.graph().find(label);
  const Tensor t(s.graph(), id, View::contiguous(node.shape), node.dtype);
  const std::vector<int64_t> shape = s.shape(t);
  std::vector<size_t> dims(shape.begin(), shape.end());
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  const uint64_t bytes = storage_bytes(node.dtype, count);
  if (!out.is_none()) return get_into(s, session, label, node.dtype, t, bytes, count, out, wait);
  const std::optional<nb::dlpack::dtype> dl = dlpack_dtype(node.dtype, true);
  if (!dl) {
    // bf16, tf32, f8: read as f32 (exact).
    std::vector<float> v = s.get<float>(label);
    auto* buf = new std::vector<float>(std::move(v));
    nb::capsule owner(buf, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
    return nb::cast(nb::ndarray<nb::numpy, float>(buf->data(), dims.size(), dims.data(), owner));
  }
  auto* buf = new uint8_t[bytes ? bytes : 1];
  nb::capsule owner(buf, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  read_into(s, session, label, t, buf, bytes);
  return nb::cast(nb::ndarray<nb::numpy>(buf, dims.size(), dims.data(), owner, nullptr, *dl));
}

DynMap to_dyn(const std::optional<std::map<std::string, int64_t>>& dims, const nb::kwargs& kw) {
  DynMap out;
  if (dims) out.insert(dims->begin(), dims->end());
  for (auto [k, v] : kw)
    out[nb::cast<std::string>(k)] = nb::cast<int64_t>(v);
  return out;
}

}  // namespace

void bind_session(nb::module_& m) {
  nb::class_<Session>(m, "Session",
                      "A graph's resident state on one backend: buffers allocated once, one "
                      "searched program per bucket of the dynamic dims.")
      .def(
          "__init__",
          [](Session* self, const Graph& g, Backend& b, std::optional<CompileOptions> o) {
            new (self) Session(g, b, o.value_or(CompileOptions()));
          },
          nb::arg("graph"), nb::arg("backend"), nb::arg("options") = nb::none(),
          nb::keep_alive<1, 3>(),
          "Allocates every input and output buffer on `backend`; nothing is searched yet.")
      .def("compile", &Session::compile, nb::call_guard<nb::gil_scoped_release>(),
           "Searches every bucket on the data set so far (execute() calls it if needed).")
      .def_prop_ro("compiled", &Session::compiled, "True once compile() ran.")
      .def(
          "set", [](Session& s, nb::handle k, nb::handle v) { set_value(s, &s, k, v); },
          nb::arg("key"), nb::arg("value"),
          "Sets an input (label or Tensor) from an array (NumPy, or anything with the buffer "
          "protocol or DLPack on the CPU). Same dtype: used in place (keep the array unchanged "
          "while the session reads it); else converted (floats round, integers must fit).")
      .def(
          "set_bytes",
          [](Session& s, nb::handle key, nb::bytes data) {
            s.set_bytes(label_of(s, key, true), data.c_str(), data.size());
          },
          nb::arg("key"), nb::arg("data"), "Raw bytes in the input's dtype (e.g. bf16 bits).")
      .def(
          "execute",
          [](Session& s, std::optional<std::map<std::string, int64_t>> dims, const nb::kwargs& kw) {
            const DynMap dyn = to_dyn(dims, kw);
            nb::gil_scoped_release release;
            s.execute(dyn);
          },
          nb::arg("dims") = nb::none(), nb::arg("kwargs"),
          "Runs the graph: dims by name, as execute({'s': 3}) or execute(s=3) (over the graph's "
          "set_dim values).")
      .def(
          "get",
          [](const Session& s, nb::handle k, nb::handle out, bool wait) {
            return get_value(s, &s, k, out, wait);
          },
          nb::arg("key"), nb::arg("out") = nb::none(), nb::arg("wait") = true,
          "An output (label or Tensor) as a new NumPy array of its shape at the last execute "
          "(bf16, tf32 and f8 outputs come back as f32), or read into `out` (a C-contiguous "
          "array of its dtype and size, NumPy or a torch tensor, bf16 too: no allocation; a "
          "CUDA tensor on a CUDA session is written on the GPU, with no host round trip, after "
          "the session's work and before this returns; torch work still queued on `out` must "
          "finish first, e.g. torch.cuda.synchronize() or wait_stream()). With wait=False that "
          "copy is only queued on the session's stream: signal_stream() orders torch after "
          "it.")
      .def(
          "shape",
          [](const Session& s, nb::handle key) {
            const std::string label = label_of(s, key, false);
            const Node& n = labelled(s, label);
            return s.shape(
                Tensor(s.graph(), s.graph().find(label), View::contiguous(n.shape), n.dtype));
          },
          nb::arg("key"), "An output's shape at the last execute.")
      .def(
          "bind_external",
          [](Session& s, nb::handle key, nb::object array) {
            const std::string label = label_of(s, key, true);
            const DType dt = labelled(s, label).dtype;
            nb::ndarray<> a;
            if (!nb::try_cast(array, a, false))
              throw Error(
                  "bind_external: the value is not a DLPack array (a NumPy array or a "
                  "torch tensor)");
            if (from_dlpack(a.dtype()) != dt)
              throw Error("bind_external: input '" + label + "' is " + std::string(name(dt)) +
                          " and the array is not; give an array of that dtype");
            s.bind_external(label, static_cast<uint8_t*>(a.data_handle()) + a.byte_offset(),
                            a.nbytes(), hold(array));
          },
          nb::arg("key"), nb::arg("array"),
          "Uses the array's memory (the backend's own: a CUDA tensor on a CUDA session, host "
          "memory on the CPU) as the input's buffer, without a copy. It must hold the input at "
          "its largest dims and be 16-byte aligned.")
      .def(
          "bind_external_ptr",
          [](Session& s, nb::handle key, uintptr_t ptr, uint64_t bytes, nb::object owner) {
            s.bind_external(label_of(s, key, true), reinterpret_cast<void*>(ptr), bytes,
                            hold(std::move(owner)));
          },
          nb::arg("key"), nb::arg("ptr"), nb::arg("nbytes"), nb::arg("owner") = nb::none(),
          "bind_external by address (e.g. a torch tensor's data_ptr()); `owner` is kept alive.")
      .def("sync", &Session::sync, nb::call_guard<nb::gil_scoped_release>(),
           "Waits for launched work.")
      .def(
          "wait_stream",
          [](Session& s, uintptr_t stream) { s.wait_for_stream(reinterpret_cast<void*>(stream)); },
          nb::arg("stream"),
          "Orders the session after the work already queued on `stream`, a CUDA stream handle "
          "of the session's GPU (torch.cuda.current_stream().cuda_stream), without waiting on "
          "the host: the next execute reads what that work wrote. Nothing on the CPU.")
      .def(
          "signal_stream",
          [](Session& s, uintptr_t stream) { s.signal_stream(reinterpret_cast<void*>(stream)); },
          nb::arg("stream"),
          "Orders work queued on `stream` after this behind the session's work so far (its "
          "executes and get(out=, wait=False) copies), without waiting on the host. This and "
          "wait_stream raise (after ordering the streams) an error an earlier execute's kernel "
          "reported, read without a wait: at a later call, once that execute has finished on the "
          "device. Nothing on the CPU.")
      .def("report", &Session::report, "The search reports of every bucket.")
      .def("fold_report", &Session::fold_report, "The load-time folds the programs read.")
      .def("memory_bytes", &Session::memory_bytes, "Bytes the session holds on its backend.")
      .def_prop_ro("dim_names", &Session::dim_names, "The dynamic dims, sorted.")
      .def_prop_ro("graph", &Session::graph, "The session's graph.")
      .def(
          "stats",
          [](const Session& s) {
            const Session::Stats& st = s.stats();
            nb::dict d;
            d["bytes_uploaded"] = st.bytes_uploaded;
            d["bytes_generated"] = st.bytes_generated;
            d["bytes_downloaded"] = st.bytes_downloaded;
            d["bytes_wrapped"] = st.bytes_wrapped;
            d["bytes_copied"] = st.bytes_copied;
            d["executes"] = st.executes;
            d["rebinds"] = st.rebinds;
            d["bytes_folded"] = st.bytes_folded;
            d["fold_runs"] = st.fold_runs;
            d["bytes_released"] = st.bytes_released;
            return d;
          },
          "Bytes uploaded, downloaded, used in place (bytes_wrapped), executes, rebinds, ...");
  nb::class_<ReferenceRuntime>(m, "Reference",
                               "The ReferenceRuntime: interprets any graph on the CPU, op by op, "
                               "for every dtype (slow; the correctness oracle).")
      .def(nb::init<Graph>(), nb::arg("graph"), "A reference runtime for `graph`.")
      .def(
          "set",
          [](ReferenceRuntime& r, nb::handle k, nb::handle v) { set_value(r, nullptr, k, v); },
          nb::arg("key"), nb::arg("value"), "Sets an input (copied), as Session.set.")
      .def(
          "execute",
          [](ReferenceRuntime& r, std::optional<std::map<std::string, int64_t>> dims,
             const nb::kwargs& kw) {
            const DynMap dyn = to_dyn(dims, kw);
            nb::gil_scoped_release release;
            r.execute(dyn);
          },
          nb::arg("dims") = nb::none(), nb::arg("kwargs"),
          "Runs the graph; dims as Session.execute.")
      .def(
          "get",
          [](const ReferenceRuntime& r, nb::handle k, nb::handle out) {
            return get_value(r, nullptr, k, out);
          },
          nb::arg("key"), nb::arg("out") = nb::none(), "An output, as Session.get.");
  m.def(
      "compile",
      [](const Graph& g, Backend& b, std::optional<CompileOptions> o) {
        nb::gil_scoped_release release;
        return compile(g, b, o.value_or(CompileOptions()));
      },
      nb::arg("graph"), nb::arg("backend"), nb::arg("options") = nb::none(), nb::keep_alive<0, 2>(),
      "A Session on `backend`, compiled (timing candidates on generated data; set inputs "
      "afterwards).");
}

}  // namespace luminal::py
