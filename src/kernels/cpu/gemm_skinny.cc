#include "kernels/cpu/gemm_skinny.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

namespace dynet::cpu {

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace skinny_avx2 {
using V = __m256;
constexpr long kLanes = 8;
// 16 registers: 2 x 6 sums, two columns of A and a broadcast element of B; Aᵀ·B: NV x kTnCols[NV - 1] sums.
constexpr int kNnVectors = 2, kNnCols = 6;
constexpr int kTnCols[] = {8, 4, 3, 2};
// Aᵀ·B with 1-4 columns of B: kTnDotCols[N - 1] columns of A x N dot products per tile.
constexpr int kTnDotMax = 4;
constexpr int kTnDotCols[] = {8, 5, 3, 2};
#define DYNET_SKINNY_WIDE 0
inline V zero() { return _mm256_setzero_ps(); }
inline V load(const float* p) { return _mm256_loadu_ps(p); }
inline __m256i first(long n) {  // the first n lanes
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline V load_part(const float* p, long n) { return _mm256_maskload_ps(p, first(n)); }
inline void store(float* p, V v) { _mm256_storeu_ps(p, v); }
inline void store_part(float* p, V v, long n) { _mm256_maskstore_ps(p, first(n), v); }
inline V bcast(float x) { return _mm256_set1_ps(x); }
inline V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline float sum_lanes(V v) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
}
#include "kernels/cpu/gemm_skinny.inc"
#undef DYNET_SKINNY_WIDE
}  // namespace skinny_avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
namespace skinny_avx512 {
using V = __m512;
constexpr long kLanes = 16;
// 32 registers: 3 x 8 sums (48 rows of C, 8 columns), three vectors of A and a broadcast element of B;
// Aᵀ·B: NV x kTnCols[NV - 1] sums (8 columns of A: more ran slower, 16 and 24 at 256x16x10000).
constexpr int kNnVectors = 3, kNnCols = 8;
constexpr int kTnCols[] = {8, 8, 6, 4};
// Aᵀ·B with 1-6 columns of B as dot products (7 and 8 ran no faster than tn_lanes, in cache).
constexpr int kTnDotMax = 6;
constexpr int kTnDotCols[] = {12, 10, 8, 6, 4, 4};
#define DYNET_SKINNY_WIDE 1
inline V zero() { return _mm512_setzero_ps(); }
inline V load(const float* p) { return _mm512_loadu_ps(p); }
inline __mmask16 first(long n) { return static_cast<__mmask16>((1u << n) - 1u); }  // the first n lanes
inline V load_part(const float* p, long n) { return _mm512_maskz_loadu_ps(first(n), p); }
inline void store(float* p, V v) { _mm512_storeu_ps(p, v); }
inline void store_part(float* p, V v, long n) { _mm512_mask_storeu_ps(p, first(n), v); }
inline V bcast(float x) { return _mm512_set1_ps(x); }
inline V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
// Masked shuffles only: the unmasked ones, the 256-bit cast and _mm512_reduce_add_ps take an undefined
// operand in GCC 12's headers, which -Wuninitialized reports.
inline float sum_lanes(V v) {
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xffff, v, v, 0x4e));  // 256-bit halves
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xffff, v, v, 0xb1));  // 128-bit quarters
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(0xffff, v, 0x4e));        // pairs
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(0xffff, v, 0xb1));        // neighbours
  return _mm512_cvtss_f32(v);
}
#include "kernels/cpu/gemm_skinny.inc"
#undef DYNET_SKINNY_WIDE
}  // namespace skinny_avx512
#pragma GCC pop_options

SkinnyIsa skinny_isa() {
  static const SkinnyIsa isa = __builtin_cpu_supports("avx512f")                                   ? SkinnyIsa::kAvx512
                               : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? SkinnyIsa::kAvx2
                                                                                                   : SkinnyIsa::kNone;
  return isa;
}

void gemm_skinny_nn(SkinnyIsa isa, long M, long N, long K, float alpha, const float* A, long lda, const float* B,
                    long ldb, float beta, float* C, long ldc) {
  if (isa == SkinnyIsa::kAvx512) return skinny_avx512::nn(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (isa == SkinnyIsa::kAvx2) return skinny_avx2::nn(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  throw std::logic_error("gemm_skinny_nn: no kernel for this CPU");
}

void gemm_skinny_tn(SkinnyIsa isa, long M, long N, long K, float alpha, const float* A, long lda, const float* B,
                    long ldb, float beta, float* C, long ldc) {
  if (isa == SkinnyIsa::kAvx512) return skinny_avx512::tn(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (isa == SkinnyIsa::kAvx2) return skinny_avx2::tn(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  throw std::logic_error("gemm_skinny_tn: no kernel for this CPU");
}

}  // namespace dynet::cpu

#else  // not x86-64: gemm keeps oneDNN

namespace dynet::cpu {
SkinnyIsa skinny_isa() { return SkinnyIsa::kNone; }
void gemm_skinny_nn(SkinnyIsa, long, long, long, float, const float*, long, const float*, long, float, float*, long) {
  throw std::logic_error("gemm_skinny_nn: no kernel for this CPU");
}
void gemm_skinny_tn(SkinnyIsa, long, long, long, float, const float*, long, const float*, long, float, float*, long) {
  throw std::logic_error("gemm_skinny_tn: no kernel for this CPU");
}
}  // namespace dynet::cpu

#endif
