// DyNet's the 2-d max pooling node (dynet/nodes-maxpooling2d.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct MaxPooling2D : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "MaxPooling2D");
    return (::dynet::maxpooling2d(x[0], std::forward<S>(s)...)).i;
  }
};

}  // namespace dynet
