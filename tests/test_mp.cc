// dynet/mp.h: asynchronous workers (threads) over one shared model. Several workers must train a small
// model to the loss one worker reaches; reports, dev evaluation and model saving must happen; errors
// in a worker must come back to the caller; a graph must never see a parameter half-updated. The suite
// name contains "Threads", so the ThreadSanitizer build of scripts/test --sanitize runs it.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <numeric>
#include <shared_mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/param_lock.h"
#include "dynet/expr.h"
#include "dynet/init.h"
#include "dynet/mp.h"
#include "dynet/param-init.h"
#include "dynet/training.h"

namespace dynet {
namespace {

// The learner's statistic: summed loss and data count (DyNet's SufficientStats idiom).
struct Stats {
  double loss = 0;
  unsigned count = 0;
  Stats& operator+=(const Stats& o) {
    loss += o.loss;
    count += o.count;
    return *this;
  }
  bool operator<(const Stats& o) const { return loss < o.loss; }
};
std::ostream& operator<<(std::ostream& os, const Stats& s) { return os << s.loss << " over " << s.count; }

struct Datum {
  std::vector<float> x;
  unsigned label;
};

constexpr unsigned kIn = 16, kHidden = 32, kClasses = 3;

// Labels from a fixed linear teacher plus noise, inputs in [-1, 1]^16, from a fixed LCG: learnable,
// with a loss well above 0 at the end.
std::vector<Datum> make_data(size_t n, uint64_t seed) {
  uint64_t state = seed;
  auto uniform = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((state >> 40) & 0xffffff) / float(1 << 23) - 1.f;
  };
  std::vector<Datum> out;
  for (size_t i = 0; i < n; ++i) {
    Datum d;
    for (unsigned k = 0; k < kIn; ++k) d.x.push_back(uniform());
    float best = -1e9f;
    for (unsigned c = 0; c < kClasses; ++c) {
      float score = 0.5f * uniform();
      for (unsigned k = 0; k < kIn; ++k) score += d.x[k] * std::sin(float(1 + c * kIn + k));
      if (score > best) best = score, d.label = c;
    }
    out.push_back(d);
  }
  return out;
}

// An MLP with an embedding of the input's sign pattern in two dims (a lookup, so sparse rows are
// exercised too).
class Learner : public mp::ILearner<Datum, Stats> {
 public:
  explicit Learner(ParameterCollection& pc)
      : w1(pc.add_parameters({kHidden, kIn})),
        b1(pc.add_parameters({kHidden}, ParameterInitConst(0.f))),
        w2(pc.add_parameters({kClasses, kHidden})),
        e(pc.add_lookup_parameters(4, {kHidden}, ParameterInitConst(0.f))) {}
  // Another learner over the same parameters (as one learner per worker would be).
  Learner(const Learner& other) : w1(other.w1), b1(other.b1), w2(other.w2), e(other.e) {}

  Stats LearnFromDatum(const Datum& d, bool learn) override {
    ComputationGraph cg;
    Expression x = input(cg, {kIn}, d.x);
    const unsigned bucket = (d.x[0] > 0 ? 1u : 0u) + (d.x[1] > 0 ? 2u : 0u);
    Expression h = tanh(parameter(cg, w1) * x + parameter(cg, b1) + lookup(cg, e, bucket));
    Expression loss = pickneglogsoftmax(parameter(cg, w2) * h, d.label);
    const float value = as_scalar(cg.forward(loss));
    if (learn) cg.backward(loss);
    if (calls.fetch_add(1) == fail_at) throw std::runtime_error("learner fails on purpose");
    return Stats{value, 1};
  }
  void SaveModel() override { ++saves; }

