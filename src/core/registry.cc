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
}  // namespace

ComputationGraph& graph_of(const char* op, std::initializer_list<const Expression*> xs) {
  if (xs.size() == 0) throw std::invalid_argument(std::string(op) + ": needs at least one argument");
  ComputationGraph* g = (*xs.begin())->pg;
  for (const Expression* x : xs)
    if (!g || !is_live(*x, g)) bad_expr(op, x, g);
  return *g;
}

ComputationGraph& graph_of(const char* op, const Expression* xs, size_t n) {
  if (n == 0) throw std::invalid_argument(std::string(op) + ": needs at least one argument");
  ComputationGraph* g = xs[0].pg;
  for (size_t k = 0; k < n; ++k)
    if (!g || !is_live(xs[k], g)) bad_expr(op, &xs[k], g);
  return *g;
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
  bool live = g != nullptr;
  for (size_t k = 0; k < n; ++k) {
    live = live && detail::is_live(xs[k], g);
    args[k] = xs[k].i;
  }
  if (!live) detail::graph_of(op_def(op).name, xs, n);  // throws the precise error
  return Expression(g, g->add_node(op, args, static_cast<unsigned>(n), attr, bytes));
}

}  // namespace dynet
