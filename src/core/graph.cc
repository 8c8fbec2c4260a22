#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>

#include <mutex>
#include <shared_mutex>

#include "core/device.h"
#include "core/executor.h"
#include "core/param_lock.h"
#include "dynet/except.h"
#include "dynet/graph.h"
#include "dynet/model.h"
#include "dynet/timing.h"

namespace dynet {

// ---- graph ids and their liveness (see detail::graph_is_live) ----
namespace detail {
std::atomic<std::atomic<uint64_t>*> g_graph_slot_chunks[1u << (kGraphSlotBits - kGraphSlotChunkBits)];
}  // namespace detail

namespace {
constexpr uint32_t kSlotsPerChunk = 1u << detail::kGraphSlotChunkBits;
constexpr uint32_t kMaxSlots = 1u << detail::kGraphSlotBits;
std::mutex g_slot_mutex;
std::vector<uint32_t> g_free_slots;
uint32_t g_slots_used = 1;  // slot 0 is never handed out, so id 0 is never live
std::atomic<uint64_t> g_next_generation{1};
std::atomic<uint64_t> g_last_id{0};
float g_scalar_constants[3] = {-1.f, 1.f, 0.f};

std::atomic<uint64_t>& slot_entry(uint32_t slot) {
  return detail::g_graph_slot_chunks[slot / kSlotsPerChunk].load(std::memory_order_acquire)[slot % kSlotsPerChunk];
}

uint32_t acquire_slot() {
  std::lock_guard<std::mutex> lock(g_slot_mutex);
  if (!g_free_slots.empty()) {
    const uint32_t s = g_free_slots.back();
    g_free_slots.pop_back();
    return s;
  }
  if (g_slots_used == kMaxSlots)
    throw std::runtime_error("ComputationGraph: more than " + std::to_string(kMaxSlots - 1) +
                             " graphs exist at once");
  const uint32_t s = g_slots_used++;
  auto& chunk = detail::g_graph_slot_chunks[s / kSlotsPerChunk];
  if (!chunk.load(std::memory_order_relaxed)) chunk.store(new std::atomic<uint64_t>[kSlotsPerChunk]{}, std::memory_order_release);
  return s;
}

void release_slot(uint32_t slot) {
  slot_entry(slot).store(0, std::memory_order_release);
  std::lock_guard<std::mutex> lock(g_slot_mutex);
  g_free_slots.push_back(slot);
}

// A fresh id for a graph in `slot`: generations never repeat, so neither do ids.
uint64_t new_id(uint32_t slot) {
  const uint64_t id = (g_next_generation.fetch_add(1, std::memory_order_relaxed) << detail::kGraphSlotBits) | slot;
  slot_entry(slot).store(id, std::memory_order_release);
  g_last_id.store(id, std::memory_order_relaxed);
  return id;
}
}  // namespace

NamedTimer timer;

float* kSCALAR_MINUSONE = &g_scalar_constants[0];
float* kSCALAR_ONE = &g_scalar_constants[1];
float* kSCALAR_ZERO = &g_scalar_constants[2];

int get_number_of_active_graphs() {
  std::lock_guard<std::mutex> lock(g_slot_mutex);
  return static_cast<int>(g_slots_used - 1 - g_free_slots.size());
}

uint64_t get_current_graph_id() { return g_last_id.load(std::memory_order_relaxed); }

namespace {
// Whether graphs that batch merge equal nodes by default (DYNET_CSE=0: not, for A/B runs).
bool cse_default() {
  static const bool on = [] {
    const char* env = std::getenv("DYNET_CSE");
    return !(env && std::string(env) == "0");
  }();
  return on;
}
}  // namespace

ComputationGraph::ComputationGraph() : ComputationGraph(autobatch_flag != 0) {}

ComputationGraph::ComputationGraph(bool batched) : slot_(acquire_slot()), merge_equal_(cse_default()) {
  graph_id_ = new_id(slot_);
  if (detail::g_multi_device) slow_paths_ |= kDevicePath;
  try {
    strategy_ = batched ? (autobatch_flag > 0 ? autobatch_flag : 1) : 0;
    GraphVectors kept;
    exec_ = acquire_executor(*this, strategy_, &kept);
    nodes_ = std::move(kept.nodes);
    args_ = std::move(kept.args);
    attrs_ = std::move(kept.attrs);
    cse_table_ = std::move(kept.cse);
    cse_uses_ = std::move(kept.cse_uses);
    nodes_.reserve(256);
    args_.reserve(512);
  } catch (...) {
    release_slot(slot_);
    throw;
  }
}

ComputationGraph::~ComputationGraph() {
  release_slot(slot_);
  release_executor(std::move(exec_), strategy_, GraphVectors{std::move(nodes_), std::move(args_), std::move(attrs_), std::move(cse_table_), std::move(cse_uses_)});
}

void ComputationGraph::check_index(VariableIndex i, const char* where) const {
  if (i >= nodes_.size())
    throw std::invalid_argument(std::string("ComputationGraph::") + where + ": node " + std::to_string(i) +
                                " does not exist (graph has " + std::to_string(nodes_.size()) + " nodes)");
}

uint8_t ComputationGraph::node_device(OpId op, const VariableIndex* args, unsigned nargs) const {
  const OpDef& def = op_def(op);
  Device* d = (nargs == 0 || (def.flags & kToDevice)) ? (next_device_ ? next_device_ : default_device) : nullptr;
  if (d && detail::device_at(d->index) != d)
    op_error(def.name, "device " + d->name + " is not one of this process's devices (see get_device_manager())");
  uint8_t index = d ? d->index : nodes_[args[0]].device;
  if (!(def.flags & kToDevice))
    for (unsigned k = 0; k < nargs; ++k)
      if (nodes_[args[k]].device != index)
        op_error(def.name, "arguments are on different devices (" + detail::device_at(index)->name + " and " +
                               detail::device_at(nodes_[args[k]].device)->name + "): move them with to_device");
  if (!op_supports(op, *detail::device_at(index)))
    op_error(def.name, def.cpu_only ? "runs on the CPU only (" + std::string(def.cpu_only) + "), not on " +
                                          detail::device_at(index)->name + ": move its arguments with to_device"
                                    : "has no kernels for " + detail::device_at(index)->name);
  return index;
}

VariableIndex ComputationGraph::add_node_on(Device* device, OpId op, const VariableIndex* args, unsigned nargs,
                                            const void* attr, size_t attr_bytes) {
  struct Reset {
    Device*& d;
    ~Reset() { d = nullptr; }
  } reset{next_device_};
  next_device_ = device;
  if (detail::g_multi_device) slow_paths_ |= kDevicePath;  // a device may have appeared since the graph was made
  return add_node(op, args, nargs, attr, attr_bytes);
}


// Node i's words as cse_find_or_add compares them (op, device, arguments, attribute words), hashed.
uint64_t ComputationGraph::cse_hash(VariableIndex i) const {
  const NodeRec& r = nodes_[i];
  auto mix = [](uint64_t h, uint64_t w) { return (h ^ w) * 0x9e3779b97f4a7c15ull; };
  uint64_t h = mix(0x243f6a8885a308d3ull, uint64_t(r.op) << 40 | uint64_t(r.device) << 32 | r.nargs);
  for (unsigned k = 0; k < r.nargs; ++k) h = mix(h, args_[r.arg_begin + k]);
  for (unsigned k = 0; k < r.attr_words; ++k) h = mix(h, attrs_[r.attr_begin + k]);
  return h ^ (h >> 31);
}

bool ComputationGraph::cse_equal(VariableIndex a, VariableIndex b) const {
  const NodeRec &r = nodes_[a], &c = nodes_[b];
  return c.op == r.op && c.device == r.device && c.nargs == r.nargs && c.attr_words == r.attr_words &&
         std::equal(args_.begin() + r.arg_begin, args_.begin() + r.arg_begin + r.nargs, args_.begin() + c.arg_begin) &&
         std::equal(attrs_.begin() + r.attr_begin, attrs_.begin() + r.attr_begin + r.attr_words,
                    attrs_.begin() + c.attr_begin);
}

VariableIndex ComputationGraph::cse_find_or_add(VariableIndex i) {
  const NodeRec& r = nodes_[i];
  if (cse_uses_.size() < nodes_.size()) cse_uses_.resize(std::max<size_t>(1024, 2 * nodes_.size()));
  cse_uses_[i] = 0;
  if (r.nargs > 0) {
    // An equal node has the same newest argument: the nodes of this pass keyed by it, newest first (a
    // list through cse_uses_, recent records in cache where a table probe was a miss). The newest rather
    // than, say, the last: an argument every step shares (the bias of W·h + b) would list every step's
    // node, each compared in vain. Lists left from a reverted or earlier graph only lose merges: every
    // candidate is compared whole, and few are read.
    const VariableIndex* a = args_.data() + r.arg_begin;
    const VariableIndex x = *std::max_element(a, a + r.nargs);
    uint32_t u = uint32_t(cse_uses_[x] >> 32);
    for (int walked = 0; u > cse_start_ && u <= i && walked < 16; u = uint32_t(cse_uses_[u - 1]), ++walked)
      if (cse_equal(u - 1, i)) return u - 1;
    cse_uses_[i] = cse_uses_[x] >> 32;  // no users yet; the previous user of x
    cse_uses_[x] = uint64_t(i + 1) << 32 | uint32_t(cse_uses_[x]);
    return i;
  }
  auto live = [&](uint64_t e) { return (e >> 32) == cse_generation_; };
  if (2 * (cse_count_ + 1) > cse_table_.size()) {  // grown at half load, the current entries rehashed
    std::vector<uint64_t> old;
    try {
      old.resize(std::max<size_t>(1024, 2 * cse_table_.size()));
    } catch (const std::bad_alloc&) {  // no memory for a larger table: the node stays itself
      return i;
    }
    old.swap(cse_table_);
    for (uint64_t e : old) {
      if (!live(e)) continue;
      size_t s = cse_hash(uint32_t(e) - 1) & (cse_table_.size() - 1);
      while (live(cse_table_[s])) s = (s + 1) & (cse_table_.size() - 1);
      cse_table_[s] = e;
    }
  }
  const size_t mask = cse_table_.size() - 1;
  size_t s = cse_hash(i) & mask;
  for (; live(cse_table_[s]); s = (s + 1) & mask)
    if (cse_equal(uint32_t(cse_table_[s]) - 1, i)) return uint32_t(cse_table_[s]) - 1;
  cse_table_[s] = uint64_t(cse_generation_) << 32 | (i + 1);
  ++cse_count_;
  return i;
}

void ComputationGraph::cse_forget() {
  cse_start_ = static_cast<uint32_t>(nodes_.size());
  if (cse_count_ == 0) return;
  cse_count_ = 0;
  if (++cse_generation_ == 0) {  // wrapped: entries of generation 0 would read as current
    std::fill(cse_table_.begin(), cse_table_.end(), 0);
    cse_generation_ = 1;
  }
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
  r.flags = static_cast<uint8_t>(def.flags);  // OpFlags fit in a byte
  r.nargs = nargs;
  r.arg_begin = arg_begin;
  r.attr_begin = attr_begin;
  r.attr_words = attr_words;
  try {
    // The shape rule writes its result straight into the record (guaranteed copy elision).
    new (&r.dim) Dim(def.shape(ArgDims{nodes_.data(), args_.data() + arg_begin, nargs},
                               AttrView{attrs_.data() + attr_begin, attr_words}));
    if (((nargs == 0 || def.makes_empty) && r.dim.size() == 0) || (slow_paths_ & kEmptyPath)) [[unlikely]]
      mark_empty(r, def.name, def.takes_empty);
  } catch (...) {
    nodes_.pop_back();
    args_.resize(arg_begin);
    attrs_.resize(attr_begin);
    throw;
  }
  if (slow_paths_) [[unlikely]] {
    try {
      if (slow_paths_ & kDevicePath) r.device = node_device(op, args, nargs);
      if (slow_paths_ & kImmediatePath) incremental_forward(idx);
    } catch (...) {
      // A node that cannot be computed is not kept: the graph stays usable.
      nodes_.pop_back();
      args_.resize(arg_begin);
      attrs_.resize(attr_begin);
      throw;
    }
  }
  // In a graph that batches, a node equal to one added since the last forward pass (op, device, arguments
  // and attribute bytes; not random, not a user node) is that node: the leaves of trees that share a
  // word are computed once. See docs/design.md ("Common subexpressions").
  if (merge_equal_ && strategy_ > 0 && !(slow_paths_ & kImmediatePath) && !(def.flags & (kRandom | kObjectAttr))) {
    const VariableIndex same = cse_find_or_add(idx);
    if (same != idx) {
      merged_.push_back(same);
      nodes_.pop_back();
      args_.resize(arg_begin);
      attrs_.resize(attr_begin);
      return same;
    }
  }
  return idx;
}

// Flags a node whose value or some argument's has no elements (kHasEmpty), and refuses an argument
// without elements where the value has some, unless the op computes such values (OpDef::takes_empty).
void ComputationGraph::mark_empty(NodeRec& r, const char* op, bool takes_empty) {
  const VariableIndex* a = args_.data() + r.arg_begin;
  const bool empty = r.dim.size() == 0;
  bool any = empty;
  for (unsigned k = 0; k < r.nargs; ++k) {
    const NodeRec& x = nodes_[a[k]];
    if (!(x.flags & kHasEmpty) || x.dim.size() != 0) continue;
    if (!empty && !takes_empty)
      op_error(op, "argument " + std::to_string(k + 1) + " of dim " + x.dim.str() +
                       " has no elements, and this op does not compute a value of dim " + r.dim.str() + " from it");
    any = true;
  }
  if (!any) return;
  r.flags |= kHasEmpty;
  slow_paths_ |= kEmptyPath;
}

const Dim& ComputationGraph::get_dimension(VariableIndex index) const {
  check_index(index, "get_dimension");
  return nodes_[index].dim;
}

void ComputationGraph::clear() {
  slow_paths_ &= ~kEmptyPath;
  nodes_.clear();
  args_.clear();
  attrs_.clear();
  user_nodes_.clear();
  held_.clear();
  checkpoints_.clear();
  merged_.clear();
  cse_forget();
  exec_->invalidate();
  graph_id_ = new_id(slot_);
}

void ComputationGraph::renew(int strategy) {
  clear();
  strategy = std::max(strategy, 0);
  if (strategy != strategy_) switch_executor(strategy);
}

void ComputationGraph::checkpoint() {
  checkpoints_.push_back({nodes_.size(), args_.size(), attrs_.size(), user_nodes_.size(), merged_.size()});
  exec_->checkpoint();
}

void ComputationGraph::revert() {
  if (checkpoints_.empty()) throw std::runtime_error("ComputationGraph::revert: no checkpoint to revert to");
  const CGCheckpoint c = checkpoints_.back();
  checkpoints_.pop_back();
  nodes_.resize(c.nodes);
  args_.resize(c.args);
  attrs_.resize(c.attrs);
  user_nodes_.resize(c.user_nodes);
  merged_.resize(c.merged);
  cse_forget();
  exec_->revert(c.nodes);
}

void ComputationGraph::invalidate() { exec_->invalidate(); }

void graph_optimize(ComputationGraph*) {}

void ComputationGraph::set_execution_strategy(int strategy) {
  if (strategy < 0 || strategy > 2)
    throw std::invalid_argument("ComputationGraph::set_execution_strategy: strategy " + std::to_string(strategy) +
                                " (0 simple, 1 agenda, 2 depth)");
  if (strategy == strategy_) return;
  if (!checkpoints_.empty())
    throw std::runtime_error("ComputationGraph::set_execution_strategy: not while a checkpoint is set");
  switch_executor(strategy);
  cse_forget();
}

// A spare executor of the strategy (what earlier graphs learned: fusion programs, buffer sizes), ours
// kept for later graphs.
void ComputationGraph::switch_executor(int strategy) {
  GraphVectors spare;  // the node vectors kept with the acquired executor go back with ours
  std::unique_ptr<Executor> next = acquire_executor(*this, strategy, &spare);
  release_executor(std::move(exec_), strategy_, std::move(spare));
  exec_ = std::move(next);
  strategy_ = strategy;
}

size_t ComputationGraph::num_evaluated() const { return exec_->num_evaluated(); }

const Tensor& ComputationGraph::forward(const Expression& last) { return forward(last.i); }
const Tensor& ComputationGraph::forward(VariableIndex last) {
  check_index(last, "forward");
  invalidate();
  return incremental_forward(last);
}
const Tensor& ComputationGraph::incremental_forward(const Expression& last) { return incremental_forward(last.i); }
const Tensor& ComputationGraph::incremental_forward(VariableIndex last) {
  check_index(last, "incremental_forward");
  if (const Tensor* v = exec_->computed_value(last)) return *v;
  // A node added from now on is not merged with one computed before: an input_ptr or lookup may read other
  // values by then.
  cse_forget();
  {
    // Parameter values are read under the shared side of the parameter lock: no update runs meanwhile.
    std::shared_lock<detail::ParameterLock> lock(detail::parameter_lock());
    exec_->forward(last);
  }
  return *exec_->computed_value(last);
}

const Tensor& ComputationGraph::get_value(VariableIndex i) { return incremental_forward(i); }
const Tensor& ComputationGraph::get_value(const Expression& e) { return incremental_forward(e.i); }

const Tensor& ComputationGraph::get_gradient(const Expression& e) const { return get_gradient(e.i); }
const Tensor& ComputationGraph::get_gradient(VariableIndex i) const {
  check_index(i, "get_gradient");
  if (const auto k = std::count(merged_.begin(), merged_.end(), i))  // DyNet gives each expression its part
    throw std::runtime_error("get_gradient: node " + std::to_string(i) + " (" + op_def(nodes_[i].op).name + ") is " +
                             std::to_string(k + 1) + " equal expressions that autobatching merged and computed once; "
                             "its gradient is their sum, not one expression's. To read each one's, call "
                             "set_merge_equal_nodes(false) on the graph before building it, or set DYNET_CSE=0");
  return exec_->gradient(i);
}

void ComputationGraph::backward(const Expression& last, bool full) { backward(last.i, full); }

void ComputationGraph::backward(VariableIndex last, bool full) {
  check_index(last, "backward");
  if (nodes_[last].dim.batch_size() != 1)
    throw std::invalid_argument("backward: the loss must be a scalar (per batch element), but node " +
                                std::to_string(last) + " (" + op_def(nodes_[last].op).name + ") has dim " +
                                nodes_[last].dim.str());
  incremental_forward(last);
  std::shared_lock<detail::ParameterLock> lock(detail::parameter_lock());
  exec_->backward(last, full);
}

// "N3 = tanh(N1, N2) {64}"; a parameter's node: "N0 = parameter(/W) {64,32}"
void ComputationGraph::describe_node(std::ostream& os, VariableIndex i) const {
  const NodeRec& r = nodes_[i];
  os << "N" << i << " = " << op_def(r.op).name << "(";
  const VariableIndex* a = args_.data() + r.arg_begin;
  for (unsigned k = 0; k < r.nargs; ++k) os << (k ? ", " : "") << "N" << a[k];
  if (const OpDef& def = op_def(r.op); def.label) os << def.label({attrs_.data() + r.attr_begin, r.attr_words});
  os << ") " << r.dim;
}

void ComputationGraph::print_graphviz() const { print_graphviz(std::cerr); }

void ComputationGraph::print_graphviz(std::ostream& os) const {
  os << "digraph G {\n  rankdir=LR;\n  nodesep=.05;\n";
  for (VariableIndex i = 0; i < nodes_.size(); ++i) {
    std::ostringstream label;
    describe_node(label, i);
    os << "  N" << i << " [label=\"";
    for (char c : label.str()) os << (c == '"' || c == '\\' ? "\\" : "") << c;  // parameter names are the user's
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
    if (const Tensor* v = show_values ? exec_->computed_value(i) : nullptr) {
      *os << " value=";
      print(*v);
    }
    if (show_gradients && exec_->has_gradient(i)) {
      *os << " grad=";
      print(exec_->gradient(i));
    }
    *os << '\n';
  }
}

// ---- Expression: checked against the live-graph table before the graph is touched ----
namespace {
void check_live(const Expression& e) {
  if (e.pg == nullptr) throw std::runtime_error("Expression: uninitialised expression (no graph)");
  if (!e.is_stale()) return;
  throw stale_expression(
      "Attempt to use a stale expression: the graph this expression belongs to was cleared or destroyed.");
}
}  // namespace
const Tensor& Expression::value() const {
  check_live(*this);
  return pg->get_value(i);
}
const Tensor& Expression::gradient() const {
  check_live(*this);
  return pg->get_gradient(i);
}
std::string Expression::get_device_name() const {
  check_live(*this);
  return detail::device_at(pg->node(i).device)->name;
}
const Dim& Expression::dim() const {
  check_live(*this);
  return pg->get_dimension(i);
}

}  // namespace dynet
