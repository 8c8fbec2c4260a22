// Leaves without arguments that are ordinary ops: constants, one_hot, random tensors; and the expr.h
// functions for every leaf (data inputs, parameters and lookups are defined in leaves.cc).
#include "kernels/device/philox.h"
#include "kernels/device/prims.h"

#ifndef DYNET_CUDA_PASS
#include <cstring>

#include "core/device.h"
#include "ops/leaves.h"
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {

#ifndef DYNET_CUDA_PASS
namespace {
Dim attr_dim(const ArgDims&, AttrView a) { return a.as<Dim>(); }
using ops::Xs;

// Leaves whose attributes are a Dim (the node's own dim, already in the signature) and floats: the
// floats must agree.
template <class A, size_t kFloats>
uint32_t floats_after_dim(AttrView a, uint64_t* out) {
  const float* f = reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.p) + sizeof(Dim));
  for (size_t k = 0; k < kFloats; ++k) {
    uint32_t bits;
    std::memcpy(&bits, f + k, sizeof bits);
    out[k] = bits;
  }
  return kFloats;
}

template <class A>
VariableIndex add(ComputationGraph& g, OpId op, const A& attr, Device* device) {
  A clean = attr;
  return g.add_node_on(device, op, nullptr, 0, &detail::zero_padding(clean), sizeof(A));
}
template <class H, class T>
VariableIndex add_blob(ComputationGraph& g, OpId op, const AttrWithTail<H, T>& w, Device* device) {
  return g.add_node_on(device, op, nullptr, 0, w.data(), w.bytes());
}
}  // namespace
#endif

