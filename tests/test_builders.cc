// The builders beyond SimpleRNN/VanillaLSTM (test_rnn.cc): coupled, fast, deep and sparse LSTMs,
// GRU and the tree LSTMs. Finite-difference gradients over every parameter (unbatched and batched),
// parameter names and dims as DyNet lays them out, hand-computed values, dropout and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dynet/cfsm-builder.h"
#include "dynet/deep-lstm.h"
#include "dynet/dict.h"
#include "dynet/expr.h"
#include "dynet/fast-lstm.h"
#include "dynet/gru.h"
#include "dynet/hsm-builder.h"
#include "dynet/init.h"
#include "dynet/io.h"
#include "dynet/lstm.h"
#include "dynet/rnn.h"
#include "dynet/treelstm.h"

#include "builder_test_util.h"
#include "temp_dir.h"

namespace dynet {
namespace {

using namespace builder_test;

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  return random_vector(n, rng);
}

// <y, w> summed over the batch, with fixed random weights w (from `seed`) of y's per-element size.
Expression weighted_sum(ComputationGraph& g, const Expression& y, unsigned seed) {
  const Dim d = y.dim();
  return sum_batches(sum_elems(cmult(y, input(g, d.single_batch(), random_values(d.batch_size(), seed)))));
}

// Nudges every parameter value so no gate sits exactly at a symmetric point (biases start at 0).
void perturb(ParameterCollection& m, float scale = 0.1f) {
  for (auto& p : m.parameters_list())
    for (unsigned k = 0; k < p->dim.size(); ++k) p->values.v[k] += scale * (static_cast<float>((k * 7) % 11) - 5.f) / 5.f;
}

// A loss over a 3-step sequence: every output and the final full state reach it. Inputs are
// batched (3 elements) or not; with_h0 feeds a trainable initial state.
void sequence_gradient_check(ParameterCollection& m, RNNBuilder& rnn, unsigned in_dim, bool batched, bool with_h0,
                             const std::set<const ParameterStorageBase*>& skip = {}) {
  const unsigned batch = batched ? 3 : 1;
  std::vector<std::vector<float>> xs;
  for (unsigned t = 0; t < 3; ++t) xs.push_back(random_values(in_dim * batch, 100 + t));
  const unsigned n0 = rnn.num_h0_components();
  Parameter h0_param;
  if (with_h0) {
    // The initial state's dims: ask the builder for one state's dims by running it once.
    ComputationGraph g;
    rnn.new_graph(g);
    rnn.start_new_sequence();
    rnn.add_input(input(g, Dim({in_dim}, batch), xs[0]));
    h0_param = m.add_parameters({rnn.final_s()[0].dim().rows(), n0});
  }
  LossBuilder build = [&](ComputationGraph& g) {
    rnn.new_graph(g);
    std::vector<Expression> h0;
    if (with_h0) {
      Expression all = parameter(g, h0_param);
      for (unsigned k = 0; k < n0; ++k) h0.push_back(pick(all, k, 1));
    }
    rnn.start_new_sequence(h0);
    std::vector<Expression> terms;
    for (unsigned t = 0; t < xs.size(); ++t)
      terms.push_back(weighted_sum(g, rnn.add_input(input(g, Dim({in_dim}, batch), xs[t])), 200 + t));
    const std::vector<Expression> s = rnn.final_s();
    for (unsigned k = 0; k < s.size(); ++k) terms.push_back(weighted_sum(g, s[k], 300 + k));
    return sum(terms);
  };
  check_gradients(m, build, skip);
}

struct ExpectedParam {
  std::string name;
  Dim dim;
};
void expect_parameters(const ParameterCollection& m, const std::vector<ExpectedParam>& expected) {
  const auto ps = m.parameters_list();
  ASSERT_EQ(ps.size(), expected.size());
  for (size_t k = 0; k < ps.size(); ++k) {
    EXPECT_EQ(ps[k]->name, expected[k].name) << "parameter " << k;
    EXPECT_EQ(ps[k]->dim, expected[k].dim) << ps[k]->name;
  }
}

// add_input(prev, x) continues from `prev` exactly as a fresh sequence through the same inputs.
void check_branching(RNNBuilder& rnn, unsigned in_dim) {
  const auto x1 = random_values(in_dim, 1), x2 = random_values(in_dim, 2), x3 = random_values(in_dim, 3);
  std::vector<float> fresh_13;
  std::vector<std::vector<float>> fresh_state;
  {
    ComputationGraph g;
    rnn.new_graph(g);
    rnn.start_new_sequence();
    rnn.add_input(input(g, Dim({in_dim}), x1));
    fresh_13 = value_of(rnn.add_input(input(g, Dim({in_dim}), x3)));
    for (const Expression& e : rnn.final_s()) fresh_state.push_back(value_of(e));
  }
  ComputationGraph g;
  rnn.new_graph(g);
  rnn.start_new_sequence();
  rnn.add_input(input(g, Dim({in_dim}), x1));
  rnn.add_input(input(g, Dim({in_dim}), x2));
  expect_close(value_of(rnn.add_input(0, input(g, Dim({in_dim}), x3))), fresh_13);
  EXPECT_EQ(rnn.state(), 2);
  EXPECT_EQ(rnn.get_head(2), 0);
  expect_close(value_of(rnn.back()), fresh_13);
  const auto s = rnn.get_s(2);
  ASSERT_EQ(s.size(), fresh_state.size());
  for (size_t k = 0; k < s.size(); ++k) expect_close(value_of(s[k]), fresh_state[k]);
  EXPECT_THROW(rnn.add_input(5, input(g, Dim({in_dim}), x3)), std::invalid_argument);
  EXPECT_THROW(rnn.add_input(input(g, Dim({in_dim + 1}), std::vector<float>(in_dim + 1))), std::invalid_argument);
  EXPECT_EQ(rnn.state(), 2);  // the failed inputs left no state behind
}

std::string layer_name(const std::string& collection, unsigned k) { return "/" + collection + "/_" + std::to_string(k); }

double sigmoid(double a) { return 1 / (1 + std::exp(-a)); }

// ======================= CoupledLSTMBuilder =======================

std::vector<ExpectedParam> coupled_layout(const std::string& collection, unsigned layers, unsigned in, unsigned hid,
                                          const Dim& peephole, unsigned deeper_in) {
  std::vector<ExpectedParam> out;
  unsigned k = 0, layer_in = in;
  for (unsigned l = 0; l < layers; ++l) {
    for (int gate = 0; gate < 2; ++gate) {
      out.push_back({layer_name(collection, k++), Dim({hid, layer_in})});
      out.push_back({layer_name(collection, k++), Dim({hid, hid})});
      out.push_back({layer_name(collection, k++), peephole});
      out.push_back({layer_name(collection, k++), Dim({hid})});
    }
    out.push_back({layer_name(collection, k++), Dim({hid, layer_in})});
    out.push_back({layer_name(collection, k++), Dim({hid, hid})});
    out.push_back({layer_name(collection, k++), Dim({hid})});
    layer_in = deeper_in;
  }
  return out;
}

TEST(CoupledLSTM, ParameterLayoutAndNames) {
  ParameterCollection m;
  CoupledLSTMBuilder lstm(2, 3, 4, m);
  expect_parameters(m, coupled_layout("lstm-builder", 2, 3, 4, Dim({4, 4}), 4));
  for (unsigned k : {3u, 7u, 10u, 14u, 18u, 21u})
    for (unsigned e = 0; e < 4; ++e) EXPECT_EQ(m.parameters_list()[k]->values.v[e], 0.f);  // biases
  EXPECT_EQ(lstm.get_parameter_collection().get_fullname(), "/lstm-builder/");
  EXPECT_EQ(lstm.num_h0_components(), 4u);
  EXPECT_THROW(CoupledLSTMBuilder(1, 0, 2, m), std::invalid_argument);
}

TEST(CoupledLSTM, GradientUnbatched) {
  ParameterCollection m;
  CoupledLSTMBuilder lstm(2, 3, 3, m);
  perturb(m);
  sequence_gradient_check(m, lstm, 3, false, false);
}

TEST(CoupledLSTM, GradientBatchedWithInitialState) {
  ParameterCollection m;
  CoupledLSTMBuilder lstm(2, 3, 3, m);
  perturb(m);
  sequence_gradient_check(m, lstm, 3, true, true);
}

// One unit, one input: the formulas of the class comment, step by step.
TEST(CoupledLSTM, StepsMatchTheFormula) {
  ParameterCollection m;
  CoupledLSTMBuilder lstm(1, 1, 1, m);
  const auto ps = m.parameters_list();
  // x2i h2i c2i bi x2o h2o c2o bo x2c h2c bc
  const double w[11] = {0.5, -0.3, 0.8, 0.1, -0.7, 0.4, 0.6, -0.2, 0.9, 0.35, 0.05};
  for (int k = 0; k < 11; ++k) ps[k]->set_value({static_cast<float>(w[k])});
  const double x1 = 0.7, x2 = -0.4;
  double c = 0, h = 0;
  {  // no previous state: no recurrent terms, the output peephole sees the new cell
    const double i = sigmoid(w[3] + w[0] * x1), g = std::tanh(w[10] + w[8] * x1);
    c = i * g;
    h = sigmoid(w[7] + w[4] * x1 + w[6] * c) * std::tanh(c);
  }
  const double c1 = c, h1 = h;
  {
    const double i = sigmoid(w[3] + w[0] * x2 + w[1] * h1 + w[2] * c1);
    const double g = std::tanh(w[10] + w[8] * x2 + w[9] * h1);
    c = (1 - i) * c1 + i * g;
    h = sigmoid(w[7] + w[4] * x2 + w[5] * h1 + w[6] * c) * std::tanh(c);
  }
  ComputationGraph g;
  lstm.new_graph(g);
  lstm.start_new_sequence();
  EXPECT_NEAR(as_scalar(lstm.add_input(input(g, static_cast<float>(x1))).value()), h1, 1e-6);
  EXPECT_NEAR(as_scalar(lstm.add_input(input(g, static_cast<float>(x2))).value()), h, 1e-6);
  EXPECT_NEAR(as_scalar(lstm.final_s()[0].value()), c, 1e-6);
}

TEST(CoupledLSTM, Branching) {
  ParameterCollection m;
  CoupledLSTMBuilder lstm(2, 3, 4, m);
  perturb(m);
  check_branching(lstm, 3);
}

// Three tied masks per layer; a dropped cell unit zeroes the matching column of c2i's and c2o's
// gradients at every step.
TEST(CoupledLSTM, DropoutMasks) {
  reset_rng(5);
  ParameterCollection m;
  const unsigned hid = 12;
  CoupledLSTMBuilder lstm(1, 4, hid, m);
  perturb(m);
  lstm.set_dropout(0.f, 0.f, 0.5f);
  ComputationGraph g;
  lstm.new_graph(g);
  lstm.start_new_sequence();
  std::vector<Expression> ys;
  for (int t = 0; t < 3; ++t) ys.push_back(sum_elems(lstm.add_input(input(g, Dim({4}), random_values(4, t)))));
  ASSERT_EQ(lstm.masks.size(), 1u);
  ASSERT_EQ(lstm.masks[0].size(), 3u);
  Expression loss = sum(ys);
  loss.value();
  g.backward(loss);
  const std::vector<float> cell_mask = value_of(lstm.masks[0][2]);
  unsigned dropped = 0;
  for (unsigned col = 0; col < hid; ++col) {
    EXPECT_TRUE(cell_mask[col] == 0.f || cell_mask[col] == 2.f) << cell_mask[col];
    const bool is_dropped = cell_mask[col] == 0.f;
    dropped += is_dropped;
    for (unsigned which : {2u, 6u}) {  // c2i, c2o
      const ParameterStorage& p = *m.parameters_list()[which];
      bool all_zero = true;
      for (unsigned row = 0; row < hid; ++row) all_zero &= p.g.v[col * hid + row] == 0.f;
      EXPECT_EQ(all_zero, is_dropped) << "column " << col << " of parameter " << which;
    }
  }
  EXPECT_GT(dropped, 0u);
  EXPECT_LT(dropped, hid);
  lstm.disable_dropout();
  EXPECT_EQ(lstm.dropout_rate_c, 0.f);
  EXPECT_THROW(lstm.set_dropout(0.1f, 0.1f, 1.5f), std::invalid_argument);
}

// set_s with memory cells only keeps the outputs of the state it continues from.
TEST(CoupledLSTM, SetSWithCellsOnly) {
  ParameterCollection m;
  CoupledLSTMBuilder lstm(2, 2, 3, m);
  ComputationGraph g;
  lstm.new_graph(g);
  lstm.start_new_sequence();
  const std::vector<float> x = {0.3f, -0.6f};
  lstm.add_input(input(g, Dim({2}), x));
  const auto h_before = lstm.get_h(0);
  Expression c1 = input(g, Dim({3}), random_values(3, 9)), c2 = input(g, Dim({3}), random_values(3, 10));
  lstm.set_s(0, {c1, c2});
  const auto s = lstm.get_s(1);
  ASSERT_EQ(s.size(), 4u);
  expect_close(value_of(s[0]), value_of(c1));
  expect_close(value_of(s[3]), value_of(h_before[1]));
  EXPECT_THROW(lstm.set_s(0, {c1}), std::invalid_argument);
  // From the zero initial state the outputs are zero.
  lstm.set_s(-1, {c1, c2});
  expect_close(value_of(lstm.back()), {0.f, 0.f, 0.f});
}

// ======================= FastLSTMBuilder =======================

TEST(FastLSTM, ParameterLayoutAndNames) {
  ParameterCollection m;
  FastLSTMBuilder lstm(2, 3, 4, m);
  expect_parameters(m, coupled_layout("fast-lstm-builder", 2, 3, 4, Dim({4, 1}), 4));
  EXPECT_EQ(lstm.get_parameter_collection().get_fullname(), "/fast-lstm-builder/");
}

TEST(FastLSTM, GradientUnbatched) {
  ParameterCollection m;
  FastLSTMBuilder lstm(2, 3, 3, m);
  perturb(m);
  sequence_gradient_check(m, lstm, 3, false, true);
}

TEST(FastLSTM, GradientBatched) {
  ParameterCollection m;
  FastLSTMBuilder lstm(2, 3, 3, m);
  perturb(m);
  sequence_gradient_check(m, lstm, 3, true, false);
}

// The coupled cell without peepholes: changing c2i/c2o changes nothing (as in DyNet 2.x).
TEST(FastLSTM, StepsMatchTheFormulaAndIgnoreThePeepholes) {
  ParameterCollection m;
  FastLSTMBuilder lstm(1, 1, 1, m);
  const auto ps = m.parameters_list();
  const double w[11] = {0.5, -0.3, 0.8, 0.1, -0.7, 0.4, 0.6, -0.2, 0.9, 0.35, 0.05};
  for (int k = 0; k < 11; ++k) ps[k]->set_value({static_cast<float>(w[k])});
  const double x1 = 0.7, x2 = -0.4;
  const double i1 = sigmoid(w[3] + w[0] * x1), c1 = i1 * std::tanh(w[10] + w[8] * x1);
  const double h1 = sigmoid(w[7] + w[4] * x1) * std::tanh(c1);
  const double i2 = sigmoid(w[3] + w[0] * x2 + w[1] * h1);
  const double c2 = (1 - i2) * c1 + i2 * std::tanh(w[10] + w[8] * x2 + w[9] * h1);
  const double h2 = sigmoid(w[7] + w[4] * x2 + w[5] * h1) * std::tanh(c2);
  for (float peephole : {0.8f, -3.f}) {
    ps[2]->set_value({peephole});
    ps[6]->set_value({peephole});
    ComputationGraph g;
    lstm.new_graph(g);
    lstm.start_new_sequence();
    EXPECT_NEAR(as_scalar(lstm.add_input(input(g, static_cast<float>(x1))).value()), h1, 1e-6);
    EXPECT_NEAR(as_scalar(lstm.add_input(input(g, static_cast<float>(x2))).value()), h2, 1e-6);
  }
}

TEST(FastLSTM, Branching) {
  ParameterCollection m;
  FastLSTMBuilder lstm(2, 3, 4, m);
  perturb(m);
  check_branching(lstm, 3);
}

// ======================= DeepLSTMBuilder =======================

TEST(DeepLSTM, ParameterLayoutAndNames) {
  ParameterCollection m;
  DeepLSTMBuilder lstm(2, 3, 4, m);
  expect_parameters(m, coupled_layout("deep-lstm-builder", 2, 3, 4, Dim({4, 4}), 4 + 3));
  EXPECT_EQ(lstm.get_parameter_collection().get_fullname(), "/deep-lstm-builder/");
}

TEST(DeepLSTM, GradientUnbatched) {
  ParameterCollection m;
  DeepLSTMBuilder lstm(2, 3, 3, m);
  perturb(m);
  sequence_gradient_check(m, lstm, 3, false, true);
}

TEST(DeepLSTM, GradientBatched) {
  ParameterCollection m;
  DeepLSTMBuilder lstm(2, 3, 3, m);
  perturb(m);
  sequence_gradient_check(m, lstm, 3, true, false);
}

// The output is [h^1; h^2]; layer 2 sees [h^1; x]: changing layer 2's weights on x changes h^2 only.
TEST(DeepLSTM, OutputConcatenatesLayersAndLayerTwoSeesTheInput) {
  ParameterCollection m;
  DeepLSTMBuilder lstm(2, 2, 3, m);
  perturb(m);
  const std::vector<float> x = {0.5f, -0.8f};
  auto run = [&] {
    ComputationGraph g;
    lstm.new_graph(g);
    lstm.start_new_sequence();
    Expression y = lstm.add_input(input(g, Dim({2}), x));
    EXPECT_EQ(y.dim(), Dim({6}));
    std::vector<float> out = value_of(y);
    std::vector<float> layers = value_of(lstm.final_h()[0]);
    for (float v : value_of(lstm.final_h()[1])) layers.push_back(v);
    expect_close(out, layers);
    expect_close(value_of(lstm.back()), out);
    return out;
  };
  const std::vector<float> before = run();
  // Layer 2's x2i {3, 5}: the last two columns multiply x.
  ParameterStorage& x2i_layer2 = *m.parameters_list()[11];
  ASSERT_EQ(x2i_layer2.dim, Dim({3, 5}));
  for (unsigned k = 9; k < 15; ++k) x2i_layer2.values.v[k] += 0.5f;
  const std::vector<float> after = run();
  for (int k = 0; k < 3; ++k) EXPECT_EQ(before[k], after[k]);
  bool changed = false;
  for (int k = 3; k < 6; ++k) changed |= std::abs(before[k] - after[k]) > 1e-6;
  EXPECT_TRUE(changed);
}

TEST(DeepLSTM, BranchingAndDropoutMasks) {
  ParameterCollection m;
  DeepLSTMBuilder lstm(2, 3, 4, m);
  perturb(m);
  check_branching(lstm, 3);
  lstm.set_dropout(0.5f);
  ComputationGraph g;
  lstm.new_graph(g);
  lstm.start_new_sequence();
  lstm.add_input(input(g, Dim({3}, 2), random_values(6, 4)));
  ASSERT_EQ(lstm.masks.size(), 2u);
  EXPECT_EQ(lstm.masks[1][0].dim(), Dim({4 + 3}, 2));
  EXPECT_EQ(lstm.masks[1][1].dim(), Dim({4}, 2));
}

// ======================= GRUBuilder =======================

TEST(GRU, ParameterLayoutAndNames) {
  ParameterCollection m;
  GRUBuilder gru(2, 3, 4, m);
  std::vector<ExpectedParam> expected;
  unsigned k = 0;
  for (unsigned in : {3u, 4u})
    for (int gate = 0; gate < 3; ++gate) {
      expected.push_back({layer_name("gru-builder", k++), Dim({4, in})});
      expected.push_back({layer_name("gru-builder", k++), Dim({4, 4})});
      expected.push_back({layer_name("gru-builder", k++), Dim({4})});
    }
  expect_parameters(m, expected);
  EXPECT_EQ(gru.num_h0_components(), 2u);
  EXPECT_EQ(gru.get_parameter_collection().get_fullname(), "/gru-builder/");
}

TEST(GRU, GradientUnbatched) {
  ParameterCollection m;
  GRUBuilder gru(2, 3, 3, m);
  perturb(m);
  sequence_gradient_check(m, gru, 3, false, false);
}

TEST(GRU, GradientBatchedWithInitialState) {
  ParameterCollection m;
  GRUBuilder gru(2, 3, 3, m);
  perturb(m);
  sequence_gradient_check(m, gru, 3, true, true);
}

TEST(GRU, StepsMatchTheFormula) {
  ParameterCollection m;
  GRUBuilder gru(1, 1, 1, m);
  const auto ps = m.parameters_list();
  // x2z h2z bz x2r h2r br x2h h2h bh
  const double w[9] = {0.6, -0.4, 0.1, 0.3, 0.9, -0.2, 0.8, -0.5, 0.15};
  for (int k = 0; k < 9; ++k) ps[k]->set_value({static_cast<float>(w[k])});
  const double x1 = 0.9, x2 = -0.3;
  const double h1 = sigmoid(w[2] + w[0] * x1) * std::tanh(w[8] + w[6] * x1);
  const double z = sigmoid(w[2] + w[0] * x2 + w[1] * h1), r = sigmoid(w[5] + w[3] * x2 + w[4] * h1);
  const double h2 = (1 - z) * h1 + z * std::tanh(w[8] + w[6] * x2 + w[7] * r * h1);
  ComputationGraph g;
  gru.new_graph(g);
  gru.start_new_sequence();
  EXPECT_NEAR(as_scalar(gru.add_input(input(g, static_cast<float>(x1))).value()), h1, 1e-6);
  EXPECT_NEAR(as_scalar(gru.add_input(input(g, static_cast<float>(x2))).value()), h2, 1e-6);
}

TEST(GRU, Branching) {
  ParameterCollection m;
  GRUBuilder gru(2, 3, 4, m);
  perturb(m);
  check_branching(gru, 3);
}

// DyNet's GRU dropout: the returned output is dropped (0 or scaled by 1/(1-d)), the stored state is not.
TEST(GRU, DropoutOnTheReturnedOutput) {
  reset_rng(3);
  ParameterCollection m;
  GRUBuilder gru(1, 4, 16, m);
  perturb(m);
  gru.set_dropout(0.5f);
  ComputationGraph g;
  gru.new_graph(g);
  gru.start_new_sequence();
  const std::vector<float> y = value_of(gru.add_input(input(g, Dim({4}), random_values(4, 8))));
  const std::vector<float> state = value_of(gru.back());
  unsigned dropped = 0;
  for (size_t k = 0; k < y.size(); ++k) {
    if (y[k] == 0.f)
      ++dropped;
    else
      EXPECT_NEAR(y[k], 2.f * state[k], 1e-6);
  }
  EXPECT_GT(dropped, 0u);
  EXPECT_LT(dropped, y.size());
  gru.disable_dropout();
  gru.start_new_sequence();
  const std::vector<float> undropped = value_of(gru.add_input(input(g, Dim({4}), random_values(4, 8))));
  expect_close(undropped, value_of(gru.back()));
}

// ======================= SparseLSTMBuilder =======================

TEST(SparseLSTM, ParameterLayoutAndNames) {
  ParameterCollection m;
  SparseLSTMBuilder lstm(2, 3, 2, m);
  std::vector<ExpectedParam> expected;
  unsigned k = 0;
  for (unsigned in : {3u, 2u}) {
    expected.push_back({layer_name("vanilla-lstm-builder", k++), Dim({8, in})});  // x2i
    expected.push_back({layer_name("vanilla-lstm-builder", k++), Dim({8, 2})});   // h2i
    expected.push_back({layer_name("vanilla-lstm-builder", k++), Dim({8, in})});  // x2i mask
    expected.push_back({layer_name("vanilla-lstm-builder", k++), Dim({8, 2})});   // h2i mask
    expected.push_back({layer_name("vanilla-lstm-builder", k++), Dim({8})});      // bi
  }
  expect_parameters(m, expected);
  const auto ps = m.parameters_list();
  for (unsigned e = 0; e < 24; ++e) EXPECT_EQ(ps[2]->values.v[e], 1.f);
  for (unsigned e = 0; e < 8; ++e) EXPECT_EQ(ps[4]->values.v[e], 0.f);
  // params[layer] lists x2i, h2i, bi, x2i mask, h2i mask.
  EXPECT_EQ(lstm.params[0][2].get_fullname(), "/vanilla-lstm-builder/_4");
  EXPECT_EQ(lstm.params[1][3].get_fullname(), "/vanilla-lstm-builder/_7");
}

// set_sparsity(p) masks the fraction p of x2i/h2i weights with the smallest magnitude; the
// builder then computes a vanilla LSTM with those weights zeroed.
TEST(SparseLSTM, SetSparsityPrunesTheSmallestWeights) {
  ParameterCollection m;
  reset_rng(17);
  SparseLSTMBuilder sparse(2, 3, 2, m);
  perturb(m);
  // perturb() also moved the masks off 1; pruning ranks |w · mask|, and this test compares |w|.
  for (unsigned l = 0; l < 2; ++l)
    for (unsigned which = 0; which < 2; ++which) {
      ParameterStorage& mask = sparse.params[l][3 + which].get_storage();
      std::fill(mask.values.v, mask.values.v + mask.dim.size(), 1.f);
    }
  sparse.set_sparsity(0.25f);
  std::vector<float> magnitudes, kept;
  unsigned total = 0, zeros = 0;
  for (unsigned l = 0; l < 2; ++l)
    for (unsigned which = 0; which < 2; ++which) {
      const ParameterStorage& w = sparse.params[l][which].get_storage();
      const ParameterStorage& mask = sparse.params[l][3 + which].get_storage();
      for (unsigned e = 0; e < w.dim.size(); ++e) {
        ++total;
        EXPECT_TRUE(mask.values.v[e] == 0.f || mask.values.v[e] == 1.f);
        if (mask.values.v[e] == 0.f) {
          ++zeros;
          magnitudes.push_back(std::abs(w.values.v[e]));
        } else {
          kept.push_back(std::abs(w.values.v[e]));
        }
      }
    }
  EXPECT_EQ(zeros, total / 4);
  float largest_pruned = 0.f, smallest_kept = 1e9f;
  for (float v : magnitudes) largest_pruned = std::max(largest_pruned, v);
  for (float v : kept) smallest_kept = std::min(smallest_kept, v);
  EXPECT_LE(largest_pruned, smallest_kept);
  // Same values as a VanillaLSTMBuilder holding the masked weights.
  ParameterCollection m2;
  VanillaLSTMBuilder vanilla(2, 3, 2, m2);
  for (unsigned l = 0; l < 2; ++l) {
    for (unsigned which = 0; which < 2; ++which) {
      const ParameterStorage& w = sparse.params[l][which].get_storage();
      const ParameterStorage& mask = sparse.params[l][3 + which].get_storage();
      std::vector<float> masked(w.dim.size());
      for (unsigned e = 0; e < masked.size(); ++e) masked[e] = w.values.v[e] * mask.values.v[e];
      vanilla.params[l][which].set_value(masked);
    }
    const ParameterStorage& b = sparse.params[l][2].get_storage();
    vanilla.params[l][2].set_value(std::vector<float>(b.values.v, b.values.v + b.dim.size()));
  }
  ComputationGraph g;
  sparse.new_graph(g);
  vanilla.new_graph(g);
  sparse.start_new_sequence();
  vanilla.start_new_sequence();
  for (unsigned t = 0; t < 3; ++t) {
    Expression x = input(g, Dim({3}), random_values(3, 40 + t));
    expect_close(value_of(sparse.add_input(x)), value_of(vanilla.add_input(x)));
  }
  sparse.set_sparsity(0.f);
  for (unsigned e = 0; e < 24; ++e) EXPECT_EQ(sparse.params[0][3].get_storage().values.v[e], 1.f);
  EXPECT_THROW(sparse.set_sparsity(1.5f), std::invalid_argument);
}

TEST(SparseLSTM, GradientBatchedAfterPruning) {
  ParameterCollection m;
  SparseLSTMBuilder lstm(2, 3, 2, m, false, 0.5f);
  perturb(m);
  lstm.set_sparsity(0.3f);
  std::set<const ParameterStorageBase*> masks;
  for (auto& layer : lstm.params)
    for (unsigned k : {3u, 4u}) masks.insert(&layer[k].get_storage());
  sequence_gradient_check(m, lstm, 3, true, true, masks);
  // Pruned weights get no gradient.
  ComputationGraph g;
  lstm.new_graph(g);
  lstm.start_new_sequence();
  Expression loss = sum_elems(lstm.add_input(input(g, Dim({3}), random_values(3, 1))));
  loss.value();
  m.reset_gradient();
  g.backward(loss);
  const ParameterStorage& w = lstm.params[0][0].get_storage();
  const ParameterStorage& mask = lstm.params[0][3].get_storage();
  for (unsigned e = 0; e < w.dim.size(); ++e)
    if (mask.values.v[e] == 0.f) EXPECT_EQ(w.g.v[e], 0.f) << e;
}

TEST(Builders, CopySharesParametersAndChecksTheKind) {
  ParameterCollection m;
  CoupledLSTMBuilder a(1, 2, 3, m), b(1, 2, 3, m);
  b.copy(a);
  EXPECT_EQ(b.params[0][0].get_fullname(), a.params[0][0].get_fullname());
  FastLSTMBuilder fast(1, 2, 3, m);
  EXPECT_THROW(fast.copy(a), std::invalid_argument);
  GRUBuilder g1(1, 2, 3, m), g2(1, 2, 3, m), g3(1, 2, 4, m);
  g2.copy(g1);
  EXPECT_EQ(g2.params[0][8].get_fullname(), g1.params[0][8].get_fullname());
  EXPECT_THROW(g3.copy(g1), std::invalid_argument);
  SparseLSTMBuilder s1(1, 2, 3, m), s2(1, 2, 3, m);
  s2.copy(s1);
  EXPECT_EQ(s2.params[0][4].get_fullname(), s1.params[0][4].get_fullname());
  VanillaLSTMBuilder v(1, 2, 3, m);
  EXPECT_THROW(v.copy(s1), std::invalid_argument);
}

// ======================= Tree LSTMs =======================

// A tree over 5 nodes: leaves 0, 1, 2; node 3 = (0, 1, 2) (more children than N = 2); node 4 = (3, 1).
struct Tree {
  std::vector<std::vector<int>> children = {{}, {}, {}, {0, 1, 2}, {3, 1}};
};

Expression tree_loss(ComputationGraph& g, TreeLSTMBuilder& tree, unsigned in_dim, unsigned batch, bool reserve) {
  const Tree t;
  std::vector<Expression> terms;
  if (reserve) tree.set_num_elements(5);
  for (int id = 0; id < 5; ++id) {
    Expression x = input(g, Dim({in_dim}, batch), random_values(in_dim * batch, 500 + id));
    terms.push_back(weighted_sum(g, tree.add_input(id, t.children[id], x), 600 + id));
  }
  return sum(terms);
}

TEST(NaryTreeLSTM, ParameterLayoutAndNames) {
  ParameterCollection m;
  NaryTreeLSTMBuilder tree(2, 2, 3, 4, m);
  const std::string c = "nary-tree-lstm-builder";
  // Per layer 15 names: parameters at 0, 3, 4, 7, 8, 11, 12, 14; lookups at the rest.
  std::vector<ExpectedParam> params;
  std::vector<std::pair<std::string, Dim>> lookups;
  for (unsigned l = 0; l < 2; ++l) {
    const unsigned base = 15 * l, in = l == 0 ? 3 : 4;
    for (unsigned k : {0u, 4u, 8u, 12u}) {
      params.push_back({layer_name(c, base + k), Dim({4, in})});
      params.push_back({layer_name(c, base + (k == 12 ? 14 : k + 3)), Dim({4})});
    }
    for (auto [k, n] : std::vector<std::pair<unsigned, unsigned>>{
             {1, 2}, {2, 2}, {5, 4}, {6, 4}, {9, 2}, {10, 2}, {13, 2}})
      lookups.push_back({layer_name(c, base + k), Dim({4, 4, n})});
  }
  // parameters_list() is in creation order: x2i, bi, x2f, bf, x2o, bo, x2c, bc per layer.
  expect_parameters(m, params);
  const auto lps = m.lookup_parameters_list();
  ASSERT_EQ(lps.size(), lookups.size());
  for (size_t k = 0; k < lps.size(); ++k) {
    EXPECT_EQ(lps[k]->name, lookups[k].first);
    EXPECT_EQ(lps[k]->all_dim, lookups[k].second) << lps[k]->name;
  }
  // lparams[layer]: h2i, h2f, h2o, h2c, c2i, c2f, c2o.
  EXPECT_EQ(tree.lparams[0][1].get_fullname(), layer_name(c, 5));
  EXPECT_EQ(tree.lparams[0][4].get_fullname(), layer_name(c, 2));
  EXPECT_EQ(tree.params[1][7].get_fullname(), layer_name(c, 29));
  EXPECT_THROW(NaryTreeLSTMBuilder(0, 1, 2, 2, m), std::invalid_argument);
}

TEST(NaryTreeLSTM, GradientUnbatched) {
  ParameterCollection m;
  NaryTreeLSTMBuilder tree(2, 1, 3, 3, m);
  perturb(m);
  for (auto& lp : m.lookup_parameters_list())
    for (unsigned k = 0; k < lp->all_dim.size(); ++k) lp->all_values.v[k] *= 0.5f;
  check_gradients(m, [&](ComputationGraph& g) {
    tree.new_graph(g);
    tree.start_new_sequence();
    return tree_loss(g, tree, 3, 1, false);
  });
}

TEST(NaryTreeLSTM, GradientBatchedTwoLayersWithInitialState) {
  ParameterCollection m;
  NaryTreeLSTMBuilder tree(2, 2, 2, 2, m);
  perturb(m);
  Parameter init = m.add_parameters({2, 4});
  check_gradients(m, [&](ComputationGraph& g) {
    tree.new_graph(g);
    Expression all = parameter(g, init);
    tree.start_new_sequence({pick(all, 0u, 1), pick(all, 1u, 1), pick(all, 2u, 1), pick(all, 3u, 1)});
    return tree_loss(g, tree, 2, 2, true);
  });
}

// Two leaves and a parent, one unit, N = 2: the formulas of the class comment.
TEST(NaryTreeLSTM, ValuesMatchTheFormula) {
  ParameterCollection m;
  NaryTreeLSTMBuilder tree(2, 1, 1, 1, m);
  // parameters: x2i bi x2f bf x2o bo x2c bc
  const double p[8] = {0.5, 0.1, -0.4, 0.2, 0.7, -0.1, 0.9, 0.05};
  const auto ps = m.parameters_list();
  for (int k = 0; k < 8; ++k) ps[k]->set_value({static_cast<float>(p[k])});
  // lookups (creation order): h2i[2] c2i[2] h2f[4] c2f[4] h2o[2] c2o[2] h2c[2]
  const std::vector<std::vector<double>> u = {{0.3, -0.2},          {0.15, 0.25}, {0.1, 0.2, -0.3, 0.4},
                                              {0.05, -0.1, 0.2, 0.3}, {-0.6, 0.35}, {0.45, -0.15},
                                              {0.8, -0.7}};
  const auto lps = m.lookup_parameters_list();
  for (int k = 0; k < 7; ++k)
    for (unsigned r = 0; r < u[k].size(); ++r) lps[k]->initialize(r, {static_cast<float>(u[k][r])});
  const double h2i[2] = {u[0][0], u[0][1]}, c2i[2] = {u[1][0], u[1][1]}, h2o[2] = {u[4][0], u[4][1]},
               c2o[2] = {u[5][0], u[5][1]}, h2c[2] = {u[6][0], u[6][1]};
  const double xs[3] = {0.6, -0.8, 0.3};
  auto leaf = [&](double x, double& h, double& c) {
    c = sigmoid(p[1] + p[0] * x) * std::tanh(p[7] + p[6] * x);
    h = sigmoid(p[5] + p[4] * x) * std::tanh(c);
  };
  double hl[2], cl[2];
  leaf(xs[0], hl[0], cl[0]);
  leaf(xs[1], hl[1], cl[1]);
  const double x = xs[2];
  const double i = sigmoid(p[1] + p[0] * x + h2i[0] * hl[0] + c2i[0] * cl[0] + h2i[1] * hl[1] + c2i[1] * cl[1]);
  const double g = std::tanh(p[7] + p[6] * x + h2c[0] * hl[0] + h2c[1] * hl[1]);
  double c = i * g;
  for (int k = 0; k < 2; ++k) {
    double a = p[3] + p[2] * x + 1;
    for (int j = 0; j < 2; ++j) a += u[2][j * 2 + k] * hl[j] + u[3][j * 2 + k] * cl[j];
    c += sigmoid(a) * cl[k];
  }
  const double o = sigmoid(p[5] + p[4] * x + h2o[0] * hl[0] + c2o[0] * cl[0] + h2o[1] * hl[1] + c2o[1] * cl[1]);
  const double h = o * std::tanh(c);
  ComputationGraph cg;
  tree.new_graph(cg);
  tree.start_new_sequence();
  EXPECT_NEAR(as_scalar(tree.add_input(0, {}, input(cg, static_cast<float>(xs[0]))).value()), hl[0], 1e-6);
  tree.add_input(1, {}, input(cg, static_cast<float>(xs[1])));
  EXPECT_NEAR(as_scalar(tree.add_input(2, {0, 1}, input(cg, static_cast<float>(x))).value()), h, 1e-6);
  EXPECT_NEAR(as_scalar(tree.c[2][0].value()), c, 1e-6);
}

// With set_num_elements, nodes come in any bottom-up order and give the same values.
TEST(NaryTreeLSTM, NodeOrderAndErrors) {
  ParameterCollection m;
  NaryTreeLSTMBuilder tree(2, 1, 2, 3, m);
  perturb(m);
  std::vector<float> in_order;
  {
    ComputationGraph g;
    tree.new_graph(g);
    tree.start_new_sequence();
    tree.add_input(0, {}, input(g, Dim({2}), random_values(2, 1)));
    tree.add_input(1, {}, input(g, Dim({2}), random_values(2, 2)));
    in_order = value_of(tree.add_input(2, {1, 0}, input(g, Dim({2}), random_values(2, 3))));
  }
  ComputationGraph g;
  tree.new_graph(g);
  tree.start_new_sequence();
  tree.set_num_elements(3);
  tree.add_input(1, {}, input(g, Dim({2}), random_values(2, 2)));
  Expression x2 = input(g, Dim({2}), random_values(2, 3));
  EXPECT_THROW(tree.add_input(2, {1, 0}, x2), std::invalid_argument);  // child 0 not added yet
  tree.add_input(0, {}, input(g, Dim({2}), random_values(2, 1)));
  expect_close(value_of(tree.add_input(2, {1, 0}, x2)), in_order);
  EXPECT_THROW(tree.add_input(2, {}, x2), std::invalid_argument);   // already added
  EXPECT_THROW(tree.add_input(5, {}, x2), std::invalid_argument);   // not the next id
  EXPECT_THROW(tree.add_input(3, {3}, x2), std::invalid_argument);  // own child
  EXPECT_THROW(tree.add_input(3, {}, input(g, Dim({3}), std::vector<float>(3))), std::invalid_argument);
  EXPECT_THROW(tree.set_num_elements(1), std::invalid_argument);  // would drop added nodes
  EXPECT_NO_THROW(tree.add_input(3, {2}, x2));
  EXPECT_THROW(tree.back(), std::runtime_error);
  EXPECT_THROW(tree.get_h(0), std::runtime_error);
  NaryTreeLSTMBuilder fresh(2, 1, 2, 3, m);
  EXPECT_THROW(fresh.add_input(0, {}, x2), std::runtime_error);  // no new_graph/start_new_sequence
}

TEST(NaryTreeLSTM, CopySharesAllParameters) {
  ParameterCollection m;
  NaryTreeLSTMBuilder a(2, 1, 2, 3, m), b(2, 1, 2, 3, m), c(3, 1, 2, 3, m);
  b.copy(a);
  EXPECT_EQ(b.params[0][0].get_fullname(), a.params[0][0].get_fullname());
  EXPECT_EQ(b.lparams[0][6].get_fullname(), a.lparams[0][6].get_fullname());
  EXPECT_THROW(c.copy(a), std::invalid_argument);
}

TEST(UnidirectionalTreeLSTM, NamesAndValuesMatchAnLSTMOverTheChildren) {
  ParameterCollection m;
  UnidirectionalTreeLSTMBuilder tree(1, 3, 3, m);
  perturb(m);
  const auto ps = m.parameters_list();
  ASSERT_EQ(ps.size(), 3u);
  EXPECT_EQ(ps[0]->name, "/unidirectional-tree-lstm-builder/vanilla-lstm-builder/_0");
  EXPECT_EQ(tree.get_parameter_collection().get_fullname(), "/unidirectional-tree-lstm-builder/vanilla-lstm-builder/");
  ComputationGraph g;
  tree.new_graph(g);
  tree.start_new_sequence();
  Expression x0 = input(g, Dim({3}), random_values(3, 1)), x1 = input(g, Dim({3}), random_values(3, 2)),
             x2 = input(g, Dim({3}), random_values(3, 3));
  Expression h0 = tree.add_input(0, {}, x0), h1 = tree.add_input(1, {}, x1);
  Expression h2 = tree.add_input(2, {1, 0}, x2);
  // The same LSTM run by hand: x2, then h1, then h0.
  LSTMBuilder& lstm = tree.node_builder;
  lstm.start_new_sequence();
  expect_close(value_of(lstm.add_input(x0)), value_of(h0));
  lstm.start_new_sequence();
  lstm.add_input(x2);
  lstm.add_input(h1);
  expect_close(value_of(lstm.add_input(h0)), value_of(h2));
}

TEST(UnidirectionalTreeLSTM, GradientBatched) {
  ParameterCollection m;
  UnidirectionalTreeLSTMBuilder tree(2, 3, 3, m);
  perturb(m);
  check_gradients(m, [&](ComputationGraph& g) {
    tree.new_graph(g);
    tree.start_new_sequence();
    return tree_loss(g, tree, 3, 2, false);
  });
}

TEST(UnidirectionalTreeLSTM, ChildrenNeedInputDimEqualToHiddenDim) {
  ParameterCollection m;
  UnidirectionalTreeLSTMBuilder tree(1, 2, 3, m);
  ComputationGraph g;
  tree.new_graph(g);
  tree.start_new_sequence();
  Expression x = input(g, Dim({2}), std::vector<float>{0.1f, 0.2f});
  EXPECT_EQ(tree.add_input(0, {}, x).dim(), Dim({3}));
  EXPECT_THROW(tree.add_input(1, {0}, x), std::invalid_argument);
}

TEST(BidirectionalTreeLSTM, NamesAndValuesMatchTwoLSTMs) {
  ParameterCollection m;
  BidirectionalTreeLSTMBuilder tree(1, 4, 4, m);
  perturb(m);
  const auto ps = m.parameters_list();
  ASSERT_EQ(ps.size(), 6u);
  EXPECT_EQ(ps[0]->name, "/bidirectional-tree-lstm-builder/vanilla-lstm-builder/_0");
  EXPECT_EQ(ps[3]->name, "/bidirectional-tree-lstm-builder/vanilla-lstm-builder_1/_0");
  EXPECT_EQ(ps[0]->dim, Dim({8, 4}));
  EXPECT_THROW(BidirectionalTreeLSTMBuilder(1, 4, 5, m), std::invalid_argument);
  ComputationGraph g;
  tree.new_graph(g);
  tree.start_new_sequence();
  Expression x0 = input(g, Dim({4}), random_values(4, 1)), x1 = input(g, Dim({4}), random_values(4, 2)),
             x2 = input(g, Dim({4}), random_values(4, 3));
  Expression h0 = tree.add_input(0, {}, x0), h1 = tree.add_input(1, {}, x1);
  Expression h2 = tree.add_input(2, {0, 1}, x2);
  EXPECT_EQ(h2.dim(), Dim({4}));
  tree.fwd_node_builder.start_new_sequence();
  tree.fwd_node_builder.add_input(x2);
  tree.fwd_node_builder.add_input(h0);
  std::vector<float> expected = value_of(tree.fwd_node_builder.add_input(h1));
  tree.rev_node_builder.start_new_sequence();
  tree.rev_node_builder.add_input(x2);
  tree.rev_node_builder.add_input(h1);
  for (float v : value_of(tree.rev_node_builder.add_input(h0))) expected.push_back(v);
  expect_close(value_of(h2), expected);
}

TEST(BidirectionalTreeLSTM, GradientUnbatched) {
  ParameterCollection m;
  BidirectionalTreeLSTMBuilder tree(1, 4, 4, m);
  perturb(m);
  check_gradients(m, [&](ComputationGraph& g) {
    tree.new_graph(g);
    tree.start_new_sequence();
    return tree_loss(g, tree, 4, 1, true);
  });
}


// ======================= Softmax builders =======================

double log_sum_exp(const std::vector<float>& v) {
  double m = v[0], s = 0;
  for (float x : v) m = std::max<double>(m, x);
  for (float x : v) s += std::exp(x - m);
  return m + std::log(s);
}

// The loss over a batch of representations: Σ_i -log p(word_i | rep_i); rep comes from a trainable
// parameter so its gradient is checked too.
Expression batch_loss(ComputationGraph& g, SoftmaxBuilder& sm, Parameter reps, const std::vector<unsigned>& words) {
  sm.new_graph(g);
  const unsigned d = reps.dim()[0];
  Expression rep = reshape(parameter(g, reps), Dim({d}, static_cast<unsigned>(words.size())));
  return sum_batches(sm.neg_log_softmax(rep, words));
}

// Every word's neg_log_softmax equals -full_log_distribution[word]; the distribution sums to 1;
// the batched loss equals the per-element ones.
// With normalized_logits, full_logits are already log-probabilities (the factored builders).
void check_distribution(SoftmaxBuilder& sm, unsigned rep_dim, const std::vector<unsigned>& words, unsigned vocab,
                        bool normalized_logits) {
  ComputationGraph g;
  sm.new_graph(g);
  Expression rep = input(g, Dim({rep_dim}), random_values(rep_dim, 77));
  const std::vector<float> dist = value_of(sm.full_log_distribution(rep));
  ASSERT_EQ(dist.size(), vocab);
  double total = 0;
  for (float v : dist) total += std::exp(v);
  EXPECT_NEAR(total, 1.0, 1e-5);
  const std::vector<float> logits = value_of(sm.full_logits(rep));
  for (unsigned w = 0; w < vocab; ++w)
    EXPECT_NEAR(logits[w] - log_sum_exp(logits), dist[w], 1e-5);
  if (normalized_logits) EXPECT_NEAR(log_sum_exp(logits), 0.0, 1e-5);
  for (unsigned w : words) EXPECT_NEAR(as_scalar(sm.neg_log_softmax(rep, w).value()), -dist[w], 1e-5) << w;
  Expression batch = input(g, Dim({rep_dim}, 3), random_values(rep_dim * 3, 78));
  const std::vector<unsigned> three = {words[0], words[words.size() / 2], words.back()};
  const std::vector<float> batched = value_of(sm.neg_log_softmax(batch, three));
  ASSERT_EQ(batched.size(), 3u);
  for (unsigned i = 0; i < 3; ++i)
    EXPECT_NEAR(batched[i], as_scalar(sm.neg_log_softmax(pick_batch_elem(batch, i), three[i]).value()), 1e-5);
  const std::vector<float> batched_dist = value_of(sm.full_log_distribution(batch));
  ASSERT_EQ(batched_dist.size(), 3u * vocab);
  for (unsigned w : three) EXPECT_NEAR(batched_dist[w], -as_scalar(sm.neg_log_softmax(pick_batch_elem(batch, 0u), w).value()), 1e-5);
  EXPECT_THROW(sm.neg_log_softmax(batch, std::vector<unsigned>{words[0]}), std::invalid_argument);
  EXPECT_THROW(sm.neg_log_softmax(input(g, Dim({rep_dim + 1}), std::vector<float>(rep_dim + 1)), words[0]),
               std::invalid_argument);
  EXPECT_THROW(sm.sample(batch), std::invalid_argument);
}

TEST(StandardSoftmax, LayoutValuesAndGradients) {
  ParameterCollection m;
  StandardSoftmaxBuilder sm(3, 5, m);
  expect_parameters(m, {{"/standard-softmax-builder/_0", Dim({5, 3})}, {"/standard-softmax-builder/_1", Dim({5})}});
  EXPECT_EQ(sm.get_parameter_collection().get_fullname(), "/standard-softmax-builder/");
  perturb(m);
  // -log softmax(W r + b)[c] by hand.
  const ParameterStorage &W = *m.parameters_list()[0], &b = *m.parameters_list()[1];
  const std::vector<float> r = {0.4f, -0.9f, 0.3f};
  std::vector<float> logits(5);
  for (unsigned i = 0; i < 5; ++i) {
    logits[i] = b.values.v[i];
    for (unsigned j = 0; j < 3; ++j) logits[i] += W.values.v[j * 5 + i] * r[j];
  }
  {
    ComputationGraph g;
    sm.new_graph(g);
    EXPECT_NEAR(as_scalar(sm.neg_log_softmax(input(g, Dim({3}), r), 2).value()), log_sum_exp(logits) - logits[2], 1e-5);
    EXPECT_THROW(sm.neg_log_softmax(input(g, Dim({3}), r), 5), std::invalid_argument);
  }
  check_distribution(sm, 3, {0, 1, 2, 3, 4}, 5, false);
  Parameter reps = m.add_parameters({3, 4});
  check_gradients(m, [&](ComputationGraph& g) { return batch_loss(g, sm, reps, {4, 0, 2, 2}); });
  StandardSoftmaxBuilder unused(3, 5, m);
  ComputationGraph g;
  EXPECT_THROW(unused.neg_log_softmax(input(g, Dim({3}), r), 1), std::runtime_error);  // no new_graph
}

TEST(StandardSoftmax, WithoutBiasAndFromExistingParameters) {
  ParameterCollection m;
  StandardSoftmaxBuilder no_bias(2, 4, m, false);
  expect_parameters(m, {{"/standard-softmax-builder/_0", Dim({4, 2})}});
  check_distribution(no_bias, 2, {0, 3}, 4, false);
  Parameter W = m.add_parameters({4, 2}), b = m.add_parameters({4});
  perturb(m);
  StandardSoftmaxBuilder from_params(W, b), from_w(W);
  EXPECT_THROW(from_params.get_parameter_collection(), std::runtime_error);
  ComputationGraph g;
  from_params.new_graph(g);
  from_w.new_graph(g);
  Expression r = input(g, Dim({2}), std::vector<float>{0.5f, -0.25f});
  expect_close(value_of(from_params.full_logits(r)), value_of(affine_transform({parameter(g, b), parameter(g, W), r})));
  expect_close(value_of(from_w.full_logits(r)), value_of(parameter(g, W) * r));
  Parameter bad_b = m.add_parameters({3});
  EXPECT_THROW(StandardSoftmaxBuilder(W, bad_b), std::invalid_argument);
}

TEST(StandardSoftmax, SampleFollowsTheDistribution) {
  reset_rng(11);
  ParameterCollection m;
  StandardSoftmaxBuilder sm(1, 3, m);
  m.parameters_list()[0]->set_value({0.f, 0.f, 0.f});
  m.parameters_list()[1]->set_value({std::log(0.2f), std::log(0.5f), std::log(0.3f)});
  ComputationGraph g;
  sm.new_graph(g);
  Expression r = input(g, 1.f);
  std::vector<unsigned> counts(3);
  for (int k = 0; k < 2000; ++k) ++counts[sm.sample(r)];
  EXPECT_NEAR(counts[0] / 2000.0, 0.2, 0.04);
  EXPECT_NEAR(counts[1] / 2000.0, 0.5, 0.04);
  EXPECT_NEAR(counts[2] / 2000.0, 0.3, 0.04);
}

// Clusters A = {w1, w2}, B = {w3} (a singleton), C = {w4, w5, w6}; "pre" is in the dictionary
// before the file is read and in no cluster.
const char* kClusters = "A w1 12\nA w2\n\nB\tw3\nC w4\nC w5 7\nC w6\n";

TEST(ClassFactoredSoftmax, LayoutAndClusters) {
  const test::TempDir tmp;
  Dict d;
  d.convert("pre");
  ParameterCollection m;
  ClassFactoredSoftmaxBuilder sm(3, tmp.write("clusters", kClusters), d, m);
  const std::string c = "class-factored-softmax-builder";
  expect_parameters(m, {{layer_name(c, 0), Dim({3, 3})},
                        {layer_name(c, 1), Dim({3})},
                        {layer_name(c, 2), Dim({2, 3})},
                        {layer_name(c, 3), Dim({2})},
                        {layer_name(c, 4), Dim({3, 3})},
                        {layer_name(c, 5), Dim({3})}});
  EXPECT_EQ(d.size(), 7u);
  EXPECT_EQ(d.convert("w5"), 5);
  EXPECT_EQ(sm.widx2cidx, (std::vector<int>{-1, 0, 0, 1, 2, 2, 2}));
  EXPECT_EQ(sm.widx2cwidx[6], 2u);
  EXPECT_EQ(sm.singleton_cluster, (std::vector<bool>{false, true, false}));
  ParameterCollection m2;
  ClassFactoredSoftmaxBuilder no_bias(3, tmp.write("clusters", kClusters), d, m2, false);
  EXPECT_EQ(m2.parameters_list().size(), 3u);
  EXPECT_EQ(d.size(), 7u);  // the words were known already
}

TEST(ClassFactoredSoftmax, ValuesAndGradients) {
  const test::TempDir tmp;
  Dict d;
  d.convert("pre");
  ParameterCollection m;
  ClassFactoredSoftmaxBuilder sm(3, tmp.write("clusters", kClusters), d, m);
  perturb(m);
  {
    // -log p(w5) = -log p(C) - log p(w5 | C), from the class and subclass distributions.
    ComputationGraph g;
    sm.new_graph(g);
    Expression r = input(g, Dim({3}), random_values(3, 5));
    const double expected = -value_of(sm.class_log_distribution(r))[2] - value_of(sm.subclass_log_distribution(r, 2))[1];
    EXPECT_NEAR(as_scalar(sm.neg_log_softmax(r, 5).value()), expected, 1e-5);
    EXPECT_NEAR(as_scalar(sm.neg_log_softmax(r, 3).value()), -value_of(sm.class_log_distribution(r))[1], 1e-6);
    expect_close(value_of(sm.subclass_log_distribution(r, 1)), {0.f});
    EXPECT_LT(value_of(sm.full_log_distribution(r))[0], -9000.f);  // "pre" is in no cluster
    EXPECT_THROW(sm.neg_log_softmax(r, 0), std::invalid_argument);
    EXPECT_THROW(sm.neg_log_softmax(r, 9), std::invalid_argument);
    EXPECT_THROW(sm.subclass_logits(r, 3), std::invalid_argument);
  }
  check_distribution(sm, 3, {1, 2, 3, 4, 5, 6}, 7, true);
  Parameter reps = m.add_parameters({3, 4});
  check_gradients(m, [&](ComputationGraph& g) { return batch_loss(g, sm, reps, {5, 3, 1, 6}); });
  Parameter one_rep = m.add_parameters({3, 1});
  check_gradients(m, [&](ComputationGraph& g) { return batch_loss(g, sm, one_rep, {2}); }, {}, 0.2);
}

TEST(ClassFactoredSoftmax, SampleAndFileErrors) {
  const test::TempDir tmp;
  reset_rng(4);
  Dict d;
  ParameterCollection m;
  ClassFactoredSoftmaxBuilder sm(2, tmp.write("clusters", kClusters), d, m);
  perturb(m);
  ComputationGraph g;
  sm.new_graph(g);
  Expression r = input(g, Dim({2}), std::vector<float>{0.3f, 0.8f});
  const std::vector<float> dist = value_of(sm.full_log_distribution(r));
  std::vector<unsigned> counts(dist.size());
  for (int k = 0; k < 3000; ++k) ++counts[sm.sample(r)];
  for (unsigned w = 0; w < dist.size(); ++w) EXPECT_NEAR(counts[w] / 3000.0, std::exp(dist[w]), 0.035) << w;
  EXPECT_THROW(ClassFactoredSoftmaxBuilder(2, tmp.write("missing", ""), d, m), std::invalid_argument);
  EXPECT_THROW(ClassFactoredSoftmaxBuilder(2, tmp.path("no_such_file"), d, m), std::invalid_argument);
  EXPECT_THROW(ClassFactoredSoftmaxBuilder(2, tmp.write("bad", "A w1\nB\n"), d, m), std::invalid_argument);
  EXPECT_THROW(ClassFactoredSoftmaxBuilder(2, tmp.write("dup", "A w1\nB w1\n"), d, m), std::invalid_argument);
  // A frozen dictionary: unknown words are skipped.
  Dict frozen;
  frozen.convert("w4");
  frozen.freeze();
  ParameterCollection m2;
  ClassFactoredSoftmaxBuilder small(2, tmp.write("clusters", kClusters), frozen, m2);
  EXPECT_EQ(small.cidx2words, (std::vector<std::vector<unsigned>>{{0}}));
}

// Tree: root -> {0, 1, 2}; 0 -> {0 0, 0 1}; "0 0" holds a, b; "0 1" holds c; 1 holds d, e, f; 2 holds g.
const char* kTree = "0 0\ta\n0 0\tb 5\n0 1\tc\n1\td\n1\te\n\n1\tf\n2\tg\n";

TEST(HierarchicalSoftmax, LayoutValuesAndGradients) {
  const test::TempDir tmp;
  Dict d;
  ParameterCollection m;
  HierarchicalSoftmaxBuilder sm(3, tmp.write("tree", kTree), d, m);
  EXPECT_EQ(sm.num_nodes(), 6u);
  EXPECT_EQ(d.size(), 7u);
  const std::string c = "hsm-builder";
  // Depth first: root (3 branches), node 0 (binary), node "0 0" (binary), node 1 (3 words).
  expect_parameters(m, {{layer_name(c, 0), Dim({3, 3})},
                        {layer_name(c, 1), Dim({3})},
                        {layer_name(c, 2), Dim({1, 3})},
                        {layer_name(c, 3), Dim({1})},
                        {layer_name(c, 4), Dim({1, 3})},
                        {layer_name(c, 5), Dim({1})},
                        {layer_name(c, 6), Dim({3, 3})},
                        {layer_name(c, 7), Dim({3})}});
  perturb(m);
  // p(b) = softmax(root)[0] · (1 - σ(s_0)) ... by hand: b is branch 1 at "0 0", "0 0" is branch 0 at 0.
  const std::vector<float> r = {0.2f, -0.5f, 0.9f};
  auto score = [&](unsigned w_index, unsigned b_index, unsigned row, unsigned rows) {
    const ParameterStorage &W = *m.parameters_list()[w_index], &b = *m.parameters_list()[b_index];
    double s = b.values.v[row];
    for (unsigned j = 0; j < 3; ++j) s += W.values.v[j * rows + row] * r[j];
    return s;
  };
  std::vector<float> root(3);
  for (unsigned k = 0; k < 3; ++k) root[k] = static_cast<float>(score(0, 1, k, 3));
  const double log_p_b = root[0] - log_sum_exp(root) + std::log(sigmoid(score(2, 3, 0, 1))) +
                         std::log(1 - sigmoid(score(4, 5, 0, 1)));
  {
    ComputationGraph g;
    sm.new_graph(g);
    EXPECT_NEAR(as_scalar(sm.neg_log_softmax(input(g, Dim({3}), r), 1).value()), -log_p_b, 1e-5);
    // g is the only word under root branch 2: p(g) = softmax(root)[2].
    EXPECT_NEAR(as_scalar(sm.neg_log_softmax(input(g, Dim({3}), r), 6).value()), log_sum_exp(root) - root[2], 1e-5);
    EXPECT_THROW(sm.neg_log_softmax(input(g, Dim({3}), r), 7), std::invalid_argument);
  }
  check_distribution(sm, 3, {0, 1, 2, 3, 4, 5, 6}, 7, true);
  Parameter reps = m.add_parameters({3, 5});
  check_gradients(m, [&](ComputationGraph& g) { return batch_loss(g, sm, reps, {0, 1, 2, 4, 6}); });
}

TEST(HierarchicalSoftmax, SampleAndFileErrors) {
  const test::TempDir tmp;
  reset_rng(8);
  Dict d;
  d.convert("zero");
  ParameterCollection m;
  HierarchicalSoftmaxBuilder sm(2, tmp.write("tree", kTree), d, m);
  perturb(m);
  ComputationGraph g;
  sm.new_graph(g);
  Expression r = input(g, Dim({2}), std::vector<float>{-0.4f, 0.7f});
  const std::vector<float> dist = value_of(sm.full_log_distribution(r));
  ASSERT_EQ(dist.size(), 8u);
  EXPECT_LT(dist[0], -9000.f);  // "zero" is in no cluster
  std::vector<unsigned> counts(dist.size());
  for (int k = 0; k < 3000; ++k) ++counts[sm.sample(r)];
  for (unsigned w = 0; w < dist.size(); ++w) EXPECT_NEAR(counts[w] / 3000.0, std::exp(dist[w]), 0.035) << w;
  EXPECT_THROW(HierarchicalSoftmaxBuilder(2, tmp.write("notab", "0 1 a\n"), d, m), std::invalid_argument);
  EXPECT_THROW(HierarchicalSoftmaxBuilder(2, tmp.write("mixed", "0\ta\n0 1\tb\n"), d, m), std::invalid_argument);
  EXPECT_THROW(HierarchicalSoftmaxBuilder(2, tmp.write("twice", "0\ta\n1\ta\n"), d, m), std::invalid_argument);
  EXPECT_THROW(HierarchicalSoftmaxBuilder(2, tmp.path("no_such_tree"), d, m), std::invalid_argument);
  // A single word: certain, so its loss is 0.
  ParameterCollection m2;
  HierarchicalSoftmaxBuilder one(2, tmp.write("one", "0\tonly\n"), d, m2);
  EXPECT_TRUE(m2.parameters_list().empty());
  ComputationGraph g2;
  one.new_graph(g2);
  const unsigned only = static_cast<unsigned>(d.convert("only"));
  EXPECT_EQ(as_scalar(one.neg_log_softmax(input(g2, Dim({2}), std::vector<float>{1.f, 2.f}), only).value()), 0.f);
}

// ======================= Saved models =======================

// A builder saved in DyNet's text format loads into a fresh builder of the same shape (by position
// under its collection's name) and computes the same outputs; the records carry DyNet's names.
TEST(Builders, SaveAndLoadThroughTheTextFormat) {
  const test::TempDir tmp;
  using Factory = std::function<std::unique_ptr<RNNBuilder>(ParameterCollection&)>;
  const std::vector<std::pair<std::string, Factory>> kinds = {
      {"#Parameter# /lstm-builder/_10 {3}", [](ParameterCollection& m) { return std::make_unique<CoupledLSTMBuilder>(2, 2, 3, m); }},
      {"#Parameter# /fast-lstm-builder/_2 {3,1}", [](ParameterCollection& m) { return std::make_unique<FastLSTMBuilder>(2, 2, 3, m); }},
      {"#Parameter# /deep-lstm-builder/_11 {3,5}", [](ParameterCollection& m) { return std::make_unique<DeepLSTMBuilder>(2, 2, 3, m); }},
      {"#Parameter# /gru-builder/_8 {3}", [](ParameterCollection& m) { return std::make_unique<GRUBuilder>(2, 2, 3, m); }},
      {"#Parameter# /vanilla-lstm-builder/_3 {12,3}", [](ParameterCollection& m) { return std::make_unique<SparseLSTMBuilder>(2, 2, 3, m); }},
      {"#Parameter# /simple-rnn-builder/_3 {3,3}", [](ParameterCollection& m) { return std::make_unique<SimpleRNNBuilder>(2, 2, 3, m, true); }},
  };
  const std::string path = tmp.path("saved.txt");
  for (const auto& [header, make] : kinds) {
    ParameterCollection saved_model, loaded_model;
    auto saved = make(saved_model);
    auto loaded = make(loaded_model);
    perturb(saved_model, 0.3f);
    TextFileSaver(path).save(saved_model);
    TextFileLoader(path).populate(loaded_model);
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find(header + " "), std::string::npos) << header;
    ComputationGraph g;
    saved->new_graph(g);
    loaded->new_graph(g);
    saved->start_new_sequence();
    loaded->start_new_sequence();
    for (unsigned t = 0; t < 2; ++t) {
      Expression x = input(g, Dim({2}), random_values(2, 70 + t));
      expect_close(value_of(saved->add_input(x)), value_of(loaded->add_input(x)));
    }
  }
}

