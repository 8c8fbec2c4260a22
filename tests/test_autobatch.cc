// Autobatching: signatures, and whole models that must give the same loss and parameter gradients
// under every strategy (0 simple, 1 agenda, 2 depth), with mid-graph reads, checkpoints and pool growth.
// The per-op batching checks are in the op harness (tests/test_ops.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "device_test_util.h"
#include "dynet/expr.h"
#include "dynet/lstm.h"
#include "dynet/training.h"
#include "dynet/treelstm.h"
#include "exec/batched.h"
#include "exec/profile.h"
#include "exec/signature.h"
#include "tagger_model.h"
#include "tree_lstm_model.h"

namespace dynet {
namespace {

using test::sentences;
using test::Tagger;

// A graph whose executor follows `strategy`.
std::unique_ptr<ComputationGraph> graph_with(int strategy) {
  const int saved = autobatch_flag;
  autobatch_flag = strategy;
  auto g = std::make_unique<ComputationGraph>();
  autobatch_flag = saved;
  return g;
}

const BatchedExecutor* batched(const ComputationGraph& g) {
  return dynamic_cast<const BatchedExecutor*>(&g.executor());
}

// Nodes that ran in groups of more than one.
size_t batched_nodes(const ComputationGraph& g) {
  size_t n = 0;
  if (const BatchedExecutor* e = batched(g))
    for (const auto& b : e->batches()) n += e->nodes_computed(b);
  return n;
}

std::vector<uint64_t> sig(const ComputationGraph& g, const Expression& e) {
  std::vector<uint64_t> k;
  if (!signature_key(g, e.i, k)) k.clear();
  return k;
}

// ---- signatures ----

TEST(Signature, IdenticalNodesAgree) {
  ParameterCollection pc;
  Parameter W = pc.add_parameters({4, 3});
  LookupParameter E = pc.add_lookup_parameters(10, {3});
  ComputationGraph g(false);
  Expression w = parameter(g, W);
  Expression x1 = input(g, Dim({3}), std::vector<float>{1, 2, 3}), x2 = input(g, Dim({3}), std::vector<float>{4, 5, 6});
  // Same op, dims and shared argument; per-instance payload (values, rows, indices) may differ.
  EXPECT_EQ(sig(g, w * x1), sig(g, w * x2));
  EXPECT_EQ(sig(g, x1), sig(g, x2));
  EXPECT_EQ(sig(g, lookup(g, E, 1u)), sig(g, lookup(g, E, 7u)));
  EXPECT_EQ(sig(g, pick(x1, 0u)), sig(g, pick(x2, 2u)));
  EXPECT_EQ(sig(g, pickneglogsoftmax(x1, 0u)), sig(g, pickneglogsoftmax(x2, 2u)));
  EXPECT_EQ(sig(g, tanh(x1)), sig(g, tanh(x2)));
  EXPECT_EQ(sig(g, elu(x1, 0.5f)), sig(g, elu(x2, 0.5f)));
  EXPECT_FALSE(sig(g, tanh(x1)).empty());
}

TEST(Signature, AnyDifferenceInAKeyAttributeDimOrSharedArgumentSeparates) {
  ParameterCollection pc;
  Parameter W1 = pc.add_parameters({4, 3}), W2 = pc.add_parameters({4, 3});
  LookupParameter E = pc.add_lookup_parameters(10, {3}), F = pc.add_lookup_parameters(10, {3});
  ComputationGraph g(false);
  Expression w1 = parameter(g, W1), w2 = parameter(g, W2);
  Expression x = input(g, Dim({3}), std::vector<float>{1, 2, 3});
  Expression y = input(g, Dim({3}), std::vector<float>{1, 2, 3});
  Expression x4 = input(g, Dim({4}), std::vector<float>{1, 2, 3, 4});
  Expression xb = input(g, Dim({3}, 2), std::vector<float>(6, 1.f));
  Expression m = input(g, Dim({3, 2}), std::vector<float>(6, 1.f));
  // attributes that must agree
  EXPECT_NE(sig(g, elu(x, 0.5f)), sig(g, elu(y, 0.6f)));
  EXPECT_NE(sig(g, x + 1.f), sig(g, y + 2.f));
  EXPECT_NE(sig(g, pick(m, 0u, 0)), sig(g, pick(m, 0u, 1)));
  EXPECT_NE(sig(g, hinge(x, 0u, 1.f)), sig(g, hinge(y, 0u, 2.f)));
  EXPECT_NE(sig(g, lookup(g, E, 1u)), sig(g, lookup(g, F, 1u)));
  EXPECT_NE(sig(g, pick_range(x, 0, 2)), sig(g, pick_range(y, 1, 3)));
  // dims of concatenated arguments (and of the node)
  EXPECT_NE(sig(g, tanh(x)), sig(g, tanh(x4)));
  EXPECT_NE(sig(g, tanh(x)), sig(g, tanh(xb)));
  EXPECT_NE(sig(g, cmult(x, y)), sig(g, cmult(x, xb)));
  // the shared argument's identity
  EXPECT_NE(sig(g, w1 * x), sig(g, w2 * y));
  // different ops
  EXPECT_NE(sig(g, tanh(x)), sig(g, logistic(y)));
}

TEST(Signature, NodesOfOneParameterAreOneSharedArgument) {
  ParameterCollection pc;
  Parameter W = pc.add_parameters({4, 3}), V = pc.add_parameters({4, 3});
  ComputationGraph g(false);
  Expression x = input(g, Dim({3}), std::vector<float>{1, 2, 3});
  // parameter(cg, W) called per example: two nodes of W are the same shared argument; V is another.
  EXPECT_EQ(sig(g, parameter(g, W) * x), sig(g, parameter(g, W) * x));
  EXPECT_NE(sig(g, parameter(g, W) * x), sig(g, parameter(g, V) * x));
  EXPECT_NE(sig(g, parameter(g, W) * x), sig(g, const_parameter(g, W) * x));
}

TEST(Signature, ABatchedSharedArgumentRunsAlone) {
  ComputationGraph g(false);
  Expression wb = input(g, Dim({4, 3}, 2), std::vector<float>(24, 0.5f));
  Expression x = input(g, Dim({3}), std::vector<float>{1, 2, 3});
  EXPECT_TRUE(sig(g, wb * x).empty());
  // ops that are not batchable, and reductions over the batch (sum_batches of a batched argument, a *_dim
  // reduction with b), run alone too
  Expression xb = input(g, Dim({3}, 2), std::vector<float>(6, 1.f));
  EXPECT_TRUE(sig(g, sum_batches(xb)).empty());
  EXPECT_FALSE(sig(g, sum_batches(x)).empty());
  EXPECT_TRUE(sig(g, sum_dim(xb, {0}, true)).empty());
  EXPECT_FALSE(sig(g, sum_dim(xb, {0}, false)).empty());
}

// Nodes on different devices never batch together: the device is part of the signature, and a graph with
// the same computation on the CPU and on a device batches each device's nodes apart.
TEST(Signature, TheDeviceSeparates) {
  Device* emu = emulated_device();
  auto g = graph_with(1);
  std::vector<Expression> cpu, dev, xs;
  for (unsigned k = 0; k < 3; ++k) {
    cpu.push_back(tanh(input(*g, Dim({2}), {0.5f * k, -1.f})));
    xs.push_back(input(*g, Dim({2}), {0.5f * k, -1.f}, emu));
    dev.push_back(tanh(xs.back()));
  }
  EXPECT_EQ(sig(*g, cpu[0]), sig(*g, cpu[1]));
  EXPECT_EQ(sig(*g, dev[0]), sig(*g, dev[1]));
  EXPECT_NE(sig(*g, cpu[0]), sig(*g, dev[0]));
  std::vector<Expression> all = cpu;
  for (const Expression& d : dev) all.push_back(to_device(d, cpu_device()));
  Expression loss = sum_elems(sum(all));
  EXPECT_NEAR(as_scalar(loss.value()), 2 * (std::tanh(0.f) + std::tanh(0.5f) + std::tanh(1.f) + 3 * std::tanh(-1.f)), 1e-5);
  ASSERT_EQ(batched(*g)->batches().size(), 4u);  // inputs and tanh, once per device
  for (const auto& b : batched(*g)->batches()) {
    EXPECT_EQ(b.size, 3u);
    const VariableIndex* m = batched(*g)->members(b);
    for (unsigned j = 1; j < b.size; ++j) EXPECT_EQ(g->node(m[j]).device, g->node(m[0]).device);
  }
  g->backward(loss, true);
  for (const Expression& x : xs) EXPECT_EQ(x.gradient().device, emu);
  EXPECT_NEAR(as_vector(xs[2].gradient())[0], 1 - std::tanh(1.f) * std::tanh(1.f), 1e-5);
  EXPECT_NEAR(as_vector(xs[2].gradient())[1], 1 - std::tanh(-1.f) * std::tanh(-1.f), 1e-5);
}

// renew(strategy) clears the graph and switches its executor, as a new graph would get it (Python's
// renew_cg(autobatching=...)); values computed after the switch agree.
TEST(Autobatch, RenewSwitchesTheExecutor) {
  auto g = graph_with(0);
  auto build = [&] {
    std::vector<Expression> ys;
    for (int k = 0; k < 3; ++k) ys.push_back(tanh(input(*g, Dim({2}), {0.5f * k, -0.25f})));
    return sum_elems(sum(ys));
  };
  const float want = as_scalar(build().value());
  EXPECT_EQ(batched(*g), nullptr);
  for (int strategy : {1, 2, 0, 1}) {
    Expression stale = input(*g, 1.f);
    g->renew(strategy);
    EXPECT_THROW(stale.value(), std::runtime_error);
    EXPECT_EQ(batched(*g) != nullptr, strategy != 0);
    EXPECT_FLOAT_EQ(as_scalar(build().value()), want) << "strategy " << strategy;
    EXPECT_EQ(batched_nodes(*g), strategy ? 6u : 0u) << "strategy " << strategy;  // inputs and tanh
  }
}

// Executors pass from graph to graph (the spare ones, what they learned kept), but not their settings.
TEST(Autobatch, ASpareExecutorStartsWithTheDefaultSettings) {
  const BatchedExecutor* first = nullptr;
  bool by_default = false;
  {
    ComputationGraph g;
    g.set_execution_strategy(1);
    first = batched(g);
    by_default = first->fusion();
    const_cast<BatchedExecutor*>(first)->set_fusion(!by_default);
  }
  ComputationGraph g;
  g.set_execution_strategy(1);
  EXPECT_EQ(batched(g), first);  // the spare
  EXPECT_EQ(batched(g)->fusion(), by_default);
}

// ---- whole models under every strategy ----

struct Outcome {
  float loss = 0;
  std::vector<std::vector<float>> grads;  // every parameter, then every lookup table
  size_t batched = 0;
};

using Model = std::function<Expression(ComputationGraph&)>;

Outcome run(ParameterCollection& pc, int strategy, const Model& build, bool fusion = true) {
  pc.reset_gradient();
  reset_rng(42);
  auto g = graph_with(strategy);
  if (const BatchedExecutor* e = batched(*g)) const_cast<BatchedExecutor*>(e)->set_fusion(fusion);
  Expression loss = build(*g);
  Outcome out;
  out.loss = as_scalar(loss.value());
  g->backward(loss);
  for (auto& p : pc.parameters_list()) out.grads.push_back(as_vector(p->g));
  for (auto& p : pc.lookup_parameters_list()) out.grads.push_back(as_vector(p->all_grads));
  out.batched = batched_nodes(*g);
  pc.reset_gradient();
  return out;
}

void expect_same(const Outcome& got, const Outcome& want, int strategy, double tol = 2e-5) {
  EXPECT_NEAR(got.loss, want.loss, tol * (1 + std::fabs(want.loss))) << "strategy " << strategy;
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (size_t p = 0; p < want.grads.size(); ++p) {
    ASSERT_EQ(got.grads[p].size(), want.grads[p].size());
    for (size_t k = 0; k < want.grads[p].size(); ++k)
      ASSERT_NEAR(got.grads[p][k], want.grads[p][k], tol * (1 + std::fabs(want.grads[p][k])))
          << "strategy " << strategy << " parameter " << p << " element " << k;
  }
}

// Strategies 1 and 2 against 0; both must batch something.
void expect_strategies_agree(ParameterCollection& pc, const Model& build) {
  const Outcome want = run(pc, 0, build);
  EXPECT_EQ(want.batched, 0u);
  for (int strategy : {1, 2}) {
    const Outcome got = run(pc, strategy, build);
    expect_same(got, want, strategy);
    EXPECT_GT(got.batched, 0u) << "strategy " << strategy << " batched nothing";
  }
}

// The models that also run on devices (AutobatchModels.OnDevices) are made by functions: parameters
// added to pc (on default_device), the loss built by the returned Model.
Model tagger_model(ParameterCollection& pc) {
  auto t = std::make_shared<Tagger>(pc);
  return [t, data = sentences(6, Tagger::kWords, 1)](ComputationGraph& g) { return t->loss(g, data); };
}

TEST(AutobatchModels, BiLSTMTagger) {
  ParameterCollection pc;
  expect_strategies_agree(pc, tagger_model(pc));
}

TEST(AutobatchModels, CharacterLSTMTagger) {
  ParameterCollection pc;
  constexpr unsigned kChars = 12, kCharEmbed = 4, kCharHidden = 4;
  Tagger t(pc, 2 * kCharHidden);
  LookupParameter chars = pc.add_lookup_parameters(kChars, {kCharEmbed});
  VanillaLSTMBuilder cf(1, kCharEmbed, kCharHidden, pc), cb(1, kCharEmbed, kCharHidden, pc);
  const auto data = sentences(5, Tagger::kWords, 2);
  // Each word read by a character BiLSTM over its "spelling" (derived from the word id).
  auto word = [&](ComputationGraph& g, unsigned w) {
    cf.start_new_sequence();
    cb.start_new_sequence();
    std::vector<Expression> cs;
    for (unsigned k = 0; k < 1 + w % 4; ++k) cs.push_back(lookup(g, chars, (w * 7 + k * 3) % kChars));
    Expression f, b;
    for (const Expression& c : cs) f = cf.add_input(c);
    for (size_t k = cs.size(); k-- > 0;) b = cb.add_input(cs[k]);
    return concatenate({f, b});
  };
  expect_strategies_agree(pc, [&](ComputationGraph& g) {
    cf.new_graph(g);
    cb.new_graph(g);
    return t.loss(g, data, word);
  });
}

// The Tree-LSTM of tests/tree_lstm_model.h: five trees, cells of 5.
Model tree_lstm_model(ParameterCollection& pc) { return test::tree_lstm(pc, 5, 5); }

TEST(AutobatchModels, TreeLSTM) {
  ParameterCollection pc;
  expect_strategies_agree(pc, tree_lstm_model(pc));
}

// Equal nodes merge in graphs that batch (ComputationGraph::set_merge_equal_nodes): the Tree-LSTM's
// trees share words, so leaves merge; the loss and every gradient stay
// those of the unmerged graph and of the simple executor.
TEST(AutobatchModels, MergedEqualNodes) {
  ParameterCollection pc;
  const Model model = tree_lstm_model(pc);
  const Outcome want = run(pc, 0, model);
  for (int strategy : {1, 2}) {
    const Outcome merged = run(pc, strategy, model);
    const Outcome apart = run(pc, strategy, [&](ComputationGraph& g) {
      g.set_merge_equal_nodes(false);
      return model(g);
    });
    expect_same(merged, want, strategy);
    expect_same(apart, want, strategy);
    EXPECT_LT(merged.batched, apart.batched) << "strategy " << strategy << ": nothing merged";
  }
  auto merged = graph_with(1), apart = graph_with(1), simple = graph_with(0);
  apart->set_merge_equal_nodes(false);
  model(*merged);
  model(*apart);
  model(*simple);
  EXPECT_LT(merged->size(), apart->size());
  EXPECT_EQ(apart->size(), simple->size());
}

// What merges and what not: equal lookups and parameter nodes (and what is computed from them) merge, random
// nodes and the simple executor's graphs do not, nor a node added after a forward pass with one computed
// before it (an input read through a pointer may have changed since); a merged node's gradient is refused;
// a revert forgets the reverted nodes (and, simply, every earlier one).
TEST(AutobatchModels, WhatMerges) {
  ParameterCollection pc;
  LookupParameter E = pc.add_lookup_parameters(5, {3});
  Parameter W = pc.add_parameters({2, 3});
  auto g = graph_with(1);
  Expression a = lookup(*g, E, 2u), b = lookup(*g, E, 2u), c = lookup(*g, E, 3u);
  EXPECT_EQ(a.i, b.i);
  EXPECT_NE(a.i, c.i);
  EXPECT_EQ(parameter(*g, W).i, parameter(*g, W).i);
  EXPECT_EQ((parameter(*g, W) * a).i, (parameter(*g, W) * b).i);
  EXPECT_NE(random_normal(*g, Dim({3})).i, random_normal(*g, Dim({3})).i);
  Expression loss = sum_elems(a) + 2.f * sum_elems(b) + sum_elems(c);
  g->forward(loss);
  g->backward(loss);
  // a and b are one node: its gradient (3 = 1 + 2) is no one expression's, so reading it throws, naming the
  // function and the op; the graph stays usable, and a node nothing merged into reads as before.
  try {
    (void)a.gradient();
    ADD_FAILURE() << "get_gradient of a merged node did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("get_gradient: node"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lookup"), std::string::npos) << e.what();
  }
  EXPECT_EQ(as_vector(c.gradient()), std::vector<float>(3, 1.f));
  EXPECT_EQ(as_vector(E.get_storage().grads[2]), std::vector<float>(3, 3.f));
  {  // merging off: each expression is its own node with its own part of the gradient
    auto u = graph_with(1);
    u->set_merge_equal_nodes(false);
    Expression a1 = lookup(*u, E, 2u), b1 = lookup(*u, E, 2u);
    EXPECT_NE(a1.i, b1.i);
    Expression l = sum_elems(a1) + 2.f * sum_elems(b1);
    u->forward(l);
    u->backward(l);
    EXPECT_EQ(as_vector(a1.gradient()), std::vector<float>(3, 1.f));
    EXPECT_EQ(as_vector(b1.gradient()), std::vector<float>(3, 2.f));
  }
  {  // a merge reverted with the expression that made it: the node reads its gradient again
    auto m = graph_with(1);
    Expression a2 = lookup(*m, E, 1u);
    m->checkpoint();
    EXPECT_EQ(lookup(*m, E, 1u).i, a2.i);
    m->revert();
    Expression l = 2.f * sum_elems(a2);
    m->forward(l);
    m->backward(l);
    EXPECT_EQ(as_vector(a2.gradient()), std::vector<float>(3, 2.f));
  }
  auto s = graph_with(0);
  EXPECT_NE(lookup(*s, E, 2u).i, lookup(*s, E, 2u).i);

