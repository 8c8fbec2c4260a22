// Helpers shared by the builder tests (test_rnn.cc, test_builders.cc): finite-difference gradient
// checks, value comparisons and the tied-dropout-mask check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dynet/expr.h"
#include "dynet/model.h"
#include "dynet/rnn.h"

namespace dynet::builder_test {

using LossBuilder = std::function<Expression(ComputationGraph&)>;

// n values uniform in [-1, 1).
inline std::vector<float> random_vector(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

inline std::vector<float> value_of(const Expression& e) { return as_vector(e.value()); }

inline void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol = 1e-6) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], tol) << "element " << k;
}

inline float loss_value(const LossBuilder& build) {
  ComputationGraph g;
  return as_scalar(build(g).value());
}

// Compares d loss / d value for every value of every (lookup) parameter in `m` (except those in
// `skip`, e.g. constants the builder reads through const_parameter) with central differences.
// With min_nonzero > 0, more than that fraction of the checked gradients must be non-zero (the
// loss reaches most values).
inline void check_gradients(ParameterCollection& m, const LossBuilder& build,
                            const std::set<const ParameterStorageBase*>& skip = {}, double min_nonzero = 0.5) {
  m.reset_gradient();
  {
    ComputationGraph g;
    Expression loss = build(g);
    loss.value();
    g.backward(loss);
  }
  struct Block {
    std::string name;
    float* values;
    std::vector<float> analytic;
  };
  std::vector<Block> blocks;
  for (auto& p : m.parameters_list())
    if (!skip.count(p.get())) blocks.push_back({p->name, p->values.v, std::vector<float>(p->g.v, p->g.v + p->dim.size())});
  for (auto& p : m.lookup_parameters_list())
    blocks.push_back({p->name, p->all_values.v,
                      std::vector<float>(p->all_grads.v, p->all_grads.v + p->all_dim.size())});
  m.reset_gradient();
  const float h = 2e-3f;
  size_t checked = 0, nonzero = 0;
  for (Block& b : blocks)
    for (size_t e = 0; e < b.analytic.size(); ++e) {
      const float old = b.values[e];
      b.values[e] = old + h;
      const double up = loss_value(build);
      b.values[e] = old - h;
      const double down = loss_value(build);
      b.values[e] = old;
      const double numeric = (up - down) / (2.0 * h);
      EXPECT_NEAR(b.analytic[e], numeric, 2e-3 * (1 + std::abs(numeric))) << b.name << " element " << e;
      ++checked;
      nonzero += b.analytic[e] != 0.f;
    }
  EXPECT_GT(checked, 0u);
  if (min_nonzero > 0) EXPECT_GT(nonzero, min_nonzero * checked) << "too few gradients are non-zero";
}

// Starts a sequence of `rnn` in g (after new_graph) over rows 0..steps-1 of `inputs` and
// backpropagates Σ_t sum(y_t).
inline void backprop_lookup_sequence(ComputationGraph& g, RNNBuilder& rnn, LookupParameter inputs, unsigned steps) {
  rnn.new_graph(g);
  rnn.start_new_sequence();
  std::vector<Expression> ys;
  for (unsigned t = 0; t < steps; ++t) ys.push_back(sum_elems(rnn.add_input(lookup(g, inputs, t))));
  Expression loss = sum(ys);
  loss.value();
  g.backward(loss);
}

// After backprop_lookup_sequence with input dropout: each step's input gradient lands in its own
// row, so with one mask per sequence an input unit's gradient is zero in every row or in none;
// some units, but not all, are dropped.
inline void expect_tied_input_gradients(LookupParameter inputs, unsigned in_dim, unsigned steps) {
  const auto& grads = inputs.get_storage().grads;
  unsigned dropped = 0;
  for (unsigned k = 0; k < in_dim; ++k) {
    const bool zero = grads[0].v[k] == 0.f;
    dropped += zero;
    for (unsigned t = 1; t < steps; ++t) EXPECT_EQ(grads[t].v[k] == 0.f, zero) << "input unit " << k << " step " << t;
  }
  EXPECT_GT(dropped, 0u);
  EXPECT_LT(dropped, in_dim);
}

}  // namespace dynet::builder_test
