// Recurrent network builders: the RNNBuilder interface and SimpleRNNBuilder (Elman RNN).
//
// A builder turns a sequence of input expressions into a sequence of states. States form a tree:
// every add_input records the state it continued from (`head`), so add_input(prev, x) can branch
// off any earlier state (beam search, tree decoding) and rewind_one_step() walks back.
#pragma once

#include <vector>

#include "dynet/expr.h"
#include "dynet/model.h"
#include "dynet/rnn-state-machine.h"

namespace dynet {

// Index of a state in the current sequence; -1 is the initial state.
typedef int RNNPointer;
inline void swap(RNNPointer& i1, RNNPointer& i2) {
  RNNPointer t = i1;
  i1 = i2;
  i2 = t;
}

class RNNBuilder {
 public:
  RNNBuilder() = default;
  virtual ~RNNBuilder();

  // The current state (-1 before the first input).
  RNNPointer state() const { return cur; }

  // Adds the builder's parameters to `cg` (as constants when !update). Call once per graph.
  void new_graph(ComputationGraph& cg, bool update = true);
  // Starts a sequence from h_0 (empty: zero initial state; else num_h0_components() expressions).
  void start_new_sequence(const std::vector<Expression>& h_0 = {});
  // Sets the hidden state (output) of a new state continuing from `prev`; returns the new output.
  Expression set_h(const RNNPointer& prev, const std::vector<Expression>& h_new = {});
  // Sets the full state (memory cells and hidden state) of a new state continuing from `prev`.
  Expression set_s(const RNNPointer& prev, const std::vector<Expression>& s_new = {});
  // Continues from the current state with input x; returns the top layer's output.
  Expression add_input(const Expression& x);
  // Continues from state `prev` with input x (branching); returns the top layer's output.
  Expression add_input(const RNNPointer& prev, const Expression& x);
  // Moves the current state back to its predecessor (the next add_input continues from there).
  void rewind_one_step();
  // The state `p` continued from.
  RNNPointer get_head(const RNNPointer& p) const;

  // Dropout on the inputs (and, where supported, the recurrent connections) while training.
  virtual void set_dropout(float d);
  virtual void disable_dropout();

  // The top layer's output of the current state.
  virtual Expression back() const = 0;
  // Every layer's output of the last state added (the initial state when none was).
  virtual std::vector<Expression> final_h() const = 0;
  // Every layer's output of state i.
  virtual std::vector<Expression> get_h(RNNPointer i) const = 0;
  // The full state (e.g. memory cells then outputs) of the last state added.
  virtual std::vector<Expression> final_s() const = 0;
  // The full state of state i.
  virtual std::vector<Expression> get_s(RNNPointer i) const = 0;
  // How many expressions start_new_sequence expects.
  virtual unsigned num_h0_components() const = 0;
  // Makes this builder use the parameters of `params` (a builder of the same kind and shape).
  virtual void copy(const RNNBuilder& params) = 0;
  virtual ParameterCollection& get_parameter_collection() = 0;

  float dropout_rate = 0.f;
  float weightnoise_std = 0.f;

 protected:
  virtual void new_graph_impl(ComputationGraph& cg, bool update) = 0;
  virtual void start_new_sequence_impl(const std::vector<Expression>& h_0) = 0;
  virtual Expression add_input_impl(int prev, const Expression& x) = 0;
  virtual Expression set_h_impl(int prev, const std::vector<Expression>& h_new) = 0;
  virtual Expression set_s_impl(int prev, const std::vector<Expression>& s_new) = 0;
  // Throws std::invalid_argument (from where + method) unless p is -1 or an existing state.
  void check_pointer(const char* where, RNNPointer p, const char* method = "") const;
  // Records a new state continuing from `prev` and makes it current (for add_input-like methods).
  void push_state(const char* where, RNNPointer prev);
  // Undoes push_state when building the new state failed, so the builder stays usable.
  void pop_state(RNNPointer restore_cur);
  // Throws std::runtime_error unless new_graph and start_new_sequence came first (for builders
  // with their own kind of add_input, such as the tree LSTMs).
  void check_can_add_input();

  RNNPointer cur = -1;

 private:
  std::vector<RNNPointer> head;  // head[i]: the state state i continued from
  RNNStateMachine sm;
};

// h_t = tanh(b + W_x·x_t + W_h·h_{t-1}) per layer; each layer's output is the next layer's input.
// Parameters per layer (subcollection "simple-rnn-builder"): x2h {hid, in}, h2h {hid, hid},
// bh {hid} (initialised to 0), and with support_lags l2h {hid, hid} for the auxiliary input.
class SimpleRNNBuilder : public RNNBuilder {
 public:
  SimpleRNNBuilder() = default;
  explicit SimpleRNNBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model,
                            bool support_lags = false);

  // add_input with an extra input `aux` {hid} fed to every layer through its lag matrix
  // (needs support_lags).
  Expression add_auxiliary_input(const Expression& x, const Expression& aux);

  Expression back() const override;
  std::vector<Expression> final_h() const override;
  std::vector<Expression> get_h(RNNPointer i) const override;
  std::vector<Expression> final_s() const override { return final_h(); }
  std::vector<Expression> get_s(RNNPointer i) const override { return get_h(i); }
  unsigned num_h0_components() const override { return layers; }
  void copy(const RNNBuilder& params) override;
  ParameterCollection& get_parameter_collection() override { return local_model; }

  // Dropout with rate d on each layer's input and d_h on the recurrent state; masks are drawn once
  // per sequence and shared by its time steps (Gal & Ghahramani 2016).
  void set_dropout(float d) override;
  void set_dropout(float d, float d_h);
  void disable_dropout() override;
  // Draws new masks now (otherwise the first add_input of a sequence does, for its batch size).
  void set_dropout_masks(unsigned batch_size = 1);

  std::vector<std::vector<Parameter>> get_parameters() const { return params; }
  std::vector<std::vector<Expression>> get_parameter_expressions() const { return param_vars; }

  ParameterCollection local_model;
  std::vector<std::vector<Parameter>> params;  // per layer: x2h, h2h, bh[, l2h]
  std::vector<std::vector<Expression>> param_vars;
  std::vector<std::vector<Expression>> masks;  // per layer: input mask, recurrent mask
  std::vector<std::vector<Expression>> h;      // per state, per layer
  std::vector<Expression> h0;
  unsigned layers = 0;
  unsigned input_dim = 0, hidden_dim = 0;
  bool lagging = false;
  float dropout_rate_h = 0.f;

 protected:
  void new_graph_impl(ComputationGraph& cg, bool update) override;
  void start_new_sequence_impl(const std::vector<Expression>& h_0) override;
  Expression add_input_impl(int prev, const Expression& x) override;
  Expression set_h_impl(int prev, const std::vector<Expression>& h_new) override;
  Expression set_s_impl(int prev, const std::vector<Expression>& s_new) override;

 private:
  Expression step(int prev, const Expression& x, const Expression* aux);
  ComputationGraph* cg_ = nullptr;
  bool dropout_masks_valid_ = false;
};

}  // namespace dynet
