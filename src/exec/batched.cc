#include "exec/batched.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include "core/device.h"
#include "exec/profile.h"
#include "kernels/cpu/gemm.h"

namespace dynet {

namespace {
// Whole 64-byte lines of floats: scratch taken from a block keeps the block's alignment.
constexpr size_t round_up(size_t n) { return (n + 15) & ~size_t(15); }

// Running k nodes as one saves k-1 calls (each about as costly as copying this many floats: the op's
// dispatch, shape handling and the executor's bookkeeping) and k-1 reads of every shared argument.
// Concatenating arguments that do not already lie one after another costs a copy forward and a
// scatter backward. A group whose copies cost more than that runs node by node.
constexpr size_t kCallFloats = 512;

bool reached_node(const std::vector<uint8_t>& reached, VariableIndex i) { return i < reached.size() && reached[i]; }

// t = Tensor(d, v, device, pool), field by field: assigning a constructed Tensor went through a
// stack temporary whose partly overlapping stores made the copy wait (failed store forwarding): the
// top cost of run_batched in perf, once per member.
void set_tensor(Tensor& t, const Dim& d, float* v, Device* device, DeviceMempool pool) {
  t.d = d;
  t.v = v;
  t.device = device;
  t.mem_pool = pool;
}
}  // namespace

BatchedExecutor::BatchedExecutor(const ComputationGraph& cg, int strategy) : SimpleExecutor(cg), strategy_(strategy) {
  default_settings();
}

// A spare executor's next graph starts with the environment's settings, whatever the last one set.
void BatchedExecutor::rebind(const ComputationGraph& cg) {
  SimpleExecutor::rebind(cg);
  default_settings();
}

void BatchedExecutor::default_settings() {
  const char* env = std::getenv("DYNET_FUSION");
  fusion_ = !(env && std::string(env) == "0");
  env = std::getenv("DYNET_RECYCLE_GRADIENTS");
  recycle_ = !(env && std::string(env) == "0");
}

void BatchedExecutor::forward(VariableIndex last) {
  grow(cg_->size());
  if (computed_[last]) return;
  const uint64_t t0 = profile::active() ? profile::now_ns() : 0;
  run_ns_ = 0;
  const size_t first_batch = batches_.size(), first_position = order_.size();
  mark_needed(last);
  if (local_.size() < computed_.size()) local_.resize(computed_.size());
  for (uint32_t k = 0; k < needed_.size(); ++k) local_[needed_[k]] = k;

  // One pass in creation order: which nodes to compute (their position in info_), how many of their
  // arguments are still to compute, their depth (longest path from a computed node), successor
  // lists and signatures.
  pos_.resize(needed_.size());
  info_.clear();
  edges_.clear();
  sigs_.reset();
  // Fused regions (exec/fusion.h) are one position each, at their first node; their signature is their
  // program's, numbered after the nodes' signatures below.
  if (fusion_)
    plan_.build(*cg_, needed_, local_, computed_, programs_);
  else
    plan_.clear();
  bool regions = false;
  for (uint32_t l = 0; l < needed_.size(); ++l) {
    const VariableIndex i = needed_[l];
    const uint32_t t = static_cast<uint32_t>(info_.size());
    NodeInfo info;
    info.node = i;
    const int32_t region = plan_.region_of(l);
    if (region >= 0 && plan_.region(region).position != kNone) {
      pos_[l] = plan_.region(region).position;
      continue;
    }
    pos_[l] = t;
    const NodeRec& r = cg_->node(info.node);
    info.args = r.arg_begin;
    const VariableIndex* a = cg_->node_args(info.node);
    unsigned nargs = r.nargs;
    if (region >= 0) {
      fusion::Region& rg = plan_.region(region);
      rg.position = t;
      info.region = static_cast<uint32_t>(region);
      a = plan_.inputs(rg);
      nargs = programs_[rg.program].inputs();
      regions = true;
    }
    for (unsigned k = 0; k < nargs; ++k) {
      const VariableIndex x = a[k];
      if (computed_[x]) continue;  // else needed, so listed
      NodeInfo& arg = info_[pos_[local_[x]]];
      info.depth = std::max(info.depth, arg.depth);
      ++info.pending;
      ++arg.succ;  // counted here, made offsets below
      edges_.push_back({pos_[local_[x]], t});
    }
    ++info.depth;
    if (region < 0) info.sig = sigs_.of(*cg_, info.node);
    info_.push_back(info);
  }
  size_t nsigs = sigs_.size();
  if (regions) {
    // A region's signature: nsigs + its program's number among this pass's programs.
    prog_sig_.assign(programs_.size(), -1);
    for (NodeInfo& info : info_) {
      if (info.region == kNone) continue;
      int32_t& s = prog_sig_[plan_.region(info.region).program];
      if (s < 0) s = static_cast<int32_t>(nsigs++);
      info.sig = s;
    }
  }
  // Successor lists as one array (each node's successors contiguous, read once per node by release()
  // rather than a linked list with a cache miss per edge); offsets end where each list ends, and
  // filling walks them back to where it begins.
  uint32_t end = 0;
  for (NodeInfo& info : info_) {
    end += info.succ;
    info.succ = end;
  }
  succ_.resize(edges_.size());
  for (const Edge& e : edges_) succ_[--info_[e.from].succ] = e.to;
  sigs_info_.assign(nsigs, SigInfo{});
  for (const NodeInfo& info : info_)
    if (info.sig >= 0) ++sigs_info_[info.sig].count;
  // Each signature's nodes enter its segment of ready_ in the order they become ready.
  uint32_t at = 0;
  for (SigInfo& si : sigs_info_) {
    si.taken = si.filled = at;
    at += si.count;
  }
  ready_.resize(at);
  alone_.clear();
  heap_.clear();
  if (strategy_ == 2)
    schedule_by_depth();
  else
    schedule_agenda();
  if (t0) {
    const uint64_t t1 = profile::now_ns();
    profile::record_pass(info_.size(), t0, t1, t1 - t0 - run_ns_);
  }
  if (profile::composition()) print_composition(first_batch, first_position);
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
  // Heights (longest path to the requested node), in reverse creation order.
  for (size_t t = info_.size(); t-- > 0;) {
    NodeInfo& info = info_[t];
    uint32_t h = 0;
    for (uint32_t e = info.succ, e_end = succ_end(t); e < e_end; ++e) h = std::max(h, info_[succ_[e]].height + 1);
    info.height = h;
    if (info.sig < 0) continue;
    SigInfo& s = sigs_info_[info.sig];
    s.priority -= h;
    s.deferred = op_def(cg_->node(info.node).op).batch.shared != 0;
  }
  for (SigInfo& s : sigs_info_) s.priority /= std::max<uint32_t>(s.count, 1);
  for (uint32_t t = 0; t < info_.size(); ++t)
    if (info_[t].pending == 0) make_ready(t);
  while (true) {
    if (!alone_.empty()) {
      const uint32_t t = alone_.back();
      alone_.pop_back();
      run_position(t);
      release(t);
      continue;
    }
    if (heap_.empty()) break;
    std::pop_heap(heap_.begin(), heap_.end(), Later{this});
    SigInfo& s = sigs_info_[heap_.back()];
    heap_.pop_back();
    const uint32_t* group = ready_.data() + s.taken;  // nodes made ready below are appended after it
    const unsigned k = s.filled - s.taken;
    s.taken = s.filled;
    s.queued = false;
    const bool in_runs = run_group(group, k);
    // Ready nodes of the signature that batched in runs rather than as one (their key arguments come
    // from different batches: the cells of several recurrences) gained nothing by waiting for each
    // other, and waiting interleaved the recurrences: each one's gates, c and h then lie a few batches
    // apart, out of the caches when read again forward and backward. From now on the signature runs as
    // soon as ready. (Members that ran node by node, placed in one block, did gain: they stay as they are.)
    if (in_runs) s.eager = true;
    // The members' successors lie far apart (in k different examples): their records are requested
    // all at once before release() counts them down one by one.
    for (unsigned j = 0; j < k; ++j)
      for (uint32_t e = info_[group[j]].succ, e_end = succ_end(group[j]); e < e_end; ++e)
        __builtin_prefetch(&info_[succ_[e]]);
    for (unsigned j = 0; j < k; ++j) release(group[j]);
  }
}

// Depth-based (the paper's other strategy): nodes of equal depth (from the inputs) and signature run
// together, depth by depth.
void BatchedExecutor::schedule_by_depth() {
  uint32_t max_depth = 0;
  for (const NodeInfo& info : info_) max_depth = std::max(max_depth, info.depth);
  // Counting sort of the positions by depth (into alone_).
  std::vector<uint32_t>& start = group_;
  start.assign(max_depth + 2, 0);
  for (const NodeInfo& info : info_) ++start[info.depth + 1];
  for (uint32_t d = 0; d <= max_depth; ++d) start[d + 1] += start[d];
  alone_.resize(info_.size());
  for (uint32_t t = 0; t < info_.size(); ++t) alone_[start[info_[t].depth]++] = t;  // start[d] ends at d's end
  uint32_t begin = 0;
  for (uint32_t d = 1; d <= max_depth; ++d) {
    const uint32_t end = start[d];
    heap_.clear();  // the level's signatures, in order of first appearance
    for (uint32_t e = begin; e < end; ++e) {
      const uint32_t t = alone_[e];
      const int s = info_[t].sig;
      if (s < 0 || sigs_info_[s].count == 1) {
        run_position(t);
        continue;
      }
      SigInfo& si = sigs_info_[s];
      if (si.filled == si.taken) heap_.push_back(s);
      ready_[si.filled++] = t;
    }
    for (int32_t s : heap_) {
      SigInfo& si = sigs_info_[s];
      const uint32_t first = si.taken;
      si.taken = si.filled;
      run_group(ready_.data() + first, si.filled - first);
    }
    begin = end;
  }
}

void BatchedExecutor::make_ready(uint32_t t) {
  const int s = info_[t].sig;
  if (s < 0 || sigs_info_[s].count == 1) {
    alone_.push_back(t);
    return;
  }
  // Appended, so that members come in the order they became ready: usually the order of their
  // arguments in memory already (see run_group).
  SigInfo& si = sigs_info_[s];
  ready_[si.filled++] = t;
  if (!si.queued) {
    si.queued = true;
    heap_.push_back(s);
    std::push_heap(heap_.begin(), heap_.end(), Later{this});
  }
}

void BatchedExecutor::release(uint32_t t) {
  for (uint32_t e = info_[t].succ, e_end = succ_end(t); e < e_end; ++e)
    if (--info_[succ_[e]].pending == 0) make_ready(succ_[e]);
}

void BatchedExecutor::run_alone(VariableIndex i) {
  profile::Scope scope(profile::Phase::kForward, cg_->node(i).op, 1, &run_ns_);
  scope.set_gathered(0, &cg_->node(i).dim);
  forward_node(i);
}

bool BatchedExecutor::run_group(const uint32_t* group, unsigned k) {
  if (info_[group[0]].region != kNone) {
    run_fused(group, k);
    return false;
  }
  if (k == 1) {
    run_alone(info_[group[0]].node);
    return false;
  }
  const VariableIndex first = info_[group[0]].node;
  const NodeRec& r0 = cg_->node(first);
  const BatchRule& rule = op_def(r0.op).batch;
  const unsigned nargs = r0.nargs;
  // The members' argument lists, copied once into one array (stage_): members lie far apart in the
  // graph (one per example), so each argument list is a cache miss; all of them are requested at once
  // here (found through the pass's records, not the graph's), and the sort, the contiguity test, the
  // gathers and the batch's record below read the copy. The members' value slots, written by
  // run_batched, are requested too.
  const VariableIndex* const graph_args = cg_->node_args(first) - r0.arg_begin;
  stage_.resize(size_t(k) * (nargs + 1));
  for (unsigned j = 0; j < k; ++j) {
    const NodeInfo& info = info_[group[j]];
    stage_[j] = info.node;
    __builtin_prefetch(graph_args + info.args);
    __builtin_prefetch(&value_ptr_[info.node], 1);
  }
  VariableIndex* const margs = stage_.data() + k;
  for (unsigned j = 0; j < k; ++j) {
    const VariableIndex* a = graph_args + info_[group[j]].args;
    for (unsigned x = 0; x < nargs; ++x) {
      margs[size_t(j) * nargs + x] = a[x];
      __builtin_prefetch(&value_ptr_[a[x]]);  // read for the order below and by try_batched
    }
  }
  // Members in the order of their largest concatenated argument's memory, so that arguments made by
  // one earlier group are a view of its output block (and this group's consumers line up in turn).
  // The largest one saves the most copying when the arguments' orders disagree: an LSTM cell's gates
  // (4H) come from one batched node while its state (H) may not.
  // (Not for ops that read their members by pointer: they gather nothing, and their order is any.)
  int key = -1;
  size_t largest = 0;
  const bool by_pointer = rule.by_pointer;
  for (unsigned a = 0; a < nargs && !by_pointer; ++a) {
    const Dim& d = cg_->node(margs[a]).dim;
    if (!rule.is_shared(a) && d.bd == r0.dim.bd && (key < 0 || d.size() > largest)) {
      key = static_cast<int>(a);
      largest = d.size();
    }
  }
  order_keys_.resize(k);
  if (key >= 0) {
    for (unsigned j = 0; j < k; ++j) order_keys_[j] = {value_ptr_[margs[size_t(j) * nargs + key]], stage_[j], j};
  } else {
    for (unsigned j = 0; j < k; ++j) order_keys_[j] = {nullptr, stage_[j], j};
  }
  auto before = [](const OrderKey& x, const OrderKey& y) { return x.at != y.at ? x.at < y.at : x.node < y.node; };
  if (!by_pointer && !std::is_sorted(order_keys_.begin(), order_keys_.end(), before)) {
    std::sort(order_keys_.begin(), order_keys_.end(), before);
    sorted_.resize(stage_.size());
    for (unsigned j = 0; j < k; ++j) {
      const unsigned from = order_keys_[j].index;
      sorted_[j] = stage_[from];
      std::copy_n(margs + size_t(from) * nargs, nargs, sorted_.data() + k + size_t(j) * nargs);
    }
    stage_.swap(sorted_);
  }
  VariableIndex* const m = stage_.data();
  const VariableIndex* const ma = stage_.data() + k;
  if (try_batched(m, ma, k)) return false;
  // Too much to gather as one batch: the runs of members whose key arguments already lie one after
  // another may still batch on their own (ready nodes of several recurrences, each the output of its
  // own earlier batch). The others run one by one, their outputs placed one after another all the same.
  ids_.clear();
  bool in_runs = false;
  for (unsigned b = 0, e; b < k; b = e) {
    for (e = b + 1; key >= 0 && e < k && order_keys_[e].at == order_keys_[e - 1].at + largest;) ++e;
    if (e - b == k || e - b == 1 || !try_batched(m + b, ma + size_t(b) * nargs, e - b))
      for (unsigned j = b; j < e; ++j) ids_.push_back(m[j]);
    else
      in_runs = true;
  }
  run_placed(ids_.data(), static_cast<unsigned>(ids_.size()));
  return in_runs;
}

// Members that do not batch still get their outputs in one block, member after member: a later group
// that consumes them (and its gradients, laid out in the same order) then reads them without copying,
// where each node allocated alone would leave padding between them (an elementwise op over vectors
// from all over memory: placed, the product that consumes its outputs batches as a view of them).
void BatchedExecutor::run_placed(const VariableIndex* m, unsigned k) {
  if (k == 0) return;
  const NodeRec& r0 = cg_->node(m[0]);
  if (k == 1 || (r0.flags & kAliasOutput)) {
    for (unsigned j = 0; j < k; ++j) run_alone(m[j]);
    return;
  }
  Dim all = r0.dim;
  all.bd *= k;
  const size_t n = r0.dim.size();
  float* block = fx_pool(r0.device).allocate_floats(all.checked_size(op_def(r0.op).name));
  for (unsigned j = 0; j < k; ++j) {
    profile::Scope scope(profile::Phase::kForward, r0.op, 1, &run_ns_);
    scope.set_gathered(0, &r0.dim);
    forward_node(m[j], block + j * n);
  }
}

bool BatchedExecutor::try_batched(const VariableIndex* m, const VariableIndex* margs, unsigned k) {
  const NodeRec& r0 = cg_->node(m[0]);
  const BatchRule& rule = op_def(r0.op).batch;
  const unsigned nargs = r0.nargs;
  if (rule.by_pointer) {
    // Each member's arguments are read where they are: nothing to gather, so batching always pays.
    bool same_bd = true;
    for (unsigned a = 0; a < nargs; ++a)
      same_bd = same_bd && (rule.is_shared(a) || cg_->node(margs[a]).dim.bd == r0.dim.bd);
    if (same_bd) {
      contiguous_.assign(nargs, kByPointer);
      for (unsigned a = 0; a < nargs; ++a)
        if (rule.is_shared(a)) contiguous_[a] = 1;
      run_batched(m, margs, k, contiguous_.data());
      return true;
    }
  }
  contiguous_.assign(nargs, 1);
  size_t gather = 0, shared = 0;
  for (unsigned a = 0; a < nargs; ++a) {
    const VariableIndex a0 = margs[a];
    const Dim& d = cg_->node(a0).dim;
    const size_t n = d.size();
    if (rule.is_shared(a)) {
      shared += n;
      continue;
    }
    if (d.bd != r0.dim.bd) {
      // An unbatched argument broadcast against a member's batch: repeated for each of its batch
      // elements, so that the kernel sees equal batch counts (no kernel needs to know about members).
      if (d.bd != 1) return false;
      contiguous_[a] = 0;
      gather += size_t(k) * r0.dim.bd * n;
      continue;
    }
    const float* base = value_ptr_[a0];
    for (unsigned j = 1; j < k; ++j)
      if (value_ptr_[margs[size_t(j) * nargs + a]] != base + j * n) {
        contiguous_[a] = 0;
        gather += size_t(k) * n;
        break;
      }
  }
  if (2 * gather > size_t(k - 1) * (kCallFloats + shared)) return false;
  run_batched(m, margs, k, contiguous_.data());
  return true;
}

void BatchedExecutor::run_batched(const VariableIndex* m, const VariableIndex* margs, unsigned k,
                                   const uint8_t* contiguous) {
  const NodeRec& r0 = cg_->node(m[0]);
  const OpDef& def = op_def(r0.op);
  const unsigned nargs = r0.nargs;
  profile::Scope scope(profile::Phase::kForward, r0.op, k, &run_ns_);
  Batch g;
  g.first = static_cast<uint32_t>(order_.size());
  g.size = k;
  g.xs = static_cast<uint32_t>(xs_.size());
  g.args = static_cast<uint32_t>(args_.size());
  g.attr = static_cast<uint32_t>(attr_.size());
  Dim out = r0.dim;
  out.bd *= k;
  // The batch runs on its members' device (part of their signature), with that device's pools.
  Device* const dev = detail::device_at(r0.device);
  MemPool& pool = fx_pool(r0.device);
  // As for a node run alone: a batch that fails leaves nothing behind (its memory goes back to the
  // pool, its members stay uncomputed).
  const MemPool::Mark fx_mark = pool.mark();
  try {
    const size_t size = out.checked_size(def.name);
    for (unsigned a = 0; a < nargs; ++a) {
      Tensor t = value(margs[a]);
      if (!def.batch.is_shared(a)) {
        const size_t n = t.d.size();
        const unsigned rep = r0.dim.bd / t.d.bd;  // copies of each member's argument (see run_group)
        t.d.bd *= k * rep;
        if (contiguous[a] == kByPointer) {
          t.v = nullptr;
          g.by_pointer = true;
        } else if (!contiguous[a]) {
          float* dst = pool.allocate_floats(size_t(k) * rep * n);
          if (r0.device) [[unlikely]]
            gather_on_device(dst, margs, nargs, k, a, rep, n);
          else
            for (unsigned j = 0; j < k; ++j)
              for (unsigned r = 0; r < rep; ++r)
                std::memcpy(dst + (size_t(j) * rep + r) * n, value_ptr_[margs[size_t(j) * nargs + a]], n * sizeof(float));
          t.v = dst;
          g.gathered += size_t(k) * rep * n;
          if (a < 64) g.gathered_args |= uint64_t(1) << a;
        }
      }
      xs_.push_back(t);
    }
    if (r0.device) [[unlikely]]
      flush_segment_lists(dev, true);
    AttrView attr{cg_->node_attr(m[0]), r0.attr_words};
    if (def.batch.merge) {
      member_attrs_.resize(k);
      for (unsigned j = 0; j < k; ++j) member_attrs_[j] = AttrView{cg_->node_attr(m[j]), cg_->node(m[j]).attr_words};
      def.batch.merge(member_attrs_.data(), k, r0.dim, attr_);
      g.merged = true;
      g.attr_words = static_cast<uint32_t>(attr_.size() - g.attr);
      attr = AttrView{attr_.data() + g.attr, g.attr_words};
    }
    Tensor fx(out, pool.allocate_floats(size), dev, DeviceMempool::FXS);
    const Tensor* xs = xs_.data() + g.xs;
    args_.insert(args_.end(), margs, margs + size_t(k) * nargs);
    if (def.aux_floats) {
      arg_recs_.resize(nargs);
      arg_ids_.resize(nargs);
      for (unsigned a = 0; a < nargs; ++a) {
        arg_recs_[a].dim = xs[a].d;
        arg_ids_[a] = a;
      }
      g.aux = pool.allocate_floats(def.aux_floats(out, ArgDims{arg_recs_.data(), arg_ids_.data(), nargs}, attr));
    }
    if (g.by_pointer) {
      member_xs_.resize(size_t(k) * nargs);
      for (unsigned a = 0; a < nargs; ++a)
        for (unsigned j = 0; j < k; ++j)
          member_xs_[size_t(a) * k + j] = xs[a].v ? xs[a].v : value_ptr_[margs[size_t(j) * nargs + a]];
    }
    {
      MemPool& scratch_pool = this->scratch_pool(r0.device);
      const PoolScope scratch(scratch_pool);
      forward_kernel(r0, def)(
          ForwardArgs{.xs = xs, .n = nargs, .fx = fx, .attr = attr, .aux = g.aux, .scratch = scratch_pool, .members = k,
                      .member_xs = g.by_pointer ? member_xs_.data() : nullptr});
    }
    if (cg_->check_validity() && !fx.is_valid()) throw std::runtime_error("NaN or Inf");  // the member names itself below
    // The members' values: only their pointers. Their records (fx_, 64 bytes each, far apart: members
    // of a batch come from e.g. 64 different trees) are written when something reads them (value()),
    // which the executor itself never does for batch members. (Their aux_ slots stay as they are: the
    // batch's aux memory belongs to the batched node, and only nodes run alone read theirs.)
    // (Room for the members in order_ first, so that no member is marked computed in memory reverted below.)
    if (order_.capacity() < order_.size() + k) order_.reserve(std::max(order_.size() + k, 2 * order_.capacity()));
    const size_t n = r0.dim.size();
    for (unsigned j = 0; j < k; ++j) {
      value_ptr_[m[j]] = fx.v + j * n;
      mark_computed(m[j], kUnwrittenRecord);
    }
  } catch (...) {
    xs_.resize(g.xs);
    args_.resize(g.args);
    attr_.resize(g.attr);
    drop_segment_lists();
    pool.revert(fx_mark);
    // The members run alone: the kernel's error names the batched node's shapes ({3X6} where the
    // user's node is {3}), so the member at fault raises its own (those before it stay computed); and a
    // batch too large for the memory left may fit member by member, which then completes the group.
    for (unsigned j = 0; j < k; ++j) run_alone(m[j]);
    return;
  }
  scope.set_gathered(g.gathered * sizeof(float), &r0.dim);
  batches_.push_back(g);
}

namespace {
// A node that is a parameter's storage in the graph (parameter(cg, p)): all such nodes of one parameter
// are one shared argument to the batch rule.
bool parameter_leaf(const NodeRec& r) {
  return r.nargs == 0 && (r.flags & kParameterNode) && (r.flags & kAliasOutput) && r.attr_words == 1;
}
}  // namespace

// Code that adds a parameter to the graph per example (parameter(cg, p) in the example's function)
// makes one node per example, and their products batch with the parameter as one shared argument.
// Its gradient goes to one node of the parameter for the whole pass, the one computed first (so that
// backward reaches it after every consumer of the others), and the others, which then receive no
// gradient, are taken off the loss's path: no zeroed gradient memory and no push each (their gradient
// reads as zeros). A Tree-LSTM of 64 trees per graph otherwise cleared and pushed 64 copies of every
// weight's gradient per step, and a parser one per batch its LSTM ran.
void BatchedExecutor::route_parameter_gradients(VariableIndex last) {
  // The first computed reached node of each parameter.
  leaves_.clear();
  for_each_group<false>(
      [&](VariableIndex i) {
        if (reached_node(reached_, i) && parameter_leaf(cg_->node(i))) leaves_.push_back(i);
      },
      [](const Batch&) {});
  if (leaves_.empty()) return;
  size_t slots = 16;
  while (slots < 2 * leaves_.size()) slots *= 2;
  param_slots_.assign(slots, kNone);
  if (gradient_node_.size() < size_t(last) + 1) gradient_node_.resize(size_t(last) + 1);
  for (VariableIndex i : leaves_) {
    const uint64_t storage = cg_->node_attr(i)[0];
    const OpId op = cg_->node(i).op;
    size_t s = (storage >> 6 ^ op) & (slots - 1);
    for (; param_slots_[s] != kNone; s = (s + 1) & (slots - 1)) {
      const VariableIndex j = param_slots_[s];
      if (cg_->node_attr(j)[0] == storage && cg_->node(j).op == op) break;
    }
    if (param_slots_[s] == kNone) param_slots_[s] = i;
    gradient_node_[i] = param_slots_[s];
  }
  // Which parameter nodes then receive any gradient.
  std::vector<uint8_t>& used = param_used_;
  used.assign(last + 1, 0);
  used[last] = 1;
  bool any = false;
  auto use_args = [&](VariableIndex i) {
    if (!reached_node(reached_, i) || (cg_->node(i).flags & kNoGradient)) return;
    const VariableIndex* a = cg_->node_args(i);
    for (unsigned k = 0; k < cg_->node(i).nargs; ++k) used[a[k]] = 1;
  };
  auto use_batch = [&](const Batch& b) {
    if (b.program != kNone) return fused_inputs_used(b, used);
    const VariableIndex* m = members(b);
    const NodeRec& r0 = cg_->node(m[0]);
    const BatchRule& rule = op_def(r0.op).batch;
    bool reached = false;
    for (uint32_t j = 0; j < b.size; ++j) reached = reached || reached_node(reached_, m[j]);
    if (!reached || (r0.flags & kNoGradient)) return;
    for (unsigned a = 0; a < r0.nargs; ++a) {
      if (!rule.is_shared(a)) {
        for (uint32_t j = 0; j < b.size; ++j)
          if (reached_node(reached_, m[j])) used[member_args(b, j, r0.nargs)[a]] = 1;
        continue;
      }
      const VariableIndex x = shared_gradient_node(b, a);
      if (x == kNone) continue;
      used[x] = 1;
      any = any || parameter_leaf(cg_->node(x));
    }
  };
  for_each_group<false>(use_args, use_batch);
  if (!any) return;
  for (VariableIndex i : leaves_)
    if (!used[i]) reached_[i] = 0;
}

VariableIndex BatchedExecutor::shared_gradient_node(const Batch& b, unsigned a) const {
  // Members name the shared argument by one node, or by nodes of one parameter (all of them on the
  // loss's path when a member is, until route_parameter_gradients takes all but one off it).
  const VariableIndex* m = members(b);
  for (uint32_t j = 0; j < b.size; ++j) {
    if (!reached_node(reached_, m[j])) continue;
    const VariableIndex x = cg_->node_args(m[j])[a];
    if (parameter_leaf(cg_->node(x))) return gradient_node_[x];
    return reached_node(reached_, x) ? x : kNone;
  }
  return kNone;
}

// The chunks of the CPU gradient block that hold [p, p + n), zeroed unless already: a chunk is zeroed
// when something first reads or accumulates into any part of it, so nothing in it was written before.
// Gradients elsewhere (other devices') were zeroed when allocated.
void BatchedExecutor::zero_before_use(const float* p, size_t n) {
  if (n == 0) return;  // (complete_partial would take it for every open write)
  if (!partial_.empty()) complete_partial(p, n);
  const uintptr_t at = reinterpret_cast<uintptr_t>(p), begin = reinterpret_cast<uintptr_t>(grad_block_);
  if (at < begin || at >= begin + grad_floats_ * sizeof(float)) return;
  const size_t first = (at - begin) / sizeof(float);
  for (size_t c = first / kZeroChunk, last = (first + n - 1) / kZeroChunk; c <= last; ++c) {
    if (zeroed_chunks_[c]) continue;
    zeroed_chunks_[c] = 1;
    std::memset(grad_block_ + c * kZeroChunk, 0, std::min(kZeroChunk, grad_floats_ - c * kZeroChunk) * sizeof(float));
  }
}

// For a first contribution that its kernel writes (BackwardArgs::overwrite): true when no chunk holding
// [p, p + n) is zeroed yet, so nothing was written there; those chunks then count as zeroed, and only
// their parts outside the range are zeroed. False, changing nothing, otherwise (or outside the block).
bool BatchedExecutor::claim_for_overwrite(const float* p, size_t n) {
  if (n == 0) return false;
  if (!partial_.empty()) complete_partial(p, n);
  const uintptr_t at = reinterpret_cast<uintptr_t>(p), begin = reinterpret_cast<uintptr_t>(grad_block_);
  if (at < begin || at >= begin + grad_floats_ * sizeof(float)) return false;
  const size_t first = (at - begin) / sizeof(float), end = first + n;
  const size_t c0 = first / kZeroChunk, c1 = (end - 1) / kZeroChunk;
  for (size_t c = c0; c <= c1; ++c)
    if (zeroed_chunks_[c]) return false;
  std::fill(zeroed_chunks_.begin() + c0, zeroed_chunks_.begin() + c1 + 1, 1);
  std::memset(grad_block_ + c0 * kZeroChunk, 0, (first - c0 * kZeroChunk) * sizeof(float));
  std::memset(grad_block_ + end, 0, (std::min((c1 + 1) * kZeroChunk, grad_floats_) - end) * sizeof(float));
  return true;
}

// The quarters of a batch gradient that OpDef::partial_gradient lets a kernel write alone: the rest of
// the one whose other quarters were written so, or else of one nothing was written to (claimed here).
bool BatchedExecutor::take_quarters(float* p, size_t n, size_t rows, uint8_t quarters) {
  for (size_t e = 0; e < partial_.size(); ++e) {
    PartialWrite& w = partial_[e];
    if (w.p != p || w.n != n || w.rows != rows || (w.written & quarters)) continue;
    w.written |= quarters;
    if (w.written == 0xF) partial_.erase(partial_.begin() + long(e));
    return true;
  }
  if (!claim_for_overwrite(p, n)) return false;
  // A few at most are open at once (a cell's c runs soon after its h); more would make every
  // zero_before_use slower.
  constexpr size_t kMaxOpen = 16;
  if (partial_.size() == kMaxOpen) complete_partial(partial_[0].p, 1);
  partial_.push_back({p, n, rows, quarters});
  return true;
}

void BatchedExecutor::complete_partial(const float* p, size_t n) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = reinterpret_cast<uintptr_t>(p + n);
  for (size_t e = 0; e < partial_.size();) {
    const PartialWrite w = partial_[e];
    if (n && (lo >= reinterpret_cast<uintptr_t>(w.p + w.n) || hi <= reinterpret_cast<uintptr_t>(w.p))) {
      ++e;
      continue;
    }
    zero_other_quarters(w.p, w.n, w.rows, w.written);
    partial_.erase(partial_.begin() + long(e));
  }
}

