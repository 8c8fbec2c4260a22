// User-defined nodes (DyNet's Node subclasses added with ComputationGraph::add_function): one op,
// "user_node", whose attribute is the Node the graph owns; its shape rule, forward and backward call
// the node's dim_forward, forward and backward.
#include <stdexcept>
#include <string>

#include "core/op.h"
#include "ops/sample.h"

namespace dynet {

// ---- Node ----

Node::~Node() = default;

std::string Node::as_dummy_string() const { return as_string(std::vector<std::string>(args.size(), "a")); }

size_t Node::aux_storage_size() const { return 0; }

namespace {

// Calls f(arguments of element b, b) for each batch element b of a node that only handles one element
// at a time; batch_elem of an unbatched argument is the argument itself.
template <class F>
void for_each_batch_elem(const std::vector<const Tensor*>& xs, unsigned bd, F&& f) {
  std::vector<Tensor> elems(xs.size());
  std::vector<const Tensor*> ptrs(xs.size());
  for (unsigned b = 0; b < bd; ++b) {
    for (size_t k = 0; k < xs.size(); ++k) {
      elems[k] = xs[k]->batch_elem(b);
      ptrs[k] = &elems[k];
    }
    f(ptrs, b);
  }
}

}  // namespace

void Node::forward(const std::vector<const Tensor*>& xs, Tensor& fx) const {
  if (supports_multibatch() || fx.d.bd == 1) {
    forward_impl(xs, fx);
    return;
  }
  for_each_batch_elem(xs, fx.d.bd, [&](const std::vector<const Tensor*>& xs_b, unsigned b) {
    Tensor fx_b = fx.batch_elem(b);
    forward_impl(xs_b, fx_b);
  });
}

void Node::backward(const std::vector<const Tensor*>& xs, const Tensor& fx, const Tensor& dEdf, unsigned i,
                    Tensor& dEdxi) const {
  if (supports_multibatch() || fx.d.bd == 1) {
    backward_impl(xs, fx, dEdf, i, dEdxi);
    return;
  }
  // An unbatched argument's gradient receives the sum over the batch elements (accumulation).
  for_each_batch_elem(xs, fx.d.bd, [&](const std::vector<const Tensor*>& xs_b, unsigned b) {
    Tensor dEdxi_b = dEdxi.batch_elem(b);
    backward_impl(xs_b, fx.batch_elem(b), dEdf.batch_elem(b), i, dEdxi_b);
  });
}

void Node::autobatch_reshape_concatonly(const ComputationGraph&, const std::vector<VariableIndex>&,
                                        const std::vector<int>&, std::vector<const Tensor*>&, Tensor&) const {
  throw std::logic_error("Node::autobatch_reshape_concatonly: user-defined nodes are never autobatched");
}

namespace {

struct UserNodeAttr {
  Node* node;
};
Node& node_of(AttrView a) { return *a.as<UserNodeAttr>().node; }

Dim user_node_shape(const ArgDims& xs, AttrView a) {
  Node& n = node_of(a);
  std::vector<Dim> dims(xs.size());
  for (unsigned k = 0; k < xs.size(); ++k) dims[k] = xs[k];
  try {
    n.dim = n.dim_forward(dims);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("user_node " + n.as_dummy_string() + ": " + e.what());
  }
  return n.dim;
}

size_t user_node_aux(const Dim&, const ArgDims&, AttrView a) {
  return (node_of(a).aux_storage_size() + sizeof(float) - 1) / sizeof(float);
}

std::vector<const Tensor*> pointers(const Tensor* xs, unsigned n) {
  std::vector<const Tensor*> p(n);
  for (unsigned k = 0; k < n; ++k) p[k] = &xs[k];
  return p;
}

void user_node_fwd(const ForwardArgs& a) {
  Node& n = node_of(a.attr);
  n.aux_mem = n.aux_storage_size() ? a.aux : nullptr;
  n.forward(pointers(a.xs, a.n), a.fx);
}

void user_node_bwd(const BackwardArgs& a) {
  Node& n = node_of(a.attr);
  n.aux_mem = n.aux_storage_size() ? a.aux : nullptr;
  n.backward(pointers(a.xs, a.n), a.fx, a.dEdf, a.i, a.dEdxi);
}

// ---- nodes for the op harness's samples ----

void check_arity(const std::vector<Dim>& xs, size_t n, const char* who) {
  if (xs.size() != n) throw std::invalid_argument(std::string(who) + " takes " + std::to_string(n) + " arguments");
}

// y = c·x², one batch element at a time.
struct ScaledSquareNode : Node {
  ScaledSquareNode(const std::initializer_list<VariableIndex>& a, float c) : Node(a), c(c) {}
  Dim dim_forward(const std::vector<Dim>& xs) const override {
    check_arity(xs, 1, "ScaledSquareNode");
    return xs[0];
  }
  std::string as_string(const std::vector<std::string>& a) const override {
    return std::to_string(c) + " * square(" + a[0] + ")";
  }
  void forward_impl(const std::vector<const Tensor*>& xs, Tensor& fx) const override {
    for (unsigned k = 0; k < fx.d.size(); ++k) fx.v[k] = c * xs[0]->v[k] * xs[0]->v[k];
  }
  void backward_impl(const std::vector<const Tensor*>& xs, const Tensor&, const Tensor& dEdf, unsigned,
                     Tensor& dEdxi) const override {
    for (unsigned k = 0; k < dEdxi.d.size(); ++k) dEdxi.v[k] += 2 * c * xs[0]->v[k] * dEdf.v[k];
  }
  float c;
};

// y = x / (1 + |x|) over the whole batch at once, keeping 1 + |x| in aux memory.
struct SoftsignNode : Node {
  explicit SoftsignNode(const std::initializer_list<VariableIndex>& a) : Node(a) {}
  Dim dim_forward(const std::vector<Dim>& xs) const override {
    check_arity(xs, 1, "SoftsignNode");
    return xs[0];
  }
  std::string as_string(const std::vector<std::string>& a) const override { return "softsign(" + a[0] + ")"; }
  bool supports_multibatch() const override { return true; }
  size_t aux_storage_size() const override { return dim.size() * sizeof(float); }
  void forward_impl(const std::vector<const Tensor*>& xs, Tensor& fx) const override {
    float* denom = static_cast<float*>(aux_mem);
    for (unsigned k = 0; k < fx.d.size(); ++k) {
      denom[k] = 1 + std::abs(xs[0]->v[k]);
      fx.v[k] = xs[0]->v[k] / denom[k];
    }
  }
  void backward_impl(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dEdf, unsigned,
                     Tensor& dEdxi) const override {
    const float* denom = static_cast<const float*>(aux_mem);
    for (unsigned k = 0; k < dEdxi.d.size(); ++k) dEdxi.v[k] += dEdf.v[k] / (denom[k] * denom[k]);
  }
};

// y = x1 ⊙ x2 (same dims per batch element; either may be unbatched), one batch element at a time.
struct ProductNode : Node {
  template <class T>
  explicit ProductNode(const T& a) : Node(a) {}
  Dim dim_forward(const std::vector<Dim>& xs) const override {
    check_arity(xs, 2, "ProductNode");
    if (xs[0].single_batch() != xs[1].single_batch()) throw std::invalid_argument("ProductNode: dims differ");
    Dim d = xs[0];
    d.bd = std::max(xs[0].bd, xs[1].bd);
    return d;
  }
  std::string as_string(const std::vector<std::string>& a) const override { return a[0] + " ⊙ " + a[1]; }
  void forward_impl(const std::vector<const Tensor*>& xs, Tensor& fx) const override {
    for (unsigned k = 0; k < fx.d.size(); ++k) fx.v[k] = xs[0]->v[k] * xs[1]->v[k];
  }
  void backward_impl(const std::vector<const Tensor*>& xs, const Tensor&, const Tensor& dEdf, unsigned i,
                     Tensor& dEdxi) const override {
    for (unsigned k = 0; k < dEdxi.d.size(); ++k) dEdxi.v[k] += xs[1 - i]->v[k] * dEdf.v[k];
  }
};

std::vector<OpSample> user_node_samples() {
  using Xs = const std::vector<Expression>&;
  auto square = [](ComputationGraph& g, Xs x) { return Expression(&g, g.add_function<ScaledSquareNode>({x[0].i}, 1.5f)); };
  auto softsign = [](ComputationGraph& g, Xs x) { return Expression(&g, g.add_function<SoftsignNode>({x[0].i})); };
  auto product = [](ComputationGraph& g, Xs x) {
    return Expression(&g, g.add_function<ProductNode>(std::vector<VariableIndex>{x[0].i, x[1].i}));
  };
  auto bad = [](ComputationGraph& g, Xs x) { return Expression(&g, g.add_function<ScaledSquareNode>({x[0].i, x[1].i}, 1.f)); };
  return {{"per_element", {Dim({3, 2}, 3)}, square},
          {"multibatch_aux", {Dim({4}, 2)}, softsign},
          {"broadcast_unbatched", {Dim({3}, 2), Dim({3})}, product},
          {"both_batched", {Dim({2, 2}, 2), Dim({2, 2}, 2)}, product},
          {"wrong_arity", {Dim({3}), Dim({3})}, bad, -1, 1, true}};
}

const OpId k_user_node = register_op({.name = "user_node",
                                      .doc = "y = a user-defined Node (ComputationGraph::add_function)",
                                      .shape = user_node_shape,
                                      .forward = user_node_fwd,
                                      .backward = user_node_bwd,
                                      .aux_floats = user_node_aux,
                                      .batch = {.why_not = "a user-defined Node computes one node (DyNet's "
                                                           "autobatch hooks are not used)"},
                                      .samples = user_node_samples,
                                      .flags = kObjectAttr,
                                      .cpu_only = "a user Node's forward and backward are host code"});

}  // namespace

VariableIndex ComputationGraph::add_function_node(Node* node, Device* device) {
  std::unique_ptr<Node> owned(node);
  if (!node) throw std::invalid_argument("ComputationGraph::add_function_node: null node");
  for (VariableIndex a : node->args) check_index(a, "add_function");
  node->set_cg(this);
  if (device) node->device = device;
  if (!node->device) node->device = default_device;
  const UserNodeAttr attr{node};
  user_nodes_.push_back(std::move(owned));
  try {
    return add_node(k_user_node, node->args.data(), node->arity(), &attr, sizeof attr);
  } catch (...) {
    user_nodes_.pop_back();
    throw;
  }
}

}  // namespace dynet
