// DyNet programs as a DyNet user writes them (see example_programs.h). Like DyNet's
// train_attention.cc, this file includes no standard headers for what the dynet headers made
// visible (cout, endl, vector, string): it must compile with the dynet headers alone.
#include "example_programs.h"

#include "dynet/dict.h"
#include "dynet/dynet.h"
#include "dynet/expr.h"
#include "dynet/lstm.h"
#include "dynet/nodes.h"
#include "dynet/rnn.h"
#include "dynet/timing.h"
#include "dynet/training.h"

using namespace std;
using namespace dynet;

namespace compat_examples {
namespace {

// ---- attention (train_attention.cc style) ----

const unsigned LAYERS = 1;
const unsigned INPUT_DIM = 12;
const unsigned HIDDEN_DIM = 24;
const unsigned ATTENTION_DIM = 16;
const int kSOS = 0, kEOS = 1;
const unsigned VOCAB_SIZE = 8;  // <s>, </s> and six symbols

template <class Builder>
struct AttentionalModel {
  LookupParameter p_c, p_ec;  // source and target embeddings
  Parameter p_R, p_bias;      // output layer
  Parameter p_Wa, p_Ua, p_va; // attention MLP
  Builder dec_builder, fwd_enc, rev_enc;

  explicit AttentionalModel(ParameterCollection& model)
      : dec_builder(LAYERS, INPUT_DIM + 2 * HIDDEN_DIM, HIDDEN_DIM, model),
        fwd_enc(LAYERS, INPUT_DIM, HIDDEN_DIM, model),
        rev_enc(LAYERS, INPUT_DIM, HIDDEN_DIM, model) {
    p_c = model.add_lookup_parameters(VOCAB_SIZE, {INPUT_DIM});
    p_ec = model.add_lookup_parameters(VOCAB_SIZE, {INPUT_DIM});
    p_R = model.add_parameters({VOCAB_SIZE, HIDDEN_DIM});
    p_bias = model.add_parameters({VOCAB_SIZE});
    p_Wa = model.add_parameters({ATTENTION_DIM, HIDDEN_DIM});
    p_Ua = model.add_parameters({ATTENTION_DIM, 2 * HIDDEN_DIM});
    p_va = model.add_parameters({ATTENTION_DIM});
  }

  // The source's annotations: one column per token, [forward state; backward state].
  Expression encode(const vector<int>& src, ComputationGraph& cg) {
    fwd_enc.new_graph(cg);
    rev_enc.new_graph(cg);
    fwd_enc.start_new_sequence();
    rev_enc.start_new_sequence();
    const int slen = static_cast<int>(src.size());
    vector<Expression> fwd(slen), rev(slen);
    for (int t = 0; t < slen; ++t) fwd[t] = fwd_enc.add_input(lookup(cg, p_c, src[t]));
    for (int t = slen - 1; t >= 0; --t) rev[t] = rev_enc.add_input(lookup(cg, p_c, src[t]));
    vector<Expression> cols(slen);
    for (int t = 0; t < slen; ++t) cols[t] = concatenate({fwd[t], rev[t]});
    return concatenate_cols(cols);
  }

  // The distribution's logits for the next token after prev, attending over H.
  Expression step(ComputationGraph& cg, const Expression& H, const Expression& UaH, int prev) {
    Expression Wa = parameter(cg, p_Wa), va = parameter(cg, p_va);
    // before the first step the decoder has no state (final_h() is empty): start from zeros
    const vector<Expression> h_tm1 = dec_builder.final_h();
    Expression h_prev = h_tm1.empty() ? zeroes(cg, {HIDDEN_DIM}) : h_tm1.back();
    Expression scores = transpose(tanh(colwise_add(UaH, Wa * h_prev))) * va;
    Expression alpha = softmax(scores);
    Expression context = H * alpha;
    Expression h = dec_builder.add_input(concatenate({lookup(cg, p_ec, prev), context}));
    return affine_transform({parameter(cg, p_bias), parameter(cg, p_R), h});
  }

  Expression BuildGraph(const vector<int>& src, const vector<int>& tgt, ComputationGraph& cg) {
    Expression H = encode(src, cg);
    Expression UaH = parameter(cg, p_Ua) * H;
    dec_builder.new_graph(cg);
    dec_builder.start_new_sequence();
    vector<Expression> errs;
    for (unsigned t = 0; t + 1 < tgt.size(); ++t)
      errs.push_back(pickneglogsoftmax(step(cg, H, UaH, tgt[t]), tgt[t + 1]));
    return sum(errs);
  }

  vector<int> Greedy(const vector<int>& src, ComputationGraph& cg, unsigned max_len) {
    Expression H = encode(src, cg);
    Expression UaH = parameter(cg, p_Ua) * H;
    dec_builder.new_graph(cg, false);
    dec_builder.start_new_sequence();
    vector<int> out;
    int prev = kSOS;
    while (out.size() < max_len) {
      Expression logits = step(cg, H, UaH, prev);
      const vector<float> p = as_vector(cg.incremental_forward(logits));
      int best = 0;
      for (unsigned k = 1; k < p.size(); ++k)
        if (p[k] > p[best]) best = static_cast<int>(k);
      if (best == kEOS) break;
      out.push_back(best);
      prev = best;
    }
    return out;
  }
};

// ---- batched language model (rnnlm-batch.cc style) ----

const unsigned LM_LAYERS = 2;
const unsigned LM_INPUT_DIM = 16;
const unsigned LM_HIDDEN_DIM = 16;

template <class Builder>
struct RNNBatchLanguageModel {
  LookupParameter p_c;
  Parameter p_R, p_bias;
  Builder builder;
  unsigned vocab;

