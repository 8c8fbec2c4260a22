// Elementwise fusion in the batched executor (exec/fusion.h): fused, unfused and simple execution give
// the same values and gradients; fused intermediates still answer value() and gradient(); a node used
// outside its chain is not fused away; mid-graph reads and checkpoints keep working.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "dynet/expr.h"
#include "exec/batched.h"
#include "exec/fusion.h"
#include "tree_lstm_model.h"

namespace dynet {
namespace {

// Strategy 0 (simple), or 1/2 with fusion on or off.
struct Mode {
  int strategy;
  bool fusion;
  std::string str() const { return "strategy " + std::to_string(strategy) + (fusion ? " fused" : " unfused"); }
};
const Mode kModes[] = {{0, false}, {1, false}, {1, true}, {2, false}, {2, true}};

std::unique_ptr<ComputationGraph> graph(const Mode& m) {
  auto g = std::make_unique<ComputationGraph>();
  g->renew(m.strategy);
  if (auto* e = dynamic_cast<const BatchedExecutor*>(&g->executor()))
    const_cast<BatchedExecutor*>(e)->set_fusion(m.fusion);
  return g;
}

const BatchedExecutor* batched(const ComputationGraph& g) { return dynamic_cast<const BatchedExecutor*>(&g.executor()); }

// Members of fused batches (region outputs) in the graph's batches.
size_t fused_members(const ComputationGraph& g) {
  size_t n = 0;
  if (const BatchedExecutor* e = batched(g))
    for (const auto& b : e->batches())
      if (b.program != ~0u) n += b.size;
  return n;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                 double tol = 2e-5) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k)
    ASSERT_NEAR(got[k], want[k], tol * (1 + std::fabs(want[k]))) << what << " element " << k;
}

struct Outcome {
  float loss = 0;
  std::vector<std::vector<float>> grads;
  size_t fused = 0;
};

using Model = std::function<Expression(ComputationGraph&)>;

Outcome run(ParameterCollection& pc, const Mode& m, const Model& build) {
  pc.reset_gradient();
  auto g = graph(m);
  Expression loss = build(*g);
  Outcome out;
  out.loss = as_scalar(loss.value());
  g->backward(loss);
  for (auto& p : pc.parameters_list()) out.grads.push_back(as_vector(p->g));
  for (auto& p : pc.lookup_parameters_list()) out.grads.push_back(as_vector(p->all_grads));
  out.fused = fused_members(*g);
  pc.reset_gradient();
  return out;
}

// Every mode agrees with the simple executor; the fused modes fuse something.
void expect_modes_agree(ParameterCollection& pc, const Model& build) {
  const Outcome want = run(pc, kModes[0], build);
  for (const Mode& m : kModes) {
    const Outcome got = run(pc, m, build);
    EXPECT_NEAR(got.loss, want.loss, 2e-5 * (1 + std::fabs(want.loss))) << m.str();
    ASSERT_EQ(got.grads.size(), want.grads.size());
    for (size_t p = 0; p < want.grads.size(); ++p) expect_near(got.grads[p], want.grads[p], m.str() + " parameter " + std::to_string(p));
    if (m.fusion)
      EXPECT_GT(got.fused, 0u) << m.str();
    else
      EXPECT_EQ(got.fused, 0u) << m.str();
  }
}

// An LSTM written with primitive ops over several sequences of different lengths in one graph.
Model lstm_model(ParameterCollection& pc) {
  constexpr unsigned kIn = 3, h = 5;
  Parameter wx = pc.add_parameters({4 * h, kIn}), wh = pc.add_parameters({4 * h, h}), b = pc.add_parameters({4 * h});
  Parameter ow = pc.add_parameters({1, h});
  return [=](ComputationGraph& g) {
    Expression WX = parameter(g, wx), WH = parameter(g, wh), B = parameter(g, b), OW = parameter(g, ow);
    std::vector<Expression> losses;
    for (unsigned s = 0; s < 5; ++s) {
      Expression hp = zeros(g, {h}), cp = zeros(g, {h});
      for (unsigned t = 0; t < 2 + s % 3; ++t) {
        std::vector<float> xv(kIn);
        for (unsigned k = 0; k < kIn; ++k) xv[k] = std::sin(0.7f * float(s * 7 + t * 3 + k));
        Expression gates = affine_transform({B, WX, input(g, {kIn}, xv), WH, hp});
        Expression i = logistic(pick_range(gates, 0, h)), f = logistic(pick_range(gates, h, 2 * h));
        Expression o = logistic(pick_range(gates, 2 * h, 3 * h)), u = tanh(pick_range(gates, 3 * h, 4 * h));
        cp = cmult(f, cp) + cmult(i, u);
        hp = cmult(o, tanh(cp));
      }
      losses.push_back(square(OW * hp));
    }
    return sum(losses);
  };
}

