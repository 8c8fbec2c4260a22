// Trainers: each update rule against a hand-computed step, clipping, sparse updates, subsets,
// weight decay, moving averages and the trainer text format.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "dynet/expr.h"
#include "dynet/globals.h"
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

TEST(Trainer, AdamUpdatesEveryElementOfALargeParameter) {
  // More elements than the update's chunk (512), and not a multiple of it: every element steps.
  const unsigned n = 1283;
  ParameterCollection m;
  Parameter p = m.add_parameters({n}, ParameterInitConst(0.f));
  AdamTrainer adam(m, 0.01f);
  AdamRef ref;
  ref.lr = 0.01;
  ref.p.assign(n, 0);
  ref.m.assign(n, 0);
  ref.v.assign(n, 0);
  std::vector<double> g(n);
  for (unsigned k = 0; k < n; ++k) g[k] = 0.001 * (int(k % 97) - 48);
  for (int t = 0; t < 2; ++t) {
    give_grad(p, std::vector<float>(g.begin(), g.end()));
    adam.update();
    ref.step(g, t + 1);
  }
  expect_near_all(values_of(p), ref.p, 1e-5);
}

// The first gradient of an update is copied into the cleared gradient, later ones are added, and a
// cleared gradient holds nothing of the previous update.
TEST(Trainer, GradientsInPartsAccumulate) {
  ParameterCollection m;
  Parameter p = m.add_parameters({37, 3});
  SimpleSGDTrainer sgd(m, 0.1f);
  const ParameterStorage& s = p.get_storage();
  for (int t = 0; t < 2; ++t) {
    std::vector<float> part1(111), part2(111);
    for (int k = 0; k < 111; ++k) {
      part1[k] = std::sin(0.7f * float(k + 50 * t));
      part2[k] = 0.25f * std::cos(1.3f * float(k) - float(t));
    }
    give_grad(p, part1);
    for (int k = 0; k < 111; ++k) ASSERT_EQ(s.g.v[k], part1[k]);
    give_grad(p, part2);
    for (int k = 0; k < 111; ++k) ASSERT_EQ(s.g.v[k], part1[k] + part2[k]);
    EXPECT_TRUE(s.nonzero_grad);
    sgd.update();
    expect_grad_cleared(p);
  }
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

// ---------------- every rule against a double-precision reference ----------------

using Vec = std::vector<double>;
// One step of a rule on one tensor of stored values p (the weight-decay scale wd divides the step),
// with shadow arrays st, the gradient already multiplied by the clipping factor, and t the 1-based
// update count. Written from the formulas in training.h / DyNet's documentation.
using RefStep = std::function<void(Vec& p, std::vector<Vec>& st, const Vec& g, int t, double wd)>;

struct RuleCase {
  const char* name;
  std::function<std::unique_ptr<Trainer>(ParameterCollection&)> make;
  int arrays;
  RefStep step;
  bool whole_tensor = false;  // the step couples a tensor's elements (EG): dense lookup = one tensor
};

double cyclical_reference_lr(int t) {  // lr_min 0.01, lr_max 0.1, step_size 2, gamma 0.5
  if (t == 1) return 0.01;
  const int it = t - 2;
  const double cycle = std::floor(1 + it / 4.0), x = std::abs(it / 2.0 - 2 * cycle + 1);
  return 0.01 + std::max(0.0, 1 - x) * 0.09 * std::pow(0.5, it);
}

std::vector<RuleCase> rule_cases() {
  auto adam_like = [](bool ams) {
    return [ams](Vec& p, std::vector<Vec>& st, const Vec& g, int t, double wd) {
      const double lr = 0.01, b1 = 0.8, b2 = 0.99, eps = 1e-6;
      const double lr_t = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t)) / wd;
      for (size_t k = 0; k < p.size(); ++k) {
        st[0][k] = b1 * st[0][k] + (1 - b1) * g[k];
        st[1][k] = b2 * st[1][k] + (1 - b2) * g[k] * g[k];
        double v = st[1][k];
        if (ams) v = st[2][k] = std::max(st[2][k], st[1][k]);
        p[k] -= lr_t * st[0][k] / (std::sqrt(v) + eps);
      }
    };
  };
  return {
      {"SimpleSGD", [](ParameterCollection& m) { return std::make_unique<SimpleSGDTrainer>(m, 0.2f); }, 0,
       [](Vec& p, std::vector<Vec>&, const Vec& g, int, double wd) {
         for (size_t k = 0; k < p.size(); ++k) p[k] -= 0.2 * g[k] / wd;
       }},
      {"CyclicalSGD",
       [](ParameterCollection& m) { return std::make_unique<CyclicalSGDTrainer>(m, 0.01f, 0.1f, 2.f, 0.5f); }, 0,
       [](Vec& p, std::vector<Vec>&, const Vec& g, int t, double wd) {
         for (size_t k = 0; k < p.size(); ++k) p[k] -= cyclical_reference_lr(t) * g[k] / wd;
       }},
      {"MomentumSGD", [](ParameterCollection& m) { return std::make_unique<MomentumSGDTrainer>(m, 0.1f, 0.8f); }, 1,
       [](Vec& p, std::vector<Vec>& st, const Vec& g, int, double wd) {
         for (size_t k = 0; k < p.size(); ++k) {
           st[0][k] = 0.8 * st[0][k] - 0.1 * g[k];
           p[k] += st[0][k] / wd;
         }
       }},
      {"Adagrad", [](ParameterCollection& m) { return std::make_unique<AdagradTrainer>(m, 0.1f, 1e-3f); }, 1,
       [](Vec& p, std::vector<Vec>& st, const Vec& g, int, double wd) {
         for (size_t k = 0; k < p.size(); ++k) {
           st[0][k] += g[k] * g[k];
           p[k] -= 0.1 * g[k] / std::sqrt(st[0][k] + 1e-3) / wd;
         }
       }},
      {"Adadelta", [](ParameterCollection& m) { return std::make_unique<AdadeltaTrainer>(m, 1e-4f, 0.9f); }, 2,
       [](Vec& p, std::vector<Vec>& st, const Vec& g, int, double wd) {
         for (size_t k = 0; k < p.size(); ++k) {
           st[0][k] = 0.9 * st[0][k] + 0.1 * g[k] * g[k];
           const double d = -g[k] * std::sqrt(st[1][k] + 1e-4) / std::sqrt(st[0][k] + 1e-4);
           st[1][k] = 0.9 * st[1][k] + 0.1 * d * d;
           p[k] += d / wd;
         }
       }},
      {"RMSProp", [](ParameterCollection& m) { return std::make_unique<RMSPropTrainer>(m, 0.05f, 1e-6f, 0.9f); }, 1,
       [](Vec& p, std::vector<Vec>& st, const Vec& g, int, double wd) {
         for (size_t k = 0; k < p.size(); ++k) {
           st[0][k] = 0.9 * st[0][k] + 0.1 * g[k] * g[k];
           p[k] -= 0.05 * g[k] / std::sqrt(st[0][k] + 1e-6) / wd;
         }
       }},
      {"Adam", [](ParameterCollection& m) { return std::make_unique<AdamTrainer>(m, 0.01f, 0.8f, 0.99f, 1e-6f); }, 2,
       adam_like(false)},
      {"Amsgrad",
       [](ParameterCollection& m) { return std::make_unique<AmsgradTrainer>(m, 0.01f, 0.8f, 0.99f, 1e-6f); }, 3,
       adam_like(true)},
      {"EG", [](ParameterCollection& m) { return std::make_unique<EGTrainer>(m, 0.5f, 0.5f); }, 1,
       [](Vec& p, std::vector<Vec>& st, const Vec& g, int, double wd) {
         double z = 0;
         for (size_t k = 0; k < p.size(); ++k) {
           st[0][k] = 0.5 * st[0][k] - 0.5 * g[k];
           p[k] = std::log(p[k]) + st[0][k] / wd;
           z += std::exp(p[k]);
         }
         for (double& x : p) x = std::exp(x) / z;
       },
       true},
  };
}

