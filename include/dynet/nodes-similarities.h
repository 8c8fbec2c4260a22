// DyNet's distance and similarity nodes (dynet/nodes-similarities.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(DotProduct, 2, dot_product)
DYNET_BUILTIN_NODE(SquaredEuclideanDistance, 2, squared_distance)
DYNET_BUILTIN_NODE(L1Distance, 2, l1_distance)
DYNET_BUILTIN_NODE(HuberDistance, 2, huber_distance)
DYNET_BUILTIN_NODE(CircularConvolution, 2, circ_conv)
DYNET_BUILTIN_NODE(CircularCorrelation, 2, circ_corr)

}  // namespace dynet
