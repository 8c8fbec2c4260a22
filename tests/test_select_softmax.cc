// Hand-computed values for the softmax, selection, reduction and noise/flow ops (the generic
// harness in test_ops.cc checks shapes and gradients; these check the numbers themselves).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/expr.h"
#include "op_test_util.h"

namespace dynet {
namespace {

using test::expect_values;
using test::error_of;

// ---- softmax family ----
TEST(SoftmaxValues, SoftmaxOfOneTwoThree) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), {1.f, 2.f, 3.f});
  expect_values(softmax(x).value(), {0.09003057f, 0.24472847f, 0.66524096f});
}

TEST(SoftmaxValues, SoftmaxIsShiftInvariantAndStable) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), {1001.f, 1002.f, 1003.f});
  expect_values(softmax(x).value(), {0.09003057f, 0.24472847f, 0.66524096f});
}

TEST(SoftmaxValues, SoftmaxAlongRows) {
  // x = [[1 2 3], [0 0 0]] (column-major); along dim 1 each row sums to 1.
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}), {1.f, 0.f, 2.f, 0.f, 3.f, 0.f});
  const float third = 1.f / 3.f;
  expect_values(softmax(x, 1).value(), {0.09003057f, third, 0.24472847f, third, 0.66524096f, third});
  // Along dim 0 every column is softmax([v, 0]).
  const float s1 = 1.f / (1.f + std::exp(-1.f)), s2 = 1.f / (1.f + std::exp(-2.f)), s3 = 1.f / (1.f + std::exp(-3.f));
  expect_values(softmax(x, 0).value(), {s1, 1 - s1, s2, 1 - s2, s3, 1 - s3});
}

TEST(SoftmaxValues, BatchedSoftmaxIsPerBatchElement) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}, 2), {1.f, 2.f, 3.f, 0.f, 0.f, 0.f});
  const float third = 1.f / 3.f;
  Expression y = softmax(x);
  EXPECT_EQ(y.dim(), Dim({3}, 2));
  expect_values(y.value(), {0.09003057f, 0.24472847f, 0.66524096f, third, third, third});
}

TEST(SoftmaxValues, LogSoftmax) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), {1.f, 2.f, 3.f});
  // log(e + e^2 + e^3) = 3.40760596
  expect_values(log_softmax(x).value(), {-2.40760596f, -1.40760596f, -0.40760596f});
}

TEST(SoftmaxValues, LogSumExpIsStable) {
  ComputationGraph g;
  Expression a = input(g, Dim({3}), {0.f, 1000.f, -1000.f});
  Expression b = input(g, Dim({3}), {0.f, 1000.f, 0.f});
  const float ln2 = std::log(2.f);
  expect_values(logsumexp({a, b}).value(), {ln2, 1000.f + ln2, 0.f}, 1e-4f);
}

TEST(SoftmaxValues, LogSumExpBroadcastsTheBatch) {
  ComputationGraph g;
  Expression a = input(g, Dim({2}, 2), {0.f, 1.f, 2.f, 3.f});
  Expression b = input(g, Dim({2}), {0.f, 1.f});
  Expression y = logsumexp({a, b});
  EXPECT_EQ(y.dim(), Dim({2}, 2));
  auto lse = [](float u, float v) { return std::log(std::exp(u) + std::exp(v)); };
  expect_values(y.value(), {lse(0, 0), lse(1, 1), lse(2, 0), lse(3, 1)});
}

TEST(SoftmaxValues, PickNegLogSoftmaxBatchedMatchesLogSoftmax) {
  ComputationGraph g;
  const std::vector<float> data = {1.f, 2.f, 3.f, 0.f, 0.f, 0.f, -1.f, 4.f, 0.5f};
  Expression x = input(g, Dim({3}, 3), data);
  const std::vector<unsigned> ids = {2, 1, 0};
  Expression loss = pickneglogsoftmax(x, ids);
  EXPECT_EQ(loss.dim(), Dim({1}, 3));
  const std::vector<float> ls = as_vector(log_softmax(x).value());
  expect_values(loss.value(), {-ls[0 * 3 + 2], -ls[1 * 3 + 1], -ls[2 * 3 + 0]});
  EXPECT_NEAR(as_vector(loss.value())[0], 0.40760596f, 1e-5f);
  EXPECT_NEAR(as_vector(loss.value())[1], std::log(3.f), 1e-5f);
}

