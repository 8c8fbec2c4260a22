// RNN builders: gradients by finite differences, parameter layout and names, state branching,
// initial states and tied dropout masks.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "dynet/expr.h"
#include "dynet/init.h"
#include "dynet/gru.h"
#include "dynet/lstm.h"
#include "dynet/rnn.h"

#include "builder_test_util.h"

namespace dynet {
namespace {

using namespace builder_test;

// Σ_t Σ_batch <y_t, w_t> + Σ_batch <s_final, u> for fixed random w_t, u: every output and the
// final full state (the LSTM's memory cells too) reach the loss.
Expression sequence_loss(ComputationGraph& g, RNNBuilder& rnn, const std::vector<Expression>& xs,
                         const std::vector<std::vector<float>>& weights, unsigned hidden) {
  std::vector<Expression> terms;
  for (size_t t = 0; t < xs.size(); ++t) {
    Expression y = rnn.add_input(xs[t]);
    terms.push_back(sum_batches(sum_elems(cmult(y, input(g, Dim({hidden}), weights[t])))));
  }
  const std::vector<Expression> s = rnn.final_s();
  for (size_t k = 0; k < s.size(); ++k)
    terms.push_back(sum_batches(sum_elems(cmult(s[k], input(g, Dim({hidden}), weights[xs.size() + k])))));
  return sum(terms);
}

struct SequenceData {
  std::vector<std::vector<float>> inputs, weights;
  std::vector<std::vector<unsigned>> ids;  // per time step, one id per batch element
};
SequenceData make_data(unsigned steps, unsigned in_dim, unsigned hidden, unsigned batch, unsigned extra_weights,
                       unsigned vocab) {
  std::mt19937 rng(99);
  SequenceData d;
  for (unsigned t = 0; t < steps; ++t) {
    d.inputs.push_back(random_vector(in_dim * batch, rng));
    std::vector<unsigned> ids;
    for (unsigned b = 0; b < batch; ++b) ids.push_back((t * 3 + b * 5) % vocab);
    d.ids.push_back(ids);
  }
  for (unsigned k = 0; k < steps + extra_weights; ++k) d.weights.push_back(random_vector(hidden, rng));
  return d;
}

enum class InputKind { unbatched, batched, lookup_batched };

// A gradient check of `rnn` (whose parameters live in m) over a 3-step sequence.
void gradient_check(ParameterCollection& m, RNNBuilder& rnn, unsigned in_dim, unsigned hidden, InputKind kind,
                    bool with_h0) {
  const unsigned batch = kind == InputKind::unbatched ? 1 : 3;
  const unsigned vocab = 4;
  const SequenceData data = make_data(3, in_dim, hidden, batch, rnn.num_h0_components(), vocab);
  LookupParameter embeddings = m.add_lookup_parameters(vocab, {in_dim});
  Parameter h0_param = m.add_parameters({hidden, rnn.num_h0_components()});
  LossBuilder build = [&](ComputationGraph& g) {
    rnn.new_graph(g);
    std::vector<Expression> h0;
    if (with_h0) {
      Expression all = parameter(g, h0_param);
      for (unsigned k = 0; k < rnn.num_h0_components(); ++k) h0.push_back(pick(all, k, 1));
    }
    rnn.start_new_sequence(h0);
    std::vector<Expression> xs;
    for (unsigned t = 0; t < data.inputs.size(); ++t) {
      if (kind == InputKind::lookup_batched)
        xs.push_back(lookup(g, embeddings, data.ids[t]));
      else
        xs.push_back(input(g, Dim({in_dim}, batch), data.inputs[t]));
    }
    return sequence_loss(g, rnn, xs, data.weights, hidden);
  };
  check_gradients(m, build, {}, /*min_nonzero=*/0);
}

TEST(VanillaLSTM, GradientUnbatched) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(2, 3, 4, m);
  gradient_check(m, lstm, 3, 4, InputKind::unbatched, false);
}

TEST(VanillaLSTM, GradientBatchedWithInitialState) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(2, 3, 4, m, false, 0.5f);
  gradient_check(m, lstm, 3, 4, InputKind::batched, true);
}

