#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "dynet/dynet.h"
#include "dynet/expr.h"
#include "dynet/init.h"

namespace dynet {
namespace {

struct Argv {
  std::vector<std::string> strs;
  std::vector<char*> ptrs;
  int argc;
  char** argv;
  explicit Argv(std::vector<std::string> s) : strs(std::move(s)) {
    for (auto& x : strs) ptrs.push_back(x.data());
    ptrs.push_back(nullptr);
    argc = static_cast<int>(strs.size());
    argv = ptrs.data();
  }
};

TEST(Init, ParsesAndRemovesDynetFlags) {
  Argv a({"prog", "--dynet-seed", "7", "--dynet_mem=64", "--keep", "--dynet-autobatch=1", "--dynet-weight-decay",
          "0.01", "--dynet_profiling", "2", "x"});
  DynetParams p = extract_dynet_params(a.argc, a.argv);
  EXPECT_EQ(p.random_seed, 7u);
  EXPECT_EQ(p.mem_descriptor, "64");
  EXPECT_EQ(p.autobatch, 1);
  EXPECT_FLOAT_EQ(p.weight_decay, 0.01f);
  EXPECT_EQ(p.profiling, 2);
  ASSERT_EQ(a.argc, 3);
  EXPECT_STREQ(a.argv[1], "--keep");
  EXPECT_STREQ(a.argv[2], "x");
  EXPECT_EQ(a.argv[3], nullptr);
}

TEST(Init, RejectsUnknownAndMalformedFlags) {
  Argv a({"prog", "--dynet-sed", "7"});
  EXPECT_THROW(extract_dynet_params(a.argc, a.argv), std::invalid_argument);
  Argv b({"prog", "--dynet-seed", "abc"});
  EXPECT_THROW(extract_dynet_params(b.argc, b.argv), std::invalid_argument);
  Argv c({"prog", "--dynet-seed"});
  EXPECT_THROW(extract_dynet_params(c.argc, c.argv), std::invalid_argument);
  Argv d({"prog", "--dynet-weight-decay=1.5"});
  EXPECT_THROW(extract_dynet_params(d.argc, d.argv), std::invalid_argument);
}

// The message quotes the value whichever way it was given (it said "got " with nothing after it
// for "--dynet-weight-decay 2").
TEST(Init, WeightDecayErrorNamesTheValue) {
  for (auto args : {std::vector<std::string>{"prog", "--dynet-weight-decay", "2"},
                    std::vector<std::string>{"prog", "--dynet-weight-decay=2"}}) {
    Argv a(args);
    try {
      extract_dynet_params(a.argc, a.argv);
      ADD_FAILURE() << "no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("got 2"), std::string::npos) << e.what();
    }
  }
}

TEST(Init, SeedMakesRandomnessReproducible) {
  reset_rng(42);
  ParameterCollection pc1;
  Parameter a = pc1.add_parameters({5});
  reset_rng(42);
  ParameterCollection pc2;
  Parameter b = pc2.add_parameters({5});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a.values()->v[i], b.values()->v[i]);
}

TEST(Model, NamesFollowDynet) {
  ParameterCollection pc;
  EXPECT_EQ(pc.add_parameters({2}).get_fullname(), "/_0");
  EXPECT_EQ(pc.add_parameters({2}).get_fullname(), "/_1");
  EXPECT_EQ(pc.add_parameters({2}, "W").get_fullname(), "/W");
  EXPECT_EQ(pc.add_parameters({2}, "W").get_fullname(), "/W_1");
  EXPECT_EQ(pc.add_lookup_parameters(3, {2}, "E").get_fullname(), "/E");
  ParameterCollection sub = pc.add_subcollection("rnn");
  EXPECT_EQ(sub.get_fullname(), "/rnn/");
  EXPECT_EQ(sub.add_parameters({2}).get_fullname(), "/rnn/_0");
  EXPECT_EQ(pc.add_subcollection("rnn").get_fullname(), "/rnn_1/");
  // The parent lists its subcollections' parameters too.
  EXPECT_EQ(pc.parameters_list().size(), 5u);
  EXPECT_EQ(sub.parameters_list().size(), 1u);
  EXPECT_EQ(pc.lookup_parameters_list().size(), 1u);
  EXPECT_EQ(pc.parameter_count(), 2u * 5 + 6u);
  EXPECT_THROW(pc.add_parameters({2}, "a/b"), std::invalid_argument);
  EXPECT_THROW(pc.add_parameters({2}, "a_b"), std::invalid_argument);
  EXPECT_THROW(pc.add_parameters(Dim({2}, 3)), std::invalid_argument);
}

TEST(Model, Initializers) {
  ParameterCollection pc;
  Parameter c = pc.add_parameters({2, 3}, ParameterInitConst(0.5f));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.values()->v[i], 0.5f);
  Parameter id = pc.add_parameters({3, 3}, ParameterInitIdentity());
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(id.values()->v[k * 3 + r], r == k ? 1.f : 0.f);
  EXPECT_THROW(pc.add_parameters({2, 3}, ParameterInitIdentity()), std::invalid_argument);
  Parameter v = pc.add_parameters({2}, ParameterInitFromVector({1.f, 2.f}));
  EXPECT_EQ(v.values()->v[1], 2.f);
  EXPECT_THROW(pc.add_parameters({3}, ParameterInitFromVector({1.f})), std::invalid_argument);
  // Glorot: U(±sqrt(3·2/(20+30))) for {20,30}; lookup tables exclude the row count.
  const float bound = std::sqrt(3.f * 2 / 50.f);
  Parameter g = pc.add_parameters({20, 30});
  float mx = 0;
  for (unsigned i = 0; i < 600; ++i) mx = std::max(mx, std::fabs(g.values()->v[i]));
  EXPECT_LE(mx, bound);
  EXPECT_GT(mx, 0.9f * bound);
  LookupParameter e = pc.add_lookup_parameters(1000, {10});
  const float lbound = std::sqrt(3.f / 10.f);
  mx = 0;
  for (unsigned i = 0; i < 10000; ++i) mx = std::max(mx, std::fabs(e.get_storage().all_values.v[i]));
  EXPECT_LE(mx, lbound);
  EXPECT_GT(mx, 0.9f * lbound);
  // Normal(mean, var): var is a variance.
  Parameter n = pc.add_parameters({4000}, ParameterInitNormal(1.f, 4.f));
  double s = 0, ss = 0;
  for (unsigned i = 0; i < 4000; ++i) {
    s += n.values()->v[i];
    ss += double(n.values()->v[i]) * n.values()->v[i];
  }
  const double mean = s / 4000, var = ss / 4000 - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.15);
  EXPECT_NEAR(var, 4.0, 0.5);
  Parameter u = pc.add_parameters({100}, ParameterInitUniform(-1.f, 3.f));
  for (unsigned i = 0; i < 100; ++i) {
    EXPECT_GE(u.values()->v[i], -1.f);
    EXPECT_LE(u.values()->v[i], 3.f);
  }
}

TEST(Model, LookupGradientsRememberRows) {
  ParameterCollection pc;
  ComputationGraph g;
  // One scalar per batch element: the loss sums over the batch.
  LookupParameter s = pc.add_lookup_parameters(10, {1}, ParameterInitConst(0.5f));
  Expression z = tanh(lookup(g, s, std::vector<unsigned>{2, 7}));
  g.backward(z);
  auto& st = s.get_storage();
  EXPECT_EQ(st.non_zero_grads.size(), 2u);
  EXPECT_TRUE(st.non_zero_grads.count(2));
  EXPECT_TRUE(st.non_zero_grads.count(7));
  EXPECT_NEAR(st.grads[2].v[0], 1 - std::pow(std::tanh(0.5f), 2), 1e-6);
  EXPECT_EQ(st.grads[3].v[0], 0.f);
  pc.reset_gradient();
  EXPECT_TRUE(st.non_zero_grads.empty());
  EXPECT_EQ(st.grads[2].v[0], 0.f);
}

}  // namespace
}  // namespace dynet
