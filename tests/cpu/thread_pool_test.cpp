// cpu::parallel_for (cpu/thread_pool.hpp): every task once, in calls of any size, back to back
// and after the workers fell asleep; the lowest failing task's exception reaches the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "luminal/cpu/thread_pool.hpp"

namespace luminal::cpu {
namespace {

void expect_each_once(int64_t tasks, int threads) {
  std::vector<std::atomic<int>> seen(static_cast<size_t>(tasks));
  parallel_for(tasks, threads, [&](int64_t t) { seen[static_cast<size_t>(t)].fetch_add(1); });
  for (int64_t t = 0; t < tasks; ++t)
    ASSERT_EQ(seen[static_cast<size_t>(t)].load(), 1) << "task " << t << " of " << tasks;
}

TEST(ThreadPool, EveryTaskOnceForAnySize) {
  for (int threads : {2, 3, 4})
    for (int64_t tasks : {1, 2, 3, 5, 64, 1001})
      expect_each_once(tasks, threads);
}

TEST(ThreadPool, BackToBackCallsNeverMixTasks) {
  // Thousands of short calls: a worker that joins late must never run a task of the next call
  // with the previous call's function, nor miss one.
  std::vector<int64_t> sums(3000, 0);
  for (size_t c = 0; c < sums.size(); ++c) {
    std::atomic<int64_t> sum{0};
    const int64_t tasks = 1 + static_cast<int64_t>(c % 7);
    parallel_for(tasks, 2, [&](int64_t t) { sum.fetch_add(t + 1 + static_cast<int64_t>(c)); });
    sums[c] = sum.load();
    ASSERT_EQ(sums[c], tasks * (tasks + 1) / 2 + tasks * static_cast<int64_t>(c)) << "call " << c;
  }
}

TEST(ThreadPool, WorksAfterTheWorkersSleep) {
  expect_each_once(16, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the workers' spin
  expect_each_once(16, 2);
}

TEST(ThreadPool, BothThreadsTakePartInLongTasks) {
  // Tasks long enough that a worker joins before the caller has claimed them all.
  std::atomic<int> other{0};
  const std::thread::id caller = std::this_thread::get_id();
  parallel_for(8, 2, [&](int64_t) {
    if (std::this_thread::get_id() != caller) other.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  EXPECT_GT(other.load(), 0);
}

TEST(ThreadPool, RethrowsTheLowestFailingTask) {
  try {
    parallel_for(100, 2, [&](int64_t t) {
      if (t == 37 || t == 90) throw std::runtime_error("task " + std::to_string(t));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "task 37");
  }
  expect_each_once(10, 2);  // the pool still works
}

}  // namespace
}  // namespace luminal::cpu
