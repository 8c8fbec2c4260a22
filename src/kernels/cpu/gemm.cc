#include "kernels/cpu/gemm.h"

#include <Eigen/Core>
#include <oneapi/dnnl/dnnl.h>
#include <stdexcept>
#include <string>

namespace dynet::cpu {

namespace {
using Stride = Eigen::OuterStride<>;
using CMap = Eigen::Map<const Eigen::MatrixXf, 0, Stride>;
using Map = Eigen::Map<Eigen::MatrixXf, 0, Stride>;

// oneDNN dispatches to AVX-512/AVX2 at run time and wins every product with two non-trivial
// dimensions (64x16x64: 1.5 us vs Eigen's 3.9 us). Small matrix-vector products are the exception:
// oneDNN's per-call overhead dominates them, and Eigen's GEMV wins up to about 160x160
// (64x64: 0.22 us vs 0.34 us; 256x256: oneDNN wins). Measured by bench/gemm_routing.
bool small_vector_product(int M, int N, int K) {
  constexpr long kMaxGemvElems = 192 * 192;
  return (N == 1 && (long)M * K <= kMaxGemvElems) || (M == 1 && (long)N * K <= kMaxGemvElems);
}
}  // namespace

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0 || small_vector_product(M, N, K)) {
    CMap a(A, trans_a ? K : M, trans_a ? M : K, Stride(lda));
    CMap b(B, trans_b ? N : K, trans_b ? K : N, Stride(ldb));
    Map c(C, M, N, Stride(ldc));
    if (beta == 0.f)
      c.setZero();
    else if (beta != 1.f)
      c *= beta;
    if (K == 0) return;
    if (!trans_a && !trans_b)
      c.noalias() += alpha * a * b;
    else if (trans_a && !trans_b)
      c.noalias() += alpha * a.transpose() * b;
    else if (!trans_a && trans_b)
      c.noalias() += alpha * a * b.transpose();
    else
      c.noalias() += alpha * a.transpose() * b.transpose();
    return;
  }
  // oneDNN's sgemm is row-major: compute Cᵀ = op(B)ᵀ · op(A)ᵀ, which in row-major memory is our C.
  dnnl_status_t st = dnnl_sgemm(trans_b ? 'T' : 'N', trans_a ? 'T' : 'N', N, M, K, alpha, B, ldb, A, lda, beta, C, ldc);
  if (st != dnnl_success) throw std::runtime_error("gemm: oneDNN sgemm failed with status " + std::to_string(st));
}

}  // namespace dynet::cpu