TEST(VanillaLSTM, GradientLookupBatched) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(1, 3, 4, m);
  gradient_check(m, lstm, 3, 4, InputKind::lookup_batched, false);
}

TEST(SimpleRNN, GradientUnbatched) {
  ParameterCollection m;
  SimpleRNNBuilder rnn(2, 3, 4, m);
  gradient_check(m, rnn, 3, 4, InputKind::unbatched, true);
}

TEST(SimpleRNN, GradientLookupBatched) {
  ParameterCollection m;
  SimpleRNNBuilder rnn(2, 3, 4, m);
  gradient_check(m, rnn, 3, 4, InputKind::lookup_batched, false);
}

TEST(SimpleRNN, GradientBatchedWithAuxiliaryInput) {
  ParameterCollection m;
  SimpleRNNBuilder rnn(2, 3, 4, m, true);
  std::mt19937 rng(5);
  const std::vector<float> x = random_vector(3 * 2, rng), aux = random_vector(4, rng), w = random_vector(4, rng);
  LossBuilder build = [&](ComputationGraph& g) {
    rnn.new_graph(g);
    rnn.start_new_sequence();
    Expression xe = input(g, Dim({3}, 2), x);
    rnn.add_input(xe);
    Expression y = rnn.add_auxiliary_input(xe, input(g, Dim({4}), aux));
    return sum_batches(sum_elems(cmult(y, input(g, Dim({4}), w))));
  };
  check_gradients(m, build, {}, /*min_nonzero=*/0);
}

TEST(VanillaLSTM, ParameterLayoutAndNames) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(2, 3, 5, m);
  const auto ps = m.parameters_list();
  ASSERT_EQ(ps.size(), 6u);
  const std::vector<Dim> dims = {Dim({20, 3}), Dim({20, 5}), Dim({20}), Dim({20, 5}), Dim({20, 5}), Dim({20})};
  for (unsigned k = 0; k < 6; ++k) {
    EXPECT_EQ(ps[k]->name, "/vanilla-lstm-builder/_" + std::to_string(k));
    EXPECT_EQ(ps[k]->dim, dims[k]) << ps[k]->name;
  }
  for (unsigned k : {2u, 5u})
    for (unsigned e = 0; e < 20; ++e) EXPECT_EQ(ps[k]->values.v[e], 0.f);  // biases start at 0
  EXPECT_EQ(lstm.num_h0_components(), 4u);
  EXPECT_EQ(lstm.get_parameter_collection().get_fullname(), "/vanilla-lstm-builder/");
  ASSERT_EQ(lstm.get_parameters().size(), 2u);
  EXPECT_EQ(lstm.get_parameters()[1][0].get_fullname(), "/vanilla-lstm-builder/_3");
  VanillaLSTMBuilder second(1, 2, 2, m);
  EXPECT_EQ(second.get_parameters()[0][0].get_fullname(), "/vanilla-lstm-builder_1/_0");
  LSTMBuilder alias(1, 2, 2, m);  // DyNet's typedef
  EXPECT_EQ(alias.get_parameters()[0][2].get_fullname(), "/vanilla-lstm-builder_2/_2");
  EXPECT_THROW(VanillaLSTMBuilder(0, 2, 2, m), std::invalid_argument);
}

TEST(SimpleRNN, ParameterLayoutAndNames) {
  ParameterCollection m;
  SimpleRNNBuilder rnn(2, 3, 5, m, true);
  const auto ps = m.parameters_list();
  ASSERT_EQ(ps.size(), 8u);
  const std::vector<Dim> dims = {Dim({5, 3}), Dim({5, 5}), Dim({5}), Dim({5, 5}),
                                 Dim({5, 5}), Dim({5, 5}), Dim({5}), Dim({5, 5})};
  for (unsigned k = 0; k < 8; ++k) {
    EXPECT_EQ(ps[k]->name, "/simple-rnn-builder/_" + std::to_string(k));
    EXPECT_EQ(ps[k]->dim, dims[k]) << ps[k]->name;
  }
  EXPECT_EQ(rnn.num_h0_components(), 2u);
  SimpleRNNBuilder no_lags(1, 3, 5, m);
  ComputationGraph g;
  no_lags.new_graph(g);
  no_lags.start_new_sequence();
  Expression x = input(g, Dim({3}), std::vector<float>(3, 1.f));
  EXPECT_THROW(no_lags.add_auxiliary_input(x, input(g, Dim({5}), std::vector<float>(5, 1.f))),
               std::invalid_argument);
}

