// A BiLSTM tagger trained data-parallel over MPI ranks (dynet/mpi.h): every rank builds the same
// model, takes its shard of each minibatch of sentences, and the trainer's update all-reduces the
// gradients, so the ranks stay identical. Only rank 0 reports and writes the model file.
//
//   mpirun -np 2 build/examples/tagger_mpi --train ../shared/data/tagging/wikiner.train.txt \
//       --dev ../shared/data/tagging/wikiner.dev.txt [--minibatch 16] [--epochs 1] [--max-train N]
//       [--max-dev N] [--report N] [--model FILE] [--dynet-seed S]
// (as root, add --allow-run-as-root). Data: one sentence per line, `word|TAG` tokens. Without MPI, or
// without mpirun, it trains as a job of one rank.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "dynet/expr.h"
#include "dynet/init.h"
#include "dynet/io.h"
#include "dynet/lstm.h"
#include "dynet/mpi.h"
#include "dynet/training.h"

using namespace dynet;

namespace {

constexpr unsigned kEmbed = 64, kHidden = 50, kMlp = 32;

struct Sentence {
  std::vector<unsigned> words, tags;
};

struct Vocab {
  std::unordered_map<std::string, unsigned> ids;
  std::vector<std::string> names;
  unsigned add(const std::string& s) {
    auto [it, inserted] = ids.emplace(s, static_cast<unsigned>(names.size()));
    if (inserted) names.push_back(s);
    return it->second;
  }
};

std::vector<std::vector<std::pair<std::string, std::string>>> read_tagged(const std::string& path, size_t max) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::vector<std::pair<std::string, std::string>>> out;
  std::string line, token;
  while (out.size() < max && std::getline(in, line)) {
    std::istringstream tokens(line);
    std::vector<std::pair<std::string, std::string>> s;
    while (tokens >> token) {
      const size_t bar = token.rfind('|');
      if (bar == std::string::npos || bar == 0) throw std::runtime_error(path + ": token without a tag: " + token);
      s.emplace_back(token.substr(0, bar), token.substr(bar + 1));
    }
    if (!s.empty()) out.push_back(std::move(s));
  }
  return out;
}

struct Tagger {
  LookupParameter embed;
  VanillaLSTMBuilder forward, backward;
  Parameter hidden_w, hidden_b, out_w, out_b;

  Tagger(ParameterCollection& pc, unsigned words, unsigned tags)
      : embed(pc.add_lookup_parameters(words, {kEmbed})),
        forward(1, kEmbed, kHidden, pc),
        backward(1, kEmbed, kHidden, pc),
        hidden_w(pc.add_parameters({kMlp, 2 * kHidden})),
        hidden_b(pc.add_parameters({kMlp})),
        out_w(pc.add_parameters({tags, kMlp})),
        out_b(pc.add_parameters({tags})) {}

  // Scores of every word's tags (one expression per word).
  std::vector<Expression> scores(ComputationGraph& cg, const Sentence& s) {
    forward.new_graph(cg);
    backward.new_graph(cg);
    forward.start_new_sequence();
    backward.start_new_sequence();
    const size_t n = s.words.size();
    std::vector<Expression> x(n), f(n), b(n), out(n);
    for (size_t i = 0; i < n; ++i) x[i] = lookup(cg, embed, s.words[i]);
    for (size_t i = 0; i < n; ++i) f[i] = forward.add_input(x[i]);
    for (size_t i = n; i-- > 0;) b[i] = backward.add_input(x[i]);
    Expression w1 = parameter(cg, hidden_w), b1 = parameter(cg, hidden_b);
    Expression w2 = parameter(cg, out_w), b2 = parameter(cg, out_b);
    for (size_t i = 0; i < n; ++i)
      out[i] = affine_transform({b2, w2, tanh(affine_transform({b1, w1, concatenate({f[i], b[i]})}))});
    return out;
  }
};

struct Args {
  std::string train, dev, model = "tagger_mpi.model";
  unsigned minibatch = 16, epochs = 1, report = 50;
  size_t max_train = size_t(-1), max_dev = size_t(-1);
};