  auto p = graph_with(1);
  float x = 1.f;
  Expression u = input(*p, &x);
  EXPECT_EQ(input(*p, &x).i, u.i);
  EXPECT_FLOAT_EQ(as_scalar(u.value()), 1.f);
  x = 5.f;
  Expression v = input(*p, &x);
  EXPECT_NE(v.i, u.i);
  EXPECT_FLOAT_EQ(as_scalar(v.value()), 5.f);

  auto r = graph_with(1);
  lookup(*r, E, 1u);
  r->checkpoint();
  Expression f = lookup(*r, E, 4u);
  r->revert();
  const size_t n = r->size();
  Expression f2 = lookup(*r, E, 4u);
  EXPECT_EQ(f2.i, n);
  EXPECT_EQ(tanh(f2).i, tanh(f2).i);  // merging goes on after the revert
  EXPECT_EQ(as_vector(f2.value()), as_vector(E.get_storage().values[4]));
  (void)f;
}

// The library's N-ary Tree-LSTM builder: its nodes batch across trees too.
TEST(AutobatchModels, NaryTreeLSTMBuilder) {
  ParameterCollection pc;
  LookupParameter embed = pc.add_lookup_parameters(10, {4});
  NaryTreeLSTMBuilder b(2, 1, 4, 5, pc);
  expect_strategies_agree(pc, [&](ComputationGraph& g) {
    b.new_graph(g);
    std::vector<Expression> roots;
    for (unsigned t = 0; t < 4; ++t) {
      b.start_new_sequence();
      b.add_input(0, {}, lookup(g, embed, t));
      b.add_input(1, {}, lookup(g, embed, t + 3));
      b.add_input(2, {}, lookup(g, embed, t + 5));
      b.add_input(3, {0, 1}, zeros(g, {4}));
      roots.push_back(sum_elems(b.add_input(4, {3, 2}, zeros(g, {4}))));
    }
    return sum(roots);
  });
}