// ---------------------------------------------------------------------------------------------
// The leaves whose ops are defined in leaves.cc: data inputs, parameters and lookups.
#ifndef DYNET_CUDA_PASS
Expression input(ComputationGraph& g, real s, Device* d) { return Expression(&g, g.add_input(s, d)); }
DYNET_API(input, "input", "input(g, s: payload, device = nullptr)", nullptr, Expression(ComputationGraph&, float, Device*));
Expression input(ComputationGraph& g, const real* ps, Device* d) { return Expression(&g, g.add_input(ps, d)); }
DYNET_API(input, "input_ptr", "input(g, ps: payload, device = nullptr)", "@scalarInput(s, device='')", Expression(ComputationGraph&, const float*, Device*));
Expression input(ComputationGraph& g, const Dim& dim, const std::vector<float>& data, Device* d) {
  return Expression(&g, g.add_input(dim, data, d));
}
DYNET_API(input, "input", "input(g, d, data: payload, device = nullptr)", nullptr, Expression(ComputationGraph&, const Dim&, const std::vector<float>&, Device*));
Expression input(ComputationGraph& g, const Dim& dim, const std::vector<float>* pdata, Device* d) {
  return Expression(&g, g.add_input(dim, pdata, d));
}
DYNET_API(input, "input_ptr", "input(g, d, pdata: payload, device = nullptr)", "@inputTensor(arr, batched=False, device='', reusable_expr=False)", Expression(ComputationGraph&, const Dim&, const std::vector<float>*, Device*));
DYNET_API(input, "input_ptr", nullptr, "@inputVector(v, device='')", Expression(ComputationGraph&, const Dim&, const std::vector<float>*, Device*));
DYNET_API(input, "input_ptr", nullptr, "@vecInput(dim, device='')", Expression(ComputationGraph&, const Dim&, const std::vector<float>*, Device*));
DYNET_API(input, "input_ptr", nullptr, "@inputMatrix(v, d)", Expression(ComputationGraph&, const Dim&, const std::vector<float>*, Device*));
DYNET_API(input, "input_ptr", nullptr, "@matInput(d1, d2)", Expression(ComputationGraph&, const Dim&, const std::vector<float>*, Device*));
Expression input(ComputationGraph& g, const Dim& dim, const std::vector<unsigned>& ids,
                 const std::vector<float>& data, float defdata, Device* d) {
  return Expression(&g, g.add_input(dim, ids, data, defdata, d));
}
DYNET_API(input, "sparse_input", "input(g, d, ids: payload, data: payload, defdata = 0.f, device = nullptr)", "@sparse_inputTensor(idxs, values, shape, batched=False, defval=0, device='')", Expression(ComputationGraph&, const Dim&, const std::vector<unsigned>&, const std::vector<float>&, float, Device*));
Expression parameter(ComputationGraph& g, Parameter p) { return Expression(&g, g.add_parameters(p)); }
DYNET_API(parameter, "parameter", "parameter(g, p)", nullptr, Expression(ComputationGraph&, Parameter));
Expression const_parameter(ComputationGraph& g, Parameter p) { return Expression(&g, g.add_const_parameters(p)); }
DYNET_API(const_parameter, "const_parameter", "const_parameter(g, p)", nullptr, Expression(ComputationGraph&, Parameter));
Expression parameter(ComputationGraph& g, LookupParameter lp) {
  return Expression(&g, add_lookup_table_node(g, lp, false));
}
DYNET_API(parameter, "parameter", "parameter(g, lp)", nullptr, Expression(ComputationGraph&, LookupParameter));
Expression const_parameter(ComputationGraph& g, LookupParameter lp) {
  return Expression(&g, add_lookup_table_node(g, lp, true));
}
DYNET_API(const_parameter, "const_parameter", "const_parameter(g, lp)", nullptr, Expression(ComputationGraph&, LookupParameter));
Expression lookup(ComputationGraph& g, LookupParameter p, unsigned index) {
  return Expression(&g, g.add_lookup(p, index));
}
DYNET_API(lookup, "lookup", "lookup(g, p, index: payload)", nullptr, Expression(ComputationGraph&, LookupParameter, unsigned));
Expression lookup(ComputationGraph& g, LookupParameter p, const unsigned* pindex) {
  return Expression(&g, g.add_lookup(p, pindex));
}
DYNET_API(lookup, "lookup", "lookup(g, p, pindex: payload)", "lookup(p, index=0, update=True)", Expression(ComputationGraph&, LookupParameter, const unsigned*));
Expression lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>& indices) {
  return Expression(&g, g.add_lookup(p, indices));
}
DYNET_API(lookup, "lookup", "lookup(g, p, indices: payload)", nullptr, Expression(ComputationGraph&, LookupParameter, const std::vector<unsigned>&));
Expression lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>* pindices) {
  return Expression(&g, g.add_lookup(p, pindices));
}
DYNET_API(lookup, "lookup", "lookup(g, p, pindices: payload)", "lookup_batch(p, indices, update=True)", Expression(ComputationGraph&, LookupParameter, const std::vector<unsigned>*));
Expression const_lookup(ComputationGraph& g, LookupParameter p, unsigned index) {
  return Expression(&g, g.add_const_lookup(p, index));
}
DYNET_API(const_lookup, "const_lookup", "const_lookup(g, p, index: payload)", nullptr, Expression(ComputationGraph&, LookupParameter, unsigned));
Expression const_lookup(ComputationGraph& g, LookupParameter p, const unsigned* pindex) {
  return Expression(&g, g.add_const_lookup(p, pindex));
}
DYNET_API(const_lookup, "const_lookup", "const_lookup(g, p, pindex: payload)", "lookup(p, index=0, update=False)", Expression(ComputationGraph&, LookupParameter, const unsigned*));
Expression const_lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>& indices) {
  return Expression(&g, g.add_const_lookup(p, indices));
}
DYNET_API(const_lookup, "const_lookup", "const_lookup(g, p, indices: payload)", nullptr, Expression(ComputationGraph&, LookupParameter, const std::vector<unsigned>&));
Expression const_lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>* pindices) {
  return Expression(&g, g.add_const_lookup(p, pindices));
}
DYNET_API(const_lookup, "const_lookup", "const_lookup(g, p, pindices: payload)", "lookup_batch(p, indices, update=False)", Expression(ComputationGraph&, LookupParameter, const std::vector<unsigned>*));
#endif

