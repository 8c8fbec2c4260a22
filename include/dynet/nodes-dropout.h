// DyNet's dropout and noise nodes (dynet/nodes-dropout.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(Dropout, 1, dropout)
DYNET_BUILTIN_NODE(DropoutDim, 1, dropout_dim)
DYNET_BUILTIN_NODE(DropoutBatch, 1, dropout_batch)
DYNET_BUILTIN_NODE(BlockDropout, 1, block_dropout)
DYNET_BUILTIN_NODE(GaussianNoise, 1, noise)

}  // namespace dynet
