// DyNet's trigonometric and hyperbolic nodes (dynet/nodes-trig.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(Tanh, 1, tanh)
DYNET_BUILTIN_NODE(Sin, 1, sin)
DYNET_BUILTIN_NODE(Cos, 1, cos)
DYNET_BUILTIN_NODE(Tan, 1, tan)
DYNET_BUILTIN_NODE(Asin, 1, asin)
DYNET_BUILTIN_NODE(Acos, 1, acos)
DYNET_BUILTIN_NODE(Atan, 1, atan)
DYNET_BUILTIN_NODE(Sinh, 1, sinh)
DYNET_BUILTIN_NODE(Cosh, 1, cosh)
DYNET_BUILTIN_NODE(Asinh, 1, asinh)
DYNET_BUILTIN_NODE(Acosh, 1, acosh)
DYNET_BUILTIN_NODE(Atanh, 1, atanh)

}  // namespace dynet
