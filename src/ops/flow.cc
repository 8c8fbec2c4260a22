// Noise and gradient flow: dropout (elementwise, along a dim, per batch element, whole tensor), noise,
// nobackprop, scale_gradient.
#include "kernels/device/philox.h"
#include "kernels/device/prims.h"
#include "kernels/device/strided.h"

#ifndef DYNET_CUDA_PASS
#include "core/device.h"
#include "kernels/device/emulated.h"
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {

namespace {
// dE/dx += λ g (noise: λ = 1; scale_gradient: its attribute)
template <bool kScaled>
struct PassGradient {
  template <class P>
  static void bwd(const BackwardArgs& a) {
    a.fx.device->axpy(kScaled ? a.attr.as<float>() : 1.f, a.dEdf.v, a.dEdxi.v, a.dEdxi.d.size());
  }
};
// nobackprop and scale_gradient alias their argument on every device.
template <class P>
void alias_fwd(const ForwardArgs& a) {
  a.fx.v = a.xs[0].v;
}
}  // namespace

#ifndef DYNET_CUDA_PASS
namespace {
using ops::Xs;

constexpr const char* kAliasing = "its value is its argument's memory: there is nothing to compute";
}  // namespace
#endif

// ---------------------------------------------------------------------------------------------
// The dropout family: dropout, dropout_dim, dropout_batch and block_dropout share one kernel, Mask<kKind>.
namespace {
struct DropoutDimAttr {
  uint32_t axis;
  float p;
};

// Keep masks: 1/(1-p) with probability 1 - p, else 0 (p = 1: always 0), drawn by kernels/device/philox.h,
// each member under its own key, so every device draws the same masks.
rng::Bernoulli keep_mask(float p) { return {1.f - p, p < 1.f ? 1.f / (1.f - p) : 0.f}; }

// y[i] = m[slot(i)] · x[i] and dE/dx[i] += m[slot(i)] · g[i], with the mask kept in aux. kKind: 0 dropout
// (one mask value per value), 1 dropout_dim (per fiber along the axis), 2 dropout_batch (per batch
// element), 3 block_dropout (per autobatched member).
template <int kKind>
struct Mask {
  struct Slots {
    size_t inner, n, per;  // dropout_dim: [inner, n, outer]; dropout_batch/block: values per mask value
    DYNET_HD size_t operator()(size_t i) const {
      if (kKind == 0) return i;
      if (kKind == 1) return (i / (inner * n)) * inner + i % inner;
      return i / per;
    }
  };
  static Slots slots(const Dim& d, AttrView attr, unsigned members, size_t* count) {
    if (kKind == 1) {
      const dev::Fibers f = dev::fibers(d, attr.as<DropoutDimAttr>().axis);
      *count = f.inner * f.outer;
      return {f.inner, f.n, 0};
    }
    const size_t groups = kKind == 0 ? d.size() : kKind == 2 ? d.bd : members;
    *count = groups;
    return {0, 0, d.size() / groups};
  }
  template <class P>
  static void fwd(const ForwardArgs& a) {
    size_t count = 0;
    const Slots slot = slots(a.xs[0].d, a.attr, a.members, &count);
    const float p = kKind == 1 ? a.attr.as<DropoutDimAttr>().p : a.attr.as<float>();
    rng::fill<P>(a.fx.device, a.scratch, a.aux, count, a.members, keep_mask(p));
    const float* m = a.aux;
    const float* x = a.xs[0].v;
    float* y = a.fx.v;
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) { y[i] = m[slot(i)] * x[i]; });
  }
  template <class P>
  static void bwd(const BackwardArgs& a) {
    size_t count = 0;
    const Slots slot = slots(a.xs[0].d, a.attr, a.members, &count);
    const float *m = a.aux, *g = a.dEdf.v;
    float* dx = a.dEdxi.v;
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) { dx[i] += m[slot(i)] * g[i]; });
  }
};
DYNET_DEVICE_KERNELS("dropout", Mask<0>::fwd, Mask<0>::bwd);
DYNET_DEVICE_KERNELS("dropout_dim", Mask<1>::fwd, Mask<1>::bwd);
DYNET_DEVICE_KERNELS("dropout_batch", Mask<2>::fwd, Mask<2>::bwd);
DYNET_DEVICE_KERNELS("block_dropout", Mask<3>::fwd, Mask<3>::bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
// dropout(x, p): inverted dropout. Each value is kept with probability 1 - p and scaled by
// 1 / (1 - p), so the expected value is unchanged; the mask (0 or the scale) is kept in aux.
size_t dropout_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.size(); }
std::vector<OpSample> dropout_samples() {
  auto with = [](float p) { return [p](ComputationGraph&, Xs x) { return dropout(x[0], p); }; };
  return {{"matrix", {Dim({4, 3})}, with(0.3f)},
          {"batched", {Dim({3}, 2)}, with(0.5f)},
          {"keep_all", {Dim({3})}, with(0.f)},
          {"p_one", {Dim({3})}, with(1.f)},  // all dropped: zeros (DyNet: 0 · 1/0 = NaN)
          {"p_above_one", {Dim({3})}, with(1.5f), -1, 1, true},
          {"p_negative", {Dim({3})}, with(-0.1f), -1, 1, true}};
}
const OpId k_dropout = register_op({.name = "dropout",
                                    .doc = "y = x ⊙ m / (1-p), m ~ Bernoulli(1-p) per value",
                                    .shape = ops::same_shape,
                                    .forward = Mask<0>::fwd<dev::HostPrims>,
                                    .backward = Mask<0>::bwd<dev::HostPrims>,
                                    .aux_floats = dropout_aux,
                                    .batch = {.batchable = true},
                                    .samples = dropout_samples,
                                    .flags = kRandom});

