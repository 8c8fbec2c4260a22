// DyNet's elementwise binary arithmetic nodes (dynet/nodes-arith-cwise.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct CwiseSum : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "CwiseSum");
    return (x[0] + x[1]).i;
  }
};

struct CwiseMultiply : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "CwiseMultiply");
    return (::dynet::cmult(x[0], x[1])).i;
  }
};

struct CwiseQuotient : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "CwiseQuotient");
    return (::dynet::cdiv(x[0], x[1])).i;
  }
};

struct Pow : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "Pow");
    return (::dynet::pow(x[0], x[1])).i;
  }
};

}  // namespace dynet