// add_input(prev, x) continues from `prev` exactly as a fresh sequence through the same inputs would.
template <class Builder>
void check_branching(Builder& rnn, unsigned in_dim) {
  std::mt19937 rng(3);
  const auto x1 = random_vector(in_dim, rng), x2 = random_vector(in_dim, rng), x3 = random_vector(in_dim, rng);
  std::vector<float> fresh_13, fresh_133;
  std::vector<std::vector<float>> fresh_13_state;
  {
    ComputationGraph g;
    rnn.new_graph(g);
    rnn.start_new_sequence();
    rnn.add_input(input(g, Dim({in_dim}), x1));
    fresh_13 = value_of(rnn.add_input(input(g, Dim({in_dim}), x3)));
    for (const Expression& e : rnn.final_s()) fresh_13_state.push_back(value_of(e));
    fresh_133 = value_of(rnn.add_input(input(g, Dim({in_dim}), x3)));
  }
  ComputationGraph g;
  rnn.new_graph(g);
  rnn.start_new_sequence();
  EXPECT_EQ(rnn.state(), -1);
  rnn.add_input(input(g, Dim({in_dim}), x1));
  const RNNPointer after_x1 = rnn.state();
  EXPECT_EQ(after_x1, 0);
  rnn.add_input(input(g, Dim({in_dim}), x2));
  EXPECT_EQ(rnn.state(), 1);
  Expression branch = rnn.add_input(after_x1, input(g, Dim({in_dim}), x3));
  EXPECT_EQ(rnn.state(), 2);
  EXPECT_EQ(rnn.get_head(2), 0);
  EXPECT_EQ(rnn.get_head(1), 0);
  EXPECT_EQ(rnn.get_head(0), -1);
  expect_close(value_of(branch), fresh_13);
  expect_close(value_of(rnn.back()), fresh_13);
  const std::vector<Expression> s = rnn.get_s(2);
  ASSERT_EQ(s.size(), fresh_13_state.size());
  for (size_t k = 0; k < s.size(); ++k) expect_close(value_of(s[k]), fresh_13_state[k]);
  // Rewinding from state 2 goes back to state 0; the next input continues from there.
  rnn.rewind_one_step();
  EXPECT_EQ(rnn.state(), 0);
  expect_close(value_of(rnn.add_input(input(g, Dim({in_dim}), x3))), fresh_13);
  EXPECT_EQ(rnn.get_head(3), 0);
  // Continuing from the branch.
  expect_close(value_of(rnn.add_input(2, input(g, Dim({in_dim}), x3))), fresh_133);
  EXPECT_THROW(rnn.add_input(7, input(g, Dim({in_dim}), x3)), std::invalid_argument);
  EXPECT_THROW(rnn.get_h(9), std::invalid_argument);
}

TEST(VanillaLSTM, BranchingMatchesAFreshSequence) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(2, 3, 4, m);
  // Non-zero biases so the gates are not symmetric.
  for (auto& p : m.parameters_list())
    for (unsigned k = 0; k < p->dim.size(); ++k) p->values.v[k] += 0.1f * ((k % 7) - 3.f);
  check_branching(lstm, 3);
}

TEST(SimpleRNN, BranchingMatchesAFreshSequence) {
  ParameterCollection m;
  SimpleRNNBuilder rnn(2, 3, 4, m);
  check_branching(rnn, 3);
}

