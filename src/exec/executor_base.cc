#include "exec/executor_base.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/device.h"

namespace dynet {

float* no_elements() {
  alignas(64) static float none[16];
  return none;
}

ExecutorBase::ExecutorBase(const ComputationGraph& cg)
    : cg_(&cg), fx_pool_(pool_sizes().fx), grad_pool_(pool_sizes().dEdf), scratch_pool_(pool_sizes().scratch) {}

ExecutorBase::~ExecutorBase() = default;

void ExecutorBase::rebind(const ComputationGraph& cg) {
  cg_ = &cg;
  invalidate();
}

void ExecutorBase::grow(size_t n) {
  // revert() shrinks computed_ only, so the value vectors may already be long enough.
  if (computed_.size() >= n) return;
  if (fx_.size() < n) {
    fx_.resize(n);
    aux_.resize(n);
    value_ptr_.resize(n);
  }
  computed_.resize(n, 0);
}

void ExecutorBase::mark_computed(VariableIndex i, uint8_t state) {
  computed_[i] = state;
  order_.push_back(i);
  while (prefix_ < computed_.size() && computed_[prefix_]) ++prefix_;
}

const Tensor* ExecutorBase::gather_arg_values(VariableIndex i) {
  const NodeRec& r = cg_->node(i);
  const VariableIndex* a = cg_->node_args(i);
  if (arg_scratch_.size() < r.nargs) arg_scratch_.resize(r.nargs);
  for (size_t k = 0; k < r.nargs; ++k) arg_scratch_[k] = value(a[k]);
  return arg_scratch_.data();
}

Tensor& ExecutorBase::write_record(VariableIndex i, bool gradient) {
  const NodeRec& r = cg_->node(i);
  (gradient ? grad_state_ : computed_)[i] = 1;
  return (gradient ? grad_ : fx_)[i] = Tensor(r.dim, (gradient ? grad_ptr_ : value_ptr_)[i], detail::device_at(r.device),
                                              gradient ? DeviceMempool::DEDFS : DeviceMempool::FXS);
}

void ExecutorBase::forward_node(VariableIndex i, float* out) {
  const NodeRec& n = cg_->node(i);
  const OpDef& def = op_def(n.op);
  // Shape rules compute dims, not element counts: a shape whose count does not fit stops here,
  // before anything is allocated or read for it.
  const size_t size = n.dim.checked_size(def.name);
  const VariableIndex* a = cg_->node_args(i);
  const Tensor* xs = gather_arg_values(i);
  Tensor& fx = fx_[i];
  fx.d = n.dim;
  fx.device = detail::device_at(n.device);
  fx.mem_pool = DeviceMempool::FXS;
  const AttrView attr{cg_->node_attr(i), n.attr_words};
  MemPool& fx_pool = this->fx_pool(n.device);
  MemPool& scratch = scratch_pool(n.device);
  if (size == 0) [[unlikely]] {  // nothing to compute (kHasEmpty); kernels never see such a value
    fx.v = no_elements();
    aux_[i] = nullptr;
    value_ptr_[i] = fx.v;
    mark_computed(i);
    return;
  }
  // A node that fails leaves nothing behind: its value and aux memory go back to the pool, and it
  // stays uncomputed (a later forward tries it again).
  const MemPool::Mark fx_mark = fx_pool.mark();
  try {
    fx.v = (n.flags & kAliasOutput) ? nullptr : out ? out : fx_pool.allocate_floats(size);
    float* aux = nullptr;
    if (def.aux_floats) aux = fx_pool.allocate_floats(def.aux_floats(n.dim, ArgDims{&cg_->node(0), a, n.nargs}, attr));
    aux_[i] = aux;
    const PoolScope scratch_scope(scratch);
    forward_kernel(n, def)(ForwardArgs{.xs = xs, .n = n.nargs, .fx = fx, .attr = attr, .aux = aux, .scratch = scratch});
    if (cg_->check_validity() && !fx.is_valid())
      throw std::runtime_error("NaN or Inf detected in the value of node " + std::to_string(i) + " (" + def.name +
                               " " + n.dim.str() + ")");
  } catch (const std::bad_alloc&) {
    fx_pool.revert(fx_mark);
    throw std::runtime_error(std::string(def.name) + ": out of memory computing node " + std::to_string(i) +
                             " of shape " + n.dim.str() + " on " + fx.device->name);
  } catch (...) {
    fx_pool.revert(fx_mark);
    throw;
  }
  value_ptr_[i] = fx.v;
  mark_computed(i);
}

size_t ExecutorBase::mark_reached(VariableIndex last, bool full) {
  const size_t n = last + 1;
  // needs[i]: node i depends on something that wants a gradient (a parameter, or anything when full).
  std::vector<uint8_t>& needs = needs_;
  needs.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const NodeRec& r = cg_->node(static_cast<VariableIndex>(i));
    if (full || (r.flags & kParameterNode)) {
      needs[i] = !(r.flags & kNoGradient) || (r.flags & kParameterNode);
      continue;
    }
    if (r.flags & kNoGradient) continue;
    const VariableIndex* a = cg_->node_args(static_cast<VariableIndex>(i));
    for (size_t k = 0; k < r.nargs; ++k)
      if (needs[a[k]]) {
        needs[i] = 1;
        break;
      }
  }
  // Of those, keep the nodes the loss is reached from. The loss itself always gets dE/dE = 1.
  std::vector<uint8_t>& reached = reached_;
  reached.assign(n, 0);
  reached[last] = 1;
  size_t total = 0;  // floats of the gradients on the CPU
  device_nodes_ = false;
  for (size_t i = n; i-- > 0;) {
    if (!reached[i]) continue;
    const NodeRec& r = cg_->node(static_cast<VariableIndex>(i));
    if (r.device) [[unlikely]]
      device_nodes_ = true;
    else
      total += r.dim.size();
    if (r.flags & kNoGradient) continue;
    const VariableIndex* a = cg_->node_args(static_cast<VariableIndex>(i));
    for (size_t k = 0; k < r.nargs; ++k)
      if (needs[a[k]]) reached[a[k]] = 1;
  }
  return total;
}

