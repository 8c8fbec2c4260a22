// DyNet's constant-scalar arithmetic nodes (dynet/nodes-arith-const.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct ConstantPlusX : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, real c) {
    return (c + detail::builtin_args(g, a, 1, "ConstantPlusX")[0]).i;
  }
};

struct ConstantMinusX : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, real c) {
    return (c - detail::builtin_args(g, a, 1, "ConstantMinusX")[0]).i;
  }
};

struct ConstScalarMultiply : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, float alpha) {
    return (detail::builtin_args(g, a, 1, "ConstScalarMultiply")[0] * alpha).i;
  }
};

}  // namespace dynet