bool BatchedExecutor::claim_quarters(VariableIndex, const Tensor& dx, uint8_t quarters) {
  return take_quarters(dx.v, dx.d.size(), dx.d.rows(), quarters);
}
bool BatchedExecutor::claim_whole(VariableIndex, const Tensor& dx) { return claim_for_overwrite(dx.v, dx.d.size()); }
void BatchedExecutor::zero_for_adding(VariableIndex, const Tensor& dx) { zero_before_use(dx.v, dx.d.size()); }

void BatchedExecutor::backward(VariableIndex last, bool full) {
  fused_index_ready_ = false;
  partial_.clear();
  mark_reached(last, full);
  route_parameter_gradients(last);
  const size_t n = last + 1;
  // Gradients laid out in computation order, a batch's members one after another as their values
  // are: a later batch's concatenated argument that was a view of one batch's outputs takes its
  // gradient in place.
  // The CPU's here; other devices' in blocks of their own (device_gradient_layout).
  size_t total = 0;
  auto count_single = [&](VariableIndex i) {
    const NodeRec& r = cg_->node(i);
    if (reached_node(reached_, i) && !r.device) total += r.dim.size();
  };
  auto count_batch = [&](Batch& b) {
    const VariableIndex* m = members(b);
    bool any = false;
    for (uint32_t j = 0; j < b.size && !any; ++j) any = reached_node(reached_, m[j]);
    b.reached = any;
    b.grad = nullptr;
    const NodeRec& r0 = cg_->node(m[0]);
    if (!any || r0.device) return;
    const size_t size = size_t(b.size) * r0.dim.size();
    total += block_floats(size);
  };
  for_each_group<false>(count_single, count_batch);
  // Recycled batch gradients (exec/recycle.cc) lie in an arena after the rest, from a chunk boundary.
  size_t saved = 0;
  const size_t arena = plan_recycling(last, saved);
  const size_t arena_at = arena ? chunks_of(total - saved) * kZeroChunk : 0;
  if (arena) total = arena_at + arena;
  // Zeroed a chunk at a time where first used (zero_before_use): zeroed all at once here, the block
  // (17 MB for 64 trees) left the caches before the kernels accumulated into it.
  float* const block = begin_gradients(total, false);
  grad_block_ = block;
  grad_floats_ = total;
  zeroed_chunks_.assign(chunks_of(total), 0);
  grad_ptr_.resize(n);  // set below for every reached node
  float* next = block;
  // A large batch's gradient starts and ends on chunk boundaries: a kernel that writes its first
  // contribution there (claim_for_overwrite) would otherwise find an end chunk shared with a
  // neighbour's gradient, zeroed when that was first used, and zero all of it (the parser's 8 MB of
  // feature gradients per step, written by the MLP's product).
  auto align = [&] { next = block + chunks_of(size_t(next - block)) * kZeroChunk; };
  Device* const cpu = detail::device_at(0);
  auto assign_single = [&](VariableIndex i) {
    const NodeRec& r = cg_->node(i);
    if (!reached_node(reached_, i) || r.device) return;
    set_tensor(grad_[i], r.dim, next, cpu, DeviceMempool::DEDFS);
    grad_state_[i] = 1;
    grad_ptr_[i] = next;
    next += r.dim.size();
  };
  auto assign_batch = [&](Batch& b) {
    const VariableIndex* m = members(b);
    const NodeRec& r0 = cg_->node(m[0]);
    if (!b.reached || r0.device) return;
    const Dim& d = r0.dim;
    const bool aligned = !b.recycled && size_t(b.size) * d.size() >= kAlignedGradient;
    if (aligned) align();
    b.grad = b.recycled ? block + arena_at + slot_[size_t(&b - batches_.data())] : next;
    // Only the members' pointers: their records (grad_, 64 bytes each, far apart: members come from
    // different examples) are written when something reads them (gradient_record).
    for (uint32_t j = 0; j < b.size; ++j) {
      if (!reached_node(reached_, m[j])) continue;
      grad_state_[m[j]] = kUnwrittenRecord;
      grad_ptr_[m[j]] = b.grad + j * d.size();
    }
    if (b.recycled) return;
    next += size_t(b.size) * d.size();
    if (aligned) align();
  };
  for_each_group<false>(assign_single, assign_batch);
  if (device_nodes_) [[unlikely]]
    device_gradient_layout();
  zero_before_use(grad_ptr_[last], cg_->node(last).dim.size());
  seed_gradient(last);
  low_rank_updates_.clear();
  low_rank_head_.assign(n, -1);
  param_nodes_.clear();
  param_batches_.clear();
  const cpu::TransposeScope transposes;  // argument values stay unchanged until the pass ends
  try {
    for_each_group<true>(
        [this](VariableIndex i) {
          if (!reached_node(reached_, i)) return;
          const NodeRec& r = cg_->node(i);
          profile::Scope scope(profile::Phase::kBackward, r.op, 1, nullptr, &r.dim);
          if (!(r.flags & kNoGradient)) {
            const VariableIndex* a = cg_->node_args(i);
            for (unsigned k = 0; k < r.nargs; ++k)
              if (reached_node(reached_, a[k])) gradient_record(a[k]);  // backward_node reads grad_
          }
          backward_node(i);
        },
        [this](const Batch& b) {
          backward_batch(b);
          if (b.recycled) end_of_recycled(b);
        });
  } catch (...) {
    // Nothing reached the parameters yet (see below), so a failed backward leaves them as they were.
    has_backward_ = false;
    partial_.clear();
    drop_segment_lists();
    throw;
  }
  // Each open write was completed by its node's own zero_before_use; this keeps gradient() right even
  // for a path that skipped one.
  complete_partial(nullptr, 0);
  push_parameter_gradients();
  for (const Batch* b : param_batches_) push_batch_gradient(*b);
}

