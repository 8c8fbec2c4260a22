// DyNet's distance and similarity nodes (dynet/nodes-similarities.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct DotProduct : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "DotProduct");
    return (::dynet::dot_product(x[0], x[1])).i;
  }
};

struct SquaredEuclideanDistance : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "SquaredEuclideanDistance");
    return (::dynet::squared_distance(x[0], x[1])).i;
  }
};

struct L1Distance : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "L1Distance");
    return (::dynet::l1_distance(x[0], x[1])).i;
  }
};

struct HuberDistance : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "HuberDistance");
    return (::dynet::huber_distance(x[0], x[1], std::forward<S>(s)...)).i;
  }
};

struct CircularConvolution : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "CircularConvolution");
    return (::dynet::circ_conv(x[0], x[1])).i;
  }
};

struct CircularCorrelation : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "CircularCorrelation");
    return (::dynet::circ_corr(x[0], x[1])).i;
  }
};

}  // namespace dynet
