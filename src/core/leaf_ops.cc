// The graph's leaves that ComputationGraph::add_* create: data inputs, parameters and lookups. They
// live in the core because the graph's own (DyNet) interface adds them; the other leaves (constants,
// random tensors, one_hot) are ordinary ops in src/ops/input.cc.
#include "core/leaf_ops.h"

#include <algorithm>
#include <cstring>

namespace dynet {
namespace {

Dim attr_dim(const ArgDims&, AttrView a) { return a.as<Dim>(); }
using Xs = const std::vector<Expression>&;
Expression E(ComputationGraph& g, VariableIndex i) { return Expression(&g, i); }
void scale_copy(const float* x, float* y, size_t n, float s) {
  for (size_t k = 0; k < n; ++k) y[k] = x[k] * s;
}
VariableIndex add_lookup_table(ComputationGraph& g, LookupParameter lp, bool is_const);

std::vector<OpSample> input_samples() {
  return {{"batched", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({2, 3}, 2), std::vector<float>(12, 0.5f))); }},
          {"scalar", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(3.f)); }},
          {"wrong_size", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({2, 3}), std::vector<float>(5))); },
           -1, 1, true}};
}
std::vector<OpSample> input_ptr_samples() {
  static const std::vector<float> data(6, 0.25f);
  static const float scalar = 2.f;
  return {{"vector", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({3}, 2), &data)); }},
          {"scalar", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(&scalar)); }},
          {"wrong_size", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({4}), &data)); }, -1, 1, true}};
}
std::vector<OpSample> sparse_input_samples() {
  return {{"sparse", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({4, 2}), {1, 6}, {2.f, 5.f}, 0.5f)); }},
          {"batched", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({3}, 2), {0, 4}, {1.f, 1.f}, 0.5f)); }},
          {"count_mismatch", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({4}), {1, 2}, {2.f}, 0.f)); },
           -1, 1, true},
          {"bad_index", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({4}), {4}, {2.f}, 0.f)); }, -1, 1, true}};
}
// Samples over parameters: the harness checks the parameters' gradients by finite differences.
std::vector<OpSample> param_samples(bool is_const) {
  auto pc = std::make_shared<ParameterCollection>();
  Parameter p = pc->add_parameters({3, 2});
  OpSample::Build b = [p, is_const](ComputationGraph& g, Xs) {
    return E(g, is_const ? g.add_const_parameters(p) : g.add_parameters(p));
  };
  return {{"matrix", {}, b, -1, 1, false, {}, pc}};
}
std::vector<OpSample> lookup_table_samples(bool is_const) {
  auto pc = std::make_shared<ParameterCollection>();
  LookupParameter lp = pc->add_lookup_parameters(4, {3});
  OpSample::Build b = [lp, is_const](ComputationGraph& g, Xs) {
    return E(g, add_lookup_table(g, lp, is_const));
  };
  return {{"table", {}, b, -1, 1, false, {}, pc}};
}
std::vector<OpSample> lookup_samples(bool is_const) {
  auto pc = std::make_shared<ParameterCollection>();
  LookupParameter lp = pc->add_lookup_parameters(5, {3, 2});
  static const unsigned index = 3;
  static const std::vector<unsigned> indices = {4, 0, 4};
  auto lk = [is_const](ComputationGraph& g, LookupParameter p, auto ix) {
    return E(g, is_const ? g.add_const_lookup(p, ix) : g.add_lookup(p, ix));
  };
  return {{"single", {}, [=](ComputationGraph& g, Xs) { return lk(g, lp, 1u); }, -1, 1, false, {}, pc},
          {"batch", {}, [=](ComputationGraph& g, Xs) { return lk(g, lp, std::vector<unsigned>{2, 2, 0}); }, -1, 1,
           false, {}, pc},
          {"pointer", {}, [=](ComputationGraph& g, Xs) { return lk(g, lp, &index); }, -1, 1, false, {}, pc},
          {"pointer_batch", {}, [=](ComputationGraph& g, Xs) { return lk(g, lp, &indices); }, -1, 1, false, {}, pc},
          {"out_of_range", {}, [=](ComputationGraph& g, Xs) { return lk(g, lp, 5u); }, -1, 1, true, {}, pc}};
}
// ---- input: values copied into the node's attributes (Dim, then the floats) ----
void input_fwd(const ForwardArgs& a) {
  std::memcpy(a.fx.v, a.attr.tail<float, Dim>(), a.fx.d.size() * sizeof(float));
}
const OpId k_input = register_op({.name = "input",
                                  .doc = "y = the given values (column-major, batch elements last)",
                                  .shape = attr_dim, .forward = input_fwd,
                                  .batch = {.batchable = true}, .samples = input_samples});

