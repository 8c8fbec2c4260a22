// Matrix-vector kernels for the small, memory-bound products of dynamic nets. Column-major.
#pragma once

namespace dynet::cpu {

// y = alpha · A · x + beta · y      (A is M x K)
void gemv_n(int M, int K, float alpha, const float* A, int lda, const float* x, int incx, float beta, float* y,
            int incy);
// y = alpha · Aᵀ · x + beta · y     (A is K x N, y has N elements)
void gemv_t(int K, int N, float alpha, const float* A, int lda, const float* x, int incx, float beta, float* y,
            int incy);
// A += alpha · x · yᵀ               (A is M x N)
void ger(int M, int N, float alpha, const float* x, int incx, const float* y, int incy, float* A, int lda);

}  // namespace dynet::cpu
