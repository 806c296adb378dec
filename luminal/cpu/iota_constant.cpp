// Constant and Iota on the CPU.
//
//   Constant: one element of the node's dtype (floats from `value`, Bool value != 0, integers
//             from `int_value`, wrapped), encoded once when the kernel is made.
//   Iota:     element i = iota_expr(z = i) at the dyn values, stored with wrap. A linear
//             expression a*z + b runs as a plain loop; anything else (z % 32000, the gather
//             indices of rope's halves) is evaluated per element once and copied from that
//             table on later runs, until a dim the expression or the length uses changes.
#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cpu/primitive_util.hpp"

namespace luminal::cpu {

namespace {

class ConstantKernel final : public Kernel {
 public:
  explicit ConstantKernel(const LlirNode& n) : bytes_(size_bytes(n.attrs.dtype)) {
    const DType t = n.attrs.dtype;
    if (is_float(t))
      store_from_double(t, bytes_.data(), 0, n.attrs.value);
    else if (t == DType::Bool)
      store_from_int64(t, bytes_.data(), 0, n.attrs.value != 0 ? 1 : 0);
    else
      store_from_int64(t, bytes_.data(), 0, n.attrs.int_value);
  }
  void run(const KernelContext& k) override { std::memcpy(k.out, bytes_.data(), bytes_.size()); }

 private:
  std::vector<uint8_t> bytes_;
};

class IotaKernel final : public Kernel {
 public:
  explicit IotaKernel(const LlirNode& n)
      : t_(n.attrs.dtype), shape_(n.attrs.shape), expr_(n.attrs.iota_expr) {
    for (const std::string& v : expr_.vars())
      if (v != "z") vars_.push_back(v);
    for (const Expr& d : shape_)
      for (const std::string& v : d.vars())
        if (std::find(vars_.begin(), vars_.end(), v) == vars_.end()) vars_.push_back(v);
  }

  void run(const KernelContext& k) override {
    update(k.dyn, k.dims_version);
    if (len_ == 0) return;
    dispatch_dtype(t_, [&](auto tag) {
      constexpr DType T = decltype(tag)::value;
      uint8_t* out = k.out;
      if (linear_) {
        const int64_t a = a_, b = b_;
        parallel_blocks(len_, 1 << 14, k.threads, len_, [&](int64_t lo, int64_t hi) {
          auto* o = reinterpret_cast<storage_t<T>*>(out);
          for (int64_t i = lo; i < hi; ++i) {
            const auto v =
                static_cast<uint64_t>(a) * static_cast<uint64_t>(i) + static_cast<uint64_t>(b);
            if constexpr (is_int_dtype(T) && T != DType::Bool)
              o[i] = static_cast<storage_t<T>>(v);  // the wrapped value, as store_elem stores it
            else
              store_elem<T>(out, i, static_cast<int64_t>(v));
          }
        });
        return;
      }
      std::memcpy(out, table_.data(), table_.size());
    });
  }

 private:
  void update(const DynMap& dyn, uint64_t version) {
    if (version_ == version) return;
    // Only the dims the expression or the length use matter (decode changes c every step).
    std::vector<int64_t> values;
    for (const std::string& v : vars_) {
      auto it = dyn.find(v);
      values.push_back(it == dyn.end() ? INT64_MIN : it->second);
    }
    if (version_ != 0 && values == values_) {
      version_ = version;
      return;
    }
    version_ = 0;
    len_ = 1;
    for (int64_t d : eval_shape(shape_, dyn))
      len_ *= d;
    linear_ = false;
    table_.clear();
    if (len_ > 0) {  // else the expression may divide by a dim that is 0 now
      std::map<std::string, Expr, std::less<>> subs;
      for (const auto& [name, v] : dyn)
        subs[name] = Expr(v);
      const Expr at = expr_.substitute(subs);
      auto lin = at.as_linear("z");
      if (lin && lin->first.is_const() && lin->second.is_const()) {
        linear_ = true;
        a_ = lin->first.as_const();
        b_ = lin->second.as_const();
      } else {
        table_.resize(static_cast<size_t>(len_ * size_bytes(t_)));
        dispatch_dtype(t_, [&](auto tag) {
          constexpr DType T = decltype(tag)::value;
          const DynMap none;
          for (int64_t i = 0; i < len_; ++i)
            store_elem<T>(table_.data(), i, at.eval(none, i));
        });
      }
    }
    values_ = std::move(values);
    version_ = version;
  }

  DType t_;
  Shape shape_;
  Expr expr_;
  std::vector<std::string> vars_;  // the dims expr_ and shape_ use
  // per dyn values
  uint64_t version_ = 0;
  std::vector<int64_t> values_;  // of vars_, when last evaluated
  int64_t len_ = 0;
  bool linear_ = false;
  std::vector<uint8_t> table_;  // the elements, when not linear
  int64_t a_ = 0, b_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_constant_kernel(const LlirNode& n) {
  return std::make_unique<ConstantKernel>(n);
}

std::unique_ptr<Kernel> make_iota_kernel(const LlirNode& n) {
  return std::make_unique<IotaKernel>(n);
}

}  // namespace luminal::cpu
