// The main job: a binary Tree-LSTM sentiment classifier (Tai et al. 2015) trained on generated trees,
// with autobatching. Every tree has its own shape; each graph holds a minibatch of trees written one
// tree at a time, and --dynet-autobatch 1 (on by default here) runs the equal operations of all of them
// together. `--autobatch 0` runs the same graphs node by node, for comparison. `demo --help` lists the
// options.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <random>
#include <vector>

#include <unistd.h>

#include "dynet/expr.h"
#include "dynet/training.h"

using namespace dynet;

namespace {

// ---- generated data: random binary trees whose label depends on their structure ----
// Words 0..19 are positive (+1), 20..39 negative (-1), 40..47 neutral, 48..49 negators: a negator
// as the left child flips the sentiment of its sibling subtree. Label = sentiment sum > 0.
constexpr unsigned kVocab = 50;
constexpr int kMinLeaves = 4, kMaxLeaves = 30;
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
  if (leaves >= 3 && std::uniform_int_distribution<int>(0, 2)(rng) == 0) {  // negated subtree
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
    auto t = random_tree(rng, std::uniform_int_distribution<int>(kMinLeaves, kMaxLeaves)(rng));
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

struct Options {
  unsigned epochs = 10, train = 5000, dev = 1000, hidden = 64, batch = 32, autobatch = 1;
};

void usage(const Options& d) {
  std::printf(
      "usage: demo [options] [--dynet-* flags]\n"
      "Trains a binary Tree-LSTM sentiment classifier on generated trees. Each graph holds a minibatch of\n"
      "--batch trees, built one tree at a time with ordinary recursion; with autobatching (on by default,\n"
      "i.e. --dynet-autobatch 1) the equal operations of all the trees in a graph run as one batched\n"
      "operation. Prints loss, accuracy and trees per second for every epoch.\n\n"
      "options (default in brackets):\n"
      "  --epochs N      passes over the training trees [%u]\n"
      "  --train N       training trees [%u]\n"
      "  --dev N         held-out trees, scored after every epoch [%u]\n"
      "  --hidden N      Tree-LSTM state size [%u]\n"
      "  --batch N       trees per graph (one update per graph) [%u]\n"
      "  --autobatch N   1: autobatch (sets --dynet-autobatch 1; 2: by depth), 0: node by node, to compare [%u]\n"
      "  --dynet-seed N  random seed of the parameters (0: a fresh one) [0]\n"
      "  --help          this text\n",
      d.epochs, d.train, d.dev, d.hidden, d.batch, d.autobatch);
}

unsigned number(const std::string& name, const char* text, long lo = 1, long hi = 100000000) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < lo || v > hi) {
    std::fprintf(stderr, "demo: %s needs an integer from %ld to %ld, got '%s' (demo --help lists the options)\n",
                 name.c_str(), lo, hi, text);
    std::exit(2);
  }
  return static_cast<unsigned>(v);
}

