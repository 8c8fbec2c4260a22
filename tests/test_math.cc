// Hand-computed values for the elementwise math ops (unary table, pow/min/max, max over a list),
// circular convolution/correlation, rounding and argmax with their gradient modes, flip_gradient:
// things the finite-difference harness cannot catch (a wrong forward consistent with its backward,
// tie rules, gradients that are not the derivative on purpose).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "dynet/expr.h"

namespace dynet {
namespace {

using V = std::vector<float>;

void expect_values(const Expression& e, const Dim& d, const V& want, double tol = 1e-5) {
  const Tensor& t = e.value();
  ASSERT_EQ(t.d, d);
  ASSERT_EQ(t.d.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(t.v[k], want[k], tol * (1 + std::fabs(want[k]))) << "element " << k;
}

void expect_gradient(const Expression& e, const V& want, double tol = 1e-5) {
  const Tensor& t = e.gradient();
  ASSERT_EQ(t.d.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k)
    EXPECT_NEAR(t.v[k], want[k], tol * (1 + std::fabs(want[k]))) << "gradient element " << k;
}

// loss = Σ y ⊙ c, so dE/dy = c.
Expression weighted(const Expression& y, ComputationGraph& g, const V& c) {
  return sum_elems(cmult(y, input(g, y.dim(), c)));
}

TEST(Math, UnaryOpsMatchTheStandardLibrary) {
  struct Row {
    const char* name;
    Expression (*op)(const Expression&);
    std::function<double(double)> ref;
    V xs;
  };
  const double lambda = 1.0507009873554804934, alpha = 1.6732632423543772848;
  const std::vector<Row> rows = {
      {"erf", erf, [](double x) { return std::erf(x); }, {-1.5f, 0.f, 0.5f, 2.f}},
      {"sin", sin, [](double x) { return std::sin(x); }, {-2.f, 0.3f, 3.f}},
      {"cos", cos, [](double x) { return std::cos(x); }, {-2.f, 0.3f, 3.f}},
      {"tan", tan, [](double x) { return std::tan(x); }, {-1.f, 0.3f, 1.2f}},
      {"asin", asin, [](double x) { return std::asin(x); }, {-0.9f, 0.f, 0.5f}},
      {"acos", acos, [](double x) { return std::acos(x); }, {-0.9f, 0.f, 0.5f}},
      {"atan", atan, [](double x) { return std::atan(x); }, {-3.f, 0.5f, 10.f}},
      {"sinh", sinh, [](double x) { return std::sinh(x); }, {-2.f, 0.5f, 3.f}},
      {"cosh", cosh, [](double x) { return std::cosh(x); }, {-2.f, 0.5f, 3.f}},
      {"asinh", asinh, [](double x) { return std::asinh(x); }, {-2.f, 1.f, 5.f}},
      {"acosh", acosh, [](double x) { return std::acosh(x); }, {1.f, 2.f, 5.f}},
      {"atanh", atanh, [](double x) { return std::atanh(x); }, {-0.9f, 0.f, 0.5f}},
      {"cube", cube, [](double x) { return x * x * x; }, {-2.f, 0.5f, 3.f}},
      {"lgamma", lgamma, [](double x) { return std::lgamma(x); }, {0.5f, 1.f, 5.f, 10.f}},
      {"softsign", softsign, [](double x) { return x / (1 + std::fabs(x)); }, {-3.f, 0.f, 1.f}},
      {"log_sigmoid", log_sigmoid, [](double x) { return -std::log1p(std::exp(-x)); }, {-5.f, 0.f, 2.f}},
      {"selu", selu,
       [&](double x) { return x > 0 ? lambda * x : lambda * alpha * std::expm1(x); },
       {-2.f, -0.5f, 0.f, 1.5f}},
  };
  for (const Row& r : rows) {
    ComputationGraph g;
    Expression x = input(g, Dim({unsigned(r.xs.size())}), r.xs);
    V want;
    for (float v : r.xs) want.push_back(float(r.ref(v)));
    SCOPED_TRACE(r.name);
    expect_values(r.op(x), x.dim(), want, 2e-6);
  }
}

TEST(Math, SeluAndSiluKnownValues) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), V{1.f, -1.f, 0.f});
  // 1.0507·1 ; 1.0507·1.6733·(e⁻¹ - 1)
  expect_values(selu(x), Dim({3}), {1.0507009873554805f, -1.1113307378125628f, 0.f});
  // x σ(x): σ(1) = 0.7310586, -σ(-1) = -0.2689414
  expect_values(silu(x), Dim({3}), {0.7310585786300049f, -0.2689414213699951f, 0.f});
  // β = 2: σ(2) = 0.8807971, -σ(-2) = -0.1192029
  expect_values(silu(x, 2.f), Dim({3}), {0.8807970779778823f, -0.11920292202211755f, 0.f});
  // d/dx x σ(x) at 0 is σ(0) = 1/2; at 1: σ(1)(1 + 1·σ(-1)) = 0.7310586·1.2689414 = 0.9276705
  Expression loss = weighted(silu(x), g, {1.f, 0.f, 1.f});
  g.backward(loss, true);
  expect_gradient(x, {0.92767051f, 0.f, 0.5f});
}

