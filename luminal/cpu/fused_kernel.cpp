// cpu.Fused kernel: evaluates a FusedProgram over blocks of output elements.
//
// Per block of up to kBlock elements, each instruction fills an array of its compute type (float
// for f32/f16/bf16/tf32/fp8, double for f64, int64 for integers and Bool), rounding every result
// to the instruction's dtype as the reference does; the last array is stored. Blocks run on the
// pool's threads, each with its own scratch (a thread-local buffer reused by every call, its
// arrays as long as the node's block: a node of a few elements touches a few cache lines, and
// a call allocates nothing); constants are filled once per call and thread.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "luminal/core/error.hpp"
#include "luminal/cpu/elem_types.hpp"
#include "luminal/cpu/fused.hpp"
#include "luminal/cpu/op_math.hpp"
#include "luminal/cpu/strided.hpp"
#include "luminal/cpu/thread_pool.hpp"

namespace luminal::cpu {

namespace {

constexpr int64_t kBlock = 1024;

/// Instruction i's array in a scratch of arrays of `len` 8-byte elements.
template <class R>
R* slot(void* base, int i, int64_t len) {
  return reinterpret_cast<R*>(static_cast<uint8_t*>(base) + static_cast<size_t>(i * len) * 8);
}

/// This thread's scratch, at least `bytes` long.
uint8_t* thread_scratch(size_t bytes) {
  thread_local std::unique_ptr<uint8_t[]> buf;
  thread_local size_t size = 0;
  if (size < bytes) {
    buf.reset(new uint8_t[bytes]);
    size = bytes;
  }
  return buf.get();
}

class FusedKernel : public Kernel {
 public:
  explicit FusedKernel(const LlirNode& n) : node_(n) {
    const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
    if (!prog) throw Error("cpu.Fused: the node has no FusedProgram payload");
    insts_ = prog->insts;
    prog->validate();
    if (prog->has_row_reduce())
      throw Error("cpu.Fused: the program has a row reduction (a row op's program): " +
                  prog->to_string());
    if (prog->num_children() > static_cast<int>(n.attrs.views.size()))
      throw Error("cpu.Fused: the program loads more children than the node has views");
    if (insts_.back().dtype != n.attrs.dtype)
      throw Error("cpu.Fused: the program's result dtype differs from the node's dtype");
  }

  void run(const KernelContext& k) override {
    if (version_ != k.dims_version) {
      numel_ = 1;
      for (int64_t d : eval_shape(node_.attrs.shape, k.dyn))
        numel_ *= d;
      idx_.clear();
      if (numel_ > 0)  // (with no element, a stride may divide by a dim that is 0 now)
        for (const View& v : node_.attrs.views)
          idx_.emplace_back(v, k.dyn);
      // Arrays of a block's length, rounded up to whole cache lines.
      len_ = std::min<int64_t>(kBlock, (numel_ + 7) / 8 * 8);
      version_ = k.dims_version;
    }
    if (numel_ == 0) return;
    const int64_t nblocks = (numel_ + kBlock - 1) / kBlock;
    const int threads = k.threads > 0 ? k.threads : hardware_threads();
    const int parts = nblocks > 4 ? static_cast<int>(std::min<int64_t>(threads, nblocks)) : 1;
    // Each part: a contiguous range of blocks and its own scratch.
    parallel_for(parts, parts, [&](int64_t part) {
      uint8_t* scratch = thread_scratch(insts_.size() * static_cast<size_t>(len_) * 8);
      fill_constants(scratch);
      for (int64_t b = nblocks * part / parts; b < nblocks * (part + 1) / parts; ++b) {
        const int64_t begin = b * kBlock;
        const int64_t n = std::min(kBlock, numel_ - begin);
        for (size_t i = 0; i < insts_.size(); ++i)
          eval(k, scratch, static_cast<int>(i), begin, n);
        store(k, scratch, begin, n);
      }
    });
  }

 private:
  void fill_constants(void* s) const {
    for (size_t i = 0; i < insts_.size(); ++i) {
      const FusedInst& in = insts_[i];
      if (in.op != FusedOpcode::Const) continue;
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
        std::fill_n(slot<R>(s, static_cast<int>(i), len_), len_, v);
      });
    }
  }

  void eval(const KernelContext& k, void* s, int i, int64_t begin, int64_t n) const {
    const FusedInst& in = insts_[i];
    switch (in.op) {
      case FusedOpcode::Const: return;
      case FusedOpcode::Load: return load(k, s, i, begin, n);
      case FusedOpcode::Cast: return cast(s, i, n);
      case FusedOpcode::Select: return select(s, i, n);
      default: break;
    }
    if (is_unary_math(in.op)) return unary(s, i, n);
    return binary(s, i, n);
  }

