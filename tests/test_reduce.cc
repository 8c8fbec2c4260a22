// Hand-computed values for the reductions, batch/selection manipulation, noise and one-hot inputs
// (the generic harness in test_ops.cc checks shapes and gradients against finite differences;
// these check the numbers and the DyNet-specific conventions themselves).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/expr.h"
#include "dynet/init.h"
#include "op_test_util.h"

namespace dynet {
namespace {

using test::expect_values;
using test::error_of;

std::vector<float> iota(unsigned n, float from = 1.f) {
  std::vector<float> v(n);
  for (unsigned k = 0; k < n; ++k) v[k] = from + float(k);
  return v;
}

// ---- moments and standard deviations ----
TEST(ReduceValues, MomentAndStdOfElements) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 2}, 2), {1.f, 2.f, 3.f, 4.f, 2.f, 2.f, 2.f, 2.f});
  Expression m2 = moment_elems(x, 2);
  EXPECT_EQ(m2.dim(), Dim({1}, 2));
  expect_values(m2.value(), {7.5f, 4.f});                      // (1+4+9+16)/4, 16/4
  expect_values(moment_elems(x, 3).value(), {25.f, 8.f});      // (1+8+27+64)/4, 32/4
  expect_values(moment_elems(x, 1).value(), {2.5f, 2.f});
  // Population standard deviation: sqrt(((1.5)² + (0.5)² + (0.5)² + (1.5)²) / 4) = sqrt(1.25).
  Expression s = std_elems(x);
  expect_values(s.value(), {std::sqrt(1.25f), 0.f});
  // A constant batch element has σ = 0 and passes no gradient (instead of 0/0).
  g.backward(sum_elems(s), true);
  const float inv = 1.f / (4.f * std::sqrt(1.25f));
  expect_values(x.gradient(), {-1.5f * inv, -0.5f * inv, 0.5f * inv, 1.5f * inv, 0.f, 0.f, 0.f, 0.f});
}

TEST(ReduceValues, MomentsOverTheBatch) {
  ComputationGraph g;
  // batch elements [1 2], [3 4], [5 6]
  Expression x = input(g, Dim({2}, 3), iota(6));
  Expression mean = mean_batches(x);
  EXPECT_EQ(mean.dim(), Dim({2}));
  expect_values(mean.value(), {3.f, 4.f});
  expect_values(moment_batches(x, 2).value(), {35.f / 3.f, 56.f / 3.f});
  expect_values(std_batches(x).value(), {std::sqrt(8.f / 3.f), std::sqrt(8.f / 3.f)});
  // An unbatched input is its own mean and has σ = 0.
  Expression u = input(g, Dim({2}), {4.f, -1.f});
  expect_values(mean_batches(u).value(), {4.f, -1.f});
  expect_values(std_batches(u).value(), {0.f, 0.f});
  EXPECT_NE(error_of([&] { moment_batches(x, 0); }).find("moment_batches"), std::string::npos);
}

TEST(ReduceValues, SumDimOverDimsAndBatch) {
  ComputationGraph g;
  // batch 0 = [[1 3 5], [2 4 6]], batch 1 = [[7 9 11], [8 10 12]]
  Expression x = input(g, Dim({2, 3}, 2), iota(12));
  Expression cols = sum_dim(x, {1});
  EXPECT_EQ(cols.dim(), Dim({2}, 2));
  expect_values(cols.value(), {9.f, 12.f, 27.f, 30.f});
  Expression cols_b = sum_dim(x, {1}, true);
  EXPECT_EQ(cols_b.dim(), Dim({2}));
  expect_values(cols_b.value(), {36.f, 42.f});
  Expression rows_b = sum_dim(x, {0}, true);
  EXPECT_EQ(rows_b.dim(), Dim({3}));
  expect_values(rows_b.value(), {18.f, 26.f, 34.f});
  Expression batch = sum_dim(x, {}, true);
  EXPECT_EQ(batch.dim(), Dim({2, 3}));
  expect_values(batch.value(), {8.f, 10.f, 12.f, 14.f, 16.f, 18.f});
  Expression all = sum_dim(x, {0, 1}, true);
  EXPECT_EQ(all.dim().size(), 1u);
  expect_values(all.value(), {78.f});
  // Every input value reaches one output, so the gradient of Σ y is all ones.
  g.backward(sum_elems(cols_b), true);
  expect_values(x.gradient(), std::vector<float>(12, 1.f));
}

