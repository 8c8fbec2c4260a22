// FastLSTMBuilder: DyNet's coupled-gate LSTM whose cell-to-gate connections are vectors.
#pragma once

#include "dynet/lstm.h"

namespace dynet {

// Per layer:
//   i = σ(b_i + W_xi·x + W_hi·h_{t-1}),  g = tanh(b_c + W_xc·x + W_hc·h_{t-1})
//   c_t = (1 - i) ⊙ c_{t-1} + i ⊙ g
//   o = σ(b_o + W_xo·x + W_ho·h_{t-1}),  h_t = o ⊙ tanh(c_t)
// Parameters per layer (subcollection "fast-lstm-builder"): x2i {hid, in}, h2i {hid, hid},
// c2i {hid, 1}, bi {hid}, x2o {hid, in}, h2o {hid, hid}, c2o {hid, 1}, bo {hid}, x2c {hid, in},
// h2c {hid, hid}, bc {hid}; biases initialised to 0.
// The peephole vectors c2i and c2o exist (so saved models line up) but, as in DyNet 2.x, do not
// enter the computation: DyNet's FastLSTM never used them, and models trained there carry untrained
// values in them. Dropout (set_dropout(d[, d_r])) uses tied masks on each layer's input and h_{t-1}.
class FastLSTMBuilder : public LSTMStateBuilder {
 public:
  FastLSTMBuilder() = default;
  explicit FastLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model);

  void copy(const RNNBuilder& params) override;

 protected:
  Expression add_input_impl(int prev, const Expression& x) override;
};

}  // namespace dynet
