// DyNet's the matrix product node (dynet/nodes-matrixmultiply.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(MatrixMultiply, 2, operator*)

}  // namespace dynet