// Parameters added to the graph once per example (as the benchmark's Tree-LSTM does): the products
// still batch, and every parameter node's gradient reaches the parameter, also from a node that
// is a shared argument of a batch and an argument of a node that runs alone. Nodes whose whole
// gradient went to another node of their parameter get no gradient memory.
TEST(AutobatchModels, ParameterNodesPerExample) {
  ParameterCollection pc;
  Parameter W = pc.add_parameters({5, 4}), b = pc.add_parameters({5}), V = pc.add_parameters({1, 5});
  std::vector<Expression> Ws;
  const Model build = [&](ComputationGraph& g) {
    g.set_merge_equal_nodes(false);  // else the examples' parameter nodes are one node (MergedEqualNodes)
    std::vector<Expression> losses;
    Ws.clear();
    for (unsigned k = 0; k < 6; ++k) {
      Expression x = input(g, Dim({4}), std::vector<float>{0.1f * k, -0.3f, 0.2f, 0.05f * k});
      Ws.push_back(parameter(g, W));
      Expression h = tanh(affine_transform({parameter(g, b), Ws.back(), x}));
      losses.push_back(parameter(g, V) * h);
    }
    losses.push_back(0.5f * sum_elems(square(Ws[3])));
    return sum(losses);
  };
  expect_strategies_agree(pc, build);
  auto g = graph_with(1);
  Expression loss = build(*g);
  g->backward(loss);
  size_t affine = 0;
  for (const auto& grp : batched(*g)->batches())
    affine += std::string(op_def(g->node(batched(*g)->members(grp)[0]).op).name) == "affine_transform" ? grp.size : 0;
  EXPECT_EQ(affine, 6u);
  size_t with_memory = 0;
  for (const Expression& w : Ws) with_memory += g->executor().has_gradient(w.i);
  EXPECT_LE(with_memory, 2u);  // the node that took the batch's gradient, and Ws[3]
  EXPECT_TRUE(g->executor().has_gradient(Ws[3].i));
}

// The same with the examples' parameter nodes computed in two forward passes, the later pass's
// created first: the gradient of every batch still reaches the parameter.
TEST(AutobatchModels, ParameterNodesAcrossForwardPasses) {
  ParameterCollection pc;
  Parameter W = pc.add_parameters({3, 4});
  const Model build = [&](ComputationGraph& g) {
    g.set_merge_equal_nodes(false);  // else the parameter nodes are one node
    std::vector<Expression> ws, ys;
    for (unsigned k = 0; k < 6; ++k) ws.push_back(parameter(g, W));
    for (unsigned k = 0; k < 6; ++k) {
      Expression x = input(g, Dim({4}), std::vector<float>{0.2f * k, -0.1f, 0.3f, 0.05f * k});
      ys.push_back(sum_elems(tanh(ws[k] * x)));
    }
    // The last three first (their parameter nodes are computed first), then everything.
    sum({ys[3], ys[4], ys[5]}).value();
    return sum(ys);
  };
  expect_strategies_agree(pc, build);
}

// Dropout masks: every sequence draws its own (members of a batched mask node keep their own values).
// The masks are drawn in creation order by every strategy here (they are the graph's only random
// nodes and have one signature), so the losses agree exactly.
// Concatenations of vectors from all over memory (a parser's features; AutobatchSchedule.ConcatenationsBatchByPointer):
// pieces shared by several members, and members off the loss's path.
constexpr unsigned kParserFeatures = 64;
Model parser_features_model(ParameterCollection& pc) {
  constexpr unsigned kN = kParserFeatures, kDim = 100;
  Parameter W = pc.add_parameters({4, 3 * kDim}), A = pc.add_parameters({kDim});
  LookupParameter E = pc.add_lookup_parameters(kN, {kDim});  // the pieces' gradients are compared here
  return [=](ComputationGraph& g) {
    std::vector<Expression> a, b, features, products, losses;
    for (unsigned i = 0; i < kN; ++i) {
      a.push_back(tanh(lookup(g, E, i)));
      b.push_back(logistic(lookup(g, E, (i * 3) % kN)));
    }
    Expression w = parameter(g, W), absent = parameter(g, A);
    for (unsigned i = 0; i < kN; ++i) {
      features.push_back(concatenate({a[(i * 7) % kN], i % 3 ? b[i] : absent, a[(i * 5) % kN]}));
      products.push_back(w * features.back());
      if (i % 8 != 5) losses.push_back(sum_elems(cmult(products.back(), products.back())));
    }
    sum(products).value();  // every feature computed (in one batch), some off the loss's path
    return sum(losses);
  };
}

Model dropout_lstm_model(ParameterCollection& pc) {
  constexpr unsigned kDim = 6;
  LookupParameter embed = pc.add_lookup_parameters(10, {kDim});
  auto lstm = std::make_shared<VanillaLSTMBuilder>(1, kDim, kDim, pc);
  lstm->set_dropout(0.4f);
  return [=, data = sentences(4, 10, 4)](ComputationGraph& g) {
    lstm->new_graph(g);
    std::vector<Expression> losses;
    for (const auto& s : data) {
      lstm->start_new_sequence();
      for (unsigned w : s) losses.push_back(sum_elems(lstm->add_input(lookup(g, embed, w))));
    }
    return sum(losses);
  };
}

