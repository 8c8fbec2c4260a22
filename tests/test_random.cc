// The counter-based generator (kernels/device/philox.h): Philox's published answers, the distributions'
// moments, the same bits on the CPU and the emulated device for every random op, and autobatched members
// that keep the numbers they get alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "dynet/expr.h"
#include "dynet/model.h"
#include "dynet/globals.h"
#include "dynet/init.h"
#include "dynet/tensor.h"
#include "kernels/device/emulated.h"
#include "kernels/device/philox.h"

namespace dynet {
namespace {

class Random : public ::testing::Test {
 protected:
  ~Random() override { reset_rng(1); }
};

// Known-answer vectors of Philox4x32-10 (Salmon et al., SC 2011; Random123's kat_vectors).
TEST_F(Random, PhiloxKnownAnswers) {
  const rng::Block z = rng::philox(0, 0, 0, 0, {0, 0});
  EXPECT_EQ(z.w[0], 0x6627e8d5u);
  EXPECT_EQ(z.w[1], 0xe169c58du);
  EXPECT_EQ(z.w[2], 0xbc57ac4cu);
  EXPECT_EQ(z.w[3], 0x9b00dbd8u);
  const rng::Block p = rng::philox(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(p.w[0], 0xd16cfe09u);
  EXPECT_EQ(p.w[1], 0x94fdccebu);
  EXPECT_EQ(p.w[2], 0x5001e420u);
  EXPECT_EQ(p.w[3], 0x24126ea1u);
}

TEST_F(Random, UnitIntervalsStayInside) {
  for (uint32_t x : {0u, 1u, 255u, 256u, 0x7fffffffu, 0xffffff00u, 0xffffffffu}) {
    EXPECT_GE(rng::uniform01(x), 0.f);
    EXPECT_LT(rng::uniform01(x), 1.f);
    EXPECT_GT(rng::uniform_open(x), 0.f);
    EXPECT_LT(rng::uniform_open(x), 1.f);
  }
}

std::vector<float> values(const Expression& e) { return as_vector(e.value()); }

void moments(const std::vector<float>& v, double* mean, double* var) {
  const double m = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double s = 0;
  for (float x : v) s += (x - m) * (x - m);
  *mean = m;
  *var = s / (v.size() - 1);
}

// 2^17 values: the sample mean's standard error is under 0.003 σ, so 0.02 σ is far outside chance.
TEST_F(Random, MomentsOfLargeDraws) {
  reset_rng(11);
  const Dim d({1u << 17});
  ComputationGraph g;
  double m, v;
  moments(values(random_normal(g, d, 1.f, 2.f)), &m, &v);
  EXPECT_NEAR(m, 1.0, 0.04);
  EXPECT_NEAR(v, 4.0, 0.08);
  moments(values(random_uniform(g, d, -1.f, 3.f)), &m, &v);
  EXPECT_NEAR(m, 1.0, 0.02);
  EXPECT_NEAR(v, 16.0 / 12, 0.03);
  moments(values(random_bernoulli(g, d, 0.3f, 2.f)), &m, &v);
  EXPECT_NEAR(m, 0.6, 0.01);
  EXPECT_NEAR(v, 4 * 0.3 * 0.7, 0.02);
  moments(values(random_gumbel(g, d, 0.f, 1.f)), &m, &v);
  EXPECT_NEAR(m, 0.5772156649, 0.02);
  EXPECT_NEAR(v, M_PI * M_PI / 6, 0.05);
  moments(values(noise(input(g, d, std::vector<float>(d.size(), 5.f)), 0.5f)), &m, &v);
  EXPECT_NEAR(m, 5.0, 0.01);
  EXPECT_NEAR(v, 0.25, 0.01);
  // dropout keeps 1 - p of the values, scaled by 1 / (1 - p)
  const std::vector<float> y = values(dropout(input(g, d, std::vector<float>(d.size(), 1.f)), 0.25f));
  size_t kept = 0;
  for (float x : y) {
    if (x != 0.f) EXPECT_FLOAT_EQ(x, 1.f / 0.75f);
    kept += x != 0.f;
  }
  EXPECT_NEAR(double(kept) / y.size(), 0.75, 0.01);
}

// Neighbouring values and neighbouring keys are uncorrelated (a lag-1 correlation under 0.01 over 2^17
// values; chance gives about 0.003).
TEST_F(Random, NoCorrelationBetweenNeighbours) {
  reset_rng(3);
  ComputationGraph g;
  const unsigned n = 1u << 17;
  const std::vector<float> a = values(random_normal(g, Dim({n})));
  const std::vector<float> b = values(random_normal(g, Dim({n})));
  double lag = 0, cross = 0;
  for (unsigned i = 0; i + 1 < n; ++i) lag += double(a[i]) * a[i + 1];
  for (unsigned i = 0; i < n; ++i) cross += double(a[i]) * b[i];
  EXPECT_LT(std::fabs(lag / n), 0.01);
  EXPECT_LT(std::fabs(cross / n), 0.01);
}

// Every random op: the same seed gives the same bits on the CPU and on the emulated device (the same
// kernel runs there; tests/test_devices.cc compares every sample too).
using Build = std::function<Expression(ComputationGraph&, Device*)>;
std::vector<float> run_on(Device* dev, const Build& build, unsigned seed) {
  reset_rng(seed);
  ComputationGraph g;
  return values(to_device(build(g, dev), cpu_device()));
}

TEST_F(Random, SameBitsOnCpuAndEmulatedDevice) {
  const Dim d({7, 5}, 3);
  std::vector<float> xv(d.size());
  for (size_t k = 0; k < xv.size(); ++k) xv[k] = 0.5f + 0.01f * k;
  auto x = [&](ComputationGraph& g, Device* dev) { return input(g, d, xv, dev); };
  const std::vector<std::pair<std::string, Build>> ops = {
      {"dropout", [&](ComputationGraph& g, Device* dev) { return dropout(x(g, dev), 0.4f); }},
      {"dropout_dim", [&](ComputationGraph& g, Device* dev) { return dropout_dim(x(g, dev), 1, 0.5f); }},
      {"dropout_batch", [&](ComputationGraph& g, Device* dev) { return dropout_batch(x(g, dev), 0.5f); }},
      {"block_dropout", [&](ComputationGraph& g, Device* dev) { return block_dropout(x(g, dev), 0.5f); }},
      {"noise", [&](ComputationGraph& g, Device* dev) { return noise(x(g, dev), 0.7f); }},
      {"random_normal", [&](ComputationGraph& g, Device* dev) { return random_normal(g, d, 0.5f, 2.f, dev); }},
      {"random_bernoulli", [&](ComputationGraph& g, Device* dev) { return random_bernoulli(g, d, 0.3f, 2.f, dev); }},
      {"random_uniform", [&](ComputationGraph& g, Device* dev) { return random_uniform(g, d, -1.f, 2.f, dev); }},
      {"random_gumbel", [&](ComputationGraph& g, Device* dev) { return random_gumbel(g, d, 0.1f, 0.9f, dev); }},
      {"vanilla_lstm_gates (weight noise)", [&](ComputationGraph& g, Device* dev) {
         const unsigned I = 5, H = 3;
         auto filled = [&](const Dim& dd, float s) {
           std::vector<float> v(dd.size());
           for (size_t k = 0; k < v.size(); ++k) v[k] = s * std::sin(float(k));
           return input(g, dd, v, dev);
         };
         return vanilla_lstm_gates(filled(Dim({I}, 2), 1.f), filled(Dim({H}, 2), 0.5f), filled(Dim({4 * H, I}), 0.3f),
                                   filled(Dim({4 * H, H}), 0.2f), filled(Dim({4 * H}), 0.1f), 0.5f);
       }},
  };
  for (const auto& [name, build] : ops) {
    const std::vector<float> cpu = run_on(cpu_device(), build, 77);
    const std::vector<float> emu = run_on(emulated_device(), build, 77);
    ASSERT_EQ(cpu.size(), emu.size()) << name;
    if (name.rfind("vanilla_lstm_gates", 0) == 0) {  // the noise is the same; the products' sums may round apart
      for (size_t k = 0; k < cpu.size(); ++k) EXPECT_NEAR(emu[k], cpu[k], 1e-6) << name << " [" << k << "]";
    } else {
      EXPECT_EQ(std::memcmp(cpu.data(), emu.data(), cpu.size() * sizeof(float)), 0) << name << ": CPU and EMU:0 differ";
    }
    bool other = false;  // block_dropout draws one coin: some other seed must give other values
    for (unsigned seed = 78; seed < 86; ++seed) other |= run_on(cpu_device(), build, seed) != cpu;
    EXPECT_TRUE(other) << name << ": other seeds gave the same values";
  }
}

// A batched random node gives member m the numbers it would get alone under the same key: a graph whose
// only random nodes share one signature (batched into one node, keys taken in member order) has the same
// values under every strategy.
std::vector<float> members_under(int strategy, const std::function<Expression(ComputationGraph&, int)>& node) {
  const int saved = autobatch_flag;
  autobatch_flag = strategy;
  auto g = std::make_unique<ComputationGraph>();
  autobatch_flag = saved;
  std::vector<Expression> ys;
  for (int k = 0; k < 3; ++k) ys.push_back(node(*g, k));
  reset_rng(21);
  g->forward(ys.back());  // the whole graph at once, so that the members meet in one batch
  std::vector<float> all;
  for (const Expression& y : ys) {
    const std::vector<float> v = as_vector(y.value());
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

TEST_F(Random, BatchedMembersKeepTheirNumbers) {
  const std::vector<std::function<Expression(ComputationGraph&, int)>> nodes = {
      [](ComputationGraph& g, int k) { return dropout(input(g, Dim({41}), std::vector<float>(41, 1.f + k)), 0.5f); },
      [](ComputationGraph& g, int) { return random_normal(g, Dim({9})); },
      [](ComputationGraph& g, int k) { return noise(input(g, Dim({3}, 2), std::vector<float>(6, float(k))), 1.f); },
  };
  for (size_t n = 0; n < nodes.size(); ++n) {
    const std::vector<float> simple = members_under(0, nodes[n]);
    for (int strategy : {1, 2}) EXPECT_EQ(members_under(strategy, nodes[n]), simple) << "node " << n << ", strategy " << strategy;
  }
}


// DyNet's C++ programs seed the engine themselves: `delete dynet::rndeng; dynet::rndeng = new
// std::mt19937(seed);` after initialize. Every draw of the thread that initialized (initializers, dropout)
// then comes from that engine; other threads keep their own streams.
TEST_F(Random, AProgramMayReplaceRndeng) {
  DynetParams params;
  params.random_seed = 11;
  initialize(params);  // this thread draws through rndeng
  auto draws = [] {
    ParameterCollection pc;
    Parameter p = pc.add_parameters({4, 3});
    ComputationGraph cg;
    Expression d = dropout(input(cg, {16}, std::vector<float>(16, 1.f)), 0.5f);
    std::vector<float> v = as_vector(p.get_storage().values);
    for (float x : as_vector(d.value())) v.push_back(x);
    return v;
  };
  auto on_another_thread = [&] {
    std::vector<float> v;
    std::thread([&] { v = draws(); }).join();
    return v;
  };
  const std::vector<float> other = on_another_thread();
  delete rndeng;
  rndeng = new std::mt19937(7);
  const std::vector<float> a = draws();
  delete rndeng;
  rndeng = new std::mt19937(7);
  EXPECT_EQ(draws(), a);
  delete rndeng;
  rndeng = new std::mt19937(8);
  EXPECT_NE(draws(), a);
  EXPECT_EQ(on_another_thread(), other);  // its engine is its own, from the seed
  reset_rng(7);  // as in DyNet, the seed goes to the engine rndeng points to
  EXPECT_EQ(draws(), a);
  std::mt19937* mine = new std::mt19937(7);
  delete rndeng;
  rndeng = mine;
  EXPECT_EQ(draws(), a);
  std::mt19937 fresh(7);
  EXPECT_NE((*mine)(), fresh());  // the draws advanced the program's engine
}

}  // namespace
}  // namespace dynet
