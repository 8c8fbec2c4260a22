#include "dynet/hsm-builder.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "dynet/param-init.h"
#include "rnn/builder_util.h"
#include "rnn/softmax_util.h"

namespace dynet {

using namespace softmax_detail;
using rnn_detail::param_expr;

HierarchicalSoftmaxBuilder::HierarchicalSoftmaxBuilder(unsigned rep_dim, const std::string& cluster_file,
                                                       Dict& word_dict, ParameterCollection& pc, bool bias)
    : bias(bias), rep_dim_(rep_dim) {
  if (rep_dim == 0) throw std::invalid_argument("HierarchicalSoftmaxBuilder: rep_dim must be positive");
  read_cluster_file(cluster_file, word_dict);
  local_model = pc.add_subcollection("hsm-builder");
  // Depth first from the root, children in order of appearance.
  std::vector<unsigned> stack = {0};
  while (!stack.empty()) {
    Node& n = nodes[stack.back()];
    stack.pop_back();
    const unsigned k = n.branches();
    if (k >= 2) {
      const unsigned rows = k == 2 ? 1 : k;
      n.p_w = local_model.add_parameters({rows, rep_dim});
      if (bias) n.p_b = local_model.add_parameters({rows}, ParameterInitConst(0.f));
    }
    for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) stack.push_back(*it);
  }
}

HierarchicalSoftmaxBuilder::~HierarchicalSoftmaxBuilder() = default;

unsigned HierarchicalSoftmaxBuilder::child(unsigned node, unsigned symbol) {
  for (size_t k = 0; k < nodes[node].child_symbols.size(); ++k)
    if (nodes[node].child_symbols[k] == symbol) return nodes[node].children[k];
  const unsigned id = static_cast<unsigned>(nodes.size());
  Node fresh;
  fresh.path_symbols = nodes[node].path_symbols;
  fresh.path_symbols.push_back(symbol);
  nodes.push_back(std::move(fresh));
  nodes[node].children.push_back(id);
  nodes[node].child_symbols.push_back(symbol);
  return id;
}

void HierarchicalSoftmaxBuilder::read_cluster_file(const std::string& cluster_file, Dict& word_dict) {
  const std::string where = "HierarchicalSoftmaxBuilder: " + cluster_file + " line ";
  std::ifstream in(cluster_file);
  if (!in)
    throw std::invalid_argument("HierarchicalSoftmaxBuilder: cannot open cluster file '" + cluster_file + "'");
  nodes.assign(1, Node());
  std::string line;
  unsigned line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
    const size_t tab = line.find('\t', line.find_first_not_of(" \t"));
    std::istringstream path_part(line.substr(0, tab));
    std::vector<std::string> symbols;
    for (std::string s; path_part >> s;) symbols.push_back(s);
    std::string word;
    if (tab != std::string::npos) std::istringstream(line.substr(tab + 1)) >> word;
    if (symbols.empty() || word.empty())
      throw std::invalid_argument(where + std::to_string(line_no) + ": expected \"path symbols<TAB>word\", got '" +
                                  line + "'");
    if (word_dict.is_frozen() && !word_dict.contains(word)) continue;  // it could only be the unk word
    unsigned node = 0;
    for (const std::string& s : symbols) node = child(node, static_cast<unsigned>(path_symbols.convert(s)));
    const unsigned w = static_cast<unsigned>(word_dict.convert(word));
    if (!nodes[node].children.empty())
      throw std::invalid_argument(where + std::to_string(line_no) + ": node '" + line.substr(0, tab) +
                                  "' has child nodes and cannot also hold words");
    if (w < word_path.size() && !word_path[w].empty())
      throw std::invalid_argument(where + std::to_string(line_no) + ": word '" + word + "' appears twice");
    if (w >= word_path.size()) word_path.resize(w + 1);
    nodes[node].words.push_back(w);
    // The path: each ancestor's branch towards this node, then the word's place at the leaf.
    std::vector<Step> steps;
    unsigned at = 0;
    for (const std::string& s : symbols) {
      const unsigned sym = static_cast<unsigned>(path_symbols.convert(s));
      const Node& n = nodes[at];
      unsigned k = 0;
      while (n.child_symbols[k] != sym) ++k;
      steps.push_back({at, k});
      at = n.children[k];
    }
    steps.push_back({node, static_cast<unsigned>(nodes[node].words.size() - 1)});
    word_path[w] = std::move(steps);
  }
  for (const Node& n : nodes)
    if (!n.children.empty() && !n.words.empty())
      throw std::invalid_argument("HierarchicalSoftmaxBuilder: " + cluster_file +
                                  ": a node holds both child nodes and words");
  if (word_path.empty())
    throw std::invalid_argument("HierarchicalSoftmaxBuilder: cluster file '" + cluster_file + "' has no words");
}

