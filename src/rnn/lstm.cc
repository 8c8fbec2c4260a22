#include "dynet/lstm.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "dynet/param-init.h"
#include "rnn/builder_util.h"

namespace dynet {

using namespace rnn_detail;

namespace {

enum { LN_GH, LN_BH, LN_GX, LN_BX, LN_GC, LN_BC };

// One layer of the vanilla LSTM: gates from one affine transform (or, with layer normalisation `ln`,
// from separately normalised input and recurrent terms), split into i, f, o, g. A null h_prev
// means the zero state, whose recurrent terms are not built.
// Without layer normalisation and with DyNet's default forget bias of 1, the same function is computed
// by the fused nodes (vanilla_lstm_gates/_c/_h): three nodes per layer and step instead of about fifteen,
// which does not change the result beyond float rounding (the bias and its 1 are added to the sum of
// the products, not the products to the bias) and saves most of the elementwise passes over the gates
// (measured on the bilstm benchmark task, 50 sequences per minibatch: about 5% of the step, GEMM being
// most of the rest).
void vanilla_layer(const Expression& x2i, const Expression& h2i, const Expression& bi,
                   const std::vector<Expression>* ln, const Expression& in, const Expression& h_prev,
                   const Expression& c_prev, unsigned hid, float forget_bias, Expression& h_out, Expression& c_out) {
  const bool has_prev = h_prev.pg != nullptr;
  if (!ln && forget_bias == 1.f) {
    // The fused gates node always takes h_{t-1}: the zero state is an explicit zero vector.
    const Expression h0 = has_prev ? h_prev : zeros(*in.pg, Dim({hid}, in.dim().bd));
    Expression gates = vanilla_lstm_gates(in, h0, x2i, h2i, bi);
    c_out = vanilla_lstm_c(has_prev ? c_prev : h0, gates);
    h_out = vanilla_lstm_h(c_out, gates);
    return;
  }
  Expression gates;
  if (ln) {
    const std::vector<Expression>& v = *ln;
    gates = bi + layer_norm(x2i * in, v[LN_GX], v[LN_BX]);
    if (has_prev) gates = gates + layer_norm(h2i * h_prev, v[LN_GH], v[LN_BH]);
  } else {
    gates = has_prev ? affine_transform({bi, x2i, in, h2i, h_prev}) : affine_transform({bi, x2i, in});
  }
  Expression in_gate = logistic(pick_range(gates, 0, hid));
  Expression forget_in = pick_range(gates, hid, 2 * hid);
  Expression forget_gate = logistic(forget_bias != 0.f ? forget_in + forget_bias : forget_in);
  Expression out_gate = logistic(pick_range(gates, 2 * hid, 3 * hid));
  Expression candidate = tanh(pick_range(gates, 3 * hid, 4 * hid));
  c_out = has_prev ? cmult(forget_gate, c_prev) + cmult(in_gate, candidate) : cmult(in_gate, candidate);
  h_out = cmult(out_gate, tanh(ln ? layer_norm(c_out, (*ln)[LN_GC], (*ln)[LN_BC]) : c_out));
}

}  // namespace

// ---------------- LSTMStateBuilder ----------------

LSTMStateBuilder::LSTMStateBuilder(const char* builder_name, const char* collection, unsigned layers,
                                   unsigned input_dim, unsigned hidden_dim, ParameterCollection& model)
    : layers(layers), input_dim(input_dim), hid(hidden_dim), builder_name_(builder_name) {
  check_sizes(builder_name, layers, input_dim, hidden_dim);
  local_model = model.add_subcollection(collection);
}

void LSTMStateBuilder::new_graph_impl(ComputationGraph& cg, bool update) {
  param_vars = param_exprs(cg, params, update);
  cg_ = &cg;
  dropout_masks_valid = false;
}

void LSTMStateBuilder::start_new_sequence_impl(const std::vector<Expression>& h_0) {
  h.clear();
  c.clear();
  if (!h_0.empty()) {  // RNNBuilder::start_new_sequence checked the size
    c0.assign(h_0.begin(), h_0.begin() + layers);
    h0.assign(h_0.begin() + layers, h_0.end());
    has_initial_state = true;
  } else {
    c0.clear();
    h0.clear();
    has_initial_state = false;
  }
  dropout_masks_valid = false;
}

void LSTMStateBuilder::set_dropout(float d) { set_dropout(d, d); }

void LSTMStateBuilder::set_dropout(float d, float d_r) {
  check_rate(std::string(builder_name_) + "::set_dropout", d);
  check_rate(std::string(builder_name_) + "::set_dropout", d_r);
  dropout_rate = d;
  dropout_rate_h = d_r;
  dropout_masks_valid = false;
}

void LSTMStateBuilder::disable_dropout() {
  dropout_rate = 0.f;
  dropout_rate_h = 0.f;
}

void LSTMStateBuilder::set_dropout_masks(unsigned batch_size) {
  if (!cg_) throw std::runtime_error(std::string(builder_name_) + "::set_dropout_masks: call new_graph(cg) first");
  masks.clear();
  for (const std::vector<Parameter>& layer : params) {
    const unsigned in_dim = layer[0].dim().cols();  // every builder lists the layer's x2i first
    masks.push_back({dropout_mask(*cg_, in_dim, batch_size, dropout_rate),
                     dropout_mask(*cg_, hid, batch_size, dropout_rate_h)});
  }
  dropout_masks_valid = true;
}

bool LSTMStateBuilder::prepare_dropout(const Expression& x) {
  if (!dropout_enabled()) return false;
  if (!dropout_masks_valid) set_dropout_masks(x.dim().bd);
  return true;
}

void LSTMStateBuilder::check_input(const Expression& x) const { rnn_detail::check_input(builder_name_, x, input_dim); }

void LSTMStateBuilder::previous_state(int prev, unsigned layer, Expression& h_prev, Expression& c_prev) const {
  if (prev >= 0) {
    h_prev = h[prev][layer];
    c_prev = c[prev][layer];
  } else if (has_initial_state) {
    h_prev = h0[layer];
    c_prev = c0[layer];
  } else {
    h_prev = c_prev = Expression();
  }
}

void LSTMStateBuilder::drop_inputs(unsigned i, Expression& in, Expression& h_prev) const {
  if (dropout_rate > 0.f) in = cmult(in, masks[i][0]);
  if (h_prev.pg && dropout_rate_h > 0.f) h_prev = cmult(h_prev, masks[i][1]);
}

Expression LSTMStateBuilder::set_h_impl(int prev, const std::vector<Expression>& h_new) {
  if (!h_new.empty() && h_new.size() != layers)
    throw std::invalid_argument(std::string(builder_name_) + "::set_h: expected " + std::to_string(layers) +
                                " expressions, got " + std::to_string(h_new.size()));
  std::vector<Expression> ht = h_new.empty() ? get_h(prev) : h_new;
  if (ht.empty()) throw std::runtime_error(std::string(builder_name_) + "::set_h: the previous state has no value");
  std::vector<Expression> ct;
  if (prev >= 0) {
    ct = c[prev];
  } else if (has_initial_state) {
    ct = c0;
  } else {
    for (unsigned i = 0; i < layers; ++i) ct.push_back(zeros(*ht[i].pg, Dim({hid})));
  }
  h.push_back(std::move(ht));
  c.push_back(std::move(ct));
  return h.back().back();
}

Expression LSTMStateBuilder::set_s_impl(int prev, const std::vector<Expression>& s_new) {
  if (s_new.size() != layers && s_new.size() != 2 * layers)
    throw std::invalid_argument(std::string(builder_name_) + "::set_s: expected " + std::to_string(2 * layers) +
                                " expressions [c_1..c_L, h_1..h_L] or " + std::to_string(layers) +
                                " memory cells, got " + std::to_string(s_new.size()));
  std::vector<Expression> ht;
  if (s_new.size() == 2 * layers) {
    ht.assign(s_new.begin() + layers, s_new.end());
  } else {
    ht = get_h(prev);
    if (ht.empty())
      for (unsigned i = 0; i < layers; ++i) ht.push_back(zeros(*s_new[i].pg, Dim({hid})));
  }
  c.emplace_back(s_new.begin(), s_new.begin() + layers);
  h.push_back(std::move(ht));
  return h.back().back();
}

Expression LSTMStateBuilder::back() const {
  const std::vector<Expression>& hs = cur < 0 ? h0 : h[cur];
  if (hs.empty())
    throw std::runtime_error(std::string(builder_name_) + "::back: no state yet (and no initial state was given)");
  return hs.back();
}

std::vector<Expression> LSTMStateBuilder::final_h() const { return h.empty() ? h0 : h.back(); }

std::vector<Expression> LSTMStateBuilder::final_s() const {
  std::vector<Expression> s = c.empty() ? c0 : c.back();
  for (const Expression& e : final_h()) s.push_back(e);
  return s;
}

std::vector<Expression> LSTMStateBuilder::get_h(RNNPointer i) const {
  check_pointer(builder_name_, i, "::get_h");
  return i < 0 ? h0 : h[i];
}

std::vector<Expression> LSTMStateBuilder::get_s(RNNPointer i) const {
  check_pointer(builder_name_, i, "::get_s");
  std::vector<Expression> s = i < 0 ? c0 : c[i];
  for (const Expression& e : get_h(i)) s.push_back(e);
  return s;
}

void LSTMStateBuilder::share_parameters(const LSTMStateBuilder& other) {
  check_same_layout(std::string(builder_name_) + "::copy", params, other.params);
  params = other.params;
}

// ---------------- VanillaLSTMCellBuilder ----------------

namespace {
enum { X2I = 0, H2I = 1, BI = 2, X2I_MASK = 3, H2I_MASK = 4 };
}  // namespace

VanillaLSTMCellBuilder::VanillaLSTMCellBuilder(const char* builder_name, unsigned layers, unsigned input_dim,
                                               unsigned hidden_dim, ParameterCollection& model, bool ln_lstm,
                                               float forget_bias)
    : LSTMStateBuilder(builder_name, "vanilla-lstm-builder", layers, input_dim, hidden_dim, model),
      ln_lstm(ln_lstm),
      forget_bias(forget_bias) {}

void VanillaLSTMCellBuilder::add_layer_norm_parameters(ParameterCollection& model) {
  ln_params.push_back({model.add_parameters({hid * 4}, ParameterInitConst(1.f)),
                       model.add_parameters({hid * 4}, ParameterInitConst(0.f)),
                       model.add_parameters({hid * 4}, ParameterInitConst(1.f)),
                       model.add_parameters({hid * 4}, ParameterInitConst(0.f)),
                       model.add_parameters({hid}, ParameterInitConst(1.f)),
                       model.add_parameters({hid}, ParameterInitConst(0.f))});
}

void VanillaLSTMCellBuilder::new_graph_impl(ComputationGraph& cg, bool update) {
  LSTMStateBuilder::new_graph_impl(cg, update);
  add_layer_norm_vars(cg, update);
}

void VanillaLSTMCellBuilder::add_layer_norm_vars(ComputationGraph& cg, bool update) {
  ln_param_vars = param_exprs(cg, ln_params, update);
}

Expression VanillaLSTMCellBuilder::add_input_impl(int prev, const Expression& x) {
  return add_layers(prev, x,
                    [&](unsigned i, bool dropout_on, Expression in, Expression h_prev, const Expression& c_prev,
                        Expression& h_out, Expression& c_out) {
                      const std::vector<Expression>& v = param_vars[i];
                      if (dropout_on) drop_inputs(i, in, h_prev);
                      vanilla_layer(v[X2I], v[H2I], v[BI], ln_lstm ? &ln_param_vars[i] : nullptr, in, h_prev, c_prev,
                                    hid, forget_bias, h_out, c_out);
                    });
}

void VanillaLSTMCellBuilder::share_cell_parameters(const VanillaLSTMCellBuilder& other) {
  if (other.ln_lstm != ln_lstm)
    throw std::invalid_argument(std::string(builder_name_) + "::copy: one builder uses ln_lstm and the other does not");
  share_parameters(other);
  ln_params = other.ln_params;
}

// ---------------- VanillaLSTMBuilder ----------------

VanillaLSTMBuilder::VanillaLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                       ParameterCollection& model, bool ln_lstm, float forget_bias)
    : VanillaLSTMCellBuilder("VanillaLSTMBuilder", layers, input_dim, hidden_dim, model, ln_lstm, forget_bias) {
  unsigned layer_input_dim = input_dim;
  for (unsigned i = 0; i < layers; ++i) {
    params.push_back({local_model.add_parameters({hidden_dim * 4, layer_input_dim}),
                      local_model.add_parameters({hidden_dim * 4, hidden_dim}),
                      local_model.add_parameters({hidden_dim * 4}, ParameterInitConst(0.f))});
    if (ln_lstm) add_layer_norm_parameters(model);
    layer_input_dim = hidden_dim;
  }
}

