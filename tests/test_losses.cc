// Hand-computed values and gradients for the softmax variants and the losses (the generic harness
// in test_ops.cc checks shapes and finite-difference gradients; these check the numbers themselves).
#include <gtest/gtest.h>

#include <cfloat>
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
using V = std::vector<float>;

// ---- restricted log_softmax ----
TEST(RestrictedLogSoftmax, ValuesAndMinusInfinityOutside) {
  ComputationGraph g;
  Expression x = input(g, Dim({4}), V{1, 2, 3, 4});
  Expression y = log_softmax(x, {0, 2});
  // log(e + e³) = 3 + log(1 + e⁻²) = 3.12692801
  const V v = as_vector(y.value());
  EXPECT_NEAR(v[0], -2.12692801f, 1e-5f);
  EXPECT_NEAR(v[2], -0.12692801f, 1e-5f);
  EXPECT_TRUE(std::isinf(v[1]) && v[1] < 0);
  EXPECT_TRUE(std::isinf(v[3]) && v[3] < 0);
  // d y[2] / dx = onehot(2) - softmax over {0, 2}; nothing reaches the rows outside
  g.backward(pick(y, 2u), true);
  expect_values(x.gradient(), {-0.11920292f, 0.f, 0.11920292f, 0.f});
}

TEST(RestrictedLogSoftmax, SingleRowIsZeroAndColumnsAreIndependent) {
  ComputationGraph g;
  Expression x = input(g, Dim({3, 2}), V{5, -1, 2, 0, 0, 0});
  const V v = as_vector(log_softmax(x, {1}).value());
  EXPECT_EQ(v[1], 0.f);
  EXPECT_EQ(v[4], 0.f);
  const V all = as_vector(log_softmax(x, {2, 1, 0}).value());
  const V full = as_vector(log_softmax(x).value());
  for (size_t k = 0; k < full.size(); ++k) EXPECT_NEAR(all[k], full[k], 1e-6f);
}

TEST(RestrictedLogSoftmax, BatchedSharesTheRestriction) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}, 2), V{0, 7, 0, 1, 1, 1});
  const V v = as_vector(log_softmax(x, {0, 2}).value());
  EXPECT_NEAR(v[0], -std::log(2.f), 1e-6f);
  EXPECT_NEAR(v[2], -std::log(2.f), 1e-6f);
  EXPECT_NEAR(v[3], -std::log(2.f), 1e-6f);
  EXPECT_TRUE(std::isinf(v[1]) && std::isinf(v[4]));
}

TEST(RestrictedLogSoftmax, BadRestrictionsNameTheOp) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), V{1, 2, 3});
  EXPECT_NE(error_of([&] { log_softmax(x, {0, 3}); }).find("restricted_log_softmax"), std::string::npos);
  EXPECT_NE(error_of([&] { log_softmax(x, {}); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([&] { log_softmax(x, {2, 2}); }).find("twice"), std::string::npos);
}

// ---- sparsemax ----
TEST(Sparsemax, ProjectsOntoTheSimplex) {
  ComputationGraph g;
  // τ = (1 + 0.8 - 1) / 2 = 0.4
  Expression x = input(g, Dim({5}), V{1, -0.5f, 0.8f, -1, 0.1f});
  expect_values(sparsemax(x).value(), {0.6f, 0, 0.4f, 0, 0});
  // τ = (0.3 + 0.1 + 0.25 - 1) / 3
  Expression z = input(g, Dim({4}), V{0.3f, 0.1f, 0.25f, -2});
  const float tau = -0.35f / 3;
  expect_values(sparsemax(z).value(), {0.3f - tau, 0.1f - tau, 0.25f - tau, 0});
  // a clear winner takes everything; ties share
  expect_values(sparsemax(input(g, Dim({3}), V{3, 1, 0})).value(), {1, 0, 0});
  expect_values(sparsemax(input(g, Dim({3}), V{2, 2, 2})).value(), {1.f / 3, 1.f / 3, 1.f / 3});
}

TEST(Sparsemax, GradientLivesOnTheSupport) {
  ComputationGraph g;
  Expression x = input(g, Dim({5}), V{1, -0.5f, 0.8f, -1, 0.1f});
  g.backward(pick(sparsemax(x), 0u), true);
  // (I - 1 1ᵀ / |S|) on S = {0, 2}
  expect_values(x.gradient(), {0.5f, 0, -0.5f, 0, 0});
}

TEST(Sparsemax, ColumnsAndBatchElementsAreIndependent) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 2}, 2), V{3, 1, 0.2f, 0, 0, 0, -5, 5});
  expect_values(sparsemax(x).value(), {1, 0, 0.6f, 0.4f, 0.5f, 0.5f, 0, 1});
}