TEST(SoftmaxValues, PickNegLogSoftmaxGradientIsSoftmaxMinusOneHot) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), {1.f, 2.f, 3.f});
  Expression loss = pickneglogsoftmax(x, 0u);
  g.backward(loss, true);
  expect_values(x.gradient(), {0.09003057f - 1.f, 0.24472847f, 0.66524096f});
}

TEST(SoftmaxValues, PickNegLogSoftmaxPointerIsReadAtForwardTime) {
  ComputationGraph g;
  unsigned v = 0;
  Expression x = input(g, Dim({3}), {1.f, 2.f, 3.f});
  Expression loss = pickneglogsoftmax(x, &v);
  EXPECT_NEAR(as_scalar(g.forward(loss)), 2.40760596f, 1e-5f);
  v = 2;
  EXPECT_NEAR(as_scalar(g.forward(loss)), 0.40760596f, 1e-5f);
  v = 3;
  const std::string msg = error_of([&] { g.forward(loss); });
  EXPECT_NE(msg.find("pickneglogsoftmax"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3"), std::string::npos) << msg;
}

TEST(SoftmaxValues, PickNegLogSoftmaxErrorsNameIndexAndDim) {
  ComputationGraph g;
  Expression x = input(g, Dim({4}), {1.f, 2.f, 3.f, 4.f});
  const std::string msg = error_of([&] { pickneglogsoftmax(x, 7u); });
  EXPECT_NE(msg.find("pickneglogsoftmax"), std::string::npos) << msg;
  EXPECT_NE(msg.find("7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4"), std::string::npos) << msg;
  Expression xb = input(g, Dim({4}, 2), std::vector<float>(8, 0.f));
  EXPECT_THROW(pickneglogsoftmax(xb, std::vector<unsigned>{1, 2, 3}), std::invalid_argument);
}

// ---- selection and shape ----
// x(r, c) = r + 2c for a {2,3} matrix: column-major data 0..5.
std::vector<float> iota(unsigned n, float start = 0.f) {
  std::vector<float> v(n);
  for (unsigned k = 0; k < n; ++k) v[k] = start + float(k);
  return v;
}

TEST(SelectValues, Pick) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}), iota(6));
  Expression row = pick(x, 1u, 0);
  EXPECT_EQ(row.dim(), Dim({3}));
  expect_values(row.value(), {1.f, 3.f, 5.f});
  Expression col = pick(x, 2u, 1);
  EXPECT_EQ(col.dim(), Dim({2}));
  expect_values(col.value(), {4.f, 5.f});
  Expression v = input(g, Dim({4}), iota(4, 10.f));
  Expression one = pick(v, 3u);
  EXPECT_EQ(one.dim(), Dim({1}));
  EXPECT_EQ(as_scalar(one.value()), 13.f);
}

TEST(SelectValues, PickPerBatchElement) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}, 2), iota(6));
  Expression y = pick(x, std::vector<unsigned>{2, 0});
  EXPECT_EQ(y.dim(), Dim({1}, 2));
  expect_values(y.value(), {2.f, 3.f});
  // An unbatched input with several indices gives a batch.
  Expression u = input(g, Dim({3}), iota(3, 5.f));
  Expression z = pick(u, std::vector<unsigned>{1, 2, 1});
  EXPECT_EQ(z.dim(), Dim({1}, 3));
  expect_values(z.value(), {6.f, 7.f, 6.f});
  g.backward(sum_batches(z), true);
  expect_values(u.gradient(), {0.f, 2.f, 1.f});
}

