// Trainers: each update rule against a hand-computed step, clipping, sparse updates, subsets.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "dynet/model.h"
#include "dynet/param-init.h"
#include "dynet/training.h"

namespace dynet {
namespace {

std::vector<float> values_of(const Parameter& p) {
  const Tensor& t = p.get_storage().values;
  return std::vector<float>(t.v, t.v + t.d.size());
}
std::vector<float> row_of(const LookupParameter& lp, unsigned r) {
  const Tensor& t = lp.get_storage().values[r];
  return std::vector<float>(t.v, t.v + t.d.size());
}
void give_grad(const Parameter& p, std::vector<float> g) {
  p.get_storage().accumulate_grad(Tensor(p.get_storage().dim, g.data()));
}
void give_row_grad(const LookupParameter& lp, unsigned r, const std::vector<float>& g) {
  lp.get_storage().accumulate_grad(r, g.data());
}
void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_NEAR(got[k], want[k], tol * (1 + std::abs(want[k]))) << "element " << k;
}
void expect_grad_cleared(const Parameter& p) {
  const ParameterStorage& s = p.get_storage();
  EXPECT_FALSE(s.nonzero_grad);
  for (unsigned k = 0; k < s.dim.size(); ++k) EXPECT_EQ(s.g.v[k], 0.f);
}

// Adam reference in double precision: one step on (p, m, v) with 1-based step t.
struct AdamRef {
  double lr = 0.001, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  std::vector<double> p, m, v;
  void step(const std::vector<double>& g, int t, double gscale = 1) {
    const double lr_t = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    for (size_t k = 0; k < p.size(); ++k) {
      const double gk = g[k] * gscale;
      m[k] = b1 * m[k] + (1 - b1) * gk;
      v[k] = b2 * v[k] + (1 - b2) * gk * gk;
      p[k] -= lr_t * m[k] / (std::sqrt(v[k]) + eps);
    }
  }
};

TEST(Trainer, DefaultsMatchDynet) {
  ParameterCollection m;
  SimpleSGDTrainer sgd(m);
  EXPECT_FLOAT_EQ(sgd.learning_rate, 0.1f);
  EXPECT_TRUE(sgd.clipping_enabled);
  EXPECT_FLOAT_EQ(sgd.clip_threshold, 5.f);
  EXPECT_TRUE(sgd.sparse_updates_enabled);
  EXPECT_EQ(sgd.updates, 0);
  EXPECT_EQ(sgd.clips, 0);
  AdamTrainer adam(m);
  EXPECT_FLOAT_EQ(adam.learning_rate, 0.001f);
  EXPECT_FLOAT_EQ(adam.beta_1, 0.9f);
  EXPECT_FLOAT_EQ(adam.beta_2, 0.999f);
  EXPECT_FLOAT_EQ(adam.epsilon, 1e-8f);
  EXPECT_THROW(SimpleSGDTrainer(m, -1.f), std::invalid_argument);
  EXPECT_THROW(AdamTrainer(m, 0.001f, 1.f), std::invalid_argument);
}

TEST(Trainer, SimpleSGDStep) {
  ParameterCollection m;
  Parameter p = m.add_parameters({3});
  p.set_value({1.f, 2.f, 3.f});
  SimpleSGDTrainer sgd(m, 0.25f);
  give_grad(p, {0.5f, -1.f, 2.f});  // norm < 5: no clipping
  sgd.update();
  expect_near_all(values_of(p), {1 - 0.25 * 0.5, 2 + 0.25, 3 - 0.25 * 2});
  expect_grad_cleared(p);
  EXPECT_EQ(sgd.updates, 1);
  EXPECT_EQ(sgd.clips, 0);
  // Without a gradient nothing moves.
  sgd.update();
  expect_near_all(values_of(p), {1 - 0.25 * 0.5, 2 + 0.25, 3 - 0.25 * 2});
  EXPECT_EQ(sgd.updates, 2);
}

TEST(Trainer, AdamStepsMatchTheFormula) {
  ParameterCollection m;
  Parameter p = m.add_parameters({2, 2});
  p.set_value({0.5f, -0.25f, 1.f, 2.f});
  AdamTrainer adam(m, 0.01f, 0.8f, 0.99f, 1e-6f);
  AdamRef ref;
  ref.lr = 0.01, ref.b1 = 0.8, ref.b2 = 0.99, ref.eps = 1e-6;
  ref.p = {0.5, -0.25, 1, 2};
  ref.m.assign(4, 0);
  ref.v.assign(4, 0);
  const std::vector<std::vector<double>> grads = {{0.1, -0.2, 0.3, 1.5}, {-0.4, 0.05, 0.3, 0.}, {2., 1., -1., 0.5}};
  for (int t = 0; t < 3; ++t) {
    std::vector<float> g(grads[t].begin(), grads[t].end());
    give_grad(p, g);
    adam.update();
    ref.step(grads[t], t + 1);
    expect_near_all(values_of(p), ref.p, 1e-5);
    expect_grad_cleared(p);
  }
  EXPECT_EQ(adam.updates, 3);
}

TEST(Trainer, ClippingScalesByTheGlobalNorm) {
  ParameterCollection m;
  Parameter a = m.add_parameters({2}, ParameterInitConst(0.f));
  Parameter b = m.add_parameters({1}, ParameterInitConst(0.f));
  LookupParameter lp = m.add_lookup_parameters(3, {2}, ParameterInitConst(0.f));
  SimpleSGDTrainer sgd(m, 1.f);
  // Global norm over both parameters and the lookup row: sqrt(9 + 16 + 25 + 25 + 25) = 10.
  give_grad(a, {3.f, 4.f});
  give_grad(b, {5.f});
  give_row_grad(lp, 1, {5.f, 5.f});
  EXPECT_NEAR(sgd.clip_gradients(), 0.5f, 1e-6);  // also counts a clip
  sgd.clips = sgd.clips_since_status = 0;
  sgd.update();
  expect_near_all(values_of(a), {-1.5, -2.});
  expect_near_all(values_of(b), {-2.5});
  expect_near_all(row_of(lp, 1), {-2.5, -2.5});
  EXPECT_EQ(sgd.clips, 1);

  // Disabled clipping: the raw gradient.
  sgd.clipping_enabled = false;
  give_grad(a, {30.f, 40.f});
  sgd.update();
  expect_near_all(values_of(a), {-31.5, -42.});
  EXPECT_EQ(sgd.clips, 1);

  // A norm below the threshold is not clipped.
  sgd.clipping_enabled = true;
  give_grad(b, {1.f});
  EXPECT_FLOAT_EQ(sgd.clip_gradients(), 1.f);
}

TEST(Trainer, BadGradientThrowsAndLeavesParametersAlone) {
  ParameterCollection m;
  Parameter a = m.add_parameters({2});
  Parameter b = m.add_parameters({2});
  const std::vector<float> a0 = values_of(a), b0 = values_of(b);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    SimpleSGDTrainer sgd(m);
    give_grad(a, {0.1f, 0.2f});
    give_grad(b, {bad, 1.f});
    try {
      sgd.update();
      ADD_FAILURE() << "expected std::runtime_error";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("Magnitude of gradient is bad"), std::string::npos) << e.what();
    }
    EXPECT_EQ(values_of(a), a0);
    EXPECT_EQ(values_of(b), b0);
    EXPECT_EQ(sgd.updates, 0);
    m.reset_gradient();
  }
}

