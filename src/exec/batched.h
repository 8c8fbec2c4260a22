// The autobatching executor (DyNet's BatchedExecutionEngine, arXiv 1705.07860). Forward schedules the
// nodes the requested one needs; ready nodes with equal signatures (exec/signature.h) run as one
// batched node, whose output block holds the members one after another. Backward replays the groups in
// reverse with the gradients laid out the same way.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "exec/fusion.h"
#include "exec/signature.h"
#include "exec/simple.h"

namespace dynet {

class BatchedExecutor : public SimpleExecutor {
 public:
  // strategy 1: agenda (the ready signature whose nodes lie furthest from the requested node first);
  // 2: by depth (all nodes of one depth and signature together).
  BatchedExecutor(const ComputationGraph& cg, int strategy);

  void rebind(const ComputationGraph& cg) override;
  void forward(VariableIndex last) override;
  void backward(VariableIndex last, bool full) override;
  void invalidate() override;
  void revert(size_t nodes) override;
  // A fused intermediate's gradient is recomputed when asked for (exec/fusion.cc).
  const Tensor& gradient(VariableIndex i) override;
  // Elementwise fusion (exec/fusion.h), on unless DYNET_FUSION=0 in the environment.
  void set_fusion(bool on) { fusion_ = on; }
  bool fusion() const { return fusion_; }
  // Gradient recycling (exec/recycle.cc), on unless DYNET_RECYCLE_GRADIENTS=0 in the environment; the
  // number of batches whose gradient memory the last backward recycled.
  void set_gradient_recycling(bool on) { recycle_ = on; }
  size_t recycled_batches() const { return recycled_count_; }

  // Nodes computed together as one batched node, in computation order (nodes that ran alone have
  // no record: they are the entries of the computation order between batches).
  struct Batch {
    uint32_t first = 0, size = 0;        // members: order_[first, first + size)
    uint32_t xs = 0;                     // batched arguments: xs_[xs, xs + nargs)
    uint32_t args = 0;                   // member j's argument a: args_[args + j * nargs + a]
    uint32_t attr = 0, attr_words = 0;   // merged attribute words in attr_ (merged)
    bool merged = false;
    bool by_pointer = false;             // the kernels read the members by pointer (BatchRule::by_pointer)
    bool reached = false;                // backward: some member leads to the loss
    bool recycled = false;               // backward: its gradient memory is recycled (exec/recycle.cc)
    float* aux = nullptr;                // the batched node's aux memory
    float* grad = nullptr;               // backward: the members' gradients, one after another
    size_t gathered = 0;                 // floats copied to concatenate arguments
    uint64_t gathered_args = 0;          // bit a: argument a (< 64) was copied to concatenate it
    // Fused regions (exec/fusion.h): their program, or kNone. Members are then the regions' outputs,
    // output after output (k regions: size = outputs * k), and args_ holds each region's inputs.
    uint32_t program = ~0u;
  };
  const std::vector<Batch>& batches() const { return batches_; }
  const VariableIndex* members(const Batch& b) const { return order_.data() + b.first; }
  // The nodes a batch computes: its members, and a fused batch's intermediates too.
  size_t nodes_computed(const Batch& b) const {
    return b.program == ~0u ? b.size : b.size / programs_[b.program].outputs * programs_[b.program].code.size();
  }
  // The batched node's attribute: merged from the members' (BatchRule::merge), else the first member's.
  AttrView batch_attr(const Batch& b) const {
    return b.merged ? AttrView{attr_.data() + b.attr, b.attr_words}
                    : AttrView{cg_->node_attr(order_[b.first]), cg_->node(order_[b.first]).attr_words};
  }
  // The arguments of b's member j (nargs of them), read in one place: members lie far apart in the
  // graph's records (one per example), their argument lists too.
  const VariableIndex* member_args(const Batch& b, unsigned j, unsigned nargs) const {
    return args_.data() + b.args + size_t(j) * nargs;
  }

