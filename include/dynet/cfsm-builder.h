// Softmax builders: the SoftmaxBuilder interface, StandardSoftmaxBuilder (one affine layer over
// all classes) and ClassFactoredSoftmaxBuilder (p(w | r) = p(cluster | r) · p(w | cluster, r)).
#pragma once

#include <string>
#include <vector>

#include "dynet/dict.h"
#include "dynet/expr.h"
#include "dynet/model.h"

namespace dynet {

// Maps a representation r to a distribution over classes (words). Call new_graph once per graph
// before the other methods.
class SoftmaxBuilder {
 public:
  virtual ~SoftmaxBuilder();

  // Adds the builder's parameters to cg (as constants when !update).
  virtual void new_graph(ComputationGraph& cg, bool update = true) = 0;
  // -log p(classidx | rep).
  virtual Expression neg_log_softmax(const Expression& rep, unsigned classidx) = 0;
  // One class per batch element of rep (classidxs.size() == rep's batch size); a batched loss.
  virtual Expression neg_log_softmax(const Expression& rep, const std::vector<unsigned>& classidxs) = 0;
  // Draws a class from p(· | rep) (rep unbatched); runs the forward pass up to the distribution.
  virtual unsigned sample(const Expression& rep) = 0;
  // log p(· | rep) over all classes: log_softmax(full_logits(rep)).
  virtual Expression full_log_distribution(const Expression& rep);
  // Scores whose log_softmax is full_log_distribution.
  virtual Expression full_logits(const Expression& rep) = 0;
  virtual ParameterCollection& get_parameter_collection() { return local_model; }

 protected:
  ParameterCollection local_model;
};

// logits = W·rep (+ b). Parameters (subcollection "standard-softmax-builder"): W {num_classes,
// rep_dim} and, with bias, b {num_classes} initialised to 0.
class StandardSoftmaxBuilder : public SoftmaxBuilder {
 public:
  StandardSoftmaxBuilder();
  StandardSoftmaxBuilder(unsigned rep_dim, unsigned num_classes, ParameterCollection& pc, bool bias = true);
  // Over existing parameters W {num_classes, rep_dim} and b {num_classes}, or W alone (no bias).
  // Such a builder owns no collection: get_parameter_collection() throws std::runtime_error.
  StandardSoftmaxBuilder(Parameter& p_w, Parameter& p_b);
  explicit StandardSoftmaxBuilder(Parameter& p_w);

  void new_graph(ComputationGraph& cg, bool update = true) override;
  Expression neg_log_softmax(const Expression& rep, unsigned classidx) override;
  Expression neg_log_softmax(const Expression& rep, const std::vector<unsigned>& classidxs) override;
  unsigned sample(const Expression& rep) override;
  Expression full_logits(const Expression& rep) override;
  ParameterCollection& get_parameter_collection() override;

  Parameter p_w, p_b;
  Expression w, b;

 private:
  void check_ready(const char* where, const Expression& rep) const;
  bool bias = true;
  bool owns_collection_ = false;
  unsigned rep_dim_ = 0, num_classes_ = 0;
  ComputationGraph* pcg = nullptr;
};

// Words are grouped into clusters read from `cluster_file`, one "cluster word" pair per line
// (whitespace-separated; anything after the word, such as a count, is ignored; blank lines are
// skipped). Words are added to word_dict; when it is frozen, words it does not contain are skipped
// (they could only stand for its unk word).
//   log p(w | r) = log softmax(R·r + c)[cluster(w)] + log softmax(R_k·r + c_k)[position of w in k]
// A cluster with one word has no word-level parameters (p(w | cluster) = 1).
// Parameters (subcollection "class-factored-softmax-builder"): r2c {clusters, rep_dim}, with bias
// cbias {clusters}; then for each cluster k with more than one word, in cluster order,
// rc2w_k {size_k, rep_dim} and with bias rcwbias_k {size_k}. Biases start at 0.
class ClassFactoredSoftmaxBuilder : public SoftmaxBuilder {
 public:
  ClassFactoredSoftmaxBuilder();
  ClassFactoredSoftmaxBuilder(unsigned rep_dim, const std::string& cluster_file, Dict& word_dict,
                              ParameterCollection& pc, bool bias = true);

  void new_graph(ComputationGraph& cg, bool update = true) override;
  Expression neg_log_softmax(const Expression& rep, unsigned classidx) override;
  Expression neg_log_softmax(const Expression& rep, const std::vector<unsigned>& classidxs) override;
  unsigned sample(const Expression& rep) override;
  // Over word ids 0 .. (largest clustered id); ids in no cluster get log-probability ≈ -1e4.
  Expression full_logits(const Expression& rep) override;

  // log p(· | rep) and scores over the clusters.
  Expression class_log_distribution(const Expression& rep);
  Expression class_logits(const Expression& rep);
  // log p(· | cluster, rep) and scores over the words of one cluster (in file order).
  Expression subclass_log_distribution(const Expression& rep, unsigned clusteridx);
  Expression subclass_logits(const Expression& rep, unsigned clusteridx);

  Dict cdict;                                     // cluster names
  std::vector<int> widx2cidx;                     // word id -> cluster id (-1: in no cluster)
  std::vector<unsigned> widx2cwidx;               // word id -> position within its cluster
  std::vector<std::vector<unsigned>> cidx2words;  // cluster id -> word ids
  std::vector<bool> singleton_cluster;            // cluster id -> has exactly one word
  Parameter p_r2c, p_cbias;
  std::vector<Parameter> p_rc2ws, p_rcwbiases;  // per cluster (unset for singletons)

 private:
  void read_cluster_file(const std::string& cluster_file, Dict& word_dict);
  void check_ready(const char* where, const Expression& rep) const;
  unsigned cluster_of(const char* where, unsigned wordidx) const;
  Expression& get_rc2w(unsigned clusteridx);
  Expression& get_rc2wbias(unsigned clusteridx);

  bool bias = true;
  bool update = true;
  unsigned rep_dim_ = 0;
  ComputationGraph* pcg = nullptr;
  Expression r2c, cbias;
  std::vector<Expression> rc2ws, rc2biases;  // made on first use in each graph
};

}  // namespace dynet