TEST(ReduceValues, SumRowsAndSumColsFollowDyNet) {
  // DyNet: sum_rows(x) = sum_dim(x, {0}) (adds the rows up), sum_cols(x) = sum_dim(x, {1}).
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}), iota(6));  // [[1 3 5], [2 4 6]]
  Expression r = sum_rows(x);
  EXPECT_EQ(r.dim(), Dim({3}));
  expect_values(r.value(), {3.f, 7.f, 11.f});
  Expression c = sum_cols(x);
  EXPECT_EQ(c.dim(), Dim({2}));
  expect_values(c.value(), {9.f, 12.f});
  expect_values(average_cols(x).value(), {3.f, 4.f});
}

TEST(ReduceValues, MeanMomentAndStdDimWithOverriddenN) {
  ComputationGraph g;
  // Columns [1 2 3 0] and [5 6 0 0]: zeros are padding, n = 3 divides as if only 3 values counted.
  Expression x = input(g, Dim({4, 2}), {1.f, 2.f, 3.f, 0.f, 5.f, 6.f, 0.f, 0.f});
  expect_values(mean_dim(x, {0}).value(), {1.5f, 2.75f});
  expect_values(mean_dim(x, {0}, false, 3).value(), {2.f, 11.f / 3.f});
  expect_values(moment_dim(x, {0}, 2, false, 2).value(), {7.f, 30.5f});  // (1+4+9)/2, (25+36)/2
  // std_dim with n: μ = Σx/n and σ² = Σ(x-μ)²/n over every value, as in DyNet.
  Expression v = input(g, Dim({3}), {1.f, 2.f, 0.f});
  Expression s = std_dim(v, {0}, false, 2);
  expect_values(s.value(), {std::sqrt(1.375f)});
  // ∂σ/∂x_i = [(x_i - μ) - μ(n - N)/n] / (nσ) with μ = 1.5, n = 2, N = 3.
  g.backward(s, true);
  const float sigma = std::sqrt(1.375f), shift = 1.5f * (2.f - 3.f) / 2.f;
  expect_values(v.gradient(), {(-0.5f - shift) / (2.f * sigma), (0.5f - shift) / (2.f * sigma),
                               (-1.5f - shift) / (2.f * sigma)});
}

TEST(ReduceValues, MomentDimAcrossTheBatch) {
  ComputationGraph g;
  Expression x = input(g, Dim({2}, 2), {1.f, 2.f, 3.f, 4.f});
  Expression m = moment_dim(x, {0}, 2, true);
  EXPECT_EQ(m.dim(), Dim({1}));
  expect_values(m.value(), {7.5f});
  Expression s = std_dim(x, {}, true);  // per position over the batch: {1,3} and {2,4}
  EXPECT_EQ(s.dim(), Dim({2}));
  expect_values(s.value(), {1.f, 1.f});
  Expression mb = mean_dim(x, {0}, false);
  EXPECT_EQ(mb.dim(), Dim({1}, 2));
  expect_values(mb.value(), {1.5f, 3.5f});
}

TEST(ReduceValues, DimListErrorsNameTheOp) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}), iota(6));
  EXPECT_NE(error_of([&] { sum_dim(x, {3}); }).find("sum_dim: dim 3 out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { mean_dim(x, {0, 0}); }).find("mean_dim: dim 0 is listed twice"), std::string::npos);
  EXPECT_NE(error_of([&] { std_dim(x, {}); }).find("std_dim: nothing to reduce"), std::string::npos);
  EXPECT_NE(error_of([&] { moment_dim(x, {0}, 0); }).find("moment_dim"), std::string::npos);
  EXPECT_NE(error_of([&] { average_cols(reshape(x, Dim({1, 2, 3}))); }).find("average_cols"), std::string::npos);
  EXPECT_NE(error_of([&] { std_elems(Expression()); }).find("std_elems"), std::string::npos);
  EXPECT_NE(error_of([&] { pick_batch_elems(Expression(), {0}); }).find("pick_batch_elems"), std::string::npos);
  // DyNet accepts dim == nd (an implicit dim of size 1): the identity.
  expect_values(sum_dim(x, {2}).value(), iota(6));
}

// ---- cumsum, min/max, logsumexp ----
TEST(ReduceValues, Cumsum) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}), iota(6));  // [[1 3 5], [2 4 6]]
  expect_values(cumsum(x, 0).value(), {1.f, 3.f, 3.f, 7.f, 5.f, 11.f});
  Expression c1 = cumsum(x, 1);
  expect_values(c1.value(), {1.f, 2.f, 4.f, 6.f, 9.f, 12.f});
  // Column j of the input feeds columns j.. of the output: gradient of Σ y is (3, 2, 1) per row.
  g.backward(sum_elems(c1), true);
  expect_values(x.gradient(), {3.f, 3.f, 2.f, 2.f, 1.f, 1.f});
  Expression b = input(g, Dim({3}, 2), {1.f, 1.f, 1.f, 2.f, 0.f, -2.f});
  expect_values(cumsum(b, 0).value(), {1.f, 2.f, 3.f, 2.f, 2.f, 0.f});
}

