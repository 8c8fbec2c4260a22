// The main job: a binary Tree-LSTM sentiment classifier (Tai et al. 2015) trained on generated
// trees. Every example has its own tree, so every example builds a differently shaped graph.
//   build/examples/demo [--epochs N] [--train N] [--dev N] [--hidden H] [--dynet-seed S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "dynet/expr.h"
#include "dynet/training.h"

using namespace dynet;

namespace {

// ---- generated data: random binary trees whose label depends on their structure ----
// Words 0..19 are positive (+1), 20..39 negative (-1), 40..47 neutral, 48..49 negators: a negator
// as the left child flips the sentiment of its sibling subtree. Label = sentiment sum > 0.
constexpr unsigned kVocab = 50;
struct Tree {
  int word = -1;  // leaf when >= 0
  std::unique_ptr<Tree> left, right;
};
struct Example {
  std::unique_ptr<Tree> tree;
  unsigned label;
};

int word_value(int w) { return w < 20 ? 1 : (w < 40 ? -1 : 0); }
bool is_negator(int w) { return w >= 48; }

std::unique_ptr<Tree> random_tree(std::mt19937& rng, int leaves) {
  auto t = std::make_unique<Tree>();
  if (leaves == 1) {
    t->word = std::uniform_int_distribution<int>(0, 47)(rng);
    return t;
  }
  if (leaves >= 3 && std::uniform_int_distribution<int>(0, 3)(rng) == 0) {  // negated subtree
    t->left = std::make_unique<Tree>();
    t->left->word = 48 + std::uniform_int_distribution<int>(0, 1)(rng);
    t->right = random_tree(rng, leaves - 1);
    return t;
  }
  int l = std::uniform_int_distribution<int>(1, leaves - 1)(rng);
  t->left = random_tree(rng, l);
  t->right = random_tree(rng, leaves - l);
  return t;
}

int sentiment(const Tree& t) {
  if (t.word >= 0) return word_value(t.word);
  if (t.left->word >= 0 && is_negator(t.left->word)) return -sentiment(*t.right);
  return sentiment(*t.left) + sentiment(*t.right);
}

std::vector<Example> generate(std::mt19937& rng, unsigned n) {
  std::vector<Example> data;
  while (data.size() < n) {
    auto t = random_tree(rng, std::uniform_int_distribution<int>(2, 14)(rng));
    int s = sentiment(*t);
    if (s == 0) continue;
    data.push_back({std::move(t), s > 0 ? 1u : 0u});
  }
  return data;
}

// ---- the model ----
struct TreeLSTM {
  unsigned h;
  LookupParameter embed;
  Parameter W_leaf, b_leaf;         // leaf gates i, o, u from the word
  Parameter U_left, U_right, b_in;  // internal gates i, f_l, f_r, o, u from the children
  Parameter W_out, b_out;

  TreeLSTM(ParameterCollection& pc, unsigned dim) : h(dim) {
    embed = pc.add_lookup_parameters(kVocab, {dim});
    W_leaf = pc.add_parameters({3 * dim, dim});
    b_leaf = pc.add_parameters({3 * dim}, ParameterInitConst(0.f));
    U_left = pc.add_parameters({5 * dim, dim});
    U_right = pc.add_parameters({5 * dim, dim});
    b_in = pc.add_parameters({5 * dim}, ParameterInitConst(0.f));
    W_out = pc.add_parameters({2, dim});
    b_out = pc.add_parameters({2}, ParameterInitConst(0.f));
  }

  struct State {
    Expression h, c;
  };
  struct Graph {
    Expression W_leaf, b_leaf, U_left, U_right, b_in, W_out, b_out;
  };