// ======================= Layer-normalised and compact vanilla LSTMs =======================

// A reference vanilla LSTM step in doubles (weights column-major, as stored).
struct RefLSTM {
  unsigned in, hid;
  std::vector<double> wx, wh, b, ln[6];  // ln: g_h, b_h, g_x, b_x, g_c, b_c
  bool layer_norm;
  static std::vector<double> norm(const std::vector<double>& v, const std::vector<double>& g,
                                  const std::vector<double>& b) {
    double mean = 0, var = 0;
    for (double x : v) mean += x / v.size();
    for (double x : v) var += (x - mean) * (x - mean) / v.size();
    std::vector<double> out(v.size());
    for (size_t k = 0; k < v.size(); ++k) out[k] = g[k] * (v[k] - mean) / (std::sqrt(var) + 1e-8) + b[k];
    return out;
  }
  std::vector<double> matvec(const std::vector<double>& w, const std::vector<double>& x) const {
    std::vector<double> y(4 * hid, 0.0);
    for (size_t j = 0; j < x.size(); ++j)
      for (unsigned r = 0; r < 4 * hid; ++r) y[r] += w[j * 4 * hid + r] * x[j];
    return y;
  }
  // One step from (h, c) (empty: the zero state without recurrent terms).
  void step(const std::vector<double>& x, std::vector<double>& h, std::vector<double>& c, double forget_bias) const {
    std::vector<double> a = matvec(wx, x);
    if (layer_norm) a = norm(a, ln[2], ln[3]);
    if (!h.empty()) {
      std::vector<double> r = matvec(wh, h);
      if (layer_norm) r = norm(r, ln[0], ln[1]);
      for (unsigned k = 0; k < 4 * hid; ++k) a[k] += r[k];
    }
    for (unsigned k = 0; k < 4 * hid; ++k) a[k] += b[k];
    std::vector<double> c_new(hid), h_new(hid);
    for (unsigned k = 0; k < hid; ++k) {
      const double i = sigmoid(a[k]), f = sigmoid(a[hid + k] + forget_bias), g = std::tanh(a[3 * hid + k]);
      c_new[k] = (c.empty() ? 0.0 : f * c[k]) + i * g;
    }
    const std::vector<double> c_seen = layer_norm ? norm(c_new, ln[4], ln[5]) : c_new;
    for (unsigned k = 0; k < hid; ++k) h_new[k] = sigmoid(a[2 * hid + k]) * std::tanh(c_seen[k]);
    h = h_new;
    c = c_new;
  }
};

