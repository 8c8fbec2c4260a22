// DyNet's the negative log-softmax pick node (dynet/nodes-pickneglogsoftmax.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(PickNegLogSoftmax, 1, pickneglogsoftmax)

}  // namespace dynet
