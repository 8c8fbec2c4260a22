#include "dynet/cfsm-builder.h"

#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

#include "dynet/globals.h"
#include "dynet/param-init.h"
#include "rnn/builder_util.h"
#include "rnn/softmax_util.h"

namespace dynet {

using namespace softmax_detail;
using rnn_detail::param_expr;

SoftmaxBuilder::~SoftmaxBuilder() = default;

Expression SoftmaxBuilder::full_log_distribution(const Expression& rep) { return log_softmax(full_logits(rep)); }

// ---------------- StandardSoftmaxBuilder ----------------

StandardSoftmaxBuilder::StandardSoftmaxBuilder() = default;

StandardSoftmaxBuilder::StandardSoftmaxBuilder(unsigned rep_dim, unsigned num_classes, ParameterCollection& pc,
                                               bool bias)
    : bias(bias), owns_collection_(true), rep_dim_(rep_dim), num_classes_(num_classes) {
  if (rep_dim == 0 || num_classes == 0)
    throw std::invalid_argument("StandardSoftmaxBuilder: rep_dim and num_classes must be positive, got " +
                                std::to_string(rep_dim) + ", " + std::to_string(num_classes));
  local_model = pc.add_subcollection("standard-softmax-builder");
  p_w = local_model.add_parameters({num_classes, rep_dim});
  if (bias) p_b = local_model.add_parameters({num_classes}, ParameterInitConst(0.f));
}

StandardSoftmaxBuilder::StandardSoftmaxBuilder(Parameter& p_w, Parameter& p_b) : p_w(p_w), p_b(p_b), bias(true) {
  const Dim w = p_w.dim(), b = p_b.dim();
  if (w.nd != 2 || b.nd != 1 || b[0] != w[0])
    throw std::invalid_argument("StandardSoftmaxBuilder: W " + w.str() + " and b " + b.str() +
                                " must be {num_classes, rep_dim} and {num_classes}");
  num_classes_ = w[0];
  rep_dim_ = w[1];
}

StandardSoftmaxBuilder::StandardSoftmaxBuilder(Parameter& p_w) : p_w(p_w), bias(false) {
  const Dim w = p_w.dim();
  if (w.nd != 2) throw std::invalid_argument("StandardSoftmaxBuilder: W " + w.str() + " must be {num_classes, rep_dim}");
  num_classes_ = w[0];
  rep_dim_ = w[1];
}

ParameterCollection& StandardSoftmaxBuilder::get_parameter_collection() {
  if (!owns_collection_)
    throw std::runtime_error(
        "StandardSoftmaxBuilder::get_parameter_collection: the builder was made from existing parameters and owns "
        "no collection");
  return local_model;
}

void StandardSoftmaxBuilder::new_graph(ComputationGraph& cg, bool update) {
  if (!p_w.is_valid()) throw std::runtime_error("StandardSoftmaxBuilder::new_graph: the builder has no parameters");
  pcg = &cg;
  w = param_expr(cg, p_w, update);
  if (bias) b = param_expr(cg, p_b, update);
}

void StandardSoftmaxBuilder::check_ready(const char* where, const Expression& rep) const {
  check_graph(where, pcg, rep);
  check_rep(where, rep, rep_dim_);
}

Expression StandardSoftmaxBuilder::full_logits(const Expression& rep) {
  check_ready("StandardSoftmaxBuilder::full_logits", rep);
  return bias ? affine_transform({b, w, rep}) : w * rep;
}

Expression StandardSoftmaxBuilder::neg_log_softmax(const Expression& rep, unsigned classidx) {
  check_class("StandardSoftmaxBuilder::neg_log_softmax", classidx, num_classes_);
  return pickneglogsoftmax(full_logits(rep), classidx);
}

Expression StandardSoftmaxBuilder::neg_log_softmax(const Expression& rep, const std::vector<unsigned>& classidxs) {
  check_batch("StandardSoftmaxBuilder::neg_log_softmax", rep, classidxs.size());
  for (unsigned c : classidxs) check_class("StandardSoftmaxBuilder::neg_log_softmax", c, num_classes_);
  return pickneglogsoftmax(full_logits(rep), classidxs);
}

unsigned StandardSoftmaxBuilder::sample(const Expression& rep) {
  check_unbatched("StandardSoftmaxBuilder::sample", rep);
  return draw(softmax(full_logits(rep)));
}

// ---------------- ClassFactoredSoftmaxBuilder ----------------

ClassFactoredSoftmaxBuilder::ClassFactoredSoftmaxBuilder() = default;

ClassFactoredSoftmaxBuilder::ClassFactoredSoftmaxBuilder(unsigned rep_dim, const std::string& cluster_file,
                                                         Dict& word_dict, ParameterCollection& pc, bool bias)
    : bias(bias), rep_dim_(rep_dim) {
  if (rep_dim == 0) throw std::invalid_argument("ClassFactoredSoftmaxBuilder: rep_dim must be positive");
  read_cluster_file(cluster_file, word_dict);
  const unsigned num_clusters = cdict.size();
  local_model = pc.add_subcollection("class-factored-softmax-builder");
  p_r2c = local_model.add_parameters({num_clusters, rep_dim});
  if (bias) p_cbias = local_model.add_parameters({num_clusters}, ParameterInitConst(0.f));
  p_rc2ws.resize(num_clusters);
  p_rcwbiases.resize(num_clusters);
  for (unsigned c = 0; c < num_clusters; ++c) {
    const unsigned size = static_cast<unsigned>(cidx2words[c].size());
    if (size < 2) continue;  // p(w | cluster) = 1: nothing to learn
    p_rc2ws[c] = local_model.add_parameters({size, rep_dim});
    if (bias) p_rcwbiases[c] = local_model.add_parameters({size}, ParameterInitConst(0.f));
  }
}

void ClassFactoredSoftmaxBuilder::read_cluster_file(const std::string& cluster_file, Dict& word_dict) {
  const char* where = "ClassFactoredSoftmaxBuilder";
  std::ifstream in(cluster_file);
  if (!in) throw std::invalid_argument(std::string(where) + ": cannot open cluster file '" + cluster_file + "'");
  std::string line;
  unsigned line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream fields(line);
    std::string cluster, word;
    if (!(fields >> cluster)) continue;  // blank line
    if (!(fields >> word))
      throw std::invalid_argument(std::string(where) + ": " + cluster_file + " line " + std::to_string(line_no) +
                                  ": expected \"cluster word\", got '" + line + "'");
    if (word_dict.is_frozen() && !word_dict.contains(word)) continue;  // it could only be the unk word
    const unsigned c = static_cast<unsigned>(cdict.convert(cluster));
    const unsigned w = static_cast<unsigned>(word_dict.convert(word));
    if (w >= widx2cidx.size()) {
      widx2cidx.resize(w + 1, -1);
      widx2cwidx.resize(w + 1, 0);
    }
    if (widx2cidx[w] >= 0)
      throw std::invalid_argument(std::string(where) + ": " + cluster_file + " line " + std::to_string(line_no) +
                                  ": word '" + word + "' is already in a cluster");
    if (c >= cidx2words.size()) cidx2words.resize(c + 1);
    widx2cidx[w] = static_cast<int>(c);
    widx2cwidx[w] = static_cast<unsigned>(cidx2words[c].size());
    cidx2words[c].push_back(w);
  }
  if (cidx2words.empty())
    throw std::invalid_argument(std::string(where) + ": cluster file '" + cluster_file + "' has no clusters");
  singleton_cluster.resize(cidx2words.size());
  for (size_t c = 0; c < cidx2words.size(); ++c) singleton_cluster[c] = cidx2words[c].size() == 1;
}