std::vector<double> as_doubles(const ParameterStorage& p) { return std::vector<double>(p.values.v, p.values.v + p.dim.size()); }

TEST(VanillaLSTM, LayerNormLayoutAndValues) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(2, 3, 2, m, true, 0.5f);
  std::vector<ExpectedParam> expected;
  for (unsigned l = 0; l < 2; ++l) {
    const unsigned in = l == 0 ? 3 : 2;
    expected.push_back({layer_name("vanilla-lstm-builder", 3 * l), Dim({8, in})});
    expected.push_back({layer_name("vanilla-lstm-builder", 3 * l + 1), Dim({8, 2})});
    expected.push_back({layer_name("vanilla-lstm-builder", 3 * l + 2), Dim({8})});
    for (unsigned k = 0; k < 6; ++k) expected.push_back({"/_" + std::to_string(6 * l + k), Dim({k < 4 ? 8u : 2u})});
  }
  expect_parameters(m, expected);
  const auto ps = m.parameters_list();
  for (unsigned k = 0; k < 6; ++k) EXPECT_EQ(ps[3 + k]->values.v[0], k % 2 == 0 ? 1.f : 0.f);  // gains 1, biases 0
  ASSERT_EQ(lstm.ln_params.size(), 2u);
  EXPECT_EQ(lstm.ln_params[1][4].get_fullname(), "/_10");
  perturb(m, 0.2f);
  // One layer of the reference against layer 1, fed the same inputs.
  RefLSTM ref{3, 2, as_doubles(*ps[0]), as_doubles(*ps[1]), as_doubles(*ps[2]), {}, true};
  for (unsigned k = 0; k < 6; ++k) ref.ln[k] = as_doubles(*ps[3 + k]);
  std::vector<double> h, c;
  ComputationGraph g;
  lstm.new_graph(g);
  lstm.start_new_sequence();
  for (unsigned t = 0; t < 3; ++t) {
    const std::vector<float> x = random_values(3, 30 + t);
    ref.step(std::vector<double>(x.begin(), x.end()), h, c, 0.5);
    lstm.add_input(input(g, Dim({3}), x));
    const std::vector<float> h1 = value_of(lstm.final_h()[0]), c1 = value_of(lstm.final_s()[0]);
    for (unsigned k = 0; k < 2; ++k) {
      EXPECT_NEAR(h1[k], h[k], 1e-5) << "step " << t;
      EXPECT_NEAR(c1[k], c[k], 1e-5) << "step " << t;
    }
  }
}