// A parameter and a 3-row lookup table stepped three times: the parameter gets no gradient in the
// second update (rules with state still move it, as in DyNet), the third update is clipped, lookup
// rows get gradients in turn. Checked against the reference for sparse and dense lookup updates,
// with and without weight decay (stored values and the decay scale, as DyNet keeps them).
TEST(TrainerRules, MatchTheReferenceStepByStep) {
  const std::vector<Vec> param_grads = {{0.5, -1, 2}, {}, {3, 4, -2}};
  const std::vector<std::vector<std::pair<unsigned, Vec>>> row_grads = {
      {{1, {1, -0.5}}}, {{2, {0.25, 2}}, {0, {0.5, 0.5}}}, {{1, {-1, 1}}}};
  for (const RuleCase& rule : rule_cases()) {
    for (bool sparse : {true, false}) {
      for (double lambda : {0.0, 0.2}) {
        SCOPED_TRACE(std::string(rule.name) + (sparse ? " sparse" : " dense") + " lambda=" + std::to_string(lambda));
        ParameterCollection m(static_cast<float>(lambda));
        Parameter p = m.add_parameters({3});
        p.set_value({0.2f, 0.3f, 0.5f});
        LookupParameter lp = m.add_lookup_parameters(3, {2});
        const std::vector<Vec> row_init = {{0.25, 0.75}, {0.4, 0.6}, {0.9, 0.1}};
        for (unsigned r = 0; r < 3; ++r) lp.initialize(r, std::vector<float>(row_init[r].begin(), row_init[r].end()));
        std::unique_ptr<Trainer> trainer = rule.make(m);
        trainer->set_sparse_updates(sparse);

        Vec ref_p = {0.2, 0.3, 0.5};
        std::vector<Vec> ref_p_state(rule.arrays, Vec(3, 0));
        Vec ref_table = {0.25, 0.75, 0.4, 0.6, 0.9, 0.1};
        std::vector<Vec> ref_table_state(rule.arrays, Vec(6, 0));
        double wd = 1;
        for (int t = 1; t <= 3; ++t) {
          const Vec& pg = param_grads[t - 1];
          double sq = 0;
          if (!pg.empty()) {
            give_grad(p, std::vector<float>(pg.begin(), pg.end()));
            for (double x : pg) sq += x * x;
          }
          Vec table_grad(6, 0);
          for (const auto& [r, g] : row_grads[t - 1]) {
            give_row_grad(lp, r, std::vector<float>(g.begin(), g.end()));
            for (size_t k = 0; k < 2; ++k) {
              table_grad[2 * r + k] = g[k];
              sq += g[k] * g[k];
            }
          }
          const double gscale = std::sqrt(sq) > 5 ? 5 / std::sqrt(sq) : 1;
          trainer->update();

          Vec g = pg.empty() ? Vec(3, 0) : pg;
          for (double& x : g) x *= gscale;
          rule.step(ref_p, ref_p_state, g, t, wd);
          for (double& x : table_grad) x *= gscale;
          if (sparse) {
            for (const auto& [r, unused] : row_grads[t - 1]) {
              Vec row(ref_table.begin() + 2 * r, ref_table.begin() + 2 * r + 2);
              Vec row_g(table_grad.begin() + 2 * r, table_grad.begin() + 2 * r + 2);
              std::vector<Vec> row_state;
              for (const Vec& a : ref_table_state) row_state.emplace_back(a.begin() + 2 * r, a.begin() + 2 * r + 2);
              rule.step(row, row_state, row_g, t, wd);
              std::copy(row.begin(), row.end(), ref_table.begin() + 2 * r);
              for (int a = 0; a < rule.arrays; ++a)
                std::copy(row_state[a].begin(), row_state[a].end(), ref_table_state[a].begin() + 2 * r);
            }
          } else {
            rule.step(ref_table, ref_table_state, table_grad, t, wd);
          }
          wd *= 1 - lambda;

          SCOPED_TRACE("update " + std::to_string(t));
          expect_near_all(values_of(p), ref_p, 2e-5);
          for (unsigned r = 0; r < 3; ++r)
            expect_near_all(row_of(lp, r), Vec(ref_table.begin() + 2 * r, ref_table.begin() + 2 * r + 2), 2e-5);
          EXPECT_NEAR(p.current_weight_decay(), wd, 1e-6);
          EXPECT_NEAR(lp.current_weight_decay(), wd, 1e-6);
          expect_grad_cleared(p);
          EXPECT_FALSE(lp.get_storage().nonzero_grad);
        }
        EXPECT_EQ(trainer->updates, 3);
        EXPECT_EQ(trainer->clips, 1);
      }
    }
  }
}