TEST(Trainer, SparseLookupUpdateTouchesOnlyLookedUpRows) {
  ParameterCollection m;
  LookupParameter lp = m.add_lookup_parameters(5, {3});
  std::vector<std::vector<float>> before;
  for (unsigned r = 0; r < 5; ++r) before.push_back(row_of(lp, r));
  SimpleSGDTrainer sgd(m, 0.5f);
  give_row_grad(lp, 1, {1.f, 0.f, -1.f});
  give_row_grad(lp, 3, {0.f, 2.f, 0.f});
  sgd.update();
  for (unsigned r : {0u, 2u, 4u}) EXPECT_EQ(row_of(lp, r), before[r]) << "row " << r;
  expect_near_all(row_of(lp, 1), {before[1][0] - 0.5, before[1][1], before[1][2] + 0.5});
  expect_near_all(row_of(lp, 3), {before[3][0], before[3][1] - 1., before[3][2]});
  EXPECT_TRUE(lp.get_storage().non_zero_grads.empty());
  EXPECT_FALSE(lp.get_storage().nonzero_grad);
}

// Adam keeps m and v per row and, sparsely, only steps rows that got a gradient: a row seen once
// does not keep moving on its momentum in later updates. Dense updates do move it.
TEST(Trainer, AdamSparseAndDenseLookupUpdates) {
  for (bool sparse : {true, false}) {
    ParameterCollection m;
    LookupParameter lp = m.add_lookup_parameters(4, {2}, ParameterInitConst(1.f));
    AdamTrainer adam(m);
    adam.sparse_updates_enabled = sparse;
    give_row_grad(lp, 1, {0.5f, -0.5f});
    adam.update();
    AdamRef row1;
    row1.p = {1, 1};
    row1.m = row1.v = {0, 0};
    row1.step({0.5, -0.5}, 1);
    expect_near_all(row_of(lp, 1), row1.p);
    const std::vector<float> row1_after_first = row_of(lp, 1);
    give_row_grad(lp, 2, {1.f, 1.f});
    adam.update();
    AdamRef row2;
    row2.p = {1, 1};
    row2.m = row2.v = {0, 0};
    row2.step({1, 1}, 2);  // t counts every update, as in DyNet
    expect_near_all(row_of(lp, 2), row2.p);
    if (sparse) {
      EXPECT_EQ(row_of(lp, 1), row1_after_first);  // untouched in the second update
    } else {
      row1.step({0, 0}, 2);  // moves on its momentum
      expect_near_all(row_of(lp, 1), row1.p);
      EXPECT_NE(row_of(lp, 1), row1_after_first);
    }
    for (unsigned r : {0u, 3u}) expect_near_all(row_of(lp, r), {1, 1});  // never had a gradient
  }
}

