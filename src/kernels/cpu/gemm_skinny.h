// Products with few columns (N up to a few dozen) and a large first operand: an output layer's W times a
// minibatch's columns, W·B forward and Wᵀ·G backward. oneDNN's sgemm packs all of A on every call, so a
// 10000x256 W is read, written and read again per time step; these kernels read A once, straight from
// the caller's memory. Column-major, like gemm.h.
#pragma once

namespace dynet::cpu {

// The instruction sets the kernels are written for; kNone: this CPU has neither (use gemm's oneDNN route).
enum class SkinnyIsa { kNone, kAvx2, kAvx512 };
// The best one this CPU runs (AVX-512F, else AVX2 with FMA, else kNone).
SkinnyIsa skinny_isa();

// C = alpha · A · B + beta · C; A is M x K, B is K x N, C is M x N. isa must not be kNone.
void gemm_skinny_nn(SkinnyIsa isa, long M, long N, long K, float alpha, const float* A, long lda, const float* B,
                    long ldb, float beta, float* C, long ldc);
// C = alpha · Aᵀ · B + beta · C; A is K x M, B is K x N, C is M x N. isa must not be kNone.
void gemm_skinny_tn(SkinnyIsa isa, long M, long N, long K, float alpha, const float* A, long lda, const float* B,
                    long ldb, float beta, float* C, long ldc);

}  // namespace dynet::cpu
