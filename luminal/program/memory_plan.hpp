#pragma once
// The memory planner shared by all backends: buffer_uses() gives the buffers of an LLIR program
// with their lifetimes, plan_memory() their offsets into one arena.
// Example: examples/snippets/program/memory_plan.cpp (a program's arena, never larger than
// without reuse).
//
// Lifetimes come from execution order: a buffer lives from the step that writes it to the last
// step that reads it. Buffers are aligned (256 bytes by default) and placed first-fit,
// largest first, reusing the space of buffers whose lifetimes ended. In-place ops share their
// input's buffer (the lifetime extends). Input and Output nodes, and what must outlive the run,
// are not in the arena (`in_arena` false).
//
// Placement looks only at the buffers live during the new one's lifetime (an interval index
// over steps), so a 10,000-node program plans in milliseconds; the offsets are those of
// scanning every placed buffer (bench/memory_plan_bench.cpp compares both).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "luminal/core/expr.hpp"
#include "luminal/program/llir.hpp"

namespace luminal {

struct BufferUse {
  Expr bytes;            // size of the buffer
  int first = 0;         // step that writes it
  int last = 0;          // last step that reads it (>= first)
  bool in_arena = true;  // false: lives outside (user inputs, outputs)
  int alias_of = -1;     // shares the buffer of this earlier node (in-place)
};

/// One entry per LLIR node. Input nodes and nodes whose value an Output exposes without copy are
/// not in the arena; in-place nodes alias their in-place input.
std::vector<BufferUse> buffer_uses(const LlirGraph& g);

struct MemoryPlan {
  std::vector<int64_t> offsets;  // per node; -1 when not in the arena
  int64_t arena_bytes = 0;
  /// Sum of all buffer sizes (what no reuse would need), for reports.
  int64_t naive_bytes = 0;
};

/// Places every in-arena buffer. Throws luminal::Error if max_bytes >= 0 and the arena exceeds
/// it, giving both sizes.
MemoryPlan plan_memory(const std::vector<BufferUse>& uses, const DynMap& dyn,
                       int64_t alignment = 256, int64_t max_bytes = -1);

/// The same with concrete sizes: bytes[i] (one per node, >= 0 where in the arena) instead of
/// uses[i].bytes evaluated (e.g. sizes at a dim bucket's upper bounds). Entries of nodes not in
/// the arena are ignored.
MemoryPlan plan_memory(const std::vector<BufferUse>& uses, const std::vector<int64_t>& bytes,
                       int64_t alignment = 256, int64_t max_bytes = -1);

/// Braced dims (`{}`, `{{"s", 8}}`) would be ambiguous between the two above: they mean dims.
inline MemoryPlan plan_memory(const std::vector<BufferUse>& uses,
                              std::initializer_list<DynMap::value_type> dyn,
                              int64_t alignment = 256, int64_t max_bytes = -1) {
  return plan_memory(uses, DynMap(dyn), alignment, max_bytes);
}

}  // namespace luminal