TEST(Math, LogSigmoidIsStableAtTheExtremes) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), V{-200.f, 50.f, 0.f});
  const Tensor& y = log_sigmoid(x).value();
  EXPECT_FLOAT_EQ(y.v[0], -200.f);
  EXPECT_TRUE(std::isfinite(y.v[1]));
  EXPECT_LE(y.v[1], 0.f);
  EXPECT_GT(y.v[1], -1e-20f);
  EXPECT_FLOAT_EQ(y.v[2], -std::log(2.f));
  // derivative 1 - σ(x): 1 at -200, e⁻⁵⁰ (tiny, not zero by cancellation) at 50, 1/2 at 0
  Expression loss = sum_elems(log_sigmoid(x));
  g.backward(loss, true);
  const Tensor& d = x.gradient();
  EXPECT_FLOAT_EQ(d.v[0], 1.f);
  EXPECT_NEAR(d.v[1] / std::exp(-50.f), 1.f, 1e-4);
  EXPECT_FLOAT_EQ(d.v[2], 0.5f);
}

TEST(Math, PowElementwiseAndScalarExponent) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), V{2.f, 9.f, 0.5f});
  Expression y = input(g, Dim({3}), V{3.f, 0.5f, -1.f});
  Expression p = pow(x, y);
  expect_values(p, Dim({3}), {8.f, 3.f, 2.f});
  Expression loss = sum_elems(p);
  g.backward(loss, true);
  // d/dx = y x^(y-1): 3·4, 0.5/3, -1·0.5⁻²; d/dy = x^y ln x
  expect_gradient(x, {12.f, 1.f / 6.f, -4.f});
  expect_gradient(y, {8.f * std::log(2.f), 3.f * std::log(9.f), 2.f * std::log(0.5f)});

  ComputationGraph g2;
  Expression m = input(g2, Dim({2, 2}), V{1.f, 2.f, 3.f, 4.f});
  Expression two = input(g2, Dim({1}), V{2.f});
  Expression sq = pow(m, two);  // DyNet's form: a scalar exponent
  expect_values(sq, Dim({2, 2}), {1.f, 4.f, 9.f, 16.f});
  g2.backward(sum_elems(sq), true);
  // d/d(exponent) = Σ x² ln x
  expect_gradient(two, {4.f * std::log(2.f) + 9.f * std::log(3.f) + 16.f * std::log(4.f)});
  // x = 0 with an exponent ≥ 1 has finite gradients (no 0/0, no 0·ln 0)
  ComputationGraph g3;
  Expression z = input(g3, Dim({1}), V{0.f});
  Expression e = input(g3, Dim({1}), V{2.f});
  g3.backward(pow(z, e), true);
  expect_gradient(z, {0.f});
  expect_gradient(e, {0.f});
}

TEST(Math, MinMaxTiesSendTheGradientToTheSecondArgument) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), V{1.f, 2.f, 3.f});
  Expression y = input(g, Dim({3}), V{3.f, 2.f, 1.f});
  Expression hi = max(x, y), lo = min(x, y);
  expect_values(hi, Dim({3}), {3.f, 2.f, 3.f});
  expect_values(lo, Dim({3}), {1.f, 2.f, 1.f});
  g.backward(weighted(hi, g, {1.f, 10.f, 100.f}), true);
  expect_gradient(x, {0.f, 0.f, 100.f});
  expect_gradient(y, {1.f, 10.f, 0.f});

  ComputationGraph g2;
  Expression a = input(g2, Dim({3}), V{1.f, 2.f, 3.f});
  Expression b = input(g2, Dim({3}), V{3.f, 2.f, 1.f});
  g2.backward(weighted(min(a, b), g2, {1.f, 10.f, 100.f}), true);
  expect_gradient(a, {1.f, 0.f, 0.f});
  expect_gradient(b, {0.f, 10.f, 100.f});
}

