#pragma once
// The CPU backend's worker threads (internal): parallel_for(tasks, threads, fn) runs fn(t) once
// for every t in [0, tasks).
// Example: examples/snippets/cpu/thread_pool.cpp (every task runs exactly once).
//
// The calling thread and up to `threads - 1` process-wide workers claim tasks one at a time, in
// increasing order, from a shared counter: a worker that starts late (asleep, or its CPU taken by
// another process, as on a shared VM) or runs slower claims fewer, and the caller never waits for
// one that has not started. Workers sleep on a condition variable between calls (after a short
// spin), so an idle or oversubscribed machine never burns cores waiting: a busy-waiting pool
// (OpenMP's default) slows everything down when the machine runs other work, as on a 2-core CI
// box running tests in parallel. An exception thrown by a task is rethrown on the calling thread
// after all tasks ended (the one of the lowest task).
#include <cstdint>
#include <functional>

namespace luminal::cpu {

/// Number of hardware threads (at least 1).
int hardware_threads();

void parallel_for(int64_t tasks, int threads, const std::function<void(int64_t)>& fn);

/// How many tasks to cut `units` of even work into for `threads` threads: up to 4 a thread
/// (never more than the units). The threads claim them one at a time, so one slowed for a while
/// (a shared VM) leaves less behind than with one task each. Task t then takes units
/// [units * t / tasks, units * (t + 1) / tasks).
inline int64_t claimed_tasks(int64_t units, int threads) {
  const int64_t most = 4 * static_cast<int64_t>(threads > 1 ? threads : 1);
  return units < most ? units : most;
}

}  // namespace luminal::cpu
