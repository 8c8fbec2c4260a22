// DyNet's elementwise unary arithmetic nodes (dynet/nodes-arith-unary.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(Negate, 1, operator-)
DYNET_BUILTIN_NODE(Sqrt, 1, sqrt)
DYNET_BUILTIN_NODE(Abs, 1, abs)
DYNET_BUILTIN_NODE(Exp, 1, exp)
DYNET_BUILTIN_NODE(Square, 1, square)
DYNET_BUILTIN_NODE(Cube, 1, cube)
DYNET_BUILTIN_NODE(Log, 1, log)
DYNET_BUILTIN_NODE(LogGamma, 1, lgamma)
DYNET_BUILTIN_NODE(LogSigmoid, 1, log_sigmoid)

}  // namespace dynet
