// Helpers shared by the builder implementations (not installed).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/expr.h"
#include "dynet/model.h"
#include "dynet/param-init.h"
#include "dynet/rnn.h"

namespace dynet::rnn_detail {

inline void check_rate(const std::string& where, float d) {
  if (!(d >= 0.f && d < 1.f))
    throw std::invalid_argument(where + ": dropout rates must be in [0, 1), got " + std::to_string(d));
}

inline Expression param_expr(ComputationGraph& cg, const Parameter& p, bool update) {
  return update ? parameter(cg, p) : const_parameter(cg, p);
}

// `other` as a Builder, or std::invalid_argument naming `name` (for copy()).
template <class Builder>
const Builder& same_kind(const RNNBuilder& other, const char* name) {
  const auto* b = dynamic_cast<const Builder*>(&other);
  if (!b) throw std::invalid_argument(std::string(name) + "::copy: the other builder is not a " + name);
  return *b;
}

// Index of each parameter of a coupled-gate LSTM layer (CoupledLSTMBuilder, FastLSTMBuilder,
// DeepLSTMBuilder), in DyNet's creation order.
enum CoupledParam { C_X2I, C_H2I, C_C2I, C_BI, C_X2O, C_H2O, C_C2O, C_BO, C_X2C, C_H2C, C_BC };

// Adds one coupled-gate layer's parameters: the cell-to-gate weights have dims `peephole`
// ({hid, hid} matrices or {hid, 1} vectors); biases start at 0.
inline std::vector<Parameter> add_coupled_layer(ParameterCollection& pc, unsigned in, unsigned hid,
                                                const Dim& peephole) {
  std::vector<Parameter> ps;
  for (int gate = 0; gate < 2; ++gate) {  // input gate, then output gate
    ps.push_back(pc.add_parameters({hid, in}));
    ps.push_back(pc.add_parameters({hid, hid}));
    ps.push_back(pc.add_parameters(peephole));
    ps.push_back(pc.add_parameters({hid}, ParameterInitConst(0.f)));
  }
  ps.push_back(pc.add_parameters({hid, in}));
  ps.push_back(pc.add_parameters({hid, hid}));
  ps.push_back(pc.add_parameters({hid}, ParameterInitConst(0.f)));
  return ps;
}

}  // namespace dynet::rnn_detail
