#include "dynet/lstm.h"

#include <stdexcept>
#include <string>

#include "dynet/param-init.h"

namespace dynet {

namespace {
enum { X2I = 0, H2I = 1, BI = 2 };

void check_rate(const char* where, float d) {
  if (!(d >= 0.f && d < 1.f))
    throw std::invalid_argument(std::string(where) + ": dropout rates must be in [0, 1), got " + std::to_string(d));
}
}  // namespace

VanillaLSTMBuilder::VanillaLSTMBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                       ParameterCollection& model, bool ln_lstm, float forget_bias)
    : layers(layers), input_dim(input_dim), hid(hidden_dim), ln_lstm(ln_lstm), forget_bias(forget_bias) {
  if (layers == 0 || input_dim == 0 || hidden_dim == 0)
    throw std::invalid_argument("VanillaLSTMBuilder: layers, input_dim and hidden_dim must be positive, got " +
                                std::to_string(layers) + ", " + std::to_string(input_dim) + ", " +
                                std::to_string(hidden_dim));
  if (ln_lstm)
    throw std::invalid_argument("VanillaLSTMBuilder: ln_lstm requires layer_norm (not available yet)");
  local_model = model.add_subcollection("vanilla-lstm-builder");
  unsigned layer_input_dim = input_dim;
  for (unsigned i = 0; i < layers; ++i) {
    params.push_back({local_model.add_parameters({hidden_dim * 4, layer_input_dim}),
                      local_model.add_parameters({hidden_dim * 4, hidden_dim}),
                      local_model.add_parameters({hidden_dim * 4}, ParameterInitConst(0.f))});
    layer_input_dim = hidden_dim;
  }
}

void VanillaLSTMBuilder::new_graph_impl(ComputationGraph& cg, bool update) {
  param_vars.clear();
  for (const auto& layer : params) {
    std::vector<Expression> vars;
    for (const Parameter& p : layer) vars.push_back(update ? parameter(cg, p) : const_parameter(cg, p));
    param_vars.push_back(std::move(vars));
  }
  cg_ = &cg;
  dropout_masks_valid = false;
}

