// Hand-computed values for the arithmetic and matrix ops: things a finite-difference check cannot
// catch (a forward that is wrong but consistent with its own backward).
#include <gtest/gtest.h>

#include <vector>

#include "dynet/expr.h"

namespace dynet {
namespace {

using V = std::vector<float>;

void expect_values(const Expression& e, const Dim& d, const V& want) {
  const Tensor& t = e.value();
  ASSERT_EQ(t.d, d);
  ASSERT_EQ(t.d.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(t.v[k], want[k], 1e-4) << "element " << k;
}

void expect_same(const Tensor& a, const Tensor& b, const char* what) {
  ASSERT_EQ(a.d, b.d) << what;
  for (unsigned k = 0; k < a.d.size(); ++k) EXPECT_NEAR(a.v[k], b.v[k], 1e-4) << what << " element " << k;
}

TEST(Arith, MatmulKnownValues) {
  ComputationGraph g;
  // A = [1 2 3; 4 5 6], B = [7 8; 9 10; 11 12] (column-major data)
  Expression a = input(g, Dim({2, 3}), V{1, 4, 2, 5, 3, 6});
  Expression b = input(g, Dim({3, 2}), V{7, 9, 11, 8, 10, 12});
  expect_values(a * b, Dim({2, 2}), {58, 139, 64, 154});
  Expression v = input(g, Dim({3}), V{1, 0, -1});
  Expression av = a * v;
  EXPECT_EQ(av.dim().nd, 1u);  // a vector stays a vector
  expect_values(av, Dim({2}), {-2, -2});
}

TEST(Arith, MatmulBatchedSidesMatchPerElementProducts) {
  ComputationGraph g;
  const V w{1, 4, 2, 5, 3, 6};
  const V xs{1, 2, 3, -1, 0, 2};
  Expression W = input(g, Dim({2, 3}), w);
  Expression x = input(g, Dim({3}, 2), xs);
  // x0 = (1,2,3): W x0 = (14, 32); x1 = (-1,0,2): W x1 = (5, 8)
  expect_values(W * x, Dim({2}, 2), {14, 32, 5, 8});
  // batched left, unbatched right: W_b = W and 2W
  V w2 = w;
  for (float f : w) w2.push_back(2 * f);
  Expression Wb = input(g, Dim({2, 3}, 2), w2);
  Expression x0 = input(g, Dim({3}), V{1, 2, 3});
  expect_values(Wb * x0, Dim({2}, 2), {14, 32, 28, 64});
  expect_values(Wb * x, Dim({2}, 2), {14, 32, 10, 16});
}

TEST(Arith, MatmulGradientsByHand) {
  ComputationGraph g;
  Expression a = input(g, Dim({2, 3}), V{1, 4, 2, 5, 3, 6});
  Expression x = input(g, Dim({3}, 2), V{1, 2, 3, -1, 0, 2});
  Expression c = input(g, Dim({2}), V{1, -1});
  // loss = Σ_b c·(A x_b): dA = c (Σ_b x_b)ᵀ, dx_b = Aᵀ c
  Expression loss = dot_product(a * x, c);  // per batch element; backward sums over the batch
  g.backward(loss, true);
  expect_values(loss, Dim({1}, 2), {14 - 32, 5 - 8});
  const Tensor& dA = a.gradient();
  const V want_dA{0, 0, 2, -2, 5, -5};  // c (0, 2, 5)ᵀ column-major
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(dA.v[k], want_dA[k], 1e-5);
  const Tensor& dx = x.gradient();
  const V want_dx{-3, -3, -3, -3, -3, -3};
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(dx.v[k], want_dx[k], 1e-5);
}

TEST(Arith, ElementwiseBroadcasting) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}), V{1, 2, 3, 4, 5, 6});
  Expression row = input(g, Dim({1, 3}), V{10, 20, 30});
  Expression col = input(g, Dim({2}), V{10, 100});
  expect_values(x + row, Dim({2, 3}), {11, 12, 23, 24, 35, 36});
  expect_values(row + x, Dim({2, 3}), {11, 12, 23, 24, 35, 36});
  expect_values(cmult(x, col), Dim({2, 3}), {10, 200, 30, 400, 50, 600});
  expect_values(x - col, Dim({2, 3}), {-9, -98, -7, -96, -5, -94});
  expect_values(col - x, Dim({2, 3}), {9, 98, 7, 96, 5, 94});
  // {2,1} against {1,3}: an outer sum
  expect_values(col + row, Dim({2, 3}), {20, 110, 30, 120, 40, 130});
  Expression two = input(g, Dim({1}), V{2});
  expect_values(x / two, Dim({2, 3}), {0.5f, 1, 1.5f, 2, 2.5f, 3});
  expect_values(cdiv(two, x), Dim({2, 3}), {2, 1, 2.f / 3, 0.5f, 0.4f, 2.f / 6});
  // unbatched side against a batched one
  Expression xb = input(g, Dim({2}, 2), V{1, 2, 3, 4});
  Expression one = input(g, Dim({2}), V{1, 1});
  expect_values(xb - one, Dim({2}, 2), {0, 1, 2, 3});
  expect_values(cmult(one + one, xb), Dim({2}, 2), {2, 4, 6, 8});
  // broadcast over both the columns and the batch
  Expression colb = input(g, Dim({2}, 2), V{1, 2, 3, 4});
  expect_values(x + colb, Dim({2, 3}, 2), {2, 4, 4, 6, 6, 8, 4, 6, 6, 8, 8, 10});
}

