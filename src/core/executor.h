// Executors run a graph's nodes. The graph only records nodes; values, gradients, auxiliary memory
// and the pools behind them live in the executor (one per graph), so evaluation strategies (simple,
// autobatched) plug in without touching graph construction.
//
// Executors outlive their graphs: a destroyed graph's executor, with its pools and per-node vectors,
// is kept (with the graph's node vectors) for the next graph of the same strategy, on any thread. A
// program that builds a graph per example or minibatch therefore reaches a steady state where graphs
// take no memory from the system and touch no fresh pages (see acquire_executor).
#pragma once

#include <memory>
#include <vector>

#include "core/op.h"

namespace dynet {

class Executor {
 public:
  Executor() = default;
  virtual ~Executor() = default;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  // Moves a recycled executor to graph cg: as after invalidate(), with every buffer's capacity kept.
  virtual void rebind(const ComputationGraph& cg) = 0;

  // Computes node `last` and whatever it needs that is not computed yet.
  virtual void forward(VariableIndex last) = 0;
  // dE/dnode for the nodes leading to `last`; parameter gradients are accumulated into their storage.
  // full: also nodes that depend on no parameter.
  virtual void backward(VariableIndex last, bool full) = 0;

  virtual bool computed(VariableIndex i) const = 0;
  // Node i's value, or null while it is not computed: a read's one call.
  virtual const Tensor* computed_value(VariableIndex i) = 0;
  // The gradient of node i from the last backward(): zeros for a node that does not lead to the loss
  // (DyNet's behaviour). Throws when no backward covered node i.
  virtual const Tensor& gradient(VariableIndex i) = 0;
  virtual bool has_gradient(VariableIndex i) const = 0;
  // Number of leading nodes whose values are computed.
  virtual size_t num_evaluated() const = 0;

  // Forgets every value and gradient (the next forward recomputes; memory is reused).
  virtual void invalidate() = 0;
  // Forgets values computed after the matching checkpoint (nodes >= `nodes` are gone from the graph).
  virtual void checkpoint() = 0;
  virtual void revert(size_t nodes) = 0;
};

// The executor for a strategy: 0 simple, 1 agenda-based autobatching, 2 depth-based autobatching.
// Defined by the execution layer (src/exec), which implements the interface (exec/executor_base.h).
std::unique_ptr<Executor> make_executor(const ComputationGraph& cg, int strategy);

// The node vectors of a graph, kept with its executor between graphs.
struct GraphVectors {
  std::vector<NodeRec> nodes;
  std::vector<VariableIndex> args;
  std::vector<uint64_t> attrs;
  std::vector<uint64_t> cse, cse_uses;  // the graph's tables of equal nodes (ComputationGraph::cse_find_or_add)
};
// A recycled executor of `strategy` rebound to cg, with the node vectors that were kept with it moved
// into *vectors (cleared); a new one (make_executor) when none is spare. Thread-safe.
std::unique_ptr<Executor> acquire_executor(const ComputationGraph& cg, int strategy, GraphVectors* vectors);
// Keeps a dying graph's executor and node vectors for acquire_executor; at most a few are kept (twice
// the hardware threads, at least 4) and the rest freed. Never throws.
void release_executor(std::unique_ptr<Executor> exec, int strategy, GraphVectors&& vectors) noexcept;
// Frees every kept executor (cleanup()).
void free_spare_executors();

}  // namespace dynet
