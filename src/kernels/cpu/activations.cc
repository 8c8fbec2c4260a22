#include "kernels/cpu/activations.h"

#include "kernels/cpu/clones.h"
#include "kernels/cpu/exp.h"

namespace dynet::cpu {

DYNET_CLONES void logistic_forward(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = logistic_clamped(x[i]);
}

DYNET_CLONES void logistic_backward(const float* y, const float* g, float* d, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] += g[i] * y[i] * (1.f - y[i]);
}

DYNET_CLONES void tanh_forward(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = tanh_clamped(x[i]);
}

DYNET_CLONES void tanh_backward(const float* y, const float* g, float* d, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] += g[i] * (1.f - y[i] * y[i]);
}

}  // namespace dynet::cpu
