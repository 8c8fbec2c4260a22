// DyNet's scalar-by-tensor arithmetic nodes (broadcasting) (dynet/nodes-arith-scalar.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(ScalarAdd, 2, operator+)
DYNET_BUILTIN_NODE(ScalarMultiply, 2, cmult)
DYNET_BUILTIN_NODE(ScalarQuotient, 2, cdiv)

}  // namespace dynet
