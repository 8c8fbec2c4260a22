// Tree-structured LSTMs: TreeLSTMBuilder (the interface), NaryTreeLSTMBuilder (Tai, Socher and
// Manning 2015, section 3.2), UnidirectionalTreeLSTMBuilder and BidirectionalTreeLSTMBuilder (an
// LSTM run over a node's input and its children's representations).
#pragma once

#include <vector>

#include "dynet/lstm.h"
#include "dynet/rnn.h"

namespace dynet {

// Nodes are added bottom-up with add_input(id, children, x). Without set_num_elements the ids must
// be 0, 1, 2, ... in order; after set_num_elements(n) any id below n may come in any order. Every
// child must have been added before its parent. The sequence methods (add_input(x), back, final_h,
// get_h, set_h, ...) do not apply to trees and throw std::runtime_error.
class TreeLSTMBuilder : public RNNBuilder {
 public:
  Expression back() const override;
  std::vector<Expression> final_h() const override;
  std::vector<Expression> final_s() const override;
  std::vector<Expression> get_h(RNNPointer i) const override;
  std::vector<Expression> get_s(RNNPointer i) const override;
  unsigned num_h0_components() const override;
  void copy(const RNNBuilder& params) override;

  // Adds node `id` with input x and the given children; returns its representation.
  virtual Expression add_input(int id, std::vector<int> children, const Expression& x) = 0;
  // Reserves ids 0..num-1 so nodes may be added in any bottom-up order.
  virtual void set_num_elements(int num) = 0;

 protected:
  Expression add_input_impl(int prev, const Expression& x) override;
  Expression set_h_impl(int prev, const std::vector<Expression>& h_new) override;
  Expression set_s_impl(int prev, const std::vector<Expression>& s_new) override;

  // Throws unless the builder is ready for input, id is the next id or a reserved empty slot, and
  // every child is an added node other than id.
  void check_node(const char* where, int id, const std::vector<int>& children);
  // Records that node id now exists (after its representation was built).
  void node_added(int id);
  // Forgets all nodes (start_new_sequence).
  void clear_nodes();
  // Reserves `num` slots (set_num_elements); throws if added nodes would be dropped.
  void reset_nodes(const char* where, int num);
  size_t num_node_slots() const { return node_added_.size(); }

 private:
  std::vector<bool> node_added_;
};

// Per layer and node with children k = 0..K-1 (outputs h_k, cells c_k; child k uses the weights of
// position e_k = min(k, N-1)):
//   i = σ(b_i + W_xi·x + Σ_k (U_hi[e_k]·h_k + U_ci[e_k]·c_k))
//   f_k = σ(b_f + W_xf·x + Σ_j (U_hf[e_j·N + e_k]·h_j + U_cf[e_j·N + e_k]·c_j) + 1)
//   g = tanh(b_c + W_xc·x + Σ_k U_hc[e_k]·h_k)
//   c = Σ_k f_k ⊙ c_k + i ⊙ g
//   o = σ(b_o + W_xo·x + Σ_k (U_ho[e_k]·h_k + U_co[e_k]·c_k)),  h = o ⊙ tanh(c)
// A leaf has no recurrent terms (c = i ⊙ g), unless start_new_sequence gave an initial state,
// which then acts as the leaf's only child.
// Parameters per layer (subcollection "nary-tree-lstm-builder"), in creation order: x2i {hid, in},
// h2i (N lookup rows {hid, hid}), c2i (N), bi {hid}, x2f, h2f (N·N), c2f (N·N), bf, x2o, h2o (N),
// c2o (N), bo, x2c, h2c (N), bc; biases initialised to 0. `params[layer]` holds x2i, bi, x2f, bf,
// x2o, bo, x2c, bc; `lparams[layer]` holds h2i, h2f, h2o, h2c, c2i, c2f, c2o.
class NaryTreeLSTMBuilder : public TreeLSTMBuilder {
 public:
  NaryTreeLSTMBuilder() = default;
  explicit NaryTreeLSTMBuilder(unsigned N, unsigned layers, unsigned input_dim, unsigned hidden_dim,
                               ParameterCollection& model);

