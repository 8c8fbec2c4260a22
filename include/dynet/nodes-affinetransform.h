// DyNet's the affine transform node (dynet/nodes-affinetransform.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(AffineTransform, -1, affine_transform)

}  // namespace dynet
