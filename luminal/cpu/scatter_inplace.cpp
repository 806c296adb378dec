// cpu.ScatterInPlace: Scatter that writes into its dest's buffer instead of copying it.
//
// Rule (ruleset "cpu.inplace"): an HLIR Scatter whose dest view (views[0]) is contiguous with the
// output's element count gets an alternative with the same children and views under this op
// (OpDef::inplace_input = 0); pruning keeps it only where overwriting dest is legal (nothing
// else reads it). The payload records the index dtype (the kernel sees only raw buffers).
//
// Kernel: the output buffer already holds dest (it is dest's buffer); src[i] is written at
// flat index indexes[i], in order (the last duplicate wins), out-of-range indices skipped.
#include <cstring>
#include <sstream>

#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/elem_types.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/strided.hpp"

namespace luminal::cpu {

namespace {

const OpDef kScatterInPlace{"cpu.ScatterInPlace", OpKind::Input, false, /*inplace_input=*/0};

struct ScatterInfo final : Payload {
  DType index_dtype = DType::I32;
  explicit ScatterInfo(DType t) : index_dtype(t) {}
  size_t hash() const override { return 0x5ca77e40u + static_cast<size_t>(index_dtype); }
  bool equals(const Payload& o) const override {
    return index_dtype == static_cast<const ScatterInfo&>(o).index_dtype;
  }
  std::string to_string() const override { return "index=" + std::string(name(index_dtype)); }
};

void apply_inplace(const Match& m, EGraph& eg) {
  const ENode node = eg.node(m.root_node);
  if (node.children.size() != 3) return;
  Attrs a = eg.attrs(node.attr);
  if (a.views.size() != 3 || !a.views[0].is_contiguous()) return;
  if (a.views[0].numel() != numel(a.shape)) return;
  if (eg.dtype(node.children[0]) != a.dtype || eg.dtype(node.children[2]) != a.dtype) return;
  const DType index_dtype = eg.dtype(node.children[1]);
  if (!is_integer(index_dtype)) return;
  a.payload = std::make_shared<ScatterInfo>(index_dtype);
  const ClassId c = eg.add(&kScatterInPlace, a, node.children);
  eg.merge(c, m.root);
}

std::vector<Rule> inplace_rules() {
  return {Rule{"cpu.scatter-inplace", Pattern::op(OpKind::Scatter).bind("scatter"), nullptr,
               apply_inplace}};
}

class ScatterInPlaceKernel : public Kernel {
 public:
  explicit ScatterInPlaceKernel(const LlirNode& n) : attrs_(n.attrs) {
    const auto* info = dynamic_cast<const ScatterInfo*>(n.attrs.payload.get());
    if (!info || attrs_.views.size() != 3)
      throw Error("cpu.ScatterInPlace: expected three views and the index dtype, got " +
                  attrs_.to_string());
    index_dtype_ = info->index_dtype;
  }

  void run(const KernelContext& k) override {
    if (!cached_ || cached_dyn_ != k.dyn) {
      numel_ = 1;
      for (int64_t d : eval_shape(attrs_.shape, k.dyn))
        numel_ *= d;
      updates_ = 1;
      for (int64_t d : eval_shape(attrs_.views[1].dims, k.dyn))
        updates_ *= d;
      // (with no element, a stride may divide by a dim that is 0 now)
      if (updates_ > 0 && numel_ > 0) {
        idx_ = StridedIndex(attrs_.views[1], k.dyn);
        src_ = StridedIndex(attrs_.views[2], k.dyn);
      }
      cached_dyn_ = k.dyn;
      cached_ = true;
    }
    const int esize = size_bytes(attrs_.dtype);
    // The executor hands dest's own buffer as the output; copy when it did not.
    if (k.out != k.in[0] && numel_ > 0)
      std::memcpy(k.out, k.in[0], static_cast<size_t>(numel_ * esize));
    if (updates_ == 0 || numel_ == 0) return;
    const uint8_t* ix = k.in[1];
    const uint8_t* src = k.in[2];
    uint8_t* out = k.out;
    const int64_t limit = numel_;
    const int64_t n = updates_;
    std::vector<int64_t> src_off(static_cast<size_t>(std::min<int64_t>(n, 4096)));
    dispatch_dtype(index_dtype_, [&](auto tag) {
      constexpr DType T = decltype(tag)::value;
      if constexpr (std::is_same_v<compute_t<T>, int64_t>) {
        // In order, in chunks: source offsets first, then the writes.
        const int64_t chunk = static_cast<int64_t>(src_off.size());
        for (int64_t begin = 0; begin < n; begin += chunk) {
          const int64_t end = std::min(n, begin + chunk);
          src_.for_range(begin, end, [&](int64_t i, int64_t off) { src_off[i - begin] = off; });
          idx_.for_range(begin, end, [&](int64_t i, int64_t off) {
            const int64_t j = load_elem<T>(ix, off);
            if (j >= 0 && j < limit)
              copy_elem(out + j * esize, src + src_off[i - begin] * esize, esize);
          });
        }
      }
    });
  }

 private:
  Attrs attrs_;
  DType index_dtype_ = DType::I32;
  bool cached_ = false;
  DynMap cached_dyn_;
  StridedIndex idx_, src_;
  int64_t numel_ = 0, updates_ = 0;
};

std::unique_ptr<Kernel> make_scatter_inplace(const LlirNode& n) {
  return std::make_unique<ScatterInPlaceKernel>(n);
}

}  // namespace

void register_scatter_inplace_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kScatterInPlace, "cpu.inplace", inplace_rules, make_scatter_inplace};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
