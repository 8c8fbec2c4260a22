// DyNet's loss nodes (dynet/nodes-losses.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct PairwiseRankLoss : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "PairwiseRankLoss");
    return (::dynet::pairwise_rank_loss(x[0], x[1], std::forward<S>(s)...)).i;
  }
};

struct BinaryLogLoss : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "BinaryLogLoss");
    return (::dynet::binary_log_loss(x[0], x[1])).i;
  }
};

struct PoissonRegressionLoss : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "PoissonRegressionLoss");
    return (::dynet::poisson_loss(x[0], std::forward<S>(s)...)).i;
  }
};

}  // namespace dynet
