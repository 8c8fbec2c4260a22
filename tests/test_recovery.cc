// After a failed step the graph and the model stay usable: non-finite gradients are refused before
// any value changes (with or without clipping) and cleared; indices read through pointers that went
// bad fail their node only, and backward uses the indices the forward read; dims out of range throw;
// a node that failed (singular, bad index, out of memory) fails alone, again and again, and leaves the
// rest of the graph and the model working.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "dynet/expr.h"
#include "dynet/model.h"
#include "dynet/param-init.h"
#include "dynet/training.h"
#include "op_test_util.h"

namespace dynet {
namespace {

using test::message_of;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> values_of(Parameter p) { return as_vector(*p.values()); }

// loss = Σ W ⊙ x: dloss/dW = x, so x chooses the gradient.
void accumulate(Parameter W, const std::vector<float>& x) {
  ComputationGraph g;
  g.backward(sum_elems(cmult(parameter(g, W), input(g, W.dim(), x))));
}

// With clipping off DyNet wrote NaN into the parameters silently; with it on, it threw but kept the
// bad gradient, so every later update threw again.
TEST(Recovery, NonFiniteGradientsAreRefusedNamedAndCleared) {
  for (bool clipping : {false, true}) {
    for (float bad : {kNaN, kInf, -kInf}) {
      SCOPED_TRACE(std::to_string(clipping) + " " + std::to_string(bad));
      ParameterCollection m;
      Parameter ok = m.add_parameters({3}, ParameterInitConst(1.f), "ok");
      Parameter W = m.add_parameters({3}, ParameterInitConst(1.f), "W");
      AdamTrainer adam(m, 0.1f);
      adam.clipping_enabled = clipping;
      accumulate(ok, {1.f, 1.f, 1.f});
      accumulate(W, {1.f, bad, 1.f});
      const std::vector<float> before_ok = values_of(ok), before_W = values_of(W);
      const std::string e = message_of([&] { adam.update(); });
      EXPECT_NE(e.find("Magnitude of gradient is bad"), std::string::npos) << e;
      EXPECT_NE(e.find("/W"), std::string::npos) << e;
      EXPECT_EQ(e.find("/ok"), std::string::npos) << e;
      // Refused before anything changed; the gradients are gone.
      EXPECT_EQ(values_of(ok), before_ok);
      EXPECT_EQ(values_of(W), before_W);
      EXPECT_EQ(adam.updates, 0);
      EXPECT_FALSE(W.get_storage().nonzero_grad);
      EXPECT_EQ(as_vector(*W.gradients()), std::vector<float>(3, 0.f));
      // The next step trains normally.
      accumulate(W, {1.f, 1.f, 1.f});
      adam.update();
      EXPECT_EQ(adam.updates, 1);
      for (float v : values_of(W)) EXPECT_NEAR(v, 0.9f, 1e-6);
    }
  }
}

TEST(Recovery, NonFiniteLookupRowIsNamed) {
  ParameterCollection m;
  LookupParameter E = m.add_lookup_parameters(5, {2}, ParameterInitConst(0.f), "E");
  SimpleSGDTrainer sgd(m);
  sgd.clipping_enabled = false;
  {
    ComputationGraph g;
    Expression loss = sum_elems(cmult(lookup(g, E, 3u), input(g, {2}, {kNaN, 1.f})));
    g.backward(loss);
  }
  const std::string e = message_of([&] { sgd.update(); });
  EXPECT_NE(e.find("/E"), std::string::npos) << e;
  EXPECT_TRUE(E.get_storage().non_zero_grads.empty());
  EXPECT_EQ(as_vector(E.get_storage().values[3]), (std::vector<float>{0.f, 0.f}));
}

// Gradients whose squares overflow a float (|g| > 1.8e19) are finite: clipping scales them, it does
// not refuse them.
TEST(Recovery, HugeFiniteGradientsAreClippedNotRefused) {
  ParameterCollection m;
  Parameter W = m.add_parameters({2}, ParameterInitConst(0.f));
  SimpleSGDTrainer sgd(m, 1.f);
  accumulate(W, {3e20f, 4e20f});
  sgd.update();  // norm 5e20 -> scaled to the threshold 5
  EXPECT_NEAR(values_of(W)[0], -3.f, 1e-5);
  EXPECT_NEAR(values_of(W)[1], -4.f, 1e-5);
}

// A lookup through a pointer whose index went out of range fails that node only; put back in range,
// it computes. Backward sends the gradient to the row the forward read, whatever the pointer says now.
TEST(Recovery, PointerIndicesThatGoBadFailTheirNodeOnly) {
  ParameterCollection m;
  LookupParameter E = m.add_lookup_parameters(4, {2}, ParameterInitFromVector({1, 2, 3, 4, 5, 6, 7, 8}));
  unsigned index = 2;
  ComputationGraph g;
  Expression other = input(g, {2}, {1.f, 1.f});
  Expression row = lookup(g, E, &index);  // checked when made and again at forward time
  index = 9;
  EXPECT_THROW(row.value(), std::invalid_argument);
  EXPECT_EQ(as_vector(other.value()), (std::vector<float>{1.f, 1.f}));
  index = 1;
  EXPECT_EQ(as_vector(row.value()), (std::vector<float>{3.f, 4.f}));
  Expression loss = dot_product(row, other);
  loss.value();
  index = 1000;  // after the forward: the gradient still goes to row 1
  g.backward(loss);
  const LookupParameterStorage& s = E.get_storage();
  EXPECT_EQ(s.non_zero_grads.size(), 1u);
  EXPECT_EQ(s.non_zero_grads.count(1), 1u);
  EXPECT_EQ(as_vector(s.grads[1]), (std::vector<float>{1.f, 1.f}));

  // pick through a pointer: the same.
  unsigned which = 0;
  Expression x = input(g, {3}, {0.5f, 1.5f, 2.5f});
  Expression picked = pick(x, &which);
  which = 7;
  EXPECT_THROW(picked.value(), std::invalid_argument);
  which = 2;
  EXPECT_EQ(as_scalar(picked.value()), 2.5f);
}

// Under autobatching, a batch whose kernel fails reruns its members alone, so that the error is the
// failing node's own (pick's message names its input {3}, not the batched {3X6}); the members before it
// stay computed, and once the index is put back the graph gives the simple executor's loss and gradients.
// Likewise a NaN found by check_validity names the member whose value it is.
TEST(Recovery, AFailedBatchNamesItsMembersShape) {
  ParameterCollection m;
  Parameter W = m.add_parameters({3, 4});
  LookupParameter E = m.add_lookup_parameters(5, {4});
  auto run = [&](int strategy, bool fail) {
    m.reset_gradient();
    ComputationGraph g;
    g.renew(strategy);
    std::vector<unsigned> picks(6, 1);
    std::vector<Expression> losses;
    for (unsigned k = 0; k < 6; ++k)
      losses.push_back(pick(tanh(parameter(g, W) * lookup(g, E, k % 5)), &picks[k]));
    const Expression loss = sum(losses);
    if (fail) {
      picks[4] = 7;
      const std::string e = message_of([&] { loss.value(); });
      EXPECT_NE(e.find("pick: index 7 out of range for dim 0 (size 3) of input {3}"), std::string::npos) << e;
      EXPECT_EQ(e.find("X6"), std::string::npos) << e;
      picks[4] = 1;
    }
    std::vector<float> out{as_scalar(loss.value())};
    g.backward(loss);
    for (float v : as_vector(*W.gradients())) out.push_back(v);
    for (float v : as_vector(E.get_storage().all_grads)) out.push_back(v);
    return out;
  };
  const std::vector<float> want = run(0, false);
  for (int strategy : {1, 2}) {
    const std::vector<float> got = run(strategy, true);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << "strategy " << strategy << " " << i;
    // With check_validity, the member whose value is NaN is the node named.
    ComputationGraph g;
    g.renew(strategy);
    g.set_check_validity(true);
    std::vector<Expression> logs;
    for (int k = 0; k < 6; ++k) logs.push_back(log(input(g, Dim({3}), {1.f, 2.f, k == 3 ? -1.f : 3.f})));
    const std::string e = message_of([&] { sum(logs).value(); });
    EXPECT_NE(e.find("NaN or Inf detected in the value of node " + std::to_string(logs[3].i) + " (log {3})"),
              std::string::npos)
        << e;
  }
}

// sparsemax_loss through a support vector that changes between forward and backward: the gradient is
// the one of the forward's support (it read past the input before).
TEST(Recovery, SparsemaxLossKeepsTheSupportOfItsForward) {
  std::vector<unsigned> support = {0};
  ComputationGraph g;
  Expression x = input(g, {3}, {2.f, 0.f, -1.f});  // sparsemax = {1, 0, 0}
  Expression loss = sparsemax_loss(x, &support);
  EXPECT_EQ(as_scalar(loss.value()), 0.f);
  support = {0, 1, 2, 40, 41};
  g.backward(loss, true);
  EXPECT_EQ(as_vector(x.gradient()), (std::vector<float>{0.f, 0.f, 0.f}));  // sparsemax - q, q = e_0
}

// softmax along a dim past the rank returned all ones.
TEST(Recovery, DimArgumentsPastTheRankThrow) {
  ComputationGraph g;
  Expression v = input(g, {3}, {1.f, 2.f, 3.f});
  Expression m = input(g, {2, 2}, {1.f, 2.f, 3.f, 4.f});
  EXPECT_THROW(softmax(v, 1), std::invalid_argument);
  EXPECT_THROW(softmax(m, 2), std::invalid_argument);
  EXPECT_THROW(max_dim(m, 2), std::invalid_argument);
  EXPECT_THROW(logsumexp_dim(m, 2), std::invalid_argument);
  EXPECT_THROW(pick(m, 0u, 2), std::invalid_argument);
  EXPECT_THROW(pick_range(m, 0, 1, 2), std::invalid_argument);
  EXPECT_THROW(kmax_pooling(m, 1, 2), std::invalid_argument);
  EXPECT_THROW(dropout_dim(m, 2, 0.5f), std::invalid_argument);
  EXPECT_THROW(cumsum(m, 3), std::invalid_argument);  // dim 2 (== rank) is an implicit 1, as in DyNet
  EXPECT_THROW(sum_dim(m, {3}), std::invalid_argument);
  EXPECT_THROW(hinge_dim(m, {0u, 1u}, 2), std::invalid_argument);
  // The graph is still fine.
  EXPECT_NEAR(as_vector(softmax(m, 1).value())[0], 1.f / (1.f + std::exp(2.f)), 1e-6);
}

// Each way a node can fail (a singular inverse, an index read through a pointer gone bad, a value too
// large to allocate) fails that node, and the losses that read it, every time it is asked for, with a
// clear error; nothing else is affected. Nodes made after it compute, backward through them gives the
// exact gradient, a failed backward adds no gradient, and the trainer updates as if nothing had failed.
TEST(Recovery, FailedNodesLeaveTheGraphAndTheModelUsable) {
  ParameterCollection m;
  Parameter W = m.add_parameters({2}, ParameterInitFromVector({1.f, 2.f}));
  LookupParameter E = m.add_lookup_parameters(3, {2}, ParameterInitFromVector({1, 2, 3, 4, 5, 6}));
  SimpleSGDTrainer sgd(m, 0.5f);
  unsigned index = 1;
  ComputationGraph g;
  Expression w = parameter(g, W);
  Expression singular = inverse(input(g, Dim({2, 2}), {1.f, 2.f, 2.f, 4.f}));
  Expression row = lookup(g, E, &index);
  Expression huge = zeros(g, Dim({1u << 30, 1u << 28}));  // 2^58 floats
  const std::vector<std::pair<const char*, Expression>> failing = {
      {"inverse", sum_elems(w) + sum_elems(singular)},
      {"lookup", dot_product(w, row)},
      {"memory", sum_elems(w) + sum_elems(huge)}};
  index = 7;  // out of range: the lookup fails at forward time
  for (int round = 0; round < 2; ++round) {
    for (const auto& [what, loss] : failing) {
      const std::string e = message_of([&] { loss.value(); });
      EXPECT_FALSE(e.empty()) << what;
      EXPECT_EQ(message_of([&] { g.backward(loss); }).empty(), false) << what;
    }
    EXPECT_NE(message_of([&] { singular.value(); }).find("inverse"), std::string::npos);
    EXPECT_NE(message_of([&] { row.value(); }).find("7"), std::string::npos);
    EXPECT_FALSE(message_of([&] { huge.value(); }).empty());
    // No failed backward left a gradient behind.
    EXPECT_EQ(as_vector(*W.gradients()), (std::vector<float>{0.f, 0.f}));
    EXPECT_TRUE(E.get_storage().non_zero_grads.empty());
    // A loss made after the failures: value, exact gradient, update.
    Expression ok = dot_product(w, input(g, {2}, {3.f, -1.f}));
    EXPECT_EQ(as_scalar(ok.value()), round == 0 ? 1.f : 1.f - 0.5f * 10.f);
    g.backward(ok);
    EXPECT_EQ(as_vector(*W.gradients()), (std::vector<float>{3.f, -1.f}));
    sgd.update();
    EXPECT_EQ(values_of(W), round == 0 ? (std::vector<float>{-0.5f, 2.5f}) : (std::vector<float>{-2.f, 3.f}));
    // The parameter node computed before the update keeps the old value until the graph is asked again.
    g.invalidate();
  }
  // Fixed, the lookup computes in the same graph.
  index = 2;
  EXPECT_EQ(as_scalar(dot_product(w, row).value()), -2.f * 5.f + 3.f * 6.f);
}

}  // namespace
}  // namespace dynet
