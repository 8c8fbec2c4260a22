// The executors' common base: the per-node state and pools behind the core's Executor interface.
#pragma once

#include <memory>
#include <vector>

#include "core/executor.h"
#include "core/mem.h"
#include "core/op.h"

namespace dynet {

// Where every value without elements points: no kernel reads or writes it, but a null pointer would make
// even a copy of nothing undefined.
float* no_elements();

// What both executors share: per-node values, gradients and aux memory in pools (per device), and the
// steps every strategy runs a node's forward and backward with.
class ExecutorBase : public Executor {
 public:
  explicit ExecutorBase(const ComputationGraph& cg);
  ~ExecutorBase() override;
  void rebind(const ComputationGraph& cg) override;

  bool computed(VariableIndex i) const final { return i < computed_.size() && computed_[i]; }
  const Tensor* computed_value(VariableIndex i) final { return computed(i) ? &value(i) : nullptr; }
  // Of a computed node.
  const Tensor& value(VariableIndex i) { return computed_[i] == kUnwrittenRecord ? write_record(i, false) : fx_[i]; }
  const Tensor& gradient(VariableIndex i) override;
  bool has_gradient(VariableIndex i) const final { return has_backward_ && i < backward_upto_ && grad_state_[i]; }
  size_t num_evaluated() const final { return prefix_; }
  // Executors with state of their own reset it here too (clear() and rebind() both come through here).
  void invalidate() override;
  void checkpoint() override;
  void revert(size_t nodes) override;

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

}  // namespace dynet
