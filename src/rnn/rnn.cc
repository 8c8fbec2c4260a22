#include "dynet/rnn.h"

#include <stdexcept>
#include <string>

#include "dynet/param-init.h"
#include "rnn/builder_util.h"

namespace dynet {

using namespace rnn_detail;

// ---------------- RNNStateMachine ----------------

void RNNStateMachine::transition(RNNOp op) {
  switch (q_) {
    case CREATED:
      if (op == RNNOp::new_graph) {
        q_ = GRAPH_READY;
        return;
      }
      break;
    case GRAPH_READY:
      if (op == RNNOp::new_graph) return;
      if (op == RNNOp::start_new_sequence) {
        q_ = READING_INPUT;
        return;
      }
      break;
    case READING_INPUT:
      if (op == RNNOp::add_input || op == RNNOp::start_new_sequence) return;
      if (op == RNNOp::new_graph) {
        q_ = GRAPH_READY;
        return;
      }
      break;
  }
  failure(op);
}

void RNNStateMachine::failure(RNNOp op) const {
  static const char* const op_names[] = {"new_graph", "start_new_sequence", "add_input"};
  std::string msg = std::string("RNNBuilder: ") + op_names[op] + " is not allowed here: ";
  msg += q_ == CREATED ? "call new_graph(cg) first" : "call start_new_sequence() first";
  throw std::runtime_error(msg);
}

// ---------------- RNNBuilder ----------------

RNNBuilder::~RNNBuilder() = default;

void RNNBuilder::new_graph(ComputationGraph& cg, bool update) {
  sm.transition(RNNOp::new_graph);
  new_graph_impl(cg, update);
}

void RNNBuilder::start_new_sequence(const std::vector<Expression>& h_0) {
  if (!h_0.empty() && h_0.size() != num_h0_components())
    throw std::invalid_argument("RNNBuilder::start_new_sequence: expected " + std::to_string(num_h0_components()) +
                                " initial state expressions, got " + std::to_string(h_0.size()));
  sm.transition(RNNOp::start_new_sequence);
  cur = -1;
  head.clear();
  start_new_sequence_impl(h_0);
}

void RNNBuilder::check_pointer(const char* where, RNNPointer p, const char* method) const {
  if (p < -1 || p >= static_cast<RNNPointer>(head.size()))
    throw std::invalid_argument(std::string(where) + method + ": state " + std::to_string(p) +
                                " does not exist (the sequence has " + std::to_string(head.size()) + " states)");
}

void RNNBuilder::push_state(const char* where, RNNPointer prev) {
  sm.transition(RNNOp::add_input);
  check_pointer(where, prev);
  head.push_back(prev);
  cur = static_cast<RNNPointer>(head.size()) - 1;
}

void RNNBuilder::check_can_add_input() { sm.transition(RNNOp::add_input); }

void RNNBuilder::pop_state(RNNPointer restore_cur) {
  head.pop_back();
  cur = restore_cur;
}

// A failed build pops the state it pushed, so head and the builder's state lists stay aligned.
Expression RNNBuilder::set_h(const RNNPointer& prev, const std::vector<Expression>& h_new) {
  const RNNPointer p = prev, before = cur;  // `prev` may alias `cur`
  push_state("RNNBuilder::set_h", p);
  try {
    return set_h_impl(p, h_new);
  } catch (...) {
    pop_state(before);
    throw;
  }
}

Expression RNNBuilder::set_s(const RNNPointer& prev, const std::vector<Expression>& s_new) {
  const RNNPointer p = prev, before = cur;
  push_state("RNNBuilder::set_s", p);
  try {
    return set_s_impl(p, s_new);
  } catch (...) {
    pop_state(before);
    throw;
  }
}

Expression RNNBuilder::add_input(const Expression& x) { return add_input(cur, x); }

Expression RNNBuilder::add_input(const RNNPointer& prev, const Expression& x) {
  const RNNPointer p = prev, before = cur;
  push_state("RNNBuilder::add_input", p);
  try {
    return add_input_impl(p, x);
  } catch (...) {
    pop_state(before);
    throw;
  }
}

void RNNBuilder::rewind_one_step() {
  if (cur < 0) throw std::runtime_error("RNNBuilder::rewind_one_step: already at the initial state");
  cur = head[cur];
}

RNNPointer RNNBuilder::get_head(const RNNPointer& p) const {
  if (p < 0 || p >= static_cast<RNNPointer>(head.size()))
    throw std::invalid_argument("RNNBuilder::get_head: state " + std::to_string(p) + " does not exist (the sequence has " +
                                std::to_string(head.size()) + " states)");
  return head[p];
}

void RNNBuilder::set_dropout(float d) {
  check_rate("RNNBuilder::set_dropout", d);
  dropout_rate = d;
}

void RNNBuilder::disable_dropout() { dropout_rate = 0.f; }

// ---------------- SimpleRNNBuilder ----------------

namespace {
enum { X2H = 0, H2H = 1, HB = 2, L2H = 3 };
}  // namespace

SimpleRNNBuilder::SimpleRNNBuilder(unsigned layers, unsigned input_dim, unsigned hidden_dim,
                                   ParameterCollection& model, bool support_lags)
    : layers(layers), input_dim(input_dim), hidden_dim(hidden_dim), lagging(support_lags) {
  check_sizes("SimpleRNNBuilder", layers, input_dim, hidden_dim);
  local_model = model.add_subcollection("simple-rnn-builder");
  unsigned layer_input_dim = input_dim;
  for (unsigned i = 0; i < layers; ++i) {
    std::vector<Parameter> ps;
    ps.push_back(local_model.add_parameters({hidden_dim, layer_input_dim}));
    ps.push_back(local_model.add_parameters({hidden_dim, hidden_dim}));
    ps.push_back(local_model.add_parameters({hidden_dim}, ParameterInitConst(0.f)));
    if (lagging) ps.push_back(local_model.add_parameters({hidden_dim, hidden_dim}));
    params.push_back(std::move(ps));
    layer_input_dim = hidden_dim;
  }
}

void SimpleRNNBuilder::new_graph_impl(ComputationGraph& cg, bool update) {
  param_vars = param_exprs(cg, params, update);
  cg_ = &cg;
  dropout_masks_valid_ = false;
}

void SimpleRNNBuilder::start_new_sequence_impl(const std::vector<Expression>& h_0) {
  h.clear();
  h0 = h_0;
  dropout_masks_valid_ = false;
}

void SimpleRNNBuilder::set_dropout(float d) { set_dropout(d, d); }

void SimpleRNNBuilder::set_dropout(float d, float d_h) {
  check_rate("SimpleRNNBuilder::set_dropout", d);
  check_rate("SimpleRNNBuilder::set_dropout", d_h);
  dropout_rate = d;
  dropout_rate_h = d_h;
  dropout_masks_valid_ = false;
}

void SimpleRNNBuilder::disable_dropout() {
  dropout_rate = 0.f;
  dropout_rate_h = 0.f;
}

void SimpleRNNBuilder::set_dropout_masks(unsigned batch_size) {
  if (!cg_) throw std::runtime_error("SimpleRNNBuilder::set_dropout_masks: call new_graph(cg) first");
  masks.clear();
  for (unsigned i = 0; i < layers; ++i) {
    const unsigned in_dim = i == 0 ? input_dim : hidden_dim;
    masks.push_back({dropout_mask(*cg_, in_dim, batch_size, dropout_rate),
                     dropout_mask(*cg_, hidden_dim, batch_size, dropout_rate_h)});
  }
  dropout_masks_valid_ = true;
}

Expression SimpleRNNBuilder::step(int prev, const Expression& x, const Expression* aux) {
  check_input("SimpleRNNBuilder", x, input_dim);
  if (aux && !lagging)
    throw std::invalid_argument("SimpleRNNBuilder::add_auxiliary_input: the builder was made without support_lags");
  const bool use_dropout = dropout_rate > 0.f || dropout_rate_h > 0.f;
  if (use_dropout && !dropout_masks_valid_) set_dropout_masks(x.dim().bd);
  std::vector<Expression> ht(layers);
  Expression in = x;
  for (unsigned i = 0; i < layers; ++i) {
    const std::vector<Expression>& vars = param_vars[i];
    Expression h_prev;
    if (prev >= 0)
      h_prev = h[prev][i];
    else if (!h0.empty())
      h_prev = h0[i];
    if (dropout_rate > 0.f) in = cmult(in, masks[i][0]);
    std::vector<Expression> terms = {vars[HB], vars[X2H], in};
    if (h_prev.pg) {
      if (dropout_rate_h > 0.f) h_prev = cmult(h_prev, masks[i][1]);
      terms.push_back(vars[H2H]);
      terms.push_back(h_prev);
    }
    if (aux) {
      terms.push_back(vars[L2H]);
      terms.push_back(*aux);
    }
    in = ht[i] = tanh(affine_transform(terms));
  }
  h.push_back(std::move(ht));
  return h.back().back();
}

Expression SimpleRNNBuilder::add_input_impl(int prev, const Expression& x) { return step(prev, x, nullptr); }

Expression SimpleRNNBuilder::add_auxiliary_input(const Expression& x, const Expression& aux) {
  const RNNPointer p = cur;
  push_state("SimpleRNNBuilder::add_auxiliary_input", p);
  try {
    return step(p, x, &aux);
  } catch (...) {
    pop_state(p);
    throw;
  }
}

Expression SimpleRNNBuilder::set_h_impl(int prev, const std::vector<Expression>& h_new) {
  if (h_new.empty()) {
    // An unchanged copy of the previous state.
    h.push_back(get_h(prev));
  } else {
    if (h_new.size() != layers)
      throw std::invalid_argument("SimpleRNNBuilder::set_h: expected " + std::to_string(layers) +
                                  " expressions, got " + std::to_string(h_new.size()));
    h.push_back(h_new);
  }
  if (h.back().empty()) throw std::runtime_error("SimpleRNNBuilder::set_h: the previous state has no value");
  return h.back().back();
}

Expression SimpleRNNBuilder::set_s_impl(int prev, const std::vector<Expression>& s_new) {
  return set_h_impl(prev, s_new);
}

Expression SimpleRNNBuilder::back() const {
  const std::vector<Expression>& hs = cur < 0 ? h0 : h[cur];
  if (hs.empty()) throw std::runtime_error("SimpleRNNBuilder::back: no state yet (and no initial state was given)");
  return hs.back();
}

std::vector<Expression> SimpleRNNBuilder::final_h() const { return h.empty() ? h0 : h.back(); }

std::vector<Expression> SimpleRNNBuilder::get_h(RNNPointer i) const {
  check_pointer("SimpleRNNBuilder::get_h", i);
  return i < 0 ? h0 : h[i];
}

void SimpleRNNBuilder::copy(const RNNBuilder& other) {
  const auto& rnn = same_kind<SimpleRNNBuilder>(other, "SimpleRNNBuilder");
  check_same_layout("SimpleRNNBuilder::copy", params, rnn.params, "one builder supports lags and the other does not");
  params = rnn.params;
}

}  // namespace dynet
