// Device-neutral kernels: what an op's file writes once to run on every device other than the CPU.
//
// A device kernel is a function template over a backend P (`template <class P> void f(const ForwardArgs&)`)
// written with P's primitives and with __host__ __device__ lambdas (DYNET_LAMBDA) over raw pointers:
//   P::for_each(dev, n, f)                       f(i) for every i < n, in any order, in parallel
//   P::reduce(dev, outer, n, init, value, combine, store)
//                                                for every o < outer: store(o, init ⊕ value(o, 0) ⊕ ... ⊕ value(o, n-1))
//   P::gemm(dev, ...), P::gemm_batched(dev, ...)  column-major GEMM (oneDNN on the host, cuBLAS on GPUs)
//   P::gemm_tn_unchanged(dev, ...)               Aᵀ·B for an A unchanged during the backward pass
// and the Device interface for data movement (copy_from_host, fill, ...). Index arrays that live on the
// host (pick indices, ...) reach the kernels through upload() (staged: read where they lie, Device::stage).
//
// The op's file is compiled twice (cmake/cuda.cmake): the host compiler builds every file with
// HostPrims, which runs the kernels on the calling thread for the emulated device (tests), and in CUDA
// builds nvcc builds it again with DYNET_CUDA_PASS defined and CudaPrims (src/kernels/cuda/prims.cuh).
// DYNET_DEVICE_KERNELS registers the pass's instantiation. Code the CUDA pass must not see (Eigen, the
// op's registration, samples, API) sits in `#ifndef DYNET_CUDA_PASS` blocks.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/device.h"
#include "core/mem.h"

#if defined(__CUDACC__)
#define DYNET_HD __host__ __device__
#define DYNET_LAMBDA __host__ __device__
#else
#define DYNET_HD
#define DYNET_LAMBDA
#endif

// The scalar vocabulary of device-neutral math (float for kernels, double for references). Elementwise
// table rows are written in it; kernels/cpu/eigen_fn.h gives the same names over Eigen arrays, so that one
// row expands into the CPU's Eigen kernel too. Unqualified calls inside namespace dynet::fn find these
// for scalars and, by argument-dependent lookup, Eigen's functions of the same names for arrays.
namespace dynet::fn {
#define DYNET_FN1(NAME, F, D)                             \
  DYNET_HD inline float NAME(float x) { return ::F(x); }  \
  DYNET_HD inline double NAME(double x) { return ::D(x); }
DYNET_FN1(exp, expf, exp)
DYNET_FN1(log, logf, log)
DYNET_FN1(log1p, log1pf, log1p)
DYNET_FN1(expm1, expm1f, expm1)
DYNET_FN1(sqrt, sqrtf, sqrt)
DYNET_FN1(tanh, tanhf, tanh)
DYNET_FN1(sin, sinf, sin)
DYNET_FN1(cos, cosf, cos)
DYNET_FN1(tan, tanf, tan)
DYNET_FN1(asin, asinf, asin)
DYNET_FN1(acos, acosf, acos)
DYNET_FN1(atan, atanf, atan)
DYNET_FN1(sinh, sinhf, sinh)
DYNET_FN1(cosh, coshf, cosh)
DYNET_FN1(asinh, asinhf, asinh)
DYNET_FN1(acosh, acoshf, acosh)
DYNET_FN1(atanh, atanhf, atanh)
DYNET_FN1(erf, erff, erf)
DYNET_FN1(lgamma, lgammaf, lgamma)
DYNET_FN1(abs, fabsf, fabs)
DYNET_FN1(floor, floorf, floor)
DYNET_FN1(ceil, ceilf, ceil)
DYNET_FN1(round, roundf, round)
#undef DYNET_FN1
DYNET_HD inline float pow(float x, float y) { return ::powf(x, y); }
DYNET_HD inline double pow(double x, double y) { return ::pow(x, y); }
// Explicit float and double overloads (not templates), so that Eigen arrays never match them.
#define DYNET_FN_SCALAR(T)                                                  \
  DYNET_HD inline T square(T x) { return x * x; }                           \
  DYNET_HD inline T cube(T x) { return x * x * x; }                         \
  DYNET_HD inline T sign(T x) { return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0); } \
  DYNET_HD inline T step(T x) { return x > T(0) ? T(1) : T(0); }            \
  DYNET_HD inline T logistic(T x) { return T(1) / (T(1) + exp(-x)); }       \
  DYNET_HD inline T max(T x, T c) { return x > c ? x : c; }                 \
  DYNET_HD inline T min(T x, T c) { return x < c ? x : c; }                 \
  DYNET_HD inline T select(bool c, T a, T b) { return c ? a : b; }