void VanillaLSTMBuilder::copy(const RNNBuilder& other) {
  share_cell_parameters(same_kind<VanillaLSTMBuilder>(other, "VanillaLSTMBuilder"));
}

// ---------------- SparseLSTMBuilder ----------------

SparseLSTMBuilder::SparseLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                     ParameterCollection& model, bool ln_lstm, float forget_bias)
    : VanillaLSTMCellBuilder("SparseLSTMBuilder", layers, input_dim, hidden_dim, model, ln_lstm, forget_bias) {
  unsigned layer_input_dim = input_dim;
  for (unsigned i = 0; i < layers; ++i) {
    Parameter x2i = local_model.add_parameters({hidden_dim * 4, layer_input_dim});
    Parameter h2i = local_model.add_parameters({hidden_dim * 4, hidden_dim});
    Parameter x2i_mask = local_model.add_parameters({hidden_dim * 4, layer_input_dim}, ParameterInitConst(1.f));
    Parameter h2i_mask = local_model.add_parameters({hidden_dim * 4, hidden_dim}, ParameterInitConst(1.f));
    Parameter bi = local_model.add_parameters({hidden_dim * 4}, ParameterInitConst(0.f));
    params.push_back({x2i, h2i, bi, x2i_mask, h2i_mask});
    if (ln_lstm) add_layer_norm_parameters(model);
    layer_input_dim = hidden_dim;
  }
}

