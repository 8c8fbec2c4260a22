#include "dynet/treelstm.h"

#include <stdexcept>
#include <string>

#include "rnn/builder_util.h"

namespace dynet {

using namespace rnn_detail;

// ---------------- TreeLSTMBuilder ----------------

namespace {
// Puts node id's value in its slot: a reserved one, or the next.
template <class T>
void store(std::vector<T>& per_node, int id, T value) {
  if (id == static_cast<int>(per_node.size()))
    per_node.push_back(std::move(value));
  else
    per_node[id] = std::move(value);
}

[[noreturn]] void not_for_trees(const char* method) {
  throw std::runtime_error(std::string("TreeLSTMBuilder: ") + method +
                           " does not apply to tree LSTMs (use add_input(id, children, x))");
}
}  // namespace

Expression TreeLSTMBuilder::back() const { not_for_trees("back()"); }
std::vector<Expression> TreeLSTMBuilder::final_h() const { not_for_trees("final_h()"); }
std::vector<Expression> TreeLSTMBuilder::final_s() const { not_for_trees("final_s()"); }
std::vector<Expression> TreeLSTMBuilder::get_h(RNNPointer) const { not_for_trees("get_h()"); }
std::vector<Expression> TreeLSTMBuilder::get_s(RNNPointer) const { not_for_trees("get_s()"); }
unsigned TreeLSTMBuilder::num_h0_components() const { not_for_trees("num_h0_components()"); }
void TreeLSTMBuilder::copy(const RNNBuilder&) { not_for_trees("copy()"); }
Expression TreeLSTMBuilder::add_input_impl(int, const Expression&) { not_for_trees("add_input(x)"); }
Expression TreeLSTMBuilder::set_h_impl(int, const std::vector<Expression>&) { not_for_trees("set_h()"); }
Expression TreeLSTMBuilder::set_s_impl(int, const std::vector<Expression>&) { not_for_trees("set_s()"); }

void TreeLSTMBuilder::check_node(const char* where, int id, const std::vector<int>& children) {
  check_can_add_input();
  const int slots = static_cast<int>(node_added_.size());
  if (id < 0 || id > slots || (id < slots && node_added_[id]))
    throw std::invalid_argument(std::string(where) + ": node id " + std::to_string(id) +
                                (id >= 0 && id < slots ? " was already added"
                                                       : " is not the next id (" + std::to_string(slots) +
                                                             ") and was not reserved by set_num_elements"));
  for (int child : children)
    if (child < 0 || child >= slots || child == id || !node_added_[child])
      throw std::invalid_argument(std::string(where) + ": child " + std::to_string(child) + " of node " +
                                  std::to_string(id) + " has not been added (children come before parents)");
}

void TreeLSTMBuilder::node_added(int id) {
  if (id == static_cast<int>(node_added_.size())) node_added_.push_back(false);
  node_added_[id] = true;
}

void TreeLSTMBuilder::clear_nodes() { node_added_.clear(); }

void TreeLSTMBuilder::reset_nodes(const char* where, int num) {
  if (num < 0) throw std::invalid_argument(std::string(where) + ": negative number of elements " + std::to_string(num));
  for (size_t k = num; k < node_added_.size(); ++k)
    if (node_added_[k])
      throw std::invalid_argument(std::string(where) + ": " + std::to_string(num) + " elements would drop node " +
                                  std::to_string(k) + ", which was already added");
  node_added_.resize(num, false);
}

// ---------------- NaryTreeLSTMBuilder ----------------

namespace {
enum { X2I, BI, X2F, BF, X2O, BO, X2C, BC };
enum { H2I, H2F, H2O, H2C, C2I, C2F, C2O };
}  // namespace

NaryTreeLSTMBuilder::NaryTreeLSTMBuilder(unsigned N, unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                         ParameterCollection& model)
    : layers(layers), N(N), input_dim(input_dim), hid(hidden_dim) {
  if (N == 0 || layers == 0 || input_dim == 0 || hidden_dim == 0)
    throw std::invalid_argument("NaryTreeLSTMBuilder: N, layers, input_dim and hidden_dim must be positive, got " +
                                std::to_string(N) + ", " + std::to_string(layers) + ", " +
                                std::to_string(input_dim) + ", " + std::to_string(hidden_dim));
  local_model = model.add_subcollection("nary-tree-lstm-builder");
  const Dim square({hidden_dim, hidden_dim});
  unsigned layer_input_dim = input_dim;
  for (unsigned i = 0; i < layers; ++i) {
    auto matrix = [&] { return local_model.add_parameters({hidden_dim, layer_input_dim}); };
    auto bias = [&] { return local_model.add_parameters({hidden_dim}, ParameterInitConst(0.f)); };
    auto per_child = [&](unsigned n) { return local_model.add_lookup_parameters(n, square); };
    Parameter x2i = matrix();
    LookupParameter h2i = per_child(N), c2i = per_child(N);
    Parameter bi = bias();
    Parameter x2f = matrix();
    LookupParameter h2f = per_child(N * N), c2f = per_child(N * N);
    Parameter bf = bias();
    Parameter x2o = matrix();
    LookupParameter h2o = per_child(N), c2o = per_child(N);
    Parameter bo = bias();
    Parameter x2c = matrix();
    LookupParameter h2c = per_child(N);
    Parameter bc = bias();
    params.push_back({x2i, bi, x2f, bf, x2o, bo, x2c, bc});
    lparams.push_back({h2i, h2f, h2o, h2c, c2i, c2f, c2o});
    layer_input_dim = hidden_dim;
  }
}

void NaryTreeLSTMBuilder::new_graph_impl(ComputationGraph& cg, bool update) {
  cg_ = &cg;
  update_ = update;
  param_vars = param_exprs(cg, params, update);
  lparam_vars.clear();
  for (unsigned i = 0; i < layers; ++i) {
    std::vector<std::vector<Expression>> lvars;
    for (const LookupParameter& lp : lparams[i]) lvars.emplace_back(lp.get_storage().values.size());
    lparam_vars.push_back(std::move(lvars));
  }
}

Expression NaryTreeLSTMBuilder::Lookup(unsigned layer, unsigned p_type, unsigned value) {
  Expression& e = lparam_vars[layer][p_type][value];
  if (!e.pg) {
    const LookupParameter& p = lparams[layer][p_type];
    e = update_ ? lookup(*cg_, p, value) : const_lookup(*cg_, p, value);
  }
  return e;
}

void NaryTreeLSTMBuilder::start_new_sequence_impl(const std::vector<Expression>& h_0) {
  clear_nodes();
  h.clear();
  c.clear();
  if (!h_0.empty()) {
    c0.assign(h_0.begin(), h_0.begin() + layers);
    h0.assign(h_0.begin() + layers, h_0.end());
    has_initial_state = true;
  } else {
    c0.clear();
    h0.clear();
    has_initial_state = false;
  }
}

void NaryTreeLSTMBuilder::set_num_elements(int num) {
  reset_nodes("NaryTreeLSTMBuilder::set_num_elements", num);
  h.resize(num);
  c.resize(num);
}

Expression NaryTreeLSTMBuilder::add_input(int id, std::vector<int> children, const Expression& x) {
  check_node("NaryTreeLSTMBuilder::add_input", id, children);
  check_input("NaryTreeLSTMBuilder", x, input_dim);
  std::vector<Expression> ht(layers), ct(layers);
  Expression in = x;
  for (unsigned i = 0; i < layers; ++i) {
    const std::vector<Expression>& v = param_vars[i];
    std::vector<Expression> child_h, child_c;
    for (int child : children) {
      child_h.push_back(h[child][i]);
      child_c.push_back(c[child][i]);
    }
    if (children.empty() && has_initial_state) {
      child_h.push_back(h0[i]);
      child_c.push_back(c0[i]);
    }
    const unsigned K = static_cast<unsigned>(child_h.size());
    auto pos = [this](unsigned k) { return k < N ? k : N - 1; };
    // b + W·x + Σ_k (U_h[row(k)]·h_k [+ U_c[row(k)]·c_k])
    auto gate_input = [&](unsigned b, unsigned w, unsigned uh, int uc, auto row) {
      std::vector<Expression> xs = {v[b], v[w], in};
      for (unsigned k = 0; k < K; ++k) {
        xs.push_back(Lookup(i, uh, row(k)));
        xs.push_back(child_h[k]);
        if (uc >= 0) {
          xs.push_back(Lookup(i, uc, row(k)));
          xs.push_back(child_c[k]);
        }
      }
      return affine_transform(xs);
    };
    Expression in_gate = logistic(gate_input(BI, X2I, H2I, C2I, pos));
    Expression candidate = tanh(gate_input(BC, X2C, H2C, -1, pos));
    std::vector<Expression> cell_terms = {cmult(in_gate, candidate)};
    for (unsigned k = 0; k < K; ++k) {
      auto row = [&](unsigned j) { return pos(j) * N + pos(k); };
      Expression forget_gate = logistic(gate_input(BF, X2F, H2F, C2F, row) + 1.f);
      cell_terms.push_back(cmult(forget_gate, child_c[k]));
    }
    ct[i] = cell_terms.size() == 1 ? cell_terms[0] : sum(cell_terms);
    Expression out_gate = logistic(gate_input(BO, X2O, H2O, C2O, pos));
    in = ht[i] = cmult(out_gate, tanh(ct[i]));
  }
  store(h, id, std::move(ht));
  store(c, id, std::move(ct));
  node_added(id);
  return h[id].back();
}

void NaryTreeLSTMBuilder::copy(const RNNBuilder& other) {
  const auto& tree = same_kind<NaryTreeLSTMBuilder>(other, "NaryTreeLSTMBuilder");
  if (tree.N != N || tree.params.size() != params.size())
    throw std::invalid_argument("NaryTreeLSTMBuilder::copy: N " + std::to_string(tree.N) + " with " +
                                std::to_string(tree.params.size()) + " layers vs N " + std::to_string(N) + " with " +
                                std::to_string(params.size()) + " layers");
  check_same_layout("NaryTreeLSTMBuilder::copy", params, tree.params);
  check_same_layout("NaryTreeLSTMBuilder::copy", lparams, tree.lparams, "the builders have different parameter layouts",
                    "lookup parameter");
  params = tree.params;
  lparams = tree.lparams;
}

// ---------------- Unidirectional / Bidirectional ----------------

namespace {
// Runs `lstm` from its initial state over x and then the children's representations (in the
// given order); returns the last output.
Expression run_over_children(LSTMBuilder& lstm, const Expression& x, const std::vector<Expression>& child_reps) {
  Expression out = lstm.add_input(RNNPointer(-1), x);
  for (const Expression& rep : child_reps) out = lstm.add_input(lstm.state(), rep);
  return out;
}

void check_child_input(const char* where, const std::vector<int>& children, unsigned input_dim, unsigned hidden_dim) {
  if (!children.empty() && input_dim != hidden_dim)
    throw std::invalid_argument(std::string(where) + ": a node with children feeds their " +
                                std::to_string(hidden_dim) + "-dim representations to an LSTM with input_dim " +
                                std::to_string(input_dim) + " (input_dim must equal hidden_dim)");
}
}  // namespace

UnidirectionalTreeLSTMBuilder::UnidirectionalTreeLSTMBuilder(unsigned layers, unsigned input_dim,
                                                             unsigned hidden_dim, ParameterCollection& model)
    : local_model(model.add_subcollection("unidirectional-tree-lstm-builder")),
      node_builder(layers, input_dim, hidden_dim, local_model) {}

void UnidirectionalTreeLSTMBuilder::new_graph_impl(ComputationGraph& cg, bool update) {
  node_builder.new_graph(cg, update);
}

void UnidirectionalTreeLSTMBuilder::start_new_sequence_impl(const std::vector<Expression>& h_0) {
  clear_nodes();
  h.clear();
  node_builder.start_new_sequence(h_0);
}

void UnidirectionalTreeLSTMBuilder::set_num_elements(int num) {
  reset_nodes("UnidirectionalTreeLSTMBuilder::set_num_elements", num);
  h.resize(num);
}

Expression UnidirectionalTreeLSTMBuilder::add_input(int id, std::vector<int> children, const Expression& x) {
  check_node("UnidirectionalTreeLSTMBuilder::add_input", id, children);
  check_child_input("UnidirectionalTreeLSTMBuilder::add_input", children, node_builder.input_dim, node_builder.hid);
  std::vector<Expression> reps;
  for (int child : children) reps.push_back(h[child]);
  Expression embedding = run_over_children(node_builder, x, reps);
  store(h, id, embedding);
  node_added(id);
  return embedding;
}

BidirectionalTreeLSTMBuilder::BidirectionalTreeLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                                           ParameterCollection& model) {
  if (hidden_dim % 2 != 0)
    throw std::invalid_argument("BidirectionalTreeLSTMBuilder: hidden_dim must be even (each direction gets half), got " +
                                std::to_string(hidden_dim));
  local_model = model.add_subcollection("bidirectional-tree-lstm-builder");
  fwd_node_builder = LSTMBuilder(layers, input_dim, hidden_dim / 2, local_model);
  rev_node_builder = LSTMBuilder(layers, input_dim, hidden_dim / 2, local_model);
}

