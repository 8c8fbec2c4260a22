// ComputationGraph: a per-example graph of flat node records, evaluated lazily by an executor.
#pragma once

#if __cplusplus < 201703L
#error "dynet needs C++17 or later: compile with -std=c++17 (DyNet 2.x programs compile unchanged as C++17)"
#endif

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dynet/devices.h"
#include "dynet/dim.h"
#include "dynet/globals.h"
#include "dynet/init.h"
#include "dynet/model.h"
#include "dynet/sig.h"
#include "dynet/tensor.h"

namespace dynet {

typedef unsigned VariableIndex;
using OpId = uint16_t;
struct Expression;
struct Node;
class Executor;

// One node: an op applied to arguments (a span of the graph's argument vector) with
// attributes (a span of the graph's attribute words). Plain data; no allocation per node.
struct NodeRec {
  OpId op;
  uint8_t flags;   // OpFlags
  uint8_t device;  // Device::index of the device the node runs on (0: the CPU)
  uint32_t nargs;
  uint32_t arg_begin;
  uint32_t attr_begin;
  uint32_t attr_words;
  Dim dim;
};

struct CGCheckpoint {
  size_t nodes = 0, args = 0, attrs = 0, user_nodes = 0, merged = 0;
};

// DyNet's constants -1, 1 and 0 as pointers to floats (read-only).
extern float* kSCALAR_MINUSONE;
extern float* kSCALAR_ONE;
extern float* kSCALAR_ZERO;
// How many graphs exist now (DyNet: 0 or 1; here any number may).
int get_number_of_active_graphs();
// The id of the graph created (or cleared) last in this process.
uint64_t get_current_graph_id();

namespace detail {
// Which graph ids are live, readable without touching any graph: a graph holds one slot of this
// table while it exists, and the slot holds the graph's current id (0 when free). An id carries its
// slot in the low kGraphSlotBits bits and a never-repeating generation above them, so an Expression
// of a cleared or destroyed graph is recognised as stale without dereferencing its graph pointer.
constexpr unsigned kGraphSlotBits = 20, kGraphSlotChunkBits = 12;
extern std::atomic<std::atomic<uint64_t>*> g_graph_slot_chunks[1u << (kGraphSlotBits - kGraphSlotChunkBits)];
inline bool graph_is_live(uint64_t id) {
  const uint64_t slot = id & ((1u << kGraphSlotBits) - 1);
  const std::atomic<uint64_t>* chunk = g_graph_slot_chunks[slot >> kGraphSlotChunkBits].load(std::memory_order_acquire);
  return chunk && chunk[slot & ((1u << kGraphSlotChunkBits) - 1)].load(std::memory_order_acquire) == id && id != 0;
}
}  // namespace detail

class ComputationGraph {
 public:
  // The executor follows --dynet-autobatch (DynetParams::autobatch): 0 simple, 1 agenda, 2 depth.
  ComputationGraph();
  // DyNet compatibility: `batched` selects the autobatching executor (strategy 1 unless the flag says 2).
  explicit ComputationGraph(bool batched);
  ~ComputationGraph();
  ComputationGraph(const ComputationGraph&) = delete;
  ComputationGraph& operator=(const ComputationGraph&) = delete;

