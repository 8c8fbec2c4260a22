// DyNet-style training code: a custom trainer written against DyNet's protected Trainer interface
// (ShadowParameters state, alloc_impl, update_params, update_lookup_params, update_rule), subclasses
// reading the built-in trainers' state, and the ParameterCollection storage API.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/dynet.h"
#include "dynet/expr.h"
#include "dynet/model.h"
#include "dynet/param-init.h"
#include "dynet/shadow-params.h"
#include "dynet/training.h"

using namespace dynet;

namespace {

// Momentum SGD as a DyNet user would write it: state in shadow parameters, the rule on raw floats.
struct HandMomentumTrainer : public Trainer {
  HandMomentumTrainer(ParameterCollection& m, real learning_rate, real mom) : Trainer(m, learning_rate), momentum(mom) {}
  void restart() override {
    for (auto& s : vp) TensorTools::zero(s.h);
    for (auto& s : vlp) TensorTools::zero(s.all_h);
  }
  using Trainer::restart;

 protected:
  unsigned alloc_impl() override {
    allocate_shadow_parameters(*model, aux_allocated, vp);
    return static_cast<unsigned>(vp.size());
  }
  unsigned alloc_lookup_impl() override {
    allocate_shadow_lookup_parameters(*model, aux_allocated_lookup, vlp);
    return static_cast<unsigned>(vlp.size());
  }
  void update_rule(real gscale, const std::vector<Tensor*>& values) override {
    const float wd = model->get_weight_decay().current_weight_decay();
    float* p = values[0]->v;
    const float* g = values[1]->v;
    float* v = values[2]->v;
    for (unsigned k = 0; k < values[0]->d.size(); ++k) {
      v[k] = momentum * v[k] - learning_rate * gscale * g[k];
      p[k] += v[k] / wd;
    }
    ++rule_calls;
  }
  void update_params(real gscale, size_t idx) override {
    auto& p = model->get_storage().params[idx];
    update_rule(gscale, {&p->values, &p->g, &vp[idx].h});
  }
  void update_lookup_params(real gscale, size_t idx, size_t lidx) override {
    auto& p = model->get_storage().lookup_params[idx];
    update_rule(gscale, {&p->values[lidx], &p->grads[lidx], &vlp[idx].h[lidx]});
  }
  void update_lookup_params(real gscale, size_t idx) override {
    auto& p = model->get_storage().lookup_params[idx];
    update_rule(gscale, {&p->all_values, &p->all_grads, &vlp[idx].all_h});
  }

