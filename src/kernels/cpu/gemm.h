// Column-major GEMM: C = alpha · op(A) · op(B) + beta · C, with op(X) = X or Xᵀ.
#pragma once

namespace dynet::cpu {

// A is M x K (K x M when trans_a), B is K x N (N x K when trans_b), C is M x N; all column-major.
void gemm(bool trans_a, bool trans_b, long M, long N, long K, float alpha, const float* A, long lda, const float* B,
          long ldb, float beta, float* C, long ldc);

// gemm(true, false, ...) for an A that stays unchanged, at the same address, while a TransposeScope is
// open on this thread (a node's argument value during a backward pass: the W of every time step's
// Wᵀ·dy). From A's second product on, it multiplies a transposed copy made once: oneDNN runs
// products with a transposed first operand 10-30% slower than plain ones at these sizes (200x64x800:
// 88 against 101 GFLOP/s of CPU time; 250x64x1000: 73 against 104). Without a scope, plain gemm.
void gemm_tn_unchanged(long M, long N, long K, float alpha, const float* A, long lda, const float* B, long ldb,
                       float beta, float* C, long ldc);

// C {M + M2, N} = [A A2]ᵀ·B (rows [0, M) Aᵀ·B, rows [M, M + M2) A2ᵀ·B) for A (K x M) and A2 (K x M2) that
// stay unchanged as for gemm_tn_unchanged: one product over a transposed copy of both stacked, made at
// the pair's first product (oneDNN: 400x64x800 at 106-113 GFLOP/s where 200x64x800 runs at 93-106;
// pairs come from recurrences, so the copy is used again), which gemm_tn_unchanged of A alone then
// multiplies too. Two products where a copy does not pay (as for gemm_tn_unchanged) or without a scope.
void gemm_tn_stacked_unchanged(long M, long M2, long N, long K, const float* A, long lda, const float* A2, long lda2,
                               const float* B, long ldb, float* C, long ldc);

// Opens the scope of gemm_tn_unchanged on this thread; the copies go when the outermost scope closes
// (their memory is kept for the next scope).
class TransposeScope {
 public:
  TransposeScope();
  ~TransposeScope();
  TransposeScope(const TransposeScope&) = delete;
  TransposeScope& operator=(const TransposeScope&) = delete;
};

}  // namespace dynet::cpu
