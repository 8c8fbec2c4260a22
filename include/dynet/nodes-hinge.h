// DyNet's hinge-loss nodes (dynet/nodes-hinge.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(Hinge, 1, hinge)
DYNET_BUILTIN_NODE(HingeDim, 1, hinge_dim)

}  // namespace dynet
