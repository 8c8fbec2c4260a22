// DyNet's the weight normalisation node (dynet/nodes-normalization.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct WeightNormalization : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "WeightNormalization");
    return (::dynet::weight_norm(x[0], x[1])).i;
  }
};

}  // namespace dynet