// ---- input from a pointer the caller may update between forwards ----
struct PtrInput {
  Dim d;
  const float* p;
  const std::vector<float>* pv;
};
void ptr_input_fwd(const ForwardArgs& a) {
  const PtrInput& in = a.attr.as<PtrInput>();
  const size_t n = a.fx.d.size();
  if (in.pv) {
    if (in.pv->size() != n)
      throw std::invalid_argument("input: the vector behind the input pointer has " + std::to_string(in.pv->size()) +
                                  " values, but the input's dim " + a.fx.d.str() + " needs " + std::to_string(n));
    std::memcpy(a.fx.v, in.pv->data(), n * sizeof(float));
  } else {
    a.fx.v[0] = *in.p;
  }
}
const OpId k_ptr_input = register_op({.name = "input_ptr",
                                      .doc = "y = *pdata (or *ps), read at every forward",
                                      .shape = attr_dim, .forward = ptr_input_fwd,
                                      .samples = input_ptr_samples});

// ---- sparse input: defdata everywhere, data[k] at ids[k] ----
struct SparseInput {
  Dim d;
  float def;
  uint32_t n;
};
void sparse_input_fwd(const ForwardArgs& a) {
  const SparseInput& s = a.attr.as<SparseInput>();
  const uint32_t* ids = a.attr.tail<uint32_t, SparseInput>();
  const float* vals = reinterpret_cast<const float*>(ids + s.n);
  std::fill(a.fx.v, a.fx.v + a.fx.d.size(), s.def);
  for (uint32_t k = 0; k < s.n; ++k) a.fx.v[ids[k]] = vals[k];
}
const OpId k_sparse_input = register_op({.name = "sparse_input",
                                         .doc = "y[ids[k]] = data[k], y = defdata elsewhere",
                                         .shape = attr_dim, .forward = sparse_input_fwd,
                                         .samples = sparse_input_samples});

// ---- parameters: the node's value is the parameter's storage (no copy) unless weight decay is
// pending (scale != 1): then it is values × scale, written into the node's aux memory. Both are
// decided at forward time, so a graph built before an update still sees the new scale.
template <class Storage>
size_t scaled_copy_floats(const Dim& d, const ArgDims&, AttrView a) {
  return a.as<Storage*>()->current_weight_decay() == 1.f ? 0 : d.size();
}
void alias_or_scale(const ForwardArgs& a, float* values, float scale) {
  if (scale == 1.f) {
    a.fx.v = values;
    return;
  }
  a.fx.v = a.aux;
  scale_copy(values, a.fx.v, a.fx.d.size(), scale);
}
void param_fwd(const ForwardArgs& a) {
  const ParameterStorage* p = a.attr.as<ParameterStorage*>();
  alias_or_scale(a, p->values.v, p->current_weight_decay());
}
void param_grad(AttrView a, const Tensor& g, const float*) { a.as<ParameterStorage*>()->accumulate_grad(g); }
Dim param_shape(const ArgDims&, AttrView a) { return a.as<ParameterStorage*>()->dim; }
const OpId k_parameter = register_op({.name = "parameter",
                                      .doc = "y = p · s (s: the weight-decay scale, 1 without decay; dE/dy accumulates into p's gradient)",
                                      .shape = param_shape, .forward = param_fwd,
                                      .aux_floats = scaled_copy_floats<ParameterStorage>,
                                      .param_grad = param_grad, .samples = [] { return param_samples(false); },
                                      .flags = kAliasOutput | kParameterNode});
