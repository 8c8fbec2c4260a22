// LSTM builders: VanillaLSTMBuilder (DyNet's default `LSTMBuilder`), CoupledLSTMBuilder (coupled
// input/forget gates with peepholes), CompactVanillaLSTMBuilder (vanilla, fused nodes),
// SparseLSTMBuilder (vanilla with magnitude-pruning masks) and the shared state bookkeeping of every
// builder whose state is a memory cell plus an output.
#pragma once

#include <vector>

#include "dynet/rnn.h"

namespace dynet {

// Bookkeeping shared by the LSTM-style builders: every state holds, per layer, a memory cell c and
// an output h. The full state (h_0 of start_new_sequence, get_s, set_s) is [c_1..c_L, h_1..h_L];
// set_s also accepts only [c_1..c_L] (the outputs are then copied from the state it continues
// from, or zero).
class LSTMStateBuilder : public RNNBuilder {
 public:
  Expression back() const override;
  std::vector<Expression> final_h() const override;
  std::vector<Expression> final_s() const override;
  std::vector<Expression> get_h(RNNPointer i) const override;
  std::vector<Expression> get_s(RNNPointer i) const override;
  unsigned num_h0_components() const override { return 2 * layers; }
  ParameterCollection& get_parameter_collection() override { return local_model; }

  // Input dropout d and recurrent dropout d_r (on h_{t-1}); masks (Bernoulli(1-d) scaled by
  // 1/(1-d)) are drawn once per sequence and shared by its time steps (Gal & Ghahramani 2016).
  void set_dropout(float d) override;  // d on both
  void set_dropout(float d, float d_r);
  void disable_dropout() override;
  // Draws new masks now (otherwise the first add_input of a sequence does, for its batch size);
  // each layer's input mask has as many rows as its x2i has columns.
  virtual void set_dropout_masks(unsigned batch_size = 1);

  std::vector<std::vector<Parameter>> get_parameters() const { return params; }
  std::vector<std::vector<Expression>> get_parameter_expressions() const { return param_vars; }

  ParameterCollection local_model;
  std::vector<std::vector<Parameter>> params;       // per layer, in the builder's documented order
  std::vector<std::vector<Expression>> param_vars;  // the same, in the current graph
  std::vector<std::vector<Expression>> masks;       // per layer: input mask, recurrent mask[, cell mask]
  std::vector<std::vector<Expression>> h, c;        // per state, per layer
  bool has_initial_state = false;
  std::vector<Expression> h0, c0;
  unsigned layers = 0;
  unsigned input_dim = 0, hid = 0;
  float dropout_rate_h = 0.f;
  bool dropout_masks_valid = false;

 protected:
  LSTMStateBuilder() = default;
  // Checks the sizes; makes the subcollection `collection` of model.
  LSTMStateBuilder(const char* builder_name, const char* collection, unsigned layers, unsigned input_dim,
                   unsigned hidden_dim, ParameterCollection& model);

  void new_graph_impl(ComputationGraph& cg, bool update) override;
  void start_new_sequence_impl(const std::vector<Expression>& h_0) override;
  Expression set_h_impl(int prev, const std::vector<Expression>& h_new) override;
  Expression set_s_impl(int prev, const std::vector<Expression>& s_new) override;

