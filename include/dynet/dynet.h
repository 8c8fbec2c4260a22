// ComputationGraph: a per-example graph of flat node records, evaluated lazily by an executor.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "dynet/devices.h"
#include "dynet/dim.h"
#include "dynet/globals.h"
#include "dynet/init.h"
#include "dynet/model.h"
#include "dynet/tensor.h"

namespace dynet {

typedef unsigned VariableIndex;
using OpId = uint16_t;
struct Expression;
class Executor;

// One node: an op applied to arguments (a span of the graph's argument vector) with
// attributes (a span of the graph's attribute words). Plain data; no allocation per node.
struct NodeRec {
  OpId op;
  uint16_t flags;
  uint32_t nargs;
  uint32_t arg_begin;
  uint32_t attr_begin;
  uint32_t attr_words;
  Dim dim;
};

struct CGCheckpoint {
  size_t nodes = 0, args = 0, attrs = 0;
};

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
  VariableIndex add_lookup(LookupParameter p, const unsigned* pindex);
  VariableIndex add_lookup(LookupParameter p, unsigned index);
  VariableIndex add_lookup(LookupParameter p, const std::vector<unsigned>* pindices);
  VariableIndex add_lookup(LookupParameter p, const std::vector<unsigned>& indices);
  VariableIndex add_const_lookup(LookupParameter p, const unsigned* pindex);
  VariableIndex add_const_lookup(LookupParameter p, unsigned index);
  VariableIndex add_const_lookup(LookupParameter p, const std::vector<unsigned>* pindices);
  VariableIndex add_const_lookup(LookupParameter p, const std::vector<unsigned>& indices);

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

  void set_immediate_compute(bool ic) { immediate_compute_ = ic; }
  void set_check_validity(bool cv) { check_validity_ = cv; }
  bool immediate_compute() const { return immediate_compute_; }
  bool check_validity() const { return check_validity_; }
  void print_graphviz() const;
  void dump(const std::string& filename, bool show_values = true, bool show_gradients = true,
            bool nan_check_only = false);

  // Unique among all graphs ever created in the process; changes on clear().
  uint64_t get_id() const { return graph_id_; }
  size_t size() const { return nodes_.size(); }
  // Number of leading nodes whose values are computed.
  size_t num_evaluated() const;

  // ---- engine interface (used by expr.h and the op definitions) ----
  // Appends a node: shape inference (throws naming the op) + push_back.
  VariableIndex add_node(OpId op, const VariableIndex* args, unsigned nargs, const void* attr = nullptr,
                         size_t attr_bytes = 0);
  const NodeRec& node(VariableIndex i) const { return nodes_[i]; }
  const VariableIndex* node_args(VariableIndex i) const { return args_.data() + nodes_[i].arg_begin; }
  const uint64_t* node_attr(VariableIndex i) const { return attrs_.data() + nodes_[i].attr_begin; }
  const Executor& executor() const { return *exec_; }

 private:
  void check_index(VariableIndex i, const char* where) const;
  void describe_node(std::ostream& os, VariableIndex i) const;

  std::vector<NodeRec> nodes_;
  std::vector<VariableIndex> args_;
  std::vector<uint64_t> attrs_;
  std::vector<CGCheckpoint> checkpoints_;
  std::unique_ptr<Executor> exec_;
  int strategy_ = 0;  // the executor's: 0 simple, 1 agenda, 2 depth
  bool immediate_compute_ = false;
  bool check_validity_ = false;
  uint32_t slot_;
  uint64_t graph_id_;
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
  std::string get_device_name() const { return "CPU"; }
};

}  // namespace dynet