DYNET_FN_SCALAR(float)
DYNET_FN_SCALAR(double)
#undef DYNET_FN_SCALAR
// A row's float constants against double values (its reference instantiation).
DYNET_HD inline double max(double x, float c) { return max(x, double(c)); }
DYNET_HD inline double min(double x, float c) { return min(x, double(c)); }
// ψ(x) = d/dx ln Γ(x) (no CUDA builtin): recurrence up to x >= 6, then the asymptotic series.
template <class T>
DYNET_HD inline T digamma_t(T x) {
  T r = 0;
  if (x <= T(0) && x == floor(x)) return T(NAN);
  if (x < T(0)) {  // reflection: ψ(1 - x) - ψ(x) = π cot(πx)
    const T pi = T(3.14159265358979323846);
    return digamma_t(T(1) - x) - pi / tan(pi * x);
  }
  while (x < T(6)) {
    r -= T(1) / x;
    x += T(1);
  }
  const T f = T(1) / (x * x);
  return r + log(x) - T(0.5) / x -
         f * (T(1.0 / 12) - f * (T(1.0 / 120) - f * (T(1.0 / 252) - f * (T(1.0 / 240) - f * T(1.0 / 132)))));
}
DYNET_HD inline float digamma(float x) { return digamma_t(x); }
DYNET_HD inline double digamma(double x) { return digamma_t(x); }
}  // namespace dynet::fn

