// DyNet's softmax nodes (dynet/nodes-softmaxes.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(Softmax, 1, softmax)
DYNET_BUILTIN_NODE(LogSoftmax, 1, log_softmax)
DYNET_BUILTIN_NODE(RestrictedLogSoftmax, 1, log_softmax)
DYNET_BUILTIN_NODE(Sparsemax, 1, sparsemax)
DYNET_BUILTIN_NODE(SparsemaxLoss, 1, sparsemax_loss)
DYNET_BUILTIN_NODE(ConstrainedSoftmax, 2, constrained_softmax)

}  // namespace dynet