  // Inputs (DyNet's add_* interface; expr.h's input()/parameter()/lookup() are the usual way in).
  VariableIndex add_input(real s, Device* device = nullptr);
  VariableIndex add_input(const real* ps, Device* device = nullptr);
  VariableIndex add_input(const Dim& d, const std::vector<float>& data, Device* device = nullptr);
  VariableIndex add_input(const Dim& d, const std::vector<float>* pdata, Device* device = nullptr);
  VariableIndex add_input(const Dim& d, const std::vector<unsigned>& ids, const std::vector<float>& data,
                          float defdata = 0.f, Device* device = nullptr);
  VariableIndex add_parameters(Parameter p);
  VariableIndex add_const_parameters(Parameter p);
  // A whole lookup table as one {d..., n} node.
  VariableIndex add_parameters(LookupParameter p);
  VariableIndex add_const_parameters(LookupParameter p);
  VariableIndex add_lookup(LookupParameter p, const unsigned* pindex);
  VariableIndex add_lookup(LookupParameter p, unsigned index);
  VariableIndex add_lookup(LookupParameter p, const std::vector<unsigned>* pindices);
  VariableIndex add_lookup(LookupParameter p, const std::vector<unsigned>& indices);
  VariableIndex add_const_lookup(LookupParameter p, const unsigned* pindex);
  VariableIndex add_const_lookup(LookupParameter p, unsigned index);
  VariableIndex add_const_lookup(LookupParameter p, const std::vector<unsigned>* pindices);
  VariableIndex add_const_lookup(LookupParameter p, const std::vector<unsigned>& indices);

  // A node of a user-defined Node type (DyNet's extension interface, see Node below):
  //   cg.add_function<MyNode>({x.i, y.i}, side_information...)
  // constructs MyNode(arguments, side_information...), which the graph then owns. The names of
  // DyNet's built-in node types (dynet/nodes.h) work here too and build our ops.
  template <class Function>
  VariableIndex add_function(const std::initializer_list<VariableIndex>& arguments);
  template <class Function, typename... Args>
  VariableIndex add_function(const std::initializer_list<VariableIndex>& arguments, Args&&... side_information);
  template <class Function, typename T>
  VariableIndex add_function(const T& arguments);
  template <class Function, typename T, typename... Args>
  VariableIndex add_function(const T& arguments, Args&&... side_information);
  // Takes ownership of `node` (also when it throws) and appends it; its dim_forward checks the
  // arguments' dims.
  VariableIndex add_function_node(Node* node, Device* device = nullptr);

  // Removes every node; expressions made before become stale.
  void clear();
  // clear(), and from now on run with the executor of `strategy` (0 simple, 1 agenda, 2 depth), as a
  // graph constructed now would with that --dynet-autobatch (Python's renew_cg(autobatching=...)).
  void renew(int strategy);
  void checkpoint();
  void revert();

  const Dim& get_dimension(VariableIndex index) const;

  // Evaluates everything up to `last` from scratch.
  const Tensor& forward(const Expression& last);
  const Tensor& forward(VariableIndex last);
  // Evaluates only nodes not yet evaluated, up to `last`.
  const Tensor& incremental_forward(const Expression& last);
  const Tensor& incremental_forward(VariableIndex last);
  const Tensor& get_value(VariableIndex i);
  const Tensor& get_value(const Expression& e);
  const Tensor& get_gradient(VariableIndex i) const;
  const Tensor& get_gradient(const Expression& e) const;
  // Forget computed values; the next forward recomputes from node 0.
  void invalidate();
  // d last / d node for every node leading to `last` (a scalar, per batch element summed).
  // full: also nodes that do not depend on parameters.
  void backward(const Expression& last, bool full = false);
  void backward(VariableIndex last, bool full = false);

  void set_immediate_compute(bool ic) { slow_paths_ = ic ? (slow_paths_ | kImmediatePath) : (slow_paths_ & ~kImmediatePath); }
  void set_check_validity(bool cv) { check_validity_ = cv; }
  // Graphs that batch (autobatch 1 or 2) merge a node into an equal one added since the last forward pass
  // (same op, arguments and attributes; not random): it is computed once. Its gradient is the sum over
  // the merged expressions, so get_gradient() of a merged node throws rather than return it as one
  // expression's. On by default (DYNET_CSE=0 turns the default off); off, every expression is its own node.
  void set_merge_equal_nodes(bool on) { merge_equal_ = on; }
  bool immediate_compute() const { return slow_paths_ & kImmediatePath; }
  bool check_validity() const { return check_validity_; }
  void print_graphviz() const;
  void print_graphviz(std::ostream& os) const;  // the same dot text (the one above writes to std::cerr)
  void dump(const std::string& filename, bool show_values = true, bool show_gradients = true,
            bool nan_check_only = false);

