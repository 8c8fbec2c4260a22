// DyNet's rectifier, sigmoid, softsign, erf, ELU and SiLU nodes (dynet/nodes-activations.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Rectify : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Rectify");
    return (::dynet::rectify(x[0])).i;
  }
};

struct LogisticSigmoid : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "LogisticSigmoid");
    return (::dynet::logistic(x[0])).i;
  }
};

struct SoftSign : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "SoftSign");
    return (::dynet::softsign(x[0])).i;
  }
};

struct Erf : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Erf");
    return (::dynet::erf(x[0])).i;
  }
};

struct ExponentialLinearUnit : detail::BuiltinNode {
  // lambda · elu(x, alpha): elu with lambda = 1, selu with DyNet's constants
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, float lambda = 1.f, float alpha = 1.f) {
    const Expression x = detail::builtin_args(g, a, 1, "ExponentialLinearUnit")[0];
    return (lambda == 1.f ? ::dynet::elu(x, alpha) : ::dynet::elu(x, alpha) * lambda).i;
  }
};

struct SigmoidLinearUnit : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "SigmoidLinearUnit");
    return (::dynet::silu(x[0], std::forward<S>(s)...)).i;
  }
};

}  // namespace dynet
