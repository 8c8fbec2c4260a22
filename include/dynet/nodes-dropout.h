// DyNet's dropout and noise nodes (dynet/nodes-dropout.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Dropout : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Dropout");
    return (::dynet::dropout(x[0], std::forward<S>(s)...)).i;
  }
};

struct DropoutDim : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "DropoutDim");
    return (::dynet::dropout_dim(x[0], std::forward<S>(s)...)).i;
  }
};

struct DropoutBatch : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "DropoutBatch");
    return (::dynet::dropout_batch(x[0], std::forward<S>(s)...)).i;
  }
};

struct BlockDropout : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "BlockDropout");
    return (::dynet::block_dropout(x[0], std::forward<S>(s)...)).i;
  }
};

struct GaussianNoise : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "GaussianNoise");
    return (::dynet::noise(x[0], std::forward<S>(s)...)).i;
  }
};

}  // namespace dynet
