// Elementwise primitives on the CPU: Cast, Exp2, Log2, Sin, Recip, Sqrt, Add, Mul, Mod, LessThan.
//
// The output is produced in blocks: each input block is loaded into an array of the compute type
// (f32, double or int64) through its view, the op runs over plain arrays (vectorisable), and the
// result is rounded/wrapped into the output dtype. f32/f64 inputs read through an identity view,
// and f32/f64 outputs, skip the staging copy.
#include <cmath>
#include <memory>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cpu/int_mod_array.hpp"
#include "luminal/cpu/op_math.hpp"
#include "luminal/cpu/primitive_util.hpp"

namespace luminal::cpu {

namespace {

constexpr int64_t kBlock = 1024;

template <class C>
using LoadFn = void (*)(const uint8_t* base, const EvalView& v, int64_t b, int64_t e, C* dst);
template <class C>
using StoreFn = void (*)(uint8_t* out, int64_t b, int64_t e, const C* src);

template <DType T>
void load_block(const uint8_t* base, const EvalView& v, int64_t b, int64_t e, compute_t<T>* dst) {
  if (v.idx.is_identity()) {
    for (int64_t i = b; i < e; ++i)
      dst[i - b] = load_elem<T>(base, i);
    return;
  }
  v.idx.for_range(b, e, [&](int64_t i, int64_t off) { dst[i - b] = load_elem<T>(base, off); });
}

template <DType T, class C>
void store_block(uint8_t* out, int64_t b, int64_t e, const C* src) {
  for (int64_t i = b; i < e; ++i)
    store_elem<T, C>(out, i, src[i - b]);
}

template <class C>
LoadFn<C> load_fn(DType t) {
  return dispatch_dtype(t, [](auto tag) -> LoadFn<C> {
    constexpr DType T = decltype(tag)::value;
    if constexpr (std::is_same_v<compute_t<T>, C>) {
      return &load_block<T>;
    } else {
      return nullptr;
    }
  });
}

template <class C>
StoreFn<C> store_fn(DType t) {
  return dispatch_dtype(t, [](auto tag) -> StoreFn<C> {
    constexpr DType T = decltype(tag)::value;
    return &store_block<T, C>;
  });
}

// ---------------------------------------------------------------- the ops over arrays

template <class C>
void apply_unary(OpKind op, const C* x, C* r, int64_t n) {
  auto each = [&](auto f) {
    for (int64_t i = 0; i < n; ++i)
      r[i] = f(x[i]);
  };
  if constexpr (std::is_floating_point_v<C>) {
    if (unary_array<C>(op, x, r, n)) return;
    if (with_unary_math<C>(op, each)) return;
  }
  each([](C v) { return v; });  // Cast: the conversion happens on store
}

template <class C>
void apply_binary(OpKind op, const C* a, const C* b, C* r, int64_t n) {
  auto each = [&](auto f) {
    for (int64_t i = 0; i < n; ++i)
      r[i] = f(a[i], b[i]);
  };
  if (op == OpKind::LessThan)
    each([](C x, C y) { return x < y ? C(1) : C(0); });
  else if constexpr (std::is_same_v<C, int64_t>) {
    if (op == OpKind::Mod)
      int_mod_array(a, b, r, n);
    else
      with_binary_math<C>(op, each);
  } else {
    with_binary_math<C>(op, each);
  }
}

// ---------------------------------------------------------------- the kernel

class ElementwiseKernel final : public Kernel {
 public:
  ElementwiseKernel(const LlirNode& n, DType in_t)
      : op_(n.op->kind), in_t_(in_t), out_t_(n.attrs.dtype), views_(n.attrs.views) {}

  void run(const KernelContext& k) override {
    cache_.update(views_, k.dyn, k.dims_version);
    const int64_t n = cache_[0].numel;
    if (n == 0) return;
    if (op_ == OpKind::Cast && in_t_ == out_t_) {  // same-dtype cast: an exact copy
      copy_view(k.in[0], cache_[0], k.out, size_bytes(out_t_), k.threads);
      return;
    }
    switch (compute_kind(in_t_)) {
      case ComputeKind::F32: run_as<float>(k, n); break;
      case ComputeKind::F64: run_as<double>(k, n); break;
      case ComputeKind::Int: run_as<int64_t>(k, n); break;
    }
  }

 private:
  bool transcendental() const {
    return op_ == OpKind::Exp2 || op_ == OpKind::Log2 || op_ == OpKind::Sin || op_ == OpKind::Mod;
  }

  template <class C>
  static constexpr DType native_dtype() {
    return std::is_same_v<C, float> ? DType::F32 : DType::F64;
  }

  template <class C>
  void run_as(const KernelContext& k, int64_t n) {
    const int arity = static_cast<int>(views_.size());
    const LoadFn<C> load = load_fn<C>(in_t_);
    const StoreFn<C> store = store_fn<C>(out_t_);
    LUMINAL_ASSERT(load != nullptr, "elementwise: compute type mismatch");
    constexpr bool kFloat = std::is_floating_point_v<C>;
    const bool direct_out = kFloat && op_ != OpKind::LessThan && out_t_ == native_dtype<C>();
    bool direct_in[2] = {false, false};
    for (int i = 0; i < arity; ++i)
      direct_in[i] = kFloat && in_t_ == native_dtype<C>() && cache_[i].identity();
    const int64_t work = transcendental() ? n * 16 : n;
    parallel_blocks(n, kBlock, k.threads, work, [&](int64_t b, int64_t e) {
      alignas(64) C buf[3][kBlock];
      const C* src[2] = {nullptr, nullptr};
      for (int i = 0; i < arity; ++i) {
        if (direct_in[i]) {
          src[i] = reinterpret_cast<const C*>(k.in[i]) + b;
        } else {
          load(k.in[i], cache_[i], b, e, buf[i]);
          src[i] = buf[i];
        }
      }
      C* r = direct_out ? reinterpret_cast<C*>(k.out) + b : buf[2];
      if (arity == 1)
        apply_unary<C>(op_, src[0], r, e - b);
      else
        apply_binary<C>(op_, src[0], src[1], r, e - b);
      if (!direct_out) store(k.out, b, e, buf[2]);
    });
  }

  OpKind op_;
  DType in_t_;
  DType out_t_;
  std::vector<View> views_;
  ViewCache cache_;
};

}  // namespace

std::unique_ptr<Kernel> make_elementwise_kernel(const LlirNode& n) {
  const OpKind op = n.op->kind;
  const int arity = is_binary(op) ? 2 : 1;
  LUMINAL_ASSERT(
      static_cast<int>(n.inputs.size()) == arity && static_cast<int>(n.attrs.views.size()) == arity,
      std::string(n.op->name) + ": wrong number of inputs");
  // Inputs share the output's dtype except for Cast and LessThan.
  DType in_t = n.attrs.dtype;
  if (op == OpKind::Cast || op == OpKind::LessThan) in_t = input_dtype(n, 0);
  if (op != OpKind::Cast && is_unary(op) && !is_float(in_t)) {
    throw Error(std::string(n.op->name) + " needs a float input, got " + std::string(name(in_t)));
  }
  return std::make_unique<ElementwiseKernel>(n, in_t);
}

}  // namespace luminal::cpu
