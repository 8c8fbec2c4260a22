// The autobatching executor (DyNet's BatchedExecutionEngine, arXiv 1705.07860). Forward schedules the
// nodes the requested one needs; ready nodes with equal signatures (exec/signature.h) run as one
// batched node, whose output block holds the members one after another. Backward replays the groups in
// reverse with the gradients laid out the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/signature.h"
#include "exec/simple.h"

namespace dynet {

class BatchedExecutor : public SimpleExecutor {
 public:
  // strategy 1: agenda (the ready signature whose nodes lie furthest from the requested node first);
  // 2: by depth (all nodes of one depth and signature together).
  BatchedExecutor(const ComputationGraph& cg, int strategy);

  void forward(VariableIndex last) override;
  void backward(VariableIndex last, bool full) override;
  void invalidate() override;
  void revert(size_t nodes) override;

  // Nodes computed together (one node when it ran alone), in computation order.
  struct Group {
    uint32_t first = 0, size = 0;  // members: order_[first, first + size)
    uint32_t xs = 0;               // batched arguments: xs_[xs, xs + nargs) (size > 1)
    uint32_t attr = 0, attr_words = 0;  // merged attribute words in attr_ (merged)
    bool merged = false;
    float* aux = nullptr;          // the batched node's aux memory (size > 1)
    size_t grad = 0;               // backward: offset of the members' gradients (kNoGrad: none reached)
    size_t gathered = 0;           // floats copied to concatenate arguments
  };
  const std::vector<Group>& groups() const { return groups_; }
  const VariableIndex* members(const Group& g) const { return order_.data() + g.first; }

 private:
  static constexpr size_t kNoGrad = ~size_t(0);
  void schedule_agenda();
  void schedule_by_depth();
  // Runs `k` ready nodes of one signature, batched when that pays off (else one by one).
  void run_group(VariableIndex* m, unsigned k);
  void run_alone(VariableIndex i);
  void run_batched(const VariableIndex* m, unsigned k, const uint8_t* contiguous);
  // Marks the successors of node i whose arguments are now all computed as ready.
  void release(VariableIndex i);
  void make_ready(VariableIndex i);
  void backward_group(const Group& g);
  void print_composition(size_t first_group) const;
  // Heap order of queued signatures: the top is the one to run next.
  struct Later {
    const BatchedExecutor* e;
    bool operator()(int32_t a, int32_t b) const {
      if (e->sig_priority_[a] != e->sig_priority_[b]) return e->sig_priority_[a] > e->sig_priority_[b];
      if (e->sig_deferred_[a] != e->sig_deferred_[b]) return e->sig_deferred_[a] > e->sig_deferred_[b];
      return a > b;
    }
  };

  int strategy_;
  SignatureTable sigs_;
  // Per scheduling pass, indexed by node - base_:
  size_t base_ = 0;
  std::vector<VariableIndex> todo_;     // the nodes to compute, in creation order
  std::vector<uint32_t> depth_, height_, pending_, succ_begin_;
  std::vector<int32_t> sig_;
  std::vector<VariableIndex> succ_;     // successors (CSR)
  // Per signature:
  std::vector<uint32_t> sig_count_;
  std::vector<double> sig_priority_;
  std::vector<uint8_t> sig_queued_, sig_deferred_;
  std::vector<std::vector<VariableIndex>> ready_;
  std::vector<int32_t> heap_;           // queued signatures (min-heap on priority)
  std::vector<VariableIndex> alone_, group_;
  std::vector<uint8_t> contiguous_;
  // Executed groups and what their batched nodes keep for backward:
  std::vector<Group> groups_;
  std::vector<Tensor> xs_;
  std::vector<uint64_t> attr_;
  std::vector<AttrView> member_attrs_;
  std::vector<NodeRec> arg_recs_;
  std::vector<VariableIndex> arg_ids_;
  float* grad_block_ = nullptr;  // the gradients of the last backward
};

}  // namespace dynet