 private:
  void default_settings();  // fusion and recycling as the environment says
  void schedule_agenda();
  void schedule_by_depth();
  // Runs `k` ready nodes (positions) of one signature, batched when that pays off (else one by one).
  // True when they batched in runs (of members whose key arguments lie one after another), not as one.
  bool run_group(const uint32_t* group, unsigned k);
  // Runs members m[0..k) (their arguments: margs, nargs per member) as one batched node when the copies
  // that takes are worth it; else false.
  bool try_batched(const VariableIndex* m, const VariableIndex* margs, unsigned k);
  // Runs members m[0..k) one by one, their outputs one after another in one block.
  void run_placed(const VariableIndex* m, unsigned k);
  void run_alone(VariableIndex i);
  void run_position(uint32_t t);  // a node or a region that runs alone
  // Fused regions (exec/fusion.cc): k of one program at once; their backward; their inputs on the
  // loss's path (route_parameter_gradients).
  void run_fused(const uint32_t* group, unsigned k);
  void backward_fused(const Batch& b);
  void fused_inputs_used(const Batch& b, std::vector<uint8_t>& used) const;
  void index_fused_intermediates();
  std::pair<float*, float*> claim_interior(float* p, size_t n, size_t member);
  bool reached_at(VariableIndex i) const { return i < reached_.size() && reached_[i]; }
  void run_batched(const VariableIndex* m, const VariableIndex* margs, unsigned k, const uint8_t* contiguous);
  // Marks the successors of position t whose arguments are now all computed as ready.
  void release(uint32_t t);
  uint32_t succ_end(uint32_t t) const {
    return t + 1 < info_.size() ? info_[t + 1].succ : static_cast<uint32_t>(succ_.size());
  }
  void make_ready(uint32_t t);
  void backward_batch(const Batch& b);
  bool one_call_on_device(const Batch& g, const OpDef& def, const Tensor* xs) const;
  void prefetch_backward(const Batch& b);
  // Chooses the node of each parameter that takes the gradients of batches sharing the parameter, and
  // takes off the loss's path the parameter nodes that then get no gradient.
  void route_parameter_gradients(VariableIndex last);
  // The node that takes the gradient of batch b's shared argument a (kNone: none reached).
  VariableIndex shared_gradient_node(const Batch& b, unsigned a) const;
  void push_batch_gradient(const Batch& b);
  // Gradient recycling (exec/recycle.cc): plan_recycling chooses the batches and their places in an
  // arena after the block (returns its floats; `saved`: what the block no longer needs for them);
  // end_of_recycled marks a recycled batch's memory free once its backward ran; recompute_recycled
  // gives the recycled members their gradients again (gradient()).
  size_t plan_recycling(VariableIndex last, size_t& saved);
  void end_of_recycled(const Batch& b);
  void recompute_recycled();
  // Batches on devices other than the CPU (batched.cc explains).
  void gather_on_device(float* dst, const VariableIndex* margs, unsigned nargs, unsigned k, unsigned a, unsigned rep,
                        size_t n);
  void scatter_on_device(const Batch& g, unsigned a, float* d, size_t rep, size_t n);
  void flush_segment_lists(Device* dev, bool gather);
  void drop_segment_lists();
  // Lays the device nodes' gradients out in one zeroed block per device, followed by zeroed scratch for
  // the argument gradients backward_batch computes apart: as much as the largest earlier pass used.
  void device_gradient_layout();
  // n zeroed floats on device d for such an argument gradient: from the block's scratch while it lasts,
  // else from `scratch` (from_scratch: given back with it), zeroed with a launch of its own.
  float* zeroed_scratch(uint8_t d, size_t n, MemPool& scratch, bool& from_scratch);
  // Calls single(i) for each node that ran alone and batch(b) for each batch, in computation order
  // (reversed: in reverse).
  template <bool kReversed, class Single, class Multi>
  void for_each_group(Single single, Multi batch);
  void print_composition(size_t first_batch, size_t first_position) const;
  // Heap order of queued signatures: the top is the one to run next.
  struct Later {
    const BatchedExecutor* e;
    bool operator()(int32_t a, int32_t b) const {
      const SigInfo &x = e->sigs_info_[a], &y = e->sigs_info_[b];
      if (x.eager != y.eager) return y.eager;
      if (x.priority != y.priority) return x.priority > y.priority;
      if (x.deferred != y.deferred) return x.deferred > y.deferred;
      return a > b;
    }
  };

