// Column-major GEMM: C = alpha · op(A) · op(B) + beta · C, with op(X) = X or Xᵀ.
#pragma once

namespace dynet::cpu {

// A is M x K (K x M when trans_a), B is K x N (N x K when trans_b), C is M x N; all column-major.
void gemm(bool trans_a, bool trans_b, long M, long N, long K, float alpha, const float* A, long lda, const float* B,
          long ldb, float beta, float* C, long ldc);

}  // namespace dynet::cpu
