// cpu.Fused kernel: evaluates a FusedProgram over blocks of output elements.
//
// Per block of up to kBlock elements, each instruction fills an array (fused_eval.hpp); the last
// array is stored. Blocks run on the pool's threads, each with its own scratch (a thread-local
// buffer reused by every call, its arrays as long as the node's block: a node of a few elements
// touches a few cache lines, and a call allocates nothing); constants are filled once per call
// and thread.

#include <algorithm>
#include <memory>

#include "luminal/core/error.hpp"
#include "luminal/cpu/fused.hpp"
#include "luminal/cpu/fused_eval.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/strided.hpp"
#include "luminal/cpu/thread_pool.hpp"

namespace luminal::cpu {

namespace {

constexpr int64_t kBlock = 1024;

class FusedKernel : public Kernel {
 public:
  explicit FusedKernel(const LlirNode& n) : node_(n) {
    const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
    if (!prog) throw Error("cpu.Fused: the node has no FusedProgram payload");
    prog->validate();
    if (prog->has_row_reduce())
      throw Error("cpu.Fused: the program has a row reduction (a row op's program): " +
                  prog->to_string());
    if (prog->num_children() > static_cast<int>(n.attrs.views.size()))
      throw Error("cpu.Fused: the program loads more children than the node has views");
    if (prog->insts.back().dtype != n.attrs.dtype)
      throw Error("cpu.Fused: the program's result dtype differs from the node's dtype");
    ev_ = SlotEval(prog->insts);
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
    const int64_t parts = nblocks > 4 ? claimed_tasks(nblocks, threads) : 1;
    const std::vector<FusedInst>& insts = ev_.insts();
    const int last = static_cast<int>(insts.size()) - 1;
    // Each part: a contiguous range of blocks and its own scratch.
    parallel_for(parts, threads, [&](int64_t part) {
      uint8_t* s = ev_.scratch(len_);
      ev_.fill_constants(s, len_);
      for (int64_t b = nblocks * part / parts; b < nblocks * (part + 1) / parts; ++b) {
        const int64_t begin = b * kBlock;
        const int64_t n = std::min(kBlock, numel_ - begin);
        for (int i = 0; i <= last; ++i) {
          const FusedInst& in = insts[static_cast<size_t>(i)];
          if (in.op == FusedOpcode::Const) continue;
          if (in.op == FusedOpcode::Load)
            ev_.load(s, len_, i, k.in[in.a], idx_[in.a], begin, n);
          else
            ev_.eval(s, len_, i, n);
        }
        ev_.store(s, len_, last, node_.attrs.dtype, k.out, begin, n);
      }
    });
  }

 private:
  LlirNode node_;
  SlotEval ev_;
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
