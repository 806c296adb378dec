// luminal/cpu/thread_pool.hpp: the CPU backend's workers: every task index once, claimed in
// increasing order by the caller and up to `threads - 1` workers.
#include <atomic>
#include <cstdint>
#include <vector>

#include "luminal/cpu/thread_pool.hpp"
#include "snippet.hpp"

int main() {
  const int64_t tasks = 1000;
  const int threads = 4;
  std::vector<int> seen(tasks, 0);
  luminal::cpu::parallel_for(tasks, threads, [&](int64_t t) { ++seen[t]; });  // every t once
  bool once = true;
  for (int s : seen)
    once = once && s == 1;
  expect(once, "every task ran exactly once");
}