TEST(VanillaLSTM, LayerNormGradients) {
  reset_rng(23);  // finite differences through layer norm are sensitive to near-equal gate values
  ParameterCollection m;
  VanillaLSTMBuilder lstm(2, 3, 2, m, true);
  perturb(m, 0.2f);
  sequence_gradient_check(m, lstm, 3, false, false);
  sequence_gradient_check(m, lstm, 3, true, true);
}

TEST(SparseLSTM, LayerNormGradients) {
  reset_rng(23);  // finite differences through layer norm are sensitive to near-equal gate values
  ParameterCollection m;
  SparseLSTMBuilder lstm(1, 3, 2, m, true);
  perturb(m, 0.2f);
  lstm.set_sparsity(0.2f);
  std::set<const ParameterStorageBase*> masks = {&lstm.params[0][3].get_storage(), &lstm.params[0][4].get_storage()};
  sequence_gradient_check(m, lstm, 3, true, false, masks);
  EXPECT_EQ(m.parameters_list()[5]->name, "/_0");  // the ln parameters follow in the parent collection
}

TEST(CompactVanillaLSTM, LayoutAndValuesMatchVanilla) {
  ParameterCollection m;
  CompactVanillaLSTMBuilder compact(2, 3, 4, m);
  std::vector<ExpectedParam> expected;
  for (unsigned l = 0; l < 2; ++l) {
    expected.push_back({layer_name("compact-vanilla-lstm-builder", 3 * l), Dim({16, l == 0 ? 3u : 4u})});
    expected.push_back({layer_name("compact-vanilla-lstm-builder", 3 * l + 1), Dim({16, 4})});
    expected.push_back({layer_name("compact-vanilla-lstm-builder", 3 * l + 2), Dim({16})});
  }
  expect_parameters(m, expected);
  perturb(m);
  ParameterCollection m2;
  VanillaLSTMBuilder vanilla(2, 3, 4, m2);
  for (size_t k = 0; k < 6; ++k) m2.parameters_list()[k]->copy(*m.parameters_list()[k]);
  for (bool batched : {false, true}) {
    const unsigned bd = batched ? 2 : 1;
    ComputationGraph g;
    compact.new_graph(g);
    vanilla.new_graph(g);
    std::vector<Expression> h0;
    if (batched)  // an unbatched initial state against batched inputs
      for (unsigned k = 0; k < 4; ++k) h0.push_back(input(g, Dim({4}), random_values(4, 90 + k)));
    compact.start_new_sequence(h0);
    vanilla.start_new_sequence(h0);
    for (unsigned t = 0; t < 3; ++t) {
      Expression x = input(g, Dim({3}, bd), random_values(3 * bd, 60 + t));
      expect_close(value_of(compact.add_input(x)), value_of(vanilla.add_input(x)), 1e-5);
    }
    expect_close(value_of(compact.final_s()[1]), value_of(vanilla.final_s()[1]), 1e-5);
  }
}