TEST(SelectValues, PickPointerIsReadAtForwardTime) {
  ComputationGraph g;
  unsigned v = 0;
  Expression x = input(g, Dim({3}), iota(3, 1.f));
  Expression y = pick(x, &v);
  EXPECT_EQ(as_scalar(g.forward(y)), 1.f);
  v = 2;
  EXPECT_EQ(as_scalar(g.forward(y)), 3.f);
}

TEST(SelectValues, PickErrorNamesIndexAndDim) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}), iota(6));
  const std::string msg = error_of([&] { pick(x, 5u, 1); });
  EXPECT_NE(msg.find("pick"), std::string::npos) << msg;
  EXPECT_NE(msg.find("5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("{2,3}"), std::string::npos) << msg;
}

TEST(SelectValues, PickRange) {
  ComputationGraph g;
  Expression x = input(g, Dim({5}), iota(5));
  expect_values(pick_range(x, 1, 4).value(), {1.f, 2.f, 3.f});
  Expression m = input(g, Dim({2, 3}), iota(6));
  Expression cols = pick_range(m, 1, 3, 1);
  EXPECT_EQ(cols.dim(), Dim({2, 2}));
  expect_values(cols.value(), {2.f, 3.f, 4.f, 5.f});
  Expression rows = pick_range(m, 1, 2, 0);
  EXPECT_EQ(rows.dim(), Dim({1, 3}));
  expect_values(rows.value(), {1.f, 3.f, 5.f});
  EXPECT_THROW(pick_range(x, 3, 3), std::invalid_argument);
  EXPECT_THROW(pick_range(x, 2, 6), std::invalid_argument);
}

TEST(SelectValues, Concatenate) {
  ComputationGraph g;
  Expression a = input(g, Dim({2}), {1.f, 2.f});
  Expression b = input(g, Dim({3}), {3.f, 4.f, 5.f});
  expect_values(concatenate({a, b}).value(), {1.f, 2.f, 3.f, 4.f, 5.f});
  Expression c = input(g, Dim({2}), {6.f, 7.f});
  Expression cols = concatenate_cols({a, c});
  EXPECT_EQ(cols.dim(), Dim({2, 2}));
  expect_values(cols.value(), {1.f, 2.f, 6.f, 7.f});
  // Rows of two matrices: [[0 2 4],[1 3 5]] over [[10 11 12]].
  Expression m = input(g, Dim({2, 3}), iota(6));
  Expression r = input(g, Dim({1, 3}), {10.f, 11.f, 12.f});
  Expression stacked = concatenate({m, r}, 0);
  EXPECT_EQ(stacked.dim(), Dim({3, 3}));
  expect_values(stacked.value(), {0.f, 1.f, 10.f, 2.f, 3.f, 11.f, 4.f, 5.f, 12.f});
  EXPECT_THROW(concatenate({m, r}, 1), std::invalid_argument);
}

TEST(SelectValues, ConcatenateBroadcastsUnbatchedArguments) {
  ComputationGraph g;
  Expression a = input(g, Dim({1}, 2), {1.f, 2.f});
  Expression b = input(g, Dim({2}), {8.f, 9.f});
  Expression y = concatenate({a, b});
  EXPECT_EQ(y.dim(), Dim({3}, 2));
  expect_values(y.value(), {1.f, 8.f, 9.f, 2.f, 8.f, 9.f});
  g.backward(sum_batches(sum_elems(y)), true);
  expect_values(b.gradient(), {2.f, 2.f});
  expect_values(a.gradient(), {1.f, 1.f});
}

TEST(SelectValues, ReshapeSharesMemoryAndKeepsBatch) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}, 2), iota(12));
  Expression y = reshape(x, Dim({3, 2}));
  EXPECT_EQ(y.dim(), Dim({3, 2}, 2));
  EXPECT_EQ(y.value().v, x.value().v);
  Expression flat = reshape(x, Dim({12}));
  EXPECT_EQ(flat.dim(), Dim({12}));
  Expression split = reshape(flat, Dim({6}, 2));
  EXPECT_EQ(split.dim(), Dim({6}, 2));
  expect_values(split.value(), iota(12));
  g.backward(sum_batches(sum_elems(y)), true);
  expect_values(x.gradient(), std::vector<float>(12, 1.f));
  EXPECT_THROW(reshape(x, Dim({5})), std::invalid_argument);
}