 public:
  real momentum;
  int rule_calls = 0;
  std::vector<ShadowParameters> vp;
  std::vector<ShadowLookupParameters> vlp;
};

struct Model2 {
  ParameterCollection pc;
  Parameter W, b;
  LookupParameter E;
  Model2() {
    W = pc.add_parameters({2, 3}, ParameterInitFromVector({0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f}), "W");
    b = pc.add_parameters({2}, ParameterInitConst(0.05f), "b");
    E = pc.add_lookup_parameters(4, {3}, ParameterInitFromVector({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), "E");
  }
  // One step of a loss that reaches W, b and rows 1 and 3 of E.
  void backward_step(unsigned t) {
    ComputationGraph cg;
    const unsigned i = 1 + 2 * (t % 2);
    Expression x = lookup(cg, E, i) * 0.1f;
    Expression y = tanh(parameter(cg, W) * x + parameter(cg, b));
    Expression loss = squared_norm(y - input(cg, {2}, std::vector<float>{0.3f, -0.1f}));
    loss.value();
    cg.backward(loss);
  }
};

std::vector<float> all_values(ParameterCollection& pc) {
  std::vector<float> v;
  for (const auto& p : pc.parameters_list()) v.insert(v.end(), p->values.v, p->values.v + p->dim.size());
  for (const auto& p : pc.lookup_parameters_list())
    v.insert(v.end(), p->all_values.v, p->all_values.v + p->all_dim.size());
  return v;
}

TEST(CustomTrainer, MatchesTheBuiltInMomentumTrainerSparseAndDense) {
  for (bool sparse : {true, false}) {
    Model2 a, b;
    HandMomentumTrainer mine(a.pc, 0.1f, 0.9f);
    MomentumSGDTrainer builtin(b.pc, 0.1f, 0.9f);
    mine.sparse_updates_enabled = builtin.sparse_updates_enabled = sparse;
    for (unsigned t = 0; t < 5; ++t) {
      a.backward_step(t);
      b.backward_step(t);
      mine.update();
      builtin.update();
    }
    const std::vector<float> va = all_values(a.pc), vb = all_values(b.pc);
    ASSERT_EQ(va.size(), vb.size());
    for (size_t k = 0; k < va.size(); ++k) EXPECT_FLOAT_EQ(va[k], vb[k]) << "value " << k << " sparse " << sparse;
    // Rows 0 and 2 of E never received a gradient: a sparse update leaves them (and their velocity) alone.
    if (sparse) {
      EXPECT_FLOAT_EQ(a.E.get_storage().values[0].v[0], 1.f);
      EXPECT_EQ(mine.vlp[0].h[2].v[1], 0.f);
      EXPECT_EQ(mine.rule_calls, 5 * 3);  // W, b and one row per update
    } else {
      EXPECT_EQ(mine.rule_calls, 5 * 3);  // W, b and the whole table
    }
    EXPECT_EQ(mine.aux_allocated, 2u);
    EXPECT_EQ(mine.aux_allocated_lookup, 1u);
    // The built-in trainer's velocities are DyNet's public vp / vlp and equal the hand-written ones.
    for (unsigned k = 0; k < 6; ++k) EXPECT_FLOAT_EQ(mine.vp[0].h.v[k], builtin.vp[0].h.v[k]);
    for (unsigned k = 0; k < 12; ++k) EXPECT_FLOAT_EQ(mine.vlp[0].all_h.v[k], builtin.vlp[0].all_h.v[k]);
    mine.restart();
    EXPECT_EQ(mine.vp[0].h.v[0], 0.f);
  }
}

TEST(CustomTrainer, StateIsAllocatedForParametersAddedLater) {
  ParameterCollection pc;
  Parameter p = pc.add_parameters({2}, ParameterInitConst(1.f));
  HandMomentumTrainer t(pc, 0.5f, 0.f);
  t.clipping_enabled = false;
  p.get_storage().accumulate_grad(Tensor(Dim({2}), std::vector<float>{1, 2}.data()));
  t.update();
  Parameter q = pc.add_parameters({3}, ParameterInitConst(1.f));
  std::vector<float> g{4, 5, 6};
  q.get_storage().accumulate_grad(Tensor(Dim({3}), g.data()));
  t.update();
  ASSERT_EQ(t.vp.size(), 2u);
  EXPECT_FLOAT_EQ(q.values()->v[2], 1.f - 0.5f * 6);
  EXPECT_FLOAT_EQ(p.values()->v[1], 1.f - 0.5f * 2);
}

// Subclasses see the built-in trainers' state under DyNet's names.
struct AdamInspector : public AdamTrainer {
  using AdamTrainer::AdamTrainer;
  float first_moment(size_t i, unsigned k) const { return m[i].h.v[k]; }
  float second_moment(size_t i, unsigned k) const { return v[i].h.v[k]; }
  float lookup_first_moment(size_t i, unsigned row, unsigned k) const { return lm[i].h[row].v[k]; }
  float average(size_t i, unsigned k) const { return ma_p[i].h.v[k]; }
  MovingAverage mode() const { return ma_mode; }
};

TEST(CustomTrainer, SubclassesReadAdamsMomentsAndTheMovingAverage) {
  ParameterCollection pc;
  Parameter p = pc.add_parameters({2}, ParameterInitConst(1.f));
  LookupParameter e = pc.add_lookup_parameters(3, {2}, ParameterInitConst(0.f));
  AdamInspector adam(pc, 0.01f, 0.9f, 0.999f, 1e-8f);
  adam.exponential_moving_average(0.5f);
  std::vector<float> g{0.5f, -2.f};
  p.get_storage().accumulate_grad(Tensor(Dim({2}), g.data()));
  e.get_storage().accumulate_grad(2, g.data());
  adam.update();
  EXPECT_FLOAT_EQ(adam.first_moment(0, 0), 0.1f * 0.5f);
  EXPECT_NEAR(adam.second_moment(0, 1), (1.f - 0.999f) * 4.f, 1e-9);
  EXPECT_FLOAT_EQ(adam.lookup_first_moment(0, 2, 1), 0.1f * -2.f);
  EXPECT_EQ(adam.lookup_first_moment(0, 0, 1), 0.f);
  EXPECT_EQ(adam.mode(), MovingAverage::Exponential);
  // After one step of Adam the value moved by lr (bias-corrected); the EMA holds (1 - beta) of it.
  EXPECT_NEAR(adam.average(0, 0), 0.5f * (1.f - 0.01f), 1e-6);
}

// ---- ParameterCollection's storage API ----

TEST(ParameterCollectionApi, SizeCountsParametersAndStoragesAreFoundByName) {
  ParameterCollection pc;
  pc.add_parameters({3, 4}, "W");
  pc.add_parameters({3});
  pc.add_lookup_parameters(10, {3}, "E");
  ParameterCollection sub = pc.add_subcollection("layer");
  sub.add_parameters({2}, "W");
  EXPECT_EQ(pc.size(), 3u);  // Parameter objects (DyNet's meaning), not values
  EXPECT_EQ(sub.size(), 1u);
  EXPECT_EQ(pc.parameter_count(), 12u + 3u + 30u + 2u);

  auto& params = pc.parameters_list();  // a reference, as DyNet returns it
  EXPECT_EQ(params.size(), 3u);
  EXPECT_EQ(pc.get_parameter_storages().size(), 3u);
  EXPECT_EQ(pc.get_lookup_parameter_storages().size(), 1u);
  const auto base = pc.get_parameter_storages_base();
  ASSERT_EQ(base.size(), 4u);
  EXPECT_EQ(base[2].get(), pc.get_lookup_parameter_storage("/E").get());  // creation order

  EXPECT_EQ(pc.get_parameter_storage("/W")->dim, Dim({3, 4}));
  EXPECT_EQ(pc.get_parameter_storage("/_0")->dim, Dim({3}));
  EXPECT_EQ(pc.get_parameter_storage("/layer/W")->dim, Dim({2}));
  EXPECT_EQ(sub.get_parameter_storage("/layer/W").get(), pc.get_parameter_storage("/layer/W").get());
  EXPECT_THROW(sub.get_parameter_storage("/W"), std::runtime_error);  // not in the subcollection
  try {
    pc.get_lookup_parameter_storage("/F");
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/F"), std::string::npos);
  }
  EXPECT_TRUE(pc.get_parameter_storage("/W")->is_updated());
  EXPECT_FALSE(pc.get_parameter_storage("/W")->has_grad());
}

TEST(ParameterCollectionApi, LookupStorageGradientsAsDynetsNodeCodeAddsThem) {
  ParameterCollection pc;
  LookupParameter E = pc.add_lookup_parameters(3, {2}, ParameterInitConst(0.f), "E");
  ParameterCollection sub = pc.add_subcollection("enc");
  EXPECT_EQ(pc.get_namespace(), "/");
  EXPECT_EQ(sub.get_namespace(), "/enc/");
  LookupParameterStorage& s = E.get_storage();
  std::vector<float> rows{1.f, 2.f, 3.f, 4.f};
  const unsigned ids[] = {2, 0};
  s.accumulate_grads(2, ids, nullptr, rows.data());  // row 2 += (1, 2), row 0 += (3, 4)
  std::vector<float> whole{10.f, 10.f, 20.f, 20.f, 30.f, 30.f};
  s.accumulate_grad(Tensor(Dim({2, 3}), whole.data()));  // every row
  EXPECT_EQ(as_vector(s.all_grads), (std::vector<float>{13.f, 14.f, 20.f, 20.f, 31.f, 32.f}));
  EXPECT_EQ(s.non_zero_grads.size(), 3u);
  EXPECT_THROW(s.accumulate_grad(Tensor(Dim({4}), whole.data())), std::invalid_argument);
  const unsigned bad[] = {3};
  EXPECT_THROW(s.accumulate_grads(1, bad, nullptr, rows.data()), std::invalid_argument);
  s.initialize_lookups();  // the row views again
  ASSERT_EQ(s.values.size(), 3u);
  EXPECT_EQ(s.grads[2].v, s.all_grads.v + 4);
  EXPECT_EQ(s.values[1].d, Dim({2}));
}

TEST(ParameterCollectionApi, SaxeInitializerIsAScaledOrthogonalMatrix) {
  ParameterCollection pc;
  Parameter p = pc.add_parameters({4, 4}, ParameterInitSaxe(2.f));
  const float* q = p.values()->v;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double dot = 0;
      for (int k = 0; k < 4; ++k) dot += double(q[k + 4 * i]) * q[k + 4 * j];
      EXPECT_NEAR(dot, i == j ? 4.0 : 0.0, 1e-4) << i << "," << j;
    }
  EXPECT_THROW(pc.add_parameters({3, 4}, ParameterInitSaxe()), std::invalid_argument);
}

// DyNet 2.0's Trainer::update(scale), which DyNet's own examples of the time call (train_xor-xent.cc:
// sgd.update(1.0), train_xor-batch.cc: sgd.update(0.25)): the same step as scaling the loss, clipping
// included, for dense and lookup parameters.
TEST(TrainerApi, DyNet20UpdateWithScaleEqualsScalingTheLoss) {
  auto run = [](bool use_scale, bool clip) {
    ParameterCollection pc;
    Parameter w = pc.add_parameters({2, 3}, ParameterInitConst(0.5f));
    LookupParameter e = pc.add_lookup_parameters(4, {3}, ParameterInitConst(0.25f));
    SimpleSGDTrainer sgd(pc, 0.1f);
    sgd.clipping_enabled = clip;
    sgd.clip_threshold = 0.05f;
    for (int step = 0; step < 3; ++step) {
      ComputationGraph cg;
      Expression loss = squared_norm(parameter(cg, w) * lookup(cg, e, 1u) - input(cg, Dim({2}), {1.f, -2.f}));
      if (use_scale) {
        cg.backward(loss);
        sgd.update(0.25);
      } else {
        cg.backward(loss * 0.25f);
        sgd.update();
      }
    }
    std::vector<float> out = as_vector(*w.values());
    for (float v : as_vector(e.get_storage().values[1])) out.push_back(v);
    return out;
  };
  for (bool clip : {false, true}) {
    const std::vector<float> scaled = run(true, clip), reference = run(false, clip);
    ASSERT_EQ(scaled.size(), reference.size());
    for (size_t k = 0; k < scaled.size(); ++k) EXPECT_NEAR(scaled[k], reference[k], 1e-6f) << k << " clip " << clip;
  }
}

}  // namespace
