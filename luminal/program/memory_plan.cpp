#include "luminal/program/memory_plan.hpp"

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
    u.bytes = storage_bytes(node.attrs.dtype, node.attrs.shape);
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

struct Span {
  int64_t begin, end;  // bytes [begin, end) of a placed buffer
};

// The placed buffers, indexed by lifetime, for first-fit queries: the lowest offset where `size`
// bytes overlap no buffer live at some step of [first, last]. Steps are compressed to the distinct
// first steps of the buffers (0..m-1). Two segment trees over them:
//  - `starts` holds each buffer at its first step's leaf and every ancestor: the buffers that
//    start inside [first, last] are those of the O(log m) nodes that cover the range.
//  - `spans` holds each buffer on the canonical cover of (its first step, its last step]: the
//    buffers that started before `first` and are still live at `first` are those on the path
//    from first's leaf to the root.
// Each buffer that meets [first, last] is in exactly one of these nodes. A node keeps its buffers
// in a linked list (appending allocates nothing) until it holds more than kSmall; then it keeps
// the union of their byte ranges, sorted and merged, which a query searches instead of listing
// every buffer (long-lived buffers and long queries meet many buffers, mostly packed together).
class LiveIndex {
 public:
  LiveIndex(int m, int buffers) {
    int levels = 1;
    for (; cap_ < m; cap_ *= 2)
      ++levels;
    for (Tree* t : {&starts_, &spans_}) {
      t->head.assign(static_cast<size_t>(2 * cap_), -1);
      t->state.assign(static_cast<size_t>(2 * cap_), 0);
    }
    placed_.resize(static_cast<size_t>(buffers));
    entries_.reserve(static_cast<size_t>(buffers) * static_cast<size_t>(levels + 4));
  }

  // Adds buffer b, placed at `s`, live over compressed steps [first, last].
  void insert(int b, Span s, int first, int last) {
    placed_[b] = s;
    for (int p = first + cap_; p >= 1; p >>= 1)
      add(starts_, p, b);
    for (int lo = first + 1 + cap_, hi = last + 1 + cap_; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) add(spans_, lo++, b);
      if (hi & 1) add(spans_, --hi, b);
    }
  }

  // The lowest offset >= 0 where [offset, offset + size) meets no live buffer: the least fixed
  // point of y = max(0, max{end : begin < y + size}) over the live buffers, which is what
  // scanning them by offset finds. Each source (the small nodes' buffers, sorted, and each
  // union) is sorted by begin and consumed from the front while its next range begins below
  // y + size; passes repeat until y stays put. Ranges above the answer are never looked at.
  int64_t first_fit(int first, int last, int64_t size) {
    loose_.clear();
    sources_.clear();
    for (int p = first + cap_; p >= 1; p >>= 1)
      visit(spans_, p);
    for (int lo = first + cap_, hi = last + 1 + cap_; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) visit(starts_, lo++);
      if (hi & 1) visit(starts_, --hi);
    }
    if (!loose_.empty()) {
      std::sort(loose_.begin(), loose_.end(),
                [](const Span& a, const Span& b) { return a.begin < b.begin; });
      sources_.push_back({loose_.data(), loose_.data() + loose_.size()});
    }
    int64_t y = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (Source& src : sources_) {
        while (src.next != src.end && src.next->begin < y + size) {
          if (src.next->end > y) {
            y = src.next->end;
            moved = sources_.size() > 1;
          }
          ++src.next;
        }
      }
    }
    return y;
  }

 private:
  static constexpr int kSmall = 4;

  struct Tree {
    std::vector<int> head;   // per node: its list of buffers (or of those not yet in its union)
    std::vector<int> state;  // per node: >= 0 the list's length (no union); < 0 union -1 - state
  };
  struct Entry {
    int buffer, next;
  };
  struct Source {
    const Span *next, *end;
  };

  void add(Tree& t, int node, int b) {
    entries_.push_back({b, t.head[node]});
    t.head[node] = static_cast<int>(entries_.size()) - 1;
    int& state = t.state[node];
    if (state >= 0 && ++state > kSmall) {
      state = -1 - static_cast<int>(unions_.size());
      unions_.emplace_back();
      flush(t, node);
    }
  }

  void visit(Tree& t, int node) {
    if (t.state[node] >= 0) {
      for (int e = t.head[node]; e >= 0; e = entries_[e].next)
        loose_.push_back(placed_[entries_[e].buffer]);
      return;
    }
    const std::vector<Span>& u = flush(t, node);
    sources_.push_back({u.data(), u.data() + u.size()});
  }

  // Merges the node's list into its union (sorted by begin, disjoint, touching ranges joined).
  const std::vector<Span>& flush(Tree& t, int node) {
    std::vector<Span>& u = unions_[-1 - t.state[node]];
    for (int e = t.head[node]; e >= 0; e = entries_[e].next) {
      Span s = placed_[entries_[e].buffer];
      auto lo = std::lower_bound(u.begin(), u.end(), s.begin,
                                 [](const Span& a, int64_t v) { return a.end < v; });
      auto hi = lo;
      for (; hi != u.end() && hi->begin <= s.end; ++hi) {
        s.begin = std::min(s.begin, hi->begin);
        s.end = std::max(s.end, hi->end);
      }
      if (lo == hi) {
        u.insert(lo, s);
      } else {
        *lo = s;
        u.erase(lo + 1, hi);
      }
    }
    t.head[node] = -1;
    return u;
  }

  int cap_ = 1;
  Tree starts_, spans_;         // heap layout: node 1 the root, leaves at cap_ + step
  std::vector<Span> placed_;    // per buffer: where it was placed
  std::vector<Entry> entries_;  // the lists' entries
  std::vector<std::vector<Span>> unions_;
  std::vector<Span> loose_;      // query scratch: the buffers of small nodes
  std::vector<Source> sources_;  // query scratch
};

