// GRUBuilder: gated recurrent units (Cho et al. 2014).
#pragma once

#include <vector>

#include "dynet/rnn.h"

namespace dynet {

// Per layer:
//   z = σ(b_z + W_xz·x + W_hz·h_{t-1}),  r = σ(b_r + W_xr·x + W_hr·h_{t-1})
//   g = tanh(b_h + W_xh·x + W_hh·(r ⊙ h_{t-1})),  h_t = (1 - z) ⊙ h_{t-1} + z ⊙ g
// Parameters per layer (subcollection "gru-builder"): x2z {hid, in}, h2z {hid, hid}, bz {hid},
// x2r {hid, in}, h2r {hid, hid}, br {hid}, x2h {hid, in}, h2h {hid, hid}, bh {hid}; biases
// initialised to 0. The state is one h per layer.
// Dropout (set_dropout(d)), as in DyNet: a fresh dropout mask on each layer's input at every step,
// and add_input returns the top output with dropout applied (the stored state is not dropped).
class GRUBuilder : public RNNBuilder {
 public:
  GRUBuilder() = default;
  explicit GRUBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model);

  Expression back() const override;
  std::vector<Expression> final_h() const override { return h.empty() ? h0 : h.back(); }
  std::vector<Expression> get_h(RNNPointer i) const override;
  std::vector<Expression> final_s() const override { return final_h(); }
  std::vector<Expression> get_s(RNNPointer i) const override { return get_h(i); }
  unsigned num_h0_components() const override { return layers; }
  void copy(const RNNBuilder& params) override;
  ParameterCollection& get_parameter_collection() override { return local_model; }

  std::vector<std::vector<Parameter>> get_parameters() const { return params; }
  std::vector<std::vector<Expression>> get_parameter_expressions() const { return param_vars; }

  ParameterCollection local_model;
  std::vector<std::vector<Parameter>> params;       // per layer, in the order above
  std::vector<std::vector<Expression>> param_vars;  // the same, in the current graph
  std::vector<std::vector<Expression>> h;           // per state, per layer
  std::vector<Expression> h0;
  unsigned hidden_dim = 0;
  unsigned layers = 0;
  unsigned input_dim = 0;

 protected:
  void new_graph_impl(ComputationGraph& cg, bool update) override;
  void start_new_sequence_impl(const std::vector<Expression>& h_0) override;
  Expression add_input_impl(int prev, const Expression& x) override;
  Expression set_h_impl(int prev, const std::vector<Expression>& h_new) override;
  Expression set_s_impl(int prev, const std::vector<Expression>& s_new) override;
};

}  // namespace dynet