// A batched parameter node (lookup): one push for all members, or, when some member is off the
// loss's path, one per reached member (a sparse update must not visit rows that got no gradient).
// The batch's aux memory holds the members' aux one after another (BatchRule's rule for batchable
// parameter nodes).
void BatchedExecutor::push_batch_gradient(const Batch& b) {
  const VariableIndex* m = members(b);
  const NodeRec& r0 = cg_->node(m[0]);
  const OpDef& def = op_def(r0.op);
  bool all = true;
  for (uint32_t j = 0; j < b.size; ++j) all = all && reached_node(reached_, m[j]);
  if (all) {
    Dim d = r0.dim;
    d.bd *= b.size;
    const AttrView attr = batch_attr(b);
    def.param_grad(attr, Tensor(d, b.grad, detail::device_at(r0.device), DeviceMempool::DEDFS), b.aux);
    return;
  }
  for (uint32_t j = 0; j < b.size; ++j) {
    if (!reached_node(reached_, m[j])) continue;
    const AttrView attr{cg_->node_attr(m[j]), cg_->node(m[j]).attr_words};
    const size_t aux = def.aux_floats ? def.aux_floats(r0.dim, ArgDims{&cg_->node(0), cg_->node_args(m[j]), r0.nargs}, attr) : 0;
    def.param_grad(attr, gradient_record(m[j]), b.aux ? b.aux + j * aux : nullptr);
  }
}

