// VanillaLSTMBuilder: the standard LSTM (no peepholes), DyNet's default `LSTMBuilder`.
#pragma once

#include <vector>

#include "dynet/rnn.h"

namespace dynet {

// Per layer, with a = b + W_x·x_t + W_h·h_{t-1} split into four blocks of hid rows:
//   i = σ(a_i), f = σ(a_f + forget_bias), o = σ(a_o), g = tanh(a_g)
//   c_t = f ⊙ c_{t-1} + i ⊙ g,  h_t = o ⊙ tanh(c_t)
// Parameters per layer (subcollection "vanilla-lstm-builder"): x2i {4hid, in}, h2i {4hid, hid},
// bi {4hid} (bias initialised to 0). The full state (h_0 for start_new_sequence, get_s) is
// [c_1..c_L, h_1..h_L].
class VanillaLSTMBuilder : public RNNBuilder {
 public:
  VanillaLSTMBuilder() = default;
  // ln_lstm (layer normalisation) is not available yet and throws std::invalid_argument.
  explicit VanillaLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model,
                              bool ln_lstm = false, float forget_bias = 1.f);

  Expression back() const override;
  std::vector<Expression> final_h() const override;
  std::vector<Expression> final_s() const override;
  std::vector<Expression> get_h(RNNPointer i) const override;
  std::vector<Expression> get_s(RNNPointer i) const override;
  unsigned num_h0_components() const override { return 2 * layers; }
  void copy(const RNNBuilder& params) override;
  ParameterCollection& get_parameter_collection() override { return local_model; }

  // Dropout with rate d on each layer's input and d_r on the recurrent state h_{t-1}. The masks
  // (Bernoulli(1-d) scaled by 1/(1-d)) are drawn once per sequence and shared by all its time steps
  // (Gal & Ghahramani 2016).
  void set_dropout(float d) override;  // d on both
  void set_dropout(float d, float d_r);
  void disable_dropout() override;
  // Draws new masks now (otherwise the first add_input of a sequence does, for its batch size).
  void set_dropout_masks(unsigned batch_size = 1);

  std::vector<std::vector<Parameter>> get_parameters() const { return params; }
  std::vector<std::vector<Expression>> get_parameter_expressions() const { return param_vars; }

  ParameterCollection local_model;
  std::vector<std::vector<Parameter>> params;  // per layer: x2i, h2i, bi
  std::vector<std::vector<Expression>> param_vars;
  std::vector<std::vector<Expression>> masks;  // per layer: input mask, recurrent mask
  std::vector<std::vector<Expression>> h, c;   // per state, per layer
  bool has_initial_state = false;
  std::vector<Expression> h0, c0;
  unsigned layers = 0;
  unsigned input_dim = 0, hid = 0;
  float dropout_rate_h = 0.f;
  bool ln_lstm = false;
  float forget_bias = 1.f;
  bool dropout_masks_valid = false;

 protected:
  void new_graph_impl(ComputationGraph& cg, bool update) override;
  void start_new_sequence_impl(const std::vector<Expression>& h_0) override;
  Expression add_input_impl(int prev, const Expression& x) override;
  Expression set_h_impl(int prev, const std::vector<Expression>& h_new) override;
  Expression set_s_impl(int prev, const std::vector<Expression>& s_new) override;

 private:
  ComputationGraph* cg_ = nullptr;
};

typedef VanillaLSTMBuilder LSTMBuilder;

}  // namespace dynet
