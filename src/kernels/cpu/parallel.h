// Work sharing for large kernels without OpenMP's spinning: the calling thread runs chunks itself and
// helper threads, asleep while idle, take chunks once they wake. On a busy machine a helper that is not
// scheduled simply takes no chunks: the caller never waits for work that has not started.
#pragma once

#include <functional>

namespace dynet::cpu {

// Runs chunk(0) ... chunk(n - 1), each exactly once, on the calling thread and up to threads - 1
// helpers; returns when all are done. Chunks must be independent. An exception thrown by a chunk is
// rethrown here after every started chunk has finished (the remaining chunks are skipped).
void parallel_chunks(int n, int threads, const std::function<void(int)>& chunk);

// OpenMP's thread count on this thread (the team oneDNN forms) set to n while it lives, then restored.
// A oneDNN primitive keeps the count it was created with, so creation and execution both need it.
class OmpThreads {
 public:
  explicit OmpThreads(int n);
  ~OmpThreads();
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

}  // namespace dynet::cpu