TEST(Trainer, UpdateSubset) {
  ParameterCollection m;
  Parameter a = m.add_parameters({2}, ParameterInitConst(1.f));
  Parameter b = m.add_parameters({2}, ParameterInitConst(1.f));
  LookupParameter l0 = m.add_lookup_parameters(2, {2}, ParameterInitConst(1.f));
  LookupParameter l1 = m.add_lookup_parameters(2, {2}, ParameterInitConst(1.f));
  SimpleSGDTrainer sgd(m, 1.f);
  give_grad(a, {1.f, 1.f});
  give_grad(b, {1.f, 2.f});
  give_row_grad(l0, 0, {1.f, 1.f});
  give_row_grad(l1, 1, {2.f, 1.f});
  sgd.update({1}, {1});
  expect_near_all(values_of(a), {1, 1});
  expect_near_all(values_of(b), {0, -1});
  expect_near_all(row_of(l0, 0), {1, 1});
  expect_near_all(row_of(l1, 1), {-1, 0});
  EXPECT_EQ(sgd.updates, 1);
  // The others keep their gradients for a later update.
  EXPECT_TRUE(a.get_storage().nonzero_grad);
  EXPECT_TRUE(l0.get_storage().nonzero_grad);
  sgd.update({0}, {0});
  expect_near_all(values_of(a), {0, 0});
  expect_near_all(row_of(l0, 0), {0, 0});
  EXPECT_THROW(sgd.update({2}, {}), std::invalid_argument);
  EXPECT_THROW(sgd.update({}, {5}), std::invalid_argument);
}