TEST(TrainerRules, HandComputedSteps) {
  {  // momentum 0.9, lr 0.1: v = -0.05, then -0.9·0.05 - 0.05 = -0.095
    ParameterCollection m;
    Parameter p = m.add_parameters({1}, ParameterInitConst(1.f));
    MomentumSGDTrainer t(m, 0.1f, 0.9f);
    give_grad(p, {0.5f});
    t.update();
    expect_near_all(values_of(p), {0.95});
    give_grad(p, {0.5f});
    t.update();
    expect_near_all(values_of(p), {0.855});
    t.update();  // no gradient: the momentum alone, -0.0855
    expect_near_all(values_of(p), {0.7695});
  }
  {  // Adagrad lr 0.1, eps 0: first step lr·sign(g); then G = 9 + 16 = 25, step 0.1·4/5
    ParameterCollection m;
    Parameter p = m.add_parameters({1}, ParameterInitConst(1.f));
    AdagradTrainer t(m, 0.1f, 0.f);
    give_grad(p, {3.f});
    t.update();
    expect_near_all(values_of(p), {0.9});
    give_grad(p, {4.f});
    t.update();
    expect_near_all(values_of(p), {0.82});
  }
  {  // RMSProp lr 0.1, rho 0.5, eps 0: h = 0.5·4 = 2, step 0.1·2/√2
    ParameterCollection m;
    Parameter p = m.add_parameters({1}, ParameterInitConst(0.f));
    RMSPropTrainer t(m, 0.1f, 0.f, 0.5f);
    give_grad(p, {2.f});
    t.update();
    expect_near_all(values_of(p), {-0.1 * std::sqrt(2.0)});
  }
  {  // Adadelta rho 0.5, eps 0.01: hg = 2, d = -2·√0.01/√2.01
    ParameterCollection m;
    Parameter p = m.add_parameters({1}, ParameterInitConst(0.f));
    AdadeltaTrainer t(m, 0.01f, 0.5f);
    give_grad(p, {2.f});
    t.update();
    expect_near_all(values_of(p), {-0.2 / std::sqrt(2.01)});
  }
  {  // EG lr 1, no momentum, p = (0.5, 0.5), g = (ln 3, 0): p ∝ (0.5/3, 0.5) = (0.25, 0.75)
    ParameterCollection m;
    Parameter p = m.add_parameters({2}, ParameterInitConst(0.5f));
    EGTrainer t(m, 1.f, 0.f);
    give_grad(p, {static_cast<float>(std::log(3.0)), 0.f});
    t.update();
    expect_near_all(values_of(p), {0.25, 0.75});
  }
}

TEST(TrainerRules, DefaultsAndValidation) {
  ParameterCollection m;
  CyclicalSGDTrainer cyc(m);
  EXPECT_FLOAT_EQ(cyc.learning_rate, 0.01f);
  EXPECT_FLOAT_EQ(cyc.e_min, 0.01f);
  EXPECT_FLOAT_EQ(cyc.e_max, 0.1f);
  EXPECT_FLOAT_EQ(cyc.step_size, 2000.f);
  EXPECT_FLOAT_EQ(cyc.gamma, 1.f);
  MomentumSGDTrainer mom(m);
  EXPECT_FLOAT_EQ(mom.learning_rate, 0.01f);
  EXPECT_FLOAT_EQ(mom.momentum, 0.9f);
  AdagradTrainer ada(m);
  EXPECT_FLOAT_EQ(ada.learning_rate, 0.1f);
  EXPECT_FLOAT_EQ(ada.epsilon, 1e-20f);
  AdadeltaTrainer delta(m);
  EXPECT_FLOAT_EQ(delta.epsilon, 1e-6f);
  EXPECT_FLOAT_EQ(delta.rho, 0.95f);
  RMSPropTrainer rms(m);
  EXPECT_FLOAT_EQ(rms.learning_rate, 0.1f);
  EXPECT_FLOAT_EQ(rms.epsilon, 1e-20f);
  EXPECT_FLOAT_EQ(rms.rho, 0.95f);
  AmsgradTrainer ams(m);
  EXPECT_FLOAT_EQ(ams.learning_rate, 0.001f);
  EXPECT_FLOAT_EQ(ams.beta_1, 0.9f);
  EXPECT_FLOAT_EQ(ams.beta_2, 0.999f);
  EXPECT_FLOAT_EQ(ams.epsilon, 1e-8f);
  EGTrainer eg(m);
  EXPECT_FLOAT_EQ(eg.learning_rate, 0.1f);
  EXPECT_FLOAT_EQ(eg.momentum, 0.9f);
  EXPECT_FALSE(eg.isCyclical);
  EXPECT_EQ(eg.moving_average(), MovingAverage::None);

  EXPECT_THROW(CyclicalSGDTrainer(m, 0.01f, 0.1f, 0.f), std::invalid_argument);
  EXPECT_THROW(MomentumSGDTrainer(m, 0.1f, -1.f), std::invalid_argument);
  EXPECT_THROW(AdagradTrainer(m, 0.1f, -1.f), std::invalid_argument);
  EXPECT_THROW(AdadeltaTrainer(m, 1e-6f, 1.5f), std::invalid_argument);
  EXPECT_THROW(RMSPropTrainer(m, 0.1f, 1e-8f, -0.1f), std::invalid_argument);
  EXPECT_THROW(AmsgradTrainer(m, 0.001f, 0.9f, 1.f), std::invalid_argument);
  EXPECT_THROW(EGTrainer(m, std::nanf("")), std::invalid_argument);
}