TEST(Math, MinMaxBroadcast) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 2}, 2), V{1.f, -1.f, 0.5f, 2.f, -3.f, 0.f, 4.f, 0.1f});
  Expression zero = input(g, Dim({1}), V{0.f});
  Expression relu = max(x, zero);
  expect_values(relu, Dim({2, 2}, 2), {1.f, 0.f, 0.5f, 2.f, 0.f, 0.f, 4.f, 0.1f});
  g.backward(sum_elems(sum_batches(relu)), true);
  // the scalar collects the gradient of every element it won, ties (x = 0) included
  expect_gradient(zero, {3.f});
  expect_gradient(x, {1.f, 0.f, 1.f, 1.f, 0.f, 0.f, 1.f, 1.f});
}

TEST(Math, MaxOfAListGoesToTheLastWinnerLikeTheFoldedPairForm) {
  const V av{1.f, 5.f, 2.f}, bv{1.f, 3.f, 2.f}, cv{0.f, 5.f, 1.f};
  const V weights{1.f, 10.f, 100.f};
  std::vector<V> grads_list, grads_fold;
  for (int folded = 0; folded < 2; ++folded) {
    ComputationGraph g;
    Expression a = input(g, Dim({3}), av), b = input(g, Dim({3}), bv), c = input(g, Dim({3}), cv);
    Expression m = folded ? max(max(a, b), c) : max({a, b, c});
    expect_values(m, Dim({3}), {1.f, 5.f, 2.f});
    g.backward(weighted(m, g, weights), true);
    auto& out = folded ? grads_fold : grads_list;
    for (const Expression& e : {a, b, c}) out.push_back(as_vector(e.gradient()));
  }
  // element 0: a = b = 1 → b; element 1: a = c = 5 → c; element 2: a = b = 2 → b
  EXPECT_EQ(grads_list[0], (V{0.f, 0.f, 0.f}));
  EXPECT_EQ(grads_list[1], (V{1.f, 0.f, 100.f}));
  EXPECT_EQ(grads_list[2], (V{0.f, 10.f, 0.f}));
  EXPECT_EQ(grads_list, grads_fold);
}

TEST(Math, MaxOfAListBroadcastsAndChecksShapes) {
  ComputationGraph g;
  Expression a = input(g, Dim({2}, 2), V{1.f, 4.f, 3.f, -1.f});
  Expression b = input(g, Dim({2}), V{2.f, 0.f});
  Expression m = max(std::vector<Expression>{a, b});
  expect_values(m, Dim({2}, 2), {2.f, 4.f, 3.f, 0.f});
  g.backward(sum_elems(sum_batches(m)), true);
  expect_gradient(b, {1.f, 1.f});
  expect_gradient(a, {0.f, 1.f, 1.f, 0.f});
  Expression c = input(g, Dim({3}), V{1.f, 2.f, 3.f});
  EXPECT_THROW(max({a, c}), std::invalid_argument);
  EXPECT_THROW(max(std::vector<Expression>{}), std::invalid_argument);
}

TEST(Math, CircularConvolutionAndCorrelation) {
  ComputationGraph g;
  Expression u = input(g, Dim({3}), V{1.f, 2.f, 3.f});
  Expression v = input(g, Dim({3}), V{4.f, 5.f, 6.f});
  // conv: y[k] = Σ u[i] v[k-i]: y0 = 1·4 + 2·6 + 3·5, y1 = 1·5 + 2·4 + 3·6, y2 = 1·6 + 2·5 + 3·4
  expect_values(circ_conv(u, v), Dim({3}), {31.f, 31.f, 28.f});
  // corr: y[k] = Σ u[i] v[i+k]: y0 = 1·4 + 2·5 + 3·6, y1 = 1·5 + 2·6 + 3·4, y2 = 1·6 + 2·4 + 3·5
  expect_values(circ_corr(u, v), Dim({3}), {32.f, 29.f, 29.f});
  // convolving with e₁ rotates u down by one; correlating with e₁ rotates it up
  Expression e1 = input(g, Dim({3}), V{0.f, 1.f, 0.f});
  expect_values(circ_conv(u, e1), Dim({3}), {3.f, 1.f, 2.f});
  expect_values(circ_corr(e1, u), Dim({3}), {2.f, 3.f, 1.f});

  Expression loss = weighted(circ_conv(u, v), g, {1.f, 0.f, 0.f});
  g.backward(loss, true);
  // y0 = u0 v0 + u1 v2 + u2 v1
  expect_gradient(u, {4.f, 6.f, 5.f});
  expect_gradient(v, {1.f, 3.f, 2.f});
}