  int strategy_;
  SignatureTable sigs_;
  // Per scheduling pass: the nodes to compute (by position, in creation order) and the signatures.
  static constexpr uint32_t kNone = ~0u;
  struct NodeInfo {
    VariableIndex node = 0;
    int32_t sig = SignatureTable::kAlone;
    uint32_t pending = 0;          // arguments still to compute
    uint32_t depth = 0;            // longest path from a computed node
    uint32_t height = 0;           // longest path to the requested node
    uint32_t succ = 0;             // successors: succ_[succ, next node's succ) once counted
    uint32_t args = 0;             // the node's arguments in the graph (NodeRec::arg_begin)
    uint32_t region = kNone;       // a fused region (plan_), scheduled as one unit
  };
  struct Edge {
    uint32_t from, to;
  };
  struct SigInfo {
    uint32_t count = 0;
    uint32_t taken = 0, filled = 0;  // ready nodes not yet run: ready_[taken, filled)
    bool queued = false, deferred = false;
    bool eager = false;      // runs as soon as ready: waiting for more members did not pay (batched in runs)
    double priority = 0;     // lower runs first
  };
  std::vector<uint32_t> pos_;    // by index in needed_: scheduling position
  std::vector<uint32_t> local_;  // by node: its index in needed_ (valid for the nodes listed there)
  std::vector<NodeInfo> info_;
  std::vector<Edge> edges_;     // in creation order of `to`
  std::vector<uint32_t> succ_;  // each node's successors one after another (newest first)
  std::vector<SigInfo> sigs_info_;
  std::vector<int32_t> heap_;           // queued signatures (a heap: Later)
  std::vector<uint32_t> ready_;         // each signature's nodes (count of them) in the order they become ready
  std::vector<uint32_t> alone_, group_;
  std::vector<VariableIndex> ids_;
  // run_group: the members (k of them) followed by their argument lists, and the members' sort keys.
  std::vector<VariableIndex> stage_, sorted_;
  struct OrderKey {
    const float* at;  // the key argument's value
    VariableIndex node;
    unsigned index;   // position in stage_ before sorting
  };
  std::vector<OrderKey> order_keys_;
  // try_batched: per argument, whether it is a view (1), gathered (0) or read by pointer (kByPointer).
  static constexpr uint8_t kByPointer = 2;
  std::vector<uint8_t> contiguous_;
  std::vector<const float*> member_xs_;  // run_batched: ForwardArgs::member_xs
  // Batches run and what their batched nodes keep for backward:
  std::vector<Batch> batches_;
  std::vector<Tensor> xs_;
  std::vector<VariableIndex> args_;
  std::vector<uint64_t> attr_;
  std::vector<AttrView> member_attrs_;
  std::vector<NodeRec> arg_recs_;
  std::vector<VariableIndex> arg_ids_;
  // route_parameter_gradients: reached parameter nodes in computation order, a table of the first one
  // of each parameter, each one's gradient node, and which nodes get any gradient.
  std::vector<VariableIndex> leaves_, param_slots_, gradient_node_;
  std::vector<uint8_t> param_used_;
  std::vector<const Batch*> param_batches_;  // batched parameter nodes whose gradients go out last
  // backward: the CPU's gradient block and which of its chunks (kZeroChunk floats) are zeroed yet.
  static constexpr size_t kZeroChunk = 4096;
  static constexpr size_t kAlignedGradient = 8 * kZeroChunk;  // batch gradients this large are chunk-aligned
  // The block's floats for a batch gradient of n floats: with the padding that aligns it.
  static size_t block_floats(size_t n) { return n + (n >= kAlignedGradient ? 2 * kZeroChunk : 0); }
  // The chunks n floats span from a chunk boundary.
  static size_t chunks_of(size_t n) { return (n + kZeroChunk - 1) / kZeroChunk; }
  // Batch b's floats: its members' values (or gradients) one after another.
  size_t batch_floats(const Batch& b) const { return size_t(b.size) * cg_->node(members(b)[0]).dim.size(); }
  bool claim_quarters(VariableIndex x, const Tensor& dx, uint8_t quarters) override;
  bool claim_whole(VariableIndex x, const Tensor& dx) override;
  void zero_for_adding(VariableIndex x, const Tensor& dx) override;
  void zero_before_use(const float* p, size_t n);
  bool claim_for_overwrite(const float* p, size_t n);
  // OpDef::partial_gradient: batch gradients [p, p + n) of `rows`-row columns whose quarters in `written`
  // were written alone (BackwardArgs::own_quarters), the others not yet; complete_partial zeroes those
  // of the ones overlapping [p, p + n) (all of them: n = 0) before anything else reads or adds there.
  struct PartialWrite {
    float* p;
    size_t n, rows;
    uint8_t written;
  };
  std::vector<PartialWrite> partial_;
  bool take_quarters(float* p, size_t n, size_t rows, uint8_t quarters);
  void complete_partial(const float* p, size_t n);
  float* grad_block_ = nullptr;
  size_t grad_floats_ = 0;
  // Gradient recycling (plan_recycling), per batch: the last group in computation order whose backward
  // reads its gradient (kNone: not recycled), its own group, whether its values alias memory that can
  // change (parameters), its place in the arena. Per node: its batch (kNone: ran alone). The last
  // backward covered batches_[0, recycled_end_).
  bool recycle_ = true;
  std::vector<uint32_t> last_use_, own_group_;
  std::vector<uint8_t> aliased_;
  std::vector<size_t> slot_;
  std::vector<uint32_t> batch_of_;
  struct RecycleEvent {
    uint64_t key;  // 2 * group, + 1 for taking a place (before the group's backward), + 0 for giving it back (after)
    uint32_t batch;
  };
  std::vector<RecycleEvent> recycle_events_;
  std::vector<std::pair<size_t, std::vector<size_t>>> free_places_;  // by size in floats: places given back
  size_t recycled_count_ = 0, recycled_end_ = 0;
  bool recycled_pending_ = false;  // some recycled member's gradient() needs recompute_recycled
  std::vector<uint8_t> zeroed_chunks_;
  std::vector<float*> dsts_;      // backward_batch: the arguments' gradients, by argument and member
  // gather_on_device, scatter_on_device: a batch's segment lists (Device::SegmentLists), queued until
  // flush_segment_lists issues them in one call.
  std::vector<float*> segments_, list_blocks_;
  std::vector<size_t> list_ns_, list_counts_;
  std::vector<size_t> device_floats_;  // device_gradient_layout: floats and next free gradient per device
  std::vector<float*> device_next_;
  std::vector<size_t> zeroed_floats_, zeroed_used_;  // per device: the block's scratch, and what this pass took
  // Elementwise fusion: the programs (kept across passes and graphs), this pass's regions, the
  // interpreter's per-member pointers, and the fused intermediates of the last backward (gradient()).
  bool fusion_ = true;
  fusion::Programs programs_;
  fusion::Plan plan_;
  std::vector<int32_t> prog_sig_;  // forward: program -> this pass's signature
  std::vector<const float*> fused_in_;
  std::vector<float*> fused_out_grad_, fused_dst_;
  std::vector<uint8_t> fused_live_;
  std::vector<uint8_t> fused_upload_;  // backward_fused_on_device's arrays, staged for one upload
  void backward_fused_on_device(uint8_t device, const fusion::Program& p, unsigned k, const float* out,
                                fusion::Capture capture);
  std::vector<uint64_t> fused_overwrite_;
  std::vector<uint32_t> fused_order_;
  struct FusedAt {
    VariableIndex node;
    uint32_t batch, member, slot;
  };
  std::vector<FusedAt> fused_at_;
  bool fused_index_ready_ = false;
  uint64_t run_ns_ = 0;  // profiling: time spent running groups in this forward pass
};

template <bool kReversed, class Single, class Multi>
void BatchedExecutor::for_each_group(Single single, Multi batch) {
  if constexpr (kReversed) {
    size_t b = batches_.size();
    for (size_t p = order_.size(); p-- > 0;) {
      if (b > 0 && p + 1 == size_t(batches_[b - 1].first) + batches_[b - 1].size) {
        batch(batches_[--b]);
        p = batches_[b].first;
      } else {
        single(order_[p]);
      }
    }
  } else {
    size_t b = 0;
    for (size_t p = 0; p < order_.size(); ++p) {
      if (b < batches_.size() && p == batches_[b].first) {
        batch(batches_[b]);
        p += batches_[b++].size - 1;
      } else {
        single(order_[p]);
      }
    }
  }
}

}  // namespace dynet
