#include "kernels/cpu/softmax.h"

#include <limits>

#include "kernels/cpu/clones.h"
#include "kernels/cpu/exp.h"

namespace dynet::cpu {

namespace {
// Lanes of the reductions: separate running values per lane let GCC vectorize them without
// reassociating float arithmetic (which it only does under -ffast-math). 16 fills one AVX-512 register.
constexpr long kLanes = 16;
}  // namespace

DYNET_CLONES float max_of(const float* x, long n) {
  float lane[kLanes];
  for (long j = 0; j < kLanes; ++j) lane[j] = -std::numeric_limits<float>::infinity();
  long i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (long j = 0; j < kLanes; ++j) lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
  float m = -std::numeric_limits<float>::infinity();
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (long j = 0; j < kLanes; ++j) m = lane[j] > m ? lane[j] : m;
  return m;
}

DYNET_CLONES float sum_exp(const float* x, long n, float shift, float* y) {
  float lane[kLanes] = {};
  long i = 0;
  if (y) {
    for (; i + kLanes <= n; i += kLanes)
      for (long j = 0; j < kLanes; ++j) lane[j] += y[i + j] = exp_clamped(x[i + j] - shift);
  } else {
    for (; i + kLanes <= n; i += kLanes)
      for (long j = 0; j < kLanes; ++j) lane[j] += exp_clamped(x[i + j] - shift);
  }
  float s = 0.f;
  for (; i < n; ++i) {
    const float e = exp_clamped(x[i] - shift);
    if (y) y[i] = e;
    s += e;
  }
  for (long j = 0; j < kLanes; ++j) s += lane[j];
  return s;
}

DYNET_CLONES void add_scaled_exp(const float* x, long n, float shift, float alpha, float* y) {
  for (long i = 0; i < n; ++i) y[i] += alpha * exp_clamped(x[i] - shift);
}

}  // namespace dynet::cpu
