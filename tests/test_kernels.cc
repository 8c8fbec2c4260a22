// CPU kernels below the op layer: GEMM against a plain triple loop (every transpose combination, both
// ways of splitting a large product over threads) and the work sharing behind it; the exponential and
// the softmax-column and activation kernels against libm.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/cpu/activations.h"
#define DYNET_EXP_SCALAR_CALLS  // the accuracy tests below call exp.h's functions one value at a time
#include "kernels/cpu/exp.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_skinny.h"
#include "kernels/cpu/lstm.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/softmax.h"

namespace dynet::cpu {
namespace {

// C = alpha op(A) op(B) + beta C in double precision, column-major.
std::vector<float> reference_gemm(bool ta, bool tb, int M, int N, int K, float alpha, const std::vector<float>& A,
                                  int lda, const std::vector<float>& B, int ldb, float beta, std::vector<float> C,
                                  int ldc) {
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < M; ++i) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += double(ta ? A[k + i * lda] : A[i + k * lda]) * (tb ? B[j + k * ldb] : B[k + j * ldb]);
      C[i + j * ldc] = float(alpha * s + beta * C[i + j * ldc]);
    }
  return C;
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

using ThreadCount = cpu::OmpThreads;  // OpenMP's thread count for a scope

// Large enough (16M multiply-adds and a side of 2048: gemm.cc's block_count) to be split into blocks;
// padded leading dimensions catch sub-block offsets that ignore them.
void check_large_gemm(int M, int N, int K, int threads) {
  ThreadCount tc(threads);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const int lda = (ta ? K : M) + 3, ldb = (tb ? N : K) + 5, ldc = M + 7;
      const auto A = random_floats(size_t(lda) * (ta ? M : K), 1);
      const auto B = random_floats(size_t(ldb) * (tb ? K : N), 2);
      auto C = random_floats(size_t(ldc) * N, 3);
      const auto expected = reference_gemm(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 2.f, C, ldc);
      gemm(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.f, C.data(), ldc);
      double worst = 0;
      for (int j = 0; j < N; ++j)
        for (int i = 0; i < M; ++i) worst = std::max(worst, double(std::abs(C[i + j * ldc] - expected[i + j * ldc])));
      EXPECT_LT(worst, 1e-3) << "ta=" << ta << " tb=" << tb << " M=" << M << " N=" << N << " K=" << K;
      // The padding between columns of C is untouched.
      for (int j = 0; j < N; ++j)
        for (int i = M; i < ldc && i + j * ldc < int(C.size()); ++i)
          ASSERT_EQ(C[i + j * ldc], expected[i + j * ldc]);
    }
}

TEST(Gemm, LargeProductsSplitByRowsMatchTheReference) { check_large_gemm(2100, 50, 170, 2); }
TEST(Gemm, LargeProductsSplitByColumnsMatchTheReference) { check_large_gemm(60, 2100, 140, 3); }
TEST(Gemm, LargeProductsOnOneThreadMatchTheReference) { check_large_gemm(2100, 50, 170, 1); }

TEST(Gemm, TransposedProductsOfAnUnchangedMatrixMatchTheReference) {
  // Wᵀ·g with the same W three times in one scope (the third and second use multiply its transposed
  // copy), a padded leading dimension, beta 0 and 1, and a second matrix of the same shape at another
  // address; then the same after the scope has closed and memory of W changed.
  const int M = 96, N = 40, K = 130, lda = K + 3;
  auto W = random_floats(size_t(lda) * M, 4), V = random_floats(size_t(lda) * M, 5);
  const auto G = random_floats(size_t(K) * N, 6);
  auto check = [&](const std::vector<float>& A, float beta, const char* what) {
    auto C = random_floats(size_t(M) * N, 7);
    const auto expected = reference_gemm(true, false, M, N, K, 0.5f, A, lda, G, K, beta, C, M);
    gemm_tn_unchanged(M, N, K, 0.5f, A.data(), lda, G.data(), K, beta, C.data(), M);
    double worst = 0;
    for (size_t k = 0; k < C.size(); ++k) worst = std::max(worst, double(std::abs(C[k] - expected[k])));
    EXPECT_LT(worst, 1e-4) << what;
  };
  {
    const TransposeScope scope;
    check(W, 1.f, "first use");
    check(W, 0.f, "second use");
    check(V, 1.f, "another matrix");
    check(W, 1.f, "third use");
  }
  for (float& x : W) x = -x;  // a new pass sees the new values
  const TransposeScope scope;
  check(W, 1.f, "changed, first use");
  check(W, 1.f, "changed, second use");
}

