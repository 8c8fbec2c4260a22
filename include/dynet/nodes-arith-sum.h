// DyNet's sums and averages (dynet/nodes-arith-sum.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Sum : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "Sum");
    return (::dynet::sum(x)).i;
  }
};

struct SumElements : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "SumElements");
    return (::dynet::sum_elems(x[0])).i;
  }
};

struct SumBatches : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "SumBatches");
    return (::dynet::sum_batches(x[0])).i;
  }
};

struct Average : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, -1, "Average");
    return (::dynet::average(x)).i;
  }
};

struct AddVectorToAllColumns : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "AddVectorToAllColumns");
    return (::dynet::colwise_add(x[0], x[1])).i;
  }
};

}  // namespace dynet
