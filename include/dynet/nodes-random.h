// DyNet's random-value nodes (dynet/nodes-random.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct RandomNormal : detail::BuiltinNode {
  static VariableIndex add_to(ComputationGraph& g, const Dim& d, float mean = 0.f, float stddev = 1.f) {
    return ::dynet::random_normal(g, d, mean, stddev).i;
  }
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& none, const Dim& d, S&&... s) {
    detail::builtin_args(g, none, 0, "RandomNormal");
    return add_to(g, d, std::forward<S>(s)...);
  }
};

struct RandomBernoulli : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& none, const Dim& d, S&&... s) {
    detail::builtin_args(g, none, 0, "RandomBernoulli");
    return ::dynet::random_bernoulli(g, d, std::forward<S>(s)...).i;
  }
};

struct RandomUniform : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& none, const Dim& d, S&&... s) {
    detail::builtin_args(g, none, 0, "RandomUniform");
    return ::dynet::random_uniform(g, d, std::forward<S>(s)...).i;
  }
};

struct RandomGumbel : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& none, const Dim& d, S&&... s) {
    detail::builtin_args(g, none, 0, "RandomGumbel");
    return ::dynet::random_gumbel(g, d, std::forward<S>(s)...).i;
  }
};

}  // namespace dynet