TEST(AutobatchModels, LSTMWithDropout) {
  ParameterCollection pc;
  const Model build = dropout_lstm_model(pc);
  expect_strategies_agree(pc, build);
  // The sequences' masks differ (a batched draw is not one mask for all members).
  auto g = graph_with(1);
  reset_rng(42);
  Expression loss = build(*g);
  loss.value();
  std::vector<std::vector<float>> mask_values;
  for (VariableIndex i = 0; i < g->size(); ++i)
    if (std::string(op_def(g->node(i).op).name) == "random_bernoulli") mask_values.push_back(as_vector(g->get_value(i)));
  ASSERT_GE(mask_values.size(), 4u);
  EXPECT_NE(mask_values[0], mask_values[2]);
}

// The models with their parameters on each test device (the emulated one; GPUs where there are some):
// every strategy gives the CPU's loss and parameter gradients under the same strategy (within the device
// harness's tolerance; random nodes take their keys in schedule order, so their masks agree too), and
// batches as many nodes as on the CPU, with elementwise fusion (fused_kernels.cc on devices) and without.
TEST(AutobatchModels, OnDevices) {
  const std::pair<const char*, Model (*)(ParameterCollection&)> models[] = {
      {"BiLSTM tagger", tagger_model}, {"Tree-LSTM", tree_lstm_model}, {"LSTM with dropout", dropout_lstm_model},
      {"parser features", parser_features_model}};
  for (const auto& [name, make] : models)
    for (bool fusion : {true, false}) {
      ParameterCollection cpu_pc;
      const Model cpu_model = make(cpu_pc);
      std::vector<Outcome> want;
      for (int strategy : {0, 1, 2}) want.push_back(run(cpu_pc, strategy, cpu_model, fusion));
      for (Device* dev : test::test_devices()) {
        SCOPED_TRACE(std::string(name) + " on " + dev->name + (fusion ? ", fused" : ""));
        test::DefaultDevice on(dev);
        ParameterCollection pc;
        const Model model = make(pc);
        ASSERT_EQ(pc.parameters_list()[0]->values.device, dev);
        test::copy_parameter_values(pc, cpu_pc);
        for (int strategy : {0, 1, 2}) {
          const Outcome got = run(pc, strategy, model, fusion);
          expect_same(got, want[strategy], strategy, 1e-4);
          EXPECT_EQ(got.batched, want[strategy].batched) << "strategy " << strategy;
        }
        EXPECT_GT(want[1].batched, 0u);
      }
    }
}

// Reading values mid-graph computes what they need only; the rest of the graph still batches.
TEST(AutobatchModels, MidGraphValueReads) {
  ParameterCollection pc;
  Tagger t(pc);
  const auto data = sentences(6, Tagger::kWords, 5);
  std::vector<float> reads0;
  auto build = [&](ComputationGraph& g, std::vector<float>& reads) {
    Expression loss = t.loss(g, {data[0], data[1]});
    reads.push_back(as_scalar(loss.value()));  // the first two sentences, computed now
    Expression more = t.loss(g, {data[2], data[3], data[4], data[5]});
    reads.push_back(as_scalar(more.value()));
    return loss + more;
  };
  const Outcome want = run(pc, 0, [&](ComputationGraph& g) { return build(g, reads0); });
  for (int strategy : {1, 2}) {
    std::vector<float> reads;
    const Outcome got = run(pc, strategy, [&](ComputationGraph& g) { return build(g, reads); });
    expect_same(got, want, strategy);
    ASSERT_EQ(reads.size(), 2u);
    EXPECT_NEAR(reads[0], reads0[0], 1e-4);
    EXPECT_NEAR(reads[1], reads0[1], 1e-4);
    EXPECT_GT(got.batched, 0u);
  }
  // A read computes only the nodes the value needs.
  auto g = graph_with(1);
  Expression a = t.loss(*g, {data[0]});
  Expression b = t.loss(*g, {data[1], data[2]});
  a.value();
  const size_t evaluated = batched(*g)->num_evaluated();
  EXPECT_LT(evaluated, size_t(b.i));
  EXPECT_FALSE(g->executor().computed(b.i));
  b.value();
  EXPECT_TRUE(g->executor().computed(b.i));
}

// Checkpoint / revert: values before the checkpoint stay; nodes after it are forgotten; the graph goes on.
TEST(AutobatchModels, CheckpointRevert) {
  ParameterCollection pc;
  Tagger t(pc);
  const auto data = sentences(6, Tagger::kWords, 6);
  auto build = [&](ComputationGraph& g) {
    Expression first = t.loss(g, {data[0], data[1], data[2]});
    first.value();
    g.checkpoint();
    Expression discarded = t.loss(g, {data[3], data[4]});
    discarded.value();
    g.revert();
    Expression second = t.loss(g, {data[5], data[4]});
    return first + second;
  };
  expect_strategies_agree(pc, build);
  // Nested checkpoints, and a revert after a forward() that forgot the values' checkpoints.
  auto nested = [&](ComputationGraph& g) {
    Expression first = t.loss(g, {data[0], data[1]});
    g.checkpoint();
    Expression a = t.loss(g, {data[2]});
    g.forward(a);
    g.checkpoint();
    Expression b = t.loss(g, {data[3]});
    b.value();
    g.revert();
    g.revert();
    Expression second = t.loss(g, {data[4], data[5]});
    return first + second;
  };
  expect_strategies_agree(pc, nested);
}

// A graph far larger than the pools' 1 MB initial size: they grow as needed under autobatching.
TEST(AutobatchModels, PoolsGrowFromOneMegabyte) {
  ParameterCollection pc;
  constexpr unsigned kDim = 96;
  LookupParameter embed = pc.add_lookup_parameters(50, {kDim});
  VanillaLSTMBuilder lstm(1, kDim, kDim, pc);
  const auto data = sentences(40, 50, 7);
  const Model build = [&](ComputationGraph& g) {
    lstm.new_graph(g);
    std::vector<Expression> losses;
    for (const auto& s : data) {
      lstm.start_new_sequence();
      Expression h;
      for (unsigned w : s) h = lstm.add_input(lookup(g, embed, w));
      losses.push_back(squared_norm(h));
    }
    return sum(losses);
  };
  expect_strategies_agree(pc, build);
}

// Nodes off the loss's path that ran batched with nodes on it leave the parameters alone (a sparse
// update must not visit their rows) and read zero gradients.
TEST(AutobatchModels, UnreachedMembersLeaveParametersAlone) {
  ParameterCollection pc;
  LookupParameter E = pc.add_lookup_parameters(10, {3});
  Parameter W = pc.add_parameters({3, 3});
  for (int strategy : {0, 1, 2}) {
    pc.reset_gradient();
    auto g = graph_with(strategy);
    Expression w = parameter(*g, W);
    // Inline and pointer forms (the pointer's target changes after forward: backward uses the rows read).
    unsigned row = 5;
    Expression used = tanh(w * lookup(*g, E, 2u)) + tanh(w * lookup(*g, E, &row));
    Expression unused = tanh(w * lookup(*g, E, 7u));
    Expression loss = sum_elems(used);
    g->incremental_forward(unused);
    loss.value();
    row = 9;
    g->backward(loss);
    const auto& rows = E.get_storage().non_zero_grads;
    EXPECT_EQ(rows.size(), 2u) << "strategy " << strategy;
    EXPECT_TRUE(rows.count(2) && rows.count(5)) << "strategy " << strategy;
    for (float v : as_vector(unused.gradient())) EXPECT_EQ(v, 0.f);
  }
}

// grads(strategy): gradients of a graph's nodes; strategies 1 and 2 give strategy 0's within 1e-6.
void expect_node_gradients_agree(const std::function<std::vector<std::vector<float>>(int)>& grads) {
  const auto want = grads(0);
  for (int strategy : {1, 2}) {
    const auto got = grads(strategy);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      for (size_t k = 0; k < want[i].size(); ++k)
        EXPECT_NEAR(got[i][k], want[i][k], 1e-6) << "strategy " << strategy << " gradient " << i;
  }
}

// Gradients of intermediate nodes (backward with full = true) agree as well.
TEST(AutobatchModels, NodeGradientsAgree) {
  auto grads = [](int strategy) {
    auto g = graph_with(strategy);
    std::vector<Expression> xs, ys;
    for (unsigned k = 0; k < 4; ++k) {
      xs.push_back(input(*g, Dim({3}), std::vector<float>{0.1f * k, -0.2f, 0.3f + k}));
      ys.push_back(logistic(tanh(xs.back()) * 2.f));
    }
    Expression loss = sum_elems(cmult(ys[0], ys[1]) + cmult(ys[2], ys[3]));
    loss.value();
    g->backward(loss, true);
    std::vector<std::vector<float>> out;
    for (auto& e : xs) out.push_back(as_vector(e.gradient()));
    for (auto& e : ys) out.push_back(as_vector(e.gradient()));
    return out;
  };
  expect_node_gradients_agree(grads);
}

