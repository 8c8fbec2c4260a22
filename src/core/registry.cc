#include <stdexcept>

#include "core/op.h"

namespace dynet {

// Constant-initialized (std::vector's default constructor is constexpr), so ops registering from
// other files' static initializers never see it unconstructed, and lookups need no guard.
constinit std::vector<OpDef> g_op_registry;

std::vector<OpDef>& op_registry() { return g_op_registry; }

OpId register_op(const OpDef& def) {
  auto& r = op_registry();
  if (!def.name || !def.shape || !def.forward)
    throw std::logic_error("register_op: an op needs a name, a shape rule and a forward");
  for (const OpDef& o : r)
    if (std::string(o.name) == def.name) throw std::logic_error(std::string("register_op: duplicate op ") + def.name);
  r.push_back(def);
  return static_cast<OpId>(r.size() - 1);
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
[[noreturn]] void bad_expr(const char* op, const Expression* x, const ComputationGraph* g) {
  if (x->pg == nullptr) throw std::invalid_argument(std::string(op) + ": uninitialised Expression argument");
  if (x->is_stale())
    throw std::runtime_error(std::string(op) + ": Attempt to use a stale expression (its graph was cleared).");
  if (x->pg != g)
    throw std::invalid_argument(std::string(op) + ": arguments come from different ComputationGraphs");
  throw std::invalid_argument(std::string(op) + ": expression index out of range (graph was reverted?)");
}
inline bool live(const Expression* x, const ComputationGraph* g) {
  return x->pg == g && x->graph_id == g->get_id() && x->i < g->size();
}
}  // namespace

ComputationGraph& graph_of(const char* op, std::initializer_list<const Expression*> xs) {
  if (xs.size() == 0) throw std::invalid_argument(std::string(op) + ": needs at least one argument");
  ComputationGraph* g = (*xs.begin())->pg;
  for (const Expression* x : xs)
    if (!g || !live(x, g)) bad_expr(op, x, g);
  return *g;
}

ComputationGraph& graph_of(const char* op, const std::vector<Expression>& xs) {
  if (xs.empty()) throw std::invalid_argument(std::string(op) + ": needs at least one argument");
  ComputationGraph* g = xs[0].pg;
  for (const Expression& x : xs)
    if (!g || !live(&x, g)) bad_expr(op, &x, g);
  return *g;
}
}  // namespace detail

Expression make_node_n(OpId op, const std::vector<Expression>& xs, const void* attr, size_t bytes) {
  ComputationGraph& g = detail::graph_of(op_def(op).name, xs);
  VariableIndex small[16];
  std::vector<VariableIndex> big;
  VariableIndex* args = small;
  if (xs.size() > 16) {
    big.resize(xs.size());
    args = big.data();
  }
  for (size_t k = 0; k < xs.size(); ++k) args[k] = xs[k].i;
  return Expression(&g, g.add_node(op, args, static_cast<unsigned>(xs.size()), attr, bytes));
}

Expression make_node_n(OpId op, std::initializer_list<Expression> xs, const void* attr, size_t bytes) {
  return make_node_n(op, std::vector<Expression>(xs), attr, bytes);
}

}  // namespace dynet
