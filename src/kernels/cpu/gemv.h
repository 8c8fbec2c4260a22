// Matrix-vector kernels for the small, memory-bound products of dynamic nets. Column-major.
#pragma once

namespace dynet::cpu {

// y = alpha · A · x + beta · y      (A is M x K)
void gemv_n(long M, long K, float alpha, const float* A, long lda, const float* x, long incx, float beta, float* y,
            long incy);
// y = alpha · Aᵀ · x + beta · y     (A is K x N, y has N elements)
void gemv_t(long K, long N, float alpha, const float* A, long lda, const float* x, long incx, float beta, float* y,
            long incy);
// A += alpha · x · yᵀ               (A is M x N)
void ger(long M, long N, float alpha, const float* x, long incx, const float* y, long incy, float* A, long lda);

}  // namespace dynet::cpu
