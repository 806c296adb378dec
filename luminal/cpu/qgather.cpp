// cpu.QGather: Gather from a dequantised block tensor without dequantising all of it. Each
// index addresses the dequantised tensor (flat); its block is decoded with the exact decoder
// (core/blocks.hpp), once per run of indices inside one block (an embedding row reads each
// block once), so values are bitwise the reference's. It dominates the Gather it replaces, which
// would need the whole table decoded every step.
#include <memory>
#include <string>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/quant_rows.hpp"
#include "luminal/cpu/thread_pool.hpp"
#include "luminal/kernels/matmul_rule.hpp"
#include "luminal/kernels/quant_rule.hpp"

namespace luminal::cpu {

namespace {

const OpDef kQGather{"cpu.QGather"};

std::vector<Rule> qgather_rules() {
  Rule r{"cpu.qgather", quant_gather_pattern(),
         [](const Match& m, const EGraph& eg) { return quant_gather_parts(eg, m).has_value(); },
         [](const Match& m, EGraph& eg) {
           std::optional<QuantGatherParts> p = quant_gather_parts(eg, m);
           if (!p) return;
           Attrs a = p->gather;
           a.views = {p->index_view, p->weight_view};
           if (std::optional<ENodeId> n =
                   add_merged(eg, &kQGather, a, {p->indexes, p->weight}, m.root))
             eg.dominate(*n, p->gather_node);
         }};
  return {r};
}

class QGatherKernel final : public Kernel {
 public:
  explicit QGatherKernel(const LlirNode& n)
      : index_t_(input_dtype(n, 0)),
        wtype_(input_dtype(n, 1)),
        out_t_(n.attrs.dtype),
        index_view_(n.attrs.views.at(0)),
        rows_(row_byte_offsets(n.attrs.views.at(1), wtype_, "cpu.QGather")) {
    row_ = n.attrs.views[1].dims.back().as_const();
    total_ = row_ * static_cast<int64_t>(rows_.size());
  }

  void run(const KernelContext& k) override {
    views_.update({index_view_}, k.dyn, k.dims_version);
    const EvalView& iv = views_[0];
    const int64_t count = iv.numel;
    const int bs = block_size(wtype_);
    const int64_t bb = block_bytes(wtype_);
    if (out_t_ == DType::F32 && iv.identity() &&
        run_rows(k.in[0], k.in[1], reinterpret_cast<float*>(k.out), count))
      return;
    float block[256];
    const uint8_t* last = nullptr;
    iv.idx.for_range(0, count, [&](int64_t i, int64_t off) {
      const int64_t j = load_as_int64(index_t_, k.in[0], off);
      if (j < 0 || j >= total_)
        throw Error("Gather: index " + std::to_string(j) + " at position " + std::to_string(i) +
                    " is out of range for data of " + std::to_string(total_) + " elements");
      const int64_t col = j % row_;
      const uint8_t* src = k.in[1] + rows_[static_cast<size_t>(j / row_)] + (col / bs) * bb;
      if (src != last) {
        blocks::dequantize(wtype_, src, block, bs);
        last = src;
      }
      const float v = block[col % bs];
      if (out_t_ == DType::F32)
        reinterpret_cast<float*>(k.out)[i] = v;
      else
        store_from_double(out_t_, k.out, i, v);
    });
  }

 private:
  // An embedding's indexes: whole rows of the table, in order (token t * row .. + row - 1), read
  // from a contiguous index tensor. Each such row decodes in one call straight into the output;
  // false (nothing written that the general path would not write the same) at the first index
  // that is not one.
  bool run_rows(const uint8_t* ids, const uint8_t* table, float* out, int64_t count) const {
    if (index_t_ != DType::I32 && index_t_ != DType::I64) return false;
    const auto at = [&](int64_t i) {
      return index_t_ == DType::I32 ? int64_t{reinterpret_cast<const int32_t*>(ids)[i]}
                                    : reinterpret_cast<const int64_t*>(ids)[i];
    };
    for (int64_t i = 0; i < count; i += row_) {
      const int64_t j = at(i);
      if (count - i < row_ || j < 0 || j >= total_ || j % row_ != 0) return false;
      for (int64_t c = 1; c < row_; ++c)
        if (at(i + c) != j + c) return false;
      blocks::dequantize(wtype_, table + rows_[static_cast<size_t>(j / row_)], out + i, row_);
    }
    return true;
  }

  DType index_t_, wtype_, out_t_;
  View index_view_;
  std::vector<uint64_t> rows_;  // byte offset of each row of the dequantised tensor
  int64_t row_ = 0, total_ = 0;
  ViewCache views_;
};

std::unique_ptr<Kernel> make_qgather(const LlirNode& n) {
  return std::make_unique<QGatherKernel>(n);
}

}  // namespace

void register_qgather_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kQGather, "cpu.library", qgather_rules, make_qgather};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
