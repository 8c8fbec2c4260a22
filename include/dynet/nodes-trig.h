// DyNet's trigonometric and hyperbolic nodes (dynet/nodes-trig.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct Tanh : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Tanh");
    return (::dynet::tanh(x[0])).i;
  }
};

struct Sin : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Sin");
    return (::dynet::sin(x[0])).i;
  }
};

struct Cos : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Cos");
    return (::dynet::cos(x[0])).i;
  }
};

struct Tan : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Tan");
    return (::dynet::tan(x[0])).i;
  }
};

struct Asin : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Asin");
    return (::dynet::asin(x[0])).i;
  }
};

struct Acos : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Acos");
    return (::dynet::acos(x[0])).i;
  }
};

struct Atan : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Atan");
    return (::dynet::atan(x[0])).i;
  }
};

struct Sinh : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Sinh");
    return (::dynet::sinh(x[0])).i;
  }
};

struct Cosh : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Cosh");
    return (::dynet::cosh(x[0])).i;
  }
};

struct Asinh : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Asinh");
    return (::dynet::asinh(x[0])).i;
  }
};

struct Acosh : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Acosh");
    return (::dynet::acosh(x[0])).i;
  }
};

struct Atanh : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "Atanh");
    return (::dynet::atanh(x[0])).i;
  }
};

}  // namespace dynet
