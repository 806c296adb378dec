// cpu.Matmul: SumReduce over Mul as one strided dot-product kernel (any layout, any dtype).

#include <algorithm>

#include "luminal/core/error.hpp"
#include "luminal/cpu/elem_types.hpp"
#include "luminal/cpu/matmul.hpp"
#include "luminal/cpu/matmul_f32x8.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/cpu/thread_pool.hpp"

namespace luminal::cpu {

// ================================================================ kernel

namespace {

View drop_axis(const View& v, int axis) {
  View out = v;
  out.dims.erase(out.dims.begin() + axis);
  out.strides.erase(out.strides.begin() + axis);
  return out;
}

constexpr int64_t kChunk = 256;

// How 8 consecutive offsets step: 0 all equal, 1 consecutive, -1 otherwise.
int pattern8(const int64_t* o) {
  bool same = true, next = true;
  for (int t = 1; t < 8; ++t) {
    same = same && o[t] == o[0];
    next = next && o[t] == o[0] + t;
  }
  return same ? 0 : next ? 1 : -1;
}

}  // namespace

GenericMatmul::GenericMatmul(const LlirNode& n) : attrs_(n.attrs) {
  simd_ = attrs_.dtype == DType::F32 && quant::active() != quant::QuantIsa::Portable;
  if (attrs_.views.size() != 2 || attrs_.axis < 0 || attrs_.axis >= attrs_.views[0].rank() ||
      attrs_.views[1].rank() != attrs_.views[0].rank())
    throw Error("cpu.Matmul: expected two views of one rank and a reduced axis inside them, got " +
                attrs_.to_string());
}

void GenericMatmul::prepare(const DynMap& dyn, uint64_t version) {
  if (version_ == version) return;
  version_ = version;
  numel_ = 1;
  for (int64_t d : eval_shape(attrs_.shape, dyn))
    numel_ *= d;
  if (numel_ == 0) return;  // (a stride may divide by a dim that is 0 now)
  const int k = attrs_.axis;
  const View& va = attrs_.views[0];
  const View& vb = attrs_.views[1];
  out_a_ = StridedIndex(drop_axis(va, k), dyn);
  out_b_ = StridedIndex(drop_axis(vb, k), dyn);
  const StridedIndex ka(View{{va.dims[k]}, {va.strides[k]}}, dyn);
  const StridedIndex kb(View{{vb.dims[k]}, {vb.strides[k]}}, dyn);
  k_a_.resize(static_cast<size_t>(ka.numel()));
  k_b_.resize(static_cast<size_t>(ka.numel()));
  for (int64_t i = 0; i < ka.numel(); ++i) {
    k_a_[i] = ka.axis_offset(0, i);
    k_b_[i] = kb.axis_offset(0, i);
  }
  k_unit_ = true;
  for (size_t i = 0; i < k_a_.size(); ++i)
    k_unit_ = k_unit_ && k_a_[i] == static_cast<int64_t>(i) && k_b_[i] == static_cast<int64_t>(i);
}

void GenericMatmul::run(const KernelContext& k) {
  prepare(k.dyn, k.dims_version);
  if (numel_ == 0) return;
  const uint8_t* A = k.in[0];
  const uint8_t* B = k.in[1];
  uint8_t* out = k.out;
  const int64_t K = static_cast<int64_t>(k_a_.size());
  const int64_t nchunks = (numel_ + kChunk - 1) / kChunk;
  const int threads = k.threads > 0 ? k.threads : hardware_threads();
  const bool parallel = threads > 1 && nchunks > 1 && numel_ * std::max<int64_t>(K, 1) > 32768;
  dispatch_dtype(attrs_.dtype, [&](auto tag) {
    constexpr DType T = decltype(tag)::value;
    using R = compute_t<T>;
    using Acc = std::conditional_t<std::is_same_v<R, int64_t>, int64_t, double>;
    parallel_for(nchunks, parallel ? threads : 1, [&](int64_t c) {
      const int64_t begin = c * kChunk;
      const int64_t n = std::min(kChunk, numel_ - begin);
      int64_t oa[kChunk], ob[kChunk];
      out_a_.for_range(begin, begin + n, [&](int64_t i, int64_t off) { oa[i - begin] = off; });
      out_b_.for_range(begin, begin + n, [&](int64_t i, int64_t off) { ob[i - begin] = off; });
      // Outputs [j0, j1) of the chunk, one at a time.
      auto scalar = [&](int64_t j0, int64_t j1) {
        Acc acc[kChunk];
        std::fill(acc + j0, acc + j1, Acc(0));
        for (int64_t kk = 0; kk < K; ++kk) {
          const int64_t da = k_a_[kk], db = k_b_[kk];
          for (int64_t j = j0; j < j1; ++j) {
            const R x = load_elem<T>(A, oa[j] + da);
            const R y = load_elem<T>(B, ob[j] + db);
            if constexpr (std::is_same_v<R, int64_t>)
              acc[j] = num::wrap_add(acc[j], num::round_to<T>(num::wrap_mul(x, y)));
            else
              acc[j] += static_cast<double>(num::round_to<T>(x * y));
          }
        }
        for (int64_t j = j0; j < j1; ++j) {
          if constexpr (std::is_same_v<R, float>)
            store_elem<T>(out, begin + j, num::round_to<T>(static_cast<float>(acc[j])));
          else
            store_elem<T>(out, begin + j, num::round_to<T>(acc[j]));
        }
      };
      int64_t j = 0;
      if constexpr (T == DType::F32) {
        if (simd_) {
          const auto* af = reinterpret_cast<const float*>(A);
          const auto* bf = reinterpret_cast<const float*>(B);
          auto* of = reinterpret_cast<float*>(out) + begin;
          for (; j + 8 <= n;) {
            const int pa = pattern8(oa + j), pb = pattern8(ob + j);
            if (pa >= 0 && pb >= 0 && (pa | pb) != 0) {
              // As many groups (up to 4) as continue the same steps.
              int groups = 1;
              while (groups < 4 && j + 8 * (groups + 1) <= n &&
                     oa[j + 8 * groups] == oa[j] + pa * 8 * groups &&
                     ob[j + 8 * groups] == ob[j] + pb * 8 * groups &&
                     pattern8(oa + j + 8 * groups) == pa && pattern8(ob + j + 8 * groups) == pb)
                ++groups;
              if (groups == 3) groups = 2;
              f32x8::outer(groups, af + oa[j], pa == 0, bf + ob[j], pb == 0, k_a_.data(),
                           k_b_.data(), K, of + j);
              j += 8 * groups;
            } else if (k_unit_) {
              const float* ra[16];
              const float* rb[16];
              const bool ahead = j + 16 <= n;
              for (int t = 0; t < (ahead ? 16 : 8); ++t) {
                ra[t] = af + oa[j + t];
                rb[t] = bf + ob[j + t];
              }
              f32x8::dot(ra, rb, K, of + j, ahead ? ra + 8 : nullptr, ahead ? rb + 8 : nullptr);
              j += 8;
            } else {
              scalar(j, j + 8);
              j += 8;
            }
          }
        }
      }
      scalar(j, n);
    });
  });
}

namespace {

const OpDef kMatmul{"cpu.Matmul"};

std::vector<Rule> generic_rules() { return {matmul_rule(&kMatmul, "cpu.matmul-generic")}; }

class MatmulKernel : public Kernel {
 public:
  explicit MatmulKernel(const LlirNode& n) : impl_(n) {}
  void run(const KernelContext& k) override { impl_.run(k); }

 private:
  GenericMatmul impl_;
};

std::unique_ptr<Kernel> make_matmul(const LlirNode& n) { return std::make_unique<MatmulKernel>(n); }

}  // namespace

void register_matmul_generic_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kMatmul, "cpu.library", generic_rules, make_matmul};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