TEST(Gemm, StackedTransposedProductsMatchTheReference) {
  // [A A2]ᵀ·G into C {M + M2, N} with a padded ldc (the padding stays), three times in a scope (over the
  // stacked copy made at the first), the pair the other way round (its own copy), A alone
  // (gemm_tn_unchanged: the top rows of the pair's copy), and after A changed: without a scope (two
  // products) and in a new one.
  const int M = 72, M2 = 37, N = 24, K = 130, lda = K + 3, lda2 = K + 1, ldc = M + M2 + 5;
  auto A = random_floats(size_t(lda) * M, 8);
  const auto A2 = random_floats(size_t(lda2) * M2, 9), G = random_floats(size_t(K) * N, 10);
  auto check = [&](bool swapped, const char* what) {
    const std::vector<float>& top = swapped ? A2 : A;
    const std::vector<float>& bottom = swapped ? A : A2;
    const int m = swapped ? M2 : M, m2 = swapped ? M : M2, l = swapped ? lda2 : lda, l2 = swapped ? lda : lda2;
    auto C = random_floats(size_t(ldc) * N, 11);
    auto expected = reference_gemm(true, false, m, N, K, 1.f, top, l, G, K, 0.f, C, ldc);
    std::vector<float> lower(expected.begin() + m, expected.end());
    lower = reference_gemm(true, false, m2, N, K, 1.f, bottom, l2, G, K, 0.f, lower, ldc);
    std::copy(lower.begin(), lower.end(), expected.begin() + m);
    gemm_tn_stacked_unchanged(m, m2, N, K, top.data(), l, bottom.data(), l2, G.data(), K, C.data(), ldc);
    for (size_t k = 0; k < C.size(); ++k) {
      if (int(k % ldc) >= M + M2) ASSERT_EQ(C[k], expected[k]) << what << ": padding at " << k;
      EXPECT_NEAR(C[k], expected[k], 1e-4) << what << " at " << k;
    }
  };
  {
    const TransposeScope scope;
    check(false, "first use");
    check(false, "second use");
    check(true, "swapped, first use");
    check(false, "third use");
    check(true, "swapped, second use");
    auto C = random_floats(size_t(M) * N, 12);
    const auto expected = reference_gemm(true, false, M, N, K, 1.f, A, lda, G, K, 0.f, C, M);
    gemm_tn_unchanged(M, N, K, 1.f, A.data(), lda, G.data(), K, 0.f, C.data(), M);
    gemm_tn_unchanged(M, N, K, 1.f, A.data(), lda, G.data(), K, 0.f, C.data(), M);
    for (size_t k = 0; k < C.size(); ++k) EXPECT_NEAR(C[k], expected[k], 1e-4) << "A alone at " << k;
  }
  for (float& x : A) x = -x;
  check(false, "changed, no scope");
  const TransposeScope scope;
  check(false, "changed, first use");
  check(false, "changed, second use");
}

