// DyNet's moment and standard-deviation nodes (dynet/nodes-moments.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct MomentDimension : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "MomentDimension");
    return (::dynet::moment_dim(x[0], std::forward<S>(s)...)).i;
  }
};

struct StdDimension : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "StdDimension");
    return (::dynet::std_dim(x[0], std::forward<S>(s)...)).i;
  }
};

struct MomentElements : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "MomentElements");
    return (::dynet::moment_elems(x[0], std::forward<S>(s)...)).i;
  }
};

struct StdElements : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "StdElements");
    return (::dynet::std_elems(x[0])).i;
  }
};

struct MomentBatches : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "MomentBatches");
    return (::dynet::moment_batches(x[0], std::forward<S>(s)...)).i;
  }
};

struct StdBatches : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "StdBatches");
    return (::dynet::std_batches(x[0])).i;
  }
};

}  // namespace dynet