// ---------------------------------------------------------------------------------------------
// constant and one_hot: computed on the host, on other devices too (on_host, kLeafDeviceKernels).
#ifndef DYNET_CUDA_PASS
namespace {
// ---- constant ----
struct ConstAttr {
  Dim d;
  float value;
};
void constant_fwd(const ForwardArgs& a) { cpu::arr(a.fx).setConstant(a.attr.as<ConstAttr>().value); }
std::vector<OpSample> constant_samples() {
  return {{"ones", {}, [](ComputationGraph& g, Xs) { return ones(g, Dim({2, 2}, 3)); }},
          {"constant", {}, [](ComputationGraph& g, Xs) { return constant(g, Dim({3}), 1.5f); }},
          {"no_elements", {}, [](ComputationGraph& g, Xs) { return zeros(g, Dim({3, 0})); }}};
}
const OpId k_constant = register_op({.name = "constant",
                                     .doc = "y = c everywhere (zeros, ones, constant)",
                                     .shape = attr_dim, .forward = constant_fwd,
                                     .batch = {.batchable = true, .key = floats_after_dim<ConstAttr, 1>},
                                     .samples = constant_samples});

// ---- one_hot: unit vectors e_{ids[b]} of length d, one per batch element ----
struct OneHotAttr {
  uint32_t d, n;  // vector length, number of indices (they follow in the tail)
};
Dim one_hot_shape(const ArgDims&, AttrView a) {
  const OneHotAttr& h = a.as<OneHotAttr>();
  const uint32_t* ids = a.tail<uint32_t, OneHotAttr>();
  if (h.d == 0) op_error("one_hot", "the vector length d must be >= 1");
  if (h.n == 0) op_error("one_hot", "empty index list");
  for (uint32_t k = 0; k < h.n; ++k)
    if (ids[k] >= h.d)
      op_error("one_hot", "index " + std::to_string(ids[k]) + " out of range for vectors of length " + std::to_string(h.d));
  return Dim({h.d}, h.n);
}
void one_hot_fwd(const ForwardArgs& a) {
  const OneHotAttr& h = a.attr.as<OneHotAttr>();
  const uint32_t* ids = a.attr.tail<uint32_t, OneHotAttr>();
  cpu::arr(a.fx).setZero();
  for (uint32_t b = 0; b < h.n; ++b) a.fx.v[size_t(b) * h.d + ids[b]] = 1.f;
}
// Members of one length batch; the batched node sets every member's indices.
uint32_t one_hot_key(AttrView a, uint64_t* out) {
  out[0] = a.as<OneHotAttr>().d;
  return 1;
}
void one_hot_merge(const AttrView* m, unsigned k, const Dim& d, std::vector<uint64_t>& out) {
  const uint32_t n = m[0].as<OneHotAttr>().n;
  uint32_t* ids = append_attr<uint32_t>(out, OneHotAttr{d.rows(), n * k}, size_t(n) * k);
  for (unsigned j = 0; j < k; ++j) std::memcpy(ids + size_t(j) * n, m[j].tail<uint32_t, OneHotAttr>(), n * sizeof(uint32_t));
}
std::vector<OpSample> one_hot_samples() {
  static const std::vector<unsigned> per[3] = {{3, 0}, {1, 1}, {2, 3}};
  return {{.name = "instances", .build = [](ComputationGraph& g, Xs) { return one_hot(g, 4, per[0]); },
           .instance = [](ComputationGraph& g, Xs, unsigned k) { return one_hot(g, 4, per[k % 3]); }},
          {"single", {}, [](ComputationGraph& g, Xs) { return one_hot(g, 5, 2); }},
          {"batch", {}, [](ComputationGraph& g, Xs) { return one_hot(g, 4, std::vector<unsigned>{3, 0, 3}); }},
          {"out_of_range", {}, [](ComputationGraph& g, Xs) { return one_hot(g, 3, 3); }, -1, 1, true},
          {"empty", {}, [](ComputationGraph& g, Xs) { return one_hot(g, 3, std::vector<unsigned>{}); }, -1, 1, true},
          {"zero_length", {}, [](ComputationGraph& g, Xs) { return one_hot(g, 0, 0); }, -1, 1, true}};
}
const OpId k_one_hot = register_op({.name = "one_hot",
                                    .doc = "y[b] = e_{ids[b]} ∈ R^d (1 at ids[b], 0 elsewhere)",
                                    .shape = one_hot_shape,
                                    .forward = one_hot_fwd,
                                    .batch = {.batchable = true, .key = one_hot_key, .merge = one_hot_merge},
                                    .samples = one_hot_samples});

// On other devices these leaves make their values on the host, with the CPU's kernel, and copy them over:
// one kernel for every backend.
template <void (*kCpu)(const ForwardArgs&)>
void on_host(const ForwardArgs& a) {
  std::vector<float> host(a.fx.d.size());
  Tensor h(a.fx.d, host.data(), cpu_device());
  kCpu(ForwardArgs{.xs = a.xs, .n = a.n, .fx = h, .attr = a.attr, .aux = nullptr, .scratch = a.scratch});
  a.fx.device->copy_from_host(a.fx.v, host.data(), host.size() * sizeof(float));
}
const bool kLeafDeviceKernels = [] {
  for (Backend b : {kCudaBackend, kEmulatedBackend}) {
    register_device_kernels(k_constant, b, {on_host<constant_fwd>});
    register_device_kernels(k_one_hot, b, {on_host<one_hot_fwd>});
  }
  return true;
}();
}  // namespace
Expression constant(ComputationGraph& g, const Dim& d, float val, Device* device) {
  d.checked_size("constant");
  return Expression(&g, add(g, k_constant, ConstAttr{d, val}, device));
}
DYNET_API(constant, "constant", "constant(g, d, val, device = nullptr)", "constant(dim, val, batch_size=1)", Expression(ComputationGraph&, const Dim&, float, Device*));
Expression one_hot(ComputationGraph& g, unsigned d, unsigned idx, Device* device) {
  return Expression(&g, add_blob(g, k_one_hot, attr_with_tail(OneHotAttr{d, 1}, &idx, 1), device));
}
DYNET_API(one_hot, "one_hot", "one_hot(g, d, idx: payload, device = nullptr)", "one_hot(d, idx, device='')", Expression(ComputationGraph&, unsigned, unsigned, Device*));
Expression one_hot(ComputationGraph& g, unsigned d, const std::vector<unsigned>& ids, Device* device) {
  const OneHotAttr h{d, static_cast<uint32_t>(ids.size())};
  return Expression(&g, add_blob(g, k_one_hot, attr_with_tail(h, ids.data(), ids.size()), device));
}
DYNET_API(one_hot, "one_hot", "one_hot(g, d, ids: payload, device = nullptr)", "one_hot(d, idx, device='')", Expression(ComputationGraph&, unsigned, const std::vector<unsigned>&, Device*));
Expression zeros(ComputationGraph& g, const Dim& d, Device* dev) { return constant(g, d, 0.f, dev); }
DYNET_API(zeros, "constant", "zeros(g, d, device = nullptr)", "zeros(dim, batch_size=1)", Expression(ComputationGraph&, const Dim&, Device*));
Expression zeroes(ComputationGraph& g, const Dim& d, Device* dev) { return constant(g, d, 0.f, dev); }
DYNET_API(zeroes, "constant", "zeroes(g, d, device = nullptr)", "zeroes(dim, batch_size=1)", Expression(ComputationGraph&, const Dim&, Device*));
Expression ones(ComputationGraph& g, const Dim& d, Device* dev) { return constant(g, d, 1.f, dev); }
DYNET_API(ones, "constant", "ones(g, d, device = nullptr)", "ones(dim, batch_size=1)", Expression(ComputationGraph&, const Dim&, Device*));
#endif