TEST(Fusion, TreeLSTMAgreesWithUnfusedAndSimple) {
  ParameterCollection pc;
  expect_modes_agree(pc, test::tree_lstm(pc, 6, 4));
}

// Cells wide enough that a batch's gates span whole chunks of the gradient block: the fused backward
// writes those gates' gradients instead of adding to zeroed memory (BatchedExecutor::claim_interior),
// the members at the ends of the span add as before.
TEST(Fusion, WideTreeLSTMAgreesWithUnfusedAndSimple) {
  ParameterCollection pc;
  expect_modes_agree(pc, test::tree_lstm(pc, 128, 24));
}

// On devices other than the CPU the regions run fused_kernels.cc: one launch per batch each way.
TEST(Fusion, TreeLSTMOnDevicesAgreesWithUnfusedAndSimple) {
  for (Device* dev : test::test_devices()) {
    SCOPED_TRACE(dev->name);
    ParameterCollection pc;
    expect_modes_agree(pc, test::tree_lstm(pc, 6, 4, dev));
  }
}

TEST(Fusion, LSTMChainAgreesWithUnfusedAndSimple) {
  ParameterCollection pc;
  expect_modes_agree(pc, lstm_model(pc));
}

// VanillaLSTMBuilder's cell ops on devices other than the CPU: each step's vanilla_lstm_c and vanilla_lstm_h
// are one region (its gates an input read by quarter), the steps of all sequences batching as regions; the
// CPU keeps its cell kernels. A sequence's last c, read by nothing outside its cell, is kept all the same, so
// that its cell batches with the other sequences' cells of that step. Several sequences of different lengths
// (2, 3, 4, 2, 3 steps), as lstm_model above.
TEST(Fusion, VanillaLSTMCellsFuseOnDevices) {
  constexpr unsigned kIn = 3, h = 5, kSeqs = 5;
  for (Device* dev : test::test_devices()) {
    SCOPED_TRACE(dev->name);
    test::DefaultDevice on(dev);
    ParameterCollection pc;
    Parameter wx = pc.add_parameters({4 * h, kIn}), wh = pc.add_parameters({4 * h, h}), b = pc.add_parameters({4 * h});
    Parameter ow = pc.add_parameters({1, h});
    std::vector<Expression> last_c;
    const Model build = [&](ComputationGraph& g) {
      Expression WX = parameter(g, wx), WH = parameter(g, wh), B = parameter(g, b), OW = parameter(g, ow);
      std::vector<Expression> losses;
      last_c.clear();
      for (unsigned s = 0; s < kSeqs; ++s) {
        Expression hp = zeros(g, {h}), cp = zeros(g, {h});
        for (unsigned t = 0; t < 2 + s % 3; ++t) {
          std::vector<float> xv(kIn);
          for (unsigned k = 0; k < kIn; ++k) xv[k] = std::sin(0.7f * float(s * 7 + t * 3 + k));
          Expression gates = vanilla_lstm_gates(input(g, {kIn}, xv), hp, WX, WH, B);
          cp = vanilla_lstm_c(cp, gates);
          hp = vanilla_lstm_h(cp, gates);
        }
        last_c.push_back(cp);
        losses.push_back(square(OW * hp));
      }
      return sum(losses);
    };
    expect_modes_agree(pc, build);
    auto gradients_of_last_c = [&](const Mode& m) {
      auto g = graph(m);
      Expression loss = build(*g);
      loss.value();
      g->backward(loss);
      std::vector<std::vector<float>> out;
      for (const Expression& c : last_c) out.push_back(as_vector(c.gradient()));
      if (m.fusion) {
        size_t cells = 0, batches = 0;
        for (const auto& bt : batched(*g)->batches())
          if (bt.program != ~0u) cells += batched(*g)->nodes_computed(bt), ++batches;
        EXPECT_EQ(cells, 2 * (2 + 3 + 4 + 2 + 3)) << "every c and h of the " << kSeqs << " sequences";
        EXPECT_EQ(batches, 4u) << "one batch of cells per step, a sequence's last one included";
      }
      pc.reset_gradient();
      return out;
    };
    const auto want = gradients_of_last_c(kModes[0]);
    for (const Mode& m : kModes) {
      const auto got = gradients_of_last_c(m);
      for (size_t s = 0; s < kSeqs; ++s) expect_near(got[s], want[s], m.str() + " last c of sequence " + std::to_string(s));
    }
  }
}