// What backward_batch reads per member first, requested for the batch that runs next (the one before
// g) while g's kernels run: the slots lie far apart (members come from different examples), and read
// one after another each was a cache miss.
void BatchedExecutor::prefetch_backward(const Batch& g) {
  const VariableIndex* m = members(g);
  const VariableIndex* args = args_.data() + g.args;
  size_t nargs = cg_->node(m[0]).nargs * size_t(g.size);
  if (g.program != kNone) {  // a fused batch reads its inputs' values too
    nargs = size_t(g.size / programs_[g.program].outputs) * programs_[g.program].inputs();
    for (size_t t = 0; t < nargs; ++t) __builtin_prefetch(&value_ptr_[args[t]]);
  }
  for (unsigned j = 0; j < g.size; ++j) __builtin_prefetch(&low_rank_head_[m[j]]);
  for (size_t t = 0; t < nargs; ++t) __builtin_prefetch(&grad_ptr_[args[t]]);
}

// OpDef kGradientsInOneCall on a device: one backward call for every concatenated argument when no
// argument is shared or repeated (a member's own argument as batched as its output).
bool BatchedExecutor::one_call_on_device(const Batch& g, const OpDef& def, const Tensor* xs) const {
  if (!(def.flags & kGradientsInOneCall) || def.batch.shared) return false;
  const unsigned nargs = cg_->node(members(g)[0]).nargs;
  for (unsigned a = 0; a < nargs; ++a)
    if (xs[a].d.size() != size_t(g.size) * cg_->node(member_args(g, 0, nargs)[a]).dim.size()) return false;
  return true;
}