TEST(Arith, BroadcastGradientsSumOverBroadcastDims) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}, 2), V{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Expression row = input(g, Dim({1, 3}), V{10, 20, 30});
  Expression c = input(g, Dim({2, 3}), V{1, 2, 3, 4, 5, 6});
  // loss = Σ_b c·(x_b ⊙ row): d row_j = Σ_b Σ_i c_ij x_bij
  Expression loss = dot_product(cmult(x, row), c);
  g.backward(loss, true);
  const Tensor& dr = row.gradient();
  ASSERT_EQ(dr.d, Dim({1, 3}));
  EXPECT_NEAR(dr.v[0], (1 * 1 + 2 * 2) + (1 * 7 + 2 * 8), 1e-4);
  EXPECT_NEAR(dr.v[1], (3 * 3 + 4 * 4) + (3 * 9 + 4 * 10), 1e-4);
  EXPECT_NEAR(dr.v[2], (5 * 5 + 6 * 6) + (5 * 11 + 6 * 12), 1e-4);
  const Tensor& dx = x.gradient();
  EXPECT_NEAR(dx.v[0], 1 * 10, 1e-4);
  EXPECT_NEAR(dx.v[11], 6 * 30, 1e-4);
}

TEST(Arith, ScalarForms) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), V{1, 2, 4});
  expect_values(x + 2.f, Dim({3}), {3, 4, 6});
  expect_values(2.f + x, Dim({3}), {3, 4, 6});
  expect_values(x - 2.f, Dim({3}), {-1, 0, 2});
  expect_values(2.f - x, Dim({3}), {1, 0, -2});
  expect_values(x * 3.f, Dim({3}), {3, 6, 12});
  expect_values(3.f * x, Dim({3}), {3, 6, 12});
  expect_values(x / 2.f, Dim({3}), {0.5f, 1, 2});
  expect_values(-x, Dim({3}), {-1, -2, -4});
}

TEST(Arith, AffineTransformMatchesSeparateOps) {
  ComputationGraph g;
  // Every batched/unbatched mix: b unbatched, W1 batched with x1 unbatched, W2 unbatched with x2 batched.
  Expression b = input(g, Dim({2}), V{0.5f, -1});
  Expression W1 = input(g, Dim({2, 3}, 2), V{1, 2, 3, 4, 5, 6, -1, 0, 1, 0, 2, 1});
  Expression x1 = input(g, Dim({3}), V{1, -1, 2});
  Expression W2 = input(g, Dim({2, 2}), V{1, 0, 2, 3});
  Expression x2 = input(g, Dim({2}, 2), V{1, 1, -2, 0.5f});
  const size_t before = g.size();
  Expression fused = affine_transform({b, W1, x1, W2, x2});
  EXPECT_EQ(g.size(), before + 1);  // one node
  Expression separate = b + W1 * x1 + W2 * x2;
  // by hand, batch 0: W1_0 x1 = (1-3+10, 2-4+12) = (8, 10); W2 x2_0 = (3, 3) -> (11.5, 12)
  // batch 1: W1_1 x1 = (-1-1+4, 0-0+2) = (2, 2); W2 x2_1 = (-1, 1.5) -> (1.5, 2.5)
  expect_values(fused, Dim({2}, 2), {11.5f, 12, 1.5f, 2.5f});
  expect_same(fused.value(), separate.value(), "values");

  Expression c = input(g, Dim({2}, 2), V{1, -2, 0.5f, 3});
  const Expression args[] = {b, W1, x1, W2, x2};
  g.backward(dot_product(fused, c), true);
  std::vector<std::vector<float>> fused_copy;
  for (const Expression& e : args) fused_copy.push_back(as_vector(e.gradient()));
  g.backward(dot_product(separate, c), true);
  for (int k = 0; k < 5; ++k) {
    std::vector<float> sep = as_vector(args[k].gradient());
    ASSERT_EQ(sep.size(), fused_copy[k].size());
    for (size_t j = 0; j < sep.size(); ++j) EXPECT_NEAR(fused_copy[k][j], sep[j], 1e-4) << "arg " << k << "[" << j << "]";
  }
}