TEST(TrainerRules, CyclicalScheduleAndRestart) {
  ParameterCollection m;
  Parameter p = m.add_parameters({1}, ParameterInitConst(0.f));
  CyclicalSGDTrainer t(m, 0.01f, 0.1f, 2.f, 0.5f);
  const std::vector<double> want = {0.01, 0.0325, 0.0325, 0.015625, 0.01, 0.01 + 0.5 * 0.09 * std::pow(0.5, 5)};
  for (size_t k = 0; k < want.size(); ++k) {
    t.update();
    EXPECT_NEAR(t.learning_rate, want[k], 1e-7) << "after update " << k + 1;
    EXPECT_NEAR(t.learning_rate, cyclical_reference_lr(static_cast<int>(k) + 2), 1e-7);
  }
  t.restart();  // keeps the schedule's position (as DyNet)
  EXPECT_EQ(t.it, want.size());
}

TEST(TrainerRules, EGCyclicalAndBadValues) {
  ParameterCollection m;
  Parameter p = m.add_parameters({2}, ParameterInitConst(0.5f));
  EGTrainer eg(m, 0.3f);
  eg.enableCyclicalLR(0.01f, 0.1f, 2.f, 0.5f);
  eg.update();
  EXPECT_NEAR(eg.learning_rate, 0.01, 1e-7);
  eg.update();
  EXPECT_NEAR(eg.learning_rate, 0.0325, 1e-7);
  p.set_value({0.5f, -0.5f});
  give_grad(p, {1.f, 1.f});
  EXPECT_THROW(eg.update(), std::runtime_error);
  expect_near_all(values_of(p), {0.5, -0.5});
}

// ---------------- weight decay ----------------

TEST(WeightDecay, ScaleStepsAndParameterNodesOutputScaledValues) {
  ParameterCollection m(0.5f);
  EXPECT_FLOAT_EQ(m.get_weight_decay_lambda(), 0.5f);
  Parameter p = m.add_parameters({2});
  p.set_value({1.f, 2.f});
  LookupParameter lp = m.add_lookup_parameters(3, {2}, ParameterInitConst(1.f));
  SimpleSGDTrainer sgd(m, 0.1f);
  ComputationGraph cg;
  Expression e = parameter(cg, p), c = const_parameter(cg, p), l = lookup(cg, lp, {1u, 2u}), table = parameter(cg, lp);
  Expression total = sum_elems(e) + sum_elems(c) + sum_batches(sum_elems(l)) + sum_elems(table);
  cg.forward(total);
  EXPECT_EQ(e.value().v, p.get_storage().values.v);  // no decay pending: the node aliases the storage
  EXPECT_EQ(as_vector(e.value()), (std::vector<float>{1.f, 2.f}));

  sgd.update();  // no gradients: SGD leaves the values, the scale steps
  EXPECT_FLOAT_EQ(p.current_weight_decay(), 0.5f);
  EXPECT_FLOAT_EQ(lp.current_weight_decay(), 0.5f);
  EXPECT_FLOAT_EQ(m.get_weight_decay().current_weight_decay(), 0.5f);
  cg.forward(total);  // the same graph, recomputed: the new scale applies
  EXPECT_NE(e.value().v, p.get_storage().values.v);
  EXPECT_EQ(as_vector(e.value()), (std::vector<float>{0.5f, 1.f}));
  EXPECT_EQ(as_vector(c.value()), (std::vector<float>{0.5f, 1.f}));
  EXPECT_EQ(as_vector(l.value()), (std::vector<float>(4, 0.5f)));
  EXPECT_EQ(as_vector(table.value()), (std::vector<float>(6, 0.5f)));
  EXPECT_EQ(values_of(p), (std::vector<float>{1.f, 2.f}));  // storage untouched

  // Gradients are with respect to the effective (scaled) values: d Σ(x²)/dx = 2x = (1, 2).
  ComputationGraph g2;
  Expression loss = squared_norm(parameter(g2, p));
  EXPECT_FLOAT_EQ(as_scalar(g2.forward(loss)), 0.25f + 1.f);
  g2.backward(loss);
  expect_near_all(as_vector(p.get_storage().g), {1, 2});
  // SGD on stored values: x_eff ← (x_eff - lr·g)·(1-λ) = ((0.5, 1) - 0.1·(1, 2))·0.5
  sgd.update();
  EXPECT_FLOAT_EQ(p.current_weight_decay(), 0.25f);
  expect_near_all(values_of(p), {0.4 / 0.5, 0.8 / 0.5});
}