TEST(SelectValues, Transpose) {
  ComputationGraph g;
  Expression m = input(g, Dim({2, 3}), iota(6));
  Expression t = transpose(m);
  EXPECT_EQ(t.dim(), Dim({3, 2}));
  expect_values(t.value(), {0.f, 2.f, 4.f, 1.f, 3.f, 5.f});
  Expression v = input(g, Dim({3}), iota(3));
  EXPECT_EQ(transpose(v).dim(), Dim({1, 3}));
}

TEST(SelectValues, TransposeThreeDims) {
  // y(i, j, k) = x(dims[0]=k', ...): check y at every index against x's formula.
  ComputationGraph g;
  const unsigned d0 = 2, d1 = 3, d2 = 4;
  Expression x = input(g, Dim({d0, d1, d2}, 2), iota(2 * d0 * d1 * d2));
  Expression y = transpose(x, {2, 0, 1});
  ASSERT_EQ(y.dim(), Dim({d2, d0, d1}, 2));
  const std::vector<float> yv = as_vector(y.value());
  for (unsigned b = 0; b < 2; ++b)
    for (unsigned i = 0; i < d2; ++i)
      for (unsigned j = 0; j < d0; ++j)
        for (unsigned k = 0; k < d1; ++k) {
          const float want = float(b * d0 * d1 * d2 + j + d0 * (k + d1 * i));  // x(j, k, i)
          EXPECT_EQ(yv[b * d0 * d1 * d2 + i + d2 * (j + d0 * k)], want);
        }
  EXPECT_THROW(transpose(x, {0, 0, 1}), std::invalid_argument);
}

TEST(SelectValues, SelectRowsAndCols) {
  ComputationGraph g;
  Expression m = input(g, Dim({2, 3}), iota(6));
  Expression r = select_rows(m, std::vector<unsigned>{1, 1, 0});
  EXPECT_EQ(r.dim(), Dim({3, 3}));
  expect_values(r.value(), {1.f, 1.f, 0.f, 3.f, 3.f, 2.f, 5.f, 5.f, 4.f});
  Expression c = select_cols(m, std::vector<unsigned>{2, 0});
  EXPECT_EQ(c.dim(), Dim({2, 2}));
  expect_values(c.value(), {4.f, 5.f, 0.f, 1.f});
  // Repeated rows accumulate their gradients.
  g.backward(sum_elems(r), true);
  expect_values(m.gradient(), {1.f, 2.f, 1.f, 2.f, 1.f, 2.f});
  EXPECT_THROW(select_rows(m, std::vector<unsigned>{2}), std::invalid_argument);
  EXPECT_THROW(select_cols(m, std::vector<unsigned>{3}), std::invalid_argument);
}

TEST(SelectValues, SelectRowsPointerIsReadAtForwardTime) {
  ComputationGraph g;
  std::vector<unsigned> rows = {0, 1};
  Expression m = input(g, Dim({3}), iota(3, 1.f));
  Expression r = select_rows(m, &rows);
  expect_values(g.forward(r), {1.f, 2.f});
  rows = {2, 2};
  expect_values(g.forward(r), {3.f, 3.f});
  rows = {0, 3};
  EXPECT_THROW(g.forward(r), std::invalid_argument);
}

// ---- reductions ----
TEST(ReduceValues, SumMeanAndSumBatches) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 2}, 2), {1.f, 2.f, 3.f, 4.f, 10.f, 20.f, 30.f, 40.f});
  Expression s = sum_elems(x);
  EXPECT_EQ(s.dim(), Dim({1}, 2));
  expect_values(s.value(), {10.f, 100.f});
  expect_values(mean_elems(x).value(), {2.5f, 25.f});
  Expression sb = sum_batches(x);
  EXPECT_EQ(sb.dim(), Dim({2, 2}));
  expect_values(sb.value(), {11.f, 22.f, 33.f, 44.f});
}