TEST(Arith, AffineTransformBiasBroadcastsOverColumnsAndBatch) {
  ComputationGraph g;
  Expression b = input(g, Dim({2}, 2), V{1, 2, 10, 20});
  Expression W = input(g, Dim({2, 2}), V{1, 0, 0, 1});  // identity
  Expression x = input(g, Dim({2, 3}), V{1, 2, 3, 4, 5, 6});
  expect_values(affine_transform({b, W, x}), Dim({2, 3}, 2),
                {2, 4, 4, 6, 6, 8, 11, 22, 13, 24, 15, 26});
  expect_values(affine_transform({b}), Dim({2}, 2), {1, 2, 10, 20});
  expect_values(affine_transform(std::vector<Expression>{b, W, x}), Dim({2, 3}, 2),
                {2, 4, 4, 6, 6, 8, 11, 22, 13, 24, 15, 26});
}

TEST(Arith, ColwiseAddSumAverage) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}), V{1, 2, 3, 4, 5, 6});
  Expression bias = input(g, Dim({2}), V{10, 100});
  expect_values(colwise_add(x, bias), Dim({2, 3}), {11, 102, 13, 104, 15, 106});
  Expression a = input(g, Dim({2}), V{1, 2});
  Expression bb = input(g, Dim({2}, 2), V{10, 20, 30, 40});
  Expression c = input(g, Dim({2}), V{100, 200});
  expect_values(sum({a, bb, c}), Dim({2}, 2), {111, 222, 131, 242});
  expect_values(average({a, bb, c}), Dim({2}, 2), {37, 74, 131.f / 3, 242.f / 3});
  expect_values(sum(std::vector<Expression>{a}), Dim({2}), {1, 2});
  // more arguments than the small-list fast path holds
  std::vector<Expression> many;
  for (int k = 0; k < 20; ++k) many.push_back(a);
  expect_values(sum(many), Dim({2}), {20, 40});
  expect_values(average(many), Dim({2}), {1, 2});
}

TEST(Arith, DotProductNormsDistances) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}, 2), V{1, 2, 3, -1, 0, 1});
  Expression y = input(g, Dim({3}), V{2, 0, 1});
  expect_values(dot_product(x, y), Dim({1}, 2), {5, -1});
  expect_values(dot_product(y, x), Dim({1}, 2), {5, -1});
  expect_values(squared_norm(x), Dim({1}, 2), {14, 2});
  expect_values(squared_distance(x, y), Dim({1}, 2), {1 + 4 + 4, 9 + 0 + 0});
}

TEST(Arith, ErrorsNameTheOpAndDims) {
  ComputationGraph g;
  Expression a = input(g, Dim({2, 3}), V(6, 1.f));
  try {
    (void)(a * a);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("{2,3} cannot multiply {2,3}"), std::string::npos) << e.what();
  }
  Expression b = input(g, Dim({3, 2}), V(6, 1.f));
  EXPECT_THROW(a + b, std::invalid_argument);
  EXPECT_THROW(affine_transform({a, a}), std::invalid_argument);
  EXPECT_THROW(sum(std::vector<Expression>{}), std::invalid_argument);
  ComputationGraph other;
  Expression c = input(other, Dim({2, 3}), V(6, 1.f));
  EXPECT_THROW(sum({a, c}), std::invalid_argument);
  EXPECT_THROW(affine_transform({a, b, c}), std::invalid_argument);
  EXPECT_THROW(sum({a, Expression()}), std::invalid_argument);
  const size_t n = g.size();
  EXPECT_THROW(cmult(a, b), std::invalid_argument);
  EXPECT_EQ(g.size(), n);  // a failed op adds no node
}

TEST(Arith, DifferenceIsOneNode) {
  ComputationGraph g;
  Expression a = input(g, Dim({2}), V{1, 2});
  Expression b = input(g, Dim({2}), V{3, 5});
  const size_t n = g.size();
  Expression d = a - b;
  EXPECT_EQ(g.size(), n + 1);
  expect_values(d, Dim({2}), {-2, -3});
}

}  // namespace
}  // namespace dynet
