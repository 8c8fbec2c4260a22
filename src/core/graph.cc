#include <atomic>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>

#include "core/mem.h"
#include "core/op.h"
#include "kernels/cpu/gemm.h"

namespace dynet {

namespace {
std::atomic<unsigned> next_graph_id{1};
}

ComputationGraph::ComputationGraph() : ComputationGraph(autobatch_flag != 0) {}

ComputationGraph::ComputationGraph(bool batched) : batched_(batched), graph_id_(next_graph_id++) {
  const PoolSizes& s = pool_sizes();
  fx_pool_ = std::make_unique<MemPool>(s.fx);
  grad_pool_ = std::make_unique<MemPool>(s.dEdf);
  scratch_pool_ = std::make_unique<MemPool>(s.scratch);
  nodes_.reserve(256);
  args_.reserve(512);
}

ComputationGraph::~ComputationGraph() = default;

void ComputationGraph::check_index(VariableIndex i, const char* where) const {
  if (i >= nodes_.size())
    throw std::invalid_argument(std::string("ComputationGraph::") + where + ": node " + std::to_string(i) +
                                " does not exist (graph has " + std::to_string(nodes_.size()) + " nodes)");
}

VariableIndex ComputationGraph::add_node(OpId op, const VariableIndex* args, unsigned nargs, const void* attr,
                                         size_t attr_bytes) {
  const OpDef& def = op_def(op);
  const VariableIndex idx = static_cast<VariableIndex>(nodes_.size());
  const uint32_t arg_begin = static_cast<uint32_t>(args_.size());
  const uint32_t attr_begin = static_cast<uint32_t>(attrs_.size());
  const uint32_t attr_words = static_cast<uint32_t>((attr_bytes + 7) / 8);
  args_.insert(args_.end(), args, args + nargs);
  if (attr_bytes) {
    attrs_.resize(attrs_.size() + attr_words, 0);
    std::memcpy(attrs_.data() + attr_begin, attr, attr_bytes);
  }
  NodeRec& r = nodes_.emplace_back();
  r.op = op;
  r.flags = def.flags;
  r.nargs = nargs;
  r.arg_begin = arg_begin;
  r.attr_begin = attr_begin;
  r.attr_words = attr_words;
  try {
    // The shape rule writes its result straight into the record (guaranteed copy elision).
    new (&r.dim) Dim(def.shape(ArgDims{nodes_.data(), args_.data() + arg_begin, nargs},
                               AttrView{attrs_.data() + attr_begin, attr_words}));
  } catch (...) {
    nodes_.pop_back();
    args_.resize(arg_begin);
    attrs_.resize(attr_begin);
    throw;
  }
  if (immediate_compute_) incremental_forward(idx);
  return idx;
}

const Dim& ComputationGraph::get_dimension(VariableIndex index) const {
  check_index(index, "get_dimension");
  return nodes_[index].dim;
}

void ComputationGraph::clear() {
  nodes_.clear();
  args_.clear();
  attrs_.clear();
  fx_.clear();
  grad_.clear();
  aux_.clear();
  checkpoints_.clear();
  fx_pool_->free_all();
  grad_pool_->free_all();
  scratch_pool_->free_all();
  evaluated_ = 0;
  has_backward_ = false;
  graph_id_ = next_graph_id++;
}

void ComputationGraph::checkpoint() {
  CGCheckpoint c;
  c.nodes = nodes_.size();
  c.args = args_.size();
  c.attrs = attrs_.size();
  c.evaluated = evaluated_;
  MemPool::Mark m = fx_pool_->mark();
  c.fx_block = m.block;
  c.fx_used = m.used;
  checkpoints_.push_back(c);
}

void ComputationGraph::revert() {
  if (checkpoints_.empty()) throw std::runtime_error("ComputationGraph::revert: no checkpoint to revert to");
  CGCheckpoint c = checkpoints_.back();
  checkpoints_.pop_back();
  nodes_.resize(c.nodes);
  args_.resize(c.args);
  attrs_.resize(c.attrs);
  if (evaluated_ > c.evaluated) {
    // Values computed after the checkpoint are dropped with their memory.
    evaluated_ = c.evaluated;
    fx_pool_->revert({c.fx_block, c.fx_used});
  }
  if (evaluated_ > nodes_.size()) evaluated_ = nodes_.size();
  has_backward_ = false;
}

void ComputationGraph::invalidate() {
  evaluated_ = 0;
  has_backward_ = false;
}

const Tensor& ComputationGraph::forward(const Expression& last) { return forward(last.i); }
const Tensor& ComputationGraph::forward(VariableIndex last) {
  check_index(last, "forward");
  invalidate();
  return incremental_forward(last);
}
const Tensor& ComputationGraph::incremental_forward(const Expression& last) { return incremental_forward(last.i); }
const Tensor& ComputationGraph::incremental_forward(VariableIndex last) {
  check_index(last, "incremental_forward");
  if (last >= evaluated_) run_forward(last);
  return fx_[last];
}

const Tensor& ComputationGraph::get_value(VariableIndex i) { return incremental_forward(i); }
const Tensor& ComputationGraph::get_value(const Expression& e) { return incremental_forward(e.i); }

const Tensor& ComputationGraph::get_gradient(const Expression& e) const { return get_gradient(e.i); }
const Tensor& ComputationGraph::get_gradient(VariableIndex i) const {
  check_index(i, "get_gradient");
  if (!has_backward_ || i >= backward_upto_)
    throw std::runtime_error("get_gradient: node " + std::to_string(i) +
                             " has no gradient: call backward() on a loss computed from it first");
  if (grad_[i].v == nullptr)
    throw std::runtime_error("get_gradient: node " + std::to_string(i) + " (" + op_def(nodes_[i].op).name +
                             ") does not lead to the loss through parameters; use backward(loss, true) for "
                             "gradients of constant subgraphs");
  return grad_[i];
}

void ComputationGraph::run_forward(VariableIndex last) {
  if (fx_.size() < nodes_.size()) {
    fx_.resize(nodes_.size());
    aux_.resize(nodes_.size());
  }
  if (evaluated_ == 0) fx_pool_->free_all();
  for (size_t i = evaluated_; i <= last; ++i) {
    forward_node(static_cast<VariableIndex>(i));
    evaluated_ = i + 1;
  }
}

const Tensor* ComputationGraph::gather_arg_values(const NodeRec& r) {
  const VariableIndex* a = args_.data() + r.arg_begin;
  if (arg_scratch_.size() < r.nargs) arg_scratch_.resize(r.nargs);
  for (unsigned k = 0; k < r.nargs; ++k) arg_scratch_[k] = fx_[a[k]];
  return arg_scratch_.data();
}

void ComputationGraph::forward_node(VariableIndex i) {
  const NodeRec& n = nodes_[i];
  const OpDef& def = op_def(n.op);
  const VariableIndex* a = args_.data() + n.arg_begin;
  const Tensor* xs = gather_arg_values(n);
  Tensor& fx = fx_[i];
  fx.d = n.dim;
  fx.device = default_device;
  fx.mem_pool = DeviceMempool::FXS;
  fx.v = (n.flags & kAliasOutput) ? nullptr : fx_pool_->allocate_floats(n.dim.size());
  const AttrView attr{attrs_.data() + n.attr_begin, n.attr_words};
  float* aux = nullptr;
  if (def.aux_floats) aux = fx_pool_->allocate_floats(def.aux_floats(n.dim, ArgDims{nodes_.data(), a, n.nargs}, attr));
  aux_[i] = aux;
  const MemPool::Mark mark = scratch_pool_->mark();
  def.forward(ForwardArgs{xs, n.nargs, fx, attr, aux, *scratch_pool_});
  scratch_pool_->revert(mark);
  if (check_validity_ && !fx.is_valid())
    throw std::runtime_error("NaN or Inf detected in the value of node " + std::to_string(i) + " (" + def.name + " " +
                             n.dim.str() + ")");
}

void ComputationGraph::backward(const Expression& last, bool full) { backward(last.i, full); }

void ComputationGraph::backward(VariableIndex last, bool full) {
  check_index(last, "backward");
  if (nodes_[last].dim.batch_size() != 1)
    throw std::invalid_argument("backward: the loss must be a scalar (per batch element), but node " +
                                std::to_string(last) + " (" + op_def(nodes_[last].op).name + ") has dim " +
                                nodes_[last].dim.str());
  incremental_forward(last);
  const size_t n = last + 1;
  // needs[i]: node i depends on something that wants a gradient (a parameter, or anything when full).
  std::vector<uint8_t>& needs = needs_;
  needs.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const NodeRec& r = nodes_[i];
    if (full || (r.flags & kParameterNode)) {
      needs[i] = !(r.flags & kNoGradient) || (r.flags & kParameterNode);
      continue;
    }
    if (r.flags & kNoGradient) continue;
    const VariableIndex* a = args_.data() + r.arg_begin;
    for (unsigned k = 0; k < r.nargs; ++k)
      if (needs[a[k]]) {
        needs[i] = 1;
        break;
      }
  }
  // Of those, keep the nodes the loss is reached from.
  std::vector<uint8_t>& reached = reached_;
  reached.assign(n, 0);
  reached[last] = needs[last] || full;
  size_t total = 0;
  for (size_t i = n; i-- > 0;) {
    if (!reached[i]) continue;
    total += nodes_[i].dim.size();
    const NodeRec& r = nodes_[i];
    if (r.flags & kNoGradient) continue;
    const VariableIndex* a = args_.data() + r.arg_begin;
    for (unsigned k = 0; k < r.nargs; ++k)
      if (needs[a[k]]) reached[a[k]] = 1;
  }
  grad_.assign(nodes_.size(), Tensor());
  grad_pool_->free_all();
  float* block = grad_pool_->allocate_floats(total);
  std::memset(block, 0, total * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    if (!reached[i]) continue;
    grad_[i] = Tensor(nodes_[i].dim, block, default_device, DeviceMempool::DEDFS);
    block += nodes_[i].dim.size();
  }
  has_backward_ = true;
  backward_upto_ = n;
  if (!reached[last]) return;  // the loss does not depend on any parameter
  {
    Tensor& g = grad_[last];
    for (unsigned k = 0; k < g.d.size(); ++k) g.v[k] = 1.f;
  }
  low_rank_updates_.clear();
  low_rank_head_.assign(n, -1);
  for (size_t i = n; i-- > 0;) {
    if (!reached[i]) continue;
    if (low_rank_head_[i] >= 0) flush_low_rank(static_cast<VariableIndex>(i));
    const NodeRec& r = nodes_[i];
    const OpDef& def = op_def(r.op);
    const AttrView attr{attrs_.data() + r.attr_begin, r.attr_words};
    if (r.flags & kParameterNode) {
      def.param_grad(attr, grad_[i]);
      continue;
    }
    if (!def.backward || (r.flags & kNoGradient)) continue;
    const VariableIndex* a = args_.data() + r.arg_begin;
    const Tensor* xs = gather_arg_values(r);
    for (unsigned k = 0; k < r.nargs; ++k) {
      if (!reached[a[k]]) continue;
      const MemPool::Mark mark = scratch_pool_->mark();
      const LowRankSink sink{&low_rank_updates_, &low_rank_head_[a[k]]};
      def.backward(BackwardArgs{xs, r.nargs, fx_[i], grad_[i], k, grad_[a[k]], attr, aux_[i],
                                *scratch_pool_, &sink});
      scratch_pool_->revert(mark);
    }
  }
}