float* ExecutorBase::begin_gradients(size_t floats, bool zeroed) {
  if (grad_.size() < cg_->size()) grad_.resize(cg_->size());  // stale records: grad_state_ says which are set
  grad_state_.assign(cg_->size(), 0);
  has_backward_ = false;
  grad_pool_.free_all();
  float* block;
  try {
    block = grad_pool_.allocate_floats(floats);
  } catch (const std::bad_alloc&) {
    throw std::runtime_error("backward: out of memory allocating the gradients of " + std::to_string(floats) +
                             " values");
  }
  if (zeroed) std::memset(block, 0, floats * sizeof(float));
  return block;
}

void ExecutorBase::seed_gradient(VariableIndex last) {
  has_backward_ = true;
  backward_upto_ = last + 1;
  Tensor& g = gradient_record(last);
  if (!detail::host_addressable(g.device))
    g.device->fill(g.v, g.d.size(), 1.f);
  else
    for (size_t k = 0; k < g.d.size(); ++k) g.v[k] = 1.f;
}

void ExecutorBase::prepare_backward(VariableIndex last, bool full, bool zeroed) {
  float* block = begin_gradients(mark_reached(last, full), zeroed);
  for (size_t i = 0; i <= last; ++i) {
    if (!reached_[i] || cg_->node(static_cast<VariableIndex>(i)).device) continue;
    grad_[i] = Tensor(cg_->node(static_cast<VariableIndex>(i)).dim, block, cpu_device(), DeviceMempool::DEDFS);
    grad_state_[i] = 1;
    block += grad_[i].d.size();
  }
  if (device_nodes_) device_gradients();
  seed_gradient(last);
}

ExecutorBase::DevicePools::DevicePools(Device* d)
    : fx(pool_sizes().fx, d), grad(pool_sizes().dEdf, d), scratch(pool_sizes().scratch, d) {}

ExecutorBase::DevicePools& ExecutorBase::device_pools(uint8_t device) {
  if (device_pools_.size() <= device) device_pools_.resize(device + 1);
  if (!device_pools_[device]) device_pools_[device] = std::make_unique<DevicePools>(detail::device_at(device));
  return *device_pools_[device];
}

