// DyNet's softmax nodes (dynet/nodes-softmaxes.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Softmax : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Softmax");
    return (::dynet::softmax(x[0], std::forward<S>(s)...)).i;
  }
};

struct LogSoftmax : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "LogSoftmax");
    return (::dynet::log_softmax(x[0])).i;
  }
};

struct RestrictedLogSoftmax : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "RestrictedLogSoftmax");
    return (::dynet::log_softmax(x[0], std::forward<S>(s)...)).i;
  }
};

struct Sparsemax : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Sparsemax");
    return (::dynet::sparsemax(x[0])).i;
  }
};

struct SparsemaxLoss : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "SparsemaxLoss");
    return (::dynet::sparsemax_loss(x[0], std::forward<S>(s)...)).i;
  }
};

struct ConstrainedSoftmax : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "ConstrainedSoftmax");
    return (::dynet::constrained_softmax(x[0], x[1])).i;
  }
};

}  // namespace dynet