// A·Bᵀ with few rows off oneDNN's grid of 16, many columns and a long inner dimension runs as its
// transpose (gemm.cc, transposed_pays): beta 0 (C held NaN), 1 and 2, padded leading dimensions (the
// padding of C stays untouched), on one thread and split over two; and shapes next to the rule's edges.
TEST(Gemm, TransposedRouteMatchesTheReference) {
  struct Shape {
    int M, N, K;
  };
  for (const Shape& s : {Shape{100, 250, 600}, Shape{17, 40, 512}, Shape{20, 39, 700}, Shape{32, 100, 600},
                         Shape{100, 200, 511}})
    for (int threads : {1, 2})
      for (float beta : {0.f, 1.f, 2.f}) {
        ThreadCount tc(threads);
        const int lda = s.M + 3, ldb = s.N + 1, ldc = s.M + 2;
        const auto A = random_floats(size_t(lda) * s.K, 41), B = random_floats(size_t(ldb) * s.K, 42);
        auto C = random_floats(size_t(ldc) * s.N, 43);
        const auto expected = reference_gemm(false, true, s.M, s.N, s.K, 0.5f, A, lda, B, ldb, beta, C, ldc);
        if (beta == 0.f)
          for (int j = 0; j < s.N; ++j) C[size_t(j) * ldc] = std::numeric_limits<float>::quiet_NaN();
        gemm(false, true, s.M, s.N, s.K, 0.5f, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
        for (int j = 0; j < s.N; ++j) {
          for (int i = 0; i < s.M; ++i)
            ASSERT_NEAR(C[i + j * ldc], expected[i + j * ldc], 2e-3)
                << "M=" << s.M << " N=" << s.N << " K=" << s.K << " beta=" << beta << " threads=" << threads;
          for (int i = s.M; i < ldc && i + j * ldc < int(C.size()); ++i) ASSERT_EQ(C[i + j * ldc], expected[i + j * ldc]);
        }
      }
}

// Aᵀ·B with a long inner dimension runs as a sum over blocks of it (gemm.cc): every block lands, beta
// applies once (0 overwrites C even where it held NaN), on one thread and split over threads (23M
// multiply-adds).
TEST(Gemm, LongInnerDimensionInBlocksMatchesTheReference) {
  for (int threads : {1, 2})
    for (float beta : {0.f, 1.f}) {
      ThreadCount tc(threads);
      const int M = 64, N = 40, K = 9000, lda = K + 3, ldb = K + 1, ldc = M + 2;  // N > 32: not skinny
      const auto A = random_floats(size_t(lda) * M, 11), B = random_floats(size_t(ldb) * N, 12);
      auto C = random_floats(size_t(ldc) * N, 13);
      const auto expected = reference_gemm(true, false, M, N, K, 0.5f, A, lda, B, ldb, beta, C, ldc);
      if (beta == 0.f) C[5] = std::numeric_limits<float>::quiet_NaN();
      gemm(true, false, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
      for (int j = 0; j < N; ++j)
        for (int i = 0; i < M; ++i)
          ASSERT_NEAR(C[i + j * ldc], expected[i + j * ldc], 2e-3) << "beta=" << beta << " threads=" << threads;
    }
}

// The skinny kernels on every instruction set this CPU runs, at sizes that leave every kind of tail
// (rows not a multiple of the tile or the vector, columns not a multiple of the column block or of the
// vector, inner dimensions not a multiple of the chunk), with padded leading dimensions (the padding stays
// untouched), beta 0 (C held NaN), 1 and 2.
std::vector<SkinnyIsa> skinny_isas() {
  std::vector<SkinnyIsa> isas;
  if (skinny_isa() == SkinnyIsa::kAvx512) isas.push_back(SkinnyIsa::kAvx512);
  if (skinny_isa() != SkinnyIsa::kNone) isas.push_back(SkinnyIsa::kAvx2);
  return isas;
}

void check_skinny(SkinnyIsa isa, bool ta, int M, int N, int K, float beta) {
  const int lda = (ta ? K : M) + 3, ldb = K + 2, ldc = M + 5;
  const auto A = random_floats(size_t(lda) * (ta ? M : K), 21), B = random_floats(size_t(ldb) * N, 22);
  auto C = random_floats(size_t(ldc) * N, 23);
  const auto expected = reference_gemm(ta, false, M, N, K, 0.5f, A, lda, B, ldb, beta, C, ldc);
  if (beta == 0.f)
    for (int j = 0; j < N; ++j) C[size_t(j) * ldc] = std::numeric_limits<float>::quiet_NaN();
  if (ta)
    gemm_skinny_tn(isa, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  else
    gemm_skinny_nn(isa, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  for (int j = 0; j < N; ++j) {
    for (int i = 0; i < M; ++i)
      ASSERT_NEAR(C[i + j * ldc], expected[i + j * ldc], 1e-5 * (K + 4))
          << "isa=" << int(isa) << " ta=" << ta << " M=" << M << " N=" << N << " K=" << K << " beta=" << beta
          << " at " << i << "," << j;
    for (int i = M; i < ldc && i + j * ldc < int(C.size()); ++i) ASSERT_EQ(C[i + j * ldc], expected[i + j * ldc]);
  }
}

TEST(GemmSkinny, ProductsMatchTheReference) {
  for (SkinnyIsa isa : skinny_isas())
    for (float beta : {0.f, 1.f, 2.f}) {
      for (int M : {1, 7, 8, 16, 17, 47, 48, 49, 97, 130})
        for (int N : {1, 2, 5, 8, 9, 16, 25})
          for (int K : {1, 3, 64}) check_skinny(isa, false, M, N, K, beta);
      for (int M : {1, 3, 8, 9, 17, 26})
        for (int N : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 25, 32, 33})
          for (int K : {1, 15, 255, 257, 600}) check_skinny(isa, true, M, N, K, beta);
    }
  if (skinny_isas().empty()) GTEST_SKIP() << "no AVX2: gemm routes every product to oneDNN";
}

// The shapes gemm routes to the skinny kernels (an output layer's W·B and Wᵀ·G, on one thread and split
// over two: 9.6M multiply-adds), and Wᵀ·G through gemm_tn_unchanged, which multiplies W as it is for them
// (no copy).
TEST(GemmSkinny, RoutedProductsMatchTheReference) {
  const int M = 2000, N = 16, K = 300, lda = M + 3, ldb = K + 1, ldc = M + 2;
  const auto W = random_floats(size_t(lda) * K, 31), X = random_floats(size_t(ldb) * N, 32);
  const auto G = random_floats(size_t(lda) * N, 33);
  for (int threads : {1, 2}) {
    ThreadCount tc(threads);
    auto C = random_floats(size_t(ldc) * N, 34);
    auto expected = reference_gemm(false, false, M, N, K, 1.f, W, lda, X, ldb, 1.f, C, ldc);
    gemm(false, false, M, N, K, 1.f, W.data(), lda, X.data(), ldb, 1.f, C.data(), ldc);
    for (size_t i = 0; i < C.size(); ++i) ASSERT_NEAR(C[i], expected[i], 2e-3) << "W·X threads=" << threads;
    for (int pass = 0; pass < 3; ++pass) {
      const TransposeScope scope;
      auto D = random_floats(size_t(ldb) * N, 35);
      expected = reference_gemm(true, false, K, N, M, 0.5f, W, lda, G, lda, 1.f, D, ldb);
      gemm_tn_unchanged(K, N, M, 0.5f, W.data(), lda, G.data(), lda, 1.f, D.data(), ldb);
      gemm_tn_unchanged(K, N, M, 0.5f, W.data(), lda, G.data(), lda, 0.f, D.data(), ldb);  // the second use
      expected = reference_gemm(true, false, K, N, M, 0.5f, W, lda, G, lda, 0.f, expected, ldb);
      for (size_t i = 0; i < D.size(); ++i) ASSERT_NEAR(D[i], expected[i], 2e-3) << "Wᵀ·G threads=" << threads;
    }
  }
}

// Wᵀ·G with few columns and a W small enough to stay in cache (a Tree-LSTM's 640x128 gates weight):
// gemm_tn_unchanged multiplies its transposed copy from the second use on, where the skinny kernel
// takes the first.
TEST(GemmSkinny, CachedTransposedProductsMatchTheReference) {
  const int M = 128, K = 640, lda = K + 5;
  const auto W = random_floats(size_t(lda) * M, 41);
  const TransposeScope scope;
  for (int N : {2, 5, 16, 31}) {
    const auto G = random_floats(size_t(K) * N, 42 + N);
    for (int use = 0; use < 2; ++use) {
      auto C = random_floats(size_t(M) * N, 43);
      const auto expected = reference_gemm(true, false, M, N, K, 1.f, W, lda, G, K, float(use), C, M);
      gemm_tn_unchanged(M, N, K, 1.f, W.data(), lda, G.data(), K, float(use), C.data(), M);
      for (size_t i = 0; i < C.size(); ++i) ASSERT_NEAR(C[i], expected[i], 2e-3) << "N=" << N << " use " << use;
    }
  }
}

TEST(Gemm, LeavesTheCallersThreadCountAsItWas) {
  ThreadCount tc(3);
  const auto A = random_floats(800 * 300, 4), B = random_floats(300 * 64, 5);
  std::vector<float> C(800 * 64);
  gemm(false, false, 800, 64, 300, 1.f, A.data(), 800, B.data(), 300, 0.f, C.data(), 800);
  EXPECT_EQ(omp_get_max_threads(), 3);
}

TEST(ParallelChunks, RunsEveryChunkOnce) {
  for (int threads : {1, 2, 4}) {
    std::vector<std::atomic<int>> hits(97);
    parallel_chunks(97, threads, [&](int i) { hits[i].fetch_add(1); });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ParallelChunks, CallsFromManyThreadsAtOnce) {
  // One caller owns the helpers at a time; the others run their chunks alone. Every job completes.
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int job = 0; job < 200; ++job) parallel_chunks(8, 3, [&](int i) { total.fetch_add(i + 1); });
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), 4L * 200 * 36);
}

TEST(ParallelChunks, RethrowsAChunksException) {
  std::atomic<int> ran{0};
  EXPECT_THROW(parallel_chunks(64, 2,
                               [&](int i) {
                                 ran.fetch_add(1);
                                 if (i == 5) throw std::runtime_error("chunk 5 failed");
                               }),
               std::runtime_error);
  EXPECT_LE(ran.load(), 64);
  // The pool is usable afterwards.
  std::atomic<int> after{0};
  parallel_chunks(10, 2, [&](int) { after.fetch_add(1); });
  EXPECT_EQ(after.load(), 10);
}

// The gate activations against libm in double precision, over the whole float range that matters
// (and beyond it, where they saturate), plus NaN propagation.
TEST(LstmKernels, GateActivationsMatchLibm) {
  const int H = 300, B = 4;  // 1200 logistic and 400 tanh values per column set
  std::vector<float> x;
  for (int k = 0; k < 4 * H * B; ++k) x.push_back(-30.f + 60.f * float(k) / float(4 * H * B));
  const std::vector<float> special = {0.f, -0.f, 1e-30f, -1e-7f, 0.2499f, 0.25f, 0.2501f, 20.f, -20.f, 100.f, -100.f, 1e30f, -1e30f,
                                      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  for (size_t k = 0; k < special.size(); ++k) {
    x[k] = special[k];          // logistic rows of column 0
    x[3 * H + k] = special[k];  // tanh rows of column 0
  }
  // A bias on every row but those of the special values; the forget rows [H, 2H) get 1 more.
  std::vector<float> bias = random_floats(4 * H, 3), y = x;
  for (size_t k = 0; k < special.size(); ++k) bias[k] = bias[3 * H + k] = 0.f;
  lstm_activate_gates(y.data(), bias.data(), H, B);
  for (int b = 0; b < B; ++b)
    for (int r = 0; r < 4 * H; ++r) {
      const float add = r >= H && r < 2 * H ? bias[r] + 1.f : bias[r];
      const double in = x[b * 4 * H + r] + add;  // the sum rounded to float, as the kernel takes it
      const double expect = r < 3 * H ? 1.0 / (1.0 + std::exp(-in)) : std::tanh(in);
      const double got = y[b * 4 * H + r];
      EXPECT_LE(std::abs(got - expect), 3e-7 * std::abs(expect) + 1e-37) << "x = " << in << (r < 3 * H ? " (logistic)" : " (tanh)");
    }
  std::vector<float> nan(4 * 2, std::numeric_limits<float>::quiet_NaN()), zero(4 * 2, 0.f);
  lstm_activate_gates(nan.data(), zero.data(), 2, 1);
  for (float v : nan) EXPECT_TRUE(std::isnan(v));
}

TEST(LstmKernels, CellKernelsMatchTheFormulas) {
  const int H = 37;  // not a multiple of any vector width
  const auto gates = random_floats(4 * H, 7), c_prev = random_floats(H, 8), dc = random_floats(H, 9),
             dh = random_floats(H, 10);
  const float *i = gates.data(), *f = i + H, *o = i + 2 * H, *g = i + 3 * H;
  std::vector<float> c(H), tanh_c(H), h(H);
  lstm_c_forward(gates.data(), 0, c_prev.data(), 0, c.data(), H, 1);
  lstm_h_forward(gates.data(), 0, c.data(), 0, tanh_c.data(), h.data(), H, 1);
  // The backward kernels add to what the gradients hold, or (assign) write them: NaN beforehand, so
  // an element left unwritten shows. `h_first`: which of the two kernels into dgates runs first.
  std::vector<float> dgates;
  for (const bool assign : {false, true})
    for (const bool h_first : {false, true}) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> dc_prev(H, assign ? nan : 0.5f), dgates_(4 * H, assign ? nan : 0.25f),
          dc_from_h(H, assign ? nan : -1.f);
      const double base_c = assign ? 0 : 0.5, base_g = assign ? 0 : 0.25, base_h = assign ? 0 : -1;
      lstm_c_backward_c(gates.data(), 0, dc.data(), dc_prev.data(), 0, H, 1, assign);
      lstm_h_backward_c(gates.data(), 0, tanh_c.data(), dh.data(), dc_from_h.data(), 0, H, 1, assign);
      if (h_first) lstm_h_backward_gates(tanh_c.data(), dh.data(), dgates_.data(), 0, H, 1, assign);
      lstm_c_backward_gates(gates.data(), 0, c_prev.data(), 0, dc.data(), dgates_.data(), 0, H, 1, assign && !h_first);
      if (!h_first) lstm_h_backward_gates(tanh_c.data(), dh.data(), dgates_.data(), 0, H, 1, false);
      for (int k = 0; k < H; ++k) {
        const double ck = double(i[k]) * g[k] + double(f[k]) * c_prev[k], t = std::tanh(ck);
        EXPECT_NEAR(c[k], ck, 1e-6);
        EXPECT_NEAR(tanh_c[k], t, 1e-6);
        EXPECT_NEAR(h[k], o[k] * t, 1e-6);
        EXPECT_NEAR(dc_prev[k], base_c + dc[k] * f[k], 1e-6);
        EXPECT_NEAR(dgates_[k], base_g + dc[k] * g[k], 1e-6);           // di
        EXPECT_NEAR(dgates_[H + k], base_g + dc[k] * c_prev[k], 1e-6);  // df
        EXPECT_NEAR(dgates_[2 * H + k], base_g + dh[k] * t, 1e-6);      // do
        EXPECT_NEAR(dgates_[3 * H + k], base_g + dc[k] * i[k], 1e-6);   // dg
        EXPECT_NEAR(dc_from_h[k], base_h + dh[k] * o[k] * (1 - t * t), 1e-6);
      }
      if (!assign) dgates = dgates_;
    }
  std::vector<float> y(4 * H), d(4 * H);
  for (int k = 0; k < 4 * H; ++k) y[k] = k < 3 * H ? 0.5f + 0.4f * gates[k] : 0.9f * gates[k];
  lstm_gates_grad(y.data(), dgates.data(), d.data(), H, 1);
  for (int k = 0; k < 4 * H; ++k) {
    const double dy = dgates[k], yk = y[k];
    EXPECT_NEAR(d[k], k < 3 * H ? dy * yk * (1 - yk) : dy * (1 - yk * yk), 1e-6);
  }
}

TEST(LstmKernels, BiasGradientSumsTheColumns) {
  const int H = 5, B = 3;  // 4H = 20: not a multiple of any vector width
  const auto d = random_floats(4 * H * B, 11);
  for (const bool assign : {false, true}) {
    std::vector<float> db(4 * H, assign ? std::numeric_limits<float>::quiet_NaN() : 0.5f);
    lstm_bias_grad(d.data(), H, B, db.data(), assign);
    for (int k = 0; k < 4 * H; ++k) {
      double expect = assign ? 0 : 0.5;
      for (int b = 0; b < B; ++b) expect += d[b * 4 * H + k];
      EXPECT_NEAR(db[k], expect, 1e-6);
    }
  }
  // lstm_gates_grad's col_sum: the same sums of the d it writes, in the same order (so bitwise equal to
  // lstm_bias_grad's assignment), with d itself unchanged by asking for them.
  for (const int cols : {1, B}) {
    const auto y = random_floats(4 * H * cols, 12), dy = random_floats(4 * H * cols, 13);
    std::vector<float> d_plain(4 * H * cols), d(4 * H * cols), sum(4 * H, std::numeric_limits<float>::quiet_NaN()),
        db(4 * H);
    lstm_gates_grad(y.data(), dy.data(), d_plain.data(), H, cols);
    lstm_gates_grad(y.data(), dy.data(), d.data(), H, cols, sum.data());
    EXPECT_EQ(d, d_plain);
    lstm_bias_grad(d.data(), H, cols, db.data(), true);
    for (int k = 0; k < 4 * H; ++k) EXPECT_EQ(sum[k], db[k]) << "columns " << cols << " row " << k;
  }
}

// e^x against libm over the range the softmax and gate kernels use, and its edges: 0 below -87 (and for
// -inf, so masked-out scores get zero probability), NaN propagates.
TEST(ExpKernel, MatchesLibm) {
  for (int k = 0; k <= 200000; ++k) {
    const float x = -87.f + 175.f * float(k) / 200000.f;
    const double expect = std::exp(double(x));
    EXPECT_LE(std::abs(exp_clamped(x) - expect), 2.5e-7 * expect) << "x = " << x;
  }
  EXPECT_EQ(exp_clamped(0.f), 1.f);
  EXPECT_EQ(exp_clamped(-87.5f), 0.f);
  EXPECT_EQ(exp_clamped(-1e30f), 0.f);
  EXPECT_EQ(exp_clamped(-std::numeric_limits<float>::infinity()), 0.f);
  EXPECT_TRUE(std::isnan(exp_clamped(std::numeric_limits<float>::quiet_NaN())));
}

// The column kernels of softmax / log_softmax / pickneglogsoftmax against double-precision sums, for
// lengths around the vector width (remainders handled) and a 10k-word column.
TEST(SoftmaxKernels, MatchDoublePrecision) {
  for (long n : {1L, 7L, 16L, 17L, 33L, 10000L}) {
    std::vector<float> x = random_floats(size_t(n), unsigned(n));
    for (float& v : x) v *= 20.f;
    double m = -INFINITY;
    for (float v : x) m = std::max(m, double(v));
    EXPECT_EQ(max_of(x.data(), n), float(m)) << n;
    // e^d with d = x - max rounded to float, as the kernels take it (that rounding alone is ~1e-6 relative)
    auto e_of = [&](float v) { return std::exp(double(v - float(m))); };
    double s = 0;
    for (float v : x) s += e_of(v);
    std::vector<float> y(size_t(n), -1.f);
    EXPECT_NEAR(sum_exp(x.data(), n, float(m), nullptr), s, 1e-6 * s) << n;
    EXPECT_NEAR(sum_exp(x.data(), n, float(m), y.data()), s, 1e-6 * s) << n;
    std::vector<float> acc(size_t(n), 0.5f);
    add_scaled_exp(x.data(), n, float(m), -2.f, acc.data());
    for (long i = 0; i < n; ++i) {
      const double e = e_of(x[i]);
      EXPECT_NEAR(y[i], e, 3e-7 * e) << n << " " << i;
      EXPECT_NEAR(acc[i], 0.5 - 2 * e, 1e-6) << n << " " << i;
    }
  }
  // A masked-out score (-inf) is skipped by the max and contributes exactly zero; a NaN spreads.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> masked = {1.f, -inf, 2.f, -inf, 0.5f};
  std::vector<float> p(masked.size());
  EXPECT_EQ(max_of(masked.data(), 5), 2.f);
  const float s = sum_exp(masked.data(), 5, 2.f, p.data());
  EXPECT_NEAR(s, std::exp(-1.0) + 1 + std::exp(-1.5), 1e-6);
  EXPECT_EQ(p[1], 0.f);
  EXPECT_EQ(p[3], 0.f);
  EXPECT_EQ(max_of(masked.data(), 0), -inf);
  std::vector<float> with_nan(40, 1.f);
  with_nan[37] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(sum_exp(with_nan.data(), 40, max_of(with_nan.data(), 40), nullptr)));
}

