// DyNet's graph optimisation hook (dynet/graph.h).
#pragma once

namespace dynet {

class ComputationGraph;
// Does nothing: our graphs need no optimisation pass before they run (DyNet's did nothing either).
void graph_optimize(ComputationGraph* cg);

}  // namespace dynet