  void load(const KernelContext& k, void* s, int i, int64_t begin, int64_t n) const {
    const FusedInst& in = insts_[i];
    const uint8_t* src = k.in[in.a];
    const StridedIndex& ix = idx_[in.a];
    dispatch_dtype(in.dtype, [&](auto tag) {
      constexpr DType T = decltype(tag)::value;
      using R = compute_t<T>;
      R* d = slot<R>(s, i, len_);
      if (ix.is_identity()) {
        for (int64_t j = 0; j < n; ++j)
          d[j] = load_elem<T>(src, begin + j);
      } else {
        ix.for_range(begin, begin + n,
                     [&](int64_t f, int64_t off) { d[f - begin] = load_elem<T>(src, off); });
      }
    });
  }

  void unary(void* s, int i, int64_t n) const {
    const FusedInst& in = insts_[i];
    dispatch_dtype(in.dtype, [&](auto tag) {
      constexpr DType T = decltype(tag)::value;
      using R = compute_t<T>;
      if constexpr (!std::is_same_v<R, int64_t>) {
        const R* x = slot<R>(s, in.a, len_);
        R* d = slot<R>(s, i, len_);
        auto each = [&](auto f) {
          for (int64_t j = 0; j < n; ++j)
            d[j] = num::round_to<T>(f(x[j]));
        };
        with_unary_math<R>(in.op, each);
      }
    });
  }

  void cast(void* s, int i, int64_t n) const {
    const FusedInst& in = insts_[i];
    const DType from = insts_[in.a].dtype;
    if (from == in.dtype) {  // an exact copy
      std::memcpy(slot<uint8_t>(s, i, len_), slot<uint8_t>(s, in.a, len_),
                  static_cast<size_t>(n) * 8);
      return;
    }
    dispatch_dtype(from, [&](auto ftag) {
      using R = compute_t<decltype(ftag)::value>;
      const R* x = slot<R>(s, in.a, len_);
      dispatch_dtype(in.dtype, [&](auto ttag) {
        constexpr DType T = decltype(ttag)::value;
        using TR = compute_t<T>;
        TR* d = slot<TR>(s, i, len_);
        for (int64_t j = 0; j < n; ++j)
          d[j] = num::convert_to<T>(x[j]);
      });
    });
  }

  void binary(void* s, int i, int64_t n) const {
    const FusedInst& in = insts_[i];
    const DType t = insts_[in.a].dtype;
    dispatch_dtype(t, [&](auto tag) {
      constexpr DType T = decltype(tag)::value;
      using R = compute_t<T>;
      const R* x = slot<R>(s, in.a, len_);
      const R* y = slot<R>(s, in.b, len_);
      if (in.op == FusedOpcode::LessThan) {
        int64_t* d = slot<int64_t>(s, i, len_);
        for (int64_t j = 0; j < n; ++j)
          d[j] = x[j] < y[j] ? 1 : 0;
        return;
      }
      R* d = slot<R>(s, i, len_);
      auto each = [&](auto f) {
        for (int64_t j = 0; j < n; ++j)
          d[j] = num::round_to<T>(f(x[j], y[j]));
      };
      with_binary_math<R>(in.op, each);
    });
  }

  void select(void* s, int i, int64_t n) const {
    const FusedInst& in = insts_[i];
    const int64_t* c = slot<int64_t>(s, in.a, len_);
    dispatch_dtype(in.dtype, [&](auto tag) {
      using R = compute_t<decltype(tag)::value>;
      const R* x = slot<R>(s, in.b, len_);
      const R* y = slot<R>(s, in.c, len_);
      R* d = slot<R>(s, i, len_);
      for (int64_t j = 0; j < n; ++j)
        d[j] = c[j] ? x[j] : y[j];
    });
  }

  void store(const KernelContext& k, void* s, int64_t begin, int64_t n) const {
    const int last = static_cast<int>(insts_.size()) - 1;
    dispatch_dtype(node_.attrs.dtype, [&](auto tag) {
      constexpr DType T = decltype(tag)::value;
      using R = compute_t<T>;
      const R* v = slot<R>(s, last, len_);
      for (int64_t j = 0; j < n; ++j)
        store_elem<T>(k.out, begin + j, v[j]);
    });
  }

  LlirNode node_;
  std::vector<FusedInst> insts_;
  uint64_t version_ = 0;
  std::vector<StridedIndex> idx_;
  int64_t numel_ = 0;
  int64_t len_ = kBlock;  // elements of each scratch array
};

}  // namespace

std::unique_ptr<Kernel> make_fused_kernel(const LlirNode& n) {
  return std::make_unique<FusedKernel>(n);
}

}  // namespace luminal::cpu