TEST(VanillaLSTM, FirstStepMatchesTheFormula) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(1, 2, 1, m, false, 1.f);
  // x2i {4,2}, h2i {4,1}, bi {4}: rows i, f, o, g.
  auto ps = m.parameters_list();
  ps[0]->set_value({0.1f, 0.2f, -0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f});
  ps[1]->set_value({0.3f, -0.2f, 0.1f, 0.5f});
  ps[2]->set_value({0.05f, -0.1f, 0.2f, 0.3f});
  const std::vector<float> x = {0.6f, -0.4f};
  auto sig = [](double a) { return 1 / (1 + std::exp(-a)); };
  double a[4];
  for (int r = 0; r < 4; ++r) a[r] = ps[2]->values.v[r] + ps[0]->values.v[r] * x[0] + ps[0]->values.v[4 + r] * x[1];
  const double c1 = sig(a[0]) * std::tanh(a[3]);
  const double h1 = sig(a[2]) * std::tanh(c1);
  // Second step: the recurrent terms and the forget gate (with its bias of 1) come in.
  double b[4];
  for (int r = 0; r < 4; ++r)
    b[r] = ps[2]->values.v[r] + ps[0]->values.v[r] * x[0] + ps[0]->values.v[4 + r] * x[1] + ps[1]->values.v[r] * h1;
  const double c2 = sig(b[1] + 1.0) * c1 + sig(b[0]) * std::tanh(b[3]);
  const double h2 = sig(b[2]) * std::tanh(c2);
  ComputationGraph g;
  lstm.new_graph(g);
  lstm.start_new_sequence();
  EXPECT_NEAR(as_scalar(lstm.add_input(input(g, Dim({2}), x)).value()), h1, 1e-6);
  EXPECT_NEAR(as_scalar(lstm.add_input(input(g, Dim({2}), x)).value()), h2, 1e-6);
  const std::vector<Expression> s = lstm.final_s();  // [c, h]
  ASSERT_EQ(s.size(), 2u);
  EXPECT_NEAR(as_scalar(s[0].value()), c2, 1e-6);
  EXPECT_NEAR(as_scalar(s[1].value()), h2, 1e-6);
}

// With DyNet's default forget bias of 1 the builder runs the fused LSTM nodes; with any other bias
// the separate ones. A builder with forget bias 0 whose bias parameter carries the 1 in its forget
// block computes the same function, so the two paths must agree (batched, two layers, several steps).
TEST(VanillaLSTM, FusedAndSeparateNodesAgree) {
  const unsigned in = 3, hid = 4, batch = 2, steps = 4;
  ParameterCollection m1, m0;
  VanillaLSTMBuilder fused(2, in, hid, m1, false, 1.f), separate(2, in, hid, m0, false, 0.f);
  std::mt19937 rng(5);
  auto p1 = m1.parameters_list(), p0 = m0.parameters_list();
  ASSERT_EQ(p1.size(), p0.size());
  for (size_t k = 0; k < p1.size(); ++k) {
    std::vector<float> v = random_vector(p1[k]->dim.size(), rng);
    p1[k]->set_value(v);
    if (p1[k]->dim.ndims() == 1)  // a bias {4·hid}: rows i, f, o, g
      for (unsigned r = hid; r < 2 * hid; ++r) v[r] += 1.f;
    p0[k]->set_value(v);
  }
  std::vector<std::vector<float>> xs;
  for (unsigned t = 0; t < steps; ++t) xs.push_back(random_vector(in * batch, rng));
  ComputationGraph g;
  fused.new_graph(g);
  separate.new_graph(g);
  fused.start_new_sequence();
  separate.start_new_sequence();
  for (unsigned t = 0; t < steps; ++t) {
    Expression x = input(g, Dim({in}, batch), xs[t]);
    const std::vector<float> a = as_vector(fused.add_input(x).value()), b = as_vector(separate.add_input(x).value());
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-5) << "step " << t << " element " << k;
  }
  const std::vector<Expression> s1 = fused.final_s(), s0 = separate.final_s();
  for (size_t k = 0; k < s1.size(); ++k) {
    const std::vector<float> a = as_vector(s1[k].value()), b = as_vector(s0[k].value());
    for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-5) << "state " << k;
  }
}

