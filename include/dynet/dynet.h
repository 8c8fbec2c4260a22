// ComputationGraph: a per-example graph of flat node records, evaluated lazily.
#pragma once

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
typedef float real;
using OpId = uint16_t;
struct Expression;
class MemPool;

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
  size_t nodes = 0, args = 0, attrs = 0, evaluated = 0;
  size_t fx_block = 0, fx_used = 0;
};

class ComputationGraph {
 public:
  ComputationGraph();
  // DyNet compatibility: `batched` selects the autobatching executor.
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
  void print_graphviz() const;
  void dump(const std::string& filename, bool show_values = true, bool show_gradients = true,
            bool nan_check_only = false);

  unsigned get_id() const { return graph_id_; }
  size_t size() const { return nodes_.size(); }
  size_t num_evaluated() const { return evaluated_; }

  // ---- engine interface (used by expr.h and the op definitions) ----
  // Appends a node: shape inference (throws naming the op) + push_back.
  VariableIndex add_node(OpId op, const VariableIndex* args, unsigned nargs, const void* attr = nullptr,
                         size_t attr_bytes = 0);
  const NodeRec& node(VariableIndex i) const { return nodes_[i]; }
  const VariableIndex* node_args(VariableIndex i) const { return args_.data() + nodes_[i].arg_begin; }
  const uint64_t* node_attr(VariableIndex i) const { return attrs_.data() + nodes_[i].attr_begin; }
  // An op-independent hash of what must be equal for two nodes to run as one batch
  // (op, attributes, dims of concatenated arguments, identity of shared arguments); 0 = unbatchable.
  uint64_t batch_signature(VariableIndex i) const;

 private:
  struct Exec;
  void check_index(VariableIndex i, const char* where) const;
  void run_forward(VariableIndex last);
  void forward_node(VariableIndex i);
  // The argument values of r, in arg_scratch_.
  const Tensor* gather_arg_values(const NodeRec& r);
  void describe_node(std::ostream& os, VariableIndex i) const;
  void flush_low_rank(VariableIndex i);

  std::vector<NodeRec> nodes_;
  std::vector<VariableIndex> args_;
  std::vector<uint64_t> attrs_;
  // per node, filled by forward/backward
  std::vector<Tensor> fx_, grad_;
  std::vector<float*> aux_;
  std::vector<Tensor> arg_scratch_;
  std::vector<struct LowRankUpdate> low_rank_updates_;  // deferred weight-gradient updates (see op.h)
  std::vector<int> low_rank_head_;
  std::vector<uint8_t> needs_, reached_;
  std::vector<CGCheckpoint> checkpoints_;
  std::unique_ptr<MemPool> fx_pool_, grad_pool_, scratch_pool_;
  size_t evaluated_ = 0;
  size_t backward_upto_ = 0;  // nodes [0, backward_upto_) may have gradients
  bool has_backward_ = false;
  bool immediate_compute_ = false;
  bool check_validity_ = false;
  bool batched_ = false;
  unsigned graph_id_;
};

}  // namespace dynet
