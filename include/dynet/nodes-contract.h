// DyNet's tensor contraction nodes (dynet/nodes-contract.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct InnerProduct3D_1D : detail::BuiltinNode {
  // {x, y} or {x, y, b}
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "InnerProduct3D_1D");
    if (x.size() == 2) return ::dynet::contract3d_1d(x[0], x[1]).i;
    if (x.size() == 3) return ::dynet::contract3d_1d(x[0], x[1], x[2]).i;
    throw std::invalid_argument("InnerProduct3D_1D: takes 2 or 3 arguments, got " + std::to_string(x.size()));
  }
};

struct InnerProduct3D_1D_1D : detail::BuiltinNode {
  // {x, y, z} or {x, y, z, b}
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "InnerProduct3D_1D_1D");
    if (x.size() == 3) return ::dynet::contract3d_1d_1d(x[0], x[1], x[2]).i;
    if (x.size() == 4) return ::dynet::contract3d_1d_1d(x[0], x[1], x[2], x[3]).i;
    throw std::invalid_argument("InnerProduct3D_1D_1D: takes 3 or 4 arguments, got " + std::to_string(x.size()));
  }
};

}  // namespace dynet
