// The logistic and tanh ops' CPU kernels: plain loops over exp_clamped (kernels/cpu/exp.h) compiled for
// AVX-512, AVX2+FMA and the baseline (picked at load time). Through Eigen, built here for SSE2, they were
// among the largest elementwise costs of a Tree-LSTM's batched steps.
#pragma once

#include <cstddef>

namespace dynet::cpu {

// y = σ(x)
void logistic_forward(const float* x, float* y, size_t n);
// d += g ⊙ y ⊙ (1 - y), y = σ(x)
void logistic_backward(const float* y, const float* g, float* d, size_t n);
// y = tanh(x)
void tanh_forward(const float* x, float* y, size_t n);
// d += g ⊙ (1 - y²), y = tanh(x)
void tanh_backward(const float* y, const float* g, float* d, size_t n);

}  // namespace dynet::cpu