// Places the buffers of `order` (each with a size and a lifetime), in that order, each at the
// lowest offset where it overlaps no placed buffer of positive size whose lifetime meets its
// own. This is first fit over the live buffers, the same placement as scanning every placed
// buffer for each new one, but only buffers live during the new one's lifetime are looked at.
void place_first_fit(const std::vector<int>& order, const std::vector<int64_t>& size,
                     const std::vector<int>& first, const std::vector<int>& last,
                     std::vector<int64_t>& offsets) {
  std::vector<int> steps;
  steps.reserve(order.size());
  for (int i : order)
    if (size[i] > 0) steps.push_back(first[i]);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  LiveIndex index(static_cast<int>(steps.size()), static_cast<int>(offsets.size()));
  for (int i : order) {
    if (size[i] == 0) {  // takes no space and conflicts with nothing
      offsets[i] = 0;
      continue;
    }
    const int f =
        static_cast<int>(std::lower_bound(steps.begin(), steps.end(), first[i]) - steps.begin());
    const int l =
        static_cast<int>(std::upper_bound(steps.begin(), steps.end(), last[i]) - steps.begin()) - 1;
    offsets[i] = index.first_fit(f, l, size[i]);
    index.insert(i, {offsets[i], offsets[i] + size[i]}, f, l);
  }
}

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferUse>& uses, const DynMap& dyn, int64_t alignment,
                       int64_t max_bytes) {
  std::vector<int64_t> bytes(uses.size(), 0);
  for (size_t i = 0; i < uses.size(); ++i)
    if (uses[i].in_arena) bytes[i] = uses[i].bytes.eval(dyn);
  return plan_memory(uses, bytes, alignment, max_bytes);
}

MemoryPlan plan_memory(const std::vector<BufferUse>& uses, const std::vector<int64_t>& bytes,
                       int64_t alignment, int64_t max_bytes) {
  LUMINAL_ASSERT(alignment > 0, "plan_memory: alignment must be positive");
  LUMINAL_ASSERT(bytes.size() == uses.size(), "plan_memory: " + std::to_string(bytes.size()) +
                                                  " sizes for " + std::to_string(uses.size()) +
                                                  " buffers");
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
    const int64_t b = bytes[i];
    LUMINAL_ASSERT(b >= 0, "plan_memory: negative buffer size");
    const int r = root[i];
    size[r] = std::max(size[r], align_up(b, alignment));
    first[r] = std::min(first[r], first[i]);
    last[r] = std::max(last[r], last[i]);
  }
  MemoryPlan plan;
  plan.offsets.assign(static_cast<size_t>(n), -1);
  // Largest first; ties by first use, then by index (deterministic).
  struct Key {
    int64_t size;
    int first, index;
  };
  std::vector<Key> keys;
  for (int i = 0; i < n; ++i) {
    if (uses[i].in_arena && root[i] == i) {
      keys.push_back({size[i], first[i], i});
      plan.naive_bytes += size[i];
    }
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.size != b.size) return a.size > b.size;
    if (a.first != b.first) return a.first < b.first;
    return a.index < b.index;
  });
  std::vector<int> order(keys.size());
  for (size_t k = 0; k < keys.size(); ++k)
    order[k] = keys[k].index;
  place_first_fit(order, size, first, last, plan.offsets);
  for (int i : order)
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[i] + size[i]);
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