// The gradients of both paths agree too: every parameter's and the input rows' (a lookup with an
// index vector, as a hand-batched tagger writes it). Batch 40 takes the fused gates node's path for
// minibatches (its pre-activation gradient in a per-thread buffer, weight gradients applied at once),
// batch 2 the one whose weight gradients are deferred; the first step's zero state skips the recurrent
// products. Input and recurrent gradients go through one product [Wx Wh]ᵀ·dpre where both are
// reached: at 20/24 dims (large enough for a transposed copy of the pair from a layer's second step
// on) also with frozen input rows (const_lookup: the first layer's x_t gets no gradient).
TEST(VanillaLSTM, FusedAndSeparateNodesGiveTheSameGradients) {
  struct Case {
    unsigned in, hid, batch;
    bool frozen_input;
  };
  const unsigned steps = 3, rows = 7;
  for (const Case c : {Case{5, 6, 2, false}, Case{5, 6, 40, false}, Case{20, 24, 40, false}, Case{20, 24, 40, true}}) {
    const unsigned in = c.in, hid = c.hid, batch = c.batch;
    ParameterCollection m1, m0;
    VanillaLSTMBuilder fused(2, in, hid, m1, false, 1.f), separate(2, in, hid, m0, false, 0.f);
    LookupParameter e1 = m1.add_lookup_parameters(rows, {in}), e0 = m0.add_lookup_parameters(rows, {in});
    std::mt19937 rng(9);
    auto p1 = m1.parameters_list(), p0 = m0.parameters_list();
    for (size_t k = 0; k < p1.size(); ++k) {
      std::vector<float> v = random_vector(p1[k]->dim.size(), rng);
      p1[k]->set_value(v);
      if (p1[k]->dim.ndims() == 1)
        for (unsigned r = hid; r < 2 * hid; ++r) v[r] += 1.f;
      p0[k]->set_value(v);
    }
    for (unsigned r = 0; r < rows; ++r) {
      const std::vector<float> row = random_vector(in, rng);
      e1.initialize(r, row);
      e0.initialize(r, row);
    }
    std::vector<std::vector<unsigned>> ids(steps);
    for (unsigned t = 0; t < steps; ++t)
      for (unsigned b = 0; b < batch; ++b) ids[t].push_back((t * 3 + b * 5) % rows);
    auto run = [&](VanillaLSTMBuilder& lstm, LookupParameter e) {
      ComputationGraph g;
      lstm.new_graph(g);
      lstm.start_new_sequence();
      std::vector<Expression> terms;
      for (unsigned t = 0; t < steps; ++t) {
        const Expression h = lstm.add_input(c.frozen_input ? const_lookup(g, e, ids[t]) : lookup(g, e, ids[t]));
        terms.push_back(sum_batches(dot_product(h, h) * float(t + 1) + sum_elems(h)));
      }
      Expression loss = sum(terms);
      loss.value();
      g.backward(loss);
    };
    run(fused, e1);
    run(separate, e0);
    for (size_t k = 0; k < p1.size(); ++k)
      for (size_t j = 0; j < p1[k]->dim.size(); ++j)
        EXPECT_NEAR(p1[k]->g.v[j], p0[k]->g.v[j], 2e-5 * (1 + std::abs(p0[k]->g.v[j])))
            << "batch " << batch << " hid " << hid << " " << p1[k]->name << " element " << j;
    if (c.frozen_input) continue;
    const auto &g1 = e1.get_storage().all_grads, &g0 = e0.get_storage().all_grads;
    for (size_t j = 0; j < size_t(rows) * in; ++j)
      EXPECT_NEAR(g1.v[j], g0.v[j], 2e-5 * (1 + std::abs(g0.v[j]))) << "batch " << batch << " input element " << j;
  }
}