TEST(ReduceValues, MinDimAndLogSumExpDim) {
  ComputationGraph g;
  // [[1 5 2], [4 0 3]]
  Expression x = input(g, Dim({2, 3}), {1.f, 4.f, 5.f, 0.f, 2.f, 3.f});
  Expression m0 = min_dim(x, 0);
  expect_values(m0.value(), {1.f, 0.f, 2.f});
  expect_values(min_dim(x, 1).value(), {1.f, 0.f});
  g.backward(sum_elems(m0), true);
  expect_values(x.gradient(), {1.f, 0.f, 0.f, 1.f, 1.f, 0.f});

  ComputationGraph h;
  Expression y = input(h, Dim({2, 2}), {0.f, 1000.f, 0.f, 1000.f});  // [[0 0], [1000 1000]]
  const float ln2 = std::log(2.f);
  expect_values(logsumexp_dim(y, 1).value(), {ln2, 1000.f + ln2}, 1e-3f);
  Expression l0 = logsumexp_dim(y, 0);
  expect_values(l0.value(), {1000.f, 1000.f}, 1e-3f);
  // The gradient is the softmax along the reduced dim.
  Expression z = input(h, Dim({3}), {1.f, 2.f, 3.f});
  Expression lz = logsumexp_dim(z, 0);
  expect_values(lz.value(), {3.40760596f});
  h.backward(lz, true);
  expect_values(z.gradient(), {0.09003057f, 0.24472847f, 0.66524096f});
}

// ---- k-max pooling and fold_rows ----
TEST(ReduceValues, KMaxPoolingKeepsTheOriginalOrder) {
  ComputationGraph g;
  // Two rows: [3 1 4 1 5] and [9 2 6 5 3]; the 3 largest of each row, left to right.
  Expression x = input(g, Dim({2, 5}), {3.f, 9.f, 1.f, 2.f, 4.f, 6.f, 1.f, 5.f, 5.f, 3.f});
  Expression y = kmax_pooling(x, 3);
  EXPECT_EQ(y.dim(), Dim({2, 3}));
  expect_values(y.value(), {3.f, 9.f, 4.f, 6.f, 5.f, 5.f});
  g.backward(sum_elems(y), true);
  expect_values(x.gradient(), {1.f, 1.f, 0.f, 0.f, 1.f, 1.f, 0.f, 1.f, 1.f, 0.f});

  // Ties go to the earlier index; pooling along dim 0 of a batched input.
  ComputationGraph h;
  Expression t = input(h, Dim({4}, 2), {2.f, 2.f, 1.f, 2.f, -1.f, 7.f, 7.f, 0.f});
  Expression p = kmax_pooling(t, 2, 0);
  EXPECT_EQ(p.dim(), Dim({2}, 2));
  expect_values(p.value(), {2.f, 2.f, 7.f, 7.f});
  h.backward(sum_elems(sum_batches(cmult(p, input(h, Dim({2}), {1.f, 10.f})))), true);
  expect_values(t.gradient(), {1.f, 10.f, 0.f, 0.f, 0.f, 1.f, 10.f, 0.f});
  EXPECT_NE(error_of([&] { kmax_pooling(t, 5, 0); }).find("kmax_pooling"), std::string::npos);
}

