// DyNet's the argmax node (dynet/nodes-argmax.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Argmax : detail::BuiltinNode {
  // DyNet: Argmax({x}, dim, straight_through); only dim 0 existed.
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, unsigned dim, bool straight_through) {
    const Expression x = detail::builtin_args(g, a, 1, "Argmax")[0];
    if (dim != 0) throw std::invalid_argument("Argmax: only dim 0 is supported (as in DyNet), got " + std::to_string(dim));
    return ::dynet::argmax(x, straight_through ? straight_through_gradient : zero_gradient).i;
  }
};

}  // namespace dynet
