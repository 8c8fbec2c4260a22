// Gradient recycling. backward lays the gradients of a pass out in one block, one place per node, as
// DyNet keeps every node's gradient. An autobatched BiLSTM of 64 sequences then writes about 33 MB of
// gate gradients per step, each batch's in memory no kernel touched since the previous step (out of
// the caches when its first writer comes), only to read it once more a few batches later in the
// gates' own backward. A large batch whose gradient is read only by the batches whose backward runs
// soon before its own takes instead the memory of one whose backward has just run: the pass works in
// memory that is still in cache, and needs less of it.
//
// The recycled gradients are gone after the pass, so gradient() recomputes them when first asked, from
// what their consumers read in the pass: the consumers' own gradients (kept, or recycled and
// recomputed first), values and aux memory. For that to give what the pass computed, even after a
// trainer changed the parameters, a batch is recycled only when its consumers are batches (not fused,
// not read by pointer, on the CPU) none of whose arguments is shared (a weight) or aliases memory that
// can change (a parameter's values); and not when it holds the loss, whose gradient is seeded first.
#include <algorithm>
#include <cstring>

#include "core/device.h"
#include "exec/batched.h"

namespace dynet {

namespace {
// Smaller batch gradients stay in the block: a recycled one takes whole chunks (zeroed chunk by chunk,
// kZeroChunk floats), so it must be about that large not to waste most of them.
constexpr size_t kMinRecycled = 4096;
}  // namespace

size_t BatchedExecutor::plan_recycling(VariableIndex last, size_t& saved) {
  saved = 0;
  recycled_count_ = 0;
  recycled_pending_ = false;
  recycled_end_ = batches_.size();
  const size_t nb = batches_.size();
  for (Batch& b : batches_) b.recycled = false;
  if (!recycle_) return 0;
  // Candidates (last_use_ 0 until a consumer is found); aliased_: a batch whose values alias memory.
  last_use_.assign(nb, kNone);
  aliased_.assign(nb, 0);
  bool any = false;
  for (size_t bi = 0; bi < nb; ++bi) {
    const Batch& b = batches_[bi];
    const NodeRec& r0 = cg_->node(members(b)[0]);
    aliased_[bi] = (r0.flags & kAliasOutput) != 0;
    if (!b.reached || b.program != kNone || r0.device || r0.nargs == 0 || (r0.flags & (kParameterNode | kAliasOutput)) ||
        size_t(b.size) * r0.dim.size() < kMinRecycled)
      continue;
    last_use_[bi] = 0;
    any = true;
  }
  if (!any) return 0;
  batch_of_.assign(size_t(last) + 1, kNone);
  for (size_t bi = 0; bi < nb; ++bi) {
    const VariableIndex* m = members(batches_[bi]);
    for (uint32_t j = 0; j < batches_[bi].size; ++j)
      if (m[j] <= last) batch_of_[m[j]] = static_cast<uint32_t>(bi);
  }
  auto drop = [&](VariableIndex x) {
    if (x <= last && batch_of_[x] != kNone) last_use_[batch_of_[x]] = kNone;
  };
  drop(last);
  // The last group (in computation order) that reads each candidate's gradient.
  own_group_.resize(nb);
  uint32_t group = 0;
  for_each_group<false>(
      [&](VariableIndex i) {
        ++group;
        const VariableIndex* a = cg_->node_args(i);
        for (unsigned k = 0, n = cg_->node(i).nargs; k < n; ++k) drop(a[k]);
      },
      [&](const Batch& c) {
        const uint32_t g = group++;
        const size_t ci = size_t(&c - batches_.data());
        own_group_[ci] = g;
        const NodeRec& r0 = cg_->node(members(c)[0]);
        const VariableIndex* args = args_.data() + c.args;
        const size_t nargs = c.program != kNone
                                 ? size_t(c.size / programs_[c.program].outputs) * programs_[c.program].inputs()
                                 : size_t(c.size) * r0.nargs;
        bool pure = c.program == kNone && !c.by_pointer && !r0.device;
        const OpDef& def = op_def(r0.op);
        for (unsigned a = 0; pure && a < r0.nargs; ++a) pure = !def.batch.is_shared(a);
        for (size_t t = 0; pure && t < nargs; ++t) {
          const uint32_t bx = args[t] <= last ? batch_of_[args[t]] : kNone;
          pure = bx != kNone && !aliased_[bx];
        }
        for (size_t t = 0; t < nargs; ++t) {
          const uint32_t bx = args[t] <= last ? batch_of_[args[t]] : kNone;
          if (bx != kNone && last_use_[bx] != kNone) last_use_[bx] = pure ? g : kNone;
        }
      });
  // Places in the arena, handed out in backward's order: a candidate's is taken before its last
  // consumer's backward runs and given back after its own (freed places of its size first, the one
  // freed last first: the most likely to be in cache).
  std::vector<RecycleEvent>& events = recycle_events_;
  events.clear();
  for (size_t bi = 0; bi < nb; ++bi)
    if (last_use_[bi] != kNone && last_use_[bi] > 0) {
      events.push_back({2 * uint64_t(last_use_[bi]) + 1, uint32_t(bi)});
      events.push_back({2 * uint64_t(own_group_[bi]), uint32_t(bi)});
    }
  if (events.empty()) return 0;
  std::sort(events.begin(), events.end(), [](const RecycleEvent& x, const RecycleEvent& y) { return x.key > y.key; });
  if (free_places_.size() > 64) free_places_.clear();  // kept across passes, unless sizes pile up
  for (auto& f : free_places_) f.second.clear();
  slot_.resize(nb);
  size_t arena = 0;
  for (const RecycleEvent& e : events) {
    Batch& b = batches_[e.batch];
    const size_t size = batch_floats(b), floats = chunks_of(size) * kZeroChunk;
    auto it = std::find_if(free_places_.begin(), free_places_.end(), [&](const auto& f) { return f.first == floats; });
    if (e.key & 1) {
      if (it != free_places_.end() && !it->second.empty()) {
        slot_[e.batch] = it->second.back();
        it->second.pop_back();
      } else {
        slot_[e.batch] = arena;
        arena += floats;
      }
      b.recycled = true;
      ++recycled_count_;
      saved += block_floats(size);  // what backward counted for it
    } else {
      if (it == free_places_.end()) it = free_places_.insert(free_places_.end(), {floats, {}});
      it->second.push_back(slot_[e.batch]);
    }
  }
  recycled_pending_ = true;
  return arena;
}

// Its chunks count as unwritten again, so the next batch placed there zeroes or claims them as it
// would fresh memory. Every partial write there was completed when its backward read its gradient.
void BatchedExecutor::end_of_recycled(const Batch& b) {
  const size_t first = size_t(b.grad - grad_block_) / kZeroChunk;
  std::fill(zeroed_chunks_.begin() + long(first), zeroed_chunks_.begin() + long(first + chunks_of(batch_floats(b))),
            uint8_t(0));
}

// Every recycled batch's gradient again, in fresh memory: its consumers' contributions, each consumer's
// backward run again for that argument (consumers after the members they read, so in reverse order
// each consumer's own gradient is complete when it is used).
// Done again from the start if it failed (out of memory) half-way.
void BatchedExecutor::recompute_recycled() {
  Device* const cpu = detail::device_at(0);
  auto recycled = [&](VariableIndex x) {
    return x < batch_of_.size() && batch_of_[x] != kNone && batches_[batch_of_[x]].recycled && reached_at(x);
  };
  for (size_t bi = 0; bi < recycled_end_; ++bi) {
    Batch& b = batches_[bi];
    if (!b.recycled) continue;
    const VariableIndex* m = members(b);
    const size_t n = cg_->node(m[0]).dim.size();
    b.grad = grad_pool_.allocate_floats(size_t(b.size) * n);
    std::memset(b.grad, 0, size_t(b.size) * n * sizeof(float));
    for (uint32_t j = 0; j < b.size; ++j) {
      if (!reached_at(m[j])) continue;
      grad_ptr_[m[j]] = b.grad + j * n;
      grad_state_[m[j]] = kUnwrittenRecord;
    }
  }
  for (size_t ci = recycled_end_; ci-- > 0;) {
    const Batch& c = batches_[ci];
    if (!c.grad || c.program != kNone || c.by_pointer) continue;
    const VariableIndex* m = members(c);
    const NodeRec& r0 = cg_->node(m[0]);
    const OpDef& def = op_def(r0.op);
    const BackwardFn backward = backward_kernel(r0, def);
    if (r0.device || !backward || (r0.flags & (kNoGradient | kParameterNode))) continue;
    const unsigned k = c.size, nargs = r0.nargs;
    Dim bdim = r0.dim;
    bdim.bd *= k;
    const Tensor fx(bdim, value_ptr_[m[0]], cpu, DeviceMempool::FXS), dEdf(bdim, c.grad, cpu, DeviceMempool::DEDFS);
    const AttrView attr = batch_attr(c);
    const Tensor* xs = xs_.data() + c.xs;
    for (unsigned a = 0; a < nargs; ++a) {
      if (def.batch.is_shared(a)) continue;
      bool any = false;
      for (unsigned j = 0; j < k && !any; ++j) any = reached_at(m[j]) && recycled(member_args(c, j, nargs)[a]);
      if (!any) continue;
      const PoolScope scratch(scratch_pool_);
      Tensor d(xs[a].d, scratch_pool_.allocate_floats(xs[a].d.size()), cpu, DeviceMempool::DEDFS);
      std::memset(d.v, 0, xs[a].d.size() * sizeof(float));
      backward(BackwardArgs{.xs = xs, .n = nargs, .fx = fx, .dEdf = dEdf, .i = a, .dEdxi = d, .attr = attr, .aux = c.aux,
                            .scratch = scratch_pool_, .members = k});
      const size_t n = cg_->node(member_args(c, 0, nargs)[a]).dim.size(), rep = xs[a].d.size() / (size_t(k) * n);
      for (unsigned j = 0; j < k; ++j) {
        const VariableIndex x = member_args(c, j, nargs)[a];
        if (!reached_at(m[j]) || !recycled(x)) continue;
        float* out = grad_ptr_[x];
        for (size_t r = 0; r < rep; ++r) {
          const float* src = d.v + (j * rep + r) * n;
          for (size_t t = 0; t < n; ++t) out[t] += src[t];
        }
      }
    }
  }
  recycled_pending_ = false;
}

}  // namespace dynet
