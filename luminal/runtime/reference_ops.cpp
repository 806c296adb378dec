#include "luminal/runtime/reference_ops.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "luminal/core/blocks.hpp"
#include "luminal/core/exp2.hpp"

namespace luminal::reference {

// ---------------------------------------------------------------- views

StridedView::StridedView(const View& v, const DynMap& dyn) {
  std::map<std::string, Expr, std::less<>> values;
  for (const auto& [k, x] : dyn)
    values[k] = Expr(x);
  for (const Expr& d : v.dims) {
    dims_.push_back(d.eval(dyn));
    numel_ *= dims_.back();
  }
  if (numel_ > 0) base_ = v.base.eval(dyn);
  for (size_t i = 0; i < v.dims.size(); ++i) {
    Axis a;
    if (numel_ == 0) {  // nothing is read; strides may divide by a dim that is 0 now
      axes_.push_back(a);
      continue;
    }
    Expr s = v.strides[i].substitute(values);
    auto lin = s.as_linear("z");
    if (lin && lin->first.is_const() && lin->second == Expr(0)) {
      a.coef = lin->first.as_const();
    } else {
      a.linear = false;
      a.stride = s;
    }
    axes_.push_back(a);
  }
}

int64_t StridedView::offset(const std::vector<int64_t>& index) const {
  int64_t off = base_;
  for (size_t i = 0; i < axes_.size(); ++i) {
    const Axis& a = axes_[i];
    off += a.linear ? a.coef * index[i] : a.stride.eval({}, index[i]);
  }
  return off;
}

int64_t StridedView::offset_of_flat(int64_t flat) const {
  int64_t off = base_;
  for (size_t i = axes_.size(); i-- > 0;) {
    int64_t idx = flat % dims_[i];
    flat /= dims_[i];
    const Axis& a = axes_[i];
    off += a.linear ? a.coef * idx : a.stride.eval({}, idx);
  }
  return off;
}

namespace {

// ---------------------------------------------------------------- element access

enum class Compute { F32, F64, Int };

Compute compute_of(DType t) {
  if (t == DType::F64) return Compute::F64;
  if (is_float(t)) return Compute::F32;
  return Compute::Int;
}

template <class C>
C load(DType t, const HostBuffer& b, int64_t i) {
  if constexpr (std::is_same_v<C, int64_t>) {
    return load_as_int64(t, b.bytes.data(), i);
  } else {
    return static_cast<C>(load_as_double(t, b.bytes.data(), i));
  }
}

template <class C>
void store(DType t, HostBuffer& b, int64_t i, C v) {
  if constexpr (std::is_same_v<C, int64_t>) {
    store_from_int64(t, b.bytes.data(), i, v);
  } else {
    store_from_double(t, b.bytes.data(), i, static_cast<double>(v));
  }
}

HostBuffer make_buffer(DType t, int64_t n) {
  return HostBuffer{t, std::vector<uint8_t>(storage_bytes(t, n))};
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

// Calls f(index, flat) for every index of `dims` in row-major order.
template <class F>
void for_each_index(const std::vector<int64_t>& dims, F&& f) {
  const int64_t n = product(dims);
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(idx, flat);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

void copy_element(const HostBuffer& from, int64_t i, HostBuffer& to, int64_t j) {
  const int s = size_bytes(from.dtype);
  std::memcpy(to.bytes.data() + j * s, from.bytes.data() + i * s, s);
}

// ---------------------------------------------------------------- arithmetic

int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t int_mod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  return a % b;
}

template <class C>
C apply_unary(OpKind op, C x) {
  switch (op) {
    case OpKind::Exp2:
      if constexpr (std::is_same_v<C, float>)
        return exp2_f32(x);  // the definition on f32 (core/exp2.hpp), not the libm's
      else
        return std::exp2(x);
    case OpKind::Log2: return std::log2(x);
    case OpKind::Sin: return std::sin(x);
    case OpKind::Recip: return C(1) / x;
    case OpKind::Sqrt: return std::sqrt(x);
    default: return x;
  }
}

template <class C>
C apply_binary(OpKind op, C a, C b) {
  if constexpr (std::is_same_v<C, int64_t>) {
    switch (op) {
      case OpKind::Add: return wrap_add(a, b);
      case OpKind::Mul: return wrap_mul(a, b);
      case OpKind::Mod: return int_mod(a, b);
      default: return a < b;
    }
  } else {
    switch (op) {
      case OpKind::Add: return a + b;
      case OpKind::Mul: return a * b;
      case OpKind::Mod: return std::fmod(a, b);
      default: return a < b ? C(1) : C(0);
    }
  }
}

// ---------------------------------------------------------------- ops

template <class C>
void unary_loop(const Node& n, const HostBuffer& x, const StridedView& v, HostBuffer& out) {
  const DType in_t = x.dtype;
  for_each_index(v.dims(), [&](const std::vector<int64_t>& idx, int64_t flat) {
    C value = load<C>(in_t, x, v.offset(idx));
    store<C>(out.dtype, out, flat, apply_unary(n.op, value));
  });
}

// Decodes all of x exactly (blocks::dequantize), then reads it through the view like a Cast.
HostBuffer run_dequantize(const Node& n, const HostBuffer& x, const StridedView& v) {
  const int64_t count = x.numel();
  std::vector<float> values(static_cast<size_t>(count));
  blocks::dequantize(x.dtype, x.bytes.data(), values.data(), count);
  HostBuffer out = make_buffer(n.dtype, v.numel());
  for_each_index(v.dims(), [&](const std::vector<int64_t>& idx, int64_t flat) {
    store_from_double(n.dtype, out.bytes.data(), flat, values[static_cast<size_t>(v.offset(idx))]);
  });
  return out;
}

// The Output of a block-quantized value: its stored bytes (prim allows only whole-tensor views).
HostBuffer copy_blocks(const HostBuffer& x, const StridedView& v) {
  LUMINAL_ASSERT(v.numel() == x.numel(), "output of a block-quantized value through a view");
  return x;
}

HostBuffer run_unary(const Node& n, const HostBuffer& x, const StridedView& v) {
  HostBuffer out = make_buffer(n.dtype, v.numel());
  if (n.op == OpKind::Cast && x.dtype == n.dtype) {  // same-dtype cast: an exact copy
    for_each_index(v.dims(), [&](const std::vector<int64_t>& idx, int64_t flat) {
      copy_element(x, v.offset(idx), out, flat);
    });
    return out;
  }
  switch (compute_of(x.dtype)) {
    case Compute::F32: unary_loop<float>(n, x, v, out); break;
    case Compute::F64: unary_loop<double>(n, x, v, out); break;
    case Compute::Int: unary_loop<int64_t>(n, x, v, out); break;
  }
  return out;
}

template <class C>
void binary_loop(const Node& n, const HostBuffer& a, const StridedView& va, const HostBuffer& b,
                 const StridedView& vb, HostBuffer& out) {
  for_each_index(va.dims(), [&](const std::vector<int64_t>& idx, int64_t flat) {
    C x = load<C>(a.dtype, a, va.offset(idx));
    C y = load<C>(b.dtype, b, vb.offset(idx));
    C r = apply_binary(n.op, x, y);
    if (n.op == OpKind::LessThan) {
      store_from_int64(DType::Bool, out.bytes.data(), flat, r != C(0) ? 1 : 0);
    } else {
      store<C>(out.dtype, out, flat, r);
    }
  });
}

HostBuffer run_binary(const Node& n, const HostBuffer& a, const StridedView& va,
                      const HostBuffer& b, const StridedView& vb) {
  HostBuffer out = make_buffer(n.dtype, va.numel());
  switch (compute_of(a.dtype)) {
    case Compute::F32: binary_loop<float>(n, a, va, b, vb, out); break;
    case Compute::F64: binary_loop<double>(n, a, va, b, vb, out); break;
    case Compute::Int: binary_loop<int64_t>(n, a, va, b, vb, out); break;
  }
  return out;
}

HostBuffer run_reduce(const Node& n, const HostBuffer& x, const StridedView& v,
                      const std::vector<int64_t>& out_shape) {
  HostBuffer out = make_buffer(n.dtype, product(out_shape));
  const int axis = n.axis;
  const int64_t len = v.dims()[axis];
  const bool is_sum = n.op == OpKind::SumReduce;
  const Compute c = compute_of(x.dtype);
  std::vector<int64_t> in_idx(v.dims().size());
  for_each_index(out_shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    for (int k = 0, j = 0; k < static_cast<int>(in_idx.size()); ++k)
      in_idx[k] = k == axis ? 0 : idx[j++];
    if (c == Compute::Int) {
      int64_t acc = is_sum ? 0 : std::numeric_limits<int64_t>::min();
      if (!is_sum) acc = static_cast<int64_t>(min_value(x.dtype));
      for (int64_t k = 0; k < len; ++k) {
        in_idx[axis] = k;
        int64_t e = load<int64_t>(x.dtype, x, v.offset(in_idx));
        acc = is_sum ? wrap_add(acc, e) : std::max(acc, e);
      }
      store<int64_t>(n.dtype, out, flat, acc);
    } else {
      double acc = is_sum ? 0.0 : -INFINITY;
      for (int64_t k = 0; k < len; ++k) {
        in_idx[axis] = k;
        double e = load<double>(x.dtype, x, v.offset(in_idx));
        if (is_sum)
          acc += e;
        else if (std::isnan(e) || std::isnan(acc))
          acc = NAN;
        else
          acc = std::max(acc, e);
      }
      if (c == Compute::F32) acc = static_cast<float>(acc);  // round once through f32
      store<double>(n.dtype, out, flat, acc);
    }
  });
  return out;
}

HostBuffer run_gather(const Node& n, const HostBuffer& indexes, const StridedView& vi,
                      const HostBuffer& data, const StridedView& vd) {
  HostBuffer out = make_buffer(n.dtype, vi.numel());
  for_each_index(vi.dims(), [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t j = load<int64_t>(indexes.dtype, indexes, vi.offset(idx));
    if (j < 0 || j >= vd.numel()) {
      throw Error("Gather: index " + std::to_string(j) + " at position " + std::to_string(flat) +
                  " is out of range for data of " + std::to_string(vd.numel()) + " elements");
    }
    copy_element(data, vd.offset_of_flat(j), out, flat);
  });
  return out;
}

HostBuffer run_scatter(const Node& n, const HostBuffer& dest, const StridedView& vdest,
                       const HostBuffer& indexes, const StridedView& vi, const HostBuffer& src,
                       const StridedView& vs) {
  HostBuffer out = make_buffer(n.dtype, vdest.numel());
  for_each_index(vdest.dims(), [&](const std::vector<int64_t>& idx, int64_t flat) {
    copy_element(dest, vdest.offset(idx), out, flat);
  });
  const int64_t limit = vdest.numel();
  for_each_index(vi.dims(), [&](const std::vector<int64_t>& idx, int64_t) {
    int64_t j = load<int64_t>(indexes.dtype, indexes, vi.offset(idx));
    if (j >= 0 && j < limit) copy_element(src, vs.offset(idx), out, j);
  });
  return out;
}

HostBuffer run_constant(const Node& n) {
  HostBuffer out = make_buffer(n.dtype, 1);
  if (is_float(n.dtype))
    store_from_double(n.dtype, out.bytes.data(), 0, n.value);
  else if (n.dtype == DType::Bool)
    store_from_int64(n.dtype, out.bytes.data(), 0, n.value != 0);
  else
    store_from_int64(n.dtype, out.bytes.data(), 0, n.int_value);
  return out;
}

HostBuffer run_iota(const Node& n, const DynMap& dyn, int64_t len) {
  HostBuffer out = make_buffer(n.dtype, len);
  if (len == 0) return out;  // the expression may divide by a dim that is 0 now
  std::map<std::string, Expr, std::less<>> values;
  for (const auto& [k, x] : dyn)
    values[k] = Expr(x);
  Expr e = n.iota_expr.substitute(values);
  for (int64_t i = 0; i < len; ++i)
    store_from_int64(n.dtype, out.bytes.data(), i, e.eval({}, i));
  return out;
}

}  // namespace

HostBuffer run_node(const Node& n, const std::vector<const HostBuffer*>& in, const DynMap& dyn,
                    const std::vector<int64_t>& out_shape) {
  std::vector<StridedView> views;
  for (const Operand& o : n.inputs)
    views.emplace_back(o.view, dyn);
  switch (n.op) {
    case OpKind::Constant: return run_constant(n);
    case OpKind::Iota: return run_iota(n, dyn, product(out_shape));
    case OpKind::Cast:
    case OpKind::Exp2:
    case OpKind::Log2:
    case OpKind::Sin:
    case OpKind::Recip:
    case OpKind::Sqrt: return run_unary(n, *in[0], views[0]);
    case OpKind::Dequantize: return run_dequantize(n, *in[0], views[0]);
    case OpKind::Output: {
      if (is_block(in[0]->dtype)) return copy_blocks(*in[0], views[0]);
      Node copy = n;
      copy.op = OpKind::Cast;
      return run_unary(copy, *in[0], views[0]);
    }
    case OpKind::Add:
    case OpKind::Mul:
    case OpKind::Mod:
    case OpKind::LessThan: return run_binary(n, *in[0], views[0], *in[1], views[1]);
    case OpKind::SumReduce:
    case OpKind::MaxReduce: return run_reduce(n, *in[0], views[0], out_shape);
    case OpKind::Gather: return run_gather(n, *in[0], views[0], *in[1], views[1]);
    case OpKind::Scatter:
      return run_scatter(n, *in[0], views[0], *in[1], views[1], *in[2], views[2]);
    case OpKind::Input: break;
  }
  LUMINAL_ASSERT(false, "run_node: unexpected op " + std::string(op_name(n.op)));
  return {};
}

}  // namespace luminal::reference