  // Switches the graph to the executor of `strategy` (0 simple, 1 agenda-based autobatching, 2
  // depth-based); values computed so far are forgotten (recomputed on demand). Throws
  // std::invalid_argument for other strategies and std::runtime_error while a checkpoint is set.
  void set_execution_strategy(int strategy);
  int execution_strategy() const { return strategy_; }

  // Unique among all graphs ever created in the process; changes on clear().
  uint64_t get_id() const { return graph_id_; }
  size_t size() const { return nodes_.size(); }
  // Number of leading nodes whose values are computed.
  size_t num_evaluated() const;

  // ---- engine interface (used by expr.h and the op definitions) ----
  // Appends a node: shape inference (throws naming the op) + push_back.
  // The node runs on its arguments' device (all must agree); a node without arguments on default_device.
  VariableIndex add_node(OpId op, const VariableIndex* args, unsigned nargs, const void* attr = nullptr,
                         size_t attr_bytes = 0);
  // The same, on `device` (a leaf, or an op flagged kToDevice); default_device when null.
  VariableIndex add_node_on(Device* device, OpId op, const VariableIndex* args, unsigned nargs,
                            const void* attr = nullptr, size_t attr_bytes = 0);
  const NodeRec& node(VariableIndex i) const { return nodes_[i]; }
  const VariableIndex* node_args(VariableIndex i) const { return args_.data() + nodes_[i].arg_begin; }
  const uint64_t* node_attr(VariableIndex i) const { return attrs_.data() + nodes_[i].attr_begin; }
  const Executor& executor() const { return *exec_; }
  // Keeps what a node reads (a parameter's storage) alive until clear() or destruction: a graph may be
  // evaluated after its collection and every handle of the parameter are gone.
  template <class T>
  void hold(const std::shared_ptr<T>& owner) {
    const void* p = owner.get();
    for (size_t k = held_.size(), end = k > 8 ? k - 8 : 0; k > end; --k)  // a table is looked up many times
      if (held_[k - 1].get() == p) return;
    held_.push_back(owner);
  }

 private:
  void check_index(VariableIndex i, const char* where) const;
  uint8_t node_device(OpId op, const VariableIndex* args, unsigned nargs) const;
  void describe_node(std::ostream& os, VariableIndex i) const;
  // Equal nodes (autobatching graphs, see docs/design.md "Common subexpressions"): the node equal to node i
  // among those added since the last forward pass, else i (entered into the table).
  VariableIndex cse_find_or_add(VariableIndex i);
  uint64_t cse_hash(VariableIndex i) const;
  bool cse_equal(VariableIndex a, VariableIndex b) const;
  void cse_forget();
  void switch_executor(int strategy);
  void mark_empty(NodeRec& r, const char* op, bool takes_empty);

