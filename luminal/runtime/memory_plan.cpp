#include "luminal/runtime/memory_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "luminal/core/error.hpp"

namespace luminal {

std::vector<BufferUse> buffer_uses(const LlirGraph& g) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<BufferUse> uses(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const LlirNode& node = g.nodes[i];
    BufferUse& u = uses[i];
    u.bytes = numel(node.attrs.shape) * Expr(size_bytes(node.attrs.dtype));
    u.first = i;
    u.last = i;
    const bool io = is_op(node.op, OpKind::Input) || is_op(node.op, OpKind::Output);
    u.in_arena = !io;
    for (int in : node.inputs) {
      LUMINAL_ASSERT(in >= 0 && in < i, "buffer_uses: node %" + std::to_string(i) +
                                            " reads a node that does not run before it");
      uses[in].last = std::max(uses[in].last, i);
    }
    const int k = node.op->inplace_input;
    if (k >= 0) {
      LUMINAL_ASSERT(k < static_cast<int>(node.inputs.size()),
                     "buffer_uses: in-place input out of range for " + std::string(node.op->name));
      const int target = node.inputs[k];
      if (is_op(g.nodes[target].op, OpKind::Output)) {
        // Never write into a user's output buffer (nodes may read an Output's value): the op
        // gets a buffer of its own and copies its in-place input first.
        continue;
      }
      u.alias_of = target;
      // Writing into an Input's buffer (directly or through other in-place nodes): not arena.
      u.in_arena = uses[u.alias_of].in_arena;
    }
  }
  return uses;
}

namespace {

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

std::string mib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

struct Placed {
  int64_t offset, size;
  int first, last;
};

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferUse>& uses, const DynMap& dyn, int64_t alignment,
                       int64_t max_bytes) {
  LUMINAL_ASSERT(alignment > 0, "plan_memory: alignment must be positive");
  const int n = static_cast<int>(uses.size());
  // Resolve alias chains to their root and extend each root's lifetime over its aliases.
  std::vector<int> root(static_cast<size_t>(n));
  std::vector<int> first(static_cast<size_t>(n)), last(static_cast<size_t>(n));
  std::vector<int64_t> size(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    const BufferUse& u = uses[i];
    LUMINAL_ASSERT(u.alias_of < i, "plan_memory: buffer " + std::to_string(i) +
                                       " aliases a later buffer " + std::to_string(u.alias_of));
    root[i] = u.alias_of >= 0 ? root[u.alias_of] : i;
    first[i] = u.first;
    last[i] = std::max(u.first, u.last);
  }
  for (int i = 0; i < n; ++i) {
    if (!uses[i].in_arena) continue;
    int64_t b = uses[i].bytes.eval(dyn);
    LUMINAL_ASSERT(b >= 0, "plan_memory: negative buffer size");
    const int r = root[i];
    size[r] = std::max(size[r], align_up(b, alignment));
    first[r] = std::min(first[r], first[i]);
    last[r] = std::max(last[r], last[i]);
  }
  MemoryPlan plan;
  plan.offsets.assign(static_cast<size_t>(n), -1);
  std::vector<int> order;
  for (int i = 0; i < n; ++i)
    if (uses[i].in_arena && root[i] == i) order.push_back(i);
  // Largest first; ties by first use, then by index (deterministic).
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
    int64_t offset = 0;  // first fit: the lowest gap that holds the buffer
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
  if (max_bytes >= 0 && plan.arena_bytes > max_bytes) {
    throw Error("memory plan needs " + mib(plan.arena_bytes) + " MiB (" +
                std::to_string(plan.arena_bytes) + " bytes) but max_memory is " + mib(max_bytes) +
                " MiB (" + std::to_string(max_bytes) +
                " bytes); raise the limit or use smaller "
                "dims");
  }
  return plan;
}

}  // namespace luminal