TEST(ReduceValues, FoldRowsSumsBlocksOfRows) {
  ComputationGraph g;
  Expression x = input(g, Dim({4, 2}), iota(8));  // columns [1 2 3 4] and [5 6 7 8]
  Expression y = fold_rows(x);
  EXPECT_EQ(y.dim(), Dim({2, 2}));
  expect_values(y.value(), {3.f, 7.f, 11.f, 15.f});
  expect_values(fold_rows(x, 4).value(), {10.f, 26.f});
  Expression w = input(g, Dim({2, 2}), {1.f, 2.f, 3.f, 4.f});
  g.backward(sum_elems(cmult(y, w)), true);
  expect_values(x.gradient(), {1.f, 1.f, 2.f, 2.f, 3.f, 3.f, 4.f, 4.f});
  EXPECT_NE(error_of([&] { fold_rows(x, 3); }).find("fold_rows"), std::string::npos);
}

// ---- batch elements and strided selection ----
TEST(BatchSelectValues, PickBatchElems) {
  ComputationGraph g;
  // batch elements [1 2], [3 4], [5 6]
  Expression x = input(g, Dim({2}, 3), iota(6));
  Expression one = pick_batch_elem(x, 1);
  EXPECT_EQ(one.dim(), Dim({2}));
  expect_values(one.value(), {3.f, 4.f});
  Expression many = pick_batch_elems(x, {2, 0, 2});
  EXPECT_EQ(many.dim(), Dim({2}, 3));
  expect_values(many.value(), {5.f, 6.f, 1.f, 2.f, 5.f, 6.f});
  // Element 2 is picked twice, element 1 never.
  g.backward(sum_elems(sum_batches(many)), true);
  expect_values(x.gradient(), {1.f, 1.f, 0.f, 0.f, 2.f, 2.f});
  EXPECT_NE(error_of([&] { pick_batch_elem(x, 3); }).find("pick_batch_elems: batch index 3 out of range"),
            std::string::npos);
}

TEST(BatchSelectValues, PickBatchElemPointersAreReadAtForwardTime) {
  ComputationGraph g;
  Expression x = input(g, Dim({2}, 3), iota(6));
  unsigned v = 0;
  std::vector<unsigned> vs = {1, 1};
  Expression one = pick_batch_elem(x, &v);
  Expression many = pick_batch_elems(x, &vs);
  expect_values(one.value(), {1.f, 2.f});
  expect_values(many.value(), {3.f, 4.f, 3.f, 4.f});
  v = 2;
  vs = {0, 2};
  expect_values(g.forward(one), {5.f, 6.f});
  expect_values(g.forward(many), {1.f, 2.f, 5.f, 6.f});
  v = 5;
  EXPECT_NE(error_of([&] { g.forward(one); }).find("pick_batch_elems"), std::string::npos);
}

TEST(BatchSelectValues, ConcatenateToBatch) {
  ComputationGraph g;
  Expression a = input(g, Dim({2}), {1.f, 2.f});
  Expression b = input(g, Dim({2}, 2), {3.f, 4.f, 5.f, 6.f});
  Expression y = concatenate_to_batch({a, b, a});
  EXPECT_EQ(y.dim(), Dim({2}, 4));
  expect_values(y.value(), {1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 1.f, 2.f});
  Expression w = input(g, Dim({2}, 4), iota(8));
  g.backward(sum_elems(sum_batches(cmult(y, w))), true);
  expect_values(a.gradient(), {1.f + 7.f, 2.f + 8.f});
  expect_values(b.gradient(), {3.f, 4.f, 5.f, 6.f});
  EXPECT_NE(error_of([&] { concatenate_to_batch({a, input(g, Dim({3}), {1.f, 2.f, 3.f})}); })
                .find("concatenate_to_batch"),
            std::string::npos);
  EXPECT_NE(error_of([&] { concatenate_to_batch(std::vector<Expression>{}); }).find("concatenate_to_batch"),
            std::string::npos);
}

TEST(BatchSelectValues, StridedSelect) {
  ComputationGraph g;
  // 4 x 3 matrix with x[i, j] = 10 i + j (column-major).
  std::vector<float> v;
  for (unsigned j = 0; j < 3; ++j)
    for (unsigned i = 0; i < 4; ++i) v.push_back(10.f * float(i) + float(j));
  Expression x = input(g, Dim({4, 3}), v);
  Expression rows = strided_select(x, {2});  // rows 0 and 2
  EXPECT_EQ(rows.dim(), Dim({2, 3}));
  expect_values(rows.value(), {0.f, 20.f, 1.f, 21.f, 2.f, 22.f});
  Expression y = strided_select(x, {2, 2}, {1, 0}, {4, 3});  // rows 1, 3; cols 0, 2
  EXPECT_EQ(y.dim(), Dim({2, 2}));
  expect_values(y.value(), {10.f, 30.f, 12.f, 32.f});
  g.backward(sum_elems(y), true);
  expect_values(x.gradient(), {0.f, 1.f, 0.f, 1.f, 0.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f, 1.f});
  // ceil((to - from) / stride): [1, 4) by 2 has 2 entries.
  expect_values(strided_select(x, {2, 1}, {1, 2}).value(), {12.f, 32.f});
  EXPECT_NE(error_of([&] { strided_select(x, {0}); }).find("strided_select: stride 0"), std::string::npos);
  EXPECT_NE(error_of([&] { strided_select(x, {1}, {3}, {2}); }).find("strided_select"), std::string::npos);
}