void BatchedExecutor::backward_batch(const Batch& g) {
  if (&g != batches_.data()) prefetch_backward((&g)[-1]);
  if (g.program != kNone) return backward_fused(g);
  if (!g.grad) return;
  const VariableIndex* m = members(g);
  const unsigned k = g.size;
  zero_before_use(g.grad, batch_floats(g));  // read below, and by deferred updates
  bool all = true;
  for (unsigned j = 0; j < k; ++j) {
    const bool r = reached_node(reached_, m[j]);
    all = all && r;
    if (r && low_rank_head_[m[j]] >= 0) {
      gradient_record(m[j]);  // flush_low_rank reads grad_
      flush_low_rank(m[j]);
    }
  }
  const NodeRec& r0 = cg_->node(m[0]);
  const OpDef& def = op_def(r0.op);
  profile::Scope scope(profile::Phase::kBackward, r0.op, k, nullptr, &r0.dim);
  const AttrView attr = batch_attr(g);
  Dim bdim = r0.dim;
  bdim.bd *= k;
  Device* const dev = detail::device_at(r0.device);
  const Tensor dEdf(bdim, g.grad, dev, DeviceMempool::DEDFS);
  if (r0.flags & kParameterNode) {
    param_batches_.push_back(&g);
    return;
  }
  const BackwardFn backward = backward_kernel(r0, def);
  if (!backward || (r0.flags & kNoGradient)) return;
  const Tensor fx(bdim, value_ptr_[m[0]], dev, DeviceMempool::FXS);
  MemPool& scratch_pool = this->scratch_pool(r0.device);
  const Tensor* xs = xs_.data() + g.xs;
  const unsigned nargs = r0.nargs;
  // The members' argument gradients (null: not reached), by argument and member, read before any
  // kernel runs (whose data would evict them): the slots lie far apart, as members of a batch come from
  // different examples, and are read from grad_ptr_ (8 bytes a node, where grad_ has 64).
  dsts_.resize(size_t(k) * nargs);
  uint64_t reached = 0;  // BackwardArgs::reached: the arguments that get a call below
  for (unsigned a = 0; a < nargs && a < 64; ++a)
    if (def.batch.is_shared(a) && shared_gradient_node(g, a) != kNone) reached |= uint64_t(1) << a;
  for (unsigned j = 0; j < k; ++j) {
    const VariableIndex* args = member_args(g, j, nargs);
    const bool member = reached_node(reached_, m[j]);
    for (unsigned a = 0; a < nargs; ++a) {
      float* const dst =
          member && !def.batch.is_shared(a) && reached_node(reached_, args[a]) ? grad_ptr_[args[a]] : nullptr;
      dsts_[size_t(a) * k + j] = dst;  // null for shared arguments too (by_pointer kernels read every row)
      if (dst && a < 64) reached |= uint64_t(1) << a;
    }
  }
  bool repeat = false;  // BackwardArgs::repeat: an earlier argument's call for this batch ran
  const bool overwrites = (def.flags & kOverwritesGradient) && !r0.device;
  const bool one_call = g.by_pointer || (r0.device && one_call_on_device(g, def, xs));
  if (one_call) {
    // One call adds each member's gradient into all of its concatenated arguments' (member by member).
    unsigned first = nargs;
    for (unsigned a = 0; a < nargs; ++a) {
      if (def.batch.is_shared(a)) continue;
      first = std::min(first, a);
      const size_t n = cg_->node(member_args(g, 0, nargs)[a]).dim.size();
      for (unsigned j = 0; j < k; ++j)
        if (float* d = dsts_[size_t(a) * k + j]) zero_before_use(d, n);
    }
    if (first < nargs) {
      const PoolScope scratch(scratch_pool);
      Tensor d(xs[first].d, nullptr, dev, DeviceMempool::DEDFS);
      backward(BackwardArgs{.xs = xs, .n = nargs, .fx = fx, .dEdf = dEdf, .i = first, .dEdxi = d, .attr = attr,
                            .aux = g.aux, .scratch = scratch_pool, .members = k, .member_dx = dsts_.data(),
                            .reached = reached});
      repeat = true;
    }
  }
  for (unsigned a = 0; a < nargs; ++a) {
    if (one_call && !def.batch.is_shared(a)) continue;
    const PoolScope scratch(scratch_pool);
    if (def.batch.is_shared(a)) {
      const VariableIndex x = shared_gradient_node(g, a);
      if (x == kNone) continue;
      // A deferred update keeps pointers to this batch's gradient (or what is computed from it), which
      // a recycled batch's memory does not outlive.
      const LowRankSink sink{&low_rank_updates_, &low_rank_head_[x], low_rank_columns(r0.device)};
      BackwardArgs args{.xs = xs, .n = nargs, .fx = fx, .dEdf = dEdf, .i = a, .dEdxi = gradient_record(x), .attr = attr,
                        .aux = g.aux, .scratch = scratch_pool, .low_rank = g.recycled ? nullptr : &sink,
                        .repeat = repeat, .members = k, .reached = reached};
      prepare_argument_gradient(args, def, !r0.device, x);
      backward(args);
      repeat = true;
      continue;
    }
    // A concatenated argument: its gradient is a view of the arguments' gradients when every member
    // and argument is reached and they lie one after another; else computed apart and scattered. An
    // argument gathered in forward is scattered without looking: its gradients could lie one after
    // another only by accident.
    const size_t n = cg_->node(member_args(g, 0, nargs)[a]).dim.size();
    float* const* const dst = dsts_.data() + size_t(a) * k;
    const size_t rep = xs[a].d.size() / (size_t(k) * n);  // > 1: repeated in forward, summed back here
    const bool gathered = a < 64 && ((g.gathered_args >> a) & 1);
    bool any = false, view = all && rep == 1 && !gathered;
    for (unsigned j = 0; j < k; ++j) {
      any = any || dst[j];
      view = view && dst[j] == dst[0] + j * n;
    }
    if (!any) continue;
    Tensor d(xs[a].d, dst[0], dev, DeviceMempool::DEDFS);
    BackwardArgs args{.xs = xs, .n = nargs, .fx = fx, .dEdf = dEdf, .i = a, .dEdxi = d, .attr = attr, .aux = g.aux,
                      .scratch = scratch_pool, .repeat = repeat, .members = k, .reached = reached};
    bool scatter_now = false;  // (scratch from the pool is given back below: its scatter cannot wait)
    if (view) {
      prepare_argument_gradient(args, def, !r0.device, kNone);
    } else if (r0.device) [[unlikely]] {
      d.v = args.dEdxi.v = zeroed_scratch(r0.device, xs[a].d.size(), scratch_pool, scatter_now);
    } else {  // a scratch buffer, written by the kernel where it can
      d.v = args.dEdxi.v = scratch_pool.allocate_floats(xs[a].d.size());
      args.overwrite = overwrites;
      if (!overwrites) std::memset(d.v, 0, xs[a].d.size() * sizeof(float));
    }
    backward(args);
    repeat = true;
    if (!view && r0.device) [[unlikely]] {
      scatter_on_device(g, a, d.v, rep, n);
      if (scatter_now) flush_segment_lists(dev, false);
    } else if (!view) {
      // The destinations lie far apart: each member's lines are requested a few members ahead.
      constexpr unsigned kAhead = 8;
      auto fetch = [&](unsigned j) {
        if (j < k && dst[j])
          for (size_t t = 0; t < n; t += 16) __builtin_prefetch(dst[j] + t, 1);
      };
      for (unsigned j = 0; j < kAhead; ++j) fetch(j);
      for (unsigned j = 0; j < k; ++j) {
        fetch(j + kAhead);
        float* out = dst[j];
        if (!out) continue;
        zero_before_use(out, n);
        for (size_t r = 0; r < rep; ++r) {
          const float* src = d.v + (j * rep + r) * n;
          for (size_t t = 0; t < n; ++t) out[t] += src[t];
        }
      }
    }
  }
  if (r0.device) [[unlikely]]
    flush_segment_lists(dev, false);
}

