// HierarchicalSoftmaxBuilder: p(w | r) as a product of decisions along w's path in a tree of
// clusters read from a file.
#pragma once

#include <string>
#include <vector>

#include "dynet/cfsm-builder.h"
#include "dynet/dict.h"

namespace dynet {

// Each line of `cluster_file` is "s_1 s_2 ... s_k<TAB>word" (path symbols separated by spaces,
// then a tab, then the word; anything after the word is ignored; blank lines are skipped). The
// symbols name the nodes on the path from the root; the word hangs off the last one. A node holds
// either child nodes or words. Words are added to word_dict; when it is frozen, words it does not
// contain are skipped (they could only stand for its unk word).
// At a node with n outgoing branches: n = 1 is a certain step (no parameters); n = 2 is a binary
// decision p(branch 0) = σ(w·r + b) with w {1, rep_dim}, b {1}; n > 2 is softmax(W·r + b) with
// W {n, rep_dim}, b {n}. log p(w | r) sums the log-probabilities of the branches on w's path.
// Parameters (subcollection "hsm-builder"): W then b (b only with bias, initialised to 0) for each
// node, root first, children in order of first appearance in the file (depth first).
class HierarchicalSoftmaxBuilder : public SoftmaxBuilder {
 public:
  HierarchicalSoftmaxBuilder(unsigned rep_dim, const std::string& cluster_file, Dict& word_dict,
                             ParameterCollection& pc, bool bias = true);
  ~HierarchicalSoftmaxBuilder() override;

  void new_graph(ComputationGraph& cg, bool update = true) override;
  Expression neg_log_softmax(const Expression& rep, unsigned classidx) override;
  Expression neg_log_softmax(const Expression& rep, const std::vector<unsigned>& classidxs) override;
  unsigned sample(const Expression& rep) override;
  // Over word ids 0 .. (largest id in the file); ids not in the file get log-probability ≈ -1e4
  // (full_log_distribution likewise).
  Expression full_logits(const Expression& rep) override;

  // Number of tree nodes (the root included).
  unsigned num_nodes() const { return static_cast<unsigned>(nodes.size()); }

 private:
  struct Node {
    std::vector<unsigned> path_symbols;  // from the root
    std::vector<unsigned> children;      // node indices
    std::vector<unsigned> child_symbols;
    std::vector<unsigned> words;         // word ids (leaves)
    Parameter p_w, p_b;
    Expression w, b;  // in the current graph, made on first use
    unsigned branches() const { return static_cast<unsigned>(children.empty() ? words.size() : children.size()); }
  };
  struct Step {
    unsigned node, branch;
  };

  void read_cluster_file(const std::string& cluster_file, Dict& word_dict);
  unsigned child(unsigned node, unsigned symbol);
  void check_ready(const char* where, const Expression& rep) const;
  // Scores over a node's branches (the binary case as [w·r + b, 0]).
  Expression node_logits(unsigned node, const Expression& rep);

  std::vector<Node> nodes;                  // nodes[0] is the root
  std::vector<std::vector<Step>> word_path;  // word id -> branches taken from the root
  Dict path_symbols;
  bool bias = true;
  bool update = true;
  unsigned rep_dim_ = 0;
  ComputationGraph* pcg = nullptr;
};

}  // namespace dynet
