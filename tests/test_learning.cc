// End to end: small models trained with the trainers learn their tasks.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "dynet/expr.h"
#include "dynet/init.h"
#include "dynet/lstm.h"
#include "dynet/training.h"

namespace dynet {
namespace {

// XOR with a 2-8-1 tanh MLP, squared loss, plain SGD on all four examples as one batch.
TEST(Learning, XorMlpWithSimpleSGD) {
  reset_rng(42);
  ParameterCollection m;
  Parameter W1 = m.add_parameters({8, 2}), b1 = m.add_parameters({8});
  Parameter W2 = m.add_parameters({1, 8}), b2 = m.add_parameters({1});
  SimpleSGDTrainer sgd(m, 0.1f);
  const std::vector<float> xs = {-1, -1, -1, 1, 1, -1, 1, 1};  // column-major {2} x 4
  const std::vector<float> ys = {-1, 1, 1, -1};
  float first_loss = 0, loss = 0;
  for (int epoch = 0; epoch < 2000; ++epoch) {
    ComputationGraph g;
    Expression x = input(g, Dim({2}, 4), xs);
    Expression y = input(g, Dim({1}, 4), ys);
    Expression h = tanh(parameter(g, W1) * x + parameter(g, b1));
    Expression pred = parameter(g, W2) * h + parameter(g, b2);
    Expression total = sum_batches(squared_distance(pred, y));
    loss = as_scalar(total.value()) / 4;
    if (epoch == 0) first_loss = loss;
    if (loss < 0.005f) break;
    g.backward(total);
    sgd.update();
  }
  EXPECT_GT(first_loss, 0.1f);
  EXPECT_LT(loss, 0.01f);
}

// Label: does token 1 occur before token 2? (Both occur; other tokens are noise.) The answer needs
// memory of what came first, which an LSTM over embeddings learns with Adam.
struct OrderTask {
  std::vector<std::vector<unsigned>> seqs;  // all of the same length, for batching
  std::vector<unsigned> labels;
};
OrderTask make_order_task(unsigned n, unsigned length, std::mt19937& rng) {
  OrderTask task;
  std::uniform_int_distribution<unsigned> token(0, 4);
  while (task.seqs.size() < n) {
    std::vector<unsigned> s(length);
    for (unsigned& t : s) t = token(rng);
    int first1 = -1, first2 = -1;
    for (unsigned k = 0; k < length; ++k) {
      if (s[k] == 1 && first1 < 0) first1 = static_cast<int>(k);
      if (s[k] == 2 && first2 < 0) first2 = static_cast<int>(k);
    }
    if (first1 < 0 || first2 < 0) continue;
    task.seqs.push_back(s);
    task.labels.push_back(first1 < first2 ? 1u : 0u);
  }
  return task;
}

struct OrderClassifier {
  OrderClassifier(ParameterCollection& m)
      : embeddings(m.add_lookup_parameters(5, {8})), lstm(1, 8, 16, m), W(m.add_parameters({2, 16})),
        b(m.add_parameters({2})) {}
  // Logits {2} x batch for sequences [begin, end) of the task.
  Expression logits(ComputationGraph& g, const OrderTask& task, unsigned begin, unsigned end) {
    lstm.new_graph(g);
    lstm.start_new_sequence();
    const unsigned length = task.seqs[begin].size();
    Expression h;
    for (unsigned t = 0; t < length; ++t) {
      std::vector<unsigned> ids;
      for (unsigned k = begin; k < end; ++k) ids.push_back(task.seqs[k][t]);
      h = lstm.add_input(lookup(g, embeddings, ids));
    }
    return parameter(g, W) * h + parameter(g, b);
  }
  LookupParameter embeddings;
  VanillaLSTMBuilder lstm;
  Parameter W, b;
};

double accuracy(OrderClassifier& model, const OrderTask& task) {
  ComputationGraph g;
  const std::vector<float> out = as_vector(model.logits(g, task, 0, task.seqs.size()).value());
  unsigned correct = 0;
  for (size_t k = 0; k < task.labels.size(); ++k) {
    const unsigned guess = out[2 * k + 1] > out[2 * k] ? 1u : 0u;
    correct += guess == task.labels[k];
  }
  return double(correct) / task.labels.size();
}

TEST(Learning, LstmClassifierWithAdam) {
  reset_rng(7);
  std::mt19937 rng(7);
  const OrderTask train = make_order_task(512, 7, rng), test = make_order_task(200, 7, rng);
  ParameterCollection m;
  OrderClassifier model(m);
  AdamTrainer adam(m, 0.01f);
  const double before = accuracy(model, test);
  const unsigned batch = 32;
  for (int epoch = 0; epoch < 15; ++epoch) {
    for (unsigned begin = 0; begin < train.seqs.size(); begin += batch) {
      const unsigned end = begin + batch;
      ComputationGraph g;
      const std::vector<unsigned> labels(train.labels.begin() + begin, train.labels.begin() + end);
      Expression loss = sum_batches(pickneglogsoftmax(model.logits(g, train, begin, end), labels)) * (1.f / batch);
      loss.value();
      g.backward(loss);
      adam.update();
    }
  }
  const double after = accuracy(model, test);
  EXPECT_GT(after, 0.9) << "accuracy before training " << before;
  EXPECT_GT(after, before + 0.2);
}

}  // namespace
}  // namespace dynet