void usage() {
  const Args d;
  std::printf(
      "usage: [mpirun -np N] tagger_mpi --train FILE --dev FILE [options] [--dynet-* flags]\n"
      "Trains a BiLSTM tagger data-parallel over the MPI ranks (one rank without mpirun). Files: one\n"
      "sentence per line, word|TAG tokens.\n\n"
      "options (default in brackets):\n"
      "  --train FILE      training sentences (required)\n"
      "  --dev FILE        held-out sentences, scored after every epoch (required)\n"
      "  --minibatch N     sentences per update, shared out over the ranks [%u]\n"
      "  --epochs N        passes over the training sentences [%u]\n"
      "  --report N        print the training loss every N minibatches [%u]\n"
      "  --max-train N     read at most N training sentences [all]\n"
      "  --max-dev N       read at most N held-out sentences [all]\n"
      "  --model FILE      where rank 0 saves the model [%s]\n"
      "  --dynet-seed N    random seed (0: a fresh one) [0]\n"
      "  --help            this text\n",
      d.minibatch, d.epochs, d.report, d.model.c_str());
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("tagger_mpi: " + k + " needs a value");
    const std::string v = argv[++i];
    auto number = [&] {
      char* end = nullptr;
      const long long x = std::strtoll(v.c_str(), &end, 10);
      if (*end || x <= 0) throw std::invalid_argument("tagger_mpi: " + k + " must be a positive integer, got " + v);
      return static_cast<size_t>(x);
    };
    if (k == "--train") a.train = v;
    else if (k == "--dev") a.dev = v;
    else if (k == "--model") a.model = v;
    else if (k == "--minibatch") a.minibatch = static_cast<unsigned>(number());
    else if (k == "--epochs") a.epochs = static_cast<unsigned>(number());
    else if (k == "--report") a.report = static_cast<unsigned>(number());
    else if (k == "--max-train") a.max_train = number();
    else if (k == "--max-dev") a.max_dev = number();
    else throw std::invalid_argument("tagger_mpi: unknown argument " + k);
  }
  if (a.train.empty() || a.dev.empty()) throw std::invalid_argument("tagger_mpi: --train and --dev are required");
  return a;
}

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      usage();
      return 0;
    }
  }
  dynet::initialize(argc, argv);
  const Args args = parse(argc, argv);
  // Every rank reads the same files and builds the same vocabulary (words seen once are unknown).
  const auto raw_train = read_tagged(args.train, args.max_train);
  const auto raw_dev = read_tagged(args.dev, args.max_dev);
  std::unordered_map<std::string, unsigned> counts;
  for (const auto& s : raw_train)
    for (const auto& [w, t] : s) ++counts[w];
  Vocab words, tags;
  const unsigned unk = words.add("<unk>");
  for (const auto& s : raw_train)
    for (const auto& [w, t] : s) {
      if (counts[w] > 1) words.add(w);
      tags.add(t);
    }
  auto convert = [&](const auto& raw) {
    std::vector<Sentence> out;
    for (const auto& s : raw) {
      Sentence c;
      for (const auto& [w, t] : s) {
        auto it = words.ids.find(w);
        c.words.push_back(it == words.ids.end() ? unk : it->second);
        auto tt = tags.ids.find(t);
        c.tags.push_back(tt == tags.ids.end() ? 0 : tt->second);  // a tag unseen in training counts as wrong
      }
      out.push_back(std::move(c));
    }
    return out;
  };
  std::vector<Sentence> train = convert(raw_train);
  const std::vector<Sentence> dev = convert(raw_dev);

  ParameterCollection pc;
  Tagger tagger(pc, static_cast<unsigned>(words.names.size()), static_cast<unsigned>(tags.names.size()));
  AdamTrainer adam(pc);
  mpi::DistributedTrainer dist(adam);  // rank 0's initial parameters go to every rank
  if (dist.is_root())
    std::printf("%d rank(s); %zu training sentences, %zu dev, %zu words, %zu tags, minibatch %u\n", dist.size(),
                train.size(), dev.size(), words.names.size(), tags.names.size(), args.minibatch);

  double best_dev_loss = -1;
  const auto start = std::chrono::steady_clock::now();
  double words_seen = 0;
  for (unsigned epoch = 0; epoch < args.epochs; ++epoch) {
    // The same order on every rank (not the per-rank engines, which differ by design).
    std::shuffle(train.begin(), train.end(), std::mt19937(1000 + epoch));
    double report_loss = 0, report_words = 0;
    size_t batches = 0;
    for (size_t at = 0; at < train.size(); at += args.minibatch, ++batches) {
      const size_t n = std::min<size_t>(args.minibatch, train.size() - at);
      const auto [first, last] = dist.shard(n);
      double loss = 0, count = 0;
      if (first < last) {
        ComputationGraph cg;
        std::vector<Expression> losses;
        for (size_t k = at + first; k < at + last; ++k) {
          const std::vector<Expression> sc = tagger.scores(cg, train[k]);
          for (size_t i = 0; i < sc.size(); ++i) losses.push_back(pickneglogsoftmax(sc[i], train[k].tags[i]));
          count += static_cast<double>(sc.size());
        }
        Expression total = sum(losses);
        loss = as_scalar(cg.forward(total));
        cg.backward(total);
      }
      dist.update();
      const std::vector<double> global = dist.sum(std::vector<double>{loss, count});
      report_loss += global[0];
      report_words += global[1];
      words_seen += global[1];
      if ((batches + 1) % args.report == 0 && dist.is_root()) {
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("epoch %u, %zu sentences: loss per word %.4f (%.0f words/s)\n", epoch, at + n,
                    report_loss / report_words, words_seen / secs);
        std::fflush(stdout);
        report_loss = report_words = 0;
      }
    }
    // Dev: every rank its shard, sums to everyone, the root decides and saves.
    const auto [first, last] = dist.shard(dev.size());
    double dev_loss = 0, correct = 0, total = 0;
    for (size_t k = first; k < last; ++k) {
      ComputationGraph cg;
      const std::vector<Expression> sc = tagger.scores(cg, dev[k]);
      std::vector<Expression> losses;
      for (size_t i = 0; i < sc.size(); ++i) {
        losses.push_back(pickneglogsoftmax(sc[i], dev[k].tags[i]));
        const std::vector<float> v = as_vector(cg.forward(sc[i]));
        correct += static_cast<double>(std::max_element(v.begin(), v.end()) - v.begin()) == dev[k].tags[i];
      }
      dev_loss += as_scalar(cg.forward(sum(losses)));
      total += static_cast<double>(sc.size());
    }
    const std::vector<double> g = dist.sum(std::vector<double>{dev_loss, correct, total});
    if (dist.is_root()) {
      const bool best = best_dev_loss < 0 || g[0] < best_dev_loss;
      std::printf("epoch %u: dev loss per word %.4f, accuracy %.2f%%%s\n", epoch, g[0] / g[2], 100 * g[1] / g[2],
                  best ? " (new best, model saved)" : "");
      if (best) {
        best_dev_loss = g[0];
        TextFileSaver(args.model).save(pc);
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // This rank failed: MPI must not be finalised at exit (MPI_Finalize would wait for ranks that wait
    // for this one); exiting without it makes mpirun end the whole job.
    mpi::mark_failed();
    std::fprintf(stderr, "tagger_mpi: rank %d: %s\n", mpi::available() ? mpi::rank() : 0, e.what());
    return 1;
  }
}