// vanilla_lstm_gates' parameter gradients at 40 columns (the weight gradients as one product over
// [x; h] when the two gradients lie one after another, left by Wx's call to Wh's) against the same
// function written with affine_transform, logistic and tanh: Wx created before Wh, after it, apart
// (another parameter between them), Wh also used by a later product (its gradient's first
// contribution comes from that one, so the two are not written alike), and Wh constant (no call).
// Adjacency is the gradients' in the graph: "apart" puts another parameter's node between the two.
// Both executors (the batched one lays gradients out in computation order).
TEST(VanillaLSTM, GatesWeightGradientsForEveryParameterLayout) {
  const unsigned I = 7, H = 5, B = 40;
  enum Layout { kXFirst, kHFirst, kApart, kWhUsedLater, kWhConstant };
  for (bool batched : {false, true})
  for (Layout layout : {kXFirst, kHFirst, kApart, kWhUsedLater, kWhConstant}) {
    std::mt19937 rng(11 + layout);
    const std::vector<float> wx = random_vector(4 * H * I, rng), wh = random_vector(4 * H * H, rng),
                             bias = random_vector(4 * H, rng), x = random_vector(I * B, rng),
                             h = random_vector(H * B, rng), r = random_vector(4 * H * B, rng);
    struct Grads {
      std::vector<float> wx, wh, b;
    };
    auto run = [&](bool fused) {
      ParameterCollection m;
      Parameter pwx, pwh;
      if (layout == kHFirst) {
        pwh = m.add_parameters({4 * H, H});
        pwx = m.add_parameters({4 * H, I});
      } else {
        pwx = m.add_parameters({4 * H, I});
        pwh = m.add_parameters({4 * H, H});
      }
      Parameter pb = m.add_parameters({4 * H}), pd = m.add_parameters({3});
      pwx.set_value(wx);
      pwh.set_value(wh);
      pb.set_value(bias);
      ComputationGraph g(batched);
      const Expression Wx = parameter(g, pwx);
      const Expression between = layout == kApart ? parameter(g, pd) : Expression();
      const Expression Wh = layout == kWhConstant ? const_parameter(g, pwh) : parameter(g, pwh), b = parameter(g, pb),
                       xe = input(g, Dim({I}, B), x), he = input(g, Dim({H}, B), h);
      Expression gates;
      if (fused) {
        gates = vanilla_lstm_gates(xe, he, Wx, Wh, b);
      } else {
        const Expression pre = affine_transform({b, Wx, xe, Wh, he});
        gates = concatenate({logistic(pick_range(pre, 0, H)), logistic(pick_range(pre, H, 2 * H) + 1.f),
                             logistic(pick_range(pre, 2 * H, 3 * H)), tanh(pick_range(pre, 3 * H, 4 * H))});
      }
      Expression loss = sum_batches(dot_product(gates, input(g, Dim({4 * H}, B), r)));
      if (layout == kWhUsedLater) loss = loss + sum_elems(sum_batches(Wh * he));
      if (layout == kApart) loss = loss + sum_elems(between);
      loss.value();
      g.backward(loss);
      auto grad = [](Parameter p) { return std::vector<float>(p.get_storage().g.v, p.get_storage().g.v + p.get_storage().dim.size()); };
      return Grads{grad(pwx), grad(pwh), grad(pb)};
    };
    const Grads f = run(true), s = run(false);
    auto expect_near = [&](const std::vector<float>& a, const std::vector<float>& e, const char* what) {
      ASSERT_EQ(a.size(), e.size());
      for (size_t k = 0; k < a.size(); ++k)
        EXPECT_NEAR(a[k], e[k], 1e-4 * (1 + std::abs(e[k]))) << "batched " << batched << " layout " << layout << " " << what << " element " << k;
    };
    expect_near(f.wx, s.wx, "Wx");
    expect_near(f.wh, s.wh, "Wh");
    expect_near(f.b, s.b, "b");
  }
}

