// DyNet's loss nodes (dynet/nodes-losses.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(PairwiseRankLoss, 2, pairwise_rank_loss)
DYNET_BUILTIN_NODE(BinaryLogLoss, 2, binary_log_loss)
DYNET_BUILTIN_NODE(PoissonRegressionLoss, 1, poisson_loss)

}  // namespace dynet
