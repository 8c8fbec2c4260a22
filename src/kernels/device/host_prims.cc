#include "kernels/cpu/gemm.h"
#include "kernels/device/prims.h"

namespace dynet::dev {

void HostPrims::gemm(Device* d, bool trans_a, bool trans_b, long M, long N, long K, float alpha, const float* A, long lda,
                     const float* B, long ldb, float beta, float* C, long ldc) {
  count_launch(d, M && N);
  cpu::gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void HostPrims::gemm_tn_unchanged(Device* d, long M, long N, long K, float alpha, const float* A, long lda,
                                  const float* B, long ldb, float beta, float* C, long ldc) {
  count_launch(d, M && N);
  cpu::gemm_tn_unchanged(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void HostPrims::gemm_batched(Device* d, bool trans_a, bool trans_b, long M, long N, long K, float alpha, const float* A,
                             long lda, long stride_a, const float* B, long ldb, long stride_b, float beta, float* C,
                             long ldc, long stride_c, long count) {
  count_launch(d, M && N && count);
  for (long i = 0; i < count; ++i)
    cpu::gemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta, C + i * stride_c, ldc);
}

}  // namespace dynet::dev
