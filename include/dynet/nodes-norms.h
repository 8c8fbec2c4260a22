// DyNet's norm nodes (dynet/nodes-norms.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct SquaredNorm : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "SquaredNorm");
    return (::dynet::squared_norm(x[0])).i;
  }
};

struct L2Norm : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "L2Norm");
    return (::dynet::l2_norm(x[0])).i;
  }
};

}  // namespace dynet
