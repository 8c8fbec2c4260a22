// CPU cost of drawing random values, per value: the generator of the random ops (Philox4x32-10 through
// rng::fill, kernels/device/philox.h) against the one they used before (the thread's std::mt19937 with
// std::bernoulli_distribution / std::normal_distribution, drawn one value at a time), in the same run.
// Prints `<dist>_<n>_{mt19937,philox}=<ns per value>` lines; thread CPU time, medians of 7 runs.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "cpu_timer.h"
#include "dynet/globals.h"
#include "dynet/init.h"
#include "kernels/device/philox.h"

namespace {
// CPU nanoseconds per value of f, which makes n values per call (about 4M values per run).
template <class F>
double ns_per_value(F f, size_t n) {
  return bench::time_ns(f, int(std::max<size_t>(1, (size_t(1) << 22) / n))) / double(n);
}
}  // namespace

int main(int argc, char** argv) {
  dynet::initialize(argc, argv);
  dynet::MemPool scratch;
  volatile float sink = 0;
  for (size_t n : {64, 256, 4096, 65536}) {
    std::vector<float> out(n);
    const float p = 0.3f, scale = 1.f / (1.f - p);
    const double mt_keep = ns_per_value([&] {
      std::bernoulli_distribution keep(1.0 - double(p));
      auto& e = dynet::random_engine();
      for (size_t k = 0; k < n; ++k) out[k] = keep(e) ? scale : 0.f;
      sink = sink + out[n - 1];
    }, n);
    const double ph_keep = ns_per_value([&] {
      dynet::rng::fill<dynet::dev::HostPrims>(nullptr, scratch, out.data(), n, 1, dynet::rng::Bernoulli{1.f - p, scale});
      sink = sink + out[n - 1];
    }, n);
    const double mt_normal = ns_per_value([&] {
      std::normal_distribution<float> gauss(0.f, 1.f);
      auto& e = dynet::random_engine();
      for (size_t k = 0; k < n; ++k) out[k] = gauss(e);
      sink = sink + out[n - 1];
    }, n);
    const double ph_normal = ns_per_value([&] {
      dynet::rng::fill<dynet::dev::HostPrims>(nullptr, scratch, out.data(), n, 1, dynet::rng::Normal{0.f, 1.f});
      sink = sink + out[n - 1];
    }, n);
    std::printf("keep_mask_%zu_mt19937=%.2f\nkeep_mask_%zu_philox=%.2f\nnormal_%zu_mt19937=%.2f\nnormal_%zu_philox=%.2f\n", n,
                mt_keep, n, ph_keep, n, mt_normal, n, ph_normal);
  }
  return 0;
}
