// Kernels of the softmax family over one column (softmax, log_softmax, pickneglogsoftmax): the
// exponentials of a 10k-word output layer are most of those ops' time, and Eigen here is built for
// SSE2 with a slower exp. Compiled for AVX-512, AVX2+FMA and the baseline (picked at load time).
#pragma once

namespace dynet::cpu {

// max_i x[i] (NaNs skipped; -inf for n = 0)
float max_of(const float* x, long n);
// Σ_i e^(x[i] - shift), also stored in y[i] unless y is null. For shift = max_of(x) every term is in
// (0, 1] and the sum in [1, n] (a NaN in x makes it NaN).
float sum_exp(const float* x, long n, float shift, float* y);
// y[i] += alpha · e^(x[i] - shift)
void add_scaled_exp(const float* x, long n, float shift, float alpha, float* y);

}  // namespace dynet::cpu
