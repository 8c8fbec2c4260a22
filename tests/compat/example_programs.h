// DyNet programs written the way DyNet's own C++ examples are (example_programs.cc), run by
// examples_compat.cc. They include only dynet headers, as DyNet's examples did.
#pragma once

#include <vector>

namespace compat_examples {

// An attentional encoder-decoder (bidirectional LSTM encoder, LSTM decoder with MLP attention, in the
// style of DyNet's train_attention.cc) trained to reverse short symbol sequences.
struct Seq2SeqRun {
  std::vector<float> epoch_losses;  // summed loss per epoch
  unsigned exact = 0, total = 0;    // greedy decodes equal to the reversed source, out of total
};
Seq2SeqRun train_attention(unsigned epochs, unsigned seed);

// A word-level LSTM language model in the style of DyNet's rnnlm-batch.cc: equal-length sentences in
// one minibatch, lookup / pickneglogsoftmax over the whole batch, sum_batches.
struct LmRun {
  float batched_loss = 0;       // the loss of one minibatch graph before training
  float per_sentence_loss = 0;  // the same sentences one graph each, summed
  std::vector<float> epoch_losses;
};
LmRun train_batched_lm(unsigned epochs, unsigned seed);

}  // namespace compat_examples
