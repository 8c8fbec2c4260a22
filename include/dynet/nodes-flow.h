// DyNet's reshaping and gradient-flow nodes (dynet/nodes-flow.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Reshape : detail::BuiltinNode {
  // DyNet 2.1's third argument (in-place) does not change the result.
  template <class A, class... In>
  static VariableIndex add_to(ComputationGraph& g, const A& a, const Dim& to, In...) {
    return ::dynet::reshape(detail::builtin_args(g, a, 1, "Reshape")[0], to).i;
  }
};

struct Identity : detail::BuiltinNode {
  // y = x: the argument's own node.
  template <class A, class... In>
  static VariableIndex add_to(ComputationGraph& g, const A& a, In...) {
    return detail::builtin_args(g, a, 1, "Identity")[0].i;
  }
};

struct NoBackprop : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "NoBackprop");
    return (::dynet::nobackprop(x[0])).i;
  }
};

struct FlipGradient : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "FlipGradient");
    return (::dynet::flip_gradient(x[0])).i;
  }
};

struct ScaleGradient : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "ScaleGradient");
    return (::dynet::scale_gradient(x[0], std::forward<S>(s)...)).i;
  }
};

}  // namespace dynet
