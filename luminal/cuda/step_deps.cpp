#include "luminal/cuda/step_deps.hpp"

#include <algorithm>

namespace luminal::cuda {

namespace {

bool any_overlap(const std::vector<DeviceRange>& a, const std::vector<DeviceRange>& b) {
  for (const DeviceRange& x : a)
    for (const DeviceRange& y : b)
      if (x.overlaps(y)) return true;
  return false;
}

/// Whether `s` must wait for the earlier `t`: same node, or a read after write, a write after read
/// or a write after write on overlapping bytes.
bool conflicts(const StepAccess& t, const StepAccess& s) {
  return (t.node >= 0 && t.node == s.node) || any_overlap(t.writes, s.reads) ||
         any_overlap(t.writes, s.writes) || any_overlap(t.reads, s.writes);
}

/// A set of step indices as bits.
class Bits {
 public:
  explicit Bits(size_t n = 0) : w_((n + 63) / 64, 0) {}
  void set(size_t i) { w_[i / 64] |= uint64_t{1} << (i % 64); }
  bool has(size_t i) const { return (w_[i / 64] >> (i % 64)) & 1; }
  void merge(const Bits& o) {
    for (size_t k = 0; k < w_.size(); ++k)
      w_[k] |= o.w_[k];
  }

 private:
  std::vector<uint64_t> w_;
};

}  // namespace

StepAccess node_access(const LlirGraph& g, int node, const std::vector<unsigned long long>& ptr,
                       const std::vector<uint64_t>& extent) {
  auto range = [&](int i) {
    const uint64_t p = ptr[static_cast<size_t>(i)], e = extent[static_cast<size_t>(i)];
    return DeviceRange{p, e > UINT64_MAX - p ? UINT64_MAX : p + e};
  };
  StepAccess a;
  a.node = node;
  a.writes.push_back(range(node));
  for (int in : g.nodes[static_cast<size_t>(node)].inputs)
    a.reads.push_back(range(in));
  return a;
}

std::vector<std::vector<size_t>> step_dependencies(const std::vector<StepAccess>& steps) {
  const size_t n = steps.size();
  constexpr size_t kNone = ~size_t{0};
  std::vector<std::vector<size_t>> deps(n);
  std::vector<Bits> before(n, Bits(n));  // per step: every step it waits for, transitively
  std::vector<size_t> segment;           // running steps since the last barrier
  size_t barrier = kNone;
  for (size_t s = 0; s < n; ++s) {
    const StepAccess& st = steps[s];
    if (!st.runs) continue;
    std::vector<size_t> cand;
    for (size_t t : segment)
      if (st.library || conflicts(steps[t], st)) cand.push_back(t);
    // Nothing in the segment to wait for: wait for the barrier (so every step after a barrier
    // follows it, and every step before one precedes it).
    if (cand.empty() && barrier != kNone) cand.push_back(barrier);
    // Transitive reduction: from the latest down, keep a step unless a kept one waits for it.
    std::sort(cand.rbegin(), cand.rend());
    std::vector<size_t> kept;
    for (size_t d : cand) {
      bool implied = false;
      for (size_t k : kept)
        if (before[k].has(d)) {
          implied = true;
          break;
        }
      if (!implied) kept.push_back(d);
    }
    for (size_t d : kept) {
      before[s].merge(before[d]);
      before[s].set(d);
    }
    std::sort(kept.begin(), kept.end());
    deps[s] = std::move(kept);
    if (st.library) {
      segment.clear();
      barrier = s;
    } else {
      segment.push_back(s);
    }
  }
  return deps;
}

}  // namespace luminal::cuda
