#include "dynet/deep-lstm.h"

#include <stdexcept>

#include "rnn/builder_util.h"

namespace dynet {

using namespace rnn_detail;

DeepLSTMBuilder::DeepLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model)
    : LSTMStateBuilder("DeepLSTMBuilder", "deep-lstm-builder", layers, input_dim, hidden_dim, model) {
  unsigned layer_input_dim = input_dim;
  for (unsigned i = 0; i < layers; ++i) {
    params.push_back(add_coupled_layer(local_model, layer_input_dim, hidden_dim, Dim({hidden_dim, hidden_dim})));
    layer_input_dim = hidden_dim + input_dim;
  }
}

void DeepLSTMBuilder::start_new_sequence_impl(const std::vector<Expression>& h_0) {
  LSTMStateBuilder::start_new_sequence_impl(h_0);
  o.clear();
}

Expression DeepLSTMBuilder::add_input_impl(int prev, const Expression& x) {
  add_layers(prev, x, [&](unsigned i, bool dropout_on, Expression in, Expression h_prev, const Expression& c_prev,
                          Expression& h_out, Expression& c_out) {
    if (i > 0) in = concatenate({in, x});
    const std::vector<Expression>& v = param_vars[i];
    if (dropout_on) drop_inputs(i, in, h_prev);
    Expression in_gate, candidate, out_gate;
    if (h_prev.pg) {
      in_gate = logistic(affine_transform({v[C_BI], v[C_X2I], in, v[C_H2I], h_prev, v[C_C2I], c_prev}));
      candidate = tanh(affine_transform({v[C_BC], v[C_X2C], in, v[C_H2C], h_prev}));
      c_out = cmult(1.f - in_gate, c_prev) + cmult(in_gate, candidate);
      out_gate = logistic(affine_transform({v[C_BO], v[C_X2O], in, v[C_H2O], h_prev, v[C_C2O], c_out}));
    } else {
      in_gate = logistic(affine_transform({v[C_BI], v[C_X2I], in}));
      candidate = tanh(affine_transform({v[C_BC], v[C_X2C], in}));
      c_out = cmult(in_gate, candidate);
      out_gate = logistic(affine_transform({v[C_BO], v[C_X2O], in}));
    }
    h_out = cmult(out_gate, tanh(c_out));
  });
  push_output();
  return o.back();
}

// A failure leaves h, c and o aligned (RNNBuilder pops the state's head).
void DeepLSTMBuilder::push_output() {
  try {
    o.push_back(concatenate(h.back()));
  } catch (...) {
    h.pop_back();
    c.pop_back();
    throw;
  }
}

Expression DeepLSTMBuilder::set_h_impl(int prev, const std::vector<Expression>& h_new) {
  LSTMStateBuilder::set_h_impl(prev, h_new);
  push_output();
  return o.back();
}

Expression DeepLSTMBuilder::set_s_impl(int prev, const std::vector<Expression>& s_new) {
  LSTMStateBuilder::set_s_impl(prev, s_new);
  push_output();
  return o.back();
}

Expression DeepLSTMBuilder::back() const {
  if (cur >= 0) return o[cur];
  if (!has_initial_state)
    throw std::runtime_error("DeepLSTMBuilder::back: no state yet (and no initial state was given)");
  return concatenate(h0);
}

void DeepLSTMBuilder::copy(const RNNBuilder& other) {
  share_parameters(same_kind<DeepLSTMBuilder>(other, "DeepLSTMBuilder"));
}

}  // namespace dynet