// A region batch's member arrays go to a device by value where each column's pointers lie evenly apart.
TEST(Fusion, MemberArraysAreStridedOnlyWhereEvenlyApart) {
  float block[64] = {};
  // Two columns of 4 members: column 0 steps by 6 floats, column 1 by -2; then one shared by all (step 0).
  std::vector<float*> p = {block + 10, block + 40, block + 16, block + 38, block + 22, block + 36, block + 28, block + 34};
  fusion::MemberArray<float> a;
  ASSERT_TRUE(fusion::strided(p.data(), 4, 2, a));
  for (size_t j = 0; j < 4; ++j)
    for (unsigned q = 0; q < 2; ++q) EXPECT_EQ(a.base[q] + long(j) * a.stride[q], p[j * 2 + q]) << j << " " << q;
  EXPECT_EQ(a.list, nullptr);
  std::vector<float*> shared(4, block + 5);
  ASSERT_TRUE(fusion::strided(shared.data(), 4, 1, a));
  EXPECT_EQ(a.stride[0], 0);
  auto refused = [&](std::vector<float*> ptrs, unsigned columns) {
    return !fusion::strided(ptrs.data(), ptrs.size() / columns, columns, a);
  };
  EXPECT_TRUE(refused({block, block + 4, block + 9}, 1));               // uneven
  EXPECT_TRUE(refused({block, nullptr, block + 8}, 1));                 // a member without one
  EXPECT_TRUE(refused(std::vector<float*>(9, block), 9));               // more columns than go by value
  EXPECT_TRUE(refused({block, reinterpret_cast<float*>(reinterpret_cast<char*>(block) + 2)}, 1));  // not whole floats
}

// A small chain over several examples whose intermediates the tests below read.
struct Chain {
  std::vector<Expression> xs, gates, mids, outs;
  Expression loss;
};
Chain build_chain(ComputationGraph& g, Parameter w, Device* dev) {
  Chain c;
  Expression W = parameter(g, w);
  std::vector<Expression> terms;
  for (unsigned k = 0; k < 4; ++k) {
    c.xs.push_back(input(g, {3}, std::vector<float>{0.1f * k, -0.4f, 0.3f + 0.2f * k}, dev));
    c.gates.push_back(W * c.xs.back());                   // 8: two halves of 4
    Expression a = logistic(pick_range(c.gates.back(), 0, 4));
    c.mids.push_back(tanh(pick_range(c.gates.back(), 4, 8)));  // fused away: only read inside
    c.outs.push_back(cmult(a, c.mids.back()) + a);  // an output read inside its region too (tanh)
    terms.push_back(sum_elems(c.outs.back()) + sum_elems(tanh(c.outs.back())));
  }
  c.loss = sum(terms);
  return c;
}