  std::vector<NodeRec> nodes_;
  std::vector<VariableIndex> args_;
  std::vector<uint64_t> attrs_;
  std::vector<CGCheckpoint> checkpoints_;
  std::vector<std::unique_ptr<Node>> user_nodes_;  // the add_function nodes, in creation order
  std::vector<std::shared_ptr<const void>> held_;
  std::unique_ptr<Executor> exec_;
  int strategy_ = 0;  // the executor's: 0 simple, 1 agenda, 2 depth
  // What add_node does besides recording the node, in one byte so that the common case tests it once:
  // compute it at once (set_immediate_compute), and place it on a device and check its arguments' devices
  // (set once the process has a device besides the CPU; until then every node is on the CPU), and check
  // arguments without elements (set once the graph has a node without elements).
  enum : uint8_t { kImmediatePath = 1, kDevicePath = 2, kEmptyPath = 4 };
  uint8_t slow_paths_ = 0;
  bool check_validity_ = false;
  uint32_t slot_;
  bool merge_equal_;
  uint64_t graph_id_;
  Device* next_device_ = nullptr;  // add_node_on's device (on the device path only)
  // cse_find_or_add's table of nodes without arguments, open addressing by hash: generation << 32 |
  // (node + 1); entries of an older generation (before the last forward pass, clear or revert) are empty.
  // Of nodes with arguments, by node: (its newest user as last argument + 1) << 32 | (the previous user of
  // its own last argument + 1). Nodes before cse_start_ are not merged into. Kept with the spare executors.
  std::vector<uint64_t> cse_table_, cse_uses_;
  std::vector<VariableIndex> merged_;  // a node once per expression merged into it (get_gradient refuses them)
  uint32_t cse_start_ = 0;
  uint32_t cse_generation_ = 1;
  size_t cse_count_ = 0;
};

// A node of a graph: {graph, node index, graph id}. Operations on an expression whose graph was
// cleared or destroyed throw instead of reading the graph.
struct Expression {
  ComputationGraph* pg = nullptr;
  VariableIndex i = 0;
  uint64_t graph_id = 0;

  Expression() = default;
  Expression(ComputationGraph* pg, VariableIndex i) : pg(pg), i(i), graph_id(pg->get_id()) {}
  bool is_stale() const { return pg == nullptr || !detail::graph_is_live(graph_id); }
  // Forward up to this expression (incrementally) and return its value.
  const Tensor& value() const;
  const Tensor& gradient() const;
  const Dim& dim() const;
  std::string get_device_name() const;
};

// A node type written by a user: DyNet's extension interface. Subclass it, implement dim_forward
// (check the arguments' dims, throw std::invalid_argument when they do not fit, return the output
// dim), forward_impl (write fx from xs; fx is not initialised), backward_impl (ACCUMULATE
// dE/dxs[i] into dEdxi), as_string and, for scratch memory kept from forward to backward,
// aux_storage_size (bytes, then available as aux_mem), and add it with
// ComputationGraph::add_function<MyNode>(args, ...). Tensors are column-major float arrays on the
// CPU (Tensor::v). A node that does not support_multibatch() sees one batch element at a time (an
// unbatched argument is the same tensor for every element, and its gradient gets their sum).
// Such nodes are never autobatched; the autobatch_* hooks and the inplace states are accepted and
// ignored.
struct Node {
  virtual ~Node();

  virtual Dim dim_forward(const std::vector<Dim>& xs) const = 0;
  virtual std::string as_string(const std::vector<std::string>& args) const = 0;
  virtual std::string as_dummy_string() const;
  virtual size_t aux_storage_size() const;
  virtual void forward_impl(const std::vector<const Tensor*>& xs, Tensor& fx) const = 0;
  virtual void backward_impl(const std::vector<const Tensor*>& xs, const Tensor& fx, const Tensor& dEdf, unsigned i,
                             Tensor& dEdxi) const = 0;
  virtual bool supports_multibatch() const { return false; }
  virtual bool supports_multidevice() const { return false; }

  // forward_impl / backward_impl once, or once per batch element (see above).
  virtual void forward(const std::vector<const Tensor*>& xs, Tensor& fx) const final;
  virtual void backward(const std::vector<const Tensor*>& xs, const Tensor& fx, const Tensor& dEdf, unsigned i,
                        Tensor& dEdxi) const final;

