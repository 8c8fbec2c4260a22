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
  check_input(x);
  const bool dropout_on = prepare_dropout(x);
  std::vector<Expression> ht(layers), ct(layers);
  Expression in = x;
  for (unsigned i = 0; i < layers; ++i) {
    const std::vector<Expression>& v = param_vars[i];
    Expression h_prev, c_prev;
    previous_state(prev, i, h_prev, c_prev);
    const bool has_prev = h_prev.pg != nullptr;
    if (dropout_on) {
      if (dropout_rate > 0.f) in = cmult(in, masks[i][0]);
      if (has_prev && dropout_rate_h > 0.f) h_prev = cmult(h_prev, masks[i][1]);
    }
    Expression in_gate, candidate, out_gate;
    if (has_prev) {
      in_gate = logistic(affine_transform({v[C_BI], v[C_X2I], in, v[C_H2I], h_prev}));
      candidate = tanh(affine_transform({v[C_BC], v[C_X2C], in, v[C_H2C], h_prev}));
      ct[i] = cmult(1.f - in_gate, c_prev) + cmult(in_gate, candidate);
      out_gate = logistic(affine_transform({v[C_BO], v[C_X2O], in, v[C_H2O], h_prev}));
    } else {
      in_gate = logistic(affine_transform({v[C_BI], v[C_X2I], in}));
      candidate = tanh(affine_transform({v[C_BC], v[C_X2C], in}));
      ct[i] = cmult(in_gate, candidate);
      out_gate = logistic(affine_transform({v[C_BO], v[C_X2O], in}));
    }
    in = ht[i] = cmult(out_gate, tanh(ct[i]));
  }
  h.push_back(std::move(ht));
  c.push_back(std::move(ct));
  return h.back().back();
}

void FastLSTMBuilder::copy(const RNNBuilder& other) {
  share_parameters(same_kind<FastLSTMBuilder>(other, "FastLSTMBuilder"));
}

}  // namespace dynet