// The logistic and tanh ops' kernels against libm in double precision (the range where they do not
// saturate, the edges of tanh's two formulas, saturation, NaN), and their gradients against the formulas.
TEST(ActivationKernels, MatchLibm) {
  std::vector<float> x;
  for (int k = 0; k <= 20000; ++k) x.push_back(-30.f + 60.f * float(k) / 20000.f);
  for (float s : {0.f, -0.f, 1e-30f, -1e-7f, 0.2499f, 0.25f, -0.2501f, 100.f, -100.f, 1e30f, -1e30f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()})
    x.push_back(s);
  const size_t n = x.size();  // not a multiple of any vector width
  std::vector<float> s(n), t(n);
  logistic_forward(x.data(), s.data(), n);
  tanh_forward(x.data(), t.data(), n);
  for (size_t k = 0; k < n; ++k) {
    const double in = x[k], es = 1.0 / (1.0 + std::exp(-in)), et = std::tanh(in);
    EXPECT_LE(std::abs(s[k] - es), 3e-7 * es + 1e-37) << "logistic, x = " << in;
    EXPECT_LE(std::abs(t[k] - et), 3e-7 * std::abs(et)) << "tanh, x = " << in;
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float out = 0.f;
  logistic_forward(&nan, &out, 1);
  EXPECT_TRUE(std::isnan(out));
  tanh_forward(&nan, &out, 1);
  EXPECT_TRUE(std::isnan(out));

  const auto y = random_floats(37, 11), g = random_floats(37, 12);
  std::vector<float> ds(37, 0.5f), dt(37, -0.25f);
  logistic_backward(y.data(), g.data(), ds.data(), 37);
  tanh_backward(y.data(), g.data(), dt.data(), 37);
  for (int k = 0; k < 37; ++k) {
    EXPECT_NEAR(ds[k], 0.5 + double(g[k]) * y[k] * (1 - y[k]), 1e-6);
    EXPECT_NEAR(dt[k], -0.25 + double(g[k]) * (1 - double(y[k]) * y[k]), 1e-6);
  }
}

}  // namespace
}  // namespace dynet::cpu