  RNNBatchLanguageModel(ParameterCollection& model, unsigned vocab_size)
      : builder(LM_LAYERS, LM_INPUT_DIM, LM_HIDDEN_DIM, model), vocab(vocab_size) {
    p_c = model.add_lookup_parameters(vocab, {LM_INPUT_DIM});
    p_R = model.add_parameters({vocab, LM_HIDDEN_DIM});
    p_bias = model.add_parameters({vocab});
  }

  // sents[first .. first+bsize) have the same length; the loss summed over the batch.
  Expression getNegLogProb(const vector<vector<int>>& sents, unsigned first, unsigned bsize, ComputationGraph& cg) {
    const unsigned slen = static_cast<unsigned>(sents[first].size());
    builder.new_graph(cg);
    builder.start_new_sequence();
    Expression R = parameter(cg, p_R);
    Expression bias = parameter(cg, p_bias);
    vector<Expression> errs;
    vector<unsigned> cur(bsize), next(bsize);
    for (unsigned t = 0; t + 1 < slen; ++t) {
      for (unsigned b = 0; b < bsize; ++b) {
        cur[b] = static_cast<unsigned>(sents[first + b][t]);
        next[b] = static_cast<unsigned>(sents[first + b][t + 1]);
      }
      Expression x_t = lookup(cg, p_c, cur);
      Expression h_t = builder.add_input(x_t);
      Expression r_t = affine_transform({bias, R, h_t});
      errs.push_back(pickneglogsoftmax(r_t, next));
    }
    return sum_batches(sum(errs));
  }
};

}  // namespace

Seq2SeqRun train_attention(unsigned epochs, unsigned seed) {
  reset_rng(seed);
  // reverse every sequence of 3 to 5 symbols: source <s> a b c </s>, target <s> c b a </s>
  vector<vector<int>> sources, targets;
  for (unsigned n = 0; n < 24; ++n) {
    vector<int> body;
    const unsigned len = 3 + static_cast<unsigned>(rand0n(3));
    for (unsigned k = 0; k < len; ++k) body.push_back(2 + rand0n(static_cast<int>(VOCAB_SIZE) - 2));
    vector<int> src{kSOS}, tgt{kSOS};
    src.insert(src.end(), body.begin(), body.end());
    tgt.insert(tgt.end(), body.rbegin(), body.rend());
    src.push_back(kEOS);
    tgt.push_back(kEOS);
    sources.push_back(src);
    targets.push_back(tgt);
  }

  ParameterCollection model;
  AdamTrainer sgd(model, 0.01f);
  AttentionalModel<LSTMBuilder> lm(model);
  Seq2SeqRun run;
  Timer iteration("completed in");
  for (unsigned epoch = 0; epoch < epochs; ++epoch) {
    double loss = 0;
    for (unsigned i = 0; i < sources.size(); ++i) {
      ComputationGraph cg;
      Expression loss_expr = lm.BuildGraph(sources[i], targets[i], cg);
      loss += as_scalar(cg.forward(loss_expr));
      cg.backward(loss_expr);
      sgd.update();
    }
    run.epoch_losses.push_back(static_cast<float>(loss));
  }
  for (unsigned i = 0; i < sources.size(); ++i) {
    ComputationGraph cg;
    const vector<int> out = lm.Greedy(sources[i], cg, 8);
    const vector<int> want(targets[i].begin() + 1, targets[i].end() - 1);
    run.exact += out == want;
    ++run.total;
  }
  cout << "attention: loss " << run.epoch_losses.front() << " -> " << run.epoch_losses.back() << ", "
       << run.exact << '/' << run.total << " reversed exactly" << endl;
  return run;
}

LmRun train_batched_lm(unsigned epochs, unsigned seed) {
  reset_rng(seed);
  // a tiny corpus: sentences of 6 tokens from a counting pattern, so the next word is predictable
  Dict d;
  const int kS = d.convert("<s>"), kE = d.convert("</s>");
  vector<vector<int>> corpus;
  const vector<string> words{"one", "two", "three", "four", "five"};
  for (unsigned start = 0; start < 5; ++start)
    for (unsigned rep = 0; rep < 2; ++rep) {
      vector<int> s{kS};
      for (unsigned k = 0; k < 4; ++k) s.push_back(d.convert(words[(start + k) % words.size()]));
      s.push_back(kE);
      corpus.push_back(s);
    }
  d.freeze();

  ParameterCollection model;
  SimpleSGDTrainer sgd(model, 0.2f);
  RNNBatchLanguageModel<LSTMBuilder> lm(model, d.size());
  LmRun run;
  {
    ComputationGraph cg;
    run.batched_loss = as_scalar(cg.forward(lm.getNegLogProb(corpus, 0, 4, cg)));
  }
  for (unsigned i = 0; i < 4; ++i) {
    ComputationGraph cg;
    run.per_sentence_loss += as_scalar(cg.forward(lm.getNegLogProb(corpus, i, 1, cg)));
  }
  const unsigned batch = 5;
  for (unsigned epoch = 0; epoch < epochs; ++epoch) {
    double loss = 0;
    for (unsigned first = 0; first < corpus.size(); first += batch) {
      ComputationGraph cg;
      Expression loss_expr = lm.getNegLogProb(corpus, first, batch, cg);
      loss += as_scalar(cg.forward(loss_expr));
      cg.backward(loss_expr);
      sgd.update();
    }
    run.epoch_losses.push_back(static_cast<float>(loss));
  }
  cout << "batched LM: loss " << run.epoch_losses.front() << " -> " << run.epoch_losses.back() << endl;
  return run;
}

}  // namespace compat_examples