const OpId k_const_parameter = register_op({.name = "const_parameter",
                                            .doc = "y = p · s (s: the weight-decay scale; no gradient to p)",
                                            .shape = param_shape, .forward = param_fwd,
                                            .aux_floats = scaled_copy_floats<ParameterStorage>,
                                            .samples = [] { return param_samples(true); }, .flags = kAliasOutput});

// A whole lookup table as one {d..., n} tensor.
void lookup_table_fwd(const ForwardArgs& a) {
  const LookupParameterStorage* p = a.attr.as<LookupParameterStorage*>();
  alias_or_scale(a, p->all_values.v, p->current_weight_decay());
}
Dim lookup_table_shape(const ArgDims&, AttrView a) { return a.as<LookupParameterStorage*>()->all_dim; }
void lookup_table_grad(AttrView a, const Tensor& g, const float*) {
  LookupParameterStorage* p = a.as<LookupParameterStorage*>();
  const size_t rs = p->dim.size();
  for (size_t r = 0; r < p->values.size(); ++r) p->accumulate_grad(r, g.v + size_t(r) * rs);
}
const OpId k_lookup_table = register_op({.name = "lookup_parameter",
                                         .doc = "y = E · s, the whole table as one {d..., n} tensor (s: the weight-decay scale)",
                                         .shape = lookup_table_shape,
                                         .forward = lookup_table_fwd,
                                         .aux_floats = scaled_copy_floats<LookupParameterStorage>,
                                         .param_grad = lookup_table_grad,
                                         .samples = [] { return lookup_table_samples(false); }, .flags = kAliasOutput | kParameterNode});
const OpId k_const_lookup_table = register_op({.name = "const_lookup_parameter",
                                               .doc = "y = E · s, the whole table (no gradient to E)",
                                               .shape = lookup_table_shape,
                                               .forward = lookup_table_fwd,
                                               .aux_floats = scaled_copy_floats<LookupParameterStorage>,
                                               .samples = [] { return lookup_table_samples(true); },
                                               .flags = kAliasOutput});