// dropout_dim(x, d, p): inverted dropout with one mask value per fiber along dim d, so whole
// rows/columns/... are kept or dropped together (e.g. d = 0 drops columns of a matrix). Each batch
// element draws its own mask; the mask is kept in aux.
Dim dropout_dim_shape(const ArgDims& xs, AttrView a) {
  const unsigned d = a.as<DropoutDimAttr>().axis;
  if (d >= xs[0].nd) op_error("dropout_dim", "dim " + std::to_string(d) + " out of range for input " + xs[0].str());
  return xs[0];
}
size_t dropout_dim_aux(const Dim& fx, const ArgDims&, AttrView a) {
  const dev::Fibers f = dev::fibers(fx, a.as<DropoutDimAttr>().axis);
  return f.inner * f.outer;
}
std::vector<OpSample> dropout_dim_samples() {
  auto with = [](unsigned d, float p) { return [d, p](ComputationGraph&, Xs x) { return dropout_dim(x[0], d, p); }; };
  return {{"drop_columns", {Dim({3, 4})}, with(0, 0.5f)},
          {"drop_rows", {Dim({3, 4})}, with(1, 0.4f)},
          {"tensor_middle", {Dim({2, 3, 2})}, with(1, 0.5f)},
          {"batched", {Dim({3, 2}, 3)}, with(0, 0.3f)},
          {"bad_dim", {Dim({3, 4})}, with(2, 0.5f), -1, 1, true},
          {"p_one", {Dim({3})}, with(0, 1.f)},
          {"p_above_one", {Dim({3})}, with(0, 1.5f), -1, 1, true}};
}
const OpId k_dropout_dim = register_op({.name = "dropout_dim",
                                        .doc = "y = x ⊙ m / (1-p), m ~ Bernoulli(1-p) shared along dim d",
                                        .shape = dropout_dim_shape,
                                        .forward = Mask<1>::fwd<dev::HostPrims>,
                                        .backward = Mask<1>::bwd<dev::HostPrims>,
                                        .aux_floats = dropout_dim_aux,
                                        .batch = {.batchable = true},
                                        .samples = dropout_dim_samples,
                                        .flags = kRandom});

