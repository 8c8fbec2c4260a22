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
  if (!(d >= 0.f && d <= 1.f))
    throw std::invalid_argument(where + ": dropout rates must be in [0, 1], got " + std::to_string(d));
}

// Throws std::invalid_argument (naming `name`) unless the sizes are positive.
inline void check_sizes(const char* name, unsigned layers, unsigned input_dim, unsigned hidden_dim) {
  if (layers == 0 || input_dim == 0 || hidden_dim == 0)
    throw std::invalid_argument(std::string(name) + ": layers, input_dim and hidden_dim must be positive, got " +
                                std::to_string(layers) + ", " + std::to_string(input_dim) + ", " +
                                std::to_string(hidden_dim));
}

// Throws std::invalid_argument (from name::add_input) unless x is an input_dim vector (batched or
// not).
inline void check_input(const char* name, const Expression& x, unsigned input_dim) {
  const Dim& d = x.dim();
  if (d.batch_size() != input_dim || d.rows() != input_dim)
    throw std::invalid_argument(std::string(name) + "::add_input: input " + d.str() + " does not match input_dim " +
                                std::to_string(input_dim));
}

inline Expression param_expr(ComputationGraph& cg, const Parameter& p, bool update) {
  return update ? parameter(cg, p) : const_parameter(cg, p);
}

// param_expr of every parameter, per layer.
inline std::vector<std::vector<Expression>> param_exprs(ComputationGraph& cg,
                                                        const std::vector<std::vector<Parameter>>& params,
                                                        bool update) {
  std::vector<std::vector<Expression>> vars;
  vars.reserve(params.size());
  for (const auto& layer : params) {
    std::vector<Expression>& v = vars.emplace_back();
    v.reserve(layer.size());
    for (const Parameter& p : layer) v.push_back(param_expr(cg, p, update));
  }
  return vars;
}

// A {dim} mask (batch_size elements) of Bernoulli(1 - rate) draws scaled by 1/(1 - rate): zeros for rate 1.
inline Expression dropout_mask(ComputationGraph& cg, unsigned dim, unsigned batch_size, float rate) {
  return random_bernoulli(cg, Dim({dim}, batch_size), 1.f - rate, 1.f / (1.f - rate));
}

// For copy(): throws std::invalid_argument (from `where`) unless `theirs` has as many layers as
// `mine`, each with as many parameters (else `count_mismatch` is the message) of the same dims.
// `kind` names the parameters in the message.
template <class P>
void check_same_layout(const std::string& where, const std::vector<std::vector<P>>& mine,
                       const std::vector<std::vector<P>>& theirs,
                       const char* count_mismatch = "the builders have different parameter layouts",
                       const char* kind = "parameter") {
  if (theirs.size() != mine.size())
    throw std::invalid_argument(where + ": " + std::to_string(theirs.size()) + " layers vs " +
                                std::to_string(mine.size()));
  for (size_t i = 0; i < mine.size(); ++i) {
    if (theirs[i].size() != mine[i].size()) throw std::invalid_argument(where + ": " + count_mismatch);
    for (size_t j = 0; j < mine[i].size(); ++j)
      if (theirs[i][j].dim() != mine[i][j].dim())
        throw std::invalid_argument(where + ": " + kind + " dims differ: " + theirs[i][j].dim().str() + " vs " +
                                    mine[i][j].dim().str());
  }
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