// ---- lookup: rows gathered into a batch; indices stored inline or read through a pointer ----
struct LookupAttr {
  LookupParameterStorage* p;
  const unsigned* pindex;                  // single index read at forward time
  const std::vector<unsigned>* pindices;  // indices read at forward time
  uint32_t n;                              // inline indices (tail) when both pointers are null
};
struct Indices {
  const unsigned* ids;
  size_t n;
};
Indices lookup_indices(const LookupAttr& l, AttrView a) {
  if (l.pindex) return {l.pindex, 1};
  if (l.pindices) return {l.pindices->data(), l.pindices->size()};
  return {a.tail<unsigned, LookupAttr>(), l.n};
}
template <bool kConst>
Dim lookup_shape(const ArgDims&, AttrView a) {
  const char* op = kConst ? "const_lookup" : "lookup";
  const LookupAttr& l = a.as<LookupAttr>();
  Indices ix = lookup_indices(l, a);
  if (ix.n == 0) op_error(op, "empty list of indices");
  for (size_t k = 0; k < ix.n; ++k)
    if (ix.ids[k] >= l.p->values.size())
      op_error(op, "index " + std::to_string(ix.ids[k]) + " out of range for " + l.p->name + " with " +
                             std::to_string(l.p->values.size()) + " rows");
  Dim d = l.p->dim;
  d.bd = static_cast<unsigned>(ix.n);
  return d;
}
// The rows a lookup read, kept in its aux memory: backward sends the gradient to exactly those rows,
// even when the indices behind a pointer changed (or went out of range) since.
size_t lookup_aux_floats(const Dim& fx, const ArgDims&, AttrView) { return fx.bd; }
void lookup_fwd(const ForwardArgs& a) {
  const LookupAttr& l = a.attr.as<LookupAttr>();
  Indices ix = lookup_indices(l, a.attr);
  const size_t rs = l.p->dim.size();
  if (ix.n != a.fx.d.bd)
    throw std::invalid_argument("lookup: the index vector changed size after the node was created (" +
                                std::to_string(a.fx.d.bd) + " -> " + std::to_string(ix.n) + ")");
  for (size_t k = 0; k < ix.n; ++k) {
    if (ix.ids[k] >= l.p->values.size())
      op_error("lookup", "index " + std::to_string(ix.ids[k]) + " out of range for " + l.p->name + " with " +
                             std::to_string(l.p->values.size()) + " rows");
    std::memcpy(a.fx.v + k * rs, l.p->values[ix.ids[k]].v, rs * sizeof(float));
  }
  if (a.aux) std::memcpy(a.aux, ix.ids, ix.n * sizeof(unsigned));
  const float scale = l.p->current_weight_decay();
  if (scale != 1.f) scale_copy(a.fx.v, a.fx.v, a.fx.d.size(), scale);
}
void lookup_grad(AttrView a, const Tensor& g, const float* aux) {
  LookupParameterStorage* p = a.as<LookupAttr>().p;
  const unsigned* ids = reinterpret_cast<const unsigned*>(aux);
  const size_t rs = p->dim.size();
  for (size_t k = 0; k < g.d.bd; ++k) p->accumulate_grad(ids[k], g.v + k * rs);
}
const OpId k_lookup = register_op({.name = "lookup",
                                   .doc = "y[b] = E[ids[b]] · s (one row per batch element; s: the weight-decay scale)",
                                   .shape = lookup_shape<false>, .forward = lookup_fwd,
                                   .aux_floats = lookup_aux_floats, .param_grad = lookup_grad, .batch = {.batchable = true},
                                   .samples = [] { return lookup_samples(false); }, .flags = kParameterNode});
const OpId k_const_lookup = register_op({.name = "const_lookup",
                                         .doc = "y[b] = E[ids[b]] · s (no gradient to E)",
                                         .shape = lookup_shape<true>, .forward = lookup_fwd,
                                         .batch = {.batchable = true}, .samples = [] { return lookup_samples(true); }});

void check_dim(const char* op, const Dim& d) {
  if (d.checked_size(op) == 0) op_error(op, "dim " + d.str() + " has no elements");
}

template <class A>
VariableIndex add(ComputationGraph& g, OpId op, const A& attr) {
  return g.add_node(op, nullptr, 0, &attr, sizeof(A));
}
template <class H, class T>
VariableIndex add_blob(ComputationGraph& g, OpId op, const AttrWithTail<H, T>& w) {
  return g.add_node(op, nullptr, 0, w.data(), w.bytes());
}

VariableIndex add_lookup_node(ComputationGraph& g, OpId op, const LookupParameter& p, const unsigned* pindex,
                              const std::vector<unsigned>* pindices, const unsigned* ids, size_t n) {
  LookupAttr l{&p.get_storage(), pindex, pindices, static_cast<uint32_t>(n)};
  if (!ids) return add(g, op, l);
  return add_blob(g, op, attr_with_tail(l, ids, n));
}

VariableIndex add_lookup_table(ComputationGraph& g, LookupParameter lp, bool is_const) {
  return add(g, is_const ? k_const_lookup_table : k_lookup_table, &lp.get_storage());
}

}  // namespace

VariableIndex add_lookup_table_node(ComputationGraph& g, LookupParameter lp, bool is_const) {
  return add_lookup_table(g, lp, is_const);
}

