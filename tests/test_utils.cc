// Utilities: Dict, check_grad, pretrained embeddings, timers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "dynet/dict.h"
#include "dynet/expr.h"
#include "dynet/grad-check.h"
#include "dynet/init.h"
#include "dynet/param-init.h"
#include "dynet/pretrain.h"
#include "dynet/timing.h"

#include "temp_dir.h"

namespace dynet {
namespace {

namespace fs = std::filesystem;

// ---- Dict ----

TEST(Dict, ConvertsBothWaysAndFreezes) {
  Dict d;
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(d.convert("the"), 0);
  EXPECT_EQ(d.convert("cat"), 1);
  EXPECT_EQ(d.convert("the"), 0);
  EXPECT_EQ(d.size(), 2u);
  EXPECT_EQ(d.convert(1), "cat");
  EXPECT_TRUE(d.contains("cat"));
  EXPECT_FALSE(d.contains("dog"));
  EXPECT_THROW(d.convert(2), std::invalid_argument);
  EXPECT_THROW(d.convert(-1), std::invalid_argument);
  EXPECT_EQ(d.get_unk_id(), -1);
  EXPECT_THROW(d.set_unk("<unk>"), std::runtime_error);  // only after freeze(), as DyNet

  d.freeze();
  EXPECT_TRUE(d.is_frozen());
  EXPECT_THROW(d.convert("dog"), std::runtime_error);  // frozen, no unk
  EXPECT_EQ(d.size(), 2u);
  d.set_unk("<unk>");
  EXPECT_EQ(d.get_unk_id(), 2);
  EXPECT_EQ(d.convert("dog"), 2);
  EXPECT_EQ(d.convert("bird"), 2);
  EXPECT_FALSE(d.contains("dog"));
  EXPECT_EQ(d.size(), 3u);
  EXPECT_TRUE(d.is_frozen());
  EXPECT_THROW(d.set_unk("<UNK>"), std::runtime_error);
  EXPECT_EQ(d.get_words(), (std::vector<std::string>{"the", "cat", "<unk>"}));

  d.clear();
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(d.get_unk_id(), -1);
  EXPECT_FALSE(d.contains("the"));
}

TEST(Dict, SetUnkWithAKnownWordUsesItsId) {
  Dict d;
  d.convert("a");
  d.convert("UNK");
  d.freeze();
  d.set_unk("UNK");
  EXPECT_EQ(d.get_unk_id(), 1);
  EXPECT_EQ(d.size(), 2u);
  EXPECT_EQ(d.convert("zzz"), 1);
}

TEST(Dict, ReadSentences) {
  Dict sd, td;
  EXPECT_EQ(read_sentence("  a b  a c ", sd), (std::vector<int>{0, 1, 0, 2}));
  std::vector<int> s, t;
  read_sentence_pair("a d ||| x y x", s, sd, t, td);
  EXPECT_EQ(s, (std::vector<int>{0, 3}));
  EXPECT_EQ(t, (std::vector<int>{0, 1, 0}));
  EXPECT_THROW(read_sentence_pair("no separator", s, sd, t, td), std::invalid_argument);
}

// ---- check_grad ----

struct SmallModel {
  ParameterCollection m;
  Parameter W = m.add_parameters({3, 2});
  Parameter b = m.add_parameters({3});
  LookupParameter E = m.add_lookup_parameters(4, {2});
};

std::vector<float> all_values(ParameterCollection& m) {
  std::vector<float> out;
  for (auto& p : m.get_storage().params) out.insert(out.end(), p->values.v, p->values.v + p->dim.size());
  for (auto& p : m.get_storage().lookup_params)
    out.insert(out.end(), p->all_values.v, p->all_values.v + p->all_dim.size());
  return out;
}

TEST(GradCheck, PassesOnACorrectModelAndRestoresValues) {
  reset_rng(5);
  SmallModel s;
  const auto before = all_values(s.m);
  ComputationGraph g;
  Expression h = tanh(parameter(g, s.W) * lookup(g, s.E, 2u) + parameter(g, s.b));
  Expression loss = pickneglogsoftmax(h, 1u) + squared_norm(h);
  testing::internal::CaptureStderr();
  EXPECT_TRUE(check_grad(s.m, loss, 2));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("GRADIENT CHECK PASSED"), std::string::npos) << log;
  EXPECT_NE(log.find("PARAMETERS /_1"), std::string::npos) << log;
  EXPECT_EQ(log.find("***"), std::string::npos) << log;
  EXPECT_EQ(all_values(s.m), before);
  // the analytic gradient is left in place: only row 2 of E has one
  EXPECT_TRUE(s.W.get_storage().nonzero_grad);
  EXPECT_EQ(s.E.get_storage().non_zero_grads, (std::unordered_set<unsigned>{2}));
  // the graph holds the unperturbed value again
  const float value = as_scalar(loss.value());
  EXPECT_FLOAT_EQ(value, as_scalar(g.forward(loss)));
}

TEST(GradCheck, FailsWhenAGradientIsMissing) {
  reset_rng(6);
  SmallModel s;
  ComputationGraph g;
  // const_parameter: the value depends on W but no gradient reaches it
  Expression loss = squared_norm(const_parameter(g, s.W) * lookup(g, s.E, 0u) + parameter(g, s.b));
  testing::internal::CaptureStderr();
  EXPECT_FALSE(check_grad(s.m, loss, 1));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("*** GRADIENT CHECK FAILED ***"), std::string::npos) << log;
  EXPECT_NE(log.find("*** /_0["), std::string::npos) << log;  // W's elements are named
  EXPECT_EQ(log.find("/_1["), std::string::npos) << log;       // b is fine and verbosity 1 hides it

