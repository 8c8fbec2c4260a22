#include "exec/batched.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include "exec/profile.h"

namespace dynet {

namespace {
// Running k nodes as one saves k-1 calls (each about as costly as copying this many floats: the op's
// dispatch, shape handling and the executor's bookkeeping) and k-1 reads of every shared argument.
// Concatenating arguments that do not already lie one after another costs a copy forward and a
// scatter backward. A group whose copies cost more than that runs node by node.
constexpr size_t kCallFloats = 512;

bool reached_node(const std::vector<uint8_t>& reached, VariableIndex i) { return i < reached.size() && reached[i]; }
}  // namespace

BatchedExecutor::BatchedExecutor(const ComputationGraph& cg, int strategy) : SimpleExecutor(cg), strategy_(strategy) {}

void BatchedExecutor::forward(VariableIndex last) {
  grow(cg_->size());
  if (computed_[last]) return;
  const uint64_t t0 = profile::active() ? profile::now_ns() : 0;
  const size_t first_group = groups_.size();
  base_ = prefix_;
  mark_needed(last, base_);
  const size_t n = last + 1 - base_;
  todo_.clear();
  for (size_t i = base_; i <= last; ++i)
    if (wanted_[i - base_] && !computed_[i]) todo_.push_back(static_cast<VariableIndex>(i));

  // Depth (longest path from a computed node), arguments still to compute, successor counts, signature.
  depth_.resize(n);
  pending_.resize(n);
  sig_.resize(n);
  succ_begin_.assign(n + 1, 0);
  sigs_.reset();
  for (VariableIndex i : todo_) {
    const NodeRec& r = cg_->node(i);
    const VariableIndex* a = cg_->node_args(i);
    uint32_t d = 0, p = 0;
    for (unsigned k = 0; k < r.nargs; ++k) {
      const VariableIndex x = a[k];
      if (x < base_ || computed_[x]) continue;
      d = std::max(d, depth_[x - base_]);
      ++p;
      ++succ_begin_[x - base_ + 1];
    }
    depth_[i - base_] = d + 1;
    pending_[i - base_] = p;
    sig_[i - base_] = sigs_.of(cg_, i);
  }
  const size_t nsigs = sigs_.size();
  sig_count_.assign(nsigs, 0);
  sig_priority_.assign(nsigs, 0.0);
  if (ready_.size() < nsigs) ready_.resize(nsigs);
  for (size_t s = 0; s < nsigs; ++s) ready_[s].clear();
  alone_.clear();
  heap_.clear();
  for (VariableIndex i : todo_)
    if (sig_[i - base_] >= 0) ++sig_count_[sig_[i - base_]];

  if (strategy_ == 2) {
    schedule_by_depth();
  } else {
    // Successor lists (CSR) and heights (longest path to the requested node).
    for (size_t x = 0; x < n; ++x) succ_begin_[x + 1] += succ_begin_[x];
    succ_.resize(succ_begin_[n]);
    height_.assign(succ_begin_.begin(), succ_begin_.end() - 1);  // fill cursors first
    for (VariableIndex i : todo_) {
      const NodeRec& r = cg_->node(i);
      const VariableIndex* a = cg_->node_args(i);
      for (unsigned k = 0; k < r.nargs; ++k)
        if (a[k] >= base_ && !computed_[a[k]]) succ_[height_[a[k] - base_]++] = i;
    }
    for (size_t t = todo_.size(); t-- > 0;) {
      const size_t x = todo_[t] - base_;
      uint32_t h = 0;
      for (uint32_t e = succ_begin_[x]; e < succ_begin_[x + 1]; ++e) h = std::max(h, height_[succ_[e] - base_] + 1);
      height_[x] = h;
    }
    schedule_agenda();
  }
  if (t0) profile::record_schedule(todo_.size(), t0, profile::now_ns());
  if (profile::composition()) print_composition(first_group);
  if (!computed_[last])
    throw std::logic_error("BatchedExecutor: node " + std::to_string(last) + " was not scheduled");
}

// The agenda (the paper's strategy): nodes that cannot batch run as soon as they are ready; otherwise
// all ready nodes of one signature run together, choosing the signature whose nodes lie furthest from
// the requested node on average. That is DyNet's "lowest average depth", with depth counted from the
// end (as late as possible) rather than from the inputs: a node with slack, such as the output layer of
// each step of a recurrent network, waits until its counterparts of the other steps are ready, while
// the recurrence, which has none, keeps moving. Ties go to ops without shared arguments, deferring the
// products (the paper defers its "complex" ops the same way).
void BatchedExecutor::schedule_agenda() {
  const size_t nsigs = sig_count_.size();
  sig_deferred_.assign(nsigs, 0);
  sig_queued_.assign(nsigs, 0);
  for (VariableIndex i : todo_) {
    const int s = sig_[i - base_];
    if (s < 0) continue;
    sig_priority_[s] -= height_[i - base_];
    sig_deferred_[s] = op_def(cg_->node(i).op).batch.shared != 0;
  }
  for (size_t s = 0; s < nsigs; ++s) sig_priority_[s] /= std::max<uint32_t>(sig_count_[s], 1);
  for (VariableIndex i : todo_)
    if (pending_[i - base_] == 0) make_ready(i);
  while (true) {
    if (!alone_.empty()) {
      const VariableIndex i = alone_.back();
      alone_.pop_back();
      run_alone(i);
      release(i);
      continue;
    }
    if (heap_.empty()) break;
    std::pop_heap(heap_.begin(), heap_.end(), Later{this});
    const int32_t s = heap_.back();
    heap_.pop_back();
    sig_queued_[s] = 0;
    group_.swap(ready_[s]);
    ready_[s].clear();
    run_group(group_.data(), static_cast<unsigned>(group_.size()));
    for (VariableIndex m : group_) release(m);
    group_.clear();
  }
}

// Depth-based (the paper's other strategy): nodes of equal depth (from the inputs) and signature run
// together, depth by depth.
void BatchedExecutor::schedule_by_depth() {
  uint32_t max_depth = 0;
  for (VariableIndex i : todo_) max_depth = std::max(max_depth, depth_[i - base_]);
  // Counting sort of the nodes by depth (into succ_, unused by this strategy).
  succ_begin_.assign(max_depth + 2, 0);
  for (VariableIndex i : todo_) ++succ_begin_[depth_[i - base_] + 1];
  for (uint32_t d = 0; d <= max_depth; ++d) succ_begin_[d + 1] += succ_begin_[d];
  succ_.resize(todo_.size());
  height_.assign(succ_begin_.begin(), succ_begin_.end());
  for (VariableIndex i : todo_) succ_[height_[depth_[i - base_]]++] = i;
  std::vector<int32_t>& level_sigs = heap_;
  for (uint32_t d = 1; d <= max_depth; ++d) {
    level_sigs.clear();
    for (uint32_t e = succ_begin_[d]; e < succ_begin_[d + 1]; ++e) {
      const VariableIndex i = succ_[e];
      const int s = sig_[i - base_];
      if (s < 0 || sig_count_[s] == 1) {
        run_alone(i);
        continue;
      }
      if (ready_[s].empty()) level_sigs.push_back(s);
      ready_[s].push_back(i);
    }
    for (int32_t s : level_sigs) {
      group_.swap(ready_[s]);
      ready_[s].clear();
      run_group(group_.data(), static_cast<unsigned>(group_.size()));
      group_.clear();
    }
  }
}

void BatchedExecutor::make_ready(VariableIndex i) {
  const int s = sig_[i - base_];
  if (s < 0 || sig_count_[s] == 1) {
    alone_.push_back(i);
    return;
  }
  ready_[s].push_back(i);
  if (!sig_queued_[s]) {
    sig_queued_[s] = 1;
    heap_.push_back(s);
    std::push_heap(heap_.begin(), heap_.end(), Later{this});
  }
}

void BatchedExecutor::release(VariableIndex i) {
  const size_t x = i - base_;
  for (uint32_t e = succ_begin_[x]; e < succ_begin_[x + 1]; ++e) {
    const VariableIndex s = succ_[e];
    if (--pending_[s - base_] == 0) make_ready(s);
  }
}

void BatchedExecutor::run_alone(VariableIndex i) {
  {
    profile::Scope scope(profile::Phase::kForward, cg_->node(i).op);
    forward_node(i);
  }
  Group g;
  g.first = static_cast<uint32_t>(order_.size() - 1);
  g.size = 1;
  g.xs = static_cast<uint32_t>(xs_.size());
  g.attr = static_cast<uint32_t>(attr_.size());
  groups_.push_back(g);
}

void BatchedExecutor::run_group(VariableIndex* m, unsigned k) {
  if (k == 1) return run_alone(m[0]);
  const NodeRec& r0 = cg_->node(m[0]);
  const BatchRule& rule = op_def(r0.op).batch;
  const unsigned nargs = r0.nargs;
  // Members in the order of their first concatenated argument's memory, so that arguments made by
  // one earlier group are a view of its output block (and this group's consumers line up in turn).
  int first = -1;
  for (unsigned a = 0; a < nargs && first < 0; ++a)
    if (!rule.is_shared(a)) first = static_cast<int>(a);
  if (first >= 0) {
    auto at = [this, first](VariableIndex i) { return fx_[cg_->node_args(i)[first]].v; };
    auto before = [&at](VariableIndex x, VariableIndex y) { return at(x) != at(y) ? at(x) < at(y) : x < y; };
    if (!std::is_sorted(m, m + k, before)) std::sort(m, m + k, before);
  } else if (!std::is_sorted(m, m + k)) {
    std::sort(m, m + k);
  }
  contiguous_.assign(nargs, 1);
  size_t gather = 0, shared = 0;
  for (unsigned a = 0; a < nargs; ++a) {
    const VariableIndex a0 = cg_->node_args(m[0])[a];
    const Dim& d = cg_->node(a0).dim;
    const size_t n = d.size();
    if (rule.is_shared(a)) {
      shared += n;
      continue;
    }
    if (d.bd != r0.dim.bd) {
      // An unbatched argument broadcast against a member's batch: repeated for each of its batch
      // elements, so that the kernel sees equal batch counts (no kernel needs to know about members).
      if (d.bd != 1) {
        for (unsigned j = 0; j < k; ++j) run_alone(m[j]);
        return;
      }
      contiguous_[a] = 0;
      gather += size_t(k) * r0.dim.bd * n;
      continue;
    }
    const float* base = fx_[a0].v;
    for (unsigned j = 1; j < k; ++j)
      if (fx_[cg_->node_args(m[j])[a]].v != base + j * n) {
        contiguous_[a] = 0;
        gather += size_t(k) * n;
        break;
      }
  }
  if (2 * gather > size_t(k - 1) * (kCallFloats + shared)) {
    for (unsigned j = 0; j < k; ++j) run_alone(m[j]);
    return;
  }
  run_batched(m, k, contiguous_.data());
}

void BatchedExecutor::run_batched(const VariableIndex* m, unsigned k, const uint8_t* contiguous) {
  const NodeRec& r0 = cg_->node(m[0]);
  const OpDef& def = op_def(r0.op);
  const unsigned nargs = r0.nargs;
  profile::Scope scope(profile::Phase::kForward, r0.op, k);
  Group g;
  g.first = static_cast<uint32_t>(order_.size());
  g.size = k;
  g.xs = static_cast<uint32_t>(xs_.size());
  g.attr = static_cast<uint32_t>(attr_.size());
  try {
    for (unsigned a = 0; a < nargs; ++a) {
      Tensor t = fx_[cg_->node_args(m[0])[a]];
      if (!def.batch.is_shared(a)) {
        const size_t n = t.d.size();
        const unsigned rep = r0.dim.bd / t.d.bd;  // copies of each member's argument (see run_group)
        t.d.bd *= k * rep;
        if (!contiguous[a]) {
          float* dst = fx_pool_.allocate_floats(size_t(k) * rep * n);
          for (unsigned j = 0; j < k; ++j)
            for (unsigned r = 0; r < rep; ++r)
              std::memcpy(dst + (size_t(j) * rep + r) * n, fx_[cg_->node_args(m[j])[a]].v, n * sizeof(float));
          t.v = dst;
          g.gathered += size_t(k) * rep * n;
        }
      }
      xs_.push_back(t);
    }
    AttrView attr{cg_->node_attr(m[0]), r0.attr_words};
    if (def.batch.merge) {
      member_attrs_.resize(k);
      for (unsigned j = 0; j < k; ++j) member_attrs_[j] = AttrView{cg_->node_attr(m[j]), cg_->node(m[j]).attr_words};
      def.batch.merge(member_attrs_.data(), k, r0.dim, attr_);
      g.merged = true;
      g.attr_words = static_cast<uint32_t>(attr_.size() - g.attr);
      attr = AttrView{attr_.data() + g.attr, g.attr_words};
    }
    Tensor fx(r0.dim, nullptr, default_device, DeviceMempool::FXS);
    fx.d.bd *= k;
    fx.v = fx_pool_.allocate_floats(fx.d.size());
    const Tensor* xs = xs_.data() + g.xs;
    if (def.aux_floats) {
      arg_recs_.resize(nargs);
      arg_ids_.resize(nargs);
      for (unsigned a = 0; a < nargs; ++a) {
        arg_recs_[a].dim = xs[a].d;
        arg_ids_[a] = a;
      }
      g.aux = fx_pool_.allocate_floats(def.aux_floats(fx.d, ArgDims{arg_recs_.data(), arg_ids_.data(), nargs}, attr));
    }
    const MemPool::Mark mark = scratch_pool_.mark();
    def.forward(ForwardArgs{xs, nargs, fx, attr, g.aux, scratch_pool_, k});
    scratch_pool_.revert(mark);
    if (cg_->check_validity() && !fx.is_valid())
      throw std::runtime_error("NaN or Inf detected in the value of node " + std::to_string(m[0]) + " (" + def.name +
                               " " + r0.dim.str() + ", computed batched with " + std::to_string(k - 1) +
                               " other nodes)");
    const size_t n = r0.dim.size();
    for (unsigned j = 0; j < k; ++j) {
      fx_[m[j]] = Tensor(r0.dim, fx.v + j * n, default_device, DeviceMempool::FXS);
      aux_[m[j]] = nullptr;  // the group's aux memory belongs to the batched node
      mark_computed(m[j]);
    }
  } catch (...) {
    xs_.resize(g.xs);
    attr_.resize(g.attr);
    throw;
  }
  scope.set_gathered(g.gathered * sizeof(float), &r0.dim);
  groups_.push_back(g);
}

void BatchedExecutor::backward(VariableIndex last, bool full) {
  mark_reached(last, full);
  const size_t n = last + 1;
  // Gradients laid out group by group, members one after another, as the values are: a later
  // group's concatenated argument that was a view of one group's outputs takes its gradient in place.
  size_t total = 0;
  for (Group& g : groups_) {
    const VariableIndex* m = members(g);
    bool any = false;
    for (uint32_t j = 0; j < g.size && !any; ++j) any = reached_node(reached_, m[j]);
    g.grad = any ? total : kNoGrad;
    if (any) total += size_t(g.size) * cg_->node(m[0]).dim.size();
  }
  float* block = begin_gradients(total);
  for (Group& g : groups_) {
    if (g.grad == kNoGrad) continue;
    const VariableIndex* m = members(g);
    const Dim& d = cg_->node(m[0]).dim;
    for (uint32_t j = 0; j < g.size; ++j)
      if (reached_node(reached_, m[j]))
        grad_[m[j]] = Tensor(d, block + g.grad + j * d.size(), default_device, DeviceMempool::DEDFS);
  }
  seed_gradient(last);
  grad_block_ = block;
  low_rank_updates_.clear();
  low_rank_head_.assign(n, -1);
  for (size_t gi = groups_.size(); gi-- > 0;) backward_group(groups_[gi]);
}

void BatchedExecutor::backward_group(const Group& g) {
  if (g.grad == kNoGrad) return;
  const VariableIndex* m = members(g);
  if (g.size == 1) {
    profile::Scope scope(profile::Phase::kBackward, cg_->node(m[0]).op);
    backward_node(m[0]);
    return;
  }
  const unsigned k = g.size;
  bool all = true;
  for (unsigned j = 0; j < k; ++j) {
    const bool r = reached_node(reached_, m[j]);
    all = all && r;
    if (r && low_rank_head_[m[j]] >= 0) flush_low_rank(m[j]);
  }
  const NodeRec& r0 = cg_->node(m[0]);
  const OpDef& def = op_def(r0.op);
  profile::Scope scope(profile::Phase::kBackward, r0.op, k);
  const AttrView attr = g.merged ? AttrView{attr_.data() + g.attr, g.attr_words} : AttrView{cg_->node_attr(m[0]), r0.attr_words};
  Dim bdim = r0.dim;
  bdim.bd *= k;
  const Tensor dEdf(bdim, grad_block_ + g.grad, default_device, DeviceMempool::DEDFS);
  if (r0.flags & kParameterNode) {
    // Members off the loss's path must not touch the parameter (a sparse update would visit their rows).
    if (all) {
      def.param_grad(attr, dEdf);
    } else {
      for (unsigned j = 0; j < k; ++j)
        if (reached_node(reached_, m[j])) def.param_grad(AttrView{cg_->node_attr(m[j]), cg_->node(m[j]).attr_words}, grad_[m[j]]);
    }
    return;
  }
  if (!def.backward || (r0.flags & kNoGradient)) return;
  const Tensor fx(bdim, fx_[m[0]].v, default_device, DeviceMempool::FXS);
  const Tensor* xs = xs_.data() + g.xs;
  const unsigned nargs = r0.nargs;
  for (unsigned a = 0; a < nargs; ++a) {
    const MemPool::Mark mark = scratch_pool_.mark();
    if (def.batch.is_shared(a)) {
      const VariableIndex x = cg_->node_args(m[0])[a];
      if (!reached_node(reached_, x)) continue;
      const LowRankSink sink{&low_rank_updates_, &low_rank_head_[x]};
      def.backward(BackwardArgs{xs, nargs, fx, dEdf, a, grad_[x], attr, g.aux, scratch_pool_, &sink, k});
      scratch_pool_.revert(mark);
      continue;
    }
    // A concatenated argument: its gradient is a view of the arguments' gradients when every member
    // and argument is reached and they lie one after another; else computed apart and scattered.
    const size_t n = cg_->node(cg_->node_args(m[0])[a]).dim.size();
    const size_t rep = xs[a].d.size() / (size_t(k) * n);  // > 1: repeated in forward, summed back here
    bool any = false, view = all && rep == 1;
    float* g0 = nullptr;
    for (unsigned j = 0; j < k; ++j) {
      const VariableIndex x = cg_->node_args(m[j])[a];
      const bool ok = reached_node(reached_, m[j]) && reached_node(reached_, x);
      any = any || ok;
      if (!ok)
        view = false;
      else if (j == 0)
        g0 = grad_[x].v;
      else if (view && grad_[x].v != g0 + j * n)
        view = false;
    }
    if (!any) continue;
    Tensor d(xs[a].d, g0, default_device, DeviceMempool::DEDFS);
    if (!view) {
      d.v = scratch_pool_.allocate_floats(xs[a].d.size());
      std::memset(d.v, 0, xs[a].d.size() * sizeof(float));
    }
    def.backward(BackwardArgs{xs, nargs, fx, dEdf, a, d, attr, g.aux, scratch_pool_, nullptr, repeat, k});
    repeat = true;
    if (!view) {
      for (unsigned j = 0; j < k; ++j) {
        const VariableIndex x = cg_->node_args(m[j])[a];
        if (!reached_node(reached_, m[j]) || !reached_node(reached_, x)) continue;
        float* dst = grad_[x].v;
        for (size_t r = 0; r < rep; ++r) {
          const float* src = d.v + (j * rep + r) * n;
          for (size_t t = 0; t < n; ++t) dst[t] += src[t];
        }
      }
    }
    scratch_pool_.revert(mark);
  }
}

void BatchedExecutor::invalidate() {
  Executor::invalidate();
  groups_.clear();
  xs_.clear();
  attr_.clear();
}

void BatchedExecutor::revert(size_t nodes) {
  if (checkpoints_.empty()) {
    // No matching checkpoint of the values (a forward() since the graph's checkpoint forgot them):
    // groups with a member that no longer exists are dropped, and their other members recomputed
    // when next needed.
    size_t out = 0, kept = 0;
    for (Group& g : groups_) {
      const VariableIndex* m = members(g);
      bool stale = false;
      for (uint32_t j = 0; j < g.size && !stale; ++j) stale = m[j] >= nodes;
      if (stale) {
        for (uint32_t j = 0; j < g.size; ++j)
          if (m[j] < nodes) computed_[m[j]] = 0;
        continue;
      }
      std::copy(m, m + g.size, order_.begin() + out);
      g.first = static_cast<uint32_t>(out);
      out += g.size;
      groups_[kept++] = g;
    }
    groups_.resize(kept);
    order_.resize(out);
    Executor::revert(nodes);
    return;
  }
  Executor::revert(nodes);
  // Groups computed after the checkpoint went with their values.
  size_t kept = groups_.size();
  while (kept > 0 && groups_[kept - 1].first >= order_.size()) --kept;
  if (kept < groups_.size()) {
    xs_.resize(groups_[kept].xs);
    attr_.resize(groups_[kept].attr);
    groups_.resize(kept);
  }
}

void BatchedExecutor::print_composition(size_t first_group) const {
  size_t singles = 0, batched = 0, nodes = 0;
  std::string lines;
  for (size_t gi = first_group; gi < groups_.size(); ++gi) {
    const Group& g = groups_[gi];
    nodes += g.size;
    if (g.size == 1) {
      ++singles;
      continue;
    }
    ++batched;
    const NodeRec& r = cg_->node(members(g)[0]);
    lines += "  " + std::string(op_def(r.op).name) + " " + r.dim.str() + " x" + std::to_string(g.size) +
             (g.merged ? " merged" : "") + ", gathered " + std::to_string(g.gathered * sizeof(float)) + " B\n";
  }
  std::cerr << "[dynet] forward: " << nodes << " nodes in " << batched << " batched groups and " << singles
            << " single nodes\n"
            << lines;
}

std::unique_ptr<Executor> make_executor(const ComputationGraph& cg, int strategy) {
  if (strategy <= 0) return std::make_unique<SimpleExecutor>(cg);
  return std::make_unique<BatchedExecutor>(cg, strategy == 2 ? 2 : 1);
}

}  // namespace dynet
