// DyNet's the negative log-softmax pick node (dynet/nodes-pickneglogsoftmax.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct PickNegLogSoftmax : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "PickNegLogSoftmax");
    return (::dynet::pickneglogsoftmax(x[0], std::forward<S>(s)...)).i;
  }
};

}  // namespace dynet