// ---- sparsemax_loss ----
TEST(SparsemaxLoss, Values) {
  ComputationGraph g;
  // sparsemax = (0.6, 0, 0.4, 0, 0), τ = 0.4, S = {0, 2}:
  // ½ Σ_S (x² - τ²) = ½ (0.84 + 0.48) = 0.66
  Expression x = input(g, Dim({5}), V{1, -0.5f, 0.8f, -1, 0.1f});
  expect_values(sparsemax_loss(x, std::vector<unsigned>{0}).value(), {0.66f + 0.5f - 1.f});
  expect_values(sparsemax_loss(x, std::vector<unsigned>{0, 2}).value(), {0.66f + 0.25f - 0.9f});
  expect_values(sparsemax_loss(x, std::vector<unsigned>{3}).value(), {0.66f + 0.5f + 1.f});
  // zero when sparsemax(x) already equals q
  Expression y = input(g, Dim({3}), V{1, 0, -1});
  expect_values(sparsemax_loss(y, std::vector<unsigned>{0}).value(), {0.f});
}

TEST(SparsemaxLoss, GradientIsSparsemaxMinusTarget) {
  ComputationGraph g;
  Expression x = input(g, Dim({5}), V{1, -0.5f, 0.8f, -1, 0.1f});
  g.backward(sparsemax_loss(x, std::vector<unsigned>{0, 3}), true);
  expect_values(x.gradient(), {0.6f - 0.5f, 0, 0.4f, -0.5f, 0});
}

TEST(SparsemaxLoss, BracedZeroSelectsThePointerFormAndThrows) {
  // As in DyNet, `{0}` converts better to the pointer overload (a null pointer) than to a vector.
  ComputationGraph g;
  Expression x = input(g, Dim({3}), V{1, 0, -1});
  EXPECT_NE(error_of([&] { sparsemax_loss(x, {0}); }).find("std::vector<unsigned>{0}"), std::string::npos);
}

TEST(SparsemaxLoss, PointerTargetIsReadAtForwardTime) {
  ComputationGraph g;
  std::vector<unsigned> target = {0};
  Expression x = input(g, Dim({5}), V{1, -0.5f, 0.8f, -1, 0.1f});
  Expression loss = sparsemax_loss(x, &target);
  EXPECT_NEAR(as_scalar(g.forward(loss)), 0.16f, 1e-5f);
  target = {3};
  EXPECT_NEAR(as_scalar(g.forward(loss)), 2.16f, 1e-5f);
  target = {7};
  EXPECT_NE(error_of([&] { g.forward(loss); }).find("sparsemax_loss"), std::string::npos);
}

TEST(SparsemaxLoss, BatchedSharesTheTarget) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}, 2), V{1, 0, -1, 0, 1, -1});
  Expression loss = sparsemax_loss(x, std::vector<unsigned>{0});
  EXPECT_EQ(loss.dim(), Dim({1}, 2));
  // second element: sparsemax = e1, so ½(1) + ½ - x[0] = 1
  expect_values(loss.value(), {0.f, 1.f});
}

// ---- constrained_softmax ----
TEST(ConstrainedSoftmax, SaturatesRowsAboveTheirBound) {
  ComputationGraph g;
  // softmax = (0.5, 0.25, 0.25); row 0 is capped at 0.2 and the rest share 0.8 as before
  Expression x = input(g, Dim({3}), V{std::log(2.f), 0, 0});
  Expression u = input(g, Dim({3}), V{0.2f, 1, 0.5f});
  Expression p = constrained_softmax(x, u);
  expect_values(p.value(), {0.2f, 0.4f, 0.4f});
  // p1 = (1 - u0) e^x1 / (e^x1 + e^x2): dp1/dx1 = 0.8 · ¼, dp1/dx2 = -0.2, dp1/du0 = -½
  g.backward(pick(p, 1u), true);
  expect_values(x.gradient(), {0, 0.2f, -0.2f});
  expect_values(u.gradient(), {-0.5f, 0, 0});
}

