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

DYNET_BUILTIN_NODE(NoBackprop, 1, nobackprop)
DYNET_BUILTIN_NODE(FlipGradient, 1, flip_gradient)
DYNET_BUILTIN_NODE(ScaleGradient, 1, scale_gradient)

}  // namespace dynet