// End to end through graphs: SGD with weight decay on ½‖W·x - y‖² is gradient descent followed by
// shrinking the weights by (1-λ), across the rescale after the 9th update (0.85^9 < 0.25).
TEST(WeightDecay, TrainingThroughGraphsIsSgdWithShrinkage) {
  const double lambda = 0.15, lr = 0.1;
  ParameterCollection m(static_cast<float>(lambda));
  Parameter W = m.add_parameters({2, 3});
  W.set_value({0.5f, -0.25f, 1.f, 0.75f, -1.f, 0.25f});
  LookupParameter E = m.add_lookup_parameters(2, {3});
  E.initialize(1, {0.2f, 0.4f, -0.6f});
  SimpleSGDTrainer sgd(m, static_cast<float>(lr));
  sgd.clipping_enabled = false;
  std::vector<double> w = {0.5, -0.25, 1, 0.75, -1, 0.25}, e = {0.2, 0.4, -0.6};
  const std::vector<double> y = {1, -1};
  testing::internal::CaptureStderr();
  for (int t = 0; t < 12; ++t) {
    ComputationGraph cg;
    Expression x = lookup(cg, E, 1u);
    Expression loss = squared_distance(parameter(cg, W) * x, input(cg, Dim({2}), {1.f, -1.f})) * 0.5f;
    cg.forward(loss);
    cg.backward(loss);
    sgd.update();
    // Reference on the effective values (column-major W).
    std::vector<double> r(2), gw(6), ge(3, 0);
    for (int i = 0; i < 2; ++i) r[i] = w[i] * e[0] + w[2 + i] * e[1] + w[4 + i] * e[2] - y[i];
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) {
        gw[2 * j + i] = r[i] * e[j];
        ge[j] += w[2 * j + i] * r[i];
      }
    for (int k = 0; k < 6; ++k) w[k] = (w[k] - lr * gw[k]) * (1 - lambda);
    for (int j = 0; j < 3; ++j) e[j] = (e[j] - lr * ge[j]) * (1 - lambda);
  }
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("RESCALE WEIGHT DECAY"), std::string::npos);
  ComputationGraph cg;
  expect_near_all(as_vector(cg.forward(parameter(cg, W))), w, 1e-5);
  expect_near_all(as_vector(cg.forward(lookup(cg, E, 1u))), e, 1e-5);
}

TEST(WeightDecay, RescalesBelowAQuarterAndKeepsEffectiveValues) {
  ParameterCollection m(0.5f);
  Parameter p = m.add_parameters({2});
  p.set_value({1.f, -2.f});
  Parameter frozen = m.add_parameters({1}, ParameterInitConst(4.f));
  frozen.set_updated(false);
  LookupParameter lp = m.add_lookup_parameters(2, {1}, ParameterInitConst(8.f));
  MomentumSGDTrainer t(m, 0.1f, 0.f);
  t.update();
  t.update();
  EXPECT_FLOAT_EQ(p.current_weight_decay(), 0.25f);  // not below 0.25 yet
  testing::internal::CaptureStderr();
  t.update();
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("RESCALE WEIGHT DECAY FROM 0.125 to 1.0"), std::string::npos) << log;
  EXPECT_FLOAT_EQ(p.current_weight_decay(), 1.f);
  expect_near_all(values_of(p), {0.125, -0.25});
  expect_near_all(values_of(frozen), {0.5});  // frozen parameters keep their effective value too
  expect_near_all(row_of(lp, 1), {1.0});
}

TEST(WeightDecay, DefaultFromFlagAndSubcollections) {
  const float saved = default_weight_decay_lambda;
  default_weight_decay_lambda = 0.1f;  // what --dynet-weight-decay 0.1 sets
  ParameterCollection m;
  default_weight_decay_lambda = saved;
  EXPECT_FLOAT_EQ(m.get_weight_decay_lambda(), 0.1f);
  ParameterCollection follows = m.add_subcollection("a");
  ParameterCollection own = m.add_subcollection("b", 0.5f);
  EXPECT_FLOAT_EQ(follows.get_weight_decay_lambda(), 0.1f);
  EXPECT_FLOAT_EQ(own.get_weight_decay_lambda(), 0.5f);
  m.set_weight_decay_lambda(0.2f);
  EXPECT_FLOAT_EQ(follows.get_weight_decay_lambda(), 0.2f);
  EXPECT_FLOAT_EQ(own.get_weight_decay_lambda(), 0.5f);
  Parameter pm = m.add_parameters({1}), pa = follows.add_parameters({1}), pb = own.add_parameters({1});
  SimpleSGDTrainer sgd(m);
  sgd.update();
  EXPECT_FLOAT_EQ(pm.current_weight_decay(), 0.8f);
  EXPECT_FLOAT_EQ(pa.current_weight_decay(), 0.8f);
  EXPECT_FLOAT_EQ(pb.current_weight_decay(), 0.5f);
  SimpleSGDTrainer sub_only(own);  // a trainer on a subcollection steps only its decay
  sub_only.update();
  EXPECT_FLOAT_EQ(pm.current_weight_decay(), 0.8f);
  EXPECT_FLOAT_EQ(pb.current_weight_decay(), 0.25f);
  EXPECT_THROW(m.set_weight_decay_lambda(1.f), std::invalid_argument);
  EXPECT_THROW(m.set_weight_decay_lambda(-0.1f), std::invalid_argument);
  EXPECT_THROW(ParameterCollection(1.5f), std::invalid_argument);
  // Without decay the scale stays exactly 1.
  ParameterCollection plain(0.f);
  Parameter q = plain.add_parameters({1});
  SimpleSGDTrainer t(plain);
  for (int k = 0; k < 3; ++k) t.update();
  EXPECT_EQ(q.current_weight_decay(), 1.f);
}

TEST(WeightDecay, ExplicitRescaleFoldsTheScale) {
  ParameterCollection m(0.1f);
  Parameter p = m.add_parameters({1}, ParameterInitConst(2.f));
  SimpleSGDTrainer t(m);
  t.update();
  testing::internal::CaptureStderr();
  t.rescale_and_reset_weight_decay();
  testing::internal::GetCapturedStderr();
  EXPECT_FLOAT_EQ(p.current_weight_decay(), 1.f);
  expect_near_all(values_of(p), {1.8});
}

// ---------------- moving averages ----------------

