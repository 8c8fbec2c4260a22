// DyNet's norm nodes (dynet/nodes-norms.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(SquaredNorm, 1, squared_norm)
DYNET_BUILTIN_NODE(L2Norm, 1, l2_norm)

}  // namespace dynet
