// DyNet's elementwise unary arithmetic nodes (dynet/nodes-arith-unary.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Negate : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Negate");
    return (-x[0]).i;
  }
};

struct Sqrt : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Sqrt");
    return (::dynet::sqrt(x[0])).i;
  }
};

struct Abs : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Abs");
    return (::dynet::abs(x[0])).i;
  }
};

struct Exp : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Exp");
    return (::dynet::exp(x[0])).i;
  }
};

struct Square : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Square");
    return (::dynet::square(x[0])).i;
  }
};

struct Cube : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Cube");
    return (::dynet::cube(x[0])).i;
  }
};

struct Log : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Log");
    return (::dynet::log(x[0])).i;
  }
};

struct LogGamma : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "LogGamma");
    return (::dynet::lgamma(x[0])).i;
  }
};

struct LogSigmoid : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "LogSigmoid");
    return (::dynet::log_sigmoid(x[0])).i;
  }
};

}  // namespace dynet