// dropout_batch(x, p): inverted dropout of whole batch elements (one mask value per element).
size_t dropout_batch_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.bd; }
std::vector<OpSample> dropout_batch_samples() {
  auto with = [](float p) { return [p](ComputationGraph&, Xs x) { return dropout_batch(x[0], p); }; };
  return {{"batched", {Dim({3, 2}, 4)}, with(0.5f)},
          {"unbatched", {Dim({3})}, with(0.2f)},
          {"p_one", {Dim({3}, 2)}, with(1.f)},
          {"p_above_one", {Dim({3}, 2)}, with(1.5f), -1, 1, true}};
}
const OpId k_dropout_batch = register_op({.name = "dropout_batch",
                                          .doc = "y[b] = x[b] · m_b / (1-p), m_b ~ Bernoulli(1-p) per batch element",
                                          .shape = ops::same_shape,
                                          .forward = Mask<2>::fwd<dev::HostPrims>,
                                          .backward = Mask<2>::bwd<dev::HostPrims>,
                                          .aux_floats = dropout_batch_aux,
                                          .batch = {.batchable = true},
                                          .samples = dropout_batch_samples,
                                          .flags = kRandom});

// block_dropout(x, p): one draw for the whole tensor: zero with probability p, else x / (1-p)
// (p = 1 always zeroes). The multiplier is kept in aux; batched, one per member (member m owns the
// m-th block of the values).
size_t block_dropout_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.bd; }  // >= members
std::vector<OpSample> block_dropout_samples() {
  auto with = [](float p) { return [p](ComputationGraph&, Xs x) { return block_dropout(x[0], p); }; };
  return {{"matrix", {Dim({3, 2})}, with(0.5f)},
          {"batched", {Dim({2}, 3)}, with(0.3f)},
          {"always", {Dim({2})}, with(1.f)},
          {"p_too_big", {Dim({3})}, with(1.5f), -1, 1, true},
          {"p_negative", {Dim({3})}, with(-0.5f), -1, 1, true}};
}
const OpId k_block_dropout = register_op({.name = "block_dropout",
                                          .doc = "y = x · m / (1-p), one m ~ Bernoulli(1-p) for the whole tensor",
                                          .shape = ops::same_shape,
                                          .forward = Mask<3>::fwd<dev::HostPrims>,
                                          .backward = Mask<3>::bwd<dev::HostPrims>,
                                          .aux_floats = block_dropout_aux,
                                          .batch = {.batchable = true},
                                          .samples = block_dropout_samples,
                                          .flags = kRandom});
}  // namespace
Expression dropout(const Expression& x, real p) {
  if (!(p >= 0.f && p <= 1.f)) op_error("dropout", "p must be in [0, 1], got " + std::to_string(p));
  return make_node(k_dropout, x, p);
}
DYNET_API(dropout, "dropout", "dropout(x, p)", "dropout(x, p)", Expression(const Expression&, float));
Expression dropout_dim(const Expression& x, unsigned d, real p) {
  if (!(p >= 0.f && p <= 1.f)) op_error("dropout_dim", "p must be in [0, 1], got " + std::to_string(p));
  return make_node(k_dropout_dim, x, DropoutDimAttr{d, p});
}
DYNET_API(dropout_dim, "dropout_dim", "dropout_dim(x, d, p)", "dropout_dim(x, d, p)", Expression(const Expression&, unsigned, float));
Expression dropout_batch(const Expression& x, real p) {
  if (!(p >= 0.f && p <= 1.f)) op_error("dropout_batch", "p must be in [0, 1], got " + std::to_string(p));
  return make_node(k_dropout_batch, x, p);
}
DYNET_API(dropout_batch, "dropout_batch", "dropout_batch(x, p)", "dropout_batch(x, p)", Expression(const Expression&, float));
Expression block_dropout(const Expression& x, real p) {
  if (!(p >= 0.f && p <= 1.f)) op_error("block_dropout", "p must be in [0, 1], got " + std::to_string(p));
  return make_node(k_block_dropout, x, p);
}
DYNET_API(block_dropout, "block_dropout", "block_dropout(x, p)", "block_dropout(x, p)", Expression(const Expression&, float));
#endif

