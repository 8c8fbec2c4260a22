// DyNet's log-sum-exp nodes (dynet/nodes-logsumexp.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct LogSumExp : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "LogSumExp");
    return (::dynet::logsumexp(x)).i;
  }
};

struct LogSumExpDimension : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "LogSumExpDimension");
    return (::dynet::logsumexp_dim(x[0], std::forward<S>(s)...)).i;
  }
};

}  // namespace dynet
