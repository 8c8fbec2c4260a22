// Sets OpenMP's thread count for a scope (the kernels size their thread use by omp_get_max_threads()).
#pragma once

#include <omp.h>

namespace dynet::test {

class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

}  // namespace dynet::test
