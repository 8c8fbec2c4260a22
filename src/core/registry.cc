#include <stdexcept>

#include "core/device.h"
#include "core/op.h"
#include "dynet/except.h"

namespace dynet {

// Constant-initialized (std::vector's default constructor is constexpr), so ops registering from
// other files' static initializers never see it unconstructed, and lookups need no guard.
constinit std::vector<OpDef> g_op_registry;

std::vector<OpDef>& op_registry() { return g_op_registry; }

OpId register_op(const OpDef& def) {
  auto& r = op_registry();
  if (!def.name || !def.shape || !def.forward)
    throw std::logic_error("register_op: an op needs a name, a shape rule and a forward");
  if (!def.batch.batchable && !def.batch.why_not)
    throw std::logic_error(std::string("register_op: ") + def.name +
                           " is neither batchable nor says why not (BatchRule::why_not)");
  if (def.batch.merge && !def.batch.key)
    throw std::logic_error(std::string("register_op: ") + def.name + " merges per-instance attributes without a key");
  for (const OpDef& o : r)
    if (std::string(o.name) == def.name) throw std::logic_error(std::string("register_op: duplicate op ") + def.name);
  r.push_back(def);
  const OpId id = static_cast<OpId>(r.size() - 1);
  detail::claim_device_kernels(id);
  return id;
}

OpId op_id(const std::string& name) {
  const auto& r = op_registry();
  for (size_t i = 0; i < r.size(); ++i)
    if (name == r[i].name) return static_cast<OpId>(i);
  throw std::invalid_argument("op_id: no op named '" + name + "'");
}

void op_error(const char* op, const std::string& msg) { throw std::invalid_argument(std::string(op) + ": " + msg); }

namespace detail {
namespace {
// Checks x against the live-graph table first, so a destroyed graph is never dereferenced.
void check_arg(const char* op, const Expression& x, const ComputationGraph* g, uint64_t id) {
  if (x.pg == nullptr) throw std::invalid_argument(std::string(op) + ": uninitialised Expression argument");
  if (x.is_stale())
    throw stale_expression(std::string(op) +
                           ": Attempt to use a stale expression: the graph this expression belongs to was "
                           "cleared or destroyed.");
  if (x.pg != g || x.graph_id != id)
    throw std::invalid_argument(std::string(op) + ": arguments come from different ComputationGraphs");
  if (x.i >= g->size())
    throw std::invalid_argument(std::string(op) + ": expression index out of range (graph was reverted?)");
}
}  // namespace

ComputationGraph& graph_of(const char* op, const Expression* const* xs, size_t n) {
  if (n == 0) throw std::invalid_argument(std::string(op) + ": needs at least one argument");
  check_arg(op, *xs[0], xs[0]->pg, xs[0]->graph_id);
  for (size_t k = 1; k < n; ++k) check_arg(op, *xs[k], xs[0]->pg, xs[0]->graph_id);
  return *xs[0]->pg;
}

ComputationGraph& graph_of(const char* op, std::initializer_list<const Expression*> xs) {
  return graph_of(op, xs.begin(), xs.size());
}

ComputationGraph& graph_of(const char* op, const Expression* xs, size_t n) {
  if (n == 0) throw std::invalid_argument(std::string(op) + ": needs at least one argument");
  for (size_t k = 0; k < n; ++k) check_arg(op, xs[k], xs[0].pg, xs[0].graph_id);
  return *xs[0].pg;
}
}  // namespace detail

Expression make_node_n(OpId op, const Expression* xs, size_t n, const void* attr, size_t bytes) {
  ComputationGraph* g = n ? xs[0].pg : nullptr;
  VariableIndex small[16];
  std::vector<VariableIndex> big;
  VariableIndex* args = small;
  if (n > 16) {
    big.resize(n);
    args = big.data();
  }
  bool live = g != nullptr && detail::graph_is_live(xs[0].graph_id);
  if (live) {
    const size_t size = g->size();
    for (size_t k = 0; k < n; ++k) {
      live = live && detail::is_node_of(xs[k], g, xs[0].graph_id, size);
      args[k] = xs[k].i;
    }
  }
  if (!live) detail::graph_of(op_def(op).name, xs, n);  // throws the precise error
  return Expression(g, g->add_node(op, args, static_cast<unsigned>(n), attr, bytes));
}

}  // namespace dynet