float* BatchedExecutor::zeroed_scratch(uint8_t d, size_t n, MemPool& scratch, bool& from_scratch) {
  n = round_up(n);
  zeroed_used_[d] += n;
  from_scratch = zeroed_used_[d] > zeroed_floats_[d];
  if (!from_scratch) {
    float* p = device_next_[d];
    device_next_[d] += n;
    return p;
  }
  float* p = scratch.allocate_floats(n);
  detail::device_at(d)->fill(p, n, 0.f);
  return p;
}

// ---- Batches on devices other than the CPU: the same layout, data moved through the Device interface
// (the host must not touch device memory).

// Queues the concatenation of argument a of members m[0..k) (each repeated rep times, n floats each) into
// dst: a batch's gathers are one call (on a GPU one kernel, not one copy per member and argument).
void BatchedExecutor::gather_on_device(float* dst, const VariableIndex* margs, unsigned nargs, unsigned k, unsigned a,
                                       unsigned rep, size_t n) {
  list_blocks_.push_back(dst);
  list_ns_.push_back(n);
  list_counts_.push_back(size_t(k) * rep);
  for (unsigned j = 0; j < k; ++j)
    for (unsigned r = 0; r < rep; ++r) segments_.push_back(value_ptr_[margs[size_t(j) * nargs + a]]);
}

