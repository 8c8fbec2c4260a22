// The graph's leaves that ComputationGraph::add_* create: data inputs, parameters and lookups, with the
// graph's own (DyNet) functions that add them; the other leaves (constants, random tensors, one_hot) are in
// src/ops/input.cc.
#include "ops/leaves.h"

#include "core/device.h"
#include "core/param_lock.h"
#include "ops/sample.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace dynet {
namespace {

Dim attr_dim(const ArgDims&, AttrView a) { return a.as<Dim>(); }
using Xs = const std::vector<Expression>&;
Expression E(ComputationGraph& g, VariableIndex i) { return Expression(&g, i); }
// The device a kernel's tensor is on (the leaves' kernels serve every device, moving data through it).
Device& device_of(const Tensor& t) { return t.device ? *t.device : *cpu_device(); }
void scale_copy(const float* x, float* y, size_t n, float s) {
  for (size_t k = 0; k < n; ++k) y[k] = x[k] * s;
}
VariableIndex add_lookup_table(ComputationGraph& g, LookupParameter lp, bool is_const);

// A sample whose instance k (of several in one graph) differs in its per-instance attributes.
OpSample per_instance(const char* name, OpSample::Instance f, std::shared_ptr<ParameterCollection> pc = nullptr) {
  return {.name = name, .build = [f](ComputationGraph& g, Xs x) { return f(g, x, 0); }, .params = pc, .instance = f};
}
std::vector<float> ramp(size_t n, unsigned k) {
  std::vector<float> v(n);
  for (size_t t = 0; t < n; ++t) v[t] = 0.1f * float(t) - 0.3f * float(k);
  return v;
}

std::vector<OpSample> input_samples() {
  return {per_instance("instances", [](ComputationGraph& g, Xs, unsigned k) { return E(g, g.add_input(Dim({2, 3}, 2), ramp(12, k))); }),
          {"batched", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({2, 3}, 2), std::vector<float>(12, 0.5f))); }},
          {"scalar", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(3.f)); }},
          {"too_few_values", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({2, 3}), std::vector<float>(5))); },
           -1, 1, true}};
}
std::vector<OpSample> input_ptr_samples() {
  static const std::vector<float> data(6, 0.25f);
  static const float scalar = 2.f;
  static const std::vector<float> per[3] = {ramp(6, 0), ramp(6, 1), ramp(6, 2)};
  static const float scalars[3] = {1.f, -2.f, 0.5f};
  return {per_instance("instances", [](ComputationGraph& g, Xs, unsigned k) { return E(g, g.add_input(Dim({3}, 2), &per[k % 3])); }),
          per_instance("scalar_instances", [](ComputationGraph& g, Xs, unsigned k) { return E(g, g.add_input(&scalars[k % 3])); }),
          {"vector", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({3}, 2), &data)); }},
          {"scalar", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(&scalar)); }},
          {"too_few_values", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({8}), &data)); }, -1, 1, true}};
}
std::vector<OpSample> sparse_input_samples() {
  return {per_instance("instances", [](ComputationGraph& g, Xs, unsigned k) {
            return E(g, g.add_input(Dim({4, 2}), std::vector<unsigned>{k % 8, 7 - k % 8}, {2.f + k, -1.f}, 0.5f));
          }),
          {"sparse", {}, [](ComputationGraph& g, Xs) { return E(g, g.add_input(Dim({4, 2}), {1, 6}, {2.f, 5.f}, 0.5f)); }},
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
  static const unsigned per_index[3] = {4, 0, 2};
  static const std::vector<unsigned> per_indices[3] = {{1, 4}, {0, 0}, {3, 2}};
  return {per_instance("instances", [=](ComputationGraph& g, Xs, unsigned k) { return lk(g, lp, k % 5); }, pc),
          per_instance("batch_instances", [=](ComputationGraph& g, Xs, unsigned k) { return lk(g, lp, per_indices[k % 3]); }, pc),
          per_instance("pointer_instances", [=](ComputationGraph& g, Xs, unsigned k) { return lk(g, lp, &per_index[k % 3]); }, pc),
          per_instance("pointer_batch_instances", [=](ComputationGraph& g, Xs, unsigned k) { return lk(g, lp, &per_indices[k % 3]); }, pc),
          {"single", {}, [=](ComputationGraph& g, Xs) { return lk(g, lp, 1u); }, -1, 1, false, {}, pc},
          {"batch", {}, [=](ComputationGraph& g, Xs) { return lk(g, lp, std::vector<unsigned>{2, 2, 0}); }, -1, 1,
           false, {}, pc},
          {"pointer", {}, [=](ComputationGraph& g, Xs) { return lk(g, lp, &index); }, -1, 1, false, {}, pc},
          {"pointer_batch", {}, [=](ComputationGraph& g, Xs) { return lk(g, lp, &indices); }, -1, 1, false, {}, pc},
          {"out_of_range", {}, [=](ComputationGraph& g, Xs) { return lk(g, lp, 5u); }, -1, 1, true, {}, pc}};
}
// ---- input: values copied into the node's attributes (Dim, then the floats) ----
void input_fwd(const ForwardArgs& a) {
  device_of(a.fx).copy_from_host(a.fx.v, a.attr.tail<float, Dim>(), a.fx.d.size() * sizeof(float));
}
// Batched inputs: one node holding the members' values one after another.
Dim batched(Dim d, unsigned k) {
  d.bd *= k;
  return d;
}
void input_merge(const AttrView* m, unsigned k, const Dim& d, std::vector<uint64_t>& out) {
  const size_t n = d.size();
  float* v = append_attr<float>(out, batched(d, k), n * k);
  for (unsigned j = 0; j < k; ++j) std::memcpy(v + j * n, m[j].tail<float, Dim>(), n * sizeof(float));
}
const OpId k_input = register_op({.name = "input",
                                  .doc = "y = the given values (column-major, batch elements last)",
                                  .shape = attr_dim, .forward = input_fwd,
                                  .batch = {.batchable = true, .key = no_key, .merge = input_merge},
                                  .samples = input_samples});

// ---- input from a pointer the caller may update between forwards ----
struct PtrInput {
  Dim d;
  uint32_t unused = 0;  // no padding: attributes are compared bytewise
  const float* p;
  const std::vector<float>* pv;
};
// The values of input_ptr node `a` (read now); throws if the vector became shorter than the dim.
const float* ptr_input_values(AttrView a, size_t n) {
  const PtrInput& in = a.as<PtrInput>();
  if (in.pv && in.pv->size() < n)  // a longer one gives its first n values, as in DyNet
    throw std::invalid_argument("input: the vector behind the input pointer has " + std::to_string(in.pv->size()) +
                                " values, but the input's dim " + in.d.str() + " needs " + std::to_string(n));
  return in.pv ? in.pv->data() : in.p ? in.p : a.tail<float, PtrInput>();
}
void ptr_input_fwd(const ForwardArgs& a) {
  device_of(a.fx).copy_from_host(a.fx.v, ptr_input_values(a.attr, a.fx.d.size()), a.fx.d.size() * sizeof(float));
}
// Batched: the members' current values, inline after a header without pointers.
void ptr_input_merge(const AttrView* m, unsigned k, const Dim& d, std::vector<uint64_t>& out) {
  const size_t n = d.size();
  float* v = append_attr<float>(out, PtrInput{batched(d, k), 0, nullptr, nullptr}, n * k);
  for (unsigned j = 0; j < k; ++j) std::memcpy(v + j * n, ptr_input_values(m[j], n), n * sizeof(float));
}
const OpId k_ptr_input = register_op({.name = "input_ptr",
                                      .doc = "y = *pdata (or *ps), read at every forward",
                                      .shape = attr_dim, .forward = ptr_input_fwd,
                                      .batch = {.batchable = true, .key = no_key, .merge = ptr_input_merge},
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
  std::vector<float> host;  // the values are made on the host: other devices get a copy
  float* y = a.fx.v;
  if (!detail::host_addressable(a.fx.device)) {
    host.resize(a.fx.d.size());
    y = host.data();
  }
  std::fill(y, y + a.fx.d.size(), s.def);
  for (uint32_t k = 0; k < s.n; ++k) y[ids[k]] = vals[k];
  if (!host.empty()) a.fx.device->copy_from_host(a.fx.v, y, host.size() * sizeof(float));
}
// Members batch when their default value agrees; the batched node lists every member's entries,
// offset to where the member lies.
uint32_t sparse_input_key(AttrView a, uint64_t* out) {
  uint32_t bits;
  std::memcpy(&bits, &a.as<SparseInput>().def, sizeof bits);
  out[0] = bits;
  return 1;
}
void sparse_input_merge(const AttrView* m, unsigned k, const Dim& d, std::vector<uint64_t>& out) {
  uint32_t total = 0;
  for (unsigned j = 0; j < k; ++j) total += m[j].as<SparseInput>().n;
  uint32_t* ids = append_attr<uint32_t>(out, SparseInput{batched(d, k), m[0].as<SparseInput>().def, total}, 2 * size_t(total));
  float* vals = reinterpret_cast<float*>(ids + total);
  for (unsigned j = 0; j < k; ++j) {
    const uint32_t n = m[j].as<SparseInput>().n;
    const uint32_t* src = m[j].tail<uint32_t, SparseInput>();
    for (uint32_t e = 0; e < n; ++e) *ids++ = src[e] + j * d.size();
    std::memcpy(vals, src + n, n * sizeof(float));
    vals += n;
  }
}
const OpId k_sparse_input = register_op({.name = "sparse_input",
                                         .doc = "y[ids[k]] = data[k], y = defdata elsewhere",
                                         .shape = attr_dim, .forward = sparse_input_fwd,
                                         .batch = {.batchable = true, .key = sparse_input_key, .merge = sparse_input_merge},
                                         .samples = sparse_input_samples});

constexpr const char* kAliases = "its value is the parameter's storage: there is nothing to compute";

// ---- parameters: the node's value is the parameter's storage (no copy) unless weight decay is
// pending (scale != 1): then it is values × scale, written into the node's aux memory. Both are
// decided at forward time, so a graph built before an update still sees the new scale. While
// asynchronous training runs (detail::asynchronous_sessions, AsynchronousTraining in dynet/model.h)
// the value is always a copy, taken under the parameter's mutex: updates on other threads then write
// the values under that mutex only. The count is constant during a forward call (it changes under the
// parameter lock's exclusive side), so scaled_copy_floats and alias_or_copy, which run one after the
// other in one forward call, decide alike.
template <class Storage>
size_t scaled_copy_floats(const Dim& d, const ArgDims&, AttrView a) {
  return a.as<Storage*>()->current_weight_decay() == 1.f && !detail::asynchronous_sessions ? 0 : d.size();
}
void alias_or_copy(const ForwardArgs& a, ParameterStorageBase& p, float* values) {
  const bool async = detail::asynchronous_sessions > 0;
  std::unique_lock<std::mutex> lock(p.grad_mutex, std::defer_lock);
  if (async) lock.lock();
  const float scale = p.current_weight_decay();
  if (scale == 1.f && !async) {
    a.fx.v = values;
    return;
  }
  a.fx.v = a.aux;
  if (!detail::host_addressable(a.fx.device)) {
    a.fx.device->copy(a.fx.v, values, a.fx.d.size() * sizeof(float));
    if (scale != 1.f) a.fx.device->scale(a.fx.v, a.fx.d.size(), scale);
  } else if (scale == 1.f) {
    std::memcpy(a.fx.v, values, a.fx.d.size() * sizeof(float));
  } else {
    scale_copy(values, a.fx.v, a.fx.d.size(), scale);
  }
}
// Parameter leaves keep their storage's pointer in the first attribute word; the graph's printouts name it.
template <class Storage>
const std::string& storage_name(AttrView a) {
  return a.as<Storage*>()->name;
}
void param_fwd(const ForwardArgs& a) {
  ParameterStorage* p = a.attr.as<ParameterStorage*>();
  alias_or_copy(a, *p, p->values.v);
}
void param_grad(AttrView a, const Tensor& g, const float*) { a.as<ParameterStorage*>()->accumulate_grad(g); }
Dim param_shape(const ArgDims&, AttrView a) {
  return a.as<ParameterStorage*>()->dim;
}
const OpId k_parameter = register_op({.name = "parameter",
                                      .doc = "y = p · s (s: the weight-decay scale, 1 without decay; dE/dy accumulates into p's gradient)",
                                      .shape = param_shape, .forward = param_fwd,
                                      .aux_floats = scaled_copy_floats<ParameterStorage>,
                                      .param_grad = param_grad, .batch = {.why_not = kAliases},
                                      .samples = [] { return param_samples(false); },
                                      .flags = kAliasOutput | kParameterNode, .label = storage_name<ParameterStorage>});
const OpId k_const_parameter = register_op({.name = "const_parameter",
                                            .doc = "y = p · s (s: the weight-decay scale; no gradient to p)",
                                            .shape = param_shape, .forward = param_fwd,
                                            .aux_floats = scaled_copy_floats<ParameterStorage>,
                                            .batch = {.why_not = kAliases},
                                            .samples = [] { return param_samples(true); }, .flags = kAliasOutput,
                                            .label = storage_name<ParameterStorage>});

// A whole lookup table as one {d..., n} tensor.
void lookup_table_fwd(const ForwardArgs& a) {
  LookupParameterStorage* p = a.attr.as<LookupParameterStorage*>();
  alias_or_copy(a, *p, p->all_values.v);
}
Dim lookup_table_shape(const ArgDims&, AttrView a) {
  return a.as<LookupParameterStorage*>()->all_dim;
}
void lookup_table_grad(AttrView a, const Tensor& g, const float*) { a.as<LookupParameterStorage*>()->accumulate_grad(g); }
const OpId k_lookup_table = register_op({.name = "lookup_parameter",
                                         .doc = "y = E · s, the whole table as one {d..., n} tensor (s: the weight-decay scale)",
                                         .shape = lookup_table_shape,
                                         .forward = lookup_table_fwd,
                                         .aux_floats = scaled_copy_floats<LookupParameterStorage>,
                                         .param_grad = lookup_table_grad, .batch = {.why_not = kAliases},
                                         .samples = [] { return lookup_table_samples(false); }, .flags = kAliasOutput | kParameterNode,
                                         .label = storage_name<LookupParameterStorage>});
const OpId k_const_lookup_table = register_op({.name = "const_lookup_parameter",
                                               .doc = "y = E · s, the whole table (no gradient to E)",
                                               .shape = lookup_table_shape,
                                               .forward = lookup_table_fwd,
                                               .aux_floats = scaled_copy_floats<LookupParameterStorage>,
                                               .batch = {.why_not = kAliases},
                                               .samples = [] { return lookup_table_samples(true); },
                                               .flags = kAliasOutput, .label = storage_name<LookupParameterStorage>});

// ---- lookup: rows gathered into a batch; indices stored inline or read through a pointer ----
struct LookupAttr {
  LookupParameterStorage* p;
  const unsigned* pindex;                  // single index read at forward time
  const std::vector<unsigned>* pindices;  // indices read at forward time
  uint32_t n;                              // inline indices (tail) when both pointers are null
  uint32_t unused = 0;                     // no padding: attributes are compared bytewise
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
// The rows a lookup gathers (on its device: the device's kernels, the rows kept on the host).
void lookup_fwd(const ForwardArgs& a) {
  const LookupAttr& l = a.attr.as<LookupAttr>();
  Indices ix = lookup_indices(l, a.attr);
  if (ix.n != a.fx.d.bd)
    throw std::invalid_argument("lookup: the index vector changed size after the node was created (" +
                                std::to_string(a.fx.d.bd) + " -> " + std::to_string(ix.n) + ")");
  for (size_t k = 0; k < ix.n; ++k)
    if (ix.ids[k] >= l.p->values.size())
      op_error("lookup", "index " + std::to_string(ix.ids[k]) + " out of range for " + l.p->name + " with " +
                             std::to_string(l.p->values.size()) + " rows");
  std::unique_lock<std::mutex> lock(l.p->grad_mutex, std::defer_lock);
  if (detail::asynchronous_sessions) lock.lock();  // asynchronous updates may be writing rows
  Device& dev = device_of(a.fx);
  dev.gather_rows(a.fx.v, l.p->all_values.v, ix.ids, ix.n, l.p->dim.size(), false);
  // (A device's backward reads aux only for the pointer forms: inline indices stay in the attribute.)
  if (a.aux && (detail::host_addressable(&dev) || l.pindex || l.pindices))
    dev.copy_from_host(a.aux, ix.ids, ix.n * sizeof(unsigned));
  const float scale = l.p->current_weight_decay();
  if (scale != 1.f) dev.scale(a.fx.v, a.fx.d.size(), scale);
}
void lookup_grad(AttrView a, const Tensor& g, const float* aux) {
  const LookupAttr& l = a.as<LookupAttr>();
  LookupParameterStorage* p = l.p;
  if (!detail::host_addressable(g.device)) {  // one scatter into the table's gradient
    // Inline indices (a batched lookup's always) are in host memory; those read through a pointer at forward
    // time are read back from aux (a wait for the device).
    std::vector<unsigned> read;
    const unsigned* ids = l.pindex || l.pindices ? nullptr : lookup_indices(l, a).ids;
    if (!ids) {
      read.resize(g.d.bd);
      g.device->copy_to_host(read.data(), aux, read.size() * sizeof(unsigned));
      ids = read.data();
    }
    std::lock_guard<std::mutex> lock(p->grad_mutex);
    g.device->scatter_add_rows(p->all_grads.v, g.v, ids, g.d.bd, p->dim.size());
    p->non_zero_grads.insert(ids, ids + g.d.bd);
    p->nonzero_grad = true;
    return;
  }
  const unsigned* ids = reinterpret_cast<const unsigned*>(aux);
  const size_t rs = p->dim.size();
  for (size_t k = 0; k < g.d.bd; ++k) p->accumulate_grad(ids[k], g.v + k * rs);
}
// Lookups of one table batch; the batched node looks up every member's rows (pointer forms read now).
uint32_t lookup_key(AttrView a, uint64_t* out) {
  out[0] = reinterpret_cast<uint64_t>(a.as<LookupAttr>().p);
  return 1;
}
void lookup_merge(const AttrView* m, unsigned k, const Dim& d, std::vector<uint64_t>& out) {
  const LookupAttr& l0 = m[0].as<LookupAttr>();
  unsigned* ids = append_attr<unsigned>(out, LookupAttr{l0.p, nullptr, nullptr, d.bd * k}, size_t(d.bd) * k);
  for (unsigned j = 0; j < k; ++j) {
    const Indices ix = lookup_indices(m[j].as<LookupAttr>(), m[j]);
    if (ix.n != d.bd)
      throw std::invalid_argument("lookup: the index vector changed size after the node was created (" +
                                  std::to_string(d.bd) + " -> " + std::to_string(ix.n) + ")");
    std::copy(ix.ids, ix.ids + ix.n, ids + size_t(j) * d.bd);
  }
}
constexpr BatchRule kLookupBatch = {.batchable = true, .key = lookup_key, .merge = lookup_merge};
const OpId k_lookup = register_op({.name = "lookup",
                                   .doc = "y[b] = E[ids[b]] · s (one row per batch element; s: the weight-decay scale)",
                                   .shape = lookup_shape<false>, .forward = lookup_fwd,
                                   .aux_floats = lookup_aux_floats, .param_grad = lookup_grad, .batch = kLookupBatch,
                                   .samples = [] { return lookup_samples(false); }, .flags = kParameterNode,
                                   .label = storage_name<LookupParameterStorage>});
const OpId k_const_lookup = register_op({.name = "const_lookup",
                                         .doc = "y[b] = E[ids[b]] · s (no gradient to E)",
                                         .shape = lookup_shape<true>, .forward = lookup_fwd,
                                         .batch = kLookupBatch, .samples = [] { return lookup_samples(true); },
                                         .label = storage_name<LookupParameterStorage>});

template <class A>
VariableIndex add(ComputationGraph& g, OpId op, const A& attr, Device* device = nullptr) {
  A clean = attr;
  return g.add_node_on(device, op, nullptr, 0, &detail::zero_padding(clean), sizeof(A));
}
template <class H, class T>
VariableIndex add_blob(ComputationGraph& g, OpId op, const AttrWithTail<H, T>& w, Device* device = nullptr) {
  return g.add_node_on(device, op, nullptr, 0, w.data(), w.bytes());
}

VariableIndex add_lookup_node(ComputationGraph& g, OpId op, const LookupParameter& p, const unsigned* pindex,
                              const std::vector<unsigned>* pindices, const unsigned* ids, size_t n) {
  LookupAttr l{&p.get_storage(), pindex, pindices, static_cast<uint32_t>(n)};
  g.hold(p.p);
  if (!ids) return add(g, op, l, l.p->all_values.device);
  return add_blob(g, op, attr_with_tail(l, ids, n), l.p->all_values.device);
}

VariableIndex add_lookup_table(ComputationGraph& g, LookupParameter lp, bool is_const) {
  g.hold(lp.p);
  return add(g, is_const ? k_const_lookup_table : k_lookup_table, &lp.get_storage(), lp.get_storage().all_values.device);
}

// Leaves run on every device with the same kernels: their data moves through the Device interface.
const bool kLeafDeviceKernels = [] {
  for (Backend b : {kCudaBackend, kEmulatedBackend}) {
    register_device_kernels(k_input, b, {input_fwd});
    register_device_kernels(k_ptr_input, b, {ptr_input_fwd});
    register_device_kernels(k_sparse_input, b, {sparse_input_fwd});
    register_device_kernels(k_parameter, b, {param_fwd});
    register_device_kernels(k_const_parameter, b, {param_fwd});
    register_device_kernels(k_lookup_table, b, {lookup_table_fwd});
    register_device_kernels(k_const_lookup_table, b, {lookup_table_fwd});
    register_device_kernels(k_lookup, b, {lookup_fwd});
    register_device_kernels(k_const_lookup, b, {lookup_fwd});
  }
  return true;
}();

}  // namespace

VariableIndex add_lookup_table_node(ComputationGraph& g, LookupParameter lp, bool is_const) {
  return add_lookup_table(g, lp, is_const);
}

// ---- ComputationGraph::add_* ----
VariableIndex ComputationGraph::add_input(real s, Device* dev) {
  return add_blob(*this, k_input, attr_with_tail(Dim({1}), &s, 1), dev);
}
VariableIndex ComputationGraph::add_input(const real* ps, Device* dev) {
  if (!ps) throw std::invalid_argument("input: null pointer");
  return add(*this, k_ptr_input, PtrInput{Dim({1}), 0, ps, nullptr}, dev);
}
VariableIndex ComputationGraph::add_input(const Dim& d, const std::vector<float>& data, Device* dev) {
  d.checked_size("input");
  // More values than the dim holds: the first d.size() ones, as DyNet read them (programs pass a buffer).
  if (data.size() < d.size())
    op_error("input", "dim " + d.str() + " needs " + std::to_string(d.size()) + " values, got " +
                          std::to_string(data.size()));
  return add_blob(*this, k_input, attr_with_tail(d, data.data(), d.size()), dev);
}
VariableIndex ComputationGraph::add_input(const Dim& d, const std::vector<float>* pdata, Device* dev) {
  d.checked_size("input");
  if (!pdata) throw std::invalid_argument("input_ptr: null data pointer");
  if (pdata->size() < d.size())
    op_error("input_ptr", "dim " + d.str() + " needs " + std::to_string(d.size()) + " values, got " +
                          std::to_string(pdata->size()));
  return add(*this, k_ptr_input, PtrInput{d, 0, nullptr, pdata}, dev);
}
VariableIndex ComputationGraph::add_input(const Dim& d, const std::vector<unsigned>& ids,
                                          const std::vector<float>& data, float defdata, Device* dev) {
  d.checked_size("sparse_input");
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
  return add_blob(*this, k_sparse_input, attr_with_tail(s, blob.data(), blob.size()), dev);
}
VariableIndex ComputationGraph::add_parameters(Parameter p) {
  hold(p.p);
  return add(*this, k_parameter, &p.get_storage(), p.get_storage().values.device);
}
VariableIndex ComputationGraph::add_const_parameters(Parameter p) {
  hold(p.p);
  return add(*this, k_const_parameter, &p.get_storage(), p.get_storage().values.device);
}
VariableIndex ComputationGraph::add_parameters(LookupParameter p) { return add_lookup_table(*this, p, false); }
VariableIndex ComputationGraph::add_const_parameters(LookupParameter p) { return add_lookup_table(*this, p, true); }
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