// Runs the deferred low-rank updates into node i's gradient: one GEMM over the gathered columns.
void ComputationGraph::flush_low_rank(VariableIndex i) {
  const int u = low_rank_head_[i];
  low_rank_head_[i] = -1;
  const LowRankUpdate& first = low_rank_updates_[u];
  const int m = first.m, k = first.k;
  float* dW = grad_[i].v;
  if (first.next < 0) {
    cpu::gemm(false, true, m, k, first.cols, 1.f, first.g, m, first.x, k, 1.f, dW, m);
    return;
  }
  size_t total = 0;
  for (int v = u; v >= 0; v = low_rank_updates_[v].next) total += low_rank_updates_[v].cols;
  const MemPool::Mark mark = scratch_pool_->mark();
  float* G = scratch_pool_->allocate_floats(size_t(m) * total);
  float* X = scratch_pool_->allocate_floats(size_t(k) * total);
  size_t c = 0;
  for (int v = u; v >= 0; v = low_rank_updates_[v].next) {
    const LowRankUpdate& up = low_rank_updates_[v];
    std::memcpy(G + c * m, up.g, sizeof(float) * m * up.cols);
    std::memcpy(X + c * k, up.x, sizeof(float) * k * up.cols);
    c += up.cols;
  }
  cpu::gemm(false, true, m, k, static_cast<int>(total), 1.f, G, m, X, k, 1.f, dW, m);
  scratch_pool_->revert(mark);
}