// Queues the adding of the members' parts of d (argument a's gradient computed apart, each member's repeated
// rep times) into the reached members' argument gradients: a list per run of reached members.
void BatchedExecutor::scatter_on_device(const Batch& g, unsigned a, float* d, size_t rep, size_t n) {
  const VariableIndex* m = members(g);
  const unsigned nargs = cg_->node(m[0]).nargs;
  size_t first = 0, listed = segments_.size();  // the run's first segment of d; the segments listed before it
  auto end_run = [&](size_t next) {
    if (segments_.size() > listed) {
      list_blocks_.push_back(d + first * n);
      list_ns_.push_back(n);
      list_counts_.push_back(segments_.size() - listed);
      listed = segments_.size();
    }
    first = next;
  };
  for (unsigned j = 0; j < g.size; ++j) {
    const VariableIndex x = member_args(g, j, nargs)[a];
    if (!reached_node(reached_, m[j]) || !reached_node(reached_, x)) {
      end_run((j + 1) * rep);
      continue;
    }
    for (size_t r = 0; r < rep; ++r) segments_.push_back(grad_ptr_[x]);
  }
  end_run(0);
}

// Issues the queued gathers (or scatter-adds) in one call.
void BatchedExecutor::flush_segment_lists(Device* dev, bool gather) {
  if (!list_blocks_.empty()) {
    const Device::SegmentLists l{list_blocks_.data(), list_ns_.data(), list_counts_.data(), list_blocks_.size(),
                                 segments_.data()};
    gather ? dev->gather_lists(l) : dev->scatter_add_lists(l);
  }
  drop_segment_lists();
}

