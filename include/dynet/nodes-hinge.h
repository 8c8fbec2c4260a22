// DyNet's hinge-loss nodes (dynet/nodes-hinge.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Hinge : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Hinge");
    return (::dynet::hinge(x[0], std::forward<S>(s)...)).i;
  }
};

struct HingeDim : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "HingeDim");
    return (::dynet::hinge_dim(x[0], std::forward<S>(s)...)).i;
  }
};

}  // namespace dynet
