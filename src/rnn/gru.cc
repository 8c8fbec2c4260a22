#include "dynet/gru.h"

#include <stdexcept>
#include <string>

#include "rnn/builder_util.h"

namespace dynet {

using namespace rnn_detail;

namespace {
enum { X2Z, H2Z, BZ, X2R, H2R, BR, X2H, H2H, BH };
}  // namespace

GRUBuilder::GRUBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim, ParameterCollection& model)
    : hidden_dim(hidden_dim), layers(layers), input_dim(input_dim) {
  check_sizes("GRUBuilder", layers, input_dim, hidden_dim);
  local_model = model.add_subcollection("gru-builder");
  unsigned layer_input_dim = input_dim;
  for (unsigned i = 0; i < layers; ++i) {
    std::vector<Parameter> ps;
    for (int gate = 0; gate < 3; ++gate) {  // update gate z, reset gate r, candidate h
      ps.push_back(local_model.add_parameters({hidden_dim, layer_input_dim}));
      ps.push_back(local_model.add_parameters({hidden_dim, hidden_dim}));
      ps.push_back(local_model.add_parameters({hidden_dim}, ParameterInitConst(0.f)));
    }
    params.push_back(std::move(ps));
    layer_input_dim = hidden_dim;
  }
}

void GRUBuilder::new_graph_impl(ComputationGraph& cg, bool update) {
  param_vars = param_exprs(cg, params, update);
}

void GRUBuilder::start_new_sequence_impl(const std::vector<Expression>& h_0) {
  h.clear();
  h0 = h_0;
}

Expression GRUBuilder::add_input_impl(int prev, const Expression& x) {
  check_input("GRUBuilder", x, input_dim);
  std::vector<Expression> ht(layers);
  Expression in = x;
  for (unsigned i = 0; i < layers; ++i) {
    const std::vector<Expression>& v = param_vars[i];
    Expression h_prev;
    if (prev >= 0)
      h_prev = h[prev][i];
    else if (!h0.empty())
      h_prev = h0[i];
    if (dropout_rate > 0.f) in = dropout(in, dropout_rate);
    if (h_prev.pg) {
      Expression update_gate = logistic(affine_transform({v[BZ], v[X2Z], in, v[H2Z], h_prev}));
      Expression reset_gate = logistic(affine_transform({v[BR], v[X2R], in, v[H2R], h_prev}));
      Expression candidate = tanh(affine_transform({v[BH], v[X2H], in, v[H2H], cmult(reset_gate, h_prev)}));
      ht[i] = cmult(1.f - update_gate, h_prev) + cmult(update_gate, candidate);
    } else {
      // h_{t-1} = 0: the reset gate has nothing to act on.
      Expression update_gate = logistic(affine_transform({v[BZ], v[X2Z], in}));
      ht[i] = cmult(update_gate, tanh(affine_transform({v[BH], v[X2H], in})));
    }
    in = ht[i];
  }
  h.push_back(std::move(ht));
  return dropout_rate > 0.f ? dropout(h.back().back(), dropout_rate) : h.back().back();
}

Expression GRUBuilder::set_h_impl(int prev, const std::vector<Expression>& h_new) {
  if (!h_new.empty() && h_new.size() != layers)
    throw std::invalid_argument("GRUBuilder::set_h: expected " + std::to_string(layers) + " expressions, got " +
                                std::to_string(h_new.size()));
  std::vector<Expression> ht = h_new.empty() ? get_h(prev) : h_new;
  if (ht.empty()) throw std::runtime_error("GRUBuilder::set_h: the previous state has no value");
  h.push_back(std::move(ht));
  return h.back().back();
}

Expression GRUBuilder::set_s_impl(int prev, const std::vector<Expression>& s_new) { return set_h_impl(prev, s_new); }

Expression GRUBuilder::back() const {
  const std::vector<Expression>& hs = cur < 0 ? h0 : h[cur];
  if (hs.empty()) throw std::runtime_error("GRUBuilder::back: no state yet (and no initial state was given)");
  return hs.back();
}

std::vector<Expression> GRUBuilder::get_h(RNNPointer i) const {
  check_pointer("GRUBuilder::get_h", i);
  return i < 0 ? h0 : h[i];
}

void GRUBuilder::copy(const RNNBuilder& other) {
  const GRUBuilder& gru = same_kind<GRUBuilder>(other, "GRUBuilder");
  check_same_layout("GRUBuilder::copy", params, gru.params);
  params = gru.params;
}

}  // namespace dynet
