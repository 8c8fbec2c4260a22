// DyNet's log-sum-exp nodes (dynet/nodes-logsumexp.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(LogSumExp, -1, logsumexp)
DYNET_BUILTIN_NODE(LogSumExpDimension, 1, logsumexp_dim)

}  // namespace dynet