  State encode(ComputationGraph& cg, const Graph& p, const Tree& t) const {
    if (t.word >= 0) {
      Expression x = lookup(cg, embed, static_cast<unsigned>(t.word));
      Expression g = affine_transform({p.b_leaf, p.W_leaf, x});
      Expression i = logistic(pick_range(g, 0, h));
      Expression o = logistic(pick_range(g, h, 2 * h));
      Expression u = tanh(pick_range(g, 2 * h, 3 * h));
      Expression c = cmult(i, u);
      return {cmult(o, tanh(c)), c};
    }
    State l = encode(cg, p, *t.left), r = encode(cg, p, *t.right);
    Expression g = affine_transform({p.b_in, p.U_left, l.h, p.U_right, r.h});
    Expression i = logistic(pick_range(g, 0, h));
    Expression fl = logistic(pick_range(g, h, 2 * h) + 1.f);  // forget bias 1, as LSTMs do
    Expression fr = logistic(pick_range(g, 2 * h, 3 * h) + 1.f);
    Expression o = logistic(pick_range(g, 3 * h, 4 * h));
    Expression u = tanh(pick_range(g, 4 * h, 5 * h));
    Expression c = cmult(i, u) + cmult(fl, l.c) + cmult(fr, r.c);
    return {cmult(o, tanh(c)), c};
  }

  Expression logits(ComputationGraph& cg, const Tree& t) const {
    Graph p{parameter(cg, W_leaf), parameter(cg, b_leaf), parameter(cg, U_left), parameter(cg, U_right),
            parameter(cg, b_in),   parameter(cg, W_out),  parameter(cg, b_out)};
    return affine_transform({p.b_out, p.W_out, encode(cg, p, t).h});
  }
};

unsigned argmax2(const Tensor& t) { return t.v[1] > t.v[0] ? 1u : 0u; }

}  // namespace

int main(int argc, char** argv) {
  initialize(argc, argv);
  unsigned epochs = 10, n_train = 4000, n_dev = 1000, hidden = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char* k = argv[i];
    unsigned v = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    if (!std::strcmp(k, "--epochs")) epochs = v;
    else if (!std::strcmp(k, "--train")) n_train = v;
    else if (!std::strcmp(k, "--dev")) n_dev = v;
    else if (!std::strcmp(k, "--hidden")) hidden = v;
    else {
      std::fprintf(stderr, "demo: unknown option %s (known: --epochs --train --dev --hidden)\n", k);
      return 2;
    }
  }
  std::mt19937 data_rng(12345);
  std::vector<Example> train = generate(data_rng, n_train), dev = generate(data_rng, n_dev);
  std::printf("Tree-LSTM sentiment on generated trees: %zu train, %zu dev, hidden %u\n", train.size(), dev.size(),
              hidden);

  ParameterCollection pc;
  TreeLSTM model(pc, hidden);
  AdamTrainer trainer(pc);
  std::vector<size_t> order(train.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937 shuffle_rng(7);
  double total_seconds = 0;
  size_t total_examples = 0, total_nodes = 0;
  float dev_acc = 0;
  for (unsigned epoch = 1; epoch <= epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    auto t0 = std::chrono::steady_clock::now();
    double loss = 0;
    unsigned correct = 0;
    for (size_t k : order) {
      ComputationGraph cg;
      Expression y = model.logits(cg, *train[k].tree);
      Expression l = pickneglogsoftmax(y, train[k].label);
      loss += as_scalar(cg.forward(l));
      correct += argmax2(y.value()) == train[k].label;
      cg.backward(l);
      trainer.update();
      total_nodes += cg.size();
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total_seconds += secs;
    total_examples += train.size();
    unsigned dev_correct = 0;
    for (const Example& e : dev) {
      ComputationGraph cg;
      dev_correct += argmax2(model.logits(cg, *e.tree).value()) == e.label;
    }
    dev_acc = float(dev_correct) / dev.size();
    std::printf("epoch %2u  loss %.4f  train acc %.3f  dev acc %.3f  %.0f examples/s\n", epoch, loss / train.size(),
                double(correct) / train.size(), dev_acc, train.size() / secs);
    std::fflush(stdout);
  }
  std::printf("done: %u epochs, %.1f s training, %.0f examples/s, %.0f nodes/graph, final dev accuracy %.3f\n",
              epochs, total_seconds, total_examples / total_seconds, double(total_nodes) / total_examples, dev_acc);
  return 0;
}
