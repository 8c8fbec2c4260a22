// Runs the DyNet-style programs of example_programs.cc and checks what they compute.
#include <gtest/gtest.h>

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

}  // namespace
