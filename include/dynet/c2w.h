// A word's representation read from its characters by two LSTMs (DyNet's dynet/c2w.h).
#pragma once

#include <map>
#include <vector>

#include "dynet/dynet.h"
#include "dynet/expr.h"
#include "dynet/lstm.h"
#include "dynet/model.h"

namespace dynet {

struct C2WBuilder {
  C2WBuilder(int vocab_size, unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& m)
      : local_model(m.add_subcollection("c2w-builder")),
        fc2w(layers, input_dim, hidden_dim, local_model),
        rc2w(layers, input_dim, hidden_dim, local_model),
        p_lookup(local_model.add_lookup_parameters(static_cast<unsigned>(vocab_size), {input_dim})) {}

  void new_graph(ComputationGraph* cg) {
    words.clear();
    wordid2vi.clear();
    fc2w.new_graph(*cg);
    rc2w.new_graph(*cg);
  }
  // [last forward state; last backward state] over the characters; computed once per word id
  // (a word type) and graph.
  VariableIndex add_word(int word_id, const std::vector<int>& chars, ComputationGraph* cg) {
    auto it = wordid2vi.find(word_id);
    if (it != wordid2vi.end()) return it->second;
    fc2w.start_new_sequence();
    rc2w.start_new_sequence();
    std::vector<Expression> ins;
    for (int c : chars) ins.push_back(lookup(*cg, p_lookup, static_cast<unsigned>(c)));
    for (const Expression& x : ins) fc2w.add_input(x);
    for (auto r = ins.rbegin(); r != ins.rend(); ++r) rc2w.add_input(*r);
    const VariableIndex v = concatenate({fc2w.back(), rc2w.back()}).i;
    words.push_back(v);
    wordid2vi.emplace(word_id, v);
    return v;
  }
  ParameterCollection& get_parameters() { return local_model; }

  ParameterCollection local_model;
  LSTMBuilder fc2w;
  LSTMBuilder rc2w;
  LookupParameter p_lookup;
  std::vector<VariableIndex> words;
  std::map<int, VariableIndex> wordid2vi;
};

}  // namespace dynet