void BidirectionalTreeLSTMBuilder::new_graph_impl(ComputationGraph& cg, bool update) {
  fwd_node_builder.new_graph(cg, update);
  rev_node_builder.new_graph(cg, update);
}

void BidirectionalTreeLSTMBuilder::start_new_sequence_impl(const std::vector<Expression>& h_0) {
  clear_nodes();
  h.clear();
  fwd_node_builder.start_new_sequence(h_0);
  rev_node_builder.start_new_sequence(h_0);
}

void BidirectionalTreeLSTMBuilder::set_num_elements(int num) {
  reset_nodes("BidirectionalTreeLSTMBuilder::set_num_elements", num);
  h.resize(num);
}

Expression BidirectionalTreeLSTMBuilder::add_input(int id, std::vector<int> children, const Expression& x) {
  check_node("BidirectionalTreeLSTMBuilder::add_input", id, children);
  check_child_input("BidirectionalTreeLSTMBuilder::add_input", children, fwd_node_builder.input_dim,
                    2 * fwd_node_builder.hid);
  std::vector<Expression> reps;
  for (int child : children) reps.push_back(h[child]);
  Expression fwd = run_over_children(fwd_node_builder, x, reps);
  Expression rev = run_over_children(rev_node_builder, x, std::vector<Expression>(reps.rbegin(), reps.rend()));
  Expression embedding = concatenate({fwd, rev});
  store(h, id, embedding);
  node_added(id);
  return embedding;
}

}  // namespace dynet