void SparseLSTMBuilder::new_graph_impl(ComputationGraph& cg, bool update) {
  // The effective weights are weight ⊙ mask; the masks are constants.
  param_vars.clear();
  for (const auto& p : params)
    param_vars.push_back({cmult(param_expr(cg, p[X2I], update), const_parameter(cg, p[X2I_MASK])),
                          cmult(param_expr(cg, p[H2I], update), const_parameter(cg, p[H2I_MASK])),
                          param_expr(cg, p[BI], update)});
  add_layer_norm_vars(cg, update);
  cg_ = &cg;
  dropout_masks_valid = false;
}

void SparseLSTMBuilder::set_sparsity(float percent) {
  if (!(percent >= 0.f && percent <= 1.f))
    throw std::invalid_argument("SparseLSTMBuilder::set_sparsity: the fraction to prune must be in [0, 1], got " +
                                std::to_string(percent));
  struct Entry {
    float magnitude;
    unsigned layer, which;  // which: 0 = x2i, 1 = h2i
    unsigned index;
  };
  std::vector<Entry> entries;
  for (unsigned i = 0; i < params.size(); ++i)
    for (unsigned which = 0; which < 2; ++which) {
      const ParameterStorage& w = params[i][X2I + which].get_storage();
      const ParameterStorage& m = params[i][X2I_MASK + which].get_storage();
      for (unsigned k = 0; k < w.dim.size(); ++k)
        entries.push_back({std::abs(w.values.v[k] * m.values.v[k]), i, which, k});
    }
  const size_t prune = static_cast<size_t>(percent * static_cast<double>(entries.size()));
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.magnitude < b.magnitude; });
  for (unsigned i = 0; i < params.size(); ++i)
    for (unsigned which = 0; which < 2; ++which) {
      ParameterStorage& m = params[i][X2I_MASK + which].get_storage();
      std::fill(m.values.v, m.values.v + m.dim.size(), 1.f);
    }
  for (size_t k = 0; k < prune; ++k)
    params[entries[k].layer][X2I_MASK + entries[k].which].get_storage().values.v[entries[k].index] = 0.f;
}