// start_new_sequence(h0) and set_s(-1 ...) then add_input give the same states; the h0 vector is
// [c_1..c_L, h_1..h_L].
TEST(VanillaLSTM, InitialStateAndSetS) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(2, 3, 4, m);
  std::mt19937 rng(11);
  std::vector<std::vector<float>> init;
  for (int k = 0; k < 4; ++k) init.push_back(random_vector(4, rng));
  const auto x = random_vector(3, rng);
  std::vector<float> via_h0;
  {
    ComputationGraph g;
    lstm.new_graph(g);
    std::vector<Expression> h0;
    for (auto& v : init) h0.push_back(input(g, Dim({4}), v));
    lstm.start_new_sequence(h0);
    const std::vector<Expression> s0 = lstm.get_s(-1);
    ASSERT_EQ(s0.size(), 4u);
    for (int k = 0; k < 4; ++k) expect_close(value_of(s0[k]), init[k]);
    expect_close(value_of(lstm.get_h(-1)[1]), init[3]);  // h of the top layer
    via_h0 = value_of(lstm.add_input(input(g, Dim({3}), x)));
  }
  ComputationGraph g;
  lstm.new_graph(g);
  lstm.start_new_sequence();
  std::vector<Expression> s;
  for (auto& v : init) s.push_back(input(g, Dim({4}), v));
  lstm.set_s(-1, s);
  expect_close(value_of(lstm.back()), init[3]);
  expect_close(value_of(lstm.add_input(input(g, Dim({3}), x))), via_h0);
  // set_h keeps the memory cells of the state it continues from.
  lstm.set_h(0, {input(g, Dim({4}), init[2]), input(g, Dim({4}), init[3])});
  expect_close(value_of(lstm.get_s(2)[0]), init[0]);
  expect_close(value_of(lstm.get_s(2)[3]), init[3]);
  EXPECT_THROW(lstm.start_new_sequence({s[0]}), std::invalid_argument);
  EXPECT_THROW(lstm.add_input(input(g, Dim({5}), std::vector<float>(5))), std::invalid_argument);
  // The failed input left no half-made state behind.
  EXPECT_EQ(lstm.state(), 2);
  lstm.add_input(input(g, Dim({3}), x));
  EXPECT_EQ(lstm.state(), 3);
  EXPECT_EQ(lstm.get_head(3), 2);
  EXPECT_EQ(lstm.h.size(), 4u);
}

TEST(RNNBuilder, CallsOutOfOrderThrow) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(1, 2, 2, m);
  ComputationGraph g;
  Expression x = input(g, Dim({2}), std::vector<float>{1.f, 2.f});
  EXPECT_THROW(lstm.start_new_sequence(), std::runtime_error);
  EXPECT_THROW(lstm.add_input(x), std::runtime_error);
  lstm.new_graph(g);
  EXPECT_THROW(lstm.add_input(x), std::runtime_error);
  lstm.start_new_sequence();
  EXPECT_NO_THROW(lstm.add_input(x));
}

// Gal-style dropout: one mask per sequence, shared by every time step. Inputs come from a lookup
// table so that each step's input gradient lands in its own row: a dropped input unit has a zero
// gradient at every step. A dropped recurrent unit zeroes the same column of h2i's gradient.
TEST(VanillaLSTM, DropoutMasksAreTiedAcrossTimeSteps) {
  reset_rng(17);
  const unsigned in_dim = 16, hidden = 12, steps = 4;
  ParameterCollection m;
  VanillaLSTMBuilder lstm(1, in_dim, hidden, m);
  LookupParameter inputs = m.add_lookup_parameters(steps, {in_dim});
  for (auto& p : m.parameters_list())
    for (unsigned k = 0; k < p->dim.size(); ++k) p->values.v[k] += 0.05f * ((k % 5) - 2.f);
  lstm.set_dropout(0.5f, 0.5f);
  ComputationGraph g;
  backprop_lookup_sequence(g, lstm, inputs, steps);
  ASSERT_EQ(lstm.masks.size(), 1u);
  expect_tied_input_gradients(inputs, in_dim, steps);
  const ParameterStorage& h2i = *m.parameters_list()[1];
  unsigned dropped_h = 0;
  for (unsigned col = 0; col < hidden; ++col) {
    bool all_zero = true;
    for (unsigned row = 0; row < 4 * hidden; ++row) all_zero &= h2i.g.v[col * 4 * hidden + row] == 0.f;
    dropped_h += all_zero;
  }
  EXPECT_GT(dropped_h, 0u);
  EXPECT_LT(dropped_h, hidden);
  // Kept units are scaled by 1/(1-d): the mask holds only 0 and 2.
  for (float v : as_vector(lstm.masks[0][0].value())) EXPECT_TRUE(v == 0.f || v == 2.f) << v;
  // A new sequence draws new masks, sized for its batch.
  const VariableIndex old_mask = lstm.masks[0][0].i;
  lstm.start_new_sequence();
  lstm.add_input(lookup(g, inputs, std::vector<unsigned>{0, 1, 2}));
  EXPECT_NE(lstm.masks[0][0].i, old_mask);
  EXPECT_EQ(lstm.masks[0][0].dim().bd, 3u);
  EXPECT_THROW(lstm.set_dropout(1.5f, 0.f), std::invalid_argument);
  EXPECT_THROW(lstm.set_dropout(0.f, -0.1f), std::invalid_argument);
}

