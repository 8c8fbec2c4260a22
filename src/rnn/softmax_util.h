// Helpers shared by the softmax builders (not installed).
#pragma once

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/expr.h"
#include "dynet/globals.h"

namespace dynet::softmax_detail {

// Throws unless new_graph was called and rep lives in that graph.
inline void check_graph(const char* where, const ComputationGraph* pcg, const Expression& rep) {
  if (!pcg) throw std::runtime_error(std::string(where) + ": call new_graph(cg) first");
  if (rep.pg != pcg)
    throw std::invalid_argument(std::string(where) + ": rep belongs to another graph than the one given to new_graph");
}

inline void check_rep(const char* where, const Expression& rep, unsigned rep_dim) {
  const Dim& d = rep.dim();
  if (d.rows() != rep_dim || d.batch_size() != rep_dim)
    throw std::invalid_argument(std::string(where) + ": rep " + d.str() + " does not match rep_dim " +
                                std::to_string(rep_dim));
}

inline void check_class(const char* where, unsigned classidx, unsigned num_classes) {
  if (classidx >= num_classes)
    throw std::invalid_argument(std::string(where) + ": class " + std::to_string(classidx) + " out of range (" +
                                std::to_string(num_classes) + " classes)");
}

inline void check_batch(const char* where, const Expression& rep, size_t num_classes) {
  if (rep.dim().bd != num_classes)
    throw std::invalid_argument(std::string(where) + ": rep " + rep.dim().str() + " has " +
                                std::to_string(rep.dim().bd) + " batch elements but " + std::to_string(num_classes) +
                                " classes were given");
}

inline void check_unbatched(const char* where, const Expression& rep) {
  if (rep.dim().bd != 1)
    throw std::invalid_argument(std::string(where) + ": rep must not be batched, got " + rep.dim().str());
}

// Index drawn from the probabilities `dist` (forwarded here).
inline unsigned draw(const Expression& dist) {
  const std::vector<float> p = as_vector(dist.value());
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(random_engine());
  for (unsigned k = 0; k < p.size(); ++k) {
    u -= p[k];
    if (u < 0.0) return k;
  }
  return static_cast<unsigned>(p.size()) - 1;  // rounding left a little mass past the end
}

// Log-probability given to word ids that are in no cluster (DyNet's stand-in for -inf).
constexpr float kMissingWordLogit = -10000.f;

// The values of blocks[k][i] placed at position block_words[k][i] of a vocab-sized vector;
// positions no block covers get kMissingWordLogit.
inline Expression gather_by_word(ComputationGraph& cg, std::vector<Expression> blocks,
                                 const std::vector<std::vector<unsigned>>& block_words, unsigned vocab) {
  constexpr unsigned kUnset = ~0u;
  std::vector<unsigned> source(vocab, kUnset);
  unsigned offset = 0;
  for (const auto& words : block_words)
    for (unsigned w : words) source[w] = offset++;
  bool missing = false;
  for (unsigned& s : source)
    if (s == kUnset) {
      s = offset;
      missing = true;
    }
  if (missing) blocks.push_back(constant(cg, Dim({1}), kMissingWordLogit));
  return select_rows(concatenate(blocks), source);
}

}  // namespace dynet::softmax_detail