  // One add_input step: checks x, draws the dropout masks when due, then builds each layer with
  // cell(layer, dropout_on, in, h_prev, c_prev, h_out, c_out): `in` is x for the first layer and
  // the layer below's h_out after it; h_prev, c_prev are as previous_state gives them. Records the
  // new state and returns the top layer's output.
  template <class Cell>
  Expression add_layers(int prev, const Expression& x, Cell&& cell) {
    check_input(x);
    const bool dropout_on = prepare_dropout(x);
    std::vector<Expression> ht(layers), ct(layers);
    for (unsigned i = 0; i < layers; ++i) {
      Expression h_prev, c_prev;
      previous_state(prev, i, h_prev, c_prev);
      cell(i, dropout_on, i == 0 ? x : ht[i - 1], h_prev, c_prev, ht[i], ct[i]);
    }
    h.push_back(std::move(ht));
    c.push_back(std::move(ct));
    return h.back().back();
  }
  // h_{t-1} and c_{t-1} of `layer` for a state continuing from prev; null expressions stand for
  // the zero state (no initial state was given).
  void previous_state(int prev, unsigned layer, Expression& h_prev, Expression& c_prev) const;
  // Layer i's input mask on `in` and recurrent mask on h_prev (unless null), for the rates that
  // are on.
  void drop_inputs(unsigned i, Expression& in, Expression& h_prev) const;
  // Throws unless x is an input_dim vector (batched or not).
  void check_input(const Expression& x) const;
  // Draws the masks when dropout is on and the current ones are stale; true when dropout is on.
  bool prepare_dropout(const Expression& x);
  virtual bool dropout_enabled() const { return dropout_rate > 0.f || dropout_rate_h > 0.f; }
  // Makes this builder use `other`'s parameters after checking the layouts agree.
  void share_parameters(const LSTMStateBuilder& other);

  const char* builder_name_ = "LSTMStateBuilder";
  ComputationGraph* cg_ = nullptr;
};

// The vanilla LSTM cell with optional layer normalisation, shared by VanillaLSTMBuilder and
// SparseLSTMBuilder. Per layer, with a = b + W_x·x_t + W_h·h_{t-1} split into four blocks of hid
// rows:
//   i = σ(a_i), f = σ(a_f + forget_bias), o = σ(a_o), g = tanh(a_g)
//   c_t = f ⊙ c_{t-1} + i ⊙ g,  h_t = o ⊙ tanh(c_t)
// With ln_lstm: a = b + LN(W_x·x_t; g_x, b_x) + LN(W_h·h_{t-1}; g_h, b_h) and
// h_t = o ⊙ tanh(LN(c_t; g_c, b_c)), LN(v; g, b) = g ⊙ (v - mean(v)) / (std(v) + 1e-8) + b.
class VanillaLSTMCellBuilder : public LSTMStateBuilder {
 public:
  bool ln_lstm = false;
  float forget_bias = 1.f;
  // per layer: g_h, b_h, g_x, b_x {4hid}, g_c, b_c {hid} (gains start at 1, biases at 0)
  std::vector<std::vector<Parameter>> ln_params;
  std::vector<std::vector<Expression>> ln_param_vars;

 protected:
  VanillaLSTMCellBuilder() = default;
  VanillaLSTMCellBuilder(const char* builder_name, unsigned layers, unsigned input_dim, unsigned hidden_dim,
                         ParameterCollection& model, bool ln_lstm, float forget_bias);
  // Adds one layer's layer-normalisation parameters to `model` (DyNet puts them in the builder's
  // parent collection, after the layer's own parameters).
  void add_layer_norm_parameters(ParameterCollection& model);
  // param_vars[layer] must be x2i, h2i, bi (the effective weights).
  void new_graph_impl(ComputationGraph& cg, bool update) override;
  void add_layer_norm_vars(ComputationGraph& cg, bool update);
  Expression add_input_impl(int prev, const Expression& x) override;
  void share_cell_parameters(const VanillaLSTMCellBuilder& other);
};

// The standard LSTM (no peepholes), DyNet's default `LSTMBuilder`; the cell is described above.
// Parameters per layer (subcollection "vanilla-lstm-builder"): x2i {4hid, in}, h2i {4hid, hid},
// bi {4hid} (bias initialised to 0); with ln_lstm also the six layer-normalisation parameters in
// `model` itself.
class VanillaLSTMBuilder : public VanillaLSTMCellBuilder {
 public:
  VanillaLSTMBuilder() = default;
  explicit VanillaLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model,
                              bool ln_lstm = false, float forget_bias = 1.f);

  void copy(const RNNBuilder& params) override;
};

typedef VanillaLSTMBuilder LSTMBuilder;