TEST(ConstrainedSoftmax, SaturationCanCascade) {
  ComputationGraph g;
  // softmax = (4/7, 2/7, 1/7): row 0 saturates first (0.571 > 0.5), which lifts row 1 to 1/3 > 0.3
  Expression x = input(g, Dim({3}), V{std::log(4.f), std::log(2.f), 0});
  Expression u = input(g, Dim({3}), V{0.5f, 0.3f, 1});
  Expression p = constrained_softmax(x, u);
  expect_values(p.value(), {0.5f, 0.3f, 0.2f});
  // p2 = 1 - u0 - u1
  g.backward(pick(p, 2u), true);
  expect_values(x.gradient(), {0, 0, 0});
  expect_values(u.gradient(), {-1, -1, 0});
}

TEST(ConstrainedSoftmax, LooseBoundsGiveSoftmax) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}, 2), V{1, 2, 3, 0, 0, 0});
  Expression u = input(g, Dim({3}), V{1, 1, 1});
  const float third = 1.f / 3.f;
  expect_values(constrained_softmax(x, u).value(), {0.09003057f, 0.24472847f, 0.66524096f, third, third, third});
}

TEST(ConstrainedSoftmax, InfeasibleBoundsGiveTheBoundsNegativeOnesThrow) {
  {
    // Bounds summing to less than 1: every row at its bound (DyNet's result too), the gradient all u's.
    ComputationGraph g;
    Expression x = input(g, Dim({3}), V{1, 2, 3});
    Expression low = input(g, Dim({3}), V{0.3f, 0.1f, 0.2f});
    Expression p = constrained_softmax(x, low);
    expect_values(p.value(), {0.3f, 0.1f, 0.2f});
    Expression loss = dot_product(p, input(g, Dim({3}), V{1, -2, 0.5f}));
    g.backward(loss, true);
    expect_values(x.gradient(), {0, 0, 0});
    expect_values(low.gradient(), {1, -2, 0.5f});
  }
  ComputationGraph g;
  Expression x = input(g, Dim({3}), V{1, 2, 3});
  Expression negative = input(g, Dim({3}), V{2, -0.5f, 1});
  EXPECT_NE(error_of([&] { constrained_softmax(x, negative).value(); }).find("negative"), std::string::npos);
}

// ---- hinge ----
TEST(Hinge, SumsMarginViolations) {
  ComputationGraph g;
  Expression x = input(g, Dim({4}), V{1, 3, 2.5f, -1});
  expect_values(hinge(x, 1u).value(), {0.5f});       // only 1 - 3 + 2.5 is positive
  expect_values(hinge(x, 1u, 2.f).value(), {1.5f});  // 2 - 3 + 1 = 0 does not count
  Expression loss = hinge(x, 0u);
  expect_values(loss.value(), {3 + 2.5f});
  g.backward(loss, true);
  expect_values(x.gradient(), {-2, 1, 1, 0});
}

TEST(Hinge, BatchedAndPointerForms) {
  ComputationGraph g;
  Expression x = input(g, Dim({4}, 2), V{1, 3, 2.5f, -1, 0, 0, 0, 0});
  expect_values(hinge(x, std::vector<unsigned>{1, 2}).value(), {0.5f, 3});
  expect_values(hinge(x, 1u).value(), {0.5f, 3});  // one index for every batch element
  unsigned index = 1;
  std::vector<unsigned> indices = {1, 2};
  Expression a = hinge(x, &index), b = hinge(x, &indices);
  expect_values(g.forward(a), {0.5f, 3});
  expect_values(g.forward(b), {0.5f, 3});
  index = 0;
  indices = {0, 0};
  expect_values(g.forward(a), {5.5f, 3});
  expect_values(g.forward(b), {5.5f, 3});
}

TEST(Hinge, BadArgumentsNameTheOp) {
  ComputationGraph g;
  Expression x = input(g, Dim({4}), V{1, 3, 2.5f, -1});
  EXPECT_NE(error_of([&] { hinge(x, 4u); }).find("hinge"), std::string::npos);
  EXPECT_NE(error_of([&] { hinge(x, 0u, -1.f); }).find("margin"), std::string::npos);
  EXPECT_NE(error_of([&] { hinge(x, std::vector<unsigned>{0, 1}); }).find("batch elements"), std::string::npos);
}

