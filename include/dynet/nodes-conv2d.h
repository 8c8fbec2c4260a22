// DyNet's the 2-d convolution node (dynet/nodes-conv2d.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Conv2D : detail::BuiltinNode {
  // {x, f} or {x, f, b}, then stride and is_valid
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, const std::vector<unsigned>& stride, bool is_valid = true) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "Conv2D");
    if (x.size() == 2) return ::dynet::conv2d(x[0], x[1], stride, is_valid).i;
    if (x.size() == 3) return ::dynet::conv2d(x[0], x[1], x[2], stride, is_valid).i;
    throw std::invalid_argument("Conv2D: takes 2 or 3 arguments, got " + std::to_string(x.size()));
  }
};

}  // namespace dynet