  Parameter w1, b1, w2;
  LookupParameter e;
  int saves = 0;
  int fail_at = -1;
  std::atomic<int> calls{0};
};

// Captures std::cerr (where mp.h reports) while alive.
class CaptureCerr {
 public:
  CaptureCerr() : old_(std::cerr.rdbuf(text_.rdbuf())) {}
  ~CaptureCerr() { std::cerr.rdbuf(old_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* old_;
};

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Dev loss per datum after training with `workers` threads.
double train_with(unsigned workers, std::string* report = nullptr) {
  reset_rng(7);
  ParameterCollection pc;
  Learner learner(pc);
  AdamTrainer adam(pc, 0.01f);
  const auto train = make_data(900, 1), dev = make_data(200, 2);
  CaptureCerr capture;
  mp::run_multi_process<Datum, Stats>(workers, &learner, &adam, train, dev, 6, 300, 150);
  if (report) *report = capture.text();
  EXPECT_GE(learner.saves, 1);
  return mp::run_mp_minibatch_trainer<Datum, Stats>(1, &learner, nullptr, dev).loss / dev.size();
}

// The untrained model's dev loss per datum.
double untrained_loss() {
  reset_rng(7);
  ParameterCollection pc;
  Learner learner(pc);
  const auto dev = make_data(200, 2);
  return mp::run_sp_minibatch_trainer<Datum, Stats>(&learner, nullptr, dev).loss / dev.size();
}

// How much of one worker's loss reduction `several` achieves.
double share_of_reduction(double several, double one) {
  const double untrained = untrained_loss();
  return (untrained - several) / (untrained - one);
}

TEST(MpThreads, SeveralWorkersReachTheLossOfOne) {
  std::string report;
  const double untrained = untrained_loss();
  const double one = train_with(1, &report);
  EXPECT_LT(one, 0.6 * untrained);
  std::printf("dev loss per datum: untrained %.4f, 1 worker %.4f\n", untrained, one);
  // 6 epochs of 900 data: a loss line every 150 data (36), a chunk line and a dev line every 300 (18 each).
  EXPECT_EQ(count_of(report, "\tloss = "), 36u + 18u) << report;
  EXPECT_EQ(count_of(report, "\tdev loss = "), 18u) << report;
  EXPECT_GE(count_of(report, "(New best!)"), 1u) << report;
  for (unsigned workers : {2u, 4u}) {
    const double several = train_with(workers, &report);
    std::printf("%u workers %.4f\n", workers, several);
    // Asynchronous updates change the order of the steps, not what is learnt (measured: 97-101% of
    // one worker's loss reduction, also under ThreadSanitizer).
    EXPECT_GT(share_of_reduction(several, one), 0.93) << workers << " workers: " << several << " vs " << one;
    EXPECT_EQ(count_of(report, "\tdev loss = "), 18u) << report;
  }
}

TEST(MpThreads, OneLearnerPerWorker) {
  reset_rng(3);
  ParameterCollection pc;
  Learner first(pc);
  Learner second(first);  // the same parameters (its own builders would live here)
  SimpleSGDTrainer sgd(pc, 0.1f);
  CaptureCerr capture;
  mp::run_multi_process<Datum, Stats>({&first, &second}, {&sgd}, make_data(120, 4), make_data(30, 5), 1, 60, 1000);
  EXPECT_GT(first.calls + second.calls, 0);
  EXPECT_GE(first.saves, 1);
  EXPECT_EQ(second.saves, 0);
}

// One trainer per worker: updates run concurrently, each with its own Adam state.
TEST(MpThreads, WorkersWithTheirOwnTrainersReachTheLossOfOne) {
  const double one = train_with(1);
  for (unsigned workers : {2u, 3u}) {
    reset_rng(7);
    ParameterCollection pc;
    Learner learner(pc);
    std::vector<std::unique_ptr<AdamTrainer>> own;
    std::vector<Trainer*> trainers;
    for (unsigned w = 0; w < workers; ++w) {
      own.push_back(std::make_unique<AdamTrainer>(pc, 0.01f));
      trainers.push_back(own.back().get());
    }
    const auto train = make_data(900, 1), dev = make_data(200, 2);
    CaptureCerr capture;
    mp::run_multi_process<Datum, Stats>(std::vector<mp::ILearner<Datum, Stats>*>(workers, &learner), trainers, train,
                                        dev, 6, 300, 150);
    double updates = 0;
    for (const auto& t : own) updates += t->updates;
    EXPECT_EQ(updates, 6 * 900);  // every datum updated by its worker's trainer
    const double several = mp::run_mp_minibatch_trainer<Datum, Stats>(1, &learner, nullptr, dev).loss / dev.size();
    std::printf("%u workers with their own trainers %.4f\n", workers, several);
    // Each worker's Adam keeps its own moments from a share of the steps, and how the steps are shared
    // depends on the scheduling: measured 91-100% of one worker's loss reduction (12 runs), 83% once
    // under ThreadSanitizer (3 workers), so the bound leaves room below that.
    EXPECT_GT(share_of_reduction(several, one), 0.75) << workers << " workers: " << several << " vs " << one;
  }
}

// Exponentiated-gradient rows are distributions: every update leaves a row summing to 1. Workers with
// their own trainers update the same few rows and the same dense parameter at once; a graph must
// never see a row (or the parameter) that mixes two updates, whose sum would drift from 1.
class DistributionLearner : public mp::ILearner<unsigned, Stats> {
 public:
  explicit DistributionLearner(ParameterCollection& pc)
      : rows(pc.add_lookup_parameters(3, {64}, ParameterInitConst(1.f / 64))),
        dense(pc.add_parameters({64}, ParameterInitConst(1.f / 64))) {}
  Stats LearnFromDatum(const unsigned& k, bool learn) override {
    ComputationGraph cg;
    Expression row = lookup(cg, rows, k % 3), d = parameter(cg, dense);
    for (const Expression& e : {row, d}) {
      const std::vector<float> v = as_vector(cg.forward(e));
      double total = 0;
      for (float x : v) total += x;
      if (!(std::abs(total - 1) < 1e-4)) ++torn;
    }
    // Linear in the values, so the steps stay bounded whatever the distribution.
    // Mass moves to the 16 entries the targets use.
    Expression loss = -pick(row, k % 16) - pick(d, (k * 7) % 16);
    const float value = as_scalar(cg.forward(loss));
    if (learn) cg.backward(loss);
    return Stats{value, 1};
  }
  void SaveModel() override {}
  LookupParameter rows;
  Parameter dense;
  std::atomic<int> torn{0};
};

TEST(MpThreads, RowsAreNeverSeenHalfUpdated) {
  ParameterCollection pc;
  DistributionLearner learner(pc);
  std::vector<std::unique_ptr<EGTrainer>> own;
  std::vector<Trainer*> trainers;
  for (int w = 0; w < 4; ++w) {
    own.push_back(std::make_unique<EGTrainer>(pc, 0.1f, 0.f));
    trainers.push_back(own.back().get());
  }
  std::vector<unsigned> data(2000);
  std::iota(data.begin(), data.end(), 0u);
  const Stats s = mp::run_mp_minibatch_trainer<unsigned, Stats>(
      std::vector<mp::ILearner<unsigned, Stats>*>(4, &learner), trainers, data);
  EXPECT_EQ(s.count, 2000u);
  EXPECT_TRUE(std::isfinite(s.loss));
  EXPECT_LT(s.loss / 2000, -1.5 * 2.0 / 64) << "training did not move the distributions";
  EXPECT_EQ(learner.torn.load(), 0);
  for (unsigned r = 0; r < 3; ++r) {
    const Tensor& t = learner.rows.get_storage().values[r];
    double total = 0;
    for (unsigned k = 0; k < 64; ++k) total += t.v[k];
    EXPECT_NEAR(total, 1, 1e-4);
  }
}

TEST(MpThreads, TrainerCountsAndWeightDecayAreChecked) {
  ParameterCollection pc;
  Learner learner(pc);
  SimpleSGDTrainer a(pc), b(pc);
  const auto data = make_data(10, 1);
  const std::vector<mp::ILearner<Datum, Stats>*> three(3, &learner);
  EXPECT_THROW((mp::run_mp_minibatch_trainer<Datum, Stats>(three, {&a, &b}, data)), std::invalid_argument);
  EXPECT_THROW((mp::run_mp_minibatch_trainer<Datum, Stats>(three, {&a, nullptr, &b}, data)), std::invalid_argument);
  ParameterCollection decayed(0.01f);
  Learner decayed_learner(decayed);
  SimpleSGDTrainer sgd(decayed);
  EXPECT_THROW((mp::run_multi_process<Datum, Stats>(2, &decayed_learner, &sgd, data, data, 1, 5, 5)),
               std::invalid_argument);
  CaptureCerr capture;
  EXPECT_NO_THROW((mp::run_multi_process<Datum, Stats>(1, &decayed_learner, &sgd, data, data, 1, 5, 5)));
}

TEST(MpThreads, SingleProcessUpdatesEveryBatch) {
  reset_rng(5);
  ParameterCollection pc;
  Learner learner(pc);
  SimpleSGDTrainer sgd(pc, 0.1f);
  CaptureCerr capture;
  mp::run_single_process<Datum, Stats>(&learner, &sgd, make_data(40, 6), make_data(10, 7), 2, 40, 20, 4);
  EXPECT_EQ(sgd.updates, 2 * 40 / 4);
  EXPECT_EQ(count_of(capture.text(), "\tdev loss = "), 2u);
  EXPECT_EQ(count_of(capture.text(), "\tloss = "), 4u + 2u);
}

// batch_size data per update, their gradients averaged (DyNet's update(1.0 / batch_size)): with a
// linear loss every datum's gradient is x, so each update moves W by lr·x whatever the batch size.
class LinearLearner : public mp::ILearner<float, Stats> {
 public:
  explicit LinearLearner(ParameterCollection& pc)
      : W(pc.add_parameters({2}, ParameterInitConst(1.f))), E(pc.add_lookup_parameters(3, {2}, ParameterInitConst(0.f))) {}
  Stats LearnFromDatum(const float& x, bool learn) override {
    ComputationGraph cg;
    Expression loss = dot_product(parameter(cg, W), input(cg, {2}, {x, 2 * x})) + sum_elems(lookup(cg, E, 1));
    const float value = as_scalar(cg.forward(loss));
    if (learn) cg.backward(loss);
    return Stats{value, 1};
  }
  void SaveModel() override {}
  Parameter W;
  LookupParameter E;
};

TEST(MpThreads, SingleProcessAveragesTheBatchsGradients) {
  for (unsigned batch : {1u, 4u}) {
    ParameterCollection pc;
    LinearLearner learner(pc);
    SimpleSGDTrainer sgd(pc, 0.1f);
    CaptureCerr capture;
    mp::run_single_process<float, Stats>(&learner, &sgd, std::vector<float>(8, 1.f), {1.f}, 1, 8, 8, batch);
    const float updates = 8.f / batch;
    EXPECT_EQ(sgd.updates, updates);
    EXPECT_FLOAT_EQ(learner.W.values()->v[0], 1.f - updates * 0.1f);
    EXPECT_FLOAT_EQ(learner.W.values()->v[1], 1.f - updates * 0.2f);
    EXPECT_FLOAT_EQ(learner.E.get_storage().values[1].v[0], -updates * 0.1f);
    EXPECT_EQ(learner.E.get_storage().values[0].v[0], 0.f);
  }
}

// run_mp_minibatch accumulates the gradients of all data (no update) and returns their summed loss in
// data order: the same as one thread.
TEST(MpThreads, MinibatchGradientsEqualOneThreads) {
  const auto data = make_data(40, 8);
  auto gradients = [&](unsigned workers, double* loss) {
    reset_rng(9);
    ParameterCollection pc;
    Learner learner(pc);
    *loss = mp::run_mp_minibatch<Datum, Stats>(workers, &learner, data).loss;
    const ParameterStorage& w1 = learner.w1.get_storage();
    return std::vector<float>(w1.g.v, w1.g.v + w1.dim.size());
  };
  double one_loss = 0, four_loss = 0;
  const std::vector<float> one = gradients(1, &one_loss), four = gradients(4, &four_loss);
  EXPECT_EQ(one_loss, four_loss);
  ASSERT_EQ(one.size(), four.size());
  for (size_t k = 0; k < one.size(); ++k) EXPECT_NEAR(one[k], four[k], 1e-5 * (1 + std::abs(one[k])));
}

TEST(MpThreads, AWorkersExceptionReachesTheCaller) {
  for (unsigned workers : {1u, 3u}) {
    ParameterCollection pc;
    Learner learner(pc);
    learner.fail_at = 25;
    SimpleSGDTrainer sgd(pc);
    CaptureCerr capture;
    try {
      mp::run_multi_process<Datum, Stats>(workers, &learner, &sgd, make_data(2000, 1), make_data(10, 2), 1, 2000, 100);
      ADD_FAILURE() << "no exception with " << workers << " workers";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "learner fails on purpose");
    }
    // One worker stops at once. With three, the others finish the datum they are on and may take more
    // until the failing worker's exception reaches the pool (a stall of that thread, e.g. under
    // ThreadSanitizer on a loaded machine, lets them take many): the bound only says the hand-out
    // stopped long before the 2000 data.
    if (workers == 1)
      EXPECT_EQ(learner.calls.load(), 26);
    else
      EXPECT_LT(learner.calls.load(), 1000) << "workers went on after the failure";
    // The model stays usable.
    learner.fail_at = -1;
    const Stats after = mp::run_mp_minibatch_trainer<Datum, Stats>(workers, &learner, &sgd, make_data(9, 3));
    EXPECT_EQ(after.count, 9u);
  }
}

TEST(MpThreads, StopRequestedEndsTheRun) {
  ParameterCollection pc;
  Learner learner(pc);
  SimpleSGDTrainer sgd(pc);
  mp::stop_requested = true;
  CaptureCerr capture;
  mp::run_multi_process<Datum, Stats>(2, &learner, &sgd, make_data(50, 1), make_data(10, 2), 3, 10, 10);
  mp::stop_requested = false;
  EXPECT_EQ(learner.calls.load(), 0);
  EXPECT_EQ(sgd.updates, 0);
}

TEST(MpThreads, BadArgumentsThrow) {
  ParameterCollection pc;
  Learner learner(pc);
  SimpleSGDTrainer sgd(pc);
  const auto data = make_data(10, 1);
  EXPECT_THROW((mp::run_multi_process<Datum, Stats>(0, &learner, &sgd, data, data, 1, 5, 5)), std::invalid_argument);
  EXPECT_THROW((mp::run_multi_process<Datum, Stats>(2, nullptr, &sgd, data, data, 1, 5, 5)), std::invalid_argument);
  EXPECT_THROW((mp::run_multi_process<Datum, Stats>(2, &learner, nullptr, data, data, 1, 5, 5)), std::invalid_argument);
  EXPECT_THROW((mp::run_multi_process<Datum, Stats>(2, &learner, &sgd, data, data, 1, 0, 5)), std::invalid_argument);
  EXPECT_THROW((mp::run_single_process<Datum, Stats>(&learner, &sgd, data, data, 1, 5, 5, 0)), std::invalid_argument);
  EXPECT_THROW((mp::run_mp_minibatch<Datum, Stats>(0, &learner, data)), std::invalid_argument);
  try {
    mp::run_multi_process<Datum, Stats>(2, &learner, &sgd, data, data, 1, 5, 0);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("run_multi_process: report_frequency"), std::string::npos) << e.what();
  }
}

// ---- AsynchronousTraining, the mechanism under mp.h's workers (dynet/model.h) ----

// An asynchronous update takes each parameter's mutex and only the shared side of the parameter lock,
// so it completes while another thread is inside a forward or backward (which holds the shared side);
// an ordinary update waits for it (it takes the lock exclusively).
TEST(AsynchronousThreads, UpdatesDoNotWaitForOtherThreadsGraphs) {
  ParameterCollection m;
  Parameter W = m.add_parameters({4}, ParameterInitConst(1.f));
  SimpleSGDTrainer sgd(m, 0.5f);
  auto add_gradient = [&] {
    ComputationGraph g;
    g.backward(sum_elems(parameter(g, W)));  // a gradient of 1 everywhere
  };
  std::promise<void> session_made, graph_running, release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> updated;
  std::thread worker([&] {
    AsynchronousTraining async;
    add_gradient();
    session_made.set_value();
    graph_running.get_future().wait();
    sgd.update();  // while the main thread holds the shared side, as a forward would
    updated.set_value();
    released.wait();  // the session ends (taking the lock exclusively) after the "forward"
  });
  session_made.get_future().wait();
  {
    std::shared_lock<detail::ParameterLock> in_forward(detail::parameter_lock());
    graph_running.set_value();
    EXPECT_EQ(updated.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready)
        << "an asynchronous update waited for another thread's graph";
    EXPECT_EQ(W.values()->v[0], 0.5f);
    release.set_value();
  }
  worker.join();

  // An ordinary update (no AsynchronousTraining) excludes graphs: it runs only after the "forward".
  add_gradient();
  std::atomic<bool> done{false};
  std::thread plain;
  {
    std::shared_lock<detail::ParameterLock> in_forward(detail::parameter_lock());
    plain = std::thread([&] {
      sgd.update();
      done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(done.load());
  }
  plain.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(W.values()->v[0], 0.f);
}

// While a session lives anywhere in the process, every thread's parameter nodes hold copies (an
// asynchronous update may be writing the storage); otherwise they alias it.
TEST(AsynchronousThreads, GraphsCopyParametersWhileASessionLives) {
  ParameterCollection m;
  Parameter W = m.add_parameters({3, 2}, ParameterInitConst(0.25f));
  LookupParameter E = m.add_lookup_parameters(2, {3}, ParameterInitConst(0.5f));
  auto aliases = [&] {
    ComputationGraph g;
    // The pointers, not references to the tensors: the next forward may move the graph's tensor records.
    const float* w = g.forward(parameter(g, W)).v;
    EXPECT_EQ(w[5], 0.25f);
    const float* table = g.forward(parameter(g, E)).v;
    EXPECT_EQ(table[5], 0.5f);
    return w == W.values()->v && table == E.get_storage().all_values.v;
  };
  EXPECT_TRUE(aliases());
  std::promise<void> made, checked;
  std::thread worker([&] {
    AsynchronousTraining async;
    made.set_value();
    checked.get_future().wait();
  });
  made.get_future().wait();
  EXPECT_FALSE(aliases());  // this thread has no session; another thread does
  checked.set_value();
  worker.join();
  EXPECT_TRUE(aliases());
}

// loss = Σ W + Σ E[row]: each backward adds exactly 1 to every gradient value it reaches.
Expression counting_loss(ComputationGraph& g, Parameter W, LookupParameter E, unsigned row) {
  return sum_elems(parameter(g, W)) + sum_elems(lookup(g, E, row));
}

// kThreads threads in asynchronous sessions, each running `steps` backward passes of counting_loss over
// its own row of E and calling update(t, s) after each, then `last` (if any) applies what arrived after
// a thread's last update: W = 0.5 - kThreads · steps exactly, and each thread's row moved by `steps`,
// when every gradient was applied exactly once.
constexpr int kThreads = 4;
template <class Update>
void count_on_threads(ParameterCollection& m, int steps, Update&& update, Trainer* last) {
  Parameter W = m.add_parameters({8}, ParameterInitConst(0.5f));
  LookupParameter E = m.add_lookup_parameters(kThreads, {3}, ParameterInitConst(0.f));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      AsynchronousTraining async;
      for (int s = 0; s < steps; ++s) {
        ComputationGraph g;
        g.backward(counting_loss(g, W, E, unsigned(t)));
        update(t, s);
      }
    });
  for (auto& t : threads) t.join();
  if (last) last->update();
  for (size_t k = 0; k < W.dim().size(); ++k) EXPECT_EQ(W.values()->v[k], 0.5f - kThreads * steps);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(E.get_storage().values[t].v[0], -float(steps));
}

// Threads with their own SGD trainers (rate 1, no clipping) update asynchronously while the others
// run backward, at different rates.
TEST(AsynchronousThreads, EachGradientIsAppliedExactlyOnce) {
  ParameterCollection m;
  std::vector<std::unique_ptr<SimpleSGDTrainer>> trainers;
  for (int t = 0; t < kThreads; ++t) {
    trainers.push_back(std::make_unique<SimpleSGDTrainer>(m, 1.f));
    trainers.back()->clipping_enabled = false;
  }
  count_on_threads(m, 1500, [&](int t, int s) {
    if (s % (t + 1) == 0) trainers[t]->update();  // threads update at different rates
  }, trainers[0].get());
}

// One trainer shared by every thread: its updates take turns (its per-update state is plain members),
// while the graphs go on. The counter of updates and the parameters say each update ran whole, once.
TEST(AsynchronousThreads, OneSharedTrainerUpdatesInTurns) {
  constexpr int kSteps = 400;
  ParameterCollection m;
  SimpleSGDTrainer trainer(m, 1.f);
  trainer.clipping_enabled = false;
  count_on_threads(m, kSteps, [&](int, int) { trainer.update(); }, nullptr);
  EXPECT_EQ(trainer.updates, float(kThreads * kSteps));
}

// A gradient that turns NaN after the update measured the norm (here: injected by begin_update, which
// runs in between; in training, a backward on another thread) never reaches the values.
class PoisoningSGD : public SimpleSGDTrainer {
 public:
  using SimpleSGDTrainer::SimpleSGDTrainer;
  ParameterStorage* victim = nullptr;