TEST(Math, CircularOpsBatchPerElement) {
  ComputationGraph g;
  Expression u = input(g, Dim({3}, 2), V{1.f, 2.f, 3.f, 0.f, 1.f, 0.f});
  Expression v = input(g, Dim({3}), V{4.f, 5.f, 6.f});
  expect_values(circ_conv(u, v), Dim({3}, 2), {31.f, 31.f, 28.f, 6.f, 4.f, 5.f});
  expect_values(circ_corr(u, v), Dim({3}, 2), {32.f, 29.f, 29.f, 5.f, 6.f, 4.f});
  EXPECT_THROW(circ_conv(u, input(g, Dim({4}), V(4, 0.f))), std::invalid_argument);
  EXPECT_THROW(circ_corr(input(g, Dim({3, 2}), V(6, 0.f)), input(g, Dim({3, 2}), V(6, 0.f))), std::invalid_argument);
}

TEST(Math, RoundingValuesAndGradientModes) {
  const V xs{-1.5f, -0.4f, 0.5f, 2.5f, 1.2f};
  const V c{1.f, 2.f, 3.f, 4.f, 5.f};
  struct Case {
    Expression (*op)(const Expression&, GradientMode);
    V want;
  };
  const std::vector<Case> cases = {{round, {-2.f, -0.f, 1.f, 3.f, 1.f}},  // halves away from zero
                                   {ceil, {-1.f, -0.f, 1.f, 3.f, 2.f}},
                                   {floor, {-2.f, -1.f, 0.f, 2.f, 1.f}}};
  for (const Case& k : cases) {
    for (GradientMode gm : {zero_gradient, straight_through_gradient}) {
      ComputationGraph g;
      Expression x = input(g, Dim({5}), xs);
      Expression y = k.op(x, gm);
      expect_values(y, Dim({5}), k.want);
      g.backward(weighted(y, g, c), true);
      expect_gradient(x, gm == zero_gradient ? V(5, 0.f) : c);
    }
  }
  ComputationGraph g;
  Expression x = input(g, Dim({5}), xs);
  expect_values(round(x), Dim({5}), cases[0].want);  // default: zero gradient
  EXPECT_THROW(floor(x, static_cast<GradientMode>(3)), std::invalid_argument);
}

TEST(Math, ArgmaxIsAOneHotPerColumn) {
  for (GradientMode gm : {zero_gradient, straight_through_gradient}) {
    ComputationGraph g;
    // columns (1, 5, 5) and (7, 0, 7): ties go to the first index
    Expression x = input(g, Dim({3, 2}), V{1.f, 5.f, 5.f, 7.f, 0.f, 7.f});
    Expression y = argmax(x, gm);
    expect_values(y, Dim({3, 2}), {0.f, 1.f, 0.f, 1.f, 0.f, 0.f});
    const V c{1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
    g.backward(weighted(y, g, c), true);
    expect_gradient(x, gm == zero_gradient ? V(6, 0.f) : c);
  }
  ComputationGraph g;
  Expression b = input(g, Dim({2}, 3), V{1.f, 2.f, 3.f, -4.f, -1.f, -1.f});
  expect_values(argmax(b, zero_gradient), Dim({2}, 3), {0.f, 1.f, 1.f, 0.f, 1.f, 0.f});
  EXPECT_THROW(argmax(b, static_cast<GradientMode>(-1)), std::invalid_argument);
}

TEST(Math, FlipGradientKeepsTheValueAndNegatesTheGradient) {
  ComputationGraph g;
  Expression x = input(g, Dim({2}, 2), V{1.f, -2.f, 3.f, 0.5f});
  Expression y = flip_gradient(x);
  expect_values(y, Dim({2}, 2), {1.f, -2.f, 3.f, 0.5f});
  g.backward(sum_elems(sum_batches(cmult(y, input(g, Dim({2}), V{2.f, 3.f})))), true);
  expect_gradient(x, {-2.f, -3.f, -2.f, -3.f});
}

TEST(Math, ListLogsumexpAgreesWithTheDefinition) {
  ComputationGraph g;
  Expression a = input(g, Dim({2}), V{0.f, 100.f});
  Expression b = input(g, Dim({2}), V{std::log(3.f), 100.f});
  // log(1 + 3) and 100 + log 2 (no overflow)
  expect_values(logsumexp({a, b}), Dim({2}), {std::log(4.f), 100.f + std::log(2.f)});
}

}  // namespace
}  // namespace dynet
