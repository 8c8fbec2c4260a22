// DyNet's selection nodes (dynet/nodes-select.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(SelectRows, 1, select_rows)
DYNET_BUILTIN_NODE(SelectCols, 1, select_cols)
DYNET_BUILTIN_NODE(PickElement, 1, pick)
DYNET_BUILTIN_NODE(PickRange, 1, pick_range)

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
