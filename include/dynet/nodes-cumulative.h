// DyNet's the cumulative sum node (dynet/nodes-cumulative.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(CumulativeSum, 1, cumsum)

}  // namespace dynet
