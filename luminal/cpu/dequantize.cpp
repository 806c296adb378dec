// Dequantize on the CPU: each output row decodes one stored row of blocks with the exact decoder
// (core/blocks.hpp), so values are bitwise the reference's. The input's view keeps whole rows
// (prim::dequantize checks it) and is static, so the table of source rows is built once at load;
// rows are split over the thread pool.
#include <memory>
#include <string>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/quant_rows.hpp"
#include "luminal/cpu/thread_pool.hpp"

namespace luminal::cpu {

namespace {

class DequantizeKernel final : public Kernel {
 public:
  explicit DequantizeKernel(const LlirNode& n)
      : in_t_(input_dtype(n, 0)),
        out_t_(n.attrs.dtype),
        src_bytes_(row_byte_offsets(n.attrs.views.at(0), in_t_, "Dequantize")) {
    row_ = n.attrs.views[0].dims.back().as_const();
  }

  void run(const KernelContext& k) override {
    const int64_t rows = static_cast<int64_t>(src_bytes_.size());
    const int64_t per_task = std::max<int64_t>(1, (int64_t{1} << 15) / row_);
    const int64_t tasks = (rows + per_task - 1) / per_task;
    auto work = [&](int64_t t) {
      std::vector<float> tmp(out_t_ == DType::F32 ? 0 : static_cast<size_t>(row_));
      for (int64_t r = t * per_task; r < std::min(rows, (t + 1) * per_task); ++r) {
        const uint8_t* src = k.in[0] + src_bytes_[static_cast<size_t>(r)];
        if (out_t_ == DType::F32) {
          blocks::dequantize(in_t_, src, reinterpret_cast<float*>(k.out) + r * row_, row_);
          continue;
        }
        blocks::dequantize(in_t_, src, tmp.data(), row_);
        for (int64_t j = 0; j < row_; ++j)
          store_from_double(out_t_, k.out, r * row_ + j, tmp[static_cast<size_t>(j)]);
      }
    };
    if (tasks <= 1 || k.threads == 1) {
      for (int64_t t = 0; t < tasks; ++t)
        work(t);
      return;
    }
    parallel_for(tasks, k.threads > 0 ? k.threads : hardware_threads(), work);
  }

 private:
  DType in_t_, out_t_;
  std::vector<uint64_t> src_bytes_;  // byte offset of each output row's source row
  int64_t row_ = 0;                  // byte offset of each output row's source row
};

}  // namespace

std::unique_ptr<Kernel> make_dequantize_kernel(const LlirNode& n) {
  return std::make_unique<DequantizeKernel>(n);
}

}  // namespace luminal::cpu
