// DyNet's linear-algebra nodes (dynet/nodes-linalg.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(MatrixInverse, 1, inverse)
DYNET_BUILTIN_NODE(LogDet, 1, logdet)
DYNET_BUILTIN_NODE(TraceOfProduct, 2, trace_of_product)
DYNET_BUILTIN_NODE(Transpose, 1, transpose)

}  // namespace dynet
