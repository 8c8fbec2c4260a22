// Timing for the micro-benchmarks in thread CPU time (steadier than wall time on a shared machine).
#pragma once

#include <ctime>

#include <algorithm>
#include <vector>

namespace bench {

inline double cpu_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}

// CPU nanoseconds per call of f: the median of 7 runs of `reps` calls.
template <class F>
double time_ns(F f, int reps) {
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    const double a = cpu_ns();
    for (int i = 0; i < reps; ++i) f();
    t.push_back((cpu_ns() - a) / reps);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace bench