// The "classic" DyNet LSTM: coupled input and forget gates (f = 1 - i) and peephole connections.
//   i = σ(b_i + W_xi·x + W_hi·h_{t-1} + W_ci·c_{t-1})
//   g = tanh(b_c + W_xc·x + W_hc·h_{t-1})
//   c_t = (1 - i) ⊙ c_{t-1} + i ⊙ g
//   o = σ(b_o + W_xo·x + W_ho·h_{t-1} + W_co·c_t),  h_t = o ⊙ tanh(c_t)
// Parameters per layer (subcollection "lstm-builder"): x2i {hid, in}, h2i {hid, hid}, c2i {hid, hid},
// bi {hid}, x2o {hid, in}, h2o {hid, hid}, c2o {hid, hid}, bo {hid}, x2c {hid, in}, h2c {hid, hid},
// bc {hid}; biases initialised to 0.
class CoupledLSTMBuilder : public LSTMStateBuilder {
 public:
  CoupledLSTMBuilder() = default;
  explicit CoupledLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model);

  void copy(const RNNBuilder& params) override;

  // Gal-style tied masks on the input (d), h_{t-1} (d_h) and the memory cell as seen by the
  // peepholes (d_c); set_dropout(d) sets all three.
  void set_dropout(float d) override;
  void set_dropout(float d, float d_h, float d_c);
  void disable_dropout() override;
  void set_dropout_masks(unsigned batch_size = 1) override;

  float dropout_rate_c = 0.f;

 protected:
  Expression add_input_impl(int prev, const Expression& x) override;
  bool dropout_enabled() const override {
    return dropout_rate > 0.f || dropout_rate_h > 0.f || dropout_rate_c > 0.f;
  }
};

// The vanilla LSTM with forget bias 1 computed by the fused nodes vanilla_lstm_gates, vanilla_lstm_c
// and vanilla_lstm_h (three nodes per layer and step instead of about fifteen).
// Parameters per layer (subcollection "compact-vanilla-lstm-builder"): Wx {4hid, in},
// Wh {4hid, hid}, b {4hid} (initialised to 0). set_dropout(d, d_r) applies tied masks to x_t and
// h_{t-1} inside the gates node; set_weightnoise(std) adds N(0, std²) noise to the weights in every
// gates computation (a training regulariser; 0 turns it off).
class CompactVanillaLSTMBuilder : public LSTMStateBuilder {
 public:
  CompactVanillaLSTMBuilder() = default;
  explicit CompactVanillaLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                     ParameterCollection& model);

  void copy(const RNNBuilder& params) override;
  void set_weightnoise(float std);

 protected:
  Expression add_input_impl(int prev, const Expression& x) override;
};

// VanillaLSTMBuilder whose weight matrices are multiplied by fixed 0/1 masks; set_sparsity(p)
// zeroes the mask entries of the fraction p of x2i/h2i weights (all layers together) with the
// smallest magnitude (Narang et al. 2017).
// Parameters per layer (subcollection "vanilla-lstm-builder"), created in the order x2i {4hid, in},
// h2i {4hid, hid}, x2i mask, h2i mask (initialised to 1), bi {4hid}; `params[layer]` lists them as
// x2i, h2i, bi, x2i mask, h2i mask. The masks enter graphs as constants. With ln_lstm, the
// layer-normalisation parameters follow each layer in `model` itself, as for VanillaLSTMBuilder.
class SparseLSTMBuilder : public VanillaLSTMCellBuilder {
 public:
  SparseLSTMBuilder() = default;
  explicit SparseLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model,
                             bool ln_lstm = false, float forget_bias = 1.f);

  void copy(const RNNBuilder& params) override;
  // percent is a fraction in [0, 1] (DyNet's naming); masks are recomputed from |weight ⊙ mask|,
  // so calling it with growing fractions prunes incrementally.
  void set_sparsity(float percent);

 protected:
  void new_graph_impl(ComputationGraph& cg, bool update) override;
};

}  // namespace dynet
