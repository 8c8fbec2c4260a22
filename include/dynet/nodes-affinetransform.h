// DyNet's the affine transform node (dynet/nodes-affinetransform.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct AffineTransform : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "AffineTransform");
    return (::dynet::affine_transform(x)).i;
  }
};

}  // namespace dynet
