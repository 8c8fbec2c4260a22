// DyNet's execution engines (dynet/exec.h) as a thin face over the graph's executor. A graph owns
// its executor (src/core/executor.h, chosen by --dynet-autobatch); constructing a
// SimpleExecutionEngine or BatchedExecutionEngine on a graph switches that graph to the simple or
// the autobatching executor (ComputationGraph::set_execution_strategy), and the engine's methods
// are the graph's.
#pragma once

#include <stdexcept>
#include <vector>

#include "dynet/dynet.h"

namespace dynet {

// How the autobatching executor groups nodes (DyNet's --dynet-autobatch values).
enum class ExecutionStrategy { Simple = 0, Agenda = 1, Depth = 2 };

class ExecutionEngine {
 public:
  virtual ~ExecutionEngine() = default;
  // Forgets computed values (the graph's invalidate; DyNet's invalidate(i) forgot those past i).
  void invalidate() { cg.invalidate(); }
  void invalidate(unsigned) { cg.invalidate(); }
  // The last node, or node i, computed from scratch.
  const Tensor& forward();
  const Tensor& forward(VariableIndex i) { return cg.forward(i); }
  std::vector<const Tensor*> forward(const std::vector<VariableIndex>& node_list);
  // Computes only what is not computed yet.
  const Tensor& incremental_forward();
  const Tensor& incremental_forward(VariableIndex i) { return cg.incremental_forward(i); }
  const Tensor& get_value(VariableIndex i) { return cg.get_value(i); }
  const Tensor& get_gradient(VariableIndex i) { return cg.get_gradient(i); }
  // From the last node, or from node i (a scalar per batch element).
  void backward(bool full = false);
  void backward(VariableIndex i, bool full = false) { cg.backward(i, full); }

  ComputationGraph& cg;

 protected:
  ExecutionEngine(ComputationGraph& cg, int strategy) : cg(cg) { cg.set_execution_strategy(strategy); }

 private:
  VariableIndex last() const;
};

class SimpleExecutionEngine : public ExecutionEngine {
 public:
  explicit SimpleExecutionEngine(ComputationGraph& cg) : ExecutionEngine(cg, 0) {}
};

// Strategy 1 (agenda) by default, as DyNet's --dynet-autobatch 1.
class BatchedExecutionEngine : public ExecutionEngine {
 public:
  explicit BatchedExecutionEngine(ComputationGraph& cg, ExecutionStrategy strategy = ExecutionStrategy::Agenda)
      : ExecutionEngine(cg, strategy == ExecutionStrategy::Simple ? 1 : static_cast<int>(strategy)) {}
};

inline VariableIndex ExecutionEngine::last() const {
  if (cg.size() == 0) throw std::invalid_argument("ExecutionEngine: the graph has no nodes");
  return static_cast<VariableIndex>(cg.size() - 1);
}
inline const Tensor& ExecutionEngine::forward() { return cg.forward(last()); }
inline const Tensor& ExecutionEngine::incremental_forward() { return cg.incremental_forward(last()); }
inline void ExecutionEngine::backward(bool full) { cg.backward(last(), full); }
inline std::vector<const Tensor*> ExecutionEngine::forward(const std::vector<VariableIndex>& node_list) {
  cg.invalidate();
  std::vector<const Tensor*> values;
  values.reserve(node_list.size());
  for (VariableIndex i : node_list) values.push_back(&cg.incremental_forward(i));
  return values;
}

}  // namespace dynet
