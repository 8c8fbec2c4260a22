// DyNet's the weight normalisation node (dynet/nodes-normalization.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(WeightNormalization, 2, weight_norm)

}  // namespace dynet