// Gradient memory is zeroed where it is first used (BatchedExecutor::zero_before_use), not up front: a
// second backward over the same memory, which then holds the first one's gradients, gives the same
// gradients, for nodes batched as views or gathered, run alone, shared and of parameters.
TEST(AutobatchModels, GradientMemoryIsZeroedBeforeUse) {
  ParameterCollection pc;
  Parameter W = pc.add_parameters({3, 3});
  auto grads = [&](int strategy) {
    auto g = graph_with(strategy);
    Expression w = parameter(*g, W);
    std::vector<Expression> xs, hs;
    for (unsigned k = 0; k < 5; ++k) {
      xs.push_back(input(*g, Dim({3}), std::vector<float>{0.1f * k, -0.2f, 0.3f + k}));
      hs.push_back(tanh(w * xs.back()));
    }
    // cmult's arguments come in another order than their batch made them (gathered, scattered back).
    Expression loss = sum_elems(cmult(hs[4], hs[0]) + cmult(hs[1], hs[3]) + logistic(hs[2]));
    std::vector<std::vector<float>> first, second;
    for (auto* out : {&first, &second}) {
      pc.reset_gradient();
      loss.value();
      g->backward(loss, true);
      for (auto& e : xs) out->push_back(as_vector(e.gradient()));
      for (auto& e : hs) out->push_back(as_vector(e.gradient()));
      out->push_back(as_vector(w.gradient()));
      out->push_back(as_vector(W.get_storage().g));
    }
    EXPECT_EQ(first, second) << "strategy " << strategy;
    return first;
  };
  expect_node_gradients_agree(grads);
}

// vanilla_lstm_h and vanilla_lstm_c write their blocks of the gates' gradient alone (o; i, f, g:
// OpDef::partial_gradient) where nothing else wrote there yet; the other blocks are zeroed when anything
// else reads or adds there first, or at the end of the pass. Cells with extra consumers of the gates
// before, between and after the pair, without h, with a second h, with unbatched gates, with gates that
// are an input, or one parameter for every cell (everything unbatched there); each graph's gradient
// memory first holds another backward pass's gradients (a loss over every node), so a block left
// unwritten shows. Node gradients must equal those of the same graph without that first pass, and
// agree under every strategy.
TEST(AutobatchModels, CellsWriteTheirBlocksOfTheGatesGradient) {
  enum Extra { kNone, kFirst, kBetween, kLast, kNoH, kSecondH, kUnbatchedGates, kInputGates, kParameterGates, kCount };
  ParameterCollection pc;
  const unsigned H = 256, bd = 8;  // each batch gradient 32K floats or more: chunk-aligned, claimable
  Parameter P = pc.add_parameters({4 * H});
  for (int extra = kNone; extra < kCount; ++extra) {
    auto grads = [&](int strategy) {
      std::vector<std::vector<float>> out[2];
      for (int poisoned : {0, 1}) {
        auto g = graph_with(strategy);
        std::vector<Expression> nodes, terms, all;
        const Expression w = parameter(*g, P);
        for (unsigned k = 0; k < 4; ++k) {
          auto values = [k](unsigned n, unsigned seed) {
            std::vector<float> v(n);
            for (unsigned i = 0; i < n; ++i) v[i] = 0.1f * float((i * 7 + seed * 3 + k * 5) % 11) - 0.5f;
            return v;
          };
          const unsigned gates_bd = extra == kUnbatchedGates || extra == kParameterGates ? 1 : bd;
          const unsigned state_bd = extra == kParameterGates ? 1 : bd;
          Expression pre = input(*g, Dim({4 * H}, gates_bd), values(4 * H * gates_bd, 1));
          Expression gates = extra == kParameterGates ? w : extra == kInputGates ? pre : logistic(pre * 1.5f);
          Expression c_prev = input(*g, Dim({H}, state_bd), values(H * state_bd, 2));
          if (extra == kFirst) terms.push_back(sum_elems(cmult(gates, gates)));
          Expression c = vanilla_lstm_c(c_prev, gates);
          if (extra == kBetween) terms.push_back(sum_elems(cmult(gates, gates)));
          Expression h = vanilla_lstm_h(c, gates);
          terms.push_back(sum_elems(cmult(c, c)));
          if (extra != kNoH) terms.push_back(sum_elems(h * 2.f));
          if (extra == kSecondH) terms.push_back(sum_elems(vanilla_lstm_h(c_prev + 0.25f, gates)));
          if (extra == kLast) terms.push_back(sum_elems(cmult(gates, gates)));
          for (const Expression& e : {pre, gates, c_prev, c, h}) {
            nodes.push_back(e);
            all.push_back(sum_elems(cmult(e, e)));
          }
        }
        Expression loss = sum_batches(sum(terms)), everything = sum_batches(sum(all)) * 3.f;
        if (poisoned) {
          everything.value();
          g->backward(everything, true);
        }
        loss.value();
        g->backward(loss, true);
        for (const Expression& e : nodes) out[poisoned].push_back(as_vector(e.gradient()));
      }
      for (size_t i = 0; i < out[0].size(); ++i) {
        size_t k = 0;
        while (k < out[0][i].size() && std::fabs(out[1][i][k] - out[0][i][k]) <= 1e-6f) ++k;
        EXPECT_EQ(k, out[0][i].size()) << "case " << extra << " strategy " << strategy << " node " << i
                                       << ": the first differing element";
      }
      return out[0];
    };
    expect_node_gradients_agree(grads);
  }
}

// Gradient recycling (exec/recycle.cc): an LSTM large enough for it (gates and cells of 16 sequences,
// hidden 256) has its gates' and cells' gradients placed in memory that other batches' backward gave
// back during the pass. Asked for afterwards, every node's gradient (recomputed) and every parameter's
// must equal the simple executor's: with recycling on and off; after a trainer's update changed the
// weights (what the recomputation reads must not change with them); and after more of the graph was
// computed (new batches) and a second backward from another loss.
TEST(AutobatchModels, RecycledGradientsAreRecomputedWhenAsked) {
  constexpr unsigned kSequences = 16, kLength = 5, kInput = 16, kHidden = 256, kClasses = 4;
  enum Then { kRead, kUpdate, kMore };
  ParameterCollection pc;
  VanillaLSTMBuilder lstm(1, kInput, kHidden, pc);
  Parameter out_w = pc.add_parameters({kClasses, kHidden});
  SimpleSGDTrainer trainer(pc, 0.5f);
  struct Result {
    std::vector<std::vector<float>> nodes, params;
    size_t recycled = 0;
  };
  auto run = [&](int strategy, bool recycle, Then then) {
    pc.reset_gradient();
    auto g = graph_with(strategy);
    g->set_merge_equal_nodes(false);  // get_gradient() refuses merged nodes
    const BatchedExecutor* e = batched(*g);
    if (e) const_cast<BatchedExecutor*>(e)->set_gradient_recycling(recycle);
    lstm.new_graph(*g);
    const Expression w = parameter(*g, out_w);
    std::vector<Expression> losses, squares;
    for (unsigned s = 0; s < kSequences; ++s) {
      lstm.start_new_sequence();
      for (unsigned t = 0; t < kLength; ++t) {
        std::vector<float> x(kInput);
        for (unsigned i = 0; i < kInput; ++i) x[i] = 0.1f * float((i * 7 + s * 5 + t * 3) % 13) - 0.6f;
        const Expression h = lstm.add_input(input(*g, Dim({kInput}), x));
        losses.push_back(pickneglogsoftmax(w * h, (s + t) % kClasses));
        squares.push_back(h);
      }
    }
    const Expression loss = sum(losses);
    loss.value();
    g->backward(loss);
    Result r;
    for (auto& p : pc.parameters_list()) r.params.push_back(as_vector(p->g));
    if (e) r.recycled = e->recycled_batches();
    if (then == kUpdate) trainer.update();
    Expression more;
    if (then == kMore) {
      for (Expression& h : squares) h = sum_elems(cmult(h, h));
      more = sum(squares);
      more.value();
    }
    for (VariableIndex i = 0; i <= loss.i; ++i) r.nodes.push_back(as_vector(g->get_gradient(i)));
    if (then == kMore) {
      g->backward(more);
      for (VariableIndex i = 0; i <= more.i; ++i) r.nodes.push_back(as_vector(g->get_gradient(i)));
    }
    return r;
  };
  auto expect_near = [](const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                        const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].size(), want[i].size()) << what << " " << i;
      size_t k = 0;
      while (k < want[i].size() && std::fabs(got[i][k] - want[i][k]) <= 1e-5f * (1 + std::fabs(want[i][k]))) ++k;
      EXPECT_EQ(k, want[i].size()) << what << " " << i << ": the first differing element";
    }
  };
  const Result want = run(0, true, kRead), want_more = run(0, true, kMore);
  for (int strategy : {1, 2}) {
    for (bool recycle : {true, false}) {
      const std::string what = "strategy " + std::to_string(strategy) + (recycle ? " recycling" : " not recycling");
      const Result got = run(strategy, recycle, kRead);
      if (recycle)
        EXPECT_GE(got.recycled, 2u * kLength - 2) << what;  // the gates' and cells' batches, but the first step's
      else
        EXPECT_EQ(got.recycled, 0u) << what;
      expect_near(got.params, want.params, what + ", parameter");
      expect_near(got.nodes, want.nodes, what + ", node");
    }
    const Result more = run(strategy, true, kMore);
    EXPECT_GT(more.recycled, 0u);
    expect_near(more.nodes, want_more.nodes, "strategy " + std::to_string(strategy) + " with more work, node");
  }
  const Result updated = run(1, true, kUpdate);
  EXPECT_GT(updated.recycled, 0u);
  expect_near(updated.nodes, want.nodes, "after the update, node");
}