void SparseLSTMBuilder::copy(const RNNBuilder& other) {
  share_cell_parameters(same_kind<SparseLSTMBuilder>(other, "SparseLSTMBuilder"));
}

// ---------------- CompactVanillaLSTMBuilder ----------------

CompactVanillaLSTMBuilder::CompactVanillaLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                                     ParameterCollection& model)
    : LSTMStateBuilder("CompactVanillaLSTMBuilder", "compact-vanilla-lstm-builder", layers, input_dim, hidden_dim,
                       model) {
  unsigned layer_input_dim = input_dim;
  for (unsigned i = 0; i < layers; ++i) {
    params.push_back({local_model.add_parameters({hidden_dim * 4, layer_input_dim}),
                      local_model.add_parameters({hidden_dim * 4, hidden_dim}),
                      local_model.add_parameters({hidden_dim * 4}, ParameterInitConst(0.f))});
    layer_input_dim = hidden_dim;
  }
}

void CompactVanillaLSTMBuilder::set_weightnoise(float std) {
  if (!(std >= 0.f))
    throw std::invalid_argument("CompactVanillaLSTMBuilder::set_weightnoise: the standard deviation must be >= 0, got " +
                                std::to_string(std));
  weightnoise_std = std;
}

Expression CompactVanillaLSTMBuilder::add_input_impl(int prev, const Expression& x) {
  return add_layers(prev, x,
                    [&](unsigned i, bool dropout_on, Expression in, Expression h_prev, Expression c_prev,
                        Expression& h_out, Expression& c_out) {
                      const std::vector<Expression>& v = param_vars[i];
                      // The fused gates node always takes h_{t-1}.
                      if (!h_prev.pg) h_prev = c_prev = zeros(*cg_, Dim({hid}, x.dim().bd));
                      Expression gates = dropout_on ? vanilla_lstm_gates_dropout(in, h_prev, v[X2I], v[H2I], v[BI],
                                                                                 masks[i][0], masks[i][1],
                                                                                 weightnoise_std)
                                                    : vanilla_lstm_gates(in, h_prev, v[X2I], v[H2I], v[BI],
                                                                         weightnoise_std);
                      c_out = vanilla_lstm_c(c_prev, gates);
                      h_out = vanilla_lstm_h(c_out, gates);
                    });
}

