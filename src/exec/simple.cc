#include "exec/simple.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/device.h"
#include "core/param_lock.h"
#include "exec/profile.h"
#include "kernels/cpu/gemm.h"

namespace dynet {

void SimpleExecutor::mark_needed(VariableIndex last) {
  if (seen_.size() < computed_.size()) seen_.resize(computed_.size(), 0);
  if (++pass_ == 0) {  // the marks wrapped around: clear the old ones
    std::fill(seen_.begin(), seen_.end(), 0);
    pass_ = 1;
  }
  needed_.clear();
  needed_.push_back(last);
  seen_[last] = pass_;
  // needed_ is the depth-first search's stack too: the entries before `next` are expanded.
  for (size_t next = 0; next < needed_.size(); ++next) {
    const VariableIndex i = needed_[next];
    const VariableIndex* a = cg_->node_args(i);
    for (size_t k = 0, n = cg_->node(i).nargs; k < n; ++k) {
      const VariableIndex x = a[k];
      if (computed_[x] || seen_[x] == pass_) continue;
      seen_[x] = pass_;
      needed_.push_back(x);
    }
  }
  // Into creation order: by a scan of the range they lie in where that is cheaper than sorting them
  // (a whole graph's first forward), else by sorting (a read of a few nodes among many).
  const size_t k = needed_.size();
  VariableIndex first = last;
  for (const VariableIndex i : needed_) first = std::min(first, i);
  if ((last + 1 - first) <= k * (std::bit_width(k) + 1)) {
    size_t at = 0;
    for (VariableIndex i = first; i <= last; ++i)
      if (seen_[i] == pass_) needed_[at++] = i;
  } else {
    std::sort(needed_.begin(), needed_.end());
  }
}

void SimpleExecutor::forward(VariableIndex last) {
  grow(cg_->size());
  if (computed_[last]) return;
  mark_needed(last);
  for (const VariableIndex i : needed_) {
    if (computed_[i]) continue;  // a fused node computed with its region
    const NodeRec& r = cg_->node(i);
    profile::Scope scope(profile::Phase::kForward, r.op, 1, nullptr, &r.dim);
    forward_node(i);
  }
}

void SimpleExecutor::backward(VariableIndex last, bool full) {
  // Each CPU gradient is zeroed where first used (zero_for_adding), not the whole block up front: a
  // BiLSTM minibatch's gradients are tens of MB, out of the caches again before the kernels
  // accumulated into them.
  prepare_backward(last, full, false);
  grad_zeroed_.assign(last + 1, 0);
  grad_zeroed_[last] = 1;  // dE/dlast = 1
  low_rank_updates_.clear();
  low_rank_head_.assign(last + 1, -1);
  param_nodes_.clear();
  const cpu::TransposeScope transposes;  // argument values stay unchanged until the pass ends
  try {
    for (size_t i = last + 1; i-- > 0;) {
      if (!reached_[i]) continue;
      const NodeRec& r = cg_->node(static_cast<VariableIndex>(i));
      profile::Scope scope(profile::Phase::kBackward, r.op, 1, nullptr, &r.dim);
      backward_node(static_cast<VariableIndex>(i));
    }
  } catch (...) {
    // Nothing reached the parameters yet (see below), so a failed backward leaves them as they were.
    has_backward_ = false;
    throw;
  }
  push_parameter_gradients();
}

bool SimpleExecutor::claim_quarters(VariableIndex x, const Tensor&, uint8_t quarters) {
  uint8_t& state = grad_zeroed_[x];
  if (state == 1 || (state & quarters)) return false;
  const uint8_t written = state | kPartial | quarters;
  state = written == (kPartial | 0xF) ? 1 : written;
  return true;
}

bool SimpleExecutor::claim_whole(VariableIndex x, const Tensor&) {
  if (grad_zeroed_[x] != 0) return false;
  grad_zeroed_[x] = 1;
  return true;
}

void SimpleExecutor::zero_for_adding(VariableIndex x, const Tensor& g) {
  const uint8_t state = grad_zeroed_[x];
  if (state == 1) return;
  grad_zeroed_[x] = 1;
  if (state & kPartial)
    zero_other_quarters(g.v, g.d.size(), g.d.rows(), state & 0xF);
  else if (!cg_->node(x).device)
    std::memset(g.v, 0, g.d.size() * sizeof(float));  // others: zeroed already
}

void SimpleExecutor::prepare_argument_gradient(BackwardArgs& args, const OpDef& def, bool host, VariableIndex x) {
  // OpDef::partial_gradient's quarters apply to an argument with one column per output column.
  const OpDef::PartialGradient p = def.partial_gradient;
  const Dim &fx = args.fx.d, &dx = args.dEdxi.d;
  const bool overwrites = host && (def.flags & kOverwritesGradient);
  if (overwrites && p.quarters && args.i == p.arg && dx.bd == fx.bd && dx.rows() % 4 == 0 &&
      claim_quarters(x, args.dEdxi, p.quarters))
    args.own_quarters = true;
  else if (overwrites && claim_whole(x, args.dEdxi))
    args.overwrite = true;
  else
    zero_for_adding(x, args.dEdxi);
}

void zero_other_quarters(float* p, size_t n, size_t rows, uint8_t written) {
  const size_t q = rows / 4;
  for (float* col = p; col < p + n; col += rows)
    for (unsigned b = 0; b < 4; ++b)
      if (!(written >> b & 1)) std::memset(col + b * q, 0, q * sizeof(float));
}

// Parameter gradients go to the shared storage only once the whole reverse pass has succeeded.
void SimpleExecutor::push_parameter_gradients() {
  detail::HeldGradients held;  // those on devices: one launch per device
  for (VariableIndex i : param_nodes_) {
    const NodeRec& r = cg_->node(i);
    op_def(r.op).param_grad(AttrView{cg_->node_attr(i), r.attr_words}, grad_[i], aux_[i]);
  }
  held.push();
}

void SimpleExecutor::backward_node(VariableIndex i) {
  const NodeRec& r = cg_->node(i);
  zero_for_adding(i, grad_[i]);  // what the kernels read (and a flush_low_rank adds to)
  if ((r.flags & kHasEmpty) && r.dim.size() == 0) [[unlikely]]
    return;  // no gradient to pass on (or to a parameter)
  if (low_rank_head_[i] >= 0) flush_low_rank(i);
  const OpDef& def = op_def(r.op);
  const AttrView attr{cg_->node_attr(i), r.attr_words};
  if (r.flags & kParameterNode) {
    param_nodes_.push_back(i);
    return;
  }
  const BackwardFn backward = backward_kernel(r, def);
  if (!backward || (r.flags & kNoGradient)) return;
  const VariableIndex* a = cg_->node_args(i);
  const Tensor* xs = gather_arg_values(i);
  MemPool& scratch = scratch_pool(r.device);
  bool repeat = false;
  uint64_t reached = 0;
  // Arguments without elements get no call (their gradients have nothing to add to).
  auto gets_call = [&](size_t k) {
    return reached_[a[k]] && (!(r.flags & kHasEmpty) || cg_->node(a[k]).dim.size() != 0);
  };
  for (size_t k = 0; k < r.nargs && k < 64; ++k) reached |= uint64_t(gets_call(k)) << k;
  if ((def.flags & kGradientsInOneCall) && r.device) {
    every_dx_.assign(r.nargs, nullptr);
    size_t first = r.nargs;
    for (size_t k = 0; k < r.nargs; ++k) {
      if (!gets_call(k)) continue;
      first = std::min(first, k);
      zero_for_adding(a[k], grad_[a[k]]);
      every_dx_[k] = grad_[a[k]].v;
    }
    if (first == r.nargs) return;
    const PoolScope scratch_scope(scratch);
    backward(BackwardArgs{.xs = xs, .n = r.nargs, .fx = fx_[i], .dEdf = grad_[i], .i = static_cast<unsigned>(first),
                          .dEdxi = grad_[a[first]], .attr = attr, .aux = aux_[i], .scratch = scratch,
                          .member_dx = every_dx_.data(), .reached = reached});
    return;
  }
  for (size_t k = 0; k < r.nargs; ++k) {
    if (!gets_call(k)) continue;
    const PoolScope scratch_scope(scratch);
    const LowRankSink sink{&low_rank_updates_, &low_rank_head_[a[k]], low_rank_columns(r.device)};
    BackwardArgs args{.xs = xs, .n = r.nargs, .fx = fx_[i], .dEdf = grad_[i], .i = static_cast<unsigned>(k),
                      .dEdxi = grad_[a[k]], .attr = attr, .aux = aux_[i], .scratch = scratch, .low_rank = &sink,
                      .repeat = repeat, .reached = reached};
    prepare_argument_gradient(args, def, !r.device && !cg_->node(a[k]).device, a[k]);
    backward(args);
    repeat = true;
  }
}

void SimpleExecutor::flush_low_rank(VariableIndex i) {
  const int u = low_rank_head_[i];
  low_rank_head_[i] = -1;
  const LowRankUpdate& first = low_rank_updates_[u];
  const long m = first.m, k = first.k;
  float* dW = grad_[i].v;
  if (Device* dev = grad_[i].device; !detail::host_addressable(dev)) return flush_low_rank_on(dev, u, dW);
  if (first.next < 0) {
    cpu::gemm(false, true, m, k, first.cols, 1.f, first.g, m, first.x, k, 1.f, dW, m);
    return;
  }
  // The columns go through one GEMM per slab of at least 128 columns and about 8 MB of G, so that the
  // gathered copy stays a bounded, reused piece of scratch memory: gathering all of a long graph's
  // columns at once (a 10k-word output layer: 40 KB a column, 50 MB for 80 steps of 16) made the pool
  // grow, and fault in fresh pages, with each longer graph; GEMMs this wide already run at full speed.
  long total = 0;
  for (int v = u; v >= 0; v = low_rank_updates_[v].next) total += low_rank_updates_[v].cols;
  const long slab = std::min(total, std::max(128L, (long(1) << 21) / m));
  const PoolScope scratch(scratch_pool_);
  float* G = scratch_pool_.allocate_floats(size_t(m) * size_t(slab + LowRankSink::kMaxColumns));
  float* X = scratch_pool_.allocate_floats(size_t(k) * size_t(slab + LowRankSink::kMaxColumns));
  long c = 0;
  for (int v = u; v >= 0; v = low_rank_updates_[v].next) {
    const LowRankUpdate& up = low_rank_updates_[v];
    std::memcpy(G + c * m, up.g, sizeof(float) * m * up.cols);
    std::memcpy(X + c * k, up.x, sizeof(float) * k * up.cols);
    c += up.cols;
    if (c >= slab || up.next < 0) {
      cpu::gemm(false, true, m, k, c, 1.f, G, m, X, k, 1.f, dW, m);
      c = 0;
    }
  }
}

// On a device: the updates' columns gathered into G and X with one call (each update a list of one segment
// of G and one of X), then one product, slab by slab as on the CPU.
void SimpleExecutor::flush_low_rank_on(Device* dev, int u, float* dW) {
  const long m = low_rank_updates_[u].m, k = low_rank_updates_[u].k;
  if (low_rank_updates_[u].next < 0) {
    const LowRankUpdate& up = low_rank_updates_[u];
    return dev->add_product_nt(dW, up.g, up.x, m, k, up.cols);
  }
  long total = 0, widest = 0;
  for (int v = u; v >= 0; v = low_rank_updates_[v].next) {
    total += low_rank_updates_[v].cols;
    widest = std::max(widest, low_rank_updates_[v].cols);
  }
  const long slab = std::min(total, std::max({128L, (long(1) << 21) / m, widest}));
  MemPool& pool = scratch_pool(dev->index);
  const PoolScope scratch(pool);
  float* G = pool.allocate_floats(size_t(m) * size_t(slab));
  float* X = pool.allocate_floats(size_t(k) * size_t(slab));
  std::vector<float*> blocks, ptrs;
  std::vector<size_t> ns;
  long c = 0;
  auto flush = [&] {
    const std::vector<size_t> ones(blocks.size(), 1);
    dev->gather_lists({blocks.data(), ns.data(), ones.data(), blocks.size(), ptrs.data()});
    dev->add_product_nt(dW, G, X, m, k, c);
    blocks.clear(), ptrs.clear(), ns.clear();
    c = 0;
  };
  for (int v = u; v >= 0; v = low_rank_updates_[v].next) {
    const LowRankUpdate& up = low_rank_updates_[v];
    if (c + up.cols > slab) flush();
    blocks.insert(blocks.end(), {G + c * m, X + c * k});
    ptrs.insert(ptrs.end(), {const_cast<float*>(up.g), const_cast<float*>(up.x)});
    ns.insert(ns.end(), {size_t(m * up.cols), size_t(k * up.cols)});
    c += up.cols;
  }
  flush();
}

}  // namespace dynet
