// The CUDA backend of the device-neutral kernels (kernels/device/prims.h); nvcc only.
#pragma once

#include <algorithm>

#include "kernels/cuda/cuda_device.h"

namespace dynet::dev {

namespace cuda_detail {
constexpr unsigned kThreads = 256;
// Grid size for n items with kThreads threads each (grid-stride loops cover the rest).
inline unsigned blocks_for(size_t n) {
  const size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<size_t>(std::max<size_t>(b, 1), 65535u * 16));
}

template <class F>
__global__ void for_each_kernel(size_t n, F f) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) f(i);
}

// One block per output (grid-stride over outputs): each thread folds a strided share of the n values,
// then the block folds its threads' results in shared memory.
template <class T, class V, class C, class S>
__global__ void reduce_kernel(size_t outer, size_t n, T init, V value, C combine, S store) {
  __shared__ T part[kThreads];
  for (size_t o = blockIdx.x; o < outer; o += gridDim.x) {
    T acc = init;
    for (size_t k = threadIdx.x; k < n; k += blockDim.x) acc = combine(acc, value(o, k));
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) part[threadIdx.x] = combine(part[threadIdx.x], part[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) store(o, part[0]);
    __syncthreads();
  }
}

inline void check_launch(const char* what) { cuda_check(cudaGetLastError(), what); }
}  // namespace cuda_detail

struct CudaPrims {
  static constexpr Backend kBackend = kCudaBackend;

  template <class F>
  static void for_each(Device* d, size_t n, F f) {
    if (n == 0) return;
    CudaDevice& c = cuda_device(d);
    c.make_current();
    c.count_work(1);
    cuda_detail::for_each_kernel<<<cuda_detail::blocks_for(n), cuda_detail::kThreads, 0, c.stream>>>(n, f);
    cuda_detail::check_launch("for_each kernel launch");
  }

  template <class T, class V, class C, class S>
  static void reduce(Device* d, size_t outer, size_t n, T init, V value, C combine, S store) {
    if (outer == 0) return;
    if (n <= 32) {  // short folds: one thread per output
      for_each(d, outer, [=] __host__ __device__(size_t o) {
        T acc = init;
        for (size_t k = 0; k < n; ++k) acc = combine(acc, value(o, k));
        store(o, acc);
      });
      return;
    }
    CudaDevice& c = cuda_device(d);
    c.make_current();
    const unsigned grid = static_cast<unsigned>(std::min<size_t>(outer, 65535u * 16));
    c.count_work(1);
    cuda_detail::reduce_kernel<<<grid, cuda_detail::kThreads, 0, c.stream>>>(outer, n, init, value, combine, store);
    cuda_detail::check_launch("reduce kernel launch");
  }

  static void gemm(Device* d, bool trans_a, bool trans_b, long M, long N, long K, float alpha, const float* A, long lda,
                   const float* B, long ldb, float beta, float* C, long ldc) {
    if (M == 0 || N == 0) return;
    CudaDevice& c = cuda_device(d);
    c.make_current();
    c.count_work(1);
    cublas_check(cublasSgemm_64(c.blas, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, M,
                             N, K, &alpha, A, lda, B, ldb, &beta, C, ldc),
                 "cublasSgemm_64");
  }

  // cuBLAS runs transposed operands at full speed: no copy to keep.
  static void gemm_tn_unchanged(Device* d, long M, long N, long K, float alpha, const float* A, long lda,
                                const float* B, long ldb, float beta, float* C, long ldc) {
    gemm(d, true, false, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }

  static void gemm_batched(Device* d, bool trans_a, bool trans_b, long M, long N, long K, float alpha, const float* A,
                           long lda, long stride_a, const float* B, long ldb, long stride_b, float beta, float* C,
                           long ldc, long stride_c, long count) {
    if (M == 0 || N == 0 || count == 0) return;
    CudaDevice& c = cuda_device(d);
    c.make_current();
    c.count_work(1);
    cublas_check(cublasSgemmStridedBatched_64(c.blas, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                           M, N, K, &alpha, A, lda, stride_a, B, ldb, stride_b, &beta, C, ldc,
                                           stride_c, count),
                 "cublasSgemmStridedBatched_64");
  }
};

}  // namespace dynet::dev