void BatchedExecutor::drop_segment_lists() {
  segments_.clear();
  list_blocks_.clear();
  list_ns_.clear();
  list_counts_.clear();
}

// The gradients of reached nodes off the CPU: per device one zeroed block, laid out in computation order
// with each batch's members one after another, as backward() does for the CPU's.
void BatchedExecutor::device_gradient_layout() {
  std::vector<size_t>& floats = device_floats_;
  floats.assign(256, 0);
  zeroed_floats_.resize(256);
  zeroed_used_.resize(256);
  for (unsigned d = 0; d < 256; ++d) zeroed_floats_[d] = std::max(zeroed_floats_[d], zeroed_used_[d]);
  zeroed_used_.assign(256, 0);
  for_each_group<false>(
      [&](VariableIndex i) {
        const NodeRec& r = cg_->node(i);
        if (r.device && reached_node(reached_, i)) floats[r.device] += r.dim.size();
      },
      [&](const Batch& b) {
        const NodeRec& r0 = cg_->node(members(b)[0]);
        if (r0.device && b.reached) floats[r0.device] += size_t(b.size) * r0.dim.size();
      });
  std::vector<float*>& next = device_next_;
  next.assign(256, nullptr);
  for (unsigned d = 1; d < 256; ++d)
    if (floats[d]) next[d] = device_gradient_block(static_cast<uint8_t>(d), round_up(floats[d]) + zeroed_floats_[d]);
  for_each_group<false>(
      [&](VariableIndex i) {
        const NodeRec& r = cg_->node(i);
        if (!r.device || !reached_node(reached_, i)) return;
        set_tensor(grad_[i], r.dim, next[r.device], detail::device_at(r.device), DeviceMempool::DEDFS);
        grad_state_[i] = 1;
        grad_ptr_[i] = next[r.device];
        next[r.device] += r.dim.size();
      },
      [&](Batch& b) {
        const VariableIndex* m = members(b);
        const NodeRec& r0 = cg_->node(m[0]);
        if (!r0.device || !b.reached) return;
        float*& at = next[r0.device];
        b.grad = at;
        const size_t n = r0.dim.size();
        for (uint32_t j = 0; j < b.size; ++j)
          if (reached_node(reached_, m[j])) {
            set_tensor(grad_[m[j]], r0.dim, at + j * n, detail::device_at(r0.device), DeviceMempool::DEDFS);
            grad_state_[m[j]] = 1;
            grad_ptr_[m[j]] = at + j * n;
          }
        at += size_t(b.size) * n;
      });
  for (unsigned d = 1; d < 256; ++d)
    if (next[d]) next[d] += round_up(floats[d]) - floats[d];  // the scratch starts aligned
}

void BatchedExecutor::invalidate() {
  ExecutorBase::invalidate();
  fused_index_ready_ = false;
  // Programs are kept for the next graph (usually the same few), unless they pile up.
  if (programs_.size() > 4096) programs_.clear();
  batches_.clear();
  xs_.clear();
  args_.clear();
  attr_.clear();
}

void BatchedExecutor::revert(size_t nodes) {
  fused_index_ready_ = false;
  if (checkpoints_.empty()) {
    // No matching checkpoint of the values (a forward() since the graph's checkpoint forgot them):
    // nodes that no longer exist go, and so do batches with such a member (their other members are
    // recomputed when next needed).
    size_t out = 0, kept = 0;
    auto keep = [&](VariableIndex i) {
      if (i < nodes) order_[out++] = i;
    };
    auto keep_batch = [&](Batch& b) {
      const VariableIndex* m = members(b);
      bool stale = false;
      for (uint32_t j = 0; j < b.size && !stale; ++j) stale = m[j] >= nodes;
      if (stale) {
        for (uint32_t j = 0; j < b.size; ++j)
          if (m[j] < nodes) computed_[m[j]] = 0;
        return;
      }
      std::copy(m, m + b.size, order_.begin() + out);
      b.first = static_cast<uint32_t>(out);
      out += b.size;
      batches_[kept++] = b;
    };
    for_each_group<false>(keep, keep_batch);
    batches_.resize(kept);
    order_.resize(out);
    ExecutorBase::revert(nodes);
    return;
  }
  ExecutorBase::revert(nodes);
  // Batches computed after the checkpoint went with their values.
  size_t kept = batches_.size();
  while (kept > 0 && batches_[kept - 1].first >= order_.size()) --kept;
  if (kept < batches_.size()) {
    xs_.resize(batches_[kept].xs);
    args_.resize(batches_[kept].args);
    attr_.resize(batches_[kept].attr);
    batches_.resize(kept);
  }
}

void BatchedExecutor::print_composition(size_t first_batch, size_t first_position) const {
  size_t batched = 0;
  std::string lines;
  for (size_t bi = first_batch; bi < batches_.size(); ++bi) {
    const Batch& b = batches_[bi];
    batched += b.size;
    const NodeRec& r = cg_->node(members(b)[0]);
    lines += "  " + std::string(op_def(r.op).name) + " " + r.dim.str() + " x" + std::to_string(b.size) +
             (b.merged ? " merged" : "") + (b.program != kNone ? " fused" : "") + ", gathered " + std::to_string(b.gathered * sizeof(float)) + " B\n";
  }
  const size_t nodes = order_.size() - first_position;
  std::cerr << "[dynet] forward: " << nodes << " nodes in " << batches_.size() - first_batch << " batched groups and "
            << nodes - batched << " single nodes\n"
            << lines;
}

std::unique_ptr<Executor> make_executor(const ComputationGraph& cg, int strategy) {
  if (strategy <= 0) return std::make_unique<SimpleExecutor>(cg);
  return std::make_unique<BatchedExecutor>(cg, strategy == 2 ? 2 : 1);
}

}  // namespace dynet
