// DyNet's linear-algebra nodes (dynet/nodes-linalg.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct MatrixInverse : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "MatrixInverse");
    return (::dynet::inverse(x[0])).i;
  }
};

struct LogDet : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "LogDet");
    return (::dynet::logdet(x[0])).i;
  }
};

struct TraceOfProduct : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "TraceOfProduct");
    return (::dynet::trace_of_product(x[0], x[1])).i;
  }
};

struct Transpose : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Transpose");
    return (::dynet::transpose(x[0], std::forward<S>(s)...)).i;
  }
};

}  // namespace dynet