// value() and gradient() of fused intermediates (none of which has memory after the forward pass)
// equal the simple executor's, before and after a node outside the region starts using one of them;
// so do the gradients of region outputs that are also read inside their region. On every device.
TEST(Fusion, IntermediatesAnswerValueAndGradient) {
  std::vector<Device*> devices = test::test_devices();
  devices.insert(devices.begin(), cpu_device());
  for (Device* dev : devices) {
    SCOPED_TRACE(dev->name);
    ParameterCollection pc;
    Parameter w = pc.add_parameters({8, 3}, 0.f, "", dev);
    auto read = [&](const Mode& m, bool extend) {
      pc.reset_gradient();
      auto g = graph(m);
      Chain c = build_chain(*g, w, dev);
      Expression loss = c.loss;
      loss.value();
      if (m.fusion) {
        EXPECT_GT(fused_members(*g), 0u);
        EXPECT_FALSE(g->executor().computed(c.mids[0].i)) << "the intermediate was not fused away";
      }
      std::vector<std::vector<float>> out;
      for (auto& e : c.mids) out.push_back(as_vector(e.value()));  // computed now, through the ordinary path
      if (extend) loss = loss + sum_elems(cmult(c.mids[1], c.mids[2]));  // the intermediates get a reader outside
      loss.value();
      g->backward(loss, true);
      for (auto& e : c.mids) out.push_back(as_vector(e.gradient()));
      for (auto& e : c.outs) out.push_back(as_vector(e.gradient()));
      for (auto& e : c.gates) out.push_back(as_vector(e.gradient()));
      for (auto& e : c.xs) out.push_back(as_vector(e.gradient()));
      out.push_back(as_vector(w.get_storage().g));
      out.push_back({as_scalar(loss.value())});
      return out;
    };
    for (bool extend : {false, true}) {
      const auto want = read(kModes[0], extend);
      for (const Mode& m : kModes) {
        const auto got = read(m, extend);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < want.size(); ++k)
          expect_near(got[k], want[k], m.str() + (extend ? " extended" : "") + " read " + std::to_string(k));
      }
    }
  }
}

// A node of a chain that is also used outside it stays a region output (computed, with a value of its
// own); the edge into the outside consumer is not fused.
TEST(Fusion, IntermediateUsedOutsideStaysAnOutput) {
  ParameterCollection pc;
  Parameter w = pc.add_parameters({4, 2});
  Model build = [&](ComputationGraph& g) {
    Expression W = parameter(g, w);
    std::vector<Expression> terms;
    for (unsigned k = 0; k < 3; ++k) {
      Expression x = W * input(g, {2}, std::vector<float>{0.5f - k, 0.25f * k});
      Expression t = tanh(x);
      Expression y = cmult(logistic(x), t);
      terms.push_back(sum_elems(y) + dot_product(t, t));  // t is read outside the chain too
    }
    return sum(terms);
  };
  expect_modes_agree(pc, build);
  auto g = graph({1, true});
  Expression W = parameter(*g, w);
  Expression x = W * input(*g, {2}, std::vector<float>{0.5f, 0.25f});
  Expression t = tanh(x), y = cmult(logistic(x), t);
  Expression loss = sum_elems(y) + dot_product(t, t);
  loss.value();
  EXPECT_TRUE(g->executor().computed(t.i));
  EXPECT_GT(fused_members(*g), 0u);
}

// Mid-graph reads (incremental_forward of a node in the middle of a chain) and checkpoint/revert.
TEST(Fusion, MidGraphReadsAndCheckpoints) {
  ParameterCollection pc;
  Parameter w = pc.add_parameters({8, 3});
  Model build = [&](ComputationGraph& g) {
    Chain a = build_chain(g, w, nullptr);
    g.incremental_forward(a.outs[1]);  // the middle of the graph only
    EXPECT_FALSE(g.executor().computed(a.outs[2].i));
    g.checkpoint();
    Chain discarded = build_chain(g, w, nullptr);
    discarded.loss.value();
    g.revert();
    Chain b = build_chain(g, w, nullptr);
    b.mids[3].value();
    return a.loss + b.loss + sum_elems(cmult(b.outs[0], b.mids[1]));
  };
  expect_modes_agree(pc, build);
}

}  // namespace
}  // namespace dynet
