#pragma once
// The memory planner as it was before the interval-indexed one (largest first, first fit against
// every placed buffer: O(n^2)). Kept as the baseline the benchmark times and the tests compare
// arenas against: the current planner must never need a larger arena.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "luminal/program/memory_plan.hpp"

namespace luminal::baseline {

inline int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

inline MemoryPlan old_first_fit(const std::vector<BufferUse>& uses,
                                const std::vector<int64_t>& bytes, int64_t alignment) {
  struct Placed {
    int64_t offset, size;
    int first, last;
  };
  const int n = static_cast<int>(uses.size());
  std::vector<int> root(static_cast<size_t>(n));
  std::vector<int> first(static_cast<size_t>(n)), last(static_cast<size_t>(n));
  std::vector<int64_t> size(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    const BufferUse& u = uses[i];
    root[i] = u.alias_of >= 0 ? root[u.alias_of] : i;
    first[i] = u.first;
    last[i] = std::max(u.first, u.last);
  }
  for (int i = 0; i < n; ++i) {
    if (!uses[i].in_arena) continue;
    const int r = root[i];
    size[r] = std::max(size[r], align_up(bytes[i], alignment));
    first[r] = std::min(first[r], first[i]);
    last[r] = std::max(last[r], last[i]);
  }
  MemoryPlan plan;
  plan.offsets.assign(static_cast<size_t>(n), -1);
  std::vector<int> order;
  for (int i = 0; i < n; ++i)
    if (uses[i].in_arena && root[i] == i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (size[a] != size[b]) return size[a] > size[b];
    return first[a] < first[b];
  });
  std::vector<Placed> placed;
  std::vector<Placed> live;
  for (int i : order) {
    plan.naive_bytes += size[i];
    live.clear();
    for (const Placed& p : placed)
      if (p.first <= last[i] && first[i] <= p.last && p.size > 0) live.push_back(p);
    std::sort(live.begin(), live.end(),
              [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    int64_t offset = 0;
    if (size[i] > 0) {
      for (const Placed& p : live) {
        if (p.offset - offset >= size[i]) break;
        offset = std::max(offset, p.offset + p.size);
      }
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size[i]);
    placed.push_back({offset, size[i], first[i], last[i]});
  }
  for (int i = 0; i < n; ++i)
    if (uses[i].in_arena && root[i] != i) plan.offsets[i] = plan.offsets[root[i]];
  return plan;
}

}  // namespace luminal::baseline