  testing::internal::CaptureStderr();
  EXPECT_FALSE(check_grad(s.m, loss, 0));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// With weight decay the parameter nodes output values x scale and gradients refer to that.
TEST(GradCheck, PassesUnderAWeightDecayScale) {
  reset_rng(7);
  ParameterCollection m(0.5f);
  Parameter W = m.add_parameters({3, 2});
  LookupParameter E = m.add_lookup_parameters(2, {2});
  m.get_weight_decay().update_weight_decay(1);
  ASSERT_EQ(W.current_weight_decay(), 0.5f);
  ComputationGraph g;
  Expression loss = squared_norm(tanh(parameter(g, W) * lookup(g, E, 1u)));
  EXPECT_TRUE(check_grad(m, loss, 0));
}

TEST(GradCheck, RejectsNonScalarExpressions) {
  SmallModel s;
  ComputationGraph g;
  Expression v = parameter(g, s.b);
  EXPECT_THROW(check_grad(s.m, v, 0), std::invalid_argument);
}

// ---- pretrained embeddings ----

class PretrainTest : public ::testing::Test {
 protected:
  void write(const std::string& text) { tmp_.write("embeddings.txt", text); }
  test::TempDir tmp_;
  const fs::path file_ = tmp_.path("embeddings.txt");
};

TEST_F(PretrainTest, SaveThenReadRoundTripsExactly) {
  Dict d;
  d.convert("the");
  d.convert("cat");
  ParameterCollection m;
  LookupParameter lp = m.add_lookup_parameters(3, {3}, ParameterInitFromVector({0.1f, -2.5f, 1e-7f, 3.f, 4.f, 5.f,
                                                                               9.f, 9.f, 9.f}));
  save_pretrained_embeddings(file_.string(), d, lp);
  std::ifstream in(file_);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "the 0.1 -2.5 1e-07\ncat 3 4 5\n");

  Dict d2;
  d2.convert("<s>");
  std::unordered_map<int, std::vector<float>> vectors;
  read_pretrained_embeddings(file_.string(), d2, vectors);
  EXPECT_EQ(d2.size(), 3u);
  ASSERT_EQ(vectors.size(), 2u);
  EXPECT_EQ(vectors.at(d2.convert("the")), (std::vector<float>{0.1f, -2.5f, 1e-7f}));
  EXPECT_EQ(vectors.at(d2.convert("cat")), (std::vector<float>{3.f, 4.f, 5.f}));

  Dict big;
  for (int i = 0; i < 4; ++i) big.convert("w" + std::to_string(i));
  EXPECT_THROW(save_pretrained_embeddings(file_.string(), big, lp), std::invalid_argument);
}

TEST_F(PretrainTest, Word2VecHeaderAndFrozenDictionaries) {
  write("2 2\nx 1 2\n\ny +3 -4.5e1\n");
  Dict d;
  d.convert("y");
  d.freeze();
  d.set_unk("<unk>");
  std::unordered_map<int, std::vector<float>> vectors;
  read_pretrained_embeddings(file_.string(), d, vectors);
  ASSERT_EQ(vectors.size(), 1u);  // x is unknown to the frozen dictionary: skipped, not mapped to unk
  EXPECT_EQ(vectors.at(0), (std::vector<float>{3.f, -45.f}));
}

TEST_F(PretrainTest, MalformedLinesThrowNamingTheLineAndChangeNothing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a 1 2\nb 1 2 3\n", ":2:"},  // inconsistent length
      {"a 1 2\nb 1 x\n", ":2:"},    // not a number
      {"a 1 2\nb\n", ":2:"},        // no values
      {"a 1 nan\n", ":1:"},         // not finite
      {"a 1 2e99\n", ":1:"},        // out of float range
  };
  for (const auto& [text, where] : cases) {
    write(text);
    Dict d;
    std::unordered_map<int, std::vector<float>> vectors;
    try {
      read_pretrained_embeddings(file_.string(), d, vectors);
      ADD_FAILURE() << "no error for " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    }
    EXPECT_EQ(d.size(), 0u);
    EXPECT_TRUE(vectors.empty());
  }
  Dict d;
  std::unordered_map<int, std::vector<float>> vectors;
  EXPECT_THROW(read_pretrained_embeddings("/nonexistent/embeddings.txt", d, vectors), std::runtime_error);
}

// ---- timers ----

TEST(Timing, TimerPrintsOnDestructionAndNamedTimerAccumulates) {
  testing::internal::CaptureStderr();
  { Timer t("work"); }
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.rfind("[work ", 0), 0u) << log;
  EXPECT_NE(log.find(" ms]\n"), std::string::npos) << log;

  Timing watch;
  EXPECT_GE(watch.stop(), 0.0);
  testing::internal::CaptureStdout();
  {
    NamedTimer nt;
    nt.start("a");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    nt.stop("a");
    nt.start("a");
    nt.stop("a");
    nt.start("b");
    nt.stop("b");
    EXPECT_GE(nt.cumtimes.at("a"), 2.0);
    EXPECT_EQ(nt.cumtimes.size(), 2u);
  }
  const std::string table = testing::internal::GetCapturedStdout();
  EXPECT_EQ(table.rfind("Timing Info:\n", 0), 0u) << table;
  EXPECT_LT(table.find(" a\n"), table.find(" b\n")) << table;  // longest first
}

}  // namespace
}  // namespace dynet
