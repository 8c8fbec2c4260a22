// TensorTools: fills, element access, logsumexp, argmax/topk and sampling on plain CPU tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "dynet/init.h"
#include "dynet/tensor.h"

namespace dynet {
namespace {

using V = std::vector<float>;
using Idx = std::vector<std::ptrdiff_t>;

// A tensor over its own storage.
struct Owned {
  V data;
  Tensor t;
  Owned(const Dim& d, V values = {}) : data(values.empty() ? V(d.size(), 0.f) : std::move(values)), t(d, data.data()) {
    if (data.size() != d.size()) throw std::logic_error("test tensor of the wrong size");
  }
};

double mean(const V& v) {
  double s = 0;
  for (float x : v) s += x;
  return s / v.size();
}

TEST(TensorTools, ClipConstantZeroScale) {
  Owned a(Dim({5}), {-3.f, -0.5f, 0.f, 0.7f, 9.f});
  TensorTools::clip(a.t, -1.f, 0.5f);
  EXPECT_EQ(a.data, (V{-1.f, -0.5f, 0.f, 0.5f, 0.5f}));
  EXPECT_THROW(TensorTools::clip(a.t, 1.f, 0.f), std::invalid_argument);
  TensorTools::constant(a.t, 2.5f);
  EXPECT_EQ(a.data, V(5, 2.5f));
  TensorTools::zero(a.t);
  EXPECT_EQ(a.data, V(5, 0.f));
  Owned u(Dim({3}), {0.f, 0.5f, 0.25f});
  TensorTools::scale(u.t, -2.f, 2.f);
  EXPECT_EQ(u.data, (V{-2.f, 0.f, -1.f}));
  Owned b(Dim({4}), {0.1f, 0.6f, 0.3f, 0.9f});
  TensorTools::uniform_to_bernoulli(b.t, 0.5f);
  EXPECT_EQ(b.data, (V{1.f, 0.f, 1.f, 0.f}));
}

TEST(TensorTools, IdentityPerBatchElementAndOnlySquare) {
  Owned m(Dim({2, 2}, 2), V(8, 7.f));
  TensorTools::identity(m.t);
  EXPECT_EQ(m.data, (V{1.f, 0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 1.f}));
  Owned r(Dim({2, 3}));
  EXPECT_THROW(TensorTools::identity(r.t), std::invalid_argument);
  Owned v(Dim({4}));
  EXPECT_THROW(TensorTools::identity(v.t), std::invalid_argument);
}

TEST(TensorTools, RandomFillsHaveTheRightDistribution) {
  reset_rng(42);
  const unsigned n = 20000;
  Owned x(Dim({n}));
  TensorTools::randomize_bernoulli(x.t, 0.3f, 2.f);
  for (float v : x.data) ASSERT_TRUE(v == 0.f || v == 2.f) << v;
  EXPECT_NEAR(mean(x.data), 0.6, 0.03);
  EXPECT_THROW(TensorTools::randomize_bernoulli(x.t, 1.5f), std::invalid_argument);

  TensorTools::randomize_normal(x.t, 1.f, 2.f);
  const double mu = mean(x.data);
  double var = 0;
  for (float v : x.data) var += (v - mu) * (v - mu);
  var /= n;
  EXPECT_NEAR(mu, 1.0, 0.06);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.06);
  EXPECT_THROW(TensorTools::randomize_normal(x.t, 0.f, -1.f), std::invalid_argument);

  TensorTools::randomize_uniform(x.t, -3.f, 1.f);
  for (float v : x.data) ASSERT_TRUE(v >= -3.f && v < 1.f) << v;
  EXPECT_NEAR(mean(x.data), -1.0, 0.05);
  TensorTools::randomize_uniform(x.t);  // DyNet's default [0, 1)
  for (float v : x.data) ASSERT_TRUE(v >= 0.f && v < 1.f) << v;
  EXPECT_NEAR(mean(x.data), 0.5, 0.02);
  EXPECT_THROW(TensorTools::randomize_uniform(x.t, 1.f, 1.f), std::invalid_argument);
}

TEST(TensorTools, RandomizeOrthonormal) {
  reset_rng(7);
  const unsigned n = 6;
  Owned q(Dim({n, n}));
  TensorTools::randomize_orthonormal(q.t, 0.5f);
  // Qᵀ Q = 0.25 I
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j) {
      double dot = 0;
      for (unsigned k = 0; k < n; ++k) dot += double(q.data[i * n + k]) * q.data[j * n + k];
      EXPECT_NEAR(dot, i == j ? 0.25 : 0.0, 1e-5) << i << "," << j;
    }
  Owned again(Dim({n, n}));
  TensorTools::randomize_orthonormal(again.t);
  EXPECT_NE(again.data[0], 2.f * q.data[0]);  // a fresh draw, not a fixed matrix
  Owned bad(Dim({3, 4}));
  EXPECT_THROW(TensorTools::randomize_orthonormal(bad.t), std::invalid_argument);
}