void ClassFactoredSoftmaxBuilder::new_graph(ComputationGraph& cg, bool update) {
  if (!p_r2c.is_valid())
    throw std::runtime_error("ClassFactoredSoftmaxBuilder::new_graph: the builder has no parameters");
  pcg = &cg;
  this->update = update;
  r2c = param_expr(cg, p_r2c, update);
  if (bias) cbias = param_expr(cg, p_cbias, update);
  rc2ws.assign(cdict.size(), Expression());
  rc2biases.assign(cdict.size(), Expression());
}

void ClassFactoredSoftmaxBuilder::check_ready(const char* where, const Expression& rep) const {
  check_graph(where, pcg, rep);
  check_rep(where, rep, rep_dim_);
}

unsigned ClassFactoredSoftmaxBuilder::cluster_of(const char* where, unsigned wordidx) const {
  if (wordidx >= widx2cidx.size() || widx2cidx[wordidx] < 0)
    throw std::invalid_argument(std::string(where) + ": word id " + std::to_string(wordidx) +
                                " is in no cluster of the cluster file");
  return static_cast<unsigned>(widx2cidx[wordidx]);
}

Expression& ClassFactoredSoftmaxBuilder::get_rc2w(unsigned c) {
  Expression& e = rc2ws[c];
  if (!e.pg) e = param_expr(*pcg, p_rc2ws[c], update);
  return e;
}

