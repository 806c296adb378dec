#pragma once
// The memory planner shared by all backends.
//
//   std::vector<BufferUse> uses = buffer_uses(llir);
//   MemoryPlan plan = plan_memory(uses, dyn);      // offsets into one arena
//
// Lifetimes come from execution order: a buffer lives from the step that writes it to the last
// step that reads it. Buffers are aligned (256 bytes by default) and placed first-fit,
// largest first, reusing the space of buffers whose lifetimes ended. In-place ops share their
// input's buffer (the lifetime extends). Input and Output nodes, and what must outlive the run,
// are not in the arena (`in_arena` false).
#include <cstdint>
#include <string>
#include <vector>

#include "luminal/program/llir.hpp"
#include "luminal/core/expr.hpp"

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

}  // namespace luminal
