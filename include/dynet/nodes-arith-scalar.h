// DyNet's scalar-by-tensor arithmetic nodes (broadcasting) (dynet/nodes-arith-scalar.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct ScalarAdd : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "ScalarAdd");
    return (x[0] + x[1]).i;
  }
};

struct ScalarMultiply : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "ScalarMultiply");
    return (::dynet::cmult(x[0], x[1])).i;
  }
};

struct ScalarQuotient : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "ScalarQuotient");
    return (::dynet::cdiv(x[0], x[1])).i;
  }
};

}  // namespace dynet
