// DyNet's moment and standard-deviation nodes (dynet/nodes-moments.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(MomentDimension, 1, moment_dim)
DYNET_BUILTIN_NODE(StdDimension, 1, std_dim)
DYNET_BUILTIN_NODE(MomentElements, 1, moment_elems)
DYNET_BUILTIN_NODE(StdElements, 1, std_elems)
DYNET_BUILTIN_NODE(MomentBatches, 1, moment_batches)
DYNET_BUILTIN_NODE(StdBatches, 1, std_batches)

}  // namespace dynet
