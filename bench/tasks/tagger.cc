// tagger / tagger_char: a BiLSTM tagger (word embedding 128, one LSTM of hidden 50 per direction,
// an MLP of 32 tanh units, softmax over the tags), one sentence per graph, trained with Adam.
// Words seen at most 5 times in training are rare: the plain tagger embeds them as one unknown word;
// tagger_char (built with TAGGER_WITH_CHARS=1) reads them with a character BiLSTM (character
// embedding 20, 2 x 64) whose two final states form the 128-dim word representation. Metric: words/s.
//   build/bench/bench_tagger --data DIR [--steps N] [--warmup N] [--threads N]
#include <algorithm>
#include <unordered_map>

#include "common.h"
#include "dynet/expr.h"
#include "dynet/lstm.h"

#ifndef TAGGER_WITH_CHARS
#define TAGGER_WITH_CHARS 0
#endif

using namespace dynet;

namespace {

constexpr bool kWithChars = TAGGER_WITH_CHARS != 0;
constexpr const char* kTask = kWithChars ? "tagger_char" : "tagger";
constexpr unsigned kEmbed = 128, kHidden = 50, kMlp = 32, kCharEmbed = 20, kCharHidden = 64;
constexpr unsigned kRareCount = 5;

struct Sentence {
  std::vector<unsigned> words;               // unk for rare words
  std::vector<std::vector<unsigned>> chars;  // the bytes of rare words (empty for frequent ones)
  std::vector<unsigned> tags;
};

struct Tagger {
  LookupParameter word_embed, char_embed;
  VanillaLSTMBuilder forward_lstm, backward_lstm, char_forward, char_backward;
  Parameter hidden_w, hidden_b, output_w, output_b;

  Tagger(ParameterCollection& pc, unsigned words, unsigned chars, unsigned tags)
      : word_embed(pc.add_lookup_parameters(words, {kEmbed})),
        forward_lstm(1, kEmbed, kHidden, pc),
        backward_lstm(1, kEmbed, kHidden, pc),
        hidden_w(pc.add_parameters({kMlp, 2 * kHidden})),
        hidden_b(pc.add_parameters({kMlp}, ParameterInitConst(0.f))),
        output_w(pc.add_parameters({tags, kMlp})),
        output_b(pc.add_parameters({tags}, ParameterInitConst(0.f))) {
    if (kWithChars) {
      char_embed = pc.add_lookup_parameters(chars, {kCharEmbed});
      char_forward = VanillaLSTMBuilder(1, kCharEmbed, kCharHidden, pc);
      char_backward = VanillaLSTMBuilder(1, kCharEmbed, kCharHidden, pc);
    }
  }

  Expression spell(ComputationGraph& cg, const std::vector<unsigned>& chars) {
    char_forward.start_new_sequence();
    char_backward.start_new_sequence();
    std::vector<Expression> embedded;
    for (unsigned c : chars) embedded.push_back(lookup(cg, char_embed, c));
    for (const Expression& x : embedded) char_forward.add_input(x);
    for (auto it = embedded.rbegin(); it != embedded.rend(); ++it) char_backward.add_input(*it);
    return concatenate({char_forward.back(), char_backward.back()});
  }

  Expression sentence_loss(ComputationGraph& cg, const Sentence& s) {
    forward_lstm.new_graph(cg);
    backward_lstm.new_graph(cg);
    if (kWithChars) {
      char_forward.new_graph(cg);
      char_backward.new_graph(cg);
    }
    const size_t n = s.words.size();
    std::vector<Expression> inputs(n);
    for (size_t i = 0; i < n; ++i)
      inputs[i] = kWithChars && !s.chars[i].empty() ? spell(cg, s.chars[i]) : lookup(cg, word_embed, s.words[i]);
    forward_lstm.start_new_sequence();
    backward_lstm.start_new_sequence();
    std::vector<Expression> forward_out(n), backward_out(n);
    for (size_t i = 0; i < n; ++i) forward_out[i] = forward_lstm.add_input(inputs[i]);
    for (size_t i = n; i-- > 0;) backward_out[i] = backward_lstm.add_input(inputs[i]);
    Expression w1 = parameter(cg, hidden_w), b1 = parameter(cg, hidden_b);
    Expression w2 = parameter(cg, output_w), b2 = parameter(cg, output_b);
    std::vector<Expression> losses;
    for (size_t i = 0; i < n; ++i) {
      Expression h = tanh(affine_transform({b1, w1, concatenate({forward_out[i], backward_out[i]})}));
      losses.push_back(pickneglogsoftmax(affine_transform({b2, w2, h}), s.tags[i]));
    }
    return sum(losses);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string program = std::string("bench_") + kTask;
  return bench::task_main(program.c_str(), argc, argv, [&program](const bench::Options& options) {
    bench::reject_manual(options, program.c_str());
    auto raw = bench::read_tagged(options.data_dir + "/tagging/wikiner.train.txt");
    if (raw.empty()) throw std::runtime_error("no sentences in the training data");
    std::unordered_map<std::string, unsigned> counts;
    for (const auto& s : raw)
      for (const auto& w : s.words) ++counts[w];
    bench::Vocab words, chars, tags;
    const unsigned unk = words.add("<unk>");
    for (const auto& s : raw)
      for (const auto& w : s.words)
        if (counts[w] > kRareCount) words.add(w);
    std::vector<Sentence> sentences;
    for (const auto& s : raw) {
      Sentence out;
      for (size_t i = 0; i < s.words.size(); ++i) {
        const std::string& w = s.words[i];
        out.words.push_back(words.get(w, unk));
        out.chars.emplace_back();
        if (kWithChars && !words.contains(w))
          for (unsigned char c : w) out.chars.back().push_back(chars.add(std::string(1, static_cast<char>(c))));
        out.tags.push_back(tags.add(s.tags[i]));
      }
      sentences.push_back(std::move(out));
    }
    bench::deterministic_shuffle(sentences, options.seed);

    ParameterCollection pc;
    Tagger model(pc, words.size(), std::max(1u, chars.size()), tags.size());
    bench::Result result = bench::train_with_adam(
        options, pc, sentences,
        [&](ComputationGraph& cg, const Sentence& s) {
          if (options.workers == 1) return model.sentence_loss(cg, s);
          Tagger local = model;  // --workers: its own builder state (the copies share the parameters)
          return local.sentence_loss(cg, s);
        },
        [](const Sentence& s) {
          const double words = static_cast<double>(s.words.size());
          return bench::StepOutcome{.loss_terms = words, .units = words};
        });
    result.task = kTask;
    result.unit = "words/s";
    result.loss_unit = "nll per word";
    return result;
  });
}