TEST(BatchSelectValues, StridedSelectOverTheBatch) {
  // The entry after the last dim addresses the batch: here every other batch element from 1.
  ComputationGraph g;
  Expression x = input(g, Dim({2}, 5), iota(10));  // [1 2], [3 4], [5 6], [7 8], [9 10]
  Expression y = strided_select(x, {1, 2}, {1, 1});
  EXPECT_EQ(y.dim(), Dim({1}, 2));
  expect_values(y.value(), {4.f, 8.f});
  g.backward(sum_elems(sum_batches(y)), true);
  expect_values(x.gradient(), {0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f});
  Expression all = strided_select(x, {}, {}, {2, 3});
  EXPECT_EQ(all.dim(), Dim({2}, 3));
  expect_values(all.value(), iota(6));
  EXPECT_NE(error_of([&] { strided_select(x, {1, 1, 1}); }).find("strided_select"), std::string::npos);
}

TEST(BatchSelectValues, PickRangeAliasAndPickAlongDims) {
  ComputationGraph g;
  Expression x = input(g, Dim({3, 2}), iota(6));  // [[1 4], [2 5], [3 6]]
  expect_values(pickrange(x, 1, 3).value(), {2.f, 3.f, 5.f, 6.f});
  unsigned col = 1;
  std::vector<unsigned> per_batch = {2, 0};
  Expression xb = input(g, Dim({3, 2}, 2), iota(12));
  expect_values(pick(x, &col, 1).value(), {4.f, 5.f, 6.f});
  expect_values(pick(xb, per_batch, 0).value(), {3.f, 6.f, 7.f, 10.f});
  const std::vector<unsigned> per_col = {1, 0};
  expect_values(pick(xb, &per_col, 1).value(), {4.f, 5.f, 6.f, 7.f, 8.f, 9.f});
}

// ---- structured dropout ----
TEST(NoiseValues, DropoutDimKeepsOrDropsWholeColumns) {
  const unsigned rows = 3, cols = 4000;
  const float p = 0.3f, scale = 1.f / (1.f - p);
  ComputationGraph g;
  Expression x = input(g, Dim({rows, cols}), std::vector<float>(rows * cols, 2.f));
  Expression y = dropout_dim(x, 0, p);  // the mask is shared along dim 0: whole columns
  reset_rng(11);
  const std::vector<float> v = as_vector(g.forward(y));
  unsigned kept = 0;
  for (unsigned c = 0; c < cols; ++c) {
    const float first = v[c * rows];
    EXPECT_TRUE(first == 0.f || std::fabs(first - 2.f * scale) < 1e-5f) << first;
    for (unsigned r = 1; r < rows; ++r) ASSERT_EQ(v[c * rows + r], first) << "column " << c;
    kept += first != 0.f;
  }
  EXPECT_NEAR(double(kept) / cols, 1.0 - p, 0.03);
  // Same seed, same mask; the gradient is the mask itself.
  reset_rng(11);
  EXPECT_EQ(as_vector(g.forward(y)), v);
  g.backward(sum_elems(y), true);
  const std::vector<float> grad = as_vector(x.gradient());
  for (size_t k = 0; k < v.size(); ++k) ASSERT_FLOAT_EQ(grad[k], v[k] / 2.f);
}

TEST(NoiseValues, DropoutDimAlongColumnsAndPerBatchElement) {
  ComputationGraph g;
  // d = 1: the mask is shared along each row; each batch element draws its own.
  Expression x = input(g, Dim({200, 3}, 2), std::vector<float>(1200, 1.f));
  reset_rng(5);
  const std::vector<float> v = as_vector(dropout_dim(x, 1, 0.5f).value());
  unsigned differ = 0;
  for (unsigned b = 0; b < 2; ++b)
    for (unsigned r = 0; r < 200; ++r) {
      const float* row = v.data() + b * 600 + r;
      EXPECT_EQ(row[200], row[0]);
      EXPECT_EQ(row[400], row[0]);
    }
  for (unsigned r = 0; r < 200; ++r) differ += v[r] != v[600 + r];
  EXPECT_GT(differ, 50u);  // independent masks agree on about half the rows
}