// ---- ComputationGraph::add_* ----
VariableIndex ComputationGraph::add_input(real s, Device*) {
  return add_blob(*this, k_input, attr_with_tail(Dim({1}), &s, 1));
}
VariableIndex ComputationGraph::add_input(const real* ps, Device*) {
  if (!ps) throw std::invalid_argument("input: null pointer");
  return add(*this, k_ptr_input, PtrInput{Dim({1}), ps, nullptr});
}
VariableIndex ComputationGraph::add_input(const Dim& d, const std::vector<float>& data, Device*) {
  check_dim("input", d);
  if (data.size() != d.size())
    op_error("input", "dim " + d.str() + " needs " + std::to_string(d.size()) + " values, got " +
                          std::to_string(data.size()));
  return add_blob(*this, k_input, attr_with_tail(d, data.data(), data.size()));
}
VariableIndex ComputationGraph::add_input(const Dim& d, const std::vector<float>* pdata, Device*) {
  check_dim("input", d);
  if (!pdata) throw std::invalid_argument("input_ptr: null data pointer");
  if (pdata->size() != d.size())
    op_error("input_ptr", "dim " + d.str() + " needs " + std::to_string(d.size()) + " values, got " +
                          std::to_string(pdata->size()));
  return add(*this, k_ptr_input, PtrInput{d, nullptr, pdata});
}
VariableIndex ComputationGraph::add_input(const Dim& d, const std::vector<unsigned>& ids,
                                          const std::vector<float>& data, float defdata, Device*) {
  check_dim("sparse_input", d);
  if (ids.size() != data.size())
    op_error("sparse_input", std::to_string(ids.size()) + " indices but " + std::to_string(data.size()) + " values");
  for (size_t i : ids)
    if (i >= d.size()) op_error("sparse_input", "index " + std::to_string(i) + " out of range for " + d.str());
  SparseInput s{d, defdata, static_cast<uint32_t>(ids.size())};
  std::vector<uint32_t> blob(ids.begin(), ids.end());
  for (float v : data) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    blob.push_back(bits);
  }
  return add_blob(*this, k_sparse_input, attr_with_tail(s, blob.data(), blob.size()));
}
VariableIndex ComputationGraph::add_parameters(Parameter p) { return add(*this, k_parameter, &p.get_storage()); }
VariableIndex ComputationGraph::add_const_parameters(Parameter p) {
  return add(*this, k_const_parameter, &p.get_storage());
}
VariableIndex ComputationGraph::add_lookup(LookupParameter p, const unsigned* pindex) {
  if (!pindex) throw std::invalid_argument("lookup: null index pointer");
  return add_lookup_node(*this, k_lookup, p, pindex, nullptr, nullptr, 1);
}
VariableIndex ComputationGraph::add_lookup(LookupParameter p, unsigned index) {
  return add_lookup_node(*this, k_lookup, p, nullptr, nullptr, &index, 1);
}
VariableIndex ComputationGraph::add_lookup(LookupParameter p, const std::vector<unsigned>* pindices) {
  if (!pindices) throw std::invalid_argument("lookup: null index pointer");
  return add_lookup_node(*this, k_lookup, p, nullptr, pindices, nullptr, 0);
}
VariableIndex ComputationGraph::add_lookup(LookupParameter p, const std::vector<unsigned>& indices) {
  return add_lookup_node(*this, k_lookup, p, nullptr, nullptr, indices.data(), indices.size());
}
VariableIndex ComputationGraph::add_const_lookup(LookupParameter p, const unsigned* pindex) {
  if (!pindex) throw std::invalid_argument("const_lookup: null index pointer");
  return add_lookup_node(*this, k_const_lookup, p, pindex, nullptr, nullptr, 1);
}
VariableIndex ComputationGraph::add_const_lookup(LookupParameter p, unsigned index) {
  return add_lookup_node(*this, k_const_lookup, p, nullptr, nullptr, &index, 1);
}
VariableIndex ComputationGraph::add_const_lookup(LookupParameter p, const std::vector<unsigned>* pindices) {
  if (!pindices) throw std::invalid_argument("const_lookup: null index pointer");
  return add_lookup_node(*this, k_const_lookup, p, nullptr, pindices, nullptr, 0);
}
VariableIndex ComputationGraph::add_const_lookup(LookupParameter p, const std::vector<unsigned>& indices) {
  return add_lookup_node(*this, k_const_lookup, p, nullptr, nullptr, indices.data(), indices.size());
}

}  // namespace dynet
