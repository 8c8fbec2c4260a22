// bilstm: the autobatch paper's synthetic task (Neubig, Goldberg, Dyer 2017, arXiv 1705.07860): a
// BiLSTM tagger over sequences that all have the same length, where hand-written minibatching is the
// ideal that autobatching is measured against. Each direction is a 2-layer LSTM (embedding 128, hidden
// 200); the two top states of a position feed a softmax over the tags. Synthetic data: word ids drawn
// from SplitMix64 (the same sequence as bench/py/benchdata.py), tag = word % tags, so the loss falls.
// Metric: words/s.
//   build/bench/bench_bilstm [--update-batch N] [--autobatch N] [--manual 1] [--steps N] ...
// Per-example code (default): one sequence's expressions at a time, --update-batch sequences summed in a
// graph.
// --manual 1: the hand-batched version DyNet users write: per time step one lookup with an index vector,
// one batched LSTM step and pickneglogsoftmax with an index vector; sum_batches at the end.
#include "common.h"
#include "dynet/expr.h"
#include "dynet/lstm.h"

using namespace dynet;

namespace {

constexpr unsigned kLength = 40, kVocab = 10000, kTags = 20, kEmbed = 128, kHidden = 200, kLayers = 2;
constexpr unsigned kSequences = 4096;  // the training set; steps wrap around it

struct Sequence {
  std::vector<unsigned> words, tags;
};

std::vector<Sequence> make_sequences(uint64_t seed) {
  bench::SplitMix64 rng(seed);
  std::vector<Sequence> out(kSequences);
  for (Sequence& s : out)
    for (unsigned t = 0; t < kLength; ++t) {
      s.words.push_back(static_cast<unsigned>(rng.next() % kVocab));
      s.tags.push_back(s.words.back() % kTags);
    }
  return out;
}

struct Tagger {
  LookupParameter embed;
  VanillaLSTMBuilder forward_lstm, backward_lstm;
  Parameter output_w, output_b;

  explicit Tagger(ParameterCollection& pc)
      : embed(pc.add_lookup_parameters(kVocab, {kEmbed})),
        forward_lstm(kLayers, kEmbed, kHidden, pc),
        backward_lstm(kLayers, kEmbed, kHidden, pc),
        output_w(pc.add_parameters({kTags, 2 * kHidden})),
        output_b(pc.add_parameters({kTags}, ParameterInitConst(0.f))) {}

  // The summed loss of the positions whose inputs are `inputs` (one expression per position: a word's
  // embedding, or a minibatch of them) and whose tags are picked by `pick`.
  template <typename PickFn>
  Expression loss(ComputationGraph& cg, const std::vector<Expression>& inputs, PickFn&& pick) {
    forward_lstm.new_graph(cg);
    backward_lstm.new_graph(cg);
    forward_lstm.start_new_sequence();
    backward_lstm.start_new_sequence();
    std::vector<Expression> forward_out(kLength), backward_out(kLength), losses(kLength);
    for (unsigned t = 0; t < kLength; ++t) forward_out[t] = forward_lstm.add_input(inputs[t]);
    for (unsigned t = kLength; t-- > 0;) backward_out[t] = backward_lstm.add_input(inputs[t]);
    Expression w = parameter(cg, output_w), b = parameter(cg, output_b);
    for (unsigned t = 0; t < kLength; ++t)
      losses[t] = pick(affine_transform({b, w, concatenate({forward_out[t], backward_out[t]})}), t);
    return sum(losses);
  }

  Expression sequence_loss(ComputationGraph& cg, const Sequence& s) {
    std::vector<Expression> inputs(kLength);
    for (unsigned t = 0; t < kLength; ++t) inputs[t] = lookup(cg, embed, s.words[t]);
    return loss(cg, inputs, [&](const Expression& scores, unsigned t) { return pickneglogsoftmax(scores, s.tags[t]); });
  }

  Expression minibatch_loss(ComputationGraph& cg, const std::vector<const Sequence*>& group) {
    const size_t n = group.size();
    // One index vector per position; the graph reads them by value, so they may be reused afterwards.
    std::vector<unsigned> ids(n);
    std::vector<Expression> inputs(kLength);
    for (unsigned t = 0; t < kLength; ++t) {
      for (size_t k = 0; k < n; ++k) ids[k] = group[k]->words[t];
      inputs[t] = lookup(cg, embed, ids);
    }
    return sum_batches(loss(cg, inputs, [&](const Expression& scores, unsigned t) {
      for (size_t k = 0; k < n; ++k) ids[k] = group[k]->tags[t];
      return pickneglogsoftmax(scores, ids);
    }));
  }
};

}  // namespace

int main(int argc, char** argv) {
  return bench::task_main("bench_bilstm", argc, argv, [](const bench::Options& options) {
    const std::vector<Sequence> sequences = make_sequences(options.seed);
    ParameterCollection pc;
    Tagger model(pc);
    auto outcome = [](const Sequence&) { return bench::StepOutcome{.loss_terms = kLength, .units = kLength}; };
    bench::Result result =
        options.manual
            ? bench::train_groups_with_adam(
                  options, pc, sequences,
                  [&](ComputationGraph& cg, const std::vector<const Sequence*>& group) {
                    return model.minibatch_loss(cg, group);
                  },
                  outcome)
            : bench::train_with_adam(
                  options, pc, sequences,
                  [&](ComputationGraph& cg, const Sequence& s) { return model.sequence_loss(cg, s); }, outcome);
    result.task = "bilstm";
    result.data = "synthetic";
    result.unit = "words/s";
    result.loss_unit = "nll per word";
    return result;
  }, /*needs_data=*/false);
}
