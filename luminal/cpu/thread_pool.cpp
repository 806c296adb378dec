#include "luminal/cpu/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace luminal::cpu {

namespace {

// A worker that finished its part spins this long for the next call before it sleeps: a decode
// step makes hundreds of parallel calls microseconds apart, and waking a sleeping thread costs
// tens of microseconds each time (SmolLM2 Q4_1 decode on 2 threads: 42 -> 61 tok/s, medians of
// three fresh searches each).
constexpr std::chrono::microseconds kSpin{200};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

class Pool {
 public:
  static Pool& get() {
    static Pool pool;
    return pool;
  }

  void run(int64_t tasks, int threads, const std::function<void(int64_t)>& fn) {
    // One parallel call at a time (kernels of one program run in order; concurrent programs
    // take turns rather than oversubscribing).
    std::lock_guard<std::mutex> call(call_mu_);
    const int helpers = static_cast<int>(std::min<int64_t>(tasks, threads)) - 1;
    ensure_workers(helpers);
    // No worker is inside a call here (active_ was 0 when the last one closed), and one that
    // arrives now sees closed_ and leaves: the call's fields can be written.
    fn_ = &fn;
    tasks_ = tasks;
    helpers_ = helpers;
    err_ = nullptr;
    err_task_ = INT64_MAX;
    next_.store(0, std::memory_order_relaxed);
    closed_.store(false, std::memory_order_seq_cst);
    {
      std::lock_guard<std::mutex> lk(mu_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    claim_tasks();
    // Every task is claimed: close the call, then wait for the workers still running one. A
    // worker that has not joined yet (asleep, or its CPU taken by another process) finds the
    // call closed and never touches it: the caller never waits for a late thread to start.
    closed_.store(true, std::memory_order_seq_cst);
    for (int i = 0; active_.load(std::memory_order_seq_cst) > 0; ++i) {
      if (i < 4000) {
        cpu_relax();
      } else if (i < 8000) {
        std::this_thread::yield();
      } else {
        std::unique_lock<std::mutex> lk(mu_);
        done_cv_.wait(lk, [&] { return active_.load(std::memory_order_seq_cst) == 0; });
      }
    }
    fn_ = nullptr;
    if (err_) std::rethrow_exception(err_);
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    for (auto& t : workers_)
      t.join();
  }

 private:
  void ensure_workers(int n) {
    while (static_cast<int>(workers_.size()) < n) {
      int id = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, id] { worker(id); });
    }
  }

  // Runs tasks in increasing order, each claimed from the shared counter, until none is left:
  // a thread that started late or runs slower simply claims fewer.
  void claim_tasks() {
    for (;;) {
      const int64_t t = next_.fetch_add(1, std::memory_order_relaxed);
      if (t >= tasks_) return;
      try {
        (*fn_)(t);
      } catch (...) {
        std::lock_guard<std::mutex> lk(err_mu_);
        if (t < err_task_) {
          err_task_ = t;
          err_ = std::current_exception();
        }
      }
    }
  }

  void worker(int id) {
    uint64_t seen = 0;
    for (;;) {
      // Spin for the next call, then sleep.
      const auto until = std::chrono::steady_clock::now() + kSpin;
      for (int i = 0; generation_.load(std::memory_order_acquire) == seen; ++i) {
        cpu_relax();
        if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) break;
      }
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        seen = generation_.load(std::memory_order_acquire);
        if (stop_) return;
      }
      // Join the call unless the caller has closed it (then it may already be writing the
      // next one's fields).
      active_.fetch_add(1, std::memory_order_seq_cst);
      if (!closed_.load(std::memory_order_seq_cst) && id <= helpers_) claim_tasks();
      if (active_.fetch_sub(1, std::memory_order_seq_cst) == 1) {
        std::lock_guard<std::mutex> lk(mu_);
        done_cv_.notify_one();
      }
    }
  }

  std::mutex call_mu_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  // The current call: written by the caller while closed_ (no worker reads them then).
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t tasks_ = 0;
  int helpers_ = 0;  // workers 1..helpers_ take part
  std::atomic<int64_t> next_{0};
  std::atomic<bool> closed_{true};
  std::atomic<int> active_{0};  // workers inside the current call
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
  std::mutex err_mu_;
  std::exception_ptr err_;
  int64_t err_task_ = INT64_MAX;
};

}  // namespace

int hardware_threads() {
  static const int n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

void parallel_for(int64_t tasks, int threads, const std::function<void(int64_t)>& fn) {
  if (tasks <= 0) return;
  if (threads <= 1 || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t)
      fn(t);
    return;
  }
  Pool::get().run(tasks, threads, fn);
}

}  // namespace luminal::cpu
