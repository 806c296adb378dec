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
    const int parts = static_cast<int>(std::min<int64_t>(tasks, threads));
    ensure_workers(parts - 1);
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = &fn;
      tasks_ = tasks;
      parts_ = parts;
      err_ = nullptr;
      err_task_ = INT64_MAX;
      pending_.store(parts - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    run_part(0);
    // Wait for the workers: spin briefly, then sleep.
    for (int i = 0; i < 4000 && pending_.load(std::memory_order_acquire) > 0; ++i)
      std::this_thread::yield();
    if (pending_.load(std::memory_order_acquire) > 0) {
      std::unique_lock<std::mutex> lk(mu_);
      done_cv_.wait(lk, [&] { return pending_.load(std::memory_order_acquire) == 0; });
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
      int id = static_cast<int>(workers_.size()) + 1;  // part index it runs
      workers_.emplace_back([this, id] { worker(id); });
    }
  }

  void run_part(int part) {
    const int64_t lo = tasks_ * part / parts_, hi = tasks_ * (part + 1) / parts_;
    for (int64_t t = lo; t < hi; ++t) {
      try {
        (*fn_)(t);
      } catch (...) {
        std::lock_guard<std::mutex> lk(err_mu_);
        if (t < err_task_) {
          err_task_ = t;
          err_ = std::current_exception();
        }
        return;
      }
    }
  }

  void worker(int part) {
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
        if (part >= parts_) continue;  // not needed this time
      }
      run_part(part);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lk(mu_);
        done_cv_.notify_one();
      }
    }
  }

  std::mutex call_mu_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t tasks_ = 0;
  int parts_ = 0;
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
  std::atomic<int> pending_{0};
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