  virtual int autobatch_sig(const ComputationGraph& /*cg*/, SigMap& /*sm*/) const { return 0; }
  virtual std::vector<int> autobatch_concat(const ComputationGraph& /*cg*/) const { return {}; }
  virtual Node* autobatch_pseudo_node(const ComputationGraph& /*cg*/,
                                      const std::vector<VariableIndex>& /*batch_ids*/) const {
    return nullptr;
  }
  virtual void autobatch_reshape(const ComputationGraph& /*cg*/, const std::vector<VariableIndex>& /*batch_ids*/,
                                 const std::vector<int>& /*concat*/, std::vector<const Tensor*>& /*xs*/,
                                 Tensor& /*fx*/) const {}
  // Throws: user nodes are never batched, so nothing may call it.
  void autobatch_reshape_concatonly(const ComputationGraph& cg, const std::vector<VariableIndex>& batch_ids,
                                    const std::vector<int>& concat, std::vector<const Tensor*>& xs, Tensor& fx) const;

  unsigned arity() const { return static_cast<unsigned>(args.size()); }
  void set_cg(ComputationGraph* cg) { cg_ = cg; }
  ComputationGraph* get_cg() const { return cg_; }

  std::vector<VariableIndex> args;
  Dim dim;  // set from dim_forward when the node is added
  Device* device;

  enum class INPLACE_TYPE { NOPE, READ, WRITE };
  INPLACE_TYPE forward_inplace_state = INPLACE_TYPE::NOPE;
  INPLACE_TYPE backward_inplace_state = INPLACE_TYPE::NOPE;
  bool forward_inplaced() const { return forward_inplace_state != INPLACE_TYPE::NOPE; }
  bool backward_inplaced() const { return backward_inplace_state != INPLACE_TYPE::NOPE; }
  bool inplaced() const { return forward_inplaced() || backward_inplaced(); }

 protected:
  Node() : device(nullptr) {}
  explicit Node(const std::initializer_list<VariableIndex>& a) : args(a), device(nullptr) {}
  Node(const std::initializer_list<VariableIndex>& a, Device* d) : args(a), device(d) {}
  template <typename T>
  explicit Node(const T& c) : args(c.begin(), c.end()), device(nullptr) {}

 private:
  ComputationGraph* cg_ = nullptr;

 public:
  // aux_storage_size() bytes kept from forward to backward (null when it is 0).
  mutable void* aux_mem = nullptr;
  bool has_cuda_implemented = true;
};

namespace detail {
// Base of the DyNet built-in node names (dynet/nodes.h): add_function builds our op for them
// instead of constructing a Node.
struct BuiltinNode {};
struct ArgSpan {
  const VariableIndex* data;
  size_t size;
  const VariableIndex* begin() const { return data; }
  const VariableIndex* end() const { return data + size; }
};
inline ArgSpan arg_span(const std::initializer_list<VariableIndex>& a) { return {a.begin(), a.size()}; }
template <class T>
ArgSpan arg_span(const T& a) {
  return {a.data(), a.size()};
}
template <class Function, class T, class... Args>
VariableIndex add_function(ComputationGraph& cg, const T& arguments, Args&&... side_information) {
  if constexpr (std::is_base_of_v<BuiltinNode, Function>)
    return Function::add_to(cg, arguments, std::forward<Args>(side_information)...);
  else
    return cg.add_function_node(new Function(arguments, std::forward<Args>(side_information)...));
}
}  // namespace detail

template <class Function>
VariableIndex ComputationGraph::add_function(const std::initializer_list<VariableIndex>& arguments) {
  return detail::add_function<Function>(*this, arguments);
}
template <class Function, typename... Args>
VariableIndex ComputationGraph::add_function(const std::initializer_list<VariableIndex>& arguments,
                                             Args&&... side_information) {
  return detail::add_function<Function>(*this, arguments, std::forward<Args>(side_information)...);
}
template <class Function, typename T>
VariableIndex ComputationGraph::add_function(const T& arguments) {
  return detail::add_function<Function>(*this, arguments);
}
template <class Function, typename T, typename... Args>
VariableIndex ComputationGraph::add_function(const T& arguments, Args&&... side_information) {
  return detail::add_function<Function>(*this, arguments, std::forward<Args>(side_information)...);
}

}  // namespace dynet