// Reads the demo's own options; --dynet-* flags are left for initialize().
Options parse(int argc, char** argv, bool& dynet_autobatch_given) {
  Options o;
  dynet_autobatch_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      usage(Options{});
      std::exit(0);
    }
    if (k.rfind("--dynet", 0) == 0) {
      const std::string flag = k.substr(0, k.find('='));
      if (flag == "--dynet-autobatch" || flag == "--dynet_autobatch") {
        dynet_autobatch_given = true;
        const size_t eq = k.find('=');
        const char* v = eq != std::string::npos ? argv[i] + eq + 1 : (i + 1 < argc ? argv[i + 1] : "");
        o.autobatch = number(flag, v, 0, 2);
      }
      if (k.find('=') == std::string::npos) ++i;  // its value
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "demo: %s needs a value (demo --help lists the options)\n", k.c_str());
      std::exit(2);
    }
    const char* v = argv[++i];
    if (k == "--epochs") o.epochs = number(k, v);
    else if (k == "--train") o.train = number(k, v);
    else if (k == "--dev") o.dev = number(k, v);
    else if (k == "--hidden") o.hidden = number(k, v);
    else if (k == "--batch") o.batch = number(k, v);
    else if (k == "--autobatch") o.autobatch = number(k, v, 0, 2);
    else {
      std::fprintf(stderr, "demo: unknown option %s (demo --help lists the options)\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

// Logits of every tree in [first, last) in one graph: the recursion builds each tree's nodes as if it
// were alone; the executor finds what can run together.
std::vector<Expression> batch_logits(ComputationGraph& cg, const TreeLSTM& model, const std::vector<Example>& data,
                                     const std::vector<size_t>& order, size_t first, size_t last) {
  std::vector<Expression> out;
  for (size_t k = first; k < last; ++k) out.push_back(model.logits(cg, *data[order[k]].tree));
  return out;
}

unsigned argmax2(const std::vector<float>& v, size_t column) { return v[2 * column + 1] > v[2 * column] ? 1u : 0u; }

}  // namespace

int main(int argc, char** argv) {
  bool dynet_autobatch_given = false;
  const Options opt = parse(argc, argv, dynet_autobatch_given);
  // The demo turns autobatching on itself, unless told otherwise, by handing initialize() the flag.
  std::vector<char*> args(argv, argv + argc);
  std::string flag = "--dynet-autobatch", value = std::to_string(opt.autobatch);
  if (!dynet_autobatch_given) {
    args.push_back(flag.data());
    args.push_back(value.data());
  }
  int n = static_cast<int>(args.size());
  char** a = args.data();
  initialize(n, a);

  std::mt19937 data_rng(12345);
  std::vector<Example> train = generate(data_rng, opt.train), dev = generate(data_rng, opt.dev);
  const bool tty = isatty(fileno(stdout));
  std::printf("Tree-LSTM sentiment on generated trees: %zu train, %zu dev, hidden %u\n", train.size(), dev.size(),
              opt.hidden);
  std::printf("%u trees per graph, autobatching %s (--dynet-autobatch %u%s)\n", opt.batch,
              opt.autobatch ? "on" : "off", opt.autobatch,
              opt.autobatch ? "; --autobatch 0 to compare without it" : "");

  ParameterCollection pc;
  TreeLSTM model(pc, opt.hidden);
  AdamTrainer trainer(pc, 0.002f);  // one update per minibatch: a larger step than per-tree training's 0.001
  std::vector<size_t> order(train.size()), dev_order(dev.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = 0; i < dev_order.size(); ++i) dev_order[i] = i;
  std::mt19937 shuffle_rng(7);
  double total_seconds = 0;
  size_t total_examples = 0, total_nodes = 0, total_graphs = 0;
  float dev_acc = 0;
  for (unsigned epoch = 1; epoch <= opt.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    auto t0 = std::chrono::steady_clock::now(), last_shown = t0;
    double loss = 0;
    unsigned correct = 0;
    for (size_t first = 0; first < order.size(); first += opt.batch) {
      const size_t last = std::min(order.size(), first + opt.batch);
      ComputationGraph cg;
      std::vector<Expression> y = batch_logits(cg, model, train, order, first, last), losses;
      for (size_t k = first; k < last; ++k) losses.push_back(pickneglogsoftmax(y[k - first], train[order[k]].label));
      Expression total = sum(losses);
      loss += as_scalar(cg.forward(total));
      // The logits were computed on the way to the loss; gathering them costs one small node.
      const std::vector<float> v = as_vector(cg.forward(concatenate_cols(y)));
      for (size_t k = first; k < last; ++k) correct += argmax2(v, k - first) == train[order[k]].label;
      cg.backward(total);
      trainer.update();
      total_nodes += cg.size();
      ++total_graphs;
      const auto now = std::chrono::steady_clock::now();
      if (tty && std::chrono::duration<double>(now - last_shown).count() > 0.25) {  // progress, a few times a second
        last_shown = now;
        std::printf("\repoch %2u  %5zu/%zu trees  loss %.4f  %.0f trees/s", epoch, last, order.size(), loss / last,
                    last / std::chrono::duration<double>(now - t0).count());
        std::fflush(stdout);
      }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total_seconds += secs;
    total_examples += train.size();
    unsigned dev_correct = 0;
    for (size_t first = 0; first < dev.size(); first += opt.batch) {
      const size_t last = std::min(dev.size(), first + opt.batch);
      ComputationGraph cg;
      const std::vector<float> v =
          as_vector(cg.forward(concatenate_cols(batch_logits(cg, model, dev, dev_order, first, last))));
      for (size_t k = first; k < last; ++k) dev_correct += argmax2(v, k - first) == dev[k].label;
    }
    dev_acc = float(dev_correct) / dev.size();
    std::printf("%sepoch %2u  loss %.4f  train acc %.3f  dev acc %.3f  %6.0f trees/s\n", tty ? "\r\033[K" : "", epoch,
                loss / train.size(), double(correct) / train.size(), dev_acc, train.size() / secs);
    std::fflush(stdout);
  }
  std::printf("done: %u epochs, %.1f s training, %.0f trees/s, %zu trees and %.0f nodes per graph, autobatching %s, "
              "final dev accuracy %.3f\n",
              opt.epochs, total_seconds, total_examples / total_seconds, std::min<size_t>(opt.batch, train.size()),
              double(total_nodes) / total_graphs, opt.autobatch ? "on" : "off", dev_acc);
  return 0;
}
