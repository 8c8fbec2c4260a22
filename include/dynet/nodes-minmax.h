// DyNet's minimum and maximum nodes (dynet/nodes-minmax.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Min : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "Min");
    return (::dynet::min(x[0], x[1])).i;
  }
};

struct Max : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "Max");
    return (::dynet::max(x)).i;
  }
};

struct MinDimension : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "MinDimension");
    return (::dynet::min_dim(x[0], std::forward<S>(s)...)).i;
  }
};

struct MaxDimension : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "MaxDimension");
    return (::dynet::max_dim(x[0], std::forward<S>(s)...)).i;
  }
};

}  // namespace dynet