  Expression add_input(int id, std::vector<int> children, const Expression& x) override;
  void set_num_elements(int num) override;
  unsigned num_h0_components() const override { return 2 * layers; }
  void copy(const RNNBuilder& params) override;
  ParameterCollection& get_parameter_collection() override { return local_model; }

  ParameterCollection local_model;
  std::vector<std::vector<Parameter>> params;
  std::vector<std::vector<LookupParameter>> lparams;
  std::vector<std::vector<Expression>> param_vars;
  std::vector<std::vector<std::vector<Expression>>> lparam_vars;  // looked up on first use per graph
  std::vector<std::vector<Expression>> h, c;                      // per node, per layer
  bool has_initial_state = false;
  std::vector<Expression> h0, c0;
  unsigned layers = 0;
  unsigned N = 0;  // maximum branching factor with its own weights
  unsigned input_dim = 0, hid = 0;

 protected:
  void new_graph_impl(ComputationGraph& cg, bool update) override;
  void start_new_sequence_impl(const std::vector<Expression>& h_0) override;
  // Row `value` of lookup parameter `p_type` of `layer`, in the current graph.
  Expression Lookup(unsigned layer, unsigned p_type, unsigned value);

 private:
  ComputationGraph* cg_ = nullptr;
  bool update_ = true;
};

// A node's representation is the output of a VanillaLSTMBuilder run over [x, h_child_1, ...,
// h_child_K] from its initial state. Nodes with children need input_dim == hidden_dim.
// Parameters: a VanillaLSTMBuilder(layers, input_dim, hidden_dim) in the subcollection
// "unidirectional-tree-lstm-builder".
class UnidirectionalTreeLSTMBuilder : public TreeLSTMBuilder {
 public:
  UnidirectionalTreeLSTMBuilder() = default;
  explicit UnidirectionalTreeLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                         ParameterCollection& model);

  Expression add_input(int id, std::vector<int> children, const Expression& x) override;
  void set_num_elements(int num) override;
  unsigned num_h0_components() const override { return node_builder.num_h0_components(); }
  ParameterCollection& get_parameter_collection() override { return node_builder.get_parameter_collection(); }

  ParameterCollection local_model;
  LSTMBuilder node_builder;
  std::vector<Expression> h;  // per node

 protected:
  void new_graph_impl(ComputationGraph& cg, bool update) override;
  void start_new_sequence_impl(const std::vector<Expression>& h_0) override;
};

// A node's representation is [forward; reverse]: the outputs of two VanillaLSTMBuilders with
// hidden_dim/2 units, one run over [x, h_child_1, ..., h_child_K] and one over
// [x, h_child_K, ..., h_child_1]. hidden_dim must be even; nodes with children need
// input_dim == hidden_dim.
// Parameters: two VanillaLSTMBuilder(layers, input_dim, hidden_dim/2) in the subcollection
// "bidirectional-tree-lstm-builder" (forward first).
class BidirectionalTreeLSTMBuilder : public TreeLSTMBuilder {
 public:
  BidirectionalTreeLSTMBuilder() = default;
  explicit BidirectionalTreeLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                        ParameterCollection& model);

  Expression add_input(int id, std::vector<int> children, const Expression& x) override;
  void set_num_elements(int num) override;
  unsigned num_h0_components() const override { return fwd_node_builder.num_h0_components(); }
  ParameterCollection& get_parameter_collection() override { return local_model; }

  LSTMBuilder fwd_node_builder;
  LSTMBuilder rev_node_builder;
  std::vector<Expression> h;  // per node
  ParameterCollection local_model;

 protected:
  void new_graph_impl(ComputationGraph& cg, bool update) override;
  void start_new_sequence_impl(const std::vector<Expression>& h_0) override;
};

}  // namespace dynet