// A batch whose gradient is recycled defers no weight-gradient product (LowRankSink keeps pointers into
// that gradient until the weight's own backward, long after another batch's gradient took its place):
// two chains of tanh(W h), 8 columns each, whose products batch with 16 columns (deferred otherwise)
// and have their gradients recycled, give the weight's gradient of the simple executor.
TEST(AutobatchModels, RecycledGradientsDeferNoWeightProducts) {
  constexpr unsigned kDim = 256, kLayers = 6, kChains = 2, kColumns = 8;
  ParameterCollection pc;
  Parameter W = pc.add_parameters({kDim, kDim}, ParameterInitUniform(0.1f));
  auto run = [&](int strategy, size_t* recycled) {
    pc.reset_gradient();
    auto g = graph_with(strategy);
    const Expression w = parameter(*g, W);
    std::vector<Expression> tops;
    for (unsigned c = 0; c < kChains; ++c) {
      std::vector<float> x(kDim * kColumns);
      for (size_t i = 0; i < x.size(); ++i) x[i] = 0.05f * float((i * 13 + c * 7) % 17) - 0.4f;
      Expression h = input(*g, Dim({kDim}, kColumns), x);
      for (unsigned l = 0; l < kLayers; ++l) h = tanh(w * h);
      tops.push_back(sum_batches(sum_elems(h)));
    }
    const Expression loss = sum(tops);
    loss.value();
    g->backward(loss);
    if (const BatchedExecutor* e = batched(*g)) *recycled = e->recycled_batches();
    return as_vector(W.get_storage().g);
  };
  size_t recycled = 0;
  const std::vector<float> want = run(0, &recycled);
  for (int strategy : {1, 2}) {
    recycled = 0;
    const std::vector<float> got = run(strategy, &recycled);
    EXPECT_GE(recycled, size_t(kLayers - 1)) << "strategy " << strategy;
    ASSERT_EQ(got.size(), want.size());
    size_t k = 0;
    while (k < want.size() && std::fabs(got[k] - want[k]) <= 1e-5f * (1 + std::fabs(want[k]))) ++k;
    EXPECT_EQ(k, want.size()) << "strategy " << strategy << ": the first differing element";
  }
}

