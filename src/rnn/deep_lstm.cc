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

void DeepLSTMBuilder::set_dropout_masks(unsigned batch_size) {
  if (!cg_) throw std::runtime_error("DeepLSTMBuilder::set_dropout_masks: call new_graph(cg) first");
  masks.clear();
  for (unsigned i = 0; i < layers; ++i) {
    const unsigned in_dim = i == 0 ? input_dim : hid + input_dim;
    masks.push_back({dropout_mask(in_dim, batch_size, dropout_rate), dropout_mask(hid, batch_size, dropout_rate_h)});
  }
  dropout_masks_valid = true;
}

void DeepLSTMBuilder::start_new_sequence_impl(const std::vector<Expression>& h_0) {
  LSTMStateBuilder::start_new_sequence_impl(h_0);
  o.clear();
}

Expression DeepLSTMBuilder::add_input_impl(int prev, const Expression& x) {
  check_input(x);
  const bool dropout_on = prepare_dropout(x);
  std::vector<Expression> ht(layers), ct(layers);
  Expression in = x;
  for (unsigned i = 0; i < layers; ++i) {
    if (i > 0) in = concatenate({ht[i - 1], x});
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
      in_gate = logistic(affine_transform({v[C_BI], v[C_X2I], in, v[C_H2I], h_prev, v[C_C2I], c_prev}));
      candidate = tanh(affine_transform({v[C_BC], v[C_X2C], in, v[C_H2C], h_prev}));
      ct[i] = cmult(1.f - in_gate, c_prev) + cmult(in_gate, candidate);
      out_gate = logistic(affine_transform({v[C_BO], v[C_X2O], in, v[C_H2O], h_prev, v[C_C2O], ct[i]}));
    } else {
      in_gate = logistic(affine_transform({v[C_BI], v[C_X2I], in}));
      candidate = tanh(affine_transform({v[C_BC], v[C_X2C], in}));
      ct[i] = cmult(in_gate, candidate);
      out_gate = logistic(affine_transform({v[C_BO], v[C_X2O], in}));
    }
    ht[i] = cmult(out_gate, tanh(ct[i]));
  }
  o.push_back(concatenate(ht));
  h.push_back(std::move(ht));
  c.push_back(std::move(ct));
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
