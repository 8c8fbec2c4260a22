// Training from several threads over one shared ParameterCollection, each thread with its own graphs
// (docs/design.md, "Several graphs at once"): backward from any number of threads loses no gradient,
// update() from any thread applies each accumulated gradient exactly once, saving while training
// reads consistent values. scripts/test --sanitize runs these (suite "Threads") under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <thread>
#include <vector>

#include "dynet/expr.h"
#include "dynet/io.h"
#include "dynet/model.h"
#include "dynet/param-init.h"
#include "dynet/training.h"
#include "kernels/device/emulated.h"

#include "temp_dir.h"

namespace dynet {
namespace {

constexpr int kThreads = 4;

template <class F>
void in_threads(int n, F f) {
  std::vector<std::thread> ts;
  for (int t = 0; t < n; ++t) ts.emplace_back(f, t);
  for (auto& t : ts) t.join();
}

bool finite(const ParameterCollection& m) {
  for (const auto& p : m.parameters_list())
    for (size_t k = 0; k < p->dim.size(); ++k)
      if (!std::isfinite(p->values.v[k])) return false;
  for (const auto& p : m.lookup_parameters_list())
    for (size_t k = 0; k < p->all_dim.size(); ++k)
      if (!std::isfinite(p->all_values.v[k])) return false;
  return true;
}

// loss = Σ W + Σ E[row]: each backward adds exactly 1 to every gradient value it reaches, so sums
// stay exact integers whatever the order of accumulation.
Expression counting_loss(ComputationGraph& g, Parameter W, LookupParameter E, unsigned row) {
  return sum_elems(parameter(g, W)) + sum_elems(lookup(g, E, row));
}

// The CPU, and the emulated device: there backward holds the parameter gradients back and pushes them with
// one kernel per pass (detail::HeldGradients), and updates clear the gradients in their kernels.
std::vector<Device*> devices() { return {cpu_device(), emulated_device()}; }

TEST(Threads, BackwardFromManyThreadsLosesNoGradient) {
  for (Device* dev : devices()) {
    ParameterCollection m;
    Parameter W = m.add_parameters({3, 4}, ParameterInitConst(0.5f), "", dev);
    LookupParameter E = m.add_lookup_parameters(kThreads, {5}, ParameterInitConst(0.f), "", dev);
    constexpr int kSteps = 200;
    in_threads(kThreads, [&](int t) {
      for (int s = 0; s < kSteps; ++s) {
        ComputationGraph g;
        g.backward(counting_loss(g, W, E, unsigned(t)));
      }
    });
    for (size_t k = 0; k < W.dim().size(); ++k) EXPECT_EQ(W.gradients()->v[k], float(kThreads * kSteps)) << dev->name;
    const LookupParameterStorage& s = E.get_storage();
    EXPECT_EQ(s.non_zero_grads.size(), size_t(kThreads));
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(s.grads[t].v[4], float(kSteps)) << dev->name;
  }
}

// Threads run backward and update() (on one shared trainer) concurrently: with SGD at rate 1 and no
// clipping every accumulated gradient moves the values by exactly its size once, so after a last
// update W = 0.5 - (number of backward calls) exactly. A lost, doubled or torn gradient shows.
TEST(Threads, UpdatesApplyEachGradientExactlyOnce) {
  for (Device* dev : devices()) {
    ParameterCollection m;
    Parameter W = m.add_parameters({8}, ParameterInitConst(0.5f), "", dev);
    LookupParameter E = m.add_lookup_parameters(kThreads, {3}, ParameterInitConst(0.f), "", dev);
    SimpleSGDTrainer sgd(m, 1.f);
    sgd.clipping_enabled = false;
    const int steps = dev == cpu_device() ? 3000 : 500;
    in_threads(kThreads, [&](int t) {
      for (int s = 0; s < steps; ++s) {
        ComputationGraph g;
        g.backward(counting_loss(g, W, E, unsigned(t)));
        if (s % (t + 1) == 0) sgd.update();  // threads update at different rates
      }
    });
    sgd.update();
    for (size_t k = 0; k < W.dim().size(); ++k) EXPECT_EQ(W.values()->v[k], 0.5f - kThreads * steps) << dev->name;
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(E.get_storage().values[t].v[0], -float(steps)) << dev->name;
    EXPECT_EQ(W.gradients()->v[0], 0.f) << dev->name;
  }
}

// A small classifier trained by four threads with one Adam trainer (clipping on, sparse embedding
// updates), each step a new graph over a few words: no crash, finite values, every update counted,
// and it learns. (Without the parameter lock this crashed or corrupted the sparse-row bookkeeping.)
TEST(Threads, TrainOneModelFromSeveralThreads) {
  ParameterCollection m;
  constexpr unsigned kWords = 64, kDim = 16, kHidden = 24, kLabels = 4;
  LookupParameter E = m.add_lookup_parameters(kWords, {kDim});
  Parameter W1 = m.add_parameters({kHidden, kDim}), b1 = m.add_parameters({kHidden});
  Parameter W2 = m.add_parameters({kLabels, kHidden}), b2 = m.add_parameters({kLabels});
  AdamTrainer adam(m, 0.01f);
  auto word_loss = [&](ComputationGraph& g, unsigned word) {
    Expression h = tanh(parameter(g, W1) * lookup(g, E, word) + parameter(g, b1));
    return pickneglogsoftmax(parameter(g, W2) * h + parameter(g, b2), word % kLabels);  // label = word mod 4
  };
  auto total_loss = [&] {
    ComputationGraph g;
    std::vector<Expression> losses;
    for (unsigned w = 0; w < kWords; ++w) losses.push_back(word_loss(g, w));
    return as_scalar(sum(losses).value());
  };
  const float before = total_loss();
  constexpr int kSteps = 1000;
  in_threads(kThreads, [&](int t) {
    for (int s = 0; s < kSteps; ++s) {
      ComputationGraph g;
      std::vector<Expression> losses;
      for (unsigned k = 0; k < 4; ++k) losses.push_back(word_loss(g, (unsigned(t) * 16 + unsigned(s) * 4 + k) % kWords));
      g.backward(sum(losses));
      adam.update();
    }
  });
  EXPECT_EQ(adam.updates, double(kThreads * kSteps));
  EXPECT_TRUE(finite(m));
  EXPECT_LT(total_loss(), 0.1f * before);
}

// Autobatched graphs on several threads at once (the batched executor's per-thread buffers, executors
// moving between threads through the spare list, recycled gradient memory): 64 LSTM sequences per graph,
// so that the cells' batches take the paths of many columns and recycle their gradients. Each graph's
// loss equals the same graph's under the simple executor on one thread, and the gradients accumulated
// from every thread equal the sum of those graphs' gradients.
TEST(Threads, AutobatchedGraphsOnSeveralThreads) {
  constexpr unsigned kWords = 50, kInput = 16, kHidden = 64, kLabels = 5, kSequences = 64, kGraphs = 6;
  ParameterCollection m;
  LookupParameter E = m.add_lookup_parameters(kWords, {kInput});
  Parameter Wx = m.add_parameters({4 * kHidden, kInput}), Wh = m.add_parameters({4 * kHidden, kHidden});
  Parameter b = m.add_parameters({4 * kHidden}), out = m.add_parameters({kLabels, kHidden});
  // Graph `k` of thread `t`: its sequences' words and lengths (2 to 5) follow from t and k.
  auto loss = [&](ComputationGraph& g, unsigned t, unsigned k) {
    const Expression wx = parameter(g, Wx), wh = parameter(g, Wh), bias = parameter(g, b), o = parameter(g, out);
    std::vector<Expression> losses;
    for (unsigned s = 0; s < kSequences; ++s) {
      Expression h = zeros(g, {kHidden}), c = zeros(g, {kHidden});
      for (unsigned i = 0, n = 2 + (s + k) % 4; i < n; ++i) {
        const unsigned word = (t * 31 + k * 17 + s * 7 + i * 3) % kWords;
        const Expression gates = vanilla_lstm_gates(lookup(g, E, word), h, wx, wh, bias);
        c = vanilla_lstm_c(c, gates);
        h = vanilla_lstm_h(c, gates);
        losses.push_back(pickneglogsoftmax(o * h, word % kLabels));
      }
    }
    return sum(losses);
  };
  auto gradients = [&] {
    std::vector<std::vector<float>> g;
    for (const auto& p : m.parameters_list()) g.push_back(as_vector(p->g));
    for (const auto& p : m.lookup_parameters_list()) g.push_back(as_vector(p->all_grads));
    return g;
  };
  // The references, one graph at a time under the simple executor; the gradients summed over all.
  float want[kThreads][kGraphs];
  for (unsigned t = 0; t < kThreads; ++t)
    for (unsigned k = 0; k < kGraphs; ++k) {
      ComputationGraph g;
      g.renew(0);
      const Expression l = loss(g, t, k);
      want[t][k] = as_scalar(l.value());
      g.backward(l);
    }
  const auto want_gradients = gradients();
  m.reset_gradient();
  std::atomic<int> wrong{0};
  in_threads(kThreads, [&](int t) {
    for (unsigned k = 0; k < kGraphs; ++k) {
      ComputationGraph g;
      g.renew(1 + int(t + k) % 2);  // agenda and depth strategies at once
      const Expression l = loss(g, unsigned(t), k);
      if (!(std::fabs(as_scalar(l.value()) - want[t][k]) <= 1e-4f * std::fabs(want[t][k]))) ++wrong;
      g.backward(l);
    }
  });
  EXPECT_EQ(wrong.load(), 0);
  const auto got = gradients();
  ASSERT_EQ(got.size(), want_gradients.size());
  for (size_t p = 0; p < got.size(); ++p)
    for (size_t i = 0; i < got[p].size(); ++i)
      ASSERT_NEAR(got[p][i], want_gradients[p][i], 1e-4f * (1 + std::fabs(want_gradients[p][i])))
          << "parameter " << p << " element " << i;
}

// Saving while other threads train reads values with no update half done: every file loads.
TEST(Threads, SaveWhileTraining) {
  const test::TempDir tmp;
  ParameterCollection m;
  Parameter W = m.add_parameters({6, 6});
  SimpleSGDTrainer sgd(m, 0.01f);
  std::atomic<bool> done{false};
  std::thread saver([&] {
    for (int k = 0; !done || k < 3; ++k) {
      TextFileSaver(tmp.path("m.txt")).save(m);
      ParameterCollection loaded;
      loaded.add_parameters({6, 6});
      TextFileLoader(tmp.path("m.txt")).populate(loaded);
    }
  });
  in_threads(2, [&](int t) {
    for (int s = 0; s < 100; ++s) {
      ComputationGraph g;
      Expression x = input(g, {6}, std::vector<float>(6, float(t + 1)));
      g.backward(squared_norm(parameter(g, W) * x));
      sgd.update();
    }
  });
  done = true;
  saver.join();
  EXPECT_TRUE(finite(m));
}

}  // namespace
}  // namespace dynet