// affine_transform and matmul write their arguments' first gradient contribution (kOverwritesGradient:
// GEMMs with beta 0, deferred weight updates into a zeroed gradient, the bias's sums after zeroing it).
// Each case computes the products' gradients twice: with the products as their arguments' only
// consumers (written), and after a later node already contributed zeros to every argument
// (accumulated); three instances that batch; two backward passes in one graph, the second over the
// first one's gradient memory. The two must agree, under every strategy.
TEST(AutobatchModels, ProductsWriteTheFirstGradientContribution) {
  struct Case {
    Dim b, W, x;
    bool matmul;
  };
  const std::vector<Case> cases = {
      {Dim({3}), Dim({3, 4}), Dim({4}), false},              // matrix-vector (deferred weight updates)
      {Dim({3}), Dim({3, 4}), Dim({4}), true},
      {Dim({3}), Dim({3, 4}), Dim({4, 5}), false},           // column bias
      {Dim({3}), Dim({3, 4}), Dim({4}, 2), false},           // batched x: the batch folds into the columns
      {Dim({3}), Dim({3, 4}, 2), Dim({4}), false},           // batched W, shared x: one product per element
      {Dim({3}, 2), Dim({3, 4}, 2), Dim({4}, 2), true},      // both batched
      {Dim({3}, 2), Dim({3, 4}), Dim({4}), false},           // batched bias
      {Dim({40}), Dim({40, 64}), Dim({64, 40}), false},      // oneDNN's products
      {Dim({40}), Dim({40, 64}), Dim({64, 200}), false},     // x's batched gradient chunk-aligned (> 32K floats)
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    auto values = [](const Dim& d, unsigned seed) {
      std::vector<float> v(d.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = 0.01f * float((i * 37 + seed * 11) % 101) - 0.5f;
      return v;
    };
    auto grads = [&](int strategy) {
      std::vector<std::vector<float>> out[2];
      for (int accumulate : {0, 1}) {
        auto g = graph_with(strategy);
        Expression b = input(*g, c.b, values(c.b, 1)), W = input(*g, c.W, values(c.W, 2));
        std::vector<Expression> args = {W}, terms;
        if (!c.matmul) args.push_back(b);
        for (unsigned k = 0; k < 3; ++k) {
          Expression x = input(*g, c.x, values(c.x, 3 + k));
          args.push_back(x);
          Expression y = c.matmul ? W * x : affine_transform({b, W, x});
          terms.push_back(sum_elems(cmult(y, y)));
        }
        if (accumulate)
          for (const Expression& a : args) terms.push_back(sum_elems(a) * 0.f);
        Expression loss = sum(terms);
        for (int pass = 0; pass < 2; ++pass) {
          out[accumulate].clear();
          loss.value();
          g->backward(loss, true);
          for (const Expression& a : args) out[accumulate].push_back(as_vector(a.gradient()));
        }
      }
      for (size_t i = 0; i < out[0].size(); ++i)
        for (size_t k = 0; k < out[0][i].size(); ++k)
          EXPECT_NEAR(out[0][i][k], out[1][i][k], 1e-5 * (1 + std::fabs(out[1][i][k])))
              << "case " << ci << " strategy " << strategy << " argument " << i << " element " << k;
      return out[0];
    };
    const auto want = grads(0);
    for (int strategy : {1, 2}) {
      const auto got = grads(strategy);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        for (size_t k = 0; k < want[i].size(); ++k)
          EXPECT_NEAR(got[i][k], want[i][k], 1e-5 * (1 + std::fabs(want[i][k])))
              << "case " << ci << " strategy " << strategy << " argument " << i << " element " << k;
    }
  }
}

// The rnnlm pattern: per-step output products W·h_t depend on no other step's, so the agenda runs them
// as one batched node after the recurrence (one GEMM across time steps).
TEST(AutobatchSchedule, OutputLayerOfEveryStepRunsOnce) {
  ParameterCollection pc;
  LookupParameter embed = pc.add_lookup_parameters(20, {4});
  VanillaLSTMBuilder lstm(1, 4, 5, pc);
  Parameter W = pc.add_parameters({23, 5}), b = pc.add_parameters({23});
  auto g = graph_with(1);
  lstm.new_graph(*g);
  lstm.start_new_sequence();
  Expression w = parameter(*g, W), bias = parameter(*g, b);
  std::vector<Expression> losses;
  constexpr unsigned kSteps = 7;
  for (unsigned t = 0; t < kSteps; ++t) {
    Expression h = lstm.add_input(lookup(*g, embed, std::vector<unsigned>{t, t + 1}));
    losses.push_back(pickneglogsoftmax(affine_transform({bias, w, h}), std::vector<unsigned>{t + 2, t + 3}));
  }
  Expression loss = sum_batches(sum(losses));
  loss.value();
  unsigned output_groups = 0, output_members = 0;
  for (const auto& grp : batched(*g)->batches()) {
    const NodeRec& r = g->node(batched(*g)->members(grp)[0]);
    if (std::string(op_def(r.op).name) == "affine_transform" && r.dim.rows() == 23) {
      ++output_groups;
      output_members += grp.size;
    }
  }
  EXPECT_EQ(output_members, kSteps);
  EXPECT_EQ(output_groups, 1u);
}

// Each example's loss summed over its own batch elements (sum_batches, as a program written for minibatches
// does per example): the examples' sums batch, each member summing only its own elements.
TEST(AutobatchSchedule, SumsOverEachExamplesBatchBatch) {
  ParameterCollection pc;
  Parameter W = pc.add_parameters({3, 4});
  constexpr unsigned kN = 8;
  const Model build = [&](ComputationGraph& g) {
    std::vector<Expression> losses;
    for (unsigned i = 0; i < kN; ++i) {
      Expression x = input(g, Dim({4}, 1 + i % 2), std::vector<float>(4 * (1 + i % 2), 0.1f * float(i + 1)));
      losses.push_back(sum_batches(sum_elems(tanh(parameter(g, W) * x))) * float(i + 1));
    }
    return sum(losses);
  };
  expect_strategies_agree(pc, build);
  auto g = graph_with(1);
  build(*g).value();
  unsigned members = 0;
  for (const auto& grp : batched(*g)->batches())
    if (std::string(op_def(g->node(batched(*g)->members(grp)[0]).op).name) == "sum_batches") members += grp.size;
  EXPECT_EQ(members, kN / 2) << "the examples of one batch element batch (the others' sums reduce two)";
}

// Two LSTMs over 64 sequences of equal length: the ready cell nodes of both recurrences share a
// signature, but their gates come from two batched nodes. Gathering them into one batch would copy
// more than it saves, so each recurrence's members (whose gates lie one after another) batch on
// their own: every node of the recurrences runs batched, and no states are copied after the first.
TEST(AutobatchSchedule, RecurrencesThatCannotMergeBatchApart) {
  ParameterCollection pc;
  constexpr unsigned kSeqs = 64, kLen = 3, kIn = 4, kHidden = 200;
  VanillaLSTMBuilder fw(1, kIn, kHidden, pc), bw(1, kIn, kHidden, pc);
  const Model build = [&](ComputationGraph& g) {
    fw.new_graph(g);
    bw.new_graph(g);
    std::vector<Expression> losses;
    for (unsigned s = 0; s < kSeqs; ++s) {
      fw.start_new_sequence();
      bw.start_new_sequence();
      for (unsigned t = 0; t < kLen; ++t) {
        Expression x = input(g, Dim({kIn}), std::vector<float>{0.01f * s, 0.1f * t, -0.2f, 0.3f});
        losses.push_back(sum_elems(fw.add_input(x)) + sum_elems(bw.add_input(x)));
      }
    }
    return sum(losses);
  };
  expect_strategies_agree(pc, build);
  auto g = graph_with(1);
  build(*g).value();
  size_t cells = 0, gathered = 0;
  for (const auto& b : batched(*g)->batches()) {
    const std::string op = op_def(g->node(batched(*g)->members(b)[0]).op).name;
    if (op == "vanilla_lstm_h" || op == "vanilla_lstm_c") {
      cells += b.size;
      EXPECT_EQ(b.size, kSeqs) << op;
    }
    if (op == "vanilla_lstm_gates") gathered += b.gathered;
  }
  EXPECT_EQ(cells, 2 * 2 * kSeqs * kLen);
  // The inputs and the initial states (zeros made per sequence, both LSTMs' in one batch) at most:
  // later states are the outputs of their recurrence's previous batch, in the same order.
  EXPECT_LE(gathered, 2 * kSeqs * (kIn * kLen + kHidden));
  // Once a cell signature's ready nodes split into runs, it runs as soon as ready (SigInfo::eager):
  // after the first step, each recurrence's h runs right after the c it reads, not after the other
  // recurrence's cells too.
  const auto& batches = batched(*g)->batches();
  size_t h_batches = 0, h_after_own_c = 0;
  for (size_t k = 1; k < batches.size(); ++k) {
    const VariableIndex h = batched(*g)->members(batches[k])[0];
    if (std::string(op_def(g->node(h).op).name) != "vanilla_lstm_h") continue;
    ++h_batches;
    const VariableIndex* prev = batched(*g)->members(batches[k - 1]);
    const VariableIndex c = g->node_args(h)[0];
    h_after_own_c += std::find(prev, prev + batches[k - 1].size, c) != prev + batches[k - 1].size;
  }
  EXPECT_EQ(h_batches, 2 * kLen);
  EXPECT_GE(h_after_own_c, 2 * kLen - 2) << "of " << h_batches;
}

// Products of vectors from all over memory: gathering them for one batch would copy more than it saves,
// so they run one by one, but with their outputs placed one after another, so the product that consumes
// them batches without gathering anything.
TEST(AutobatchSchedule, NodesThatDoNotBatchArePlacedTogether) {
  ParameterCollection pc;
  constexpr unsigned kN = 64, kDim = 300;
  Parameter W = pc.add_parameters({4, kDim});
  const Model build = [&](ComputationGraph& g) {
    std::vector<Expression> a, b, losses;
    for (unsigned i = 0; i < kN; ++i) {
      std::vector<float> v(kDim, 0.01f * i);
      a.push_back(tanh(input(g, Dim({kDim}), v)));
      b.push_back(logistic(input(g, Dim({kDim}), v)));
    }
    Expression w = parameter(g, W);
    for (unsigned i = 0; i < kN; ++i) losses.push_back(sum_elems(w * cmult(a[(i * 7) % kN], b[i])));
    return sum(losses);
  };
  expect_strategies_agree(pc, build);
  // Placement as such: with elementwise fusion the cmults run fused with σ or tanh (reading their
  // arguments in place, no placement needed; tests/test_fusion.cc).
  auto g = graph_with(1);
  const_cast<BatchedExecutor*>(batched(*g))->set_fusion(false);
  build(*g).value();
  bool products = false;
  for (const auto& grp : batched(*g)->batches()) {
    const std::string op = op_def(g->node(batched(*g)->members(grp)[0]).op).name;
    EXPECT_NE(op, "cmult");
    if (op != "matmul") continue;
    products = true;
    EXPECT_EQ(grp.size, kN);
    EXPECT_EQ(grp.gathered, 0u);
  }
  EXPECT_TRUE(products);
}

// Concatenations of vectors from all over memory (a parser's features) batch by pointer
// (BatchRule::by_pointer): each member's pieces are copied straight into the batch's block, and backward
// adds each member's part of the gradient straight into its pieces' gradients, also where several
// members share a piece (`absent`) or a member is off the loss's path. Nothing is gathered, and the
// product that consumes them batches as a view of their block.
TEST(AutobatchSchedule, ConcatenationsBatchByPointer) {
  ParameterCollection pc;
  const Model build = parser_features_model(pc);
  expect_strategies_agree(pc, build);
  auto g = graph_with(1);
  build(*g).value();
  bool concatenations = false, products = false;
  for (const auto& grp : batched(*g)->batches()) {
    const std::string op = op_def(g->node(batched(*g)->members(grp)[0]).op).name;
    if (op == "concatenate") {
      concatenations = true;
      EXPECT_EQ(grp.size, kParserFeatures);
      EXPECT_TRUE(grp.by_pointer);
      EXPECT_EQ(grp.gathered, 0u);
    }
    if (op == "matmul") {
      products = true;
      EXPECT_EQ(grp.size, kParserFeatures);
      EXPECT_EQ(grp.gathered, 0u);
    }
  }
  EXPECT_TRUE(concatenations);
  EXPECT_TRUE(products);
}

// ---- profiling ----

TEST(AutobatchProfiling, TimingTableAndComposition) {
  const int saved = profiling_flag;
  profiling_flag = 2;
  profile::reset();
  ::testing::internal::CaptureStderr();
  {
    auto g = graph_with(1);
    std::vector<Expression> ys;
    for (unsigned k = 0; k < 5; ++k) ys.push_back(tanh(input(*g, Dim({4}), std::vector<float>(4, 0.1f * k))));
    Expression loss = sum_elems(sum(ys));
    loss.value();
    g->backward(loss);
  }
  const std::string printed = ::testing::internal::GetCapturedStderr();
  const std::string table = profile::timing_table();
  profiling_flag = saved;
  profile::reset();
  EXPECT_NE(printed.find("[dynet] forward:"), std::string::npos) << printed;
  EXPECT_NE(printed.find("tanh {4} x5"), std::string::npos) << printed;
  EXPECT_NE(table.find("Timing Info:"), std::string::npos);
  EXPECT_NE(table.find("tanh"), std::string::npos);
  EXPECT_NE(table.find("(scheduling)"), std::string::npos);
  EXPECT_NE(table.find(" ns per node\n"), std::string::npos) << table;
}

TEST(AutobatchProfiling, ChromeTrace) {
  char path[] = "/tmp/dynet_trace_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  profile::reset();
  profile::set_trace_file(path);
  {
    auto g = graph_with(1);
    std::vector<Expression> ys;
    for (unsigned k = 0; k < 3; ++k) ys.push_back(logistic(input(*g, Dim({2}), std::vector<float>{0.5f, -0.1f * k})));
    Expression loss = sum_elems(sum(ys));
    loss.value();
    g->backward(loss, true);
  }
  profile::write_trace();
  profile::set_trace_file("");
  profile::reset();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  const std::string json = text.str();
  EXPECT_EQ(json.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u) << json;
  EXPECT_NE(json.find("\"name\":\"logistic x3\",\"cat\":\"forward\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"logistic x3\",\"cat\":\"backward\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"forward pass\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"dim\":\"{2}\""), std::string::npos) << json;
  EXPECT_EQ(json.substr(json.size() - 4), "\n]}\n");
}


// A chart parser's reads: features h_i = tanh(W x_i + b) (fused regions under autobatching), then scores
// dot(h_i, h_j) built before any read, then read one by one in no particular order. Each read computes
// what its score needs and nothing else (features of other scores stay uncomputed), its features' nodes
// batch with each other, and the values equal those of the simple executor.
TEST(MidGraphReads, ScoresReadOneByOneComputeWhatTheyNeed) {
  ParameterCollection pc;
  Parameter W = pc.add_parameters({8, 4});
  Parameter b = pc.add_parameters({8});
  constexpr unsigned kFeatures = 40, kScores = 60;
  std::mt19937 rng(3);
  std::vector<std::pair<unsigned, unsigned>> pairs;
  for (unsigned k = 0; k < kScores; ++k) pairs.emplace_back(rng() % kFeatures, rng() % kFeatures);
  std::vector<unsigned> order(kScores);
  for (unsigned k = 0; k < kScores; ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<float> reference;
  for (int strategy : {0, 1, 2}) {
    auto g = graph_with(strategy);
    std::vector<Expression> h, s;
    for (unsigned i = 0; i < kFeatures; ++i) {
      std::vector<float> x(4);
      for (unsigned q = 0; q < 4; ++q) x[q] = 0.02f * float(i) - 0.1f * float(q);  // distinct: equal nodes merge
      h.push_back(tanh(parameter(*g, W) * input(*g, {4}, x) + parameter(*g, b)));
    }
    for (auto [i, j] : pairs) s.push_back(dot_product(h[i], h[j]));
    std::vector<float> values(kScores);
    for (unsigned n = 0; n < kScores; ++n) {
      const unsigned k = order[n];
      const size_t batched_before = batched_nodes(*g);
      const bool fresh = !g->executor().computed(h[pairs[k].first].i) && !g->executor().computed(h[pairs[k].second].i) &&
                         pairs[k].first != pairs[k].second;
      values[k] = as_scalar(s[k].value());
      if (n == 0) {  // nothing else was read yet: only this score's two features are computed
        for (unsigned i = 0; i < kFeatures; ++i)
          EXPECT_EQ(g->executor().computed(h[i].i), i == pairs[k].first || i == pairs[k].second) << i;
        for (unsigned q = 0; q < kScores; ++q) EXPECT_EQ(g->executor().computed(s[q].i), q == k) << q;
      }
      if (strategy != 0 && fresh) EXPECT_GT(batched_nodes(*g), batched_before) << "score " << k;
    }
    if (strategy == 0)
      reference = values;
    else
      for (unsigned k = 0; k < kScores; ++k) EXPECT_NEAR(values[k], reference[k], 1e-5f) << "strategy " << strategy;
  }
}

// tanh(x_k) for k < n, summed; forward and backward.
void run_tanh_sum(ComputationGraph& g, unsigned n, float scale = 0.1f) {
  std::vector<Expression> ys;
  for (unsigned k = 0; k < n; ++k) ys.push_back(tanh(input(g, Dim({4}), std::vector<float>(4, scale * k))));
  Expression loss = sum_elems(sum(ys));
  loss.value();
  g.backward(loss, true);
}

uint64_t forward_nodes(const profile::Collector& c, const std::string& op) {
  uint64_t n = 0;
  for (const profile::OpStats& s : c.stats())
    if (s.op == op) n += s.nodes;
  return n;
}

TEST(Profiling, CollectorSeesOnlyWhatRunsWhileStarted) {
  profile::Collector c;
  {
    auto g = graph_with(0);
    run_tanh_sum(*g, 2);  // before start: not collected
  }
  EXPECT_FALSE(c.running());
  c.start();
  EXPECT_TRUE(profile::active());
  {
    auto g = graph_with(0);
    g->backward(logistic(sum_elems(input(*g, Dim({3}), std::vector<float>{1, 2, 3}))), true);
  }
  c.stop();
  {
    auto g = graph_with(0);
    run_tanh_sum(*g, 2);  // after stop: not collected
  }
  EXPECT_EQ(forward_nodes(c, "tanh"), 0u);
  EXPECT_EQ(forward_nodes(c, "logistic"), 1u);
  EXPECT_NE(c.table().find("logistic"), std::string::npos) << c.table();
  EXPECT_EQ(c.table().find("tanh"), std::string::npos) << c.table();
  // The simple executor's events carry each node's dim, forward and backward.
  std::ostringstream trace;
  c.write_chrome_trace(trace);
  EXPECT_NE(trace.str().find("\"cat\":\"forward\",\"ph\":\"X\""), std::string::npos);
  EXPECT_NE(trace.str().find("\"args\":{\"op\":\"sum_elems\",\"members\":1,\"dim\":\"{1}\""), std::string::npos)
      << trace.str();
  EXPECT_NE(trace.str().find("\"name\":\"input\",\"cat\":\"backward\""), std::string::npos) << trace.str();
  // Started again, it adds to what it has; reset() forgets.
  c.start();
  {
    auto g = graph_with(1);
    run_tanh_sum(*g, 3);
  }
  c.stop();
  EXPECT_EQ(forward_nodes(c, "tanh"), 3u);
  EXPECT_EQ(forward_nodes(c, "logistic"), 1u);
  const std::vector<profile::OpStats> stats = c.stats();
  EXPECT_EQ(stats.back().op, "(scheduling)");
  c.reset();
  EXPECT_TRUE(c.stats().empty());
  EXPECT_EQ(c.table().find("tanh"), std::string::npos);
}

TEST(Profiling, CollectorLeavesTheFlagsReportAlone) {
  const int saved = profiling_flag;
  profile::reset();
  {
    profile::Collector c;
    c.start();
    auto g = graph_with(0);
    run_tanh_sum(*g, 2);
  }  // destroyed while running: stops
  EXPECT_EQ(profile::timing_table().find("tanh"), std::string::npos);  // flag off: nothing for the exit report
  profiling_flag = 1;
  {
    profile::Collector c;
    c.start();
    auto g = graph_with(0);
    run_tanh_sum(*g, 2);
    c.stop();
    run_tanh_sum(*g, 2);
    EXPECT_EQ(forward_nodes(c, "tanh"), 2u);
  }
  const std::string table = profile::timing_table();
  profiling_flag = saved;
  profile::reset();
  EXPECT_NE(table.find("tanh"), std::string::npos) << table;  // the flag's report saw both
}

TEST(Profiling, CollectorKeepsAtMostItsTraceEvents) {
  profile::Collector c(true, 2);
  c.start();
  {
    auto g = graph_with(0);
    run_tanh_sum(*g, 4);
  }
  c.stop();
  std::ostringstream trace;
  c.write_chrome_trace(trace);
  EXPECT_NE(trace.str().find("trace truncated at 2 events"), std::string::npos) << trace.str();
  EXPECT_EQ(forward_nodes(c, "tanh"), 4u);  // the table counts on
}

// Collectors of every thread and of one thread, while graphs run in several threads.
TEST(ProfilingThreads, CollectorsWhileGraphsRunInThreads) {
  constexpr unsigned kThreads = 4, kRounds = 20;
  profile::Collector all;
  all.start();
  std::vector<uint64_t> own(kThreads);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &own] {
      profile::Collector mine(false);
      mine.start();
      for (unsigned r = 0; r < kRounds; ++r) {
        ComputationGraph g;  // not graph_with: that sets the process-wide flag
        if (t % 2) g.set_execution_strategy(1);
        run_tanh_sum(g, t + 1);
      }
      mine.stop();
      own[t] = forward_nodes(mine, "tanh");
    });
  // Read while the threads run.
  for (int k = 0; k < 20; ++k) (void)all.table();
  for (std::thread& th : threads) th.join();
  all.stop();
  uint64_t expected = 0;
  for (unsigned t = 0; t < kThreads; ++t) {
    EXPECT_EQ(own[t], uint64_t(kRounds) * (t + 1)) << "thread " << t;
    expected += uint64_t(kRounds) * (t + 1);
  }
  EXPECT_EQ(forward_nodes(all, "tanh"), expected);
}

}  // namespace
}  // namespace dynet