TEST(CompactVanillaLSTM, Gradients) {
  ParameterCollection m;
  CompactVanillaLSTMBuilder lstm(2, 3, 3, m);
  perturb(m);
  sequence_gradient_check(m, lstm, 3, false, false);
  sequence_gradient_check(m, lstm, 3, true, true);
}

TEST(CompactVanillaLSTM, DropoutAndWeightNoise) {
  reset_rng(21);
  ParameterCollection m;
  CompactVanillaLSTMBuilder lstm(1, 8, 6, m);
  perturb(m);
  auto run = [&] {
    ComputationGraph g;
    lstm.new_graph(g);
    lstm.start_new_sequence();
    std::vector<float> out;
    for (unsigned t = 0; t < 3; ++t) out = value_of(lstm.add_input(input(g, Dim({8}), random_values(8, t))));
    return out;
  };
  const std::vector<float> plain = run();
  lstm.set_weightnoise(0.5f);
  const std::vector<float> noisy = run();
  bool differs = false;
  for (size_t k = 0; k < plain.size(); ++k) differs |= std::abs(plain[k] - noisy[k]) > 1e-4;
  EXPECT_TRUE(differs);
  lstm.set_weightnoise(0.f);
  expect_close(run(), plain);
  EXPECT_THROW(lstm.set_weightnoise(-1.f), std::invalid_argument);
  lstm.set_dropout(0.5f, 0.5f);
  ComputationGraph g;
  lstm.new_graph(g);
  lstm.start_new_sequence();
  lstm.add_input(input(g, Dim({8}), random_values(8, 0)));
  ASSERT_EQ(lstm.masks.size(), 1u);
  const VariableIndex mask = lstm.masks[0][0].i;
  lstm.add_input(input(g, Dim({8}), random_values(8, 1)));
  EXPECT_EQ(lstm.masks[0][0].i, mask);  // one mask per sequence
  for (float v : value_of(lstm.masks[0][0])) EXPECT_TRUE(v == 0.f || v == 2.f);
  CompactVanillaLSTMBuilder other(1, 8, 6, m);
  other.copy(lstm);
  EXPECT_EQ(other.params[0][0].get_fullname(), lstm.params[0][0].get_fullname());
}

