// DyNet's concatenation nodes (dynet/nodes-concat.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Concatenate : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "Concatenate");
    return (::dynet::concatenate(x, std::forward<S>(s)...)).i;
  }
};

struct ConcatenateColumns : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "ConcatenateColumns");
    return (::dynet::concatenate_cols(x)).i;
  }
};

struct ConcatenateToBatch : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "ConcatenateToBatch");
    return (::dynet::concatenate_to_batch(x)).i;
  }
};

}  // namespace dynet