void CompactVanillaLSTMBuilder::copy(const RNNBuilder& other) {
  share_parameters(same_kind<CompactVanillaLSTMBuilder>(other, "CompactVanillaLSTMBuilder"));
}

// ---------------- CoupledLSTMBuilder ----------------

CoupledLSTMBuilder::CoupledLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                       ParameterCollection& model)
    : LSTMStateBuilder("CoupledLSTMBuilder", "lstm-builder", layers, input_dim, hidden_dim, model) {
  unsigned layer_input_dim = input_dim;
  for (unsigned i = 0; i < layers; ++i) {
    params.push_back(add_coupled_layer(local_model, layer_input_dim, hidden_dim, Dim({hidden_dim, hidden_dim})));
    layer_input_dim = hidden_dim;
  }
}

void CoupledLSTMBuilder::set_dropout(float d) { set_dropout(d, d, d); }

void CoupledLSTMBuilder::set_dropout(float d, float d_h, float d_c) {
  for (float r : {d, d_h, d_c}) check_rate("CoupledLSTMBuilder::set_dropout", r);
  dropout_rate = d;
  dropout_rate_h = d_h;
  dropout_rate_c = d_c;
  dropout_masks_valid = false;
}

void CoupledLSTMBuilder::disable_dropout() {
  dropout_rate = dropout_rate_h = dropout_rate_c = 0.f;
}

void CoupledLSTMBuilder::set_dropout_masks(unsigned batch_size) {
  LSTMStateBuilder::set_dropout_masks(batch_size);
  for (auto& layer_masks : masks) layer_masks.push_back(dropout_mask(*cg_, hid, batch_size, dropout_rate_c));
}

Expression CoupledLSTMBuilder::add_input_impl(int prev, const Expression& x) {
  return add_layers(prev, x, [&](unsigned i, bool dropout_on, Expression in, Expression h_prev,
                                 const Expression& c_prev, Expression& h_out, Expression& c_out) {
    const std::vector<Expression>& v = param_vars[i];
    const bool has_prev = h_prev.pg != nullptr;
    // The peepholes see the (dropped) cell; the cell update itself uses the full c_{t-1}.
    Expression c_prev_seen = c_prev;
    if (dropout_on) {
      drop_inputs(i, in, h_prev);
      if (has_prev && dropout_rate_c > 0.f) c_prev_seen = cmult(c_prev, masks[i][2]);
    }
    Expression in_gate, candidate;
    if (has_prev) {
      in_gate = logistic(affine_transform({v[C_BI], v[C_X2I], in, v[C_H2I], h_prev, v[C_C2I], c_prev_seen}));
      candidate = tanh(affine_transform({v[C_BC], v[C_X2C], in, v[C_H2C], h_prev}));
      c_out = cmult(1.f - in_gate, c_prev) + cmult(in_gate, candidate);
    } else {
      in_gate = logistic(affine_transform({v[C_BI], v[C_X2I], in}));
      candidate = tanh(affine_transform({v[C_BC], v[C_X2C], in}));
      c_out = cmult(in_gate, candidate);
    }
    Expression c_seen = dropout_on && dropout_rate_c > 0.f ? cmult(c_out, masks[i][2]) : c_out;
    Expression out_gate =
        has_prev ? logistic(affine_transform({v[C_BO], v[C_X2O], in, v[C_H2O], h_prev, v[C_C2O], c_seen}))
                 : logistic(affine_transform({v[C_BO], v[C_X2O], in, v[C_C2O], c_seen}));
    h_out = cmult(out_gate, tanh(c_out));
  });
}

void CoupledLSTMBuilder::copy(const RNNBuilder& other) {
  share_parameters(same_kind<CoupledLSTMBuilder>(other, "CoupledLSTMBuilder"));
}

}  // namespace dynet