// A rate of 1 drops everything, as in DyNet (its masks are Bernoulli(0) draws: zeros, never 0 · ∞).
TEST(RNNBuilder, DropoutRateOneDropsEveryUnit) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(1, 3, 4, m);
  SimpleRNNBuilder srnn(1, 3, 4, m);
  GRUBuilder gru(1, 3, 4, m);
  lstm.set_dropout(1.f, 0.f);
  srnn.set_dropout(1.f, 0.f);
  gru.set_dropout(1.f);
  ComputationGraph g;
  Expression x = input(g, Dim({3}), std::vector<float>{1.f, -2.f, 3.f});
  for (RNNBuilder* b : std::initializer_list<RNNBuilder*>{&lstm, &srnn, &gru}) {
    b->new_graph(g);
    b->start_new_sequence();
    b->add_input(x);
    // With the input dropped and no earlier state, h depends on the biases alone: the same for any x.
    const std::vector<float> h = as_vector(b->back().value());
    b->start_new_sequence();
    b->add_input(x * 5.f);
    for (float v : h) EXPECT_TRUE(std::isfinite(v));
    EXPECT_EQ(as_vector(b->back().value()), h);
  }
  EXPECT_EQ(as_vector(lstm.masks[0][0].value()), std::vector<float>(3, 0.f));
}

TEST(VanillaLSTM, DisabledDropoutIsDeterministic) {
  ParameterCollection m;
  VanillaLSTMBuilder lstm(2, 3, 4, m);
  lstm.set_dropout(0.3f);
  lstm.disable_dropout();
  EXPECT_EQ(lstm.dropout_rate, 0.f);
  EXPECT_EQ(lstm.dropout_rate_h, 0.f);
  std::vector<float> first;
  for (int rep = 0; rep < 2; ++rep) {
    ComputationGraph g;
    lstm.new_graph(g);
    lstm.start_new_sequence();
    Expression y;
    for (int t = 0; t < 3; ++t) y = lstm.add_input(input(g, Dim({3}), std::vector<float>{0.5f, -1.f, 0.25f}));
    if (rep == 0)
      first = value_of(y);
    else
      expect_close(value_of(y), first);
  }
  EXPECT_TRUE(lstm.masks.empty());
}

TEST(SimpleRNN, DropoutMasksAreTiedAcrossTimeSteps) {
  reset_rng(23);
  const unsigned in_dim = 16, hidden = 8, steps = 3;
  ParameterCollection m;
  SimpleRNNBuilder rnn(1, in_dim, hidden, m);
  LookupParameter inputs = m.add_lookup_parameters(steps, {in_dim});
  rnn.set_dropout(0.5f, 0.f);
  ComputationGraph g;
  backprop_lookup_sequence(g, rnn, inputs, steps);
  expect_tied_input_gradients(inputs, in_dim, steps);
}

TEST(RNNBuilder, CopySharesParameters) {
  ParameterCollection m;
  VanillaLSTMBuilder a(1, 2, 3, m), b(1, 2, 3, m), c(2, 2, 3, m);
  b.copy(a);
  EXPECT_EQ(b.get_parameters()[0][0].get_fullname(), a.get_parameters()[0][0].get_fullname());
  EXPECT_THROW(c.copy(a), std::invalid_argument);
  SimpleRNNBuilder s(1, 2, 3, m);
  EXPECT_THROW(s.copy(a), std::invalid_argument);
}

}  // namespace
}  // namespace dynet