uint64_t ComputationGraph::batch_signature(VariableIndex i) const {
  check_index(i, "batch_signature");
  const NodeRec& r = nodes_[i];
  const OpDef& def = op_def(r.op);
  if (!def.batch.batchable) return 0;
  // FNV-1a over op, attributes, and per argument either its node id (shared) or its dim.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(r.op);
  mix(r.nargs);
  for (uint32_t w = 0; w < r.attr_words; ++w) mix(attrs_[r.attr_begin + w]);
  const VariableIndex* a = args_.data() + r.arg_begin;
  for (unsigned k = 0; k < r.nargs; ++k) {
    if (def.batch.is_shared(k)) {
      mix(0x5A5A0000ull | a[k]);
    } else {
      const Dim& d = nodes_[a[k]].dim;
      for (unsigned j = 0; j < d.nd; ++j) mix(d.d[j]);
      mix(d.bd);
    }
  }
  return h | 1;  // never 0
}

// "N3 = tanh(N1, N2) {64}"
void ComputationGraph::describe_node(std::ostream& os, VariableIndex i) const {
  const NodeRec& r = nodes_[i];
  os << "N" << i << " = " << op_def(r.op).name << "(";
  const VariableIndex* a = args_.data() + r.arg_begin;
  for (unsigned k = 0; k < r.nargs; ++k) os << (k ? ", " : "") << "N" << a[k];
  os << ") " << r.dim;
}

