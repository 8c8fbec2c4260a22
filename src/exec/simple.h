// The simple executor: nodes one at a time in creation order (DyNet's SimpleExecutionEngine).
#pragma once

#include <climits>
#include <vector>

#include "exec/executor_base.h"
#include "kernels/cpu/low_rank.h"

namespace dynet {

class SimpleExecutor : public ExecutorBase {
 public:
  using ExecutorBase::ExecutorBase;
  // Computes the nodes `last` needs that are not computed yet, in creation order. Nodes it does not
  // need stay uncomputed, so a node whose forward failed does not block unrelated reads.
  void forward(VariableIndex last) override;
  void backward(VariableIndex last, bool full) override;

 protected:
  // Lists in needed_, in creation order, the uncomputed nodes that `last` needs (itself included). It
  // visits only those nodes, so a read costs what it computes however many uncomputed nodes the graph
  // holds elsewhere (a parser's unread scores).
  void mark_needed(VariableIndex last);
  // Runs node i's backward into every reached argument (parameter nodes push their gradient).
  void backward_node(VariableIndex i);
  // The backward step both executors share: how the kernel call in args adds to argument gradient dx
  // (node x, or kNone for a batch's concatenated gradient). Where nothing was written to it yet in this
  // pass, a host kernel writes it (kOverwritesGradient) or its quarters alone (OpDef::partial_gradient);
  // otherwise it is zeroed, where it was not yet, and added to.
  void prepare_argument_gradient(BackwardArgs& args, const OpDef& def, bool host, VariableIndex x);
  // What prepare_argument_gradient asks of the record of what was written: here per node (grad_zeroed_),
  // in the batched executor per memory chunk. True: the caller's kernel writes that part first.
  virtual bool claim_quarters(VariableIndex x, const Tensor& dx, uint8_t quarters);
  virtual bool claim_whole(VariableIndex x, const Tensor& dx);
  virtual void zero_for_adding(VariableIndex x, const Tensor& dx);
  // Pushes the gradients of the parameter nodes the reverse pass reached (param_nodes_) into the
  // parameters' storage: after the whole pass has succeeded.
  void push_parameter_gradients();
  // Runs the deferred low-rank updates into node i's gradient as one GEMM over the gathered columns.
  void flush_low_rank(VariableIndex i);
  void flush_low_rank_on(Device* dev, int u, float* dW);
  // LowRankSink::max_columns for nodes on this device.
  static long low_rank_columns(uint8_t device) { return device ? LONG_MAX : LowRankSink::kMaxColumns; }

  std::vector<VariableIndex> needed_;
  std::vector<uint32_t> seen_;  // by node: the mark_needed pass that listed it
  uint32_t pass_ = 0;
  std::vector<LowRankUpdate> low_rank_updates_;  // deferred weight-gradient updates (see op.h)
  std::vector<int> low_rank_head_;
  std::vector<VariableIndex> param_nodes_;  // parameter nodes reached by the running backward
  std::vector<float*> every_dx_;  // a kGradientsInOneCall node's arguments' gradients
  // Simple backward: which reached nodes' gradients are zeroed or written yet (1), or partly written
  // (kPartial | the quarters written, OpDef::partial_gradient: completed by zero_for_adding, which
  // every reached node gets before its own backward).
  std::vector<uint8_t> grad_zeroed_;
  static constexpr uint8_t kPartial = 0x80;
};

// Zeroes the quarters of each `rows`-row column of [p, p + n) that are not in `written` (bit q: rows
// [q·rows/4, (q+1)·rows/4)): what OpDef::partial_gradient's writers left to each other.
void zero_other_quarters(float* p, size_t n, size_t rows, uint8_t written);

}  // namespace dynet
