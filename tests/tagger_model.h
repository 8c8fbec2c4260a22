// A BiLSTM tagger over random sentences, shared by the autobatching and device counter tests.
#pragma once

#include <functional>
#include <random>
#include <vector>

#include "dynet/expr.h"
#include "dynet/lstm.h"

namespace dynet::test {

// n sentences of 2-7 random words below vocab.
inline std::vector<std::vector<unsigned>> sentences(unsigned n, unsigned vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<unsigned>> out(n);
  for (auto& s : out) {
    s.resize(2 + rng() % 6);
    for (unsigned& w : s) w = rng() % vocab;
  }
  return out;
}

// A BiLSTM tagger (the benchmark's model, small): per-word MLP over both directions, pickneglogsoftmax.
struct Tagger {
  static constexpr unsigned kWords = 20, kTags = 5, kEmbed = 8, kHidden = 6, kMlp = 5;
  LookupParameter embed;
  VanillaLSTMBuilder fw, bw;
  Parameter hw, hb, ow, ob;
  Tagger(ParameterCollection& pc, unsigned input = kEmbed)
      : embed(pc.add_lookup_parameters(kWords, {kEmbed})), fw(1, input, kHidden, pc), bw(1, input, kHidden, pc),
        hw(pc.add_parameters({kMlp, 2 * kHidden})), hb(pc.add_parameters({kMlp})), ow(pc.add_parameters({kTags, kMlp})),
        ob(pc.add_parameters({kTags})) {}
  Expression loss(ComputationGraph& g, const std::vector<std::vector<unsigned>>& data,
                  const std::function<Expression(ComputationGraph&, unsigned)>& word = nullptr) {
    fw.new_graph(g);
    bw.new_graph(g);
    Expression w1 = parameter(g, hw), b1 = parameter(g, hb), w2 = parameter(g, ow), b2 = parameter(g, ob);
    std::vector<Expression> losses;
    for (const auto& s : data) {
      std::vector<Expression> xs;
      for (unsigned w : s) xs.push_back(word ? word(g, w) : lookup(g, embed, w));
      fw.start_new_sequence();
      bw.start_new_sequence();
      std::vector<Expression> f(xs.size()), b(xs.size());
      for (size_t t = 0; t < xs.size(); ++t) f[t] = fw.add_input(xs[t]);
      for (size_t t = xs.size(); t-- > 0;) b[t] = bw.add_input(xs[t]);
      for (size_t t = 0; t < xs.size(); ++t) {
        Expression h = tanh(affine_transform({b1, w1, concatenate({f[t], b[t]})}));
        losses.push_back(pickneglogsoftmax(affine_transform({b2, w2, h}), s[t] % kTags));
      }
    }
    return sum(losses);
  }
};

}  // namespace dynet::test
