// Runs the DyNet-style programs of example_programs.cc and checks what they compute.
#include <gtest/gtest.h>

#include "dynet/globals.h"
#include "example_programs.h"

namespace {

TEST(DynetExamples, AttentionalSeq2SeqLearnsToReverse) {
  const compat_examples::Seq2SeqRun run = compat_examples::train_attention(30, 7);
  ASSERT_EQ(run.epoch_losses.size(), 30u);
  // 24 targets of 4-6 predictions over 8 symbols start near ln 8 ≈ 2.08 each
  EXPECT_GT(run.epoch_losses.front(), 100.f);
  EXPECT_LT(run.epoch_losses.back(), 0.1f * run.epoch_losses.front());
  EXPECT_EQ(run.total, 24u);
  EXPECT_GE(run.exact, 18u) << "greedy decoding reversed too few training sequences";
}

TEST(DynetExamples, BatchedLanguageModelMatchesPerSentenceAndTrains) {
  const compat_examples::LmRun run = compat_examples::train_batched_lm(60, 11);
  // one minibatch of 4 sentences is the sum of the 4 sentences' graphs
  EXPECT_NEAR(run.batched_loss, run.per_sentence_loss, 1e-4f * run.per_sentence_loss);
  ASSERT_EQ(run.epoch_losses.size(), 60u);
  EXPECT_LT(run.epoch_losses.back(), 0.25f * run.epoch_losses.front());
}

// The same programs with --dynet-autobatch 1 and 2 (graphs made while autobatch_flag is set run on the
// batching executor): the same losses for the first epochs (rounding differences then grow through
// hundreds of Adam updates, as they do between any two summation orders: the attentional model's loss
// moves by 1e-5 of itself in epoch 5 and 1e-3 in epoch 10), and a model that decodes as well after training.
TEST(DynetExamples, ExamplesAutobatchedGiveTheSameLosses) {
  constexpr size_t kCompared = 8;
  const compat_examples::Seq2SeqRun plain = compat_examples::train_attention(30, 7);
  const compat_examples::LmRun plain_lm = compat_examples::train_batched_lm(kCompared, 11);
  for (int strategy : {1, 2}) {
    dynet::autobatch_flag = strategy;
    const compat_examples::Seq2SeqRun run = compat_examples::train_attention(30, 7);
    const compat_examples::LmRun lm = compat_examples::train_batched_lm(kCompared, 11);
    dynet::autobatch_flag = 0;
    ASSERT_EQ(run.epoch_losses.size(), plain.epoch_losses.size());
    for (size_t e = 0; e < kCompared; ++e)
      EXPECT_NEAR(run.epoch_losses[e], plain.epoch_losses[e], 1e-3f * plain.epoch_losses[e])
          << "strategy " << strategy << " epoch " << e;
    EXPECT_LT(run.epoch_losses.back(), 0.1f * run.epoch_losses.front()) << "strategy " << strategy;
    EXPECT_GE(run.exact, 18u) << "strategy " << strategy << ": greedy decoding reversed too few training sequences";
    EXPECT_NEAR(lm.batched_loss, plain_lm.batched_loss, 1e-4f * plain_lm.batched_loss) << "strategy " << strategy;
    ASSERT_EQ(lm.epoch_losses.size(), plain_lm.epoch_losses.size());
    for (size_t e = 0; e < kCompared; ++e)
      EXPECT_NEAR(lm.epoch_losses[e], plain_lm.epoch_losses[e], 1e-3f * plain_lm.epoch_losses[e])
          << "strategy " << strategy << " epoch " << e;
  }
}

}  // namespace