void VanillaLSTMBuilder::start_new_sequence_impl(const std::vector<Expression>& h_0) {
  h.clear();
  c.clear();
  if (!h_0.empty()) {
    if (h_0.size() != 2 * layers)
      throw std::invalid_argument("VanillaLSTMBuilder::start_new_sequence: expected " + std::to_string(2 * layers) +
                                  " initial states [c_1..c_L, h_1..h_L], got " + std::to_string(h_0.size()));
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

void VanillaLSTMBuilder::set_dropout(float d) { set_dropout(d, d); }

void VanillaLSTMBuilder::set_dropout(float d, float d_r) {
  check_rate("VanillaLSTMBuilder::set_dropout", d);
  check_rate("VanillaLSTMBuilder::set_dropout", d_r);
  dropout_rate = d;
  dropout_rate_h = d_r;
  dropout_masks_valid = false;
}

void VanillaLSTMBuilder::disable_dropout() {
  dropout_rate = 0.f;
  dropout_rate_h = 0.f;
}

void VanillaLSTMBuilder::set_dropout_masks(unsigned batch_size) {
  if (!cg_) throw std::runtime_error("VanillaLSTMBuilder::set_dropout_masks: call new_graph(cg) first");
  masks.clear();
  for (unsigned i = 0; i < layers; ++i) {
    const unsigned in_dim = i == 0 ? input_dim : hid;
    masks.push_back({random_bernoulli(*cg_, Dim({in_dim}, batch_size), 1.f - dropout_rate, 1.f / (1.f - dropout_rate)),
                     random_bernoulli(*cg_, Dim({hid}, batch_size), 1.f - dropout_rate_h,
                                      1.f / (1.f - dropout_rate_h))});
  }
  dropout_masks_valid = true;
}

Expression VanillaLSTMBuilder::add_input_impl(int prev, const Expression& x) {
  const Dim& xd = x.dim();
  if (xd.batch_size() != input_dim || xd.rows() != input_dim)
    throw std::invalid_argument("VanillaLSTMBuilder::add_input: input " + xd.str() + " does not match input_dim " +
                                std::to_string(input_dim));
  if ((dropout_rate > 0.f || dropout_rate_h > 0.f) && !dropout_masks_valid) set_dropout_masks(xd.bd);
  std::vector<Expression> ht(layers), ct(layers);
  Expression in = x;
  for (unsigned i = 0; i < layers; ++i) {
    const std::vector<Expression>& vars = param_vars[i];
    Expression h_prev, c_prev;
    if (prev >= 0) {
      h_prev = h[prev][i];
      c_prev = c[prev][i];
    } else if (has_initial_state) {
      h_prev = h0[i];
      c_prev = c0[i];
    }
    const bool has_prev_state = h_prev.pg != nullptr;
    if (dropout_rate > 0.f) in = cmult(in, masks[i][0]);
    // Without a previous state h_{t-1} = c_{t-1} = 0: the recurrent terms vanish and are not built.
    Expression gates;
    if (has_prev_state) {
      if (dropout_rate_h > 0.f) h_prev = cmult(h_prev, masks[i][1]);
      gates = affine_transform({vars[BI], vars[X2I], in, vars[H2I], h_prev});
    } else {
      gates = affine_transform({vars[BI], vars[X2I], in});
    }
    Expression in_gate = logistic(pick_range(gates, 0, hid));
    Expression forget_in = pick_range(gates, hid, 2 * hid);
    Expression forget_gate = logistic(forget_bias != 0.f ? forget_in + forget_bias : forget_in);
    Expression out_gate = logistic(pick_range(gates, 2 * hid, 3 * hid));
    Expression candidate = tanh(pick_range(gates, 3 * hid, 4 * hid));
    ct[i] = has_prev_state ? cmult(forget_gate, c_prev) + cmult(in_gate, candidate) : cmult(in_gate, candidate);
    in = ht[i] = cmult(out_gate, tanh(ct[i]));
  }
  h.push_back(std::move(ht));
  c.push_back(std::move(ct));
  return h.back().back();
}

Expression VanillaLSTMBuilder::set_h_impl(int prev, const std::vector<Expression>& h_new) {
  if (!h_new.empty() && h_new.size() != layers)
    throw std::invalid_argument("VanillaLSTMBuilder::set_h: expected " + std::to_string(layers) +
                                " expressions, got " + std::to_string(h_new.size()));
  std::vector<Expression> ht = h_new.empty() ? get_h(prev) : h_new;
  std::vector<Expression> ct;
  if (prev >= 0) {
    ct = c[prev];
  } else if (has_initial_state) {
    ct = c0;
  } else {
    for (unsigned i = 0; i < layers; ++i) ct.push_back(zeros(*cg_, Dim({hid})));
  }
  if (ht.empty()) throw std::runtime_error("VanillaLSTMBuilder::set_h: the previous state has no value");
  h.push_back(std::move(ht));
  c.push_back(std::move(ct));
  return h.back().back();
}

Expression VanillaLSTMBuilder::set_s_impl(int prev, const std::vector<Expression>& s_new) {
  if (s_new.size() != 2 * layers)
    throw std::invalid_argument("VanillaLSTMBuilder::set_s: expected " + std::to_string(2 * layers) +
                                " expressions [c_1..c_L, h_1..h_L], got " + std::to_string(s_new.size()));
  c.emplace_back(s_new.begin(), s_new.begin() + layers);
  h.emplace_back(s_new.begin() + layers, s_new.end());
  return h.back().back();
}

Expression VanillaLSTMBuilder::back() const {
  const std::vector<Expression> hs = get_h(cur);
  if (hs.empty()) throw std::runtime_error("VanillaLSTMBuilder::back: no state yet (and no initial state was given)");
  return hs.back();
}

std::vector<Expression> VanillaLSTMBuilder::final_h() const { return h.empty() ? h0 : h.back(); }

std::vector<Expression> VanillaLSTMBuilder::final_s() const {
  std::vector<Expression> s = c.empty() ? c0 : c.back();
  for (const Expression& e : final_h()) s.push_back(e);
  return s;
}

std::vector<Expression> VanillaLSTMBuilder::get_h(RNNPointer i) const {
  check_pointer("VanillaLSTMBuilder::get_h", i);
  return i < 0 ? h0 : h[i];
}

std::vector<Expression> VanillaLSTMBuilder::get_s(RNNPointer i) const {
  check_pointer("VanillaLSTMBuilder::get_s", i);
  std::vector<Expression> s = i < 0 ? c0 : c[i];
  for (const Expression& e : get_h(i)) s.push_back(e);
  return s;
}

void VanillaLSTMBuilder::copy(const RNNBuilder& other) {
  const auto* lstm = dynamic_cast<const VanillaLSTMBuilder*>(&other);
  if (!lstm) throw std::invalid_argument("VanillaLSTMBuilder::copy: the other builder is not a VanillaLSTMBuilder");
  if (lstm->params.size() != params.size())
    throw std::invalid_argument("VanillaLSTMBuilder::copy: " + std::to_string(lstm->params.size()) + " layers vs " +
                                std::to_string(params.size()));
  for (size_t i = 0; i < params.size(); ++i)
    for (size_t j = 0; j < params[i].size(); ++j)
      if (lstm->params[i][j].dim() != params[i][j].dim())
        throw std::invalid_argument("VanillaLSTMBuilder::copy: parameter dims differ: " +
                                    lstm->params[i][j].dim().str() + " vs " + params[i][j].dim().str());
  params = lstm->params;
}

}  // namespace dynet