// ---- hinge_dim ----
TEST(HingeDim, AlongColumnsAndRows) {
  ComputationGraph g;
  // columns (1, 3, 2.5) and (0, 0, 2)
  Expression x = input(g, Dim({3, 2}), V{1, 3, 2.5f, 0, 0, 2});
  expect_values(hinge_dim(x, {1, 2}, 0).value(), {0.5f, 0});
  // rows (1, 0), (3, 0), (2.5, 2)
  Expression rows = hinge_dim(x, {0, 1, 0}, 1);
  expect_values(rows.value(), {0, 4, 0.5f});
  g.backward(sum_elems(rows), true);
  // row 1 (correct col 1): +1 on x[1,0], -1 on x[1,1]; row 2 (correct col 0): +1 on x[2,1], -1 on x[2,0]
  expect_values(x.gradient(), {0, 1, -1, 0, -1, 1});
}

TEST(HingeDim, PerBatchIndexVectors) {
  ComputationGraph g;
  Expression x = input(g, Dim({3, 2}, 2), V{1, 3, 2.5f, 0, 0, 2, 0, 0, 0, 5, 0, 0});
  using VV = std::vector<std::vector<unsigned>>;
  expect_values(hinge_dim(x, VV{{1, 2}, {0, 0}}, 0).value(), {0.5f, 0, 2, 0});
  VV ids = {{1, 2}, {0, 0}};
  Expression p = hinge_dim(x, &ids, 0);
  expect_values(g.forward(p), {0.5f, 0, 2, 0});
  ids[1] = {2, 1};
  expect_values(g.forward(p), {0.5f, 0, 2, 7});  // column (5, 0, 0), correct row 1: 6 + 1
  ids[1] = {2, 3};
  EXPECT_NE(error_of([&] { g.forward(p); }).find("hinge_dim"), std::string::npos);
}

// ---- norms and distances ----
TEST(Distances, L2Norm) {
  ComputationGraph g;
  Expression x = input(g, Dim({2}, 2), V{3, 4, 0, 0});
  Expression n = l2_norm(x);
  expect_values(n.value(), {5, 0});
  g.backward(n, true);
  expect_values(x.gradient(), {0.6f, 0.8f, 0, 0});  // no NaN at the origin
}

TEST(Distances, L1Distance) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), V{1, -2, 3});
  Expression y = input(g, Dim({3}), V{0, 1, 3});
  Expression d = l1_distance(x, y);
  expect_values(d.value(), {4});
  g.backward(d, true);
  expect_values(x.gradient(), {1, -1, 0});
  expect_values(y.gradient(), {-1, 1, 0});
}

TEST(Distances, HuberDistanceIsTheTextbookHuberFunction) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), V{0.5f, 3, -2});
  Expression y = input(g, Dim({3}), V{0, 0, 0});
  Expression d = huber_distance(x, y);
  // 0.5²/2 + 1.345 (3 - 1.345/2) + 1.345 (2 - 1.345/2): 5.040975, DyNet 2.x's value
  expect_values(d.value(), {0.125f + 1.345f * 2.3275f + 1.345f * 1.3275f}, 1e-4f);
  g.backward(d, true);
  expect_values(x.gradient(), {0.5f, 1.345f, -1.345f});
  expect_values(y.gradient(), {-0.5f, -1.345f, 1.345f});
  expect_values(huber_distance(x, y, 1.f).value(), {0.125f + 2.5f + 1.5f});
}

TEST(Distances, BroadcastUnbatchedSide) {
  ComputationGraph g;
  Expression x = input(g, Dim({2}, 2), V{1, 1, 3, -1});
  Expression y = input(g, Dim({2}), V{1, 0});
  expect_values(l1_distance(x, y).value(), {1, 3});
  expect_values(huber_distance(x, y, 10.f).value(), {0.5f, 2.5f});
  EXPECT_NE(error_of([&] { l1_distance(x, input(g, Dim({3}), V{1, 2, 3})); }).find("l1_distance"), std::string::npos);
  EXPECT_NE(error_of([&] { huber_distance(x, y, -1.f); }).find("huber_distance"), std::string::npos);
}