namespace dynet::dev {

// A launch of a kernel on d, for its counters (Device::counters): where a GPU would launch one.
inline void count_launch(Device* d, bool launches = true) {
  if (d) d->count_work(launches);
}

// The emulated device's backend: the kernels run on the calling thread.
struct HostPrims {
  static constexpr Backend kBackend = kEmulatedBackend;
  template <class F>
  static void for_each(Device* d, size_t n, F f) {
    count_launch(d, n != 0);
    for (size_t i = 0; i < n; ++i) f(i);
  }
  template <class T, class V, class C, class S>
  static void reduce(Device* d, size_t outer, size_t n, T init, V value, C combine, S store) {
    count_launch(d, outer != 0);
    for (size_t o = 0; o < outer; ++o) {
      T acc = init;
      for (size_t k = 0; k < n; ++k) acc = combine(acc, value(o, k));
      store(o, acc);
    }
  }
  static void gemm(Device*, bool trans_a, bool trans_b, long M, long N, long K, float alpha, const float* A, long lda,
                   const float* B, long ldb, float beta, float* C, long ldc);
  // C = alpha·Aᵀ·B + beta·C for an A that does not change during the backward pass (a weight): on the host a
  // product of a transposed copy made once per pass (cpu::gemm_tn_unchanged).
  static void gemm_tn_unchanged(Device*, long M, long N, long K, float alpha, const float* A, long lda, const float* B,
                                long ldb, float beta, float* C, long ldc);
  // `count` products: A + i·stride_a, B + i·stride_b, C + i·stride_c (a stride of 0 shares the operand).
  static void gemm_batched(Device*, bool trans_a, bool trans_b, long M, long N, long K, float alpha, const float* A,
                           long lda, long stride_a, const float* B, long ldb, long stride_b, float beta, float* C, long ldc,
                           long stride_c, long count);
};

// n values of T from the host for the kernels queued next: where they are staged (Device::stage), else
// copied into scratch memory of dev.
template <class T>
const T* upload(Device* dev, MemPool& scratch, const T* host, size_t n) {
  if (const void* staged = dev->stage(host, n * sizeof(T))) return static_cast<const T*>(staged);
  T* p = static_cast<T*>(scratch.allocate(n * sizeof(T)));
  if (n) dev->copy_from_host(p, host, n * sizeof(T));
  return p;
}

// The values and batch strides of n arguments, uploaded for kernels over a list of arguments: element e of
// batch element b of argument i is v[i][b · stride[i] + e] (stride 0 for an unbatched argument, else bs).
struct ArgList {
  const float* const* v;
  const size_t* stride;
};
// The pointers, then the strides, in one upload; written in place where the host addresses the memory (the
// CPU's generic kernels call this per node: no allocation, no copy).
inline ArgList upload_args(Device* dev, MemPool& scratch, const Tensor* xs, size_t n, size_t bs) {
  static_assert(sizeof(const float*) == sizeof(uintptr_t) && sizeof(size_t) == sizeof(uintptr_t));
  thread_local std::vector<uintptr_t> staging;
  const bool in_place = detail::host_addressable(dev);
  if (!in_place) staging.resize(2 * n);
  uintptr_t* host = in_place ? static_cast<uintptr_t*>(scratch.allocate(2 * n * sizeof(uintptr_t))) : staging.data();
  for (size_t i = 0; i < n; ++i) {
    host[i] = reinterpret_cast<uintptr_t>(xs[i].v);
    host[n + i] = xs[i].d.bd == 1 ? 0 : bs;
  }
  const uintptr_t* at = in_place ? host : upload(dev, scratch, host, 2 * n);
  return {reinterpret_cast<const float* const*>(at), reinterpret_cast<const size_t*>(at + n)};
}

// The segment k < count with starts[first + k] <= i < starts[first + k + 1] (ascending from 0).
template <class List>
DYNET_HD size_t segment_of(const List& starts, size_t first, size_t count, size_t i) {
  size_t lo = 0, hi = count;
  while (hi - lo > 1) {
    const size_t mid = (lo + hi) / 2;
    (starts[first + mid] <= i ? lo : hi) = mid;
  }
  return lo;
}

// *p += v, atomically on GPUs (several threads may add into one element, e.g. repeated rows).
DYNET_HD inline void atomic_add(float* p, float v) {
#if defined(__CUDA_ARCH__)
  atomicAdd(p, v);
#else
  *p += v;
#endif
}

// Common reductions' combines.
struct Sum {
  template <class T>
  DYNET_HD T operator()(T a, T b) const { return a + b; }
};
struct Max {
  template <class T>
  DYNET_HD T operator()(T a, T b) const { return a > b ? a : b; }
};

// d[j] += Σ_b v(b, j) for j < bs, over the bd batch elements of an output that reads element j of an
// argument: one term when the argument (and d, its gradient) is batched, every b when it is shared.
template <class P, class V>
void add_over_batch(Device* dev, float* d, bool batched, size_t bd, size_t bs, V v) {
  if (batched || bd == 1) {
    P::for_each(dev, bd * bs, [=] DYNET_LAMBDA(size_t i) { d[i] += v(i / bs, i % bs); });
    return;
  }
  P::reduce(dev, bs, bd, 0.f, [=] DYNET_LAMBDA(size_t j, size_t b) { return v(b, j); }, Sum(),
            [=] DYNET_LAMBDA(size_t j, float s) { d[j] += s; });
}

}  // namespace dynet::dev

#if defined(DYNET_CUDA_PASS)
#include "kernels/cuda/prims.cuh"
#define DYNET_DEVICE_PRIMS ::dynet::dev::CudaPrims
#else
#define DYNET_DEVICE_PRIMS ::dynet::dev::HostPrims
#endif

#define DYNET_DEVICE_CONCAT2(a, b) a##b
#define DYNET_DEVICE_CONCAT(a, b) DYNET_DEVICE_CONCAT2(a, b)
// Registers FWD<P> and BWD<P> (function templates over the backend) as the device kernels of the op named
// NAME for this pass's backend; DYNET_DEVICE_FORWARD for ops without a gradient.
#define DYNET_DEVICE_KERNELS(NAME, FWD, BWD)                                                       \
  const bool DYNET_DEVICE_CONCAT(dynet_device_kernels_, __LINE__) =                               \
      (::dynet::register_device_kernels(NAME, DYNET_DEVICE_PRIMS::kBackend,                       \
                                        {FWD<DYNET_DEVICE_PRIMS>, BWD<DYNET_DEVICE_PRIMS>}),       \
       true)
#define DYNET_DEVICE_FORWARD(NAME, FWD)                                                            \
  const bool DYNET_DEVICE_CONCAT(dynet_device_kernels_, __LINE__) =                               \
      (::dynet::register_device_kernels(NAME, DYNET_DEVICE_PRIMS::kBackend, {FWD<DYNET_DEVICE_PRIMS>, nullptr}), \
       true)
