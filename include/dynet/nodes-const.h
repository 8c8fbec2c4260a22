// DyNet's constant nodes (dynet/nodes-const.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Constant : detail::BuiltinNode {
  static VariableIndex add_to(ComputationGraph& g, const Dim& d, float value = 0.f) {
    return ::dynet::constant(g, d, value).i;
  }
};

struct Zeroes : detail::BuiltinNode {
  static VariableIndex add_to(ComputationGraph& g, const Dim& d) { return ::dynet::zeros(g, d).i; }
};

}  // namespace dynet
