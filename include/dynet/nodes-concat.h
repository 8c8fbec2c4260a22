// DyNet's concatenation nodes (dynet/nodes-concat.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(Concatenate, -1, concatenate)
DYNET_BUILTIN_NODE(ConcatenateColumns, -1, concatenate_cols)
DYNET_BUILTIN_NODE(ConcatenateToBatch, -1, concatenate_to_batch)

}  // namespace dynet
