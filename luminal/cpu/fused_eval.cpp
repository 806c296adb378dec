// SlotEval (see fused_eval.hpp).
#include "luminal/cpu/fused_eval.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "luminal/cpu/elem_types.hpp"
#include "luminal/cpu/op_math.hpp"

namespace luminal::cpu {

namespace {

template <class R>
R* slot(uint8_t* s, int64_t len, int i) {
  return reinterpret_cast<R*>(SlotEval::at(s, len, i));
}

uint8_t* grow(std::unique_ptr<uint8_t[]>& buf, size_t& size, size_t bytes) {
  if (size < bytes) {
    buf.reset(new uint8_t[bytes]);
    size = bytes;
  }
  return buf.get();
}

}  // namespace

uint8_t* SlotEval::scratch(int64_t len) const {
  thread_local std::unique_ptr<uint8_t[]> buf;
  thread_local size_t size = 0;
  return grow(buf, size, insts_.size() * static_cast<size_t>(len) * 8);
}

uint8_t* SlotEval::scratch2(int64_t len) const {
  thread_local std::unique_ptr<uint8_t[]> buf;
  thread_local size_t size = 0;
  return grow(buf, size, insts_.size() * static_cast<size_t>(len) * 8);
}

void SlotEval::fill_constants(uint8_t* s, int64_t len, const std::vector<bool>* only) const {
  for (size_t i = 0; i < insts_.size(); ++i) {
    const FusedInst& in = insts_[i];
    if (in.op != FusedOpcode::Const || (only && !(*only)[i])) continue;
    dispatch_dtype(in.dtype, [&](auto tag) {
      constexpr DType T = decltype(tag)::value;
      using R = compute_t<T>;
      R v;
      if constexpr (std::is_same_v<R, int64_t>) {
        v = T == DType::Bool ? (in.value != 0 ? 1 : 0) : num::round_to<T>(in.int_value);
      } else if constexpr (std::is_same_v<R, double>) {
        v = in.value;
      } else {
        v = num::round_to<T>(static_cast<float>(in.value));
      }
      std::fill_n(slot<R>(s, len, static_cast<int>(i)), len, v);
    });
  }
}

void SlotEval::load(uint8_t* s, int64_t len, int i, const uint8_t* src, const StridedIndex& ix,
                    int64_t begin, int64_t n, int64_t at) const {
  dispatch_dtype(insts_[i].dtype, [&](auto tag) {
    constexpr DType T = decltype(tag)::value;
    using R = compute_t<T>;
    R* d = slot<R>(s, len, i) + at;
    if (ix.is_identity()) {
      for (int64_t j = 0; j < n; ++j)
        d[j] = load_elem<T>(src, begin + j);
    } else {
      // Run by run: a stretch along a linear last axis copies (step 1) or fills (step 0).
      ix.for_runs(begin, begin + n, [&](int64_t f, int64_t off, int64_t len, int64_t step) {
        R* o = d + (f - begin);
        if (step == 1) {
          for (int64_t j = 0; j < len; ++j)
            o[j] = load_elem<T>(src, off + j);
        } else if (step == 0) {
          std::fill_n(o, len, static_cast<R>(load_elem<T>(src, off)));
        } else {
          for (int64_t j = 0; j < len; ++j)
            o[j] = load_elem<T>(src, off + step * j);
        }
      });
    }
  });
}

void SlotEval::expand(const uint8_t* from, int64_t from_len, uint8_t* to, int64_t to_len, int i,
                      int64_t count, int64_t seg) const {
  dispatch_dtype(insts_[i].dtype, [&](auto tag) {
    using R = compute_t<decltype(tag)::value>;
    const R* v = slot<R>(const_cast<uint8_t*>(from), from_len, i);
    R* d = slot<R>(to, to_len, i);
    for (int64_t j = 0; j < count; ++j)
      std::fill_n(d + j * seg, seg, v[j]);
  });
}

void SlotEval::eval(uint8_t* s, int64_t len, int i, int64_t n) const {
  const FusedInst& in = insts_[i];
  if (in.op == FusedOpcode::Cast) {
    const DType from = insts_[in.a].dtype;
    if (from == in.dtype) {  // an exact copy
      std::memcpy(at(s, len, i), at(s, len, in.a), static_cast<size_t>(n) * 8);
      return;
    }
    dispatch_dtype(from, [&](auto ftag) {
      using R = compute_t<decltype(ftag)::value>;
      const R* x = slot<R>(s, len, in.a);
      dispatch_dtype(in.dtype, [&](auto ttag) {
        constexpr DType T = decltype(ttag)::value;
        using TR = compute_t<T>;
        TR* d = slot<TR>(s, len, i);
        for (int64_t j = 0; j < n; ++j)
          d[j] = num::convert_to<T>(x[j]);
      });
    });
    return;
  }
  if (in.op == FusedOpcode::Select) {
    const int64_t* c = slot<int64_t>(s, len, in.a);
    dispatch_dtype(in.dtype, [&](auto tag) {
      using R = compute_t<decltype(tag)::value>;
      const R* x = slot<R>(s, len, in.b);
      const R* y = slot<R>(s, len, in.c);
      R* d = slot<R>(s, len, i);
      for (int64_t j = 0; j < n; ++j)
        d[j] = c[j] ? x[j] : y[j];
    });
    return;
  }
  if (is_unary_math(in.op)) {
    dispatch_dtype(in.dtype, [&](auto tag) {
      constexpr DType T = decltype(tag)::value;
      using R = compute_t<T>;
      if constexpr (!std::is_same_v<R, int64_t>) {
        const R* x = slot<R>(s, len, in.a);
        R* d = slot<R>(s, len, i);
        if (unary_array<R>(in.op, x, d, n)) {  // then rounded to T, as `each` does
          if constexpr (T != DType::F32)
            for (int64_t j = 0; j < n; ++j)
              d[j] = num::round_to<T>(d[j]);
          return;
        }
        auto each = [&](auto f) {
          for (int64_t j = 0; j < n; ++j)
            d[j] = num::round_to<T>(f(x[j]));
        };
        with_unary_math<R>(in.op, each);
      }
    });
    return;
  }
  const DType t = insts_[in.a].dtype;
  dispatch_dtype(t, [&](auto tag) {
    constexpr DType T = decltype(tag)::value;
    using R = compute_t<T>;
    const R* x = slot<R>(s, len, in.a);
    const R* y = slot<R>(s, len, in.b);
    if (in.op == FusedOpcode::LessThan) {
      int64_t* d = slot<int64_t>(s, len, i);
      for (int64_t j = 0; j < n; ++j)
        d[j] = x[j] < y[j] ? 1 : 0;
      return;
    }
    R* d = slot<R>(s, len, i);
    auto each = [&](auto f) {
      for (int64_t j = 0; j < n; ++j)
        d[j] = num::round_to<T>(f(x[j], y[j]));
    };
    with_binary_math<R>(in.op, each);
  });
}

void SlotEval::store(const uint8_t* s, int64_t len, int i, DType dtype, uint8_t* out, int64_t begin,
                     int64_t n) const {
  dispatch_dtype(dtype, [&](auto tag) {
    constexpr DType T = decltype(tag)::value;
    using R = compute_t<T>;
    const R* v = slot<R>(const_cast<uint8_t*>(s), len, i);
    for (int64_t j = 0; j < n; ++j)
      store_elem<T>(out, begin + j, v[j]);
  });
}

}  // namespace luminal::cpu