TEST(TensorTools, ElementAccess) {
  Owned m(Dim({2, 3}), {1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  EXPECT_EQ(TensorTools::access_element(m.t, 4), 5.f);
  EXPECT_EQ(TensorTools::access_element(m.t, Dim({1, 2})), 6.f);  // row 1, column 2
  EXPECT_EQ(TensorTools::access_element(m.t, Dim({1})), 2.f);     // column 0
  EXPECT_THROW(TensorTools::access_element(m.t, 6), std::invalid_argument);
  EXPECT_THROW(TensorTools::access_element(m.t, -1), std::invalid_argument);
  EXPECT_THROW(TensorTools::access_element(m.t, Dim({2, 0})), std::invalid_argument);
  EXPECT_THROW(TensorTools::access_element(m.t, Dim({0, 0, 1})), std::invalid_argument);

  TensorTools::set_element(m.t, 0, -1.f);
  EXPECT_EQ(m.data[0], -1.f);
  EXPECT_THROW(TensorTools::set_element(m.t, 9, 0.f), std::invalid_argument);
  Owned r(Dim({3}));
  TensorTools::copy_element(m.t, 5, r.t, 1);
  EXPECT_EQ(r.data, (V{0.f, 6.f, 0.f}));
  EXPECT_THROW(TensorTools::copy_element(m.t, 5, r.t, 3), std::invalid_argument);

  TensorTools::set_elements(r.t, {7.f, 8.f, 9.f});
  EXPECT_EQ(r.data, (V{7.f, 8.f, 9.f}));
  TensorTools::set_elements(r.t, {1.f});  // fewer values: the prefix, as DyNet's copy did
  EXPECT_EQ(r.data, (V{1.f, 8.f, 9.f}));
  EXPECT_THROW(TensorTools::set_elements(r.t, {1.f, 2.f, 3.f, 4.f}), std::invalid_argument);
  TensorTools::set_elements(r.t, {7.f, 8.f, 9.f});

  Owned c(Dim({3, 1}));
  TensorTools::copy_elements(c.t, r.t);  // equal sizes suffice
  EXPECT_EQ(c.data, r.data);
  TensorTools::accumulate(c.t, r.t);
  EXPECT_EQ(c.data, (V{14.f, 16.f, 18.f}));
  Owned two(Dim({2}));
  TensorTools::copy_elements(two.t, r.t);  // a larger source: its prefix, as DyNet's copy did
  EXPECT_EQ(two.data, (V{7.f, 8.f}));
  EXPECT_THROW(TensorTools::copy_elements(m.t, c.t), std::invalid_argument);  // smaller source
  EXPECT_THROW(TensorTools::accumulate(c.t, m.t), std::invalid_argument);
}

TEST(TensorTools, LogsumexpAlongADim) {
  const float inf = std::numeric_limits<float>::infinity();
  // columns (0, ln 3) and (1000, 1000), rows (0, 1000) and (ln 3, 1000)
  Owned x(Dim({2, 2}), {0.f, std::log(3.f), 1000.f, 1000.f});
  Owned m(Dim({2})), z(Dim({2}));
  TensorTools::logsumexp(x.t, m.t, z.t);
  EXPECT_EQ(m.data, (V{std::log(3.f), 1000.f}));
  EXPECT_NEAR(z.data[0], std::log(4.f), 1e-6);
  EXPECT_NEAR(z.data[1], 1000.f + std::log(2.f), 1e-3);
  TensorTools::logsumexp(x.t, m.t, z.t, 1);
  EXPECT_NEAR(z.data[0], 1000.f, 1e-3);
  EXPECT_NEAR(z.data[1], 1000.f, 1e-3);

  Owned b(Dim({2}, 2), {-inf, -inf, 1.f, 1.f});  // batched: one fiber per batch element
  TensorTools::logsumexp(b.t, m.t, z.t);
  EXPECT_EQ(z.data[0], -inf);
  EXPECT_NEAR(z.data[1], 1.f + std::log(2.f), 1e-6);

  Owned wrong(Dim({3}));
  EXPECT_THROW(TensorTools::logsumexp(x.t, m.t, wrong.t), std::invalid_argument);
  EXPECT_THROW(TensorTools::logsumexp(x.t, m.t, z.t, 2), std::invalid_argument);
}

TEST(TensorTools, ArgmaxAndTopk) {
  // columns (3, 9, 9) and (5, 1, 4)
  Owned x(Dim({3, 2}), {3.f, 9.f, 9.f, 5.f, 1.f, 4.f});
  IndexTensor a = TensorTools::argmax(x.t);
  EXPECT_EQ(a.d, Dim({1, 2}));
  EXPECT_EQ(as_vector(a), (Idx{1, 0}));  // the first of tied maxima
  IndexTensor rows = TensorTools::argmax(x.t, 1);
  EXPECT_EQ(rows.d, Dim({3, 1}));
  EXPECT_EQ(rows.v, (Idx{1, 0, 0}));
  IndexTensor two = TensorTools::argmax(x.t, 0, 2);
  EXPECT_EQ(two.d, Dim({2, 2}));
  EXPECT_EQ(two.v, (Idx{1, 2, 0, 2}));

  Owned values(Dim({2, 2}));
  IndexTensor t = TensorTools::topk(x.t, values.t, 0, 2);
  EXPECT_EQ(t.v, two.v);
  EXPECT_EQ(values.data, (V{9.f, 9.f, 5.f, 4.f}));
  const std::pair<Tensor, IndexTensor> top3 = TensorTools::topk(x.t, 0, 3);  // DyNet's form
  EXPECT_EQ(top3.second.v, (Idx{1, 2, 0, 0, 2, 1}));
  EXPECT_EQ(top3.first.d, Dim({3, 2}));
  EXPECT_EQ(as_vector(top3.first), (V{9.f, 9.f, 3.f, 5.f, 4.f, 1.f}));

  Owned batched(Dim({2}, 3), {1.f, 2.f, 4.f, 3.f, 0.f, 0.f});
  IndexTensor bi = TensorTools::argmax(batched.t);
  EXPECT_EQ(bi.d, Dim({1}, 3));
  EXPECT_EQ(bi.v, (Idx{1, 0, 0}));

  EXPECT_THROW(TensorTools::argmax(x.t, 0, 4), std::invalid_argument);
  EXPECT_THROW(TensorTools::argmax(x.t, 0, 0), std::invalid_argument);
  EXPECT_THROW(TensorTools::argmax(x.t, 2), std::invalid_argument);
  Owned small(Dim({3}));
  EXPECT_THROW(TensorTools::topk(x.t, small.t, 0, 2), std::invalid_argument);
}

TEST(TensorTools, CategoricalSampleFollowsTheLogProbabilities) {
  reset_rng(3);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  // unnormalized: log(7), log(2), log(1), log(0)
  Owned lp(Dim({4}), {std::log(7.f), std::log(2.f), 0.f, neg_inf});
  const unsigned n = 20000;
  IndexTensor s = TensorTools::categorical_sample_log_prob(lp.t, 0, n);
  EXPECT_EQ(s.d, Dim({n}));
  std::vector<double> freq(4, 0.0);
  for (std::ptrdiff_t k : s.v) {
    ASSERT_GE(k, 0);
    ASSERT_LT(k, 4);
    freq[k] += 1.0 / n;
  }
  EXPECT_NEAR(freq[0], 0.7, 0.015);
  EXPECT_NEAR(freq[1], 0.2, 0.015);
  EXPECT_NEAR(freq[2], 0.1, 0.015);
  EXPECT_EQ(freq[3], 0.0);

  // one draw per column of a matrix: a column with all mass on one row always picks it
  Owned m(Dim({2, 2}), {0.f, neg_inf, neg_inf, 5.f});
  EXPECT_EQ(TensorTools::categorical_sample_log_prob(m.t).v, (Idx{0, 1}));
  EXPECT_THROW(TensorTools::categorical_sample_log_prob(m.t, 0, 0), std::invalid_argument);
}

TEST(TensorTools, RandomHelpers) {
  reset_rng(11);
  for (int k = 0; k < 1000; ++k) {
    const float u = rand01();
    ASSERT_TRUE(u >= 0.f && u < 1.f);
    const int i = rand0n(3);
    ASSERT_TRUE(i >= 0 && i < 3);
    ASSERT_TRUE(std::isfinite(rand_normal()));
  }
  EXPECT_THROW(rand0n(0), std::invalid_argument);
}

}  // namespace
}  // namespace dynet
