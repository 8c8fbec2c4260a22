#include "kernels/cpu/gemm.h"

#include "core/mem.h"
#include "kernels/cpu/gemm_skinny.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/parallel.h"

#include <Eigen/Core>
#include <algorithm>
#include <immintrin.h>
#include <new>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdexcept>
#include <string>
#include <vector>

namespace dynet::cpu {

namespace {
using Stride = Eigen::OuterStride<>;
using Map = Eigen::Map<Eigen::MatrixXf, 0, Stride>;

// oneDNN dispatches to AVX-512/AVX2 at run time and (multi-threaded) wins every product with two
// non-trivial dimensions (64x16x64: 1.5 us vs Eigen's 3.9 us) and large matrix-vector products
// (1024x256: 8.7 us vs 12 us single-threaded). Small matrix-vector and rank-1 products are the
// common case in dynamic nets; oneDNN's per-call overhead dominates them, so they go to our
// kernels (64x64 GEMV: 0.15 us vs oneDNN 0.38 us, Eigen 0.38 us). Measured by bench/gemm_routing.
constexpr long kMaxOwnKernelElems = 256 * 256;

// a·b <= limit, without overflowing for dims up to 2^32.
bool product_at_most(long a, long b, long limit) { return a <= limit && b <= limit && a * b <= limit; }

// The blocks a product of `macs` multiply-adds is split into along its longer side (`extent` rows or
// columns), shared by the calling and helper threads. The plan depends on the shape alone, never on the
// thread count: oneDNN's bits for an element depend on the shape of the call that computes it (on Zen 3's
// AVX2 kernels, 600x700x40 in blocks of 176 columns differs from one call in 6,609 elements), so one
// thread runs the same blocks one after another. Blocks are at least 1024 wide and 8M multiply-adds, at
// most 16 of them: from 1024 on one thread runs them within the noise of one call, narrower ones cost it
// up to 5% (10000x64x256 in 512-row blocks; rnnlm at minibatch 64 4% slower) and, for a matrix whose
// leading dimension is a multiple of 4 KB, up to 2x (1024x1280x256 in 320-column blocks: 21.6 against
// 9.5 ms). Medians of 30 calls, one thread, on Zen 3.
long block_count(long extent, double macs) {
  const double by_size = std::min(double(extent / 1024), macs / double(1L << 23));
  return static_cast<long>(std::max(1.0, std::min(16.0, by_size)));
}

// Whether op(A)·B goes to the skinny kernels (gemm_skinny.h): A of 64k elements and more (below that,
// A stays in cache and oneDNN's packing is cheap) times 2-24 columns (A·B) or 2-32 columns with an inner
// dimension of 256 and more (Aᵀ·B: the shapes measured, input gradients of layers of 256 outputs and more).
// Measured by bench/gemm_routing, CPU time, one thread, A evicted from the caches before each call as
// an output layer's W is between time steps: 10000x16x256 1.5 -> 0.8 ms (oneDNN packs all of W per
// call), Wᵀ·G 256x16x10000 3.2 ms (oneDNN) or 1.6 ms (oneDNN on gemm_tn_unchanged's transposed copy,
// plus the copy) -> 1.0-1.3 ms; 1024x16x256 170 -> 110 us. A single column stays with oneDNN's matrix-vector
// route (10000x1x256: 0.55 against 0.8 ms), and from 32 (A·B) or 64 (Aᵀ·B) columns oneDNN's blocking
// wins in cache (10000x64x256: 2.9 against 3.4 ms).
bool skinny(bool trans_a, bool trans_b, long M, long N, long K) {
  if (trans_b || N < 2 || double(M) * double(K) < double(1 << 16) || skinny_isa() == SkinnyIsa::kNone) return false;
  return trans_a ? N <= 32 && K >= 256 : N <= 24 && K >= 16;
}

// Whether A·Bᵀ runs faster as its transpose Cᵀ = B·Aᵀ into scratch memory, transposed into C. oneDNN's
// row-major kernels block C's rows (our columns) by 16: with our row count off that grid, at most half
// the column count and a long inner dimension, the product with rows and columns swapped runs faster by
// more than the transposition costs (a parser's hidden-layer weight gradient g·xᵀ, 100 x 1000 over 2060
// columns: 84 -> 100 GFLOP/s alone, 95 -> 104 in the parser's step, the same values; 100x250, 73x500,
// 250x500 gain alike in thread CPU time at K 600 and 2060). Rows on the grid (32x1000, 64x1000, 128x250)
// and short inner dimensions (the transposition's pass over C no longer small) stay as they are.
bool transposed_pays(bool trans_a, bool trans_b, long M, long N, long K) {
  return !trans_a && trans_b && M >= 16 && M % 16 != 0 && N >= 2 * M && K >= 512;
}

// C = beta · C
void scale(float* C, long M, long N, long ldc, float beta) {
  if (beta == 1.f) return;
  Map c(C, M, N, Stride(ldc));
  if (beta == 0.f)
    c.setZero();  // not c *= 0: C may hold NaN from an earlier use of the memory
  else
    c *= beta;
}
}  // namespace

void gemm(bool trans_a, bool trans_b, long M, long N, long K, float alpha, const float* A, long lda, const float* B,
          long ldb, float beta, float* C, long ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // a product over nothing (operands without elements)
    scale(C, M, N, ldc, beta);
    return;
  }
  // Matrix-vector products: C = op(A) · b (N == 1) or cᵀ = op(B)ᵀ · aᵀ (M == 1).
  if (N == 1 && product_at_most(M, K, kMaxOwnKernelElems)) {
    const long incb = trans_b ? ldb : 1;
    if (trans_a)
      gemv_t(K, M, alpha, A, lda, B, incb, beta, C, 1);
    else
      gemv_n(M, K, alpha, A, lda, B, incb, beta, C, 1);
    return;
  }
  if (M == 1 && product_at_most(N, K, kMaxOwnKernelElems)) {
    const long inca = trans_a ? 1 : lda;
    if (trans_b)
      gemv_n(N, K, alpha, B, ldb, A, inca, beta, C, ldc);
    else
      gemv_t(K, N, alpha, B, ldb, A, inca, beta, C, ldc);
    return;
  }
  // Rank-1 update (the weight gradient of a matrix-vector product).
  if (K == 1 && product_at_most(M, N, 4 * kMaxOwnKernelElems)) {
    scale(C, M, N, ldc, beta);
    ger(M, N, alpha, A, trans_a ? lda : 1, B, trans_b ? 1 : ldb, C, ldc);
    return;
  }
  if (transposed_pays(trans_a, trans_b, M, N, K)) {
    thread_local std::vector<float> scratch;  // kept: the same shapes come every step
    if (scratch.size() < size_t(M) * size_t(N)) scratch.resize(size_t(M) * size_t(N));
    float* const T = scratch.data();  // Cᵀ, N x M
    gemm(false, true, N, M, K, alpha, B, ldb, A, lda, 0.f, T, N);  // not transposed_pays again: N > M
    // Column j of C is row j of T; consecutive j's read the same lines of T.
    for (long j = 0; j < N; ++j) {
      float* c = C + j * ldc;
      const float* t = T + j;
      if (beta == 0.f)  // not beta · c: C may hold NaN from an earlier use of the memory
        for (long i = 0; i < M; ++i) c[i] = t[i * N];
      else
        for (long i = 0; i < M; ++i) c[i] = beta * c[i] + t[i * N];
    }
    return;
  }
  // oneDNN's sgemm is row-major: compute Cᵀ = op(B)ᵀ · op(A)ᵀ, which in row-major memory is our C.
  // oneDNN always runs on the calling thread alone (never an OpenMP team: its workers spin for
  // milliseconds after each product and steal the cores of a busy machine). Products of 16M
  // multiply-adds and more with a side of 2048 are split into blocks of C (block_count) shared with
  // sleeping helper threads (parallel_chunks); smaller ones gain too little from a split (64x64x1000, a
  // weight gradient over a 1000-step chain: 2 threads slower than 1).
  const int threads = omp_get_max_threads();
  const OmpThreads one(1);
  auto sgemm_k = [&](long m, long n, long k, const float* a, const float* b, float bt, float* c) {
    const dnnl_status_t st =
        dnnl_sgemm(trans_b ? 'T' : 'N', trans_a ? 'T' : 'N', n, m, k, alpha, b, ldb, a, lda, bt, c, ldc);
    if (st != dnnl_success) throw std::runtime_error("gemm: oneDNN sgemm failed with status " + std::to_string(st));
  };
  // Aᵀ·B with a long inner dimension and a few columns (the input gradient Wᵀ·g of a 10k-word output
  // layer over a minibatch, where gemm_tn_unchanged has no transposed copy yet: its first or only use
  // in a pass, e.g. all time steps autobatched): oneDNN runs it 1.2-1.7x slower in one call than as a
  // sum over blocks of 1024 (256x16x10000: 3.2 ms vs 1.9 ms; 1024x64x30000: 68 vs 52 ms). Neutral from
  // about 200 columns on, and a loss for a single column. Measured with thread CPU time by
  // bench/gemm_routing. Up to 32 columns the skinny kernel takes these products where it runs.
  const bool split_inner = trans_a && !trans_b && K > 8192 && N >= 16 && N <= 160;
  const bool use_skinny = skinny(trans_a, trans_b, M, N, K);
  auto sgemm = [&](long m, long n, const float* a, const float* b, float* c) {
    if (use_skinny) {
      if (trans_a) return gemm_skinny_tn(skinny_isa(), m, n, K, alpha, a, lda, b, ldb, beta, c, ldc);
      return gemm_skinny_nn(skinny_isa(), m, n, K, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    if (!split_inner) return sgemm_k(m, n, K, a, b, beta, c);
    constexpr long kBlock = 1024;
    for (long k0 = 0; k0 < K; k0 += kBlock)
      sgemm_k(m, n, std::min(kBlock, K - k0), a + k0, b + k0, k0 == 0 ? beta : 1.f, c);
  };
  const double macs = double(M) * double(N) * double(K);
  const long chunks = block_count(std::max(M, N), macs);
  if (chunks == 1) {
    sgemm(M, N, A, B, C);
    return;
  }
  // Split the longer side of C, so the operand every block shares is the smaller one.
  const bool split_rows = M >= N;
  const long extent = split_rows ? M : N;
  const long step = (extent / chunks + 15) / 16 * 16;
  parallel_chunks(static_cast<int>((extent + step - 1) / step), threads, [&](int j) {
    const long lo = j * step, len = std::min(step, extent - lo);
    if (split_rows)  // rows lo.. of op(A) and C
      sgemm(len, N, A + (trans_a ? lo * lda : lo), B, C + lo);
    else  // columns lo.. of op(B) and C
      sgemm(M, len, A, B + (trans_b ? lo : lo * ldb), C + lo * ldc);
  });
}

namespace {
// Transposed copies of the first operands of gemm_tn_unchanged (and of the stacked pairs of
// gemm_tn_stacked_unchanged) in the open scope. Few matrices repeat in one pass (the weights), so a
// short list searched linearly; matrices seen once get no copy.
struct Transposes {
  struct Entry {
    const float* a;
    long rows, cols, lda;      // A is rows x cols (K x M)
    const float* a2;           // stacked: the second matrix, rows x cols2 (else null)
    long cols2, lda2;
    const float* t;            // the transpose (M x K, leading dimension M; stacked: M + M2 rows) once made
  };
  int scopes = 0;
  std::vector<Entry> entries;
  MemPool pool{0};
};
thread_local Transposes transposes;
constexpr size_t kMaxTransposes = 64;
// Below this many elements of A, the plain product's cost is oneDNN's per-call overhead, not packing.
constexpr long kMinTransposeElems = 64 * 64;
// A transposed copy of at most this many elements stays in L2 next to its product's other operands.
constexpr long kMaxCachedTransposeElems = 128 * 1024;

// t (M x K, leading dimension ldt) = Aᵀ for A (K x M, leading dimension lda). With AVX, 8 x 8 blocks
// transposed in registers (Eigen's transpose is built for SSE2 here): the bilstm task's transposed
// copies 0.80% -> 0.34% of its profile (800x400 evicted: 20% faster alone).
__attribute__((target("avx"))) void transpose_avx(const float* A, long K, long M, long lda, float* t, long ldt) {
  long m0 = 0;
  for (; m0 + 8 <= M; m0 += 8) {
    const float* a = A + m0 * lda;
    long k0 = 0;
    for (; k0 + 8 <= K; k0 += 8) {
      __m256 r[8];
      for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(a + j * lda + k0);
      // Pairs of rows interleaved, then pairs of pairs: u[j] holds elements j and j + 4 of rows 0-3 (low
      // lane) ... of rows 4-7 in u[j + 4]; the 128-bit halves then give the columns.
      __m256 v[8], u[8];
      for (int j = 0; j < 8; j += 2) {
        v[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
        v[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
      }
      for (int j = 0; j < 8; j += 4) {
        u[j] = _mm256_shuffle_ps(v[j], v[j + 2], 0x44);
        u[j + 1] = _mm256_shuffle_ps(v[j], v[j + 2], 0xEE);
        u[j + 2] = _mm256_shuffle_ps(v[j + 1], v[j + 3], 0x44);
        u[j + 3] = _mm256_shuffle_ps(v[j + 1], v[j + 3], 0xEE);
      }
      float* o = t + k0 * ldt + m0;
      for (int j = 0; j < 4; ++j) {
        _mm256_storeu_ps(o + j * ldt, _mm256_permute2f128_ps(u[j], u[j + 4], 0x20));
        _mm256_storeu_ps(o + (j + 4) * ldt, _mm256_permute2f128_ps(u[j], u[j + 4], 0x31));
      }
    }
    for (; k0 < K; ++k0)
      for (long j = 0; j < 8; ++j) t[k0 * ldt + m0 + j] = a[j * lda + k0];
  }
  for (; m0 < M; ++m0)
    for (long k = 0; k < K; ++k) t[k * ldt + m0] = A[m0 * lda + k];
}
void transpose(const float* A, long K, long M, long lda, float* t, long ldt) {
  static const bool avx = __builtin_cpu_supports("avx");
  if (avx) return transpose_avx(A, K, M, lda, t, ldt);
  Map(t, M, K, Stride(ldt)) = Eigen::Map<const Eigen::MatrixXf, 0, Stride>(A, K, M, Stride(lda)).transpose();
}

// The transposed copy of A (K x M), stacked on that of A2 (K x M2) when A2 is set, and its leading
// dimension: made at the second request in the open scope, {null, 0} before (or without a scope, or
// memory for it). A stacked pair is copied at its first request: its products run in a recurrence
// (gemm_tn_stacked_unchanged), so a second one follows; the copy of a pair also serves A alone.
struct Transposed {
  const float* t;
  long ld;
};
Transposed transposed_copy(long M, long K, const float* A, long lda, const float* A2, long M2, long lda2) {
  Transposes& tr = transposes;
  if (tr.scopes == 0) return {nullptr, 0};
  Transposes::Entry* e = nullptr;
  for (Transposes::Entry& x : tr.entries) {
    if (x.a != A || x.rows != K || x.cols != M || x.lda != lda) continue;
    if (!A2 && x.a2 && x.t) return {x.t, M + x.cols2};  // rows [0, M) of a pair's copy
    if (x.a2 == A2 && (!A2 || (x.cols2 == M2 && x.lda2 == lda2))) {
      e = &x;
      break;
    }
  }
  if (!e) {
    if (tr.entries.size() >= kMaxTransposes) return {nullptr, 0};
    tr.entries.push_back({A, K, M, lda, A2, M2, lda2, nullptr});
    if (!A2) return {nullptr, 0};
    e = &tr.entries.back();
  }
  const long rows = M + (A2 ? M2 : 0);
  if (!e->t) {
    float* t;
    try {
      t = tr.pool.allocate_floats(size_t(rows) * size_t(K));
    } catch (const std::bad_alloc&) {  // no memory for the copy: the product itself needs none
      return {nullptr, 0};
    }
    transpose(A, K, M, lda, t, rows);
    if (A2) transpose(A2, K, M2, lda2, t + M, rows);
    e->t = t;
  }
  return {e->t, rows};
}
}  // namespace

TransposeScope::TransposeScope() { ++transposes.scopes; }
TransposeScope::~TransposeScope() {
  if (--transposes.scopes > 0) return;
  transposes.entries.clear();
  transposes.pool.free_all();
}

void gemm_tn_unchanged(long M, long N, long K, float alpha, const float* A, long lda, const float* B, long ldb,
                       float beta, float* C, long ldc) {
  // Products that gemm sends to its own matrix-vector kernels (N == 1) keep them.
  // Nor do products that the skinny kernels take, which read A as it is, unless A fits in half of L2 (at
  // most kMaxCachedTransposeElems): then oneDNN on the copy is faster (a Tree-LSTM's 128x(2-31)x640 input
  // gradients, CPU time: in cache 52-95 -> 59-116 GFLOP/s, A evicted 25-35% less time).
  const bool copy_pays = N >= 2 && M >= 2 && K >= 2 && !product_at_most(M, K, kMinTransposeElems - 1) &&
                         (!skinny(true, false, M, N, K) || product_at_most(M, K, kMaxCachedTransposeElems));
  const Transposed t = copy_pays ? transposed_copy(M, K, A, lda, nullptr, 0, 0) : Transposed{nullptr, 0};
  if (!t.t) return gemm(true, false, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  gemm(false, false, M, N, K, alpha, t.t, t.ld, B, ldb, beta, C, ldc);
}

void gemm_tn_stacked_unchanged(long M, long M2, long N, long K, const float* A, long lda, const float* A2, long lda2,
                               const float* B, long ldb, float* C, long ldc) {
  const bool copy_pays = N >= 2 && M >= 2 && M2 >= 2 && K >= 2 &&
                         !product_at_most(M + M2, K, kMinTransposeElems - 1) && !skinny(true, false, M + M2, N, K);
  const Transposed t = copy_pays ? transposed_copy(M, K, A, lda, A2, M2, lda2) : Transposed{nullptr, 0};
  if (t.t) return gemm(false, false, M + M2, N, K, 1.f, t.t, t.ld, B, ldb, 0.f, C, ldc);
  gemm(true, false, M, N, K, 1.f, A, lda, B, ldb, 0.f, C, ldc);
  gemm(true, false, M2, N, K, 1.f, A2, lda2, B, ldb, 0.f, C + M, ldc);
}

}  // namespace dynet::cpu
