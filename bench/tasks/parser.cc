// parser: a transition-based (arc-standard, labeled) dependency parser in the style of Kiperwasser &
// Goldberg (2016): a BiLSTM over word (100) and UPOS (25) embeddings, hidden 125 per direction; the
// BiLSTM vectors of the top three stack items and the first buffer item (a learned vector where
// absent) feed an MLP (100 tanh units) scoring SHIFT / LEFT-ARC(label) / RIGHT-ARC(label). Trained with
// Adam on the static oracle's transitions, one sentence per graph; non-projective trees are skipped.
// Metric: sentences/s.
//   build/bench/bench_parser --data DIR [--steps N] [--warmup N] [--threads N]
#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>

#include "common.h"
#include "dynet/expr.h"
#include "dynet/lstm.h"

using namespace dynet;

namespace {

constexpr unsigned kWordEmbed = 100, kTagEmbed = 25, kHidden = 125, kMlp = 100, kFeatures = 4;

struct Transition {
  std::array<int, kFeatures> positions;  // s0, s1, s2, b0 (indices into ROOT w1..wn; -1 = absent)
  unsigned action;                        // 0 SHIFT, 1 + l LEFT-ARC(l), 1 + L + l RIGHT-ARC(l)
};
struct Example {
  std::vector<unsigned> words, tags;  // position 0 is ROOT
  std::vector<Transition> transitions;
};

// The static arc-standard oracle; nullopt when the tree is not projective.
std::optional<std::vector<Transition>> oracle(const std::vector<int>& heads, const std::vector<unsigned>& labels,
                                              unsigned n_labels) {
  const int n = static_cast<int>(heads.size());  // words 1..n; heads[i - 1] is word i's head
  std::vector<int> children(n + 1, 0), attached(n + 1, 0);
  for (int h : heads) ++children[h];
  auto head_of = [&](int i) { return heads[i - 1]; };
  std::vector<int> stack = {0};
  int next = 1;
  std::vector<Transition> out;
  while (next <= n || stack.size() > 1) {
    const size_t depth = stack.size();
    Transition t;
    t.positions = {stack[depth - 1], depth >= 2 ? stack[depth - 2] : -1, depth >= 3 ? stack[depth - 3] : -1,
                   next <= n ? next : -1};
    if (depth >= 2) {
      const int s0 = stack[depth - 1], s1 = stack[depth - 2];
      if (s1 != 0 && head_of(s1) == s0 && attached[s1] == children[s1]) {
        t.action = 1 + labels[s1 - 1];
        stack.erase(stack.end() - 2);
        ++attached[s0];
        out.push_back(t);
        continue;
      }
      if (head_of(s0) == s1 && attached[s0] == children[s0]) {
        t.action = 1 + n_labels + labels[s0 - 1];
        stack.pop_back();
        ++attached[s1];
        out.push_back(t);
        continue;
      }
    }
    if (next > n) return std::nullopt;
    t.action = 0;
    stack.push_back(next++);
    out.push_back(t);
  }
  return out;
}

struct Parser {
  LookupParameter word_embed, tag_embed;
  VanillaLSTMBuilder forward_lstm, backward_lstm;
  Parameter empty, hidden_w, hidden_b, output_w, output_b;

  Parser(ParameterCollection& pc, unsigned words, unsigned tags, unsigned actions)
      : word_embed(pc.add_lookup_parameters(words, {kWordEmbed})),
        tag_embed(pc.add_lookup_parameters(tags, {kTagEmbed})),
        forward_lstm(1, kWordEmbed + kTagEmbed, kHidden, pc),
        backward_lstm(1, kWordEmbed + kTagEmbed, kHidden, pc),
        empty(pc.add_parameters({2 * kHidden})),
        hidden_w(pc.add_parameters({kMlp, kFeatures * 2 * kHidden})),
        hidden_b(pc.add_parameters({kMlp}, ParameterInitConst(0.f))),
        output_w(pc.add_parameters({actions, kMlp})),
        output_b(pc.add_parameters({actions}, ParameterInitConst(0.f))) {}