TEST(MovingAverages, ExponentialAndCumulativeAverages) {
  for (MovingAverage mode : {MovingAverage::Exponential, MovingAverage::Cumulative}) {
    ParameterCollection m;
    Parameter p = m.add_parameters({2}, ParameterInitConst(0.f));
    LookupParameter lp = m.add_lookup_parameters(2, {1}, ParameterInitConst(0.f));
    SimpleSGDTrainer t(m, 1.f);
    t.clipping_enabled = false;
    if (mode == MovingAverage::Exponential)
      t.exponential_moving_average(0.5f);
    else
      t.cumulative_moving_average();
    EXPECT_EQ(t.moving_average(), mode);
    EXPECT_THROW(t.swap_params_to_moving_average(), std::runtime_error);  // nothing averaged yet
    // Weights after each update: 1, 3, 6 (and -1, -3, -6 for the lookup row 1).
    for (float g : {1.f, 2.f, 3.f}) {
      give_grad(p, {-g, -g});
      give_row_grad(lp, 1, {g});
      t.update();
    }
    const double ema = ((0.5 * 1) * 0.5 + 0.5 * 3) * 0.5 + 0.5 * 6;  // from 0: 0.5, 1.75, 3.875
    const double want = mode == MovingAverage::Exponential ? ema : (1 + 3 + 6) / 3.0;
    t.swap_params_to_moving_average();
    expect_near_all(values_of(p), {want, want});
    expect_near_all(row_of(lp, 1), {-want});
    t.swap_params_to_moving_average();  // already swapped: no-op
    expect_near_all(values_of(p), {want, want});
    t.swap_params_to_weights();
    EXPECT_EQ(values_of(p), (std::vector<float>{6.f, 6.f}));
    EXPECT_EQ(row_of(lp, 1), (std::vector<float>{-6.f}));
    if (mode == MovingAverage::Exponential) {
      t.swap_params_to_moving_average(true, true);
      const double corrected = ema / (1 - std::pow(0.5, 3));
      expect_near_all(values_of(p), {corrected, corrected});
      t.swap_params_to_weights();
    }
    t.swap_params_to_weights();  // not swapped: no-op
    EXPECT_EQ(values_of(p), (std::vector<float>{6.f, 6.f}));
  }
}

TEST(MovingAverages, UpdateFrequencyErrorsAndTrainingWhileSwapped) {
  ParameterCollection m;
  Parameter p = m.add_parameters({1}, ParameterInitConst(0.f));
  SimpleSGDTrainer t(m, 1.f);
  EXPECT_THROW(t.swap_params_to_moving_average(), std::runtime_error);  // not enabled
  EXPECT_THROW(t.cumulative_moving_average(0), std::invalid_argument);
  EXPECT_THROW(t.exponential_moving_average(1.5f), std::invalid_argument);
  t.cumulative_moving_average(2);  // takes in the weights after updates 1, 3, 5, ...
  for (float g : {1.f, 1.f, 1.f}) {  // weights 1, 2, 3
    give_grad(p, {-g});
    t.update();
  }
  EXPECT_THROW(t.exponential_moving_average(0.9f), std::runtime_error);  // after the first update
  t.swap_params_to_moving_average();
  expect_near_all(values_of(p), {2.0});  // mean of 1 and 3
  // An update while swapped continues from the saved weights.
  give_grad(p, {-1.f});
  t.update();
  expect_near_all(values_of(p), {4.0});
  // Swapped without saving: the weights are gone, the average becomes the weights.
  t.swap_params_to_moving_average(false);
  EXPECT_THROW(t.swap_params_to_weights(), std::runtime_error);
  give_grad(p, {-1.f});
  t.update();
  expect_near_all(values_of(p), {3.0});  // mean(1, 3) = 2, plus one step
}

TEST(MovingAverages, AverageTheEffectiveWeightsUnderWeightDecay) {
  ParameterCollection m(0.5f);
  Parameter p = m.add_parameters({1}, ParameterInitConst(4.f));
  SimpleSGDTrainer t(m, 1.f);
  t.cumulative_moving_average();
  t.update();  // effective 2 (stored 4, scale 0.5)
  t.update();  // effective 1 (stored 4, scale 0.25)
  t.swap_params_to_moving_average();
  ComputationGraph cg;
  EXPECT_FLOAT_EQ(as_scalar(cg.forward(parameter(cg, p))), 1.5f);
  t.swap_params_to_weights();
  EXPECT_EQ(values_of(p), (std::vector<float>{4.f}));
}

// ---------------- save / populate ----------------

// Floats as the trainer text format writes them, formatted independently (printf).
std::string values_line(const std::vector<float>& v) {
  std::string line;
  char buf[32];
  for (float x : v) {
    std::snprintf(buf, sizeof buf, "%+.8e ", x);
    line += buf;
  }
  return line;
}

std::string saved(Trainer& t) {
  std::ostringstream os;
  t.save(os);
  return os.str();
}

// A model with two parameters and a lookup table, trained a few steps with every rule.
struct TrainedModel {
  ParameterCollection m;
  Parameter a, b;
  LookupParameter lp;
  TrainedModel() {
    a = m.add_parameters({2, 2}, ParameterInitConst(0.5f));
    b = m.add_parameters({3}, ParameterInitConst(0.25f));
    lp = m.add_lookup_parameters(4, {2}, ParameterInitConst(0.5f));
  }
  void step(Trainer& t, int k) {
    give_grad(a, {0.1f * k, -0.2f, 0.3f, 0.05f * k});
    give_grad(b, {1.f, -0.5f * k, 0.25f});
    give_row_grad(lp, static_cast<unsigned>(k % 4), {0.5f, -0.25f * k});
    t.update();
  }
};

