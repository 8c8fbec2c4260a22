// DyNet's selection nodes (dynet/nodes-select.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

struct SelectRows : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "SelectRows");
    return (::dynet::select_rows(x[0], std::forward<S>(s)...)).i;
  }
};

struct SelectCols : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "SelectCols");
    return (::dynet::select_cols(x[0], std::forward<S>(s)...)).i;
  }
};

struct PickElement : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "PickElement");
    return (::dynet::pick(x[0], std::forward<S>(s)...)).i;
  }
};

struct PickRange : detail::BuiltinNode {
  template <class A, class... S>
  static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... s) {
    const std::vector<Expression> x = detail::builtin_args(g, a, 1, "PickRange");
    return (::dynet::pick_range(x[0], std::forward<S>(s)...)).i;
  }
};

struct PickBatchElements : detail::BuiltinNode {
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, unsigned v) {
    return ::dynet::pick_batch_elem(detail::builtin_args(g, a, 1, "PickBatchElements")[0], v).i;
  }
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, const unsigned* pv) {
    return ::dynet::pick_batch_elem(detail::builtin_args(g, a, 1, "PickBatchElements")[0], pv).i;
  }
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, const std::vector<unsigned>& v) {
    return ::dynet::pick_batch_elems(detail::builtin_args(g, a, 1, "PickBatchElements")[0], v).i;
  }
  template <class A>
  static VariableIndex add_to(ComputationGraph& g, const A& a, const std::vector<unsigned>* pv) {
    return ::dynet::pick_batch_elems(detail::builtin_args(g, a, 1, "PickBatchElements")[0], pv).i;
  }
};

struct StridedSelect : detail::BuiltinNode {
  // DyNet's last argument (in-place) does not change the result.
  template <class A, class... In>
  static VariableIndex add_to(ComputationGraph& g, const A& a, const std::vector<int>& strides,
                              const std::vector<int>& from, const std::vector<int>& to, In...) {
    return ::dynet::strided_select(detail::builtin_args(g, a, 1, "StridedSelect")[0], strides, from, to).i;
  }
};

}  // namespace dynet