TEST(ReduceValues, MaxDimRoutesGradientToArgmax) {
  ComputationGraph g;
  // [[1 5 2], [4 0 3]]
  Expression x = input(g, Dim({2, 3}), {1.f, 4.f, 5.f, 0.f, 2.f, 3.f});
  Expression m0 = max_dim(x, 0);
  EXPECT_EQ(m0.dim(), Dim({3}));
  expect_values(m0.value(), {4.f, 5.f, 3.f});
  Expression m1 = max_dim(x, 1);
  EXPECT_EQ(m1.dim(), Dim({2}));
  expect_values(m1.value(), {5.f, 4.f});
  g.backward(sum_elems(m0), true);
  expect_values(x.gradient(), {0.f, 1.f, 1.f, 0.f, 0.f, 1.f});
  EXPECT_THROW(max_dim(x, 2), std::invalid_argument);
}

// ---- noise and gradient flow ----
TEST(FlowValues, DropoutMaskStatistics) {
  const unsigned n = 20000;
  const float p = 0.3f;
  ComputationGraph g;
  Expression x = input(g, Dim({n}), std::vector<float>(n, 2.f));
  Expression y = dropout(x, p);
  reset_rng(42);
  const std::vector<float> first = as_vector(g.forward(y));
  unsigned kept = 0;
  for (float v : first) {
    if (v != 0.f) {
      ++kept;
      EXPECT_NEAR(v, 2.f / (1.f - p), 1e-5f);
    }
  }
  EXPECT_NEAR(double(kept) / n, 1.0 - p, 0.02);
  // The same seed gives the same mask; the gradient is the mask.
  reset_rng(42);
  EXPECT_EQ(as_vector(g.forward(y)), first);
  g.backward(sum_elems(y), true);
  const std::vector<float> grad = as_vector(x.gradient());
  for (unsigned k = 0; k < n; ++k) EXPECT_FLOAT_EQ(grad[k], first[k] / 2.f);
  // p = 1 drops everything: zeros and no gradient (DyNet gave 0 · 1/0 = NaN); p > 1 is refused.
  Expression none = dropout(x, 1.f);
  EXPECT_EQ(as_vector(none.value()), std::vector<float>(n, 0.f));
  EXPECT_THROW(dropout(x, 1.01f), std::invalid_argument);
}

TEST(FlowValues, NoiseHasTheRequestedSpread) {
  const unsigned n = 20000;
  ComputationGraph g;
  Expression x = input(g, Dim({n}), std::vector<float>(n, 1.f));
  reset_rng(7);
  const std::vector<float> v = as_vector(noise(x, 0.5f).value());
  double mean = 0, sq = 0;
  for (float f : v) mean += f;
  mean /= n;
  for (float f : v) sq += (f - mean) * (f - mean);
  EXPECT_NEAR(mean, 1.0, 0.02);
  EXPECT_NEAR(std::sqrt(sq / n), 0.5, 0.02);
}

TEST(FlowValues, NoBackpropStopsTheGradient) {
  ComputationGraph g;
  Expression x = input(g, Dim({2}), {1.f, 2.f});
  Expression y = concatenate({x, nobackprop(x)});
  expect_values(y.value(), {1.f, 2.f, 1.f, 2.f});
  g.backward(sum_elems(y), true);
  expect_values(x.gradient(), {1.f, 1.f});
}

TEST(FlowValues, ScaleGradient) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), {1.f, 2.f, 3.f});
  Expression y = scale_gradient(x, -0.5f);
  EXPECT_EQ(y.value().v, x.value().v);
  g.backward(sum_elems(y), true);
  expect_values(x.gradient(), {-0.5f, -0.5f, -0.5f});
}

}  // namespace
}  // namespace dynet