// ---------------------------------------------------------------------------------------------
// ---- random tensors: one kernel per distribution for the CPU and every device (kernels/device/philox.h) ----
namespace {
struct RandomAttr {
  Dim d;
  float a, b;
};
template <class Dist>
struct RandomFill {
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const RandomAttr& r = a.attr.as<RandomAttr>();
    rng::fill<P>(a.fx.device, a.scratch, a.fx.v, a.fx.d.size(), a.members, Dist{r.a, r.b});
  }
};
// random_normal: (mean, stddev); random_bernoulli: (p, scale); random_uniform: [a, b); random_gumbel: (mu, beta).
DYNET_DEVICE_FORWARD("random_normal", RandomFill<rng::Normal>::fwd);
DYNET_DEVICE_FORWARD("random_bernoulli", RandomFill<rng::Bernoulli>::fwd);
DYNET_DEVICE_FORWARD("random_uniform", RandomFill<rng::Uniform>::fwd);
DYNET_DEVICE_FORWARD("random_gumbel", RandomFill<rng::Gumbel>::fwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
std::vector<OpSample> random_samples(Expression (*f)(ComputationGraph&, const Dim&), Expression (*bad)(ComputationGraph&)) {
  return {{"batched", {}, [f](ComputationGraph& g, Xs) { return f(g, Dim({3, 2}, 2)); }},
          {"bad", {}, [bad](ComputationGraph& g, Xs) { return bad(g); }, -1, 1, true}};
}

constexpr auto random_normal_fwd = RandomFill<rng::Normal>::fwd<dev::HostPrims>;
constexpr auto random_bernoulli_fwd = RandomFill<rng::Bernoulli>::fwd<dev::HostPrims>;
constexpr auto random_uniform_fwd = RandomFill<rng::Uniform>::fwd<dev::HostPrims>;
constexpr auto random_gumbel_fwd = RandomFill<rng::Gumbel>::fwd<dev::HostPrims>;
// Members draw their own values; the parameters must agree.
constexpr BatchRule kRandomBatch = {.batchable = true, .key = floats_after_dim<RandomAttr, 2>};
const OpId k_random_normal = register_op({.name = "random_normal",
                                          .doc = "y ~ N(mean, stddev²) per value",
                                          .shape = attr_dim, .forward = random_normal_fwd, .batch = kRandomBatch,
                                          .samples = [] { return random_samples([](ComputationGraph& g, const Dim& d) { return random_normal(g, d, 0.f, 2.f); }, [](ComputationGraph& g) { return random_normal(g, Dim({2}), 0.f, -1.f); }); }, .flags = kRandom | kNoGradient});
const OpId k_random_bernoulli = register_op({.name = "random_bernoulli",
                                             .doc = "y = scale with probability p, else 0, per value",
                                             .shape = attr_dim,
                                             .forward = random_bernoulli_fwd, .batch = kRandomBatch, .samples = [] { return random_samples([](ComputationGraph& g, const Dim& d) { return random_bernoulli(g, d, 0.3f, 2.f); }, [](ComputationGraph& g) { return random_bernoulli(g, Dim({2}), 1.5f); }); },
                                             .flags = kRandom | kNoGradient});
const OpId k_random_uniform = register_op({.name = "random_uniform",
                                           .doc = "y ~ U(left, right) per value",
                                           .shape = attr_dim,
                                           .forward = random_uniform_fwd, .batch = kRandomBatch, .samples = [] { return random_samples([](ComputationGraph& g, const Dim& d) { return random_uniform(g, d, -1.f, 2.f); }, [](ComputationGraph& g) { return random_uniform(g, Dim({2}), 1.f, 1.f); }); },
                                           .flags = kRandom | kNoGradient});
const OpId k_random_gumbel = register_op({.name = "random_gumbel",
                                          .doc = "y = μ - β log(-log u), u ~ U(0, 1) per value",
                                          .shape = attr_dim, .forward = random_gumbel_fwd, .batch = kRandomBatch,
                                          .samples = [] { return random_samples([](ComputationGraph& g, const Dim& d) { return random_gumbel(g, d); }, [](ComputationGraph& g) { return random_gumbel(g, Dim({2}), 0.f, 0.f); }); }, .flags = kRandom | kNoGradient});
}  // namespace
Expression random_normal(ComputationGraph& g, const Dim& d, float mean, float stddev, Device* device) {
  d.checked_size("random_normal");
  if (!(stddev >= 0)) op_error("random_normal", "stddev must be >= 0, got " + std::to_string(stddev));
  return Expression(&g, add(g, k_random_normal, RandomAttr{d, mean, stddev}, device));
}
DYNET_API(random_normal, "random_normal", "random_normal(g, d, mean = 0.f, stddev = 1.f, device = nullptr)", "random_normal(dim, mean=0.0, stddev=1.0, batch_size=1)", Expression(ComputationGraph&, const Dim&, float, float, Device*));
Expression random_bernoulli(ComputationGraph& g, const Dim& d, float p, float scale, Device* device) {
  d.checked_size("random_bernoulli");
  if (!(p >= 0 && p <= 1)) op_error("random_bernoulli", "p must be in [0, 1], got " + std::to_string(p));
  return Expression(&g, add(g, k_random_bernoulli, RandomAttr{d, p, scale}, device));
}
DYNET_API(random_bernoulli, "random_bernoulli", "random_bernoulli(g, d, p, scale = 1.0f, device = nullptr)", "random_bernoulli(dim, p, scale=1.0, batch_size=1)", Expression(ComputationGraph&, const Dim&, float, float, Device*));
Expression random_uniform(ComputationGraph& g, const Dim& d, float left, float right, Device* device) {
  d.checked_size("random_uniform");
  if (!(left < right))
    op_error("random_uniform", "needs left < right, got [" + std::to_string(left) + ", " + std::to_string(right) + "]");
  return Expression(&g, add(g, k_random_uniform, RandomAttr{d, left, right}, device));
}
DYNET_API(random_uniform, "random_uniform", "random_uniform(g, d, left, right, device = nullptr)", "random_uniform(dim, left, right, batch_size=1)", Expression(ComputationGraph&, const Dim&, float, float, Device*));
Expression random_gumbel(ComputationGraph& g, const Dim& d, float mu, float beta, Device* device) {
  d.checked_size("random_gumbel");
  if (!(beta > 0)) op_error("random_gumbel", "beta must be > 0, got " + std::to_string(beta));
  return Expression(&g, add(g, k_random_gumbel, RandomAttr{d, mu, beta}, device));
}
DYNET_API(random_gumbel, "random_gumbel", "random_gumbel(g, d, mu = 0.0f, beta = 1.0f, device = nullptr)", "random_gumbel(dim, mu=0.0, beta=1.0, batch_size=1)", Expression(ComputationGraph&, const Dim&, float, float, Device*));
#endif

}  // namespace dynet