 protected:
  void begin_update() override {
    victim->g.v[1] = std::nanf("");
    victim->nonzero_grad = true;
  }
};

TEST(AsynchronousThreads, AGradientTurningNaNMidUpdateIsNotApplied) {
  ParameterCollection m;
  Parameter W = m.add_parameters({2}, ParameterInitConst(1.f), "w");
  Parameter b = m.add_parameters({2}, ParameterInitConst(1.f), "b");
  PoisoningSGD sgd(m, 0.5f);
  sgd.victim = &W.get_storage();
  AsynchronousTraining async;
  {
    ComputationGraph g;
    g.backward(sum_elems(parameter(g, W)) + sum_elems(parameter(g, b)));
  }
  try {
    sgd.update();
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("gradient of /w turned NaN or Inf"), std::string::npos) << e.what();
  }
  EXPECT_EQ(W.values()->v[0], 1.f);
  EXPECT_EQ(W.values()->v[1], 1.f);
  EXPECT_EQ(b.values()->v[0], 0.5f);  // the others were updated
  EXPECT_FALSE(W.get_storage().nonzero_grad);
  EXPECT_EQ(W.gradients()->v[1], 0.f);
}

// What would need the other threads stopped is refused, before anything changes.
TEST(AsynchronousThreads, RefusesWeightDecayAndSwappedWeights) {
  ParameterCollection decayed(0.01f);
  Parameter W = decayed.add_parameters({2}, ParameterInitConst(1.f));
  SimpleSGDTrainer sgd(decayed, 0.5f);
  auto backward = [&](Parameter p) {
    ComputationGraph g;
    g.backward(sum_elems(parameter(g, p)));
  };
  backward(W);
  {
    AsynchronousTraining async;
    try {
      sgd.update();
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("L2 weight decay (lambda 0.01)"), std::string::npos) << e.what();
    }
    EXPECT_EQ(W.values()->v[0], 1.f);
    EXPECT_TRUE(W.get_storage().nonzero_grad);  // kept for an ordinary update
  }
  sgd.update();
  EXPECT_NE(W.values()->v[0], 1.f);

  ParameterCollection m;
  Parameter V = m.add_parameters({2}, ParameterInitConst(1.f));
  SimpleSGDTrainer averaged(m, 0.5f);
  averaged.exponential_moving_average(0.5f);
  backward(V);
  averaged.update();
  averaged.swap_params_to_moving_average(true);
  backward(V);
  AsynchronousTraining async;
  EXPECT_THROW(averaged.update(), std::runtime_error);
}

}  // namespace
}  // namespace dynet
