#include "dynet/fast-lstm.h"

#include "rnn/builder_util.h"

namespace dynet {

using namespace rnn_detail;

FastLSTMBuilder::FastLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model)
    : LSTMStateBuilder("FastLSTMBuilder", "fast-lstm-builder", layers, input_dim, hidden_dim, model) {
  unsigned layer_input_dim = input_dim;
  for (unsigned i = 0; i < layers; ++i) {
    params.push_back(add_coupled_layer(local_model, layer_input_dim, hidden_dim, Dim({hidden_dim, 1})));
    layer_input_dim = hidden_dim;
  }
}

Expression FastLSTMBuilder::add_input_impl(int prev, const Expression& x) {
  return add_layers(prev, x, [&](unsigned i, bool dropout_on, Expression in, Expression h_prev,
                                 const Expression& c_prev, Expression& h_out, Expression& c_out) {
    const std::vector<Expression>& v = param_vars[i];
    if (dropout_on) drop_inputs(i, in, h_prev);
    Expression in_gate, candidate, out_gate;
    if (h_prev.pg) {
      in_gate = logistic(affine_transform({v[C_BI], v[C_X2I], in, v[C_H2I], h_prev}));
      candidate = tanh(affine_transform({v[C_BC], v[C_X2C], in, v[C_H2C], h_prev}));
      c_out = cmult(1.f - in_gate, c_prev) + cmult(in_gate, candidate);
      out_gate = logistic(affine_transform({v[C_BO], v[C_X2O], in, v[C_H2O], h_prev}));
    } else {
      in_gate = logistic(affine_transform({v[C_BI], v[C_X2I], in}));
      candidate = tanh(affine_transform({v[C_BC], v[C_X2C], in}));
      c_out = cmult(in_gate, candidate);
      out_gate = logistic(affine_transform({v[C_BO], v[C_X2O], in}));
    }
    h_out = cmult(out_gate, tanh(c_out));
  });
}

void FastLSTMBuilder::copy(const RNNBuilder& other) {
  share_parameters(same_kind<FastLSTMBuilder>(other, "FastLSTMBuilder"));
}

}  // namespace dynet