// Tied input masks: each step's input comes from its own lookup row, so a dropped input unit has a
// zero gradient in every row (FastLSTM, SparseLSTM; the other builders are covered above or in
// test_rnn.cc).
void check_tied_input_mask(ParameterCollection& m, LSTMStateBuilder& lstm, unsigned in_dim) {
  const unsigned steps = 3;
  LookupParameter inputs = m.add_lookup_parameters(steps, {in_dim});
  perturb(m);
  lstm.set_dropout(0.5f, 0.f);
  ComputationGraph g;
  backprop_lookup_sequence(g, lstm, inputs, steps);
  expect_tied_input_gradients(inputs, in_dim, steps);
  lstm.disable_dropout();
  EXPECT_EQ(lstm.dropout_rate, 0.f);
}

TEST(FastLSTM, DropoutMasksAreTied) {
  reset_rng(31);
  ParameterCollection m;
  FastLSTMBuilder lstm(1, 16, 4, m);
  check_tied_input_mask(m, lstm, 16);
}

TEST(SparseLSTM, DropoutMasksAreTied) {
  reset_rng(32);
  ParameterCollection m;
  SparseLSTMBuilder lstm(1, 16, 4, m);
  check_tied_input_mask(m, lstm, 16);
}

}  // namespace
}  // namespace dynet
