// Hand-written because neither dependency serves these shapes well: oneDNN's sgemm spends more
// on per-call dispatch than a 64x64 GEMV costs, and Eigen is compiled for the baseline ISA (SSE2)
// since -march=native is opt-in. target_clones compiles each kernel for AVX-512, AVX2+FMA and the
// baseline and picks one at load time. Measured by bench/gemm_routing.
#include "kernels/cpu/gemv.h"

#include <cstring>
#include <vector>

#include "kernels/cpu/clones.h"

namespace dynet::cpu {

namespace {
typedef float v8 __attribute__((vector_size(32)));
inline v8 load8(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
typedef float v4 __attribute__((vector_size(16)));
inline v4 fold(v8 v) { return __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7); }
inline float hsum(v8 v) {
  const v4 a = fold(v);
  return (a[0] + a[2]) + (a[1] + a[3]);
}
// {Σ s0, Σ s1, Σ s2, Σ s3} with vector shuffles: lane-by-lane sums cost more than the dot products
// themselves for 64-long columns.
inline v4 hsum4(v8 s0, v8 s1, v8 s2, v8 s3) {
  const v4 a0 = fold(s0), a1 = fold(s1), a2 = fold(s2), a3 = fold(s3);
  const v4 t01 = __builtin_shufflevector(a0, a1, 0, 4, 1, 5) + __builtin_shufflevector(a0, a1, 2, 6, 3, 7);
  const v4 t23 = __builtin_shufflevector(a2, a3, 0, 4, 1, 5) + __builtin_shufflevector(a2, a3, 2, 6, 3, 7);
  return __builtin_shufflevector(t01, t23, 0, 1, 4, 5) + __builtin_shufflevector(t01, t23, 2, 3, 6, 7);
}

// Contiguous copy of a strided vector (the rare case; products of DyNet tensors are contiguous).
const float* contiguous(const float* x, long n, long inc, std::vector<float>& buf) {
  if (inc == 1) return x;
  buf.resize(n);
  for (long i = 0; i < n; ++i) buf[i] = x[i * inc];
  return buf.data();
}
}  // namespace

DYNET_CLONES
static void gemv_n_contig(long M, long K, float alpha, const float* A, long lda, const float* x, float* __restrict y) {
  long k = 0;
  for (; k + 4 <= K; k += 4) {  // four columns per pass: y is loaded and stored a quarter as often
    const float a0 = alpha * x[k], a1 = alpha * x[k + 1], a2 = alpha * x[k + 2], a3 = alpha * x[k + 3];
    const float *c0 = A + k * lda, *c1 = c0 + lda, *c2 = c1 + lda, *c3 = c2 + lda;
    for (long i = 0; i < M; ++i) y[i] += a0 * c0[i] + a1 * c1[i] + a2 * c2[i] + a3 * c3[i];
  }
  for (; k < K; ++k) {
    const float a = alpha * x[k];
    const float* c = A + k * lda;
    for (long i = 0; i < M; ++i) y[i] += a * c[i];
  }
}

DYNET_CLONES
static void gemv_t_contig(long K, long N, float alpha, const float* A, long lda, const float* x, float beta, float* y,
                          long incy) {
  auto put = [&](long j, float d) {
    float& yj = y[j * incy];
    yj = beta == 0.f ? alpha * d : beta * yj + alpha * d;
  };
  long j = 0;
  for (; j + 4 <= N; j += 4) {
    const float *a0 = A + j * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
    v8 s0 = {}, s1 = {}, s2 = {}, s3 = {};
    long i = 0;
    for (; i + 8 <= K; i += 8) {
      const v8 xv = load8(x + i);
      s0 += load8(a0 + i) * xv;
      s1 += load8(a1 + i) * xv;
      s2 += load8(a2 + i) * xv;
      s3 += load8(a3 + i) * xv;
    }
    const v4 r = hsum4(s0, s1, s2, s3);
    float r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
    for (; i < K; ++i) {
      r0 += a0[i] * x[i];
      r1 += a1[i] * x[i];
      r2 += a2[i] * x[i];
      r3 += a3[i] * x[i];
    }
    put(j, r0);
    put(j + 1, r1);
    put(j + 2, r2);
    put(j + 3, r3);
  }
  for (; j < N; ++j) {
    const float* a = A + j * lda;
    v8 s0 = {};
    long i = 0;
    for (; i + 8 <= K; i += 8) s0 += load8(a + i) * load8(x + i);
    float r = hsum(s0);
    for (; i < K; ++i) r += a[i] * x[i];
    put(j, r);
  }
}

DYNET_CLONES
static void ger_contig(long M, long N, float alpha, const float* x, const float* y, long incy, float* A, long lda) {
  for (long j = 0; j < N; ++j) {
    const float b = alpha * y[j * incy];
    float* __restrict c = A + j * lda;
    for (long i = 0; i < M; ++i) c[i] += b * x[i];
  }
}

void gemv_n(long M, long K, float alpha, const float* A, long lda, const float* x, long incx, float beta, float* y,
            long incy) {
  std::vector<float> xbuf, ybuf;
  const float* xc = contiguous(x, K, incx, xbuf);
  float* yc = incy == 1 ? y : (ybuf.assign(M, 0.f), ybuf.data());
  if (incy != 1)
    for (long i = 0; i < M; ++i) yc[i] = y[i * incy];
  if (beta == 0.f)
    std::memset(yc, 0, sizeof(float) * M);
  else if (beta != 1.f)
    for (long i = 0; i < M; ++i) yc[i] *= beta;
  gemv_n_contig(M, K, alpha, A, lda, xc, yc);
  if (incy != 1)
    for (long i = 0; i < M; ++i) y[i * incy] = yc[i];
}

void gemv_t(long K, long N, float alpha, const float* A, long lda, const float* x, long incx, float beta, float* y,
            long incy) {
  std::vector<float> xbuf;
  const float* xc = contiguous(x, K, incx, xbuf);
  gemv_t_contig(K, N, alpha, A, lda, xc, beta, y, incy);
}

void ger(long M, long N, float alpha, const float* x, long incx, const float* y, long incy, float* A, long lda) {
  std::vector<float> xbuf;
  ger_contig(M, N, alpha, contiguous(x, M, incx, xbuf), y, incy, A, lda);
}

}  // namespace dynet::cpu