  Expression sentence_loss(ComputationGraph& cg, const Example& ex) {
    forward_lstm.new_graph(cg);
    backward_lstm.new_graph(cg);
    const size_t n = ex.words.size();
    std::vector<Expression> inputs(n), forward_out(n), backward_out(n), vectors(n);
    for (size_t i = 0; i < n; ++i)
      inputs[i] = concatenate({lookup(cg, word_embed, ex.words[i]), lookup(cg, tag_embed, ex.tags[i])});
    forward_lstm.start_new_sequence();
    backward_lstm.start_new_sequence();
    for (size_t i = 0; i < n; ++i) forward_out[i] = forward_lstm.add_input(inputs[i]);
    for (size_t i = n; i-- > 0;) backward_out[i] = backward_lstm.add_input(inputs[i]);
    for (size_t i = 0; i < n; ++i) vectors[i] = concatenate({forward_out[i], backward_out[i]});
    Expression absent = parameter(cg, empty);
    Expression w1 = parameter(cg, hidden_w), b1 = parameter(cg, hidden_b);
    Expression w2 = parameter(cg, output_w), b2 = parameter(cg, output_b);
    std::vector<Expression> losses;
    std::vector<Expression> features(kFeatures);
    for (const Transition& t : ex.transitions) {
      for (unsigned f = 0; f < kFeatures; ++f) features[f] = t.positions[f] < 0 ? absent : vectors[t.positions[f]];
      Expression h = tanh(affine_transform({b1, w1, concatenate(features)}));
      losses.push_back(pickneglogsoftmax(affine_transform({b2, w2, h}), t.action));
    }
    return sum(losses);
  }
};

}  // namespace

int main(int argc, char** argv) {
  return bench::task_main("bench_parser", argc, argv, [](const bench::Options& options) {
    bench::reject_manual(options, "bench_parser");
    auto raw = bench::read_conllu(options.data_dir + "/ud-ewt/en_ewt-ud-train.conllu");
    std::unordered_map<std::string, unsigned> counts;
    std::vector<std::string> label_names;
    for (const auto& s : raw) {
      for (const auto& w : s.words) ++counts[w];
      label_names.insert(label_names.end(), s.labels.begin(), s.labels.end());
    }
    std::sort(label_names.begin(), label_names.end());
    label_names.erase(std::unique(label_names.begin(), label_names.end()), label_names.end());
    bench::Vocab words, tags, labels;
    const unsigned unk = words.add("<unk>");
    words.add("<root>");
    tags.add("<root>");
    for (const auto& l : label_names) labels.add(l);
    for (const auto& s : raw)
      for (const auto& w : s.words)
        if (counts[w] >= 2) words.add(w);

    std::vector<Example> examples;
    for (const auto& s : raw) {
      std::vector<unsigned> arc_labels;
      for (const auto& l : s.labels) arc_labels.push_back(labels.get(l, 0));
      for (int h : s.heads)
        if (h < 0 || h > static_cast<int>(s.words.size())) throw std::runtime_error("a head is out of range");
      auto transitions = oracle(s.heads, arc_labels, labels.size());
      if (!transitions) continue;
      Example ex;
      ex.words = {words.get("<root>", unk)};
      ex.tags = {0};
      for (size_t i = 0; i < s.words.size(); ++i) {
        ex.words.push_back(words.get(s.words[i], unk));
        ex.tags.push_back(tags.add(s.tags[i]));
      }
      ex.transitions = std::move(*transitions);
      examples.push_back(std::move(ex));
    }
    if (examples.empty()) throw std::runtime_error("no projective sentences in the training data");
    bench::deterministic_shuffle(examples, options.seed);

    ParameterCollection pc;
    Parser model(pc, words.size(), tags.size(), 1 + 2 * labels.size());
    bench::Result result = bench::train_with_adam(
        options, pc, examples, [&](ComputationGraph& cg, const Example& ex) { return model.sentence_loss(cg, ex); },
        [](const Example& ex) {
          return bench::StepOutcome{.loss_terms = static_cast<double>(ex.transitions.size()), .units = 1};
        });
    result.task = "parser";
    result.unit = "sentences/s";
    result.loss_unit = "nll per transition";
    return result;
  });
}
