// DyNet-style asynchronous training (dynet/mp.h) as DyNet's own programs wrote it: one learner object
// for every worker, whose model keeps per-graph state in members (an RNN builder given each graph by
// new_graph, Expressions kept between new_graph and the loss), a statistics type whose operator< is a
// non-const member, and `using namespace boost::interprocess;` without including Boost. DyNet gave each
// forked worker its own copy of all that; here the calls into the shared learner take turns.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <sstream>
#include <vector>

#include "dynet/expr.h"
#include "dynet/lstm.h"
#include "dynet/mp.h"
#include "dynet/training.h"

using namespace dynet;
using namespace dynet::mp;
using namespace boost::interprocess;  // DyNet's mp.h made this namespace visible

namespace {

struct Sequence {
  std::vector<unsigned> symbols;  // predict symbols[t + 1] from symbols[0..t]
};

// The model: every member below but the parameters describes the graph most recently begun.
class SequenceModel {
 public:
  explicit SequenceModel(ParameterCollection& pc)
      : rnn(1, 6, 12, pc), p_embed(pc.add_lookup_parameters(5, {6})), p_out(pc.add_parameters({5, 12})),
        p_bias(pc.add_parameters({5})) {}

  void new_graph(ComputationGraph& cg) {
    rnn.new_graph(cg);
    out = parameter(cg, p_out);
    bias = parameter(cg, p_bias);
    graph = &cg;
  }

  Expression loss(const Sequence& s) {
    rnn.start_new_sequence();
    std::vector<Expression> errs;
    for (size_t t = 0; t + 1 < s.symbols.size(); ++t) {
      Expression h = rnn.add_input(lookup(*graph, p_embed, s.symbols[t]));
      errs.push_back(pickneglogsoftmax(affine_transform({bias, out, h}), s.symbols[t + 1]));
    }
    return sum(errs);
  }

 private:
  LSTMBuilder rnn;
  LookupParameter p_embed;
  Parameter p_out, p_bias;
  Expression out, bias;
  ComputationGraph* graph = nullptr;
};

struct LossStats {
  float loss = 0;
  unsigned count = 0;
  LossStats() {}
  LossStats(float l, unsigned c) : loss(l), count(c) {}
  LossStats& operator+=(const LossStats& o) {
    loss += o.loss;
    count += o.count;
    return *this;
  }
  bool operator<(const LossStats& o) { return loss < o.loss; }  // not const, as in DyNet's examples
  friend std::ostream& operator<<(std::ostream& os, const LossStats& s) { return os << s.loss << " over " << s.count; }
};

class SequenceLearner : public ILearner<Sequence, LossStats> {
 public:
  explicit SequenceLearner(SequenceModel* model) : model(model) {}
  LossStats LearnFromDatum(const Sequence& s, bool learn) override {
    ComputationGraph cg;
    model->new_graph(cg);
    Expression l = model->loss(s);
    const float value = as_scalar(cg.forward(l));
    if (learn) cg.backward(l);
    return LossStats(value, 1);
  }
  void SaveModel() override { ++saves; }
  int saves = 0;

 private:
  SequenceModel* model;
};

// Counting sequences over 5 symbols: 0 1 2 3 4 0 1 ..., starting anywhere.
std::vector<Sequence> counting_data(unsigned n) {
  std::vector<Sequence> data(n);
  for (unsigned i = 0; i < n; ++i)
    for (unsigned t = 0; t < 6; ++t) data[i].symbols.push_back((i + t) % 5);
  return data;
}

// Redirects std::cerr (mp.h's reports) while alive.
class QuietCerr {
 public:
  QuietCerr() : old_(std::cerr.rdbuf(text_.rdbuf())) {}
  ~QuietCerr() { std::cerr.rdbuf(old_); }

 private:
  std::ostringstream text_;
  std::streambuf* old_;
};

TEST(DynetMp, OneSharedLearnerWithPerGraphStateTrainsOnSeveralWorkers) {
  ParameterCollection pc;
  SequenceModel model(pc);
  SequenceLearner learner(&model);
  SimpleSGDTrainer sgd(pc, 0.2f);
  const std::vector<Sequence> data = counting_data(40);
  const float before = run_mp_minibatch_trainer<Sequence, LossStats>(3, &learner, nullptr, data).loss;
  {
    QuietCerr quiet;
    run_multi_process<Sequence>(3, &learner, &sgd, data, data, 8, 40, 20);
  }
  EXPECT_GE(learner.saves, 1);
  EXPECT_EQ(sgd.updates, 8 * 40);
  const float after = run_mp_minibatch_trainer<Sequence, LossStats>(3, &learner, nullptr, data).loss;
  EXPECT_TRUE(std::isfinite(after));
  EXPECT_LT(after, 0.5f * before);
}

TEST(DynetMp, SharedLearnerMinibatchesOnSeveralWorkers) {
  ParameterCollection pc;
  SequenceModel model(pc);
  SequenceLearner learner(&model);
  SimpleSGDTrainer sgd(pc, 0.05f);
  const std::vector<Sequence> data = counting_data(20);
  float first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    const LossStats s = run_mp_minibatch<Sequence>(3, &learner, data);  // gradients of all data, no update
    EXPECT_EQ(s.count, 20u);
    sgd.update();
    (step == 0 ? first : last) = s.loss;
  }
  EXPECT_LT(last, 0.5f * first);
  const LossStats trained = run_mp_minibatch_trainer<Sequence, LossStats>(3, &learner, &sgd, data);
  EXPECT_EQ(trained.count, 20u);
}

}  // namespace
