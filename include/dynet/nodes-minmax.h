// DyNet's minimum and maximum nodes (dynet/nodes-minmax.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(Min, 2, min)
DYNET_BUILTIN_NODE(Max, -1, max)
DYNET_BUILTIN_NODE(MinDimension, 1, min_dim)
DYNET_BUILTIN_NODE(MaxDimension, 1, max_dim)

}  // namespace dynet
