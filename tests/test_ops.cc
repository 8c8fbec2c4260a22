// The generic op harness: walks the registry and checks every sample of every op.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/op.h"
#include "dynet/expr.h"

namespace dynet {
namespace {

// A test-only loss over argument pairs: Σ_pairs Σ_elements a ⊙ b (a scalar). Keeping it separate
// makes the harness independent of the ops under test.
void loss_fwd(const ForwardArgs& a) {
  double s = 0;
  for (unsigned p = 0; p + 1 < a.n; p += 2)
    for (unsigned k = 0; k < a.xs[p].d.size(); ++k) s += double(a.xs[p].v[k]) * a.xs[p + 1].v[k];
  a.fx.v[0] = static_cast<float>(s);
}
void loss_bwd(const BackwardArgs& a) {
  const Tensor& other = a.xs[a.i ^ 1u];
  for (unsigned k = 0; k < a.dEdxi.d.size(); ++k) a.dEdxi.v[k] += a.dEdf.v[0] * other.v[k];
}
Dim loss_shape(const ArgDims& xs, AttrView) {
  if (xs.size() % 2) op_error("harness_loss", "needs pairs of arguments");
  for (unsigned p = 0; p < xs.size(); p += 2)
    if (xs[p].size() != xs[p + 1].size())
      op_error("harness_loss", "sizes differ: " + xs[p].str() + " vs " + xs[p + 1].str());
  return Dim({1});
}
std::vector<OpSample> loss_samples();
const OpId k_loss = register_op({.name = "harness_loss", .shape = loss_shape, .forward = loss_fwd,
                                 .backward = loss_bwd, .samples = loss_samples});
Expression harness_loss(const std::vector<Expression>& xs) { return make_node_n(k_loss, xs); }
std::vector<OpSample> loss_samples() {
  auto build = [](ComputationGraph&, const std::vector<Expression>& x) { return harness_loss(x); };
  return {{"two_pairs", {Dim({3, 2}), Dim({3, 2}), Dim({2}, 2), Dim({2}, 2)}, build},
          {"bad", {Dim({3}), Dim({2})}, build, -1, 1, true}};
}

constexpr unsigned kSeed = 1234;

struct Case {
  OpId op;
  OpSample sample;
};
void PrintTo(const Case& c, std::ostream* os) { *os << op_def(c.op).name << "/" << c.sample.name; }

std::vector<float> random_values(const Dim& d, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(d.size());
  for (float& x : v) x = u(rng);
  return v;
}

// The sample's inputs: random values in [lo, hi] behind updatable input nodes of g.
struct SampleInputs {
  std::vector<std::vector<float>> data;
  std::vector<Expression> xs;
  SampleInputs(ComputationGraph& g, const OpSample& s, std::mt19937& rng) {
    for (const Dim& d : s.inputs) data.push_back(random_values(d, s.lo, s.hi, rng));
    for (size_t k = 0; k < data.size(); ++k) xs.push_back(input(g, s.inputs[k], &data[k]));
  }
};

void check_bad(const Case& c) {
  const OpDef& def = op_def(c.op);
  std::mt19937 rng(kSeed);
  ComputationGraph g;
  const SampleInputs in(g, c.sample, rng);
  const std::vector<Expression>& xs = in.xs;
  try {
    Expression y = c.sample.build(g, xs);
    y.value();
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(def.name), std::string::npos)
        << "the error message should name the op: " << e.what();
  }
}

// One value we can perturb for finite differences, and where its analytic gradient is.
struct Probe {
  float* value;
  float analytic;
  std::string what;
};

void check_good(const Case& c) {
  const OpDef& def = op_def(c.op);
  const OpSample& s = c.sample;
  std::mt19937 rng(kSeed);
  ComputationGraph g;
  SampleInputs in(g, s, rng);
  std::vector<std::vector<float>>& data = in.data;
  const std::vector<Expression>& xs = in.xs;
  Expression y = s.build(g, xs);
  bool uses = false;
  for (VariableIndex i = 0; i <= y.i; ++i) uses |= g.node(i).op == c.op;
  ASSERT_TRUE(uses) << "the sample does not use the op";

  // Shape rule vs computed value.
  reset_rng(kSeed);
  const Tensor& v = y.value();
  ASSERT_EQ(v.d, y.dim());
  for (unsigned k = 0; k < v.d.size(); ++k) ASSERT_TRUE(std::isfinite(v.v[k])) << "value " << k << " = " << v.v[k];

  // loss = Σ y ⊙ r + Σ_k Σ x_k ⊙ q_k. The x_k terms come after the op in the graph, so their
  // gradient reaches x_k first: an op whose backward overwrote (instead of accumulating) would lose it.
  std::vector<float> r = random_values(y.dim(), -1, 1, rng);
  std::vector<std::vector<float>> q;
  for (const Dim& d : s.inputs) q.push_back(random_values(d, -1, 1, rng));
  std::vector<Expression> pairs = {y, input(g, y.dim(), &r)};
  for (size_t k = 0; k < xs.size(); ++k) {
    pairs.push_back(xs[k]);
    pairs.push_back(input(g, s.inputs[k], &q[k]));
  }
  Expression loss = harness_loss(pairs);
  if (s.params) s.params->reset_gradient();
  reset_rng(kSeed);
  g.forward(loss);
  g.backward(loss, true);

  std::vector<Probe> probes;
  for (size_t k = 0; k < xs.size(); ++k) {
    if (k < s.no_grad.size() && s.no_grad[k]) continue;
    const Tensor& gx = xs[k].gradient();
    for (size_t j = 0; j < data[k].size(); ++j)
      probes.push_back({&data[k][j], gx.v[j] - q[k][j], "input " + std::to_string(k) + "[" + std::to_string(j) + "]"});
  }
  // Parameters reached only through const nodes must get no gradient.
  bool trains_params = false;
  for (VariableIndex i = 0; i <= y.i; ++i) trains_params |= (g.node(i).flags & kParameterNode) != 0;
  const size_t first_param_probe = probes.size();
  if (s.params) {
    for (auto& p : s.params->parameters_list())
      for (unsigned j = 0; j < p->dim.size(); ++j)
        probes.push_back({p->values.v + j, p->nonzero_grad ? p->g.v[j] : 0.f, p->name + "[" + std::to_string(j) + "]"});
    for (auto& p : s.params->lookup_parameters_list())
      for (unsigned j = 0; j < p->all_dim.size(); ++j)
        probes.push_back({p->all_values.v + j, p->nonzero_grad ? p->all_grads.v[j] : 0.f,
                          p->name + "[" + std::to_string(j) + "]"});
  }
  if (!trains_params) {
    for (size_t k = first_param_probe; k < probes.size(); ++k) EXPECT_EQ(probes[k].analytic, 0.f) << probes[k].what;
    probes.resize(first_param_probe);
  }
  if (def.flags & kNoGradient) {
    for (const Probe& p : probes) EXPECT_EQ(p.analytic, 0.f) << p.what;
    return;
  }
  auto eval = [&]() {
    reset_rng(kSeed);
    return double(as_scalar(g.forward(loss)));
  };
  const float h = 1e-3f;
  for (const Probe& p : probes) {
    const float x0 = *p.value;
    *p.value = x0 + h;
    const double up = eval();
    *p.value = x0 - h;
    const double down = eval();
    *p.value = x0;
    // Remove the linear q term from the numeric gradient too (the analytic one already excludes it).
    const double numeric = (up - down) / (2.0 * h);
    double expect = numeric;
    for (size_t k = 0; k < xs.size(); ++k)
      if (p.value >= data[k].data() && p.value < data[k].data() + data[k].size()) expect -= q[k][p.value - data[k].data()];
    EXPECT_NEAR(p.analytic, expect, 2e-2 * (1.0 + std::fabs(expect))) << "gradient of " << p.what;
  }
  if (s.params) s.params->reset_gradient();
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const auto& reg = op_registry();
  for (size_t i = 0; i < reg.size(); ++i) {
    std::vector<OpSample> samples = reg[i].samples ? reg[i].samples() : std::vector<OpSample>{};
    for (OpSample& s : samples) cases.push_back({static_cast<OpId>(i), std::move(s)});
  }
  return cases;
}

class OpHarness : public ::testing::TestWithParam<Case> {};

TEST_P(OpHarness, Sample) {
  const Case& c = GetParam();
  if (c.sample.bad)
    check_bad(c);
  else
    check_good(c);
}

INSTANTIATE_TEST_SUITE_P(Registry, OpHarness, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = std::string(op_def(info.param.op).name) + "_" + info.param.sample.name;
                           for (char& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(OpRegistry, EveryOpHasGoodSamples) {
  const auto& reg = op_registry();
  for (const OpDef& d : reg) {
    std::vector<OpSample> samples = d.samples ? d.samples() : std::vector<OpSample>{};
    size_t good = 0;
    for (const OpSample& s : samples) good += !s.bad;
    EXPECT_GT(good, 0u) << "op " << d.name << " has no test samples";
  }
}

}  // namespace
}  // namespace dynet
