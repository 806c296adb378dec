#pragma once
// The CPU backend's worker threads (internal): parallel_for(tasks, threads, fn) runs fn(t) once
// for every t in [0, tasks).
// Example: examples/snippets/cpu/thread_pool.cpp (every task runs exactly once).
//
// Tasks are split into `threads` contiguous ranges; the calling thread runs the first one and
// process-wide workers the rest. Workers sleep on a condition variable between calls (after a
// short spin), so an idle or oversubscribed machine never burns cores waiting: a busy-waiting
// pool (OpenMP's default) slows everything down when the machine runs other work, as on a
// 2-core CI box running tests in parallel. An exception thrown by a task is rethrown on the
// calling thread after all tasks ended (the one of the lowest task).
#include <cstdint>
#include <functional>

namespace luminal::cpu {

/// Number of hardware threads (at least 1).
int hardware_threads();

void parallel_for(int64_t tasks, int threads, const std::function<void(int64_t)>& fn);

}  // namespace luminal::cpu
