// DeepLSTMBuilder: a stacked coupled-gate LSTM in which every layer also sees the input and whose
// output is the concatenation of all layers' outputs.
#pragma once

#include <vector>

#include "dynet/lstm.h"

namespace dynet {

// Layer 0 reads x_t; layer l > 0 reads [h^{l-1}_t; x_t]. Each layer is CoupledLSTMBuilder's cell
// (coupled gates, peepholes). add_input and back() return [h^1_t; ...; h^L_t] (layers·hid rows).
// Parameters per layer (subcollection "deep-lstm-builder"): x2i {hid, in_l}, h2i {hid, hid},
// c2i {hid, hid}, bi {hid}, x2o {hid, in_l}, h2o {hid, hid}, c2o {hid, hid}, bo {hid},
// x2c {hid, in_l}, h2c {hid, hid}, bc {hid} with in_0 = in, in_l = hid + in; biases initialised
// to 0. Dropout (set_dropout(d[, d_r])) uses tied masks on each layer's input and h_{t-1}.
// (DyNet 2.x shipped this class without the methods an RNNBuilder must define, so it could not be
// instantiated; the behaviour of back() and the state methods here follows the other builders.)
class DeepLSTMBuilder : public LSTMStateBuilder {
 public:
  DeepLSTMBuilder() = default;
  explicit DeepLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model);

  Expression back() const override;
  void copy(const RNNBuilder& params) override;

  std::vector<Expression> o;  // per state: the concatenated output

 protected:
  void start_new_sequence_impl(const std::vector<Expression>& h_0) override;
  Expression add_input_impl(int prev, const Expression& x) override;
  Expression set_h_impl(int prev, const std::vector<Expression>& h_new) override;
  Expression set_s_impl(int prev, const std::vector<Expression>& s_new) override;

 private:
  void push_output();
};

}  // namespace dynet