void ExecutorBase::device_gradients() {
  const size_t n = reached_.size();
  std::vector<size_t> floats(256, 0);
  for (size_t i = 0; i < n; ++i) {
    const NodeRec& r = cg_->node(static_cast<VariableIndex>(i));
    if (reached_[i]) floats[r.device] += r.dim.size();
  }
  std::vector<float*> next(floats.size(), nullptr);
  for (size_t d = 1; d < floats.size(); ++d)
    if (floats[d]) next[d] = device_gradient_block(static_cast<uint8_t>(d), floats[d]);
  for (size_t i = 0; i < n; ++i) {
    const NodeRec& r = cg_->node(static_cast<VariableIndex>(i));
    if (!reached_[i] || !r.device) continue;
    grad_[i] = Tensor(r.dim, next[r.device], detail::device_at(r.device), DeviceMempool::DEDFS);
    grad_state_[i] = 1;
    next[r.device] += r.dim.size();
  }
}

float* ExecutorBase::device_gradient_block(uint8_t d, size_t floats) {
  Device* dev = detail::device_at(d);
  MemPool& pool = device_pools(d).grad;
  pool.free_all();
  try {
    float* block = pool.allocate_floats(floats);
    dev->fill(block, floats, 0.f);
    return block;
  } catch (const std::bad_alloc&) {
    throw std::runtime_error("backward: out of memory allocating the gradients of " + std::to_string(floats) +
                             " values on " + dev->name);
  }
}

const Tensor& ExecutorBase::gradient(VariableIndex i) {
  if (!has_backward_ || i >= backward_upto_)
    throw std::runtime_error("get_gradient: node " + std::to_string(i) +
                             " has no gradient: call backward() on a loss computed from it first");
  if (grad_state_[i]) return gradient_record(i);
  const uint8_t dev = cg_->node(i).device;  // not on a path to the loss (or constant): dE/dnode = 0
  MemPool& pool = dev ? device_pools(dev).grad : grad_pool_;
  Tensor& g = grad_[i] = Tensor(cg_->node(i).dim, pool.allocate_floats(cg_->node(i).dim.size()),
                                detail::device_at(dev), DeviceMempool::DEDFS);
  g.device->fill(g.v, g.d.size(), 0.f);
  grad_state_[i] = 1;
  return g;
}

void ExecutorBase::invalidate() {
  std::fill(computed_.begin(), computed_.end(), 0);
  order_.clear();
  checkpoints_.clear();
  prefix_ = 0;
  has_backward_ = false;
  fx_pool_.free_all();
  device_marks_.clear();
  for (auto& p : device_pools_)
    if (p) p->fx.free_all();
}

void ExecutorBase::checkpoint() {
  checkpoints_.push_back({order_.size(), fx_pool_.mark()});
  std::vector<MemPool::Mark>& marks = device_marks_.emplace_back();
  for (auto& p : device_pools_) marks.push_back(p ? p->fx.mark() : MemPool::Mark{});
}

void ExecutorBase::revert(size_t nodes) {
  if (!checkpoints_.empty()) {
    // Values computed after the checkpoint are dropped with their memory, whichever nodes they belong to.
    const auto [count, mark] = checkpoints_.back();
    checkpoints_.pop_back();
    for (size_t k = count; k < order_.size(); ++k) computed_[order_[k]] = 0;
    order_.resize(count);
    fx_pool_.revert(mark);
    // Device pools made after the checkpoint hold only later values: back to empty.
    const std::vector<MemPool::Mark>& marks = device_marks_.back();
    for (size_t d = 0; d < device_pools_.size(); ++d)
      if (device_pools_[d]) device_pools_[d]->fx.revert(d < marks.size() ? marks[d] : MemPool::Mark{});
    device_marks_.pop_back();
  } else {
    // No checkpoint of the values (a forward() since the graph's checkpoint forgot them): only the
    // removed nodes go.
    std::erase_if(order_, [nodes](VariableIndex i) { return i >= nodes; });
  }
  if (computed_.size() > nodes) computed_.resize(nodes);
  prefix_ = 0;
  while (prefix_ < computed_.size() && computed_[prefix_]) ++prefix_;
  has_backward_ = false;
}

}  // namespace dynet
