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

#include "core/mem.h"
#include "core/op.h"

namespace dynet {

// Where every value without elements points: no kernel reads or writes it, but a null pointer would make
// even a copy of nothing undefined.
float* no_elements();

class Executor {
 public:
  explicit Executor(const ComputationGraph& cg);
  virtual ~Executor();
  // Moves a recycled executor to graph cg: as after invalidate(), with every buffer's capacity kept.
  void rebind(const ComputationGraph& cg);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Computes node `last` and whatever it needs that is not computed yet.
  virtual void forward(VariableIndex last) = 0;
  // dE/dnode for the nodes leading to `last`; parameter gradients are accumulated into their storage.
  // full: also nodes that depend on no parameter.
  virtual void backward(VariableIndex last, bool full) = 0;

  bool computed(VariableIndex i) const { return i < computed_.size() && computed_[i]; }
  const Tensor& value(VariableIndex i) { return computed_[i] == kUnwrittenRecord ? write_record(i, false) : fx_[i]; }
  // The gradient of node i from the last backward(): zeros for a node that does not lead to the loss
  // (DyNet's behaviour). Throws when no backward covered node i.
  virtual const Tensor& gradient(VariableIndex i);
  bool has_gradient(VariableIndex i) const { return has_backward_ && i < backward_upto_ && grad_state_[i]; }
  // Number of leading nodes whose values are computed.
  size_t num_evaluated() const { return prefix_; }

  // Forgets every value and gradient (the next forward recomputes; memory is reused). Executors with
  // state of their own reset it here too (clear() and rebind() both come through here).
  virtual void invalidate();
  // Forgets values computed after the matching checkpoint (nodes >= `nodes` are gone from the graph).
  virtual void checkpoint();
  virtual void revert(size_t nodes);

 protected:
  // Allocates node i's output (unless the op aliases, or `out` gives its place) and aux memory, runs its
  // forward and checks validity if asked to. Arguments must be computed.
  void forward_node(VariableIndex i, float* out = nullptr);
  // computed_[i] (grad_state_[i]) of a node whose value (gradient) lies at value_ptr_[i] (grad_ptr_[i]) and
  // whose record in fx_ (grad_) is written when first read: a batch's members' records lie far apart.
  static constexpr uint8_t kUnwrittenRecord = 2;
  void mark_computed(VariableIndex i, uint8_t state = 1);
  Tensor& write_record(VariableIndex i, bool gradient);
  Tensor& gradient_record(VariableIndex i) { return grad_state_[i] == kUnwrittenRecord ? write_record(i, true) : grad_[i]; }
  // The argument values of a node, in arg_scratch_.
  const Tensor* gather_arg_values(VariableIndex i);
  // Gradient bookkeeping shared by executors: which nodes need a gradient and lead to `last`
  // (reached_), their gradients as one block (on the CPU zeroed only if `zeroed`), dE/dlast = 1.
  void prepare_backward(VariableIndex last, bool full, bool zeroed = true);
  // The steps of prepare_backward, for executors that lay gradients out themselves: mark_reached
  // returns the floats the reached nodes need; begin_gradients forgets every gradient record and returns
  // `floats` floats (zeroed unless the executor zeroes them itself); seed_gradient sets dE/dlast = 1
  // once last's gradient is assigned (grad_state_).
  size_t mark_reached(VariableIndex last, bool full);
  float* begin_gradients(size_t floats, bool zeroed = true);
  void seed_gradient(VariableIndex last);
  void grow(size_t n);
  // The pools of a device other than the CPU (made on first use; the CPU's are the members below).
  struct DevicePools {
    explicit DevicePools(Device* d);
    MemPool fx, grad, scratch;
  };
  DevicePools& device_pools(uint8_t device);
  MemPool& fx_pool(uint8_t device) { return device ? device_pools(device).fx : fx_pool_; }
  MemPool& scratch_pool(uint8_t device) { return device ? device_pools(device).scratch : scratch_pool_; }
  // Allocates the reached nodes' gradients on devices other than the CPU, zeroed (prepare_backward).
  void device_gradients();
  // `floats` zeroed gradient floats on device d (not the CPU), its gradient pool started over.
  float* device_gradient_block(uint8_t d, size_t floats);

  const ComputationGraph* cg_;
  std::vector<Tensor> fx_, grad_;
  std::vector<float*> value_ptr_, grad_ptr_;  // fx_[i].v of every computed node; grad_[i].v (see grad_state_)
  std::vector<uint8_t> grad_state_;  // since begin_gradients: 0 no gradient (zeros on request), 1 grad_[i] set
  std::vector<float*> aux_;
  std::vector<uint8_t> computed_;
  std::vector<VariableIndex> order_;   // nodes in the order they were computed (checkpoints truncate it)
  std::vector<std::pair<size_t, MemPool::Mark>> checkpoints_;  // (order_ size, fx pool mark)
  size_t prefix_ = 0;                  // nodes [0, prefix_) are computed
  std::vector<Tensor> arg_scratch_;
  std::vector<uint8_t> needs_, reached_;
  size_t backward_upto_ = 0;  // nodes [0, backward_upto_) were covered by the last backward
  bool has_backward_ = false;
  MemPool fx_pool_, grad_pool_, scratch_pool_;
  std::vector<std::unique_ptr<DevicePools>> device_pools_;  // by Device::index
  std::vector<std::vector<MemPool::Mark>> device_marks_;   // device fx pools' marks, one per checkpoint
  bool device_nodes_ = false;                                // the last backward reached nodes off the CPU
};

// The executor for a strategy: 0 simple, 1 agenda-based autobatching, 2 depth-based autobatching.
// Defined by the execution layer (src/exec).
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