TEST(Trainer, FrozenParametersDoNotMove) {
  ParameterCollection m;
  Parameter a = m.add_parameters({2}, ParameterInitConst(1.f));
  Parameter frozen = m.add_parameters({2}, ParameterInitConst(1.f));
  LookupParameter frozen_lp = m.add_lookup_parameters(2, {2}, ParameterInitConst(1.f));
  frozen.set_updated(false);
  frozen_lp.set_updated(false);
  for (int kind = 0; kind < 2; ++kind) {
    std::unique_ptr<Trainer> t;
    if (kind == 0)
      t = std::make_unique<SimpleSGDTrainer>(m, 1.f);
    else
      t = std::make_unique<AdamTrainer>(m, 0.1f);
    give_grad(a, {1.f, 1.f});
    give_grad(frozen, {1.f, 1.f});
    give_row_grad(frozen_lp, 1, {1.f, 1.f});
    t->update();
    expect_near_all(values_of(frozen), {1, 1});
    expect_near_all(row_of(frozen_lp, 1), {1, 1});
    EXPECT_LT(values_of(a)[0], 1.f);
    // Their gradients are dropped so they cannot pile up.
    expect_grad_cleared(frozen);
    EXPECT_FALSE(frozen_lp.get_storage().nonzero_grad);
    a.set_value({1.f, 1.f});
  }
}

TEST(Trainer, RestartForgetsMoments) {
  ParameterCollection m;
  Parameter p = m.add_parameters({2}, ParameterInitConst(0.f));
  AdamTrainer adam(m, 0.1f);
  give_grad(p, {1.f, -2.f});
  adam.update();
  p.set_value({0.f, 0.f});
  adam.restart(0.05f);
  EXPECT_FLOAT_EQ(adam.learning_rate, 0.05f);
  EXPECT_EQ(adam.updates, 1);  // the step count is kept (DyNet's behaviour)
  give_grad(p, {1.f, -2.f});
  adam.update();
  AdamRef ref;
  ref.lr = 0.05;
  ref.p = {0, 0};
  ref.m = ref.v = {0, 0};  // fresh moments
  ref.step({1, -2}, 2);
  expect_near_all(values_of(p), ref.p);
  EXPECT_THROW(adam.restart(std::nanf("")), std::invalid_argument);
}

TEST(Trainer, ShadowStateGrowsWithTheCollection) {
  ParameterCollection m;
  Parameter a = m.add_parameters({2}, ParameterInitConst(0.f));
  AdamTrainer adam(m, 0.1f);
  give_grad(a, {1.f, 1.f});
  adam.update();
  ParameterCollection sub = m.add_subcollection("late");
  Parameter b = sub.add_parameters({3}, ParameterInitConst(0.f));
  LookupParameter lp = m.add_lookup_parameters(3, {2}, ParameterInitConst(0.f));
  give_grad(b, {1.f, -1.f, 0.5f});
  give_row_grad(lp, 2, {0.25f, 4.f});
  adam.update();
  AdamRef rb;
  rb.lr = 0.1;
  rb.p = {0, 0, 0};
  rb.m = rb.v = {0, 0, 0};
  rb.step({1, -1, 0.5}, 2);
  expect_near_all(values_of(b), rb.p);
  AdamRef rl;
  rl.lr = 0.1;
  rl.p = {0, 0};
  rl.m = rl.v = {0, 0};
  rl.step({0.25, 4}, 2);
  expect_near_all(row_of(lp, 2), rl.p);
}

TEST(Trainer, StatusPrintsAndResetsCounters) {
  ParameterCollection m;
  Parameter p = m.add_parameters({1}, ParameterInitConst(0.f));
  SimpleSGDTrainer sgd(m);
  give_grad(p, {10.f});
  sgd.update();
  testing::internal::CaptureStderr();
  sgd.status();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "[lr=0.1 clips=1 updates=1] ");
  EXPECT_EQ(sgd.updates_since_status, 0);
  EXPECT_EQ(sgd.clips_since_status, 0);
  EXPECT_EQ(sgd.updates, 1);
  EXPECT_EQ(sgd.clips, 1);
  testing::internal::CaptureStderr();
  sgd.update_epoch();
  sgd.update_epoch(0.5f);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("deprecated"), std::string::npos);
  EXPECT_EQ(warning.find("deprecated"), warning.rfind("deprecated"));  // once
  EXPECT_FLOAT_EQ(sgd.learning_rate, 0.1f);
}

}  // namespace
}  // namespace dynet