TEST(TrainerText, SavePopulateSaveIsIdenticalAndTrainingContinuesTheSame) {
  for (const RuleCase& rule : rule_cases()) {
    for (MovingAverage mode : {MovingAverage::None, MovingAverage::Exponential, MovingAverage::Cumulative}) {
      SCOPED_TRACE(rule.name);
      TrainedModel one, two;
      std::unique_ptr<Trainer> first = rule.make(one.m), second = rule.make(two.m);
      if (mode == MovingAverage::Exponential) first->exponential_moving_average(0.75f, 2);
      if (mode == MovingAverage::Cumulative) first->cumulative_moving_average();
      for (int k = 1; k <= 3; ++k) one.step(*first, k);
      const std::string text = saved(*first);
      // The second model gets the first one's values (as a model file would carry them).
      for (auto [from, to] : {std::pair{one.a, two.a}, std::pair{one.b, two.b}}) to.set_value(values_of(from));
      two.lp.get_storage().copy(one.lp.get_storage());
      std::istringstream in(text);
      second->populate(in);
      EXPECT_EQ(saved(*second), text);
      EXPECT_EQ(second->updates, 3);
      EXPECT_EQ(second->moving_average(), mode);
      // Same state: the next steps agree exactly.
      for (int k = 4; k <= 5; ++k) {
        one.step(*first, k);
        two.step(*second, k);
      }
      EXPECT_EQ(values_of(one.a), values_of(two.a));
      EXPECT_EQ(values_of(one.b), values_of(two.b));
      for (unsigned r = 0; r < 4; ++r) EXPECT_EQ(row_of(one.lp, r), row_of(two.lp, r));
      EXPECT_EQ(saved(*first), saved(*second));
      if (mode != MovingAverage::None) {
        first->swap_params_to_moving_average();
        second->swap_params_to_moving_average();
        EXPECT_EQ(values_of(one.a), values_of(two.a));
        EXPECT_THROW(saved(*first), std::runtime_error);  // swapped with saved weights
        first->swap_params_to_weights();
        second->swap_params_to_weights();
      }
    }
  }
}

TEST(TrainerText, TheFormatIsDynets) {
  ParameterCollection m;
  Parameter p = m.add_parameters({2}, ParameterInitConst(1.f));
  AdamTrainer adam(m, 0.5f);
  give_grad(p, {1.f, -1.f});
  adam.update();
  std::ostringstream os;
  os << 3.5;  // the stream's own format is restored after save
  adam.save(os);
  os << ' ' << 3.5;
  const float m0 = 1.f - 0.9f, v0 = 1.f - 0.999f;  // first moments after one step with g = ±1
  const std::string m1 = values_line({m0, -m0}), v1 = values_line({v0, v0});
  EXPECT_EQ(os.str(),
            "3.5#Trainer# 1 0\n"
            "+5.00000000e-01 +1 +5.00000000e+00 +1.00000000e+00 +0.00000000e+00 None +0 +0 1 0\n"
            "[MA:FALSE]\n"
            "#AdamTrainer# 1 0\n"
            "#Parameter# 2 " + m1 + "\n"
            "#Parameter# 2 " + v1 + "\n"
            "+8.99999976e-01 +9.99000013e-01 +9.99999994e-09\n"
            " 3.5");
  SimpleSGDTrainer sgd(m);
  sgd.cumulative_moving_average(3);
  sgd.update();
  EXPECT_EQ(saved(sgd),
            "#Trainer# 1 0\n"
            "+1.00000001e-01 +1 +5.00000000e+00 +1.00000000e+00 +0.00000000e+00 Cumulative +0 +0 3 1\n"
            "[MA:TRUE]\n"
            "#MA# 1 0\n"
            "#Parameter# 2 " + values_line(values_of(p)) + "\n");
}