Expression& ClassFactoredSoftmaxBuilder::get_rc2wbias(unsigned c) {
  Expression& e = rc2biases[c];
  if (!e.pg) e = param_expr(*pcg, p_rcwbiases[c], update);
  return e;
}

Expression ClassFactoredSoftmaxBuilder::class_logits(const Expression& rep) {
  check_ready("ClassFactoredSoftmaxBuilder::class_logits", rep);
  return bias ? affine_transform({cbias, r2c, rep}) : r2c * rep;
}

Expression ClassFactoredSoftmaxBuilder::class_log_distribution(const Expression& rep) {
  return log_softmax(class_logits(rep));
}

Expression ClassFactoredSoftmaxBuilder::subclass_logits(const Expression& rep, unsigned clusteridx) {
  check_ready("ClassFactoredSoftmaxBuilder::subclass_logits", rep);
  if (clusteridx >= cidx2words.size())
    throw std::invalid_argument("ClassFactoredSoftmaxBuilder::subclass_logits: cluster " +
                                std::to_string(clusteridx) + " does not exist (there are " +
                                std::to_string(cidx2words.size()) + ")");
  // A one-word cluster: a single logit 0 (probability 1).
  if (singleton_cluster[clusteridx]) return zeros(*pcg, Dim({1}, rep.dim().bd));
  return bias ? affine_transform({get_rc2wbias(clusteridx), get_rc2w(clusteridx), rep}) : get_rc2w(clusteridx) * rep;
}

Expression ClassFactoredSoftmaxBuilder::subclass_log_distribution(const Expression& rep, unsigned clusteridx) {
  return log_softmax(subclass_logits(rep, clusteridx));
}

Expression ClassFactoredSoftmaxBuilder::neg_log_softmax(const Expression& rep, unsigned classidx) {
  const unsigned c = cluster_of("ClassFactoredSoftmaxBuilder::neg_log_softmax", classidx);
  Expression class_loss = pickneglogsoftmax(class_logits(rep), c);
  if (singleton_cluster[c]) return class_loss;
  return class_loss + pickneglogsoftmax(subclass_logits(rep, c), widx2cwidx[classidx]);
}

Expression ClassFactoredSoftmaxBuilder::neg_log_softmax(const Expression& rep,
                                                        const std::vector<unsigned>& classidxs) {
  check_batch("ClassFactoredSoftmaxBuilder::neg_log_softmax", rep, classidxs.size());
  if (classidxs.size() == 1) return neg_log_softmax(rep, classidxs[0]);
  // The cluster term is one batched loss; the word terms use each element's own cluster.
  std::vector<unsigned> clusters;
  for (unsigned w : classidxs) clusters.push_back(cluster_of("ClassFactoredSoftmaxBuilder::neg_log_softmax", w));
  Expression class_loss = pickneglogsoftmax(class_logits(rep), clusters);
  std::vector<Expression> word_losses;
  bool any_word_term = false;
  for (unsigned i = 0; i < classidxs.size(); ++i) {
    const unsigned c = clusters[i];
    if (singleton_cluster[c]) {
      word_losses.push_back(zeros(*pcg, Dim({1})));
    } else {
      word_losses.push_back(pickneglogsoftmax(subclass_logits(pick_batch_elem(rep, i), c), widx2cwidx[classidxs[i]]));
      any_word_term = true;
    }
  }
  return any_word_term ? class_loss + concatenate_to_batch(word_losses) : class_loss;
}

unsigned ClassFactoredSoftmaxBuilder::sample(const Expression& rep) {
  check_unbatched("ClassFactoredSoftmaxBuilder::sample", rep);
  const unsigned c = draw(softmax(class_logits(rep)));
  const unsigned w = singleton_cluster[c] ? 0 : draw(softmax(subclass_logits(rep, c)));
  return cidx2words[c][w];
}

Expression ClassFactoredSoftmaxBuilder::full_logits(const Expression& rep) {
  // Each cluster's block is log p(c) + log p(w | c) for its words; the blocks are then reordered
  // by word id.
  Expression class_dist = class_log_distribution(rep);
  std::vector<Expression> blocks;
  std::vector<std::vector<unsigned>> block_words;
  for (unsigned c = 0; c < cidx2words.size(); ++c) {
    Expression class_term = pick(class_dist, c);
    blocks.push_back(singleton_cluster[c] ? class_term : subclass_log_distribution(rep, c) + class_term);
    block_words.push_back(cidx2words[c]);
  }
  return gather_by_word(*pcg, blocks, block_words, static_cast<unsigned>(widx2cidx.size()));
}

}  // namespace dynet
