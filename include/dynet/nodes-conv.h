// DyNet's one-dimensional convolution and pooling nodes (dynet/nodes-conv.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct AverageColumns : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "AverageColumns");
    return (::dynet::average_cols(x[0])).i;
  }
};

struct SumColumns : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "SumColumns");
    return (::dynet::sum_cols(x[0])).i;
  }
};

struct Filter1DNarrow : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "Filter1DNarrow");
    return (::dynet::filter1d_narrow(x[0], x[1])).i;
  }
};

struct FoldRows : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "FoldRows");
    return (::dynet::fold_rows(x[0], std::forward<S>(s)...)).i;
  }
};

struct KMaxPooling : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "KMaxPooling");
    return (::dynet::kmax_pooling(x[0], std::forward<S>(s)...)).i;
  }
};

struct KMHNGram : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "KMHNGram");
    return (::dynet::kmh_ngram(x[0], std::forward<S>(s)...)).i;
  }
};

struct Conv1DNarrow : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "Conv1DNarrow");
    return (::dynet::conv1d_narrow(x[0], x[1])).i;
  }
};

struct Conv1DWide : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 2, "Conv1DWide");
    return (::dynet::conv1d_wide(x[0], x[1])).i;
  }
};

struct MaxPooling1D : detail::BuiltinNode {
  template <class... S>
  static VariableIndex add_to(ComputationGraph&, S&&...) {
    throw std::runtime_error("MaxPooling1D: DyNet's node type has no counterpart here (DyNet 2.x has no expression for it; use kmax_pooling or maxpooling2d)");
  }
};

}  // namespace dynet