// ---------------------------------------------------------------------------------------------
// noise(x, stddev) = x + N(0, stddev²) per value; the gradient passes through unchanged.
namespace {
// noise: N(0, stddev²) drawn into y, then x added.
template <class P>
void noise_fwd(const ForwardArgs& a) {
  const size_t n = a.fx.d.size();
  float* y = a.fx.v;
  rng::fill<P>(a.fx.device, a.scratch, y, n, a.members, rng::Normal{0.f, a.attr.as<float>()});
  const float* x = a.xs[0].v;
  P::for_each(a.fx.device, n, [=] DYNET_LAMBDA(size_t i) { y[i] += x[i]; });
}
DYNET_DEVICE_KERNELS("noise", noise_fwd, PassGradient<false>::bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
std::vector<OpSample> noise_samples() {
  auto with = [](float s) { return [s](ComputationGraph&, Xs x) { return noise(x[0], s); }; };
  return {{"matrix", {Dim({4, 3})}, with(0.5f)},
          {"batched", {Dim({3}, 2)}, with(1.f)},
          {"zero", {Dim({3})}, with(0.f)},
          {"negative_stddev", {Dim({3})}, with(-1.f), -1, 1, true}};
}
const OpId k_noise = register_op({.name = "noise",
                                  .doc = "y = x + ε, ε ~ N(0, stddev²) per value",
                                  .shape = ops::same_shape,
                                  .forward = noise_fwd<dev::HostPrims>,
                                  .backward = PassGradient<false>::bwd<dev::HostPrims>,
                                  .batch = {.batchable = true},
                                  .samples = noise_samples,
                                  .flags = kRandom});
}  // namespace
Expression noise(const Expression& x, real stddev) {
  if (!(stddev >= 0.f)) op_error("noise", "stddev must be >= 0, got " + std::to_string(stddev));
  return make_node(k_noise, x, stddev);
}
DYNET_API(noise, "noise", "noise(x, stddev)", "noise(x, stddev)", Expression(const Expression&, float));
#endif

// ---------------------------------------------------------------------------------------------
// nobackprop(x) = x (same memory); no gradient flows back to x.
namespace {
DYNET_DEVICE_FORWARD("nobackprop", alias_fwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
std::vector<OpSample> nobackprop_samples() {
  auto build = [](ComputationGraph&, Xs x) { return nobackprop(x[0]); };
  return {{"matrix", {Dim({3, 2})}, build}, {"batched", {Dim({3}, 2)}, build}};
}
const OpId k_nobackprop = register_op({.name = "nobackprop",
                                       .doc = "y = x; dE/dx = 0",
                                       .shape = ops::same_shape,
                                       .forward = alias_fwd<dev::HostPrims>,
                                       .batch = {.why_not = kAliasing},
                                       .samples = nobackprop_samples,
                                       .flags = kAliasOutput | kNoGradient});
}  // namespace
Expression nobackprop(const Expression& x) { return make_node(k_nobackprop, x); }
DYNET_API(nobackprop, "nobackprop", "nobackprop(x)", "nobackprop(x)", Expression(const Expression&));
#endif

// ---------------------------------------------------------------------------------------------
// scale_gradient(x, λ) = x (same memory); backward passes λ·g.
namespace {
DYNET_DEVICE_KERNELS("scale_gradient", alias_fwd, PassGradient<true>::bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
std::vector<OpSample> scale_gradient_samples() {
  // λ = 1 only: any other value makes the gradient differ from the finite difference on purpose
  // (tests/test_select_softmax.cc checks other values).
  auto build = [](ComputationGraph&, Xs x) { return scale_gradient(x[0], 1.f); };
  return {{"matrix", {Dim({3, 2})}, build}, {"batched", {Dim({3}, 2)}, build}};
}
const OpId k_scale_gradient = register_op({.name = "scale_gradient",
                                           .doc = "y = x; dE/dx = λ · dE/dy",
                                           .shape = ops::same_shape,
                                           .forward = alias_fwd<dev::HostPrims>,
                                           .backward = PassGradient<true>::bwd<dev::HostPrims>,
                                           .batch = {.why_not = kAliasing},
                                           .samples = scale_gradient_samples,
                                           .flags = kAliasOutput});
}  // namespace
Expression scale_gradient(const Expression& x, float lambd) { return make_node(k_scale_gradient, x, lambd); }
DYNET_API(scale_gradient, "scale_gradient", "scale_gradient(x, lambd = 1.0f)", "scale_gradient(x, lambd=1.0)", Expression(const Expression&, float));
#endif

// ---------------------------------------------------------------------------------------------
// to_device(x, device): y = x copied to `device` (the node runs there); dE/dx += dE/dy copied back. Data
// moves through the Device interface only, so these kernels serve every device.
#ifndef DYNET_CUDA_PASS
namespace {
void to_device_fwd(const ForwardArgs& a) {
  const Tensor& x = a.xs[0];
  const size_t bytes = x.d.size() * sizeof(float);
  if (detail::host_addressable(a.fx.device)) return x.device->copy_to_host(a.fx.v, x.v, bytes);
  std::vector<float> buf;
  a.fx.device->copy_from_host(a.fx.v, host_values(x, &buf), bytes);
}
void to_device_bwd(const BackwardArgs& a) {
  std::vector<float> buf;
  const float* g = host_values(a.dEdf, &buf);
  const Tensor& dx = a.dEdxi;
  if (!detail::host_addressable(dx.device)) return dx.device->accumulate_from_host(dx.v, g, dx.d.size());
  for (size_t k = 0; k < dx.d.size(); ++k) dx.v[k] += g[k];
}
std::vector<OpSample> to_device_samples() {
  // There and back again: the harness's loss runs on the CPU. The emulated device stands in for a GPU.
  auto build = [](ComputationGraph&, Xs x) { return to_device(to_device(x[0], emulated_device()), cpu_device()); };
  return {{"matrix", {Dim({3, 2})}, build}, {"batched", {Dim({3}, 2)}, build}};
}
const OpId k_to_device = register_op({.name = "to_device",
                                      .doc = "y = x, on another device; dE/dx = dE/dy",
                                      .shape = ops::same_shape,
                                      .forward = to_device_fwd,
                                      .backward = to_device_bwd,
                                      .batch = {.why_not = "moves a value between devices: its argument and value are on different ones"},
                                      .samples = to_device_samples,
                                      .flags = kToDevice});
const bool kToDeviceKernels = [] {
  for (Backend b : {kCudaBackend, kEmulatedBackend}) register_device_kernels(k_to_device, b, {to_device_fwd, to_device_bwd});
  return true;
}();
}  // namespace
Expression to_device(const Expression& x, Device* device) {
  ComputationGraph& g = detail::graph_of("to_device", {&x});
  if (device == nullptr || detail::device_at(device->index) != device)
    throw std::invalid_argument("to_device: " + std::string(device ? device->name : "null") +
                                " is not one of this process's devices (see get_device_manager())");
  if (g.node(x.i).device == device->index) return x;
  return Expression(&g, g.add_node_on(device, k_to_device, &x.i, 1));
}
DYNET_API(to_device, "to_device", "to_device(x, device)", "to_device(e, device_str)", Expression(const Expression&, Device*));
#endif

}  // namespace dynet