// ---- binary_log_loss ----
TEST(BinaryLogLoss, Values) {
  ComputationGraph g;
  Expression x = input(g, Dim({2}), V{0.9f, 0.2f});
  Expression y = input(g, Dim({2}), V{1, 0});
  expect_values(binary_log_loss(x, y).value(), {-std::log(0.9f) - std::log(0.8f)});
  expect_values(binary_log_loss(input(g, Dim({1}), V{0.5f}), input(g, Dim({1}), V{0.5f})).value(), {std::log(2.f)});
  // certain and wrong: DyNet's -ln(FLT_MIN) per element instead of infinity; certain and right: 0
  Expression sure = input(g, Dim({2}), V{0, 1});
  expect_values(binary_log_loss(sure, input(g, Dim({2}), V{1, 0})).value(), {-2 * std::log(FLT_MIN)}, 1e-3f);
  expect_values(binary_log_loss(sure, input(g, Dim({2}), V{0, 1})).value(), {0});
  // certain with an uncertain target: -ln(FLT_MIN) per element as in DyNet (174.67 here), not weighted by y
  expect_values(binary_log_loss(sure, input(g, Dim({2}), V{0.5f, 0.5f})).value(), {-2 * std::log(FLT_MIN)}, 1e-3f);
}

TEST(BinaryLogLoss, GradientAtTheBoundaryIsDyNets) {
  ComputationGraph g;
  Expression x = input(g, Dim({2}), V{1, 0});
  Expression loss = binary_log_loss(x, input(g, Dim({2}), V{0, 1}));
  g.backward(loss, true);
  // DyNet evaluates the derivative at x = 0.9999999f (1 - 2^-23) and x = FLT_MIN
  const std::vector<float> dx = as_vector(x.gradient());
  EXPECT_FLOAT_EQ(dx[0], 8388608.f);
  EXPECT_FLOAT_EQ(dx[1], -1 / FLT_MIN);
}

TEST(BinaryLogLoss, Gradients) {
  ComputationGraph g;
  Expression x = input(g, Dim({2}, 2), V{0.9f, 0.25f, 0.5f, 0.5f});
  Expression y = input(g, Dim({2}), V{1, 0.5f});
  Expression loss = binary_log_loss(x, y);
  EXPECT_EQ(loss.dim(), Dim({1}, 2));
  g.backward(loss, true);
  // dx = (x - y) / (x (1 - x)), dy = ln(1 - x) - ln x, summed over the batch for y
  expect_values(x.gradient(), {-1 / 0.9f, (0.25f - 0.5f) / (0.25f * 0.75f), -2, 0});
  expect_values(y.gradient(), {std::log(0.1f / 0.9f) + 0, std::log(0.75f / 0.25f) + 0});
}

// ---- pairwise_rank_loss ----
TEST(PairwiseRankLoss, ElementwiseMarginViolation) {
  ComputationGraph g;
  Expression x = input(g, Dim({1, 3}), V{2, 0.5f, 1});
  Expression y = input(g, Dim({1, 3}), V{0, 1, 1});
  Expression loss = pairwise_rank_loss(x, y);
  EXPECT_EQ(loss.dim(), Dim({1, 3}));
  expect_values(loss.value(), {0, 1.5f, 1});
  expect_values(pairwise_rank_loss(x, y, 3.f).value(), {1, 3.5f, 3});
  g.backward(sum_elems(loss), true);
  expect_values(x.gradient(), {0, -1, -1});
  expect_values(y.gradient(), {0, 1, 1});
}

// ---- poisson_loss ----
TEST(PoissonLoss, NegativeLogLikelihoodOfLogRate) {
  ComputationGraph g;
  // λ = 2, y = 3: -ln(e⁻² 2³ / 3!) = 2 - ln(4/3)
  Expression x = input(g, Dim({1}), V{std::log(2.f)});
  Expression loss = poisson_loss(x, 3u);
  expect_values(loss.value(), {2 - std::log(4.f / 3)});
  g.backward(loss, true);
  expect_values(x.gradient(), {2 - 3});
  unsigned y = 3;
  Expression p = poisson_loss(x, &y);
  EXPECT_NEAR(as_scalar(g.forward(p)), 2 - std::log(4.f / 3), 1e-5f);
  y = 0;
  EXPECT_NEAR(as_scalar(g.forward(p)), 2.f, 1e-5f);
}

TEST(PoissonLoss, BatchedAndBadShape) {
  ComputationGraph g;
  Expression x = input(g, Dim({1}, 2), V{0, std::log(3.f)});
  expect_values(poisson_loss(x, 1u).value(), {1, 3 - std::log(3.f)});
  EXPECT_NE(error_of([&] { poisson_loss(input(g, Dim({2}), V{1, 2}), 1u); }).find("poisson_loss"), std::string::npos);
}

}  // namespace
}  // namespace dynet
