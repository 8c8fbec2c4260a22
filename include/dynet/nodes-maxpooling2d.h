// DyNet's the 2-d max pooling node (dynet/nodes-maxpooling2d.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(MaxPooling2D, 1, maxpooling2d)

}  // namespace dynet
