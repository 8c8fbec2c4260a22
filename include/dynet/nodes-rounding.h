// DyNet's rounding nodes (DyNet passes straight_through as a bool) (dynet/nodes-rounding.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Round : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, bool straight_through = false) {
    const Expression x = detail::builtin_args(g, a, 1, "Round")[0];
    return ::dynet::round(x, straight_through ? straight_through_gradient : zero_gradient).i;
  }
};

struct Ceil : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, bool straight_through = false) {
    const Expression x = detail::builtin_args(g, a, 1, "Ceil")[0];
    return ::dynet::ceil(x, straight_through ? straight_through_gradient : zero_gradient).i;
  }
};

struct Floor : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, bool straight_through = false) {
    const Expression x = detail::builtin_args(g, a, 1, "Floor")[0];
    return ::dynet::floor(x, straight_through ? straight_through_gradient : zero_gradient).i;
  }
};

}  // namespace dynet