void expect_populate_error(Trainer& t, const std::string& text, const std::string& message) {
  const std::string before = saved(t);
  const float lr = t.learning_rate;
  std::istringstream in(text);
  try {
    t.populate(in, 0.5f);
    ADD_FAILURE() << "expected std::runtime_error containing '" << message << "'";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
  EXPECT_EQ(saved(t), before);  // unchanged
  EXPECT_EQ(t.learning_rate, lr);
}

TEST(TrainerText, BadInputThrowsAndLeavesTheTrainerUnchanged) {
  TrainedModel source;
  MomentumSGDTrainer trained(source.m, 0.1f);
  trained.cumulative_moving_average();
  for (int k = 1; k <= 2; ++k) source.step(trained, k);
  const std::string text = saved(trained);

  TrainedModel target;
  MomentumSGDTrainer t(target.m, 0.3f);
  target.step(t, 1);
  // Fewer parameters than the file covers.
  {
    ParameterCollection small;
    small.add_parameters({2, 2});
    MomentumSGDTrainer s(small);
    expect_populate_error(s, text, "covers 2 parameters, but the collection has 1");
  }
  // Same counts, a parameter of another size.
  {
    ParameterCollection other;
    other.add_parameters({2, 2});
    other.add_parameters({4});
    other.add_lookup_parameters(4, {2});
    MomentumSGDTrainer s(other);
    expect_populate_error(s, text, "has 3 values, but the parameter has 4");
  }
  // Another trainer's state.
  {
    std::ostringstream adam_text;
    AdamTrainer adam(source.m);
    adam.save(adam_text);
    expect_populate_error(t, adam_text.str(), "expected #MomentumSGDTrainer#");
  }
  // Truncated, garbled and inconsistent inputs.
  expect_populate_error(t, text.substr(0, text.size() / 2), "Trainer::populate");
  expect_populate_error(t, "", "the input ends before");
  std::string garbled = text;
  garbled.replace(garbled.find("Cumulative"), 10, "Sometimes");
  expect_populate_error(t, garbled, "unknown moving average mode 'Sometimes'");
  std::string bad_number = text;
  bad_number.replace(bad_number.find("#Parameter# 4 ") + 14, 1, "x");
  expect_populate_error(t, bad_number, "is not a number");
  std::string no_average = text;
  no_average.replace(no_average.find("[MA:TRUE]"), 9, "[MA:FALSE]");
  expect_populate_error(t, no_average, "swapped");

  // The good input still loads afterwards, and populate(is, lr) sets the rate.
  std::istringstream in(text);
  t.populate(in, 0.05f);
  EXPECT_FLOAT_EQ(t.learning_rate, 0.05f);
  EXPECT_EQ(t.updates, 2);
  EXPECT_THROW(t.populate(in, -1.f), std::invalid_argument);
}

TEST(TrainerText, LaterParametersStartFreshAndOlderFilesLoad) {
  // A collection that grew after the save: the new parameter gets zero state.
  ParameterCollection m;
  Parameter a = m.add_parameters({1}, ParameterInitConst(0.f));
  MomentumSGDTrainer t(m, 1.f, 0.5f);
  give_grad(a, {1.f});
  t.update();  // velocity -1
  const std::string text = saved(t);
  Parameter b = m.add_parameters({1}, ParameterInitConst(0.f));
  MomentumSGDTrainer fresh(m, 1.f, 0.5f);
  std::istringstream in(text);
  fresh.populate(in);
  fresh.update();  // no gradients: a moves on its velocity, b has none
  expect_near_all(values_of(a), {-1.5});
  expect_near_all(values_of(b), {0});

  // DyNet does not save CyclicalSGDTrainer's schedule: its files end after the base section.
  ParameterCollection c;
  c.add_parameters({1});
  CyclicalSGDTrainer cyc(c, 0.01f, 0.1f, 2.f);
  cyc.update();
  cyc.update();
  const std::string full = saved(cyc);
  const std::string dynet_file = full.substr(0, full.find("#CyclicalSGDTrainer#"));
  CyclicalSGDTrainer other(c, 0.02f, 0.2f, 4.f);
  std::istringstream old_in(dynet_file + "#Parameter# /next-record\n");
  other.populate(old_in);
  EXPECT_EQ(other.it, 0u);  // schedule kept
  EXPECT_FLOAT_EQ(other.e_max, 0.2f);
  std::string next;
  std::getline(old_in, next);
  EXPECT_EQ(next, "#Parameter# /next-record");  // what follows is left unread
  std::istringstream full_in(full);
  other.populate(full_in);
  EXPECT_EQ(other.it, 2u);
  EXPECT_FLOAT_EQ(other.e_max, 0.1f);
  EXPECT_EQ(saved(other), full);
}

// The numbers of the trainer's state (its saved "#Parameter#" and "#LookupParameter#" lines) that are
// subnormal: nonzero and below FLT_MIN.
int subnormals_in_state(Trainer& t) {
  std::istringstream in(saved(t));
  std::string line;
  int found = 0;
  while (std::getline(in, line)) {
    if (line.rfind("#Parameter#", 0) != 0 && line.rfind("#LookupParameter#", 0) != 0) continue;
    std::istringstream fields(line);
    std::string word;
    fields >> word >> word;  // the tag and the count
    while (fields >> word) {
      const double x = std::strtod(word.c_str(), nullptr);
      found += x != 0 && std::abs(x) < std::numeric_limits<float>::min();
    }
  }
  return found;
}

// MXCSR's control bits (rounding, exception masks, flush-to-zero, denormals-are-zero), not its status
// flags, which the update's arithmetic raises.
unsigned mxcsr_controls() {
#if defined(__SSE__)
  return _mm_getcsr() & ~0x3Fu;
#else
  return 0;
#endif
}

// Optimizer state decays into subnormal numbers (tiny gradients squared, moments decaying without
// gradient), and each costs an x86 core a microcode assist. Rules whose update does not depend on
// them read and write them as zero during the update: the state holds none, the values follow the
// rule's double-precision reference, and the caller's floating-point controls are as they were.
TEST(Trainers, StateHoldsNoSubnormalNumbers) {
  const Vec tiny = {1e-20, -3e-21, 2e-19, 0.5};
  const std::vector<float> tiny_f(tiny.begin(), tiny.end());
  for (const RuleCase& rule : rule_cases()) {
    if (std::string(rule.name) == "EG") continue;  // keeps the default environment (its values may be tiny)
    SCOPED_TRACE(rule.name);
    ParameterCollection m;
    Parameter p = m.add_parameters({4}, ParameterInitConst(1.f));
    LookupParameter lp = m.add_lookup_parameters(3, {4}, ParameterInitConst(1.f));
    std::unique_ptr<Trainer> t = rule.make(m);
    t->set_sparse_updates(false);  // every row's state decays too
    const unsigned environment = mxcsr_controls();
    Vec ref(4, 1);
    std::vector<Vec> ref_state(rule.arrays, Vec(4, 0));
    for (int step = 1; step <= 120; ++step) {
      const bool given = step <= 3;
      if (given) {
        give_grad(p, tiny_f);
        give_row_grad(lp, 1, tiny_f);
      }
      t->update();
      rule.step(ref, ref_state, given ? tiny : Vec(4, 0), step, 1);
    }
    EXPECT_EQ(mxcsr_controls(), environment);
    EXPECT_EQ(subnormals_in_state(*t), 0);
    expect_near_all(values_of(p), ref, 2e-5);
    expect_near_all(row_of(lp, 1), ref, 2e-5);
  }
}

// With ε = 0 a subnormal state is the whole denominator (Adagrad: g / √G with G = g²), so such a rule
// keeps the default environment and computes the same step as for any other g.
TEST(Trainers, WithoutEpsilonSubnormalStateIsKept) {
  ParameterCollection m;
  Parameter p = m.add_parameters({2}, ParameterInitConst(1.f));
  AdagradTrainer t(m, 0.1f, 0.f);
  give_grad(p, {3e-20f, -4e-20f});  // G = 9e-40 and 1.6e-39: subnormal
  t.update();
  expect_near_all(values_of(p), {1 - 0.1, 1 + 0.1}, 1e-5);
  EXPECT_EQ(subnormals_in_state(t), 2);
}

}  // namespace
}  // namespace dynet
