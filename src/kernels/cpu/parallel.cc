#include "kernels/cpu/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace dynet::cpu {

namespace {

// One job at a time; a caller that finds the pool busy (graphs on several threads) runs its chunks alone.
// Helpers sleep on a condition variable between jobs: an idle helper costs no CPU, which is the point
// (OpenMP's workers spin for milliseconds after every parallel region and steal a busy machine's cores).
class Pool {
 public:
  static Pool& get() {
    static Pool* pool = new Pool;  // never destroyed: helpers may still wait on it at exit
    return *pool;
  }

  void run(int n, int threads, const std::function<void(int)>& chunk) {
    std::unique_lock<std::mutex> job_lock(job_mutex_, std::try_to_lock);
    if (!job_lock.owns_lock() || threads < 2) {
      for (int i = 0; i < n; ++i) chunk(i);
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    const int helpers = std::min(threads - 1, kMaxHelpers);
    while (started_ < helpers) {
      std::thread(&Pool::helper_loop, this).detach();
      ++started_;
    }
    chunk_ = &chunk;
    n_ = n;
    next_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    open_ = true;
    seats_ = helpers;
    ++generation_;
    lock.unlock();
    wake_.notify_all();
    work(chunk, n);
    lock.lock();
    open_ = false;  // no helper joins from now on; wait for those inside
    done_.wait(lock, [&] { return inside_ == 0; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  static constexpr int kMaxHelpers = 63;

  // Takes chunks until none is left. The first exception stops the job: later chunks are skipped.
  void work(const std::function<void(int)>& chunk, int n) {
    for (int i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < n;) {
      try {
        chunk(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
        next_.store(n, std::memory_order_relaxed);
      }
    }
  }

  void helper_loop() {
    omp_set_num_threads(1);  // kernels called from a chunk run on this thread alone
    std::unique_lock<std::mutex> lock(mutex_);
    uint64_t seen = generation_;
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (!open_ || seats_ == 0) continue;
      --seats_;
      ++inside_;
      const std::function<void(int)>& chunk = *chunk_;
      const int n = n_;
      lock.unlock();
      work(chunk, n);
      lock.lock();
      if (--inside_ == 0 && !open_) done_.notify_one();
    }
  }

  std::mutex job_mutex_;  // held by the caller of the current job
  std::mutex mutex_;      // guards everything below except next_
  std::condition_variable wake_, done_;
  const std::function<void(int)>* chunk_ = nullptr;
  int n_ = 0;
  std::atomic<int> next_{0};
  std::exception_ptr error_;
  uint64_t generation_ = 0;
  bool open_ = false;
  int seats_ = 0;   // helpers that may still join the current job
  int inside_ = 0;  // helpers working on it
  int started_ = 0;
};

}  // namespace

OmpThreads::OmpThreads(int n) : saved_(omp_get_max_threads()) {
  if (n != saved_) omp_set_num_threads(n);
}
OmpThreads::~OmpThreads() {
  if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
}

void parallel_chunks(int n, int threads, const std::function<void(int)>& chunk) {
  if (n <= 0) return;
  Pool::get().run(n, threads, chunk);
}

}  // namespace dynet::cpu
