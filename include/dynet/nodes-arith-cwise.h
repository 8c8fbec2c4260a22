// DyNet's elementwise binary arithmetic nodes (dynet/nodes-arith-cwise.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(CwiseSum, 2, operator+)
DYNET_BUILTIN_NODE(CwiseMultiply, 2, cmult)
DYNET_BUILTIN_NODE(CwiseQuotient, 2, cdiv)
DYNET_BUILTIN_NODE(Pow, 2, pow)

}  // namespace dynet