void HierarchicalSoftmaxBuilder::new_graph(ComputationGraph& cg, bool update) {
  pcg = &cg;
  this->update = update;
  for (Node& n : nodes) n.w = n.b = Expression();
}

void HierarchicalSoftmaxBuilder::check_ready(const char* where, const Expression& rep) const {
  check_graph(where, pcg, rep);
  check_rep(where, rep, rep_dim_);
}

Expression HierarchicalSoftmaxBuilder::node_logits(unsigned node, const Expression& rep) {
  Node& n = nodes[node];
  if (!n.w.pg) {
    n.w = param_expr(*pcg, n.p_w, update);
    if (bias) n.b = param_expr(*pcg, n.p_b, update);
  }
  Expression scores = bias ? affine_transform({n.b, n.w, rep}) : n.w * rep;
  // Binary node: p(branch 0) = σ(s) = softmax([s, 0])[0].
  if (n.branches() == 2) scores = concatenate({scores, zeros(*pcg, Dim({1}))});
  return scores;
}

Expression HierarchicalSoftmaxBuilder::neg_log_softmax(const Expression& rep, unsigned classidx) {
  check_ready("HierarchicalSoftmaxBuilder::neg_log_softmax", rep);
  if (classidx >= word_path.size() || word_path[classidx].empty())
    throw std::invalid_argument("HierarchicalSoftmaxBuilder::neg_log_softmax: word id " + std::to_string(classidx) +
                                " is not in the cluster file");
  std::vector<Expression> terms;
  for (const Step& s : word_path[classidx])
    if (nodes[s.node].branches() > 1) terms.push_back(pickneglogsoftmax(node_logits(s.node, rep), s.branch));
  // A single word under a chain of single branches is certain.
  if (terms.empty()) return zeros(*pcg, Dim({1}, rep.dim().bd));
  return terms.size() == 1 ? terms[0] : sum(terms);
}

Expression HierarchicalSoftmaxBuilder::neg_log_softmax(const Expression& rep, const std::vector<unsigned>& classidxs) {
  check_batch("HierarchicalSoftmaxBuilder::neg_log_softmax", rep, classidxs.size());
  if (classidxs.size() == 1) return neg_log_softmax(rep, classidxs[0]);
  std::vector<Expression> losses;
  for (unsigned i = 0; i < classidxs.size(); ++i) losses.push_back(neg_log_softmax(pick_batch_elem(rep, i), classidxs[i]));
  return concatenate_to_batch(losses);
}

unsigned HierarchicalSoftmaxBuilder::sample(const Expression& rep) {
  check_ready("HierarchicalSoftmaxBuilder::sample", rep);
  check_unbatched("HierarchicalSoftmaxBuilder::sample", rep);
  unsigned node = 0;
  for (;;) {
    const Node& n = nodes[node];
    const unsigned k = n.branches() > 1 ? draw(softmax(node_logits(node, rep))) : 0;
    if (n.children.empty()) return n.words[k];
    node = n.children[k];
  }
}

Expression HierarchicalSoftmaxBuilder::full_logits(const Expression& rep) {
  check_ready("HierarchicalSoftmaxBuilder::full_logits", rep);
  // log p(reaching node) accumulates down the tree; each leaf contributes a block of its words.
  std::vector<Expression> blocks;
  std::vector<std::vector<unsigned>> block_words;
  std::vector<std::pair<unsigned, Expression>> stack = {{0u, zeros(*pcg, Dim({1}))}};
  while (!stack.empty()) {
    auto [node, reach] = stack.back();
    stack.pop_back();
    const Node& n = nodes[node];
    Expression branch_log_probs;
    if (n.branches() > 1) branch_log_probs = log_softmax(node_logits(node, rep));
    if (n.children.empty()) {
      blocks.push_back(n.branches() > 1 ? branch_log_probs + reach : reach);
      block_words.push_back(n.words);
    } else {
      for (unsigned k = 0; k < n.children.size(); ++k)
        stack.push_back({n.children[k], n.branches() > 1 ? reach + pick(branch_log_probs, k) : reach});
    }
  }
  return gather_by_word(*pcg, blocks, block_words, static_cast<unsigned>(word_path.size()));
}

}  // namespace dynet
