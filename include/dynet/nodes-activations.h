// DyNet's rectifier, sigmoid, softsign, erf, ELU and SiLU nodes (dynet/nodes-activations.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(Rectify, 1, rectify)
DYNET_BUILTIN_NODE(LogisticSigmoid, 1, logistic)
DYNET_BUILTIN_NODE(SoftSign, 1, softsign)
DYNET_BUILTIN_NODE(Erf, 1, erf)

struct ExponentialLinearUnit : detail::BuiltinNode {
  // lambda · elu(x, alpha): elu with lambda = 1, selu with DyNet's constants
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, float lambda = 1.f, float alpha = 1.f) {
    const Expression x = detail::builtin_args(g, a, 1, "ExponentialLinearUnit")[0];
    return (lambda == 1.f ? ::dynet::elu(x, alpha) : ::dynet::elu(x, alpha) * lambda).i;
  }
};

DYNET_BUILTIN_NODE(SigmoidLinearUnit, 1, silu)

}  // namespace dynet
