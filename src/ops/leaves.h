// Leaf nodes the graph itself creates (ComputationGraph::add_input/add_parameters/add_lookup, ...).
#pragma once

#include "core/op.h"

namespace dynet {

// A whole lookup table as one {d..., n} node (expr.h's parameter(g, lp) / const_parameter(g, lp)).
VariableIndex add_lookup_table_node(ComputationGraph& g, LookupParameter lp, bool is_const);

}  // namespace dynet
