// rnnlm: a 1-layer LSTM language model (embedding 128, hidden 256, full softmax over the PTB
// vocabulary) trained with Adam on minibatches of length-sorted sentences. Metric: words/s.
//   build/bench/bench_rnnlm --data DIR [--minibatch 1|4|16|64] [--steps N] [--warmup N] [--threads N]
#include <algorithm>
#include <numeric>

#include "common.h"
#include "dynet/expr.h"
#include "dynet/lstm.h"

using namespace dynet;

namespace {

constexpr unsigned kEmbed = 128, kHidden = 256;

struct LanguageModel {
  LookupParameter embed;
  VanillaLSTMBuilder lstm;
  Parameter softmax_w, softmax_b;

  LanguageModel(ParameterCollection& pc, unsigned vocab)
      : embed(pc.add_lookup_parameters(vocab, {kEmbed})),
        lstm(1, kEmbed, kHidden, pc),
        softmax_w(pc.add_parameters({vocab, kHidden})),
        softmax_b(pc.add_parameters({vocab}, ParameterInitConst(0.f))) {}

  // Summed negative log-likelihood of every sentence of the batch and its end marker. Sentences are
  // padded with the marker; padded positions are masked out of the loss.
  Expression batch_loss(ComputationGraph& cg, const std::vector<const std::vector<unsigned>*>& batch,
                        unsigned boundary) {
    const unsigned size = static_cast<unsigned>(batch.size());
    size_t longest = 0;
    for (auto* s : batch) longest = std::max(longest, s->size());
    lstm.new_graph(cg);
    lstm.start_new_sequence();
    Expression w = parameter(cg, softmax_w), b = parameter(cg, softmax_b);
    std::vector<Expression> losses;
    std::vector<unsigned> inputs(size), targets(size);
    std::vector<float> mask(size);
    for (size_t t = 0; t <= longest; ++t) {
      bool padded = false;
      for (unsigned k = 0; k < size; ++k) {
        const std::vector<unsigned>& s = *batch[k];
        inputs[k] = t == 0 ? boundary : (t - 1 < s.size() ? s[t - 1] : boundary);
        targets[k] = t < s.size() ? s[t] : boundary;
        mask[k] = t <= s.size() ? 1.f : 0.f;
        padded = padded || t > s.size();
      }
      Expression h = lstm.add_input(lookup(cg, embed, inputs));
      Expression loss = pickneglogsoftmax(affine_transform({b, w, h}), targets);
      if (padded) loss = cmult(loss, input(cg, Dim({1}, size), mask));
      losses.push_back(loss);
    }
    return sum_batches(sum(losses));
  }
};

}  // namespace

int main(int argc, char** argv) {
  return bench::task_main("bench_rnnlm", argc, argv, [](const bench::Options& options) {
    bench::reject_manual(options, "bench_rnnlm");
    bench::Vocab vocab;
    const unsigned boundary = vocab.add("<s>");
    std::vector<std::vector<unsigned>> sentences;
    for (const auto& line : bench::read_token_lines(options.data_dir + "/ptb/ptb.train.txt")) {
      std::vector<unsigned> ids;
      for (const auto& word : line) ids.push_back(vocab.add(word));
      sentences.push_back(std::move(ids));
    }
    if (sentences.empty()) throw std::runtime_error("bench_rnnlm: no sentences in the training data");

    // Length-sorted minibatches, visited in a shuffled order.
    std::vector<size_t> by_length(sentences.size());
    std::iota(by_length.begin(), by_length.end(), 0);
    std::stable_sort(by_length.begin(), by_length.end(),
                     [&](size_t a, size_t b) { return sentences[a].size() < sentences[b].size(); });
    std::vector<std::vector<const std::vector<unsigned>*>> batches;
    for (size_t i = 0; i < by_length.size(); i += options.minibatch) {
      batches.emplace_back();
      for (size_t j = i; j < std::min(by_length.size(), i + options.minibatch); ++j)
        batches.back().push_back(&sentences[by_length[j]]);
    }
    bench::deterministic_shuffle(batches, options.seed);

    ParameterCollection pc;
    LanguageModel model(pc, vocab.size());
    using Batch = std::vector<const std::vector<unsigned>*>;
    bench::Result result = bench::train_with_adam(
        options, pc, batches,
        [&](ComputationGraph& cg, const Batch& batch) { return model.batch_loss(cg, batch, boundary); },
        [](const Batch& batch) {
          double words = 0;  // each sentence's words and its closing boundary
          for (auto* s : batch) words += static_cast<double>(s->size() + 1);
          return bench::StepOutcome{.loss_terms = words, .units = words};
        });
    result.task = "rnnlm";
    result.unit = "words/s";
    result.loss_unit = "nll per word";
    return result;
  });
}