void ComputationGraph::print_graphviz() const {
  std::ostream& os = std::cerr;
  os << "digraph G {\n  rankdir=LR;\n  nodesep=.05;\n";
  for (VariableIndex i = 0; i < nodes_.size(); ++i) {
    os << "  N" << i << " [label=\"";
    describe_node(os, i);
    os << "\"];\n";
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeRec& r = nodes_[i];
    const VariableIndex* a = args_.data() + r.arg_begin;
    for (unsigned k = 0; k < r.nargs; ++k) os << "  N" << a[k] << " -> N" << i << ";\n";
  }
  os << "}\n";
}

void ComputationGraph::dump(const std::string& filename, bool show_values, bool show_gradients, bool nan_check_only) {
  std::ofstream file;
  std::ostream* os = &std::cerr;
  if (!filename.empty()) {
    file.open(filename);
    if (!file) throw std::runtime_error("ComputationGraph::dump: cannot open " + filename);
    os = &file;
  }
  auto print = [&](const Tensor& t) {
    if (nan_check_only)
      *os << (t.is_valid() ? "ok" : "NaN/Inf");
    else
      *os << t;
  };
  for (VariableIndex i = 0; i < nodes_.size(); ++i) {
    describe_node(*os, i);
    if (show_values && i < evaluated_) {
      *os << " value=";
      print(fx_[i]);
    }
    if (show_gradients && has_backward_ && i < backward_upto_ && grad_[i].v) {
      *os << " grad=";
      print(grad_[i]);
    }
    *os << '\n';
  }
}

// ---- Expression ----
const Tensor& Expression::value() const {
  if (is_stale()) throw std::runtime_error("Attempt to use a stale expression.");
  return pg->get_value(i);
}
const Tensor& Expression::gradient() const {
  if (is_stale()) throw std::runtime_error("Attempt to use a stale expression.");
  return pg->get_gradient(i);
}
const Dim& Expression::dim() const {
  if (is_stale()) throw std::runtime_error("Attempt to use a stale expression.");
  return pg->get_dimension(i);
}

}  // namespace dynet