TEST(NoiseValues, DropoutBatchDropsWholeBatchElements) {
  const unsigned n = 4000;
  const float p = 0.4f;
  ComputationGraph g;
  Expression x = input(g, Dim({2}, n), std::vector<float>(2 * n, 1.f));
  Expression y = dropout_batch(x, p);
  reset_rng(3);
  const std::vector<float> v = as_vector(g.forward(y));
  unsigned kept = 0;
  for (unsigned b = 0; b < n; ++b) {
    ASSERT_EQ(v[2 * b], v[2 * b + 1]) << "batch element " << b;
    if (v[2 * b] != 0.f) {
      ++kept;
      EXPECT_NEAR(v[2 * b], 1.f / (1.f - p), 1e-5f);
    }
  }
  EXPECT_NEAR(double(kept) / n, 1.0 - p, 0.03);
  g.backward(sum_elems(sum_batches(y)), true);
  EXPECT_EQ(as_vector(x.gradient()), v);
  // p = 1 drops every element (zeros, as block_dropout); more than 1 is refused.
  expect_values(dropout_batch(x, 1.f).value(), std::vector<float>(v.size(), 0.f));
  EXPECT_NE(error_of([&] { dropout_batch(x, 1.5f); }).find("dropout_batch"), std::string::npos);
}

TEST(NoiseValues, BlockDropoutIsAllOrNothing) {
  const float p = 0.25f;
  ComputationGraph g;
  Expression x = input(g, Dim({3}, 2), {1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  Expression y = block_dropout(x, p);
  reset_rng(9);
  const unsigned trials = 4000;
  unsigned dropped = 0;
  for (unsigned t = 0; t < trials; ++t) {
    const std::vector<float> v = as_vector(g.forward(y));
    if (v[0] == 0.f) {
      ++dropped;
      for (float f : v) ASSERT_EQ(f, 0.f);
    } else {
      for (unsigned k = 0; k < 6; ++k) ASSERT_NEAR(v[k], float(k + 1) / (1.f - p), 1e-5f);
    }
  }
  EXPECT_NEAR(double(dropped) / trials, p, 0.03);
  // p = 1 always drops (and passes no gradient); p = 0 is the identity.
  Expression all = block_dropout(x, 1.f);
  expect_values(all.value(), std::vector<float>(6, 0.f));
  expect_values(block_dropout(x, 0.f).value(), {1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  g.backward(sum_elems(sum_batches(all)), true);
  expect_values(x.gradient(), std::vector<float>(6, 0.f));
  EXPECT_NE(error_of([&] { block_dropout(x, 1.5f); }).find("block_dropout"), std::string::npos);
}

// ---- inputs ----
TEST(InputValues, OneHot) {
  ComputationGraph g;
  Expression e = one_hot(g, 5, 3);
  EXPECT_EQ(e.dim(), Dim({5}));
  expect_values(e.value(), {0.f, 0.f, 0.f, 1.f, 0.f});
  Expression b = one_hot(g, 3, std::vector<unsigned>{2, 0});
  EXPECT_EQ(b.dim(), Dim({3}, 2));
  expect_values(b.value(), {0.f, 0.f, 1.f, 1.f, 0.f, 0.f});
  EXPECT_NE(error_of([&] { one_hot(g, 3, 3); }).find("one_hot: index 3 out of range"), std::string::npos);
}

TEST(InputValues, SparseInputFillsTheWholeBatch) {
  // Indices address the whole tensor, batch elements included.
  ComputationGraph g;
  Expression x = input(g, Dim({3}, 2), {0, 4}, {1.f, 1.f}, 0.5f);
  EXPECT_EQ(x.dim(), Dim({3}, 2));
  expect_values(x.value(), {1.f, 0.5f, 0.5f, 0.5f, 1.f, 0.5f});
  EXPECT_NE(error_of([&] { input(g, Dim({3}, 2), {6}, {1.f}); }).find("sparse_input"), std::string::npos);
}

}  // namespace
}  // namespace dynet
