// A binary Tree-LSTM over random trees, shared by the autobatching and fusion tests: the benchmark's cell
// (pick_range slices of one affine transform, σ, tanh, ⊙, +), a softmax loss at each root.
#pragma once

#include <functional>
#include <random>
#include <vector>

#include "dynet/expr.h"

namespace dynet::test {

// `trees` random binary trees (post-order, 2-7 leaves, random words), cells of `hidden` units, its
// parameters on `device` (null: the default device).
inline std::function<Expression(ComputationGraph&)> tree_lstm(ParameterCollection& pc, unsigned hidden,
                                                              unsigned trees, Device* device = nullptr) {
  constexpr unsigned kVocab = 15, kEmbed = 6, kClasses = 3;
  const unsigned h = hidden;
  LookupParameter embed = pc.add_lookup_parameters(kVocab, {kEmbed}, "", device);
  auto weight = [&](const Dim& d) { return pc.add_parameters(d, 0.f, "", device); };
  Parameter lw = weight({3 * h, kEmbed}), lb = weight({3 * h});
  Parameter ul = weight({5 * h, h}), ur = weight({5 * h, h}), nb = weight({5 * h});
  Parameter ow = weight({kClasses, h}), ob = weight({kClasses});
  struct TreeNode {
    int left, right;
    unsigned word;
  };
  std::mt19937 rng(3);
  std::vector<std::vector<TreeNode>> forest(trees);
  for (auto& t : forest) {
    std::vector<int> stack;
    const unsigned leaves = 2 + rng() % 6;
    for (unsigned k = 0; k < leaves; ++k) {
      t.push_back({-1, -1, static_cast<unsigned>(rng() % kVocab)});
      stack.push_back(static_cast<int>(t.size() - 1));
      while (stack.size() >= 2 && (k + 1 == leaves || rng() % 2)) {
        const int r = stack.back();
        stack.pop_back();
        const int l = stack.back();
        stack.pop_back();
        t.push_back({l, r, 0});
        stack.push_back(static_cast<int>(t.size() - 1));
      }
    }
  }
  return [=](ComputationGraph& g) {
    Expression LW = parameter(g, lw), LB = parameter(g, lb), UL = parameter(g, ul), UR = parameter(g, ur),
               NB = parameter(g, nb), OW = parameter(g, ow), OB = parameter(g, ob);
    std::vector<Expression> losses;
    for (size_t ti = 0; ti < forest.size(); ++ti) {
      const auto& t = forest[ti];
      std::vector<Expression> hs(t.size()), cs(t.size());
      for (size_t k = 0; k < t.size(); ++k) {
        if (t[k].left < 0) {
          Expression gt = affine_transform({LB, LW, lookup(g, embed, t[k].word)});
          cs[k] = cmult(logistic(pick_range(gt, 0, h)), tanh(pick_range(gt, 2 * h, 3 * h)));
          hs[k] = cmult(logistic(pick_range(gt, h, 2 * h)), tanh(cs[k]));
        } else {
          Expression gt = affine_transform({NB, UL, hs[t[k].left], UR, hs[t[k].right]});
          cs[k] = cmult(logistic(pick_range(gt, 0, h)), tanh(pick_range(gt, 4 * h, 5 * h))) +
                  cmult(logistic(pick_range(gt, h, 2 * h)), cs[t[k].left]) +
                  cmult(logistic(pick_range(gt, 2 * h, 3 * h)), cs[t[k].right]);
          hs[k] = cmult(logistic(pick_range(gt, 3 * h, 4 * h)), tanh(cs[k]));
        }
      }
      losses.push_back(pickneglogsoftmax(affine_transform({OB, OW, hs.back()}), unsigned(ti % kClasses)));
    }
    return sum(losses);
  };
}

}  // namespace dynet::test
