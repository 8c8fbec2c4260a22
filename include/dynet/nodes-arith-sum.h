// DyNet's sums and averages (dynet/nodes-arith-sum.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(Sum, -1, sum)
DYNET_BUILTIN_NODE(SumElements, 1, sum_elems)
DYNET_BUILTIN_NODE(SumBatches, 1, sum_batches)
DYNET_BUILTIN_NODE(Average, -1, average)
DYNET_BUILTIN_NODE(AddVectorToAllColumns, 2, colwise_add)

}  // namespace dynet
