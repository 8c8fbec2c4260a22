// DyNet's one-dimensional convolution and pooling nodes (dynet/nodes-conv.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(AverageColumns, 1, average_cols)
DYNET_BUILTIN_NODE(SumColumns, 1, sum_cols)
DYNET_BUILTIN_NODE(Filter1DNarrow, 2, filter1d_narrow)
DYNET_BUILTIN_NODE(FoldRows, 1, fold_rows)
DYNET_BUILTIN_NODE(KMaxPooling, 1, kmax_pooling)
DYNET_BUILTIN_NODE(KMHNGram, 1, kmh_ngram)
DYNET_BUILTIN_NODE(Conv1DNarrow, 2, conv1d_narrow)
DYNET_BUILTIN_NODE(Conv1DWide, 2, conv1d_wide)

struct MaxPooling1D : detail::BuiltinNode {
  template <class... S>
  static VariableIndex add_to(ComputationGraph&, S&&...) {
    throw std::runtime_error("MaxPooling1D: DyNet's node type has no counterpart here (DyNet 2.x has no expression for it; use kmax_pooling or maxpooling2d)");
  }
};

}  // namespace dynet
