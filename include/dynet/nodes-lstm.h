// DyNet's the fused LSTM nodes (dynet/nodes-lstm.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct VanillaLSTMGates : detail::BuiltinNode {
  // {x_1..x_k, h_tm1, Wx, Wh, b} or, with dropout, {..., b, mask_x, mask_h}
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, bool dropout, real weightnoise_std) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "VanillaLSTMGates");
    const size_t tail = dropout ? 6 : 4;
    if (x.size() <= tail)
      throw std::invalid_argument("VanillaLSTMGates: needs inputs, h_tm1, Wx, Wh, b" +
                                  std::string(dropout ? " and two dropout masks" : "") + ", got " +
                                  std::to_string(x.size()) + " arguments");
    const size_t k = x.size() - tail;
    const std::vector<Expression> xs(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(k));
    if (dropout)
      return ::dynet::vanilla_lstm_gates_dropout_concat(xs, x[k], x[k + 1], x[k + 2], x[k + 3], x[k + 4], x[k + 5],
                                                        weightnoise_std).i;
    return ::dynet::vanilla_lstm_gates_concat(xs, x[k], x[k + 1], x[k + 2], x[k + 3], weightnoise_std).i;
  }
};

DYNET_BUILTIN_NODE(VanillaLSTMC, 2, vanilla_lstm_c)
DYNET_BUILTIN_NODE(VanillaLSTMH, 2, vanilla_lstm_h)

}  // namespace dynet
