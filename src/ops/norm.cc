// Normalization: layer_norm(x, g, b) and weight_norm(w, g).
//
// layer_norm is one node with exactly the math of DyNet's composition
//   cmult(g, cdiv(x - mean_elems(x), std_elems(x) + 1e-8)) + b
// i.e. μ and σ over all elements of each batch element, σ with 1/n (not 1/(n-1)), and ε = 1e-8 added
// to σ (not to the variance). One node instead of six saves the intermediates and their gradients.
#include "kernels/device/prims.h"

#include <cmath>
#include <string>
#include <vector>

#ifndef DYNET_CUDA_PASS
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {
namespace {

// ---------------------------------------------------------------------------------------------
// ---- device kernels ----
// Per output batch element b of B: s[b] = Σ_k v(b, k) over n values, into scratch.
template <class P, class V>
float* sums_per_batch(Device* dev, MemPool& scratch, size_t B, size_t n, V v) {
  float* s = scratch.allocate_floats(B);
  P::reduce(dev, B, n, 0.f, v, dev::Sum(), [=] DYNET_LAMBDA(size_t b, float r) { s[b] = r; });
  return s;
}

#ifndef DYNET_CUDA_PASS
using ops::Xs;
#endif

// ---------------------------------------------------------------------------------------------
// layer_norm(x, g, b): y = g ⊙ (x - μ) / (σ + ε) + b. g and b have x's shape; any of the three may be
// unbatched against the others' batch. aux keeps μ and σ per output batch element.
constexpr float kLayerNormEps = 1e-8f;
// layer_norm: aux keeps μ and σ per output batch element for the gradient.
template <class P>
void layer_norm_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &g = a.xs[1], &bias = a.xs[2];
  const size_t n = x.d.batch_size(), B = a.fx.d.bd;
  const size_t xs = x.d.bd == 1 ? 0 : n, gs = g.d.bd == 1 ? 0 : n, bsd = bias.d.bd == 1 ? 0 : n;
  const float *xv = x.v, *gv = g.v, *bv = bias.v;
  float *y = a.fx.v, *stats = a.aux;
  const float inv_n = 1.f / float(n);
  P::reduce(
      a.fx.device, B, n, 0.f, [=] DYNET_LAMBDA(size_t b, size_t k) { return xv[b * xs + k]; }, dev::Sum(),
      [=] DYNET_LAMBDA(size_t b, float s) { stats[2 * b] = s * inv_n; });
  P::reduce(
      a.fx.device, B, n, 0.f,
      [=] DYNET_LAMBDA(size_t b, size_t k) {
        const float c = xv[b * xs + k] - stats[2 * b];
        return c * c;
      },
      dev::Sum(), [=] DYNET_LAMBDA(size_t b, float s) { stats[2 * b + 1] = fn::sqrt(s * inv_n); });
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t b = i / n, k = i % n;
    y[i] = gv[b * gs + k] * (xv[b * xs + k] - stats[2 * b]) / (stats[2 * b + 1] + kLayerNormEps) + bv[b * bsd + k];
  });
}
// db += dy; dg += dy ⊙ c / s; with u = g ⊙ dy, c = x - μ and s = σ + ε:
// dx += (u - mean(u)) / s - c · Σ(u ⊙ c) / (n σ s²). The second term is the path through σ, whose derivative c / (n σ) is taken as 0 when σ = 0 (then c = 0).
template <class P>
void layer_norm_bwd(const BackwardArgs& a) {
  const Tensor &x = a.xs[0], &g = a.xs[1];
  const size_t n = x.d.batch_size(), B = a.fx.d.bd;
  const size_t xs = x.d.bd == 1 ? 0 : n, gs = g.d.bd == 1 ? 0 : n;
  const float *xv = x.v, *gv = g.v, *dy = a.dEdf.v, *stats = a.aux;
  const unsigned which = a.i;
  float* u_mean = nullptr;
  float* uc = nullptr;
  if (which == 0) {  // mean(u) and Σ u ⊙ c with u = g ⊙ dy, c = x - μ
    const float inv_n = 1.f / float(n);
    u_mean = sums_per_batch<P>(a.fx.device, a.scratch, B, n, [=] DYNET_LAMBDA(size_t b, size_t k) {
      return gv[b * gs + k] * dy[b * n + k] * inv_n;
    });
    uc = sums_per_batch<P>(a.fx.device, a.scratch, B, n, [=] DYNET_LAMBDA(size_t b, size_t k) {
      return gv[b * gs + k] * dy[b * n + k] * (xv[b * xs + k] - stats[2 * b]);
    });
  }
  const float nf = float(n);
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.xs[which].d.bd != 1, B, n, [=] DYNET_LAMBDA(size_t b, size_t k) {
    const float d = dy[b * n + k];
    if (which == 2) return d;
    const float mu = stats[2 * b], sigma = stats[2 * b + 1], s = sigma + kLayerNormEps;
    const float c = xv[b * xs + k] - mu;
    if (which == 1) return d * c / s;
    float r = (gv[b * gs + k] * d - u_mean[b]) / s;
    if (sigma > 0.f) r -= c * (uc[b] / (nf * sigma * s * s));
    return r;
  });
}
DYNET_DEVICE_KERNELS("layer_norm", layer_norm_fwd, layer_norm_bwd);

#ifndef DYNET_CUDA_PASS
Dim layer_norm_shape(const ArgDims& xs, AttrView) {
  constexpr const char* op = "layer_norm";
  const Dim &x = xs[0], &g = xs[1], &b = xs[2];
  if (g.single_batch() != x.single_batch() || b.single_batch() != x.single_batch())
    op_error(op, "gain " + g.str() + " and bias " + b.str() + " must have the shape of x " + x.str());
  Dim y = x;
  y.bd = ops::broadcast_bd(op, x, g);
  y.bd = ops::broadcast_bd(op, y, b);
  return y;
}
size_t layer_norm_aux(const Dim& fx, const ArgDims&, AttrView) { return 2 * size_t(fx.bd); }
std::vector<OpSample> layer_norm_samples() {
  auto b = [](ComputationGraph&, Xs x) { return layer_norm(x[0], x[1], x[2]); };
  return {{"vector", {Dim({5}), Dim({5}), Dim({5})}, b},
          {"matrix", {Dim({3, 2}), Dim({3, 2}), Dim({3, 2})}, b},
          {"batched_x", {Dim({4}, 3), Dim({4}), Dim({4})}, b},
          {"batched_gain", {Dim({4}), Dim({4}, 2), Dim({4})}, b},
          {"all_batched", {Dim({3}, 2), Dim({3}, 2), Dim({3}, 2)}, b},
          {"gain_shape", {Dim({4}), Dim({3}), Dim({4})}, b, -1, 1, true},
          {"bias_shape", {Dim({4}), Dim({4}), Dim({3})}, b, -1, 1, true},  // ({4, 2} broadcasts: see layer_norm)
          {"batch_mismatch", {Dim({4}, 2), Dim({4}, 3), Dim({4})}, b, -1, 1, true}};
}
const OpId k_layer_norm = register_op({.name = "layer_norm",
                                       .doc = "y = g ⊙ (x - μ) / (σ + 1e-8) + b, μ and σ (1/n) over the elements",
                                       .shape = layer_norm_shape,
                                       .forward = layer_norm_fwd<dev::HostPrims>,
                                       .backward = layer_norm_bwd<dev::HostPrims>,
                                       .aux_floats = layer_norm_aux,
                                       .batch = {.batchable = true, .shared = 2 | 4},
                                       .samples = layer_norm_samples});
}  // namespace
Expression layer_norm(const Expression& x, const Expression& g, const Expression& b) {
  const Dim xd = x.dim().single_batch();
  if (g.dim().single_batch() == xd && b.dim().single_batch() == xd) return make_node(k_layer_norm, {&x, &g, &b});
  // A gain or bias of another shape broadcasts as in DyNet's composition (a vector gain over a matrix's
  // columns, a scalar gain): built from that composition's ops.
  try {
    return cmult(g, cdiv(x - mean_elems(x), std_elems(x) + kLayerNormEps)) + b;
  } catch (const std::invalid_argument& e) {
    op_error("layer_norm", "gain " + g.dim().str() + " and bias " + b.dim().str() + " do not broadcast against x " +
                               x.dim().str() + " (" + e.what() + ")");
  }
}
DYNET_API(layer_norm, "layer_norm", "layer_norm(x, g, b)", "layer_norm(x, g, b)", Expression(const Expression&, const Expression&, const Expression&));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// weight_norm(w, g) = g · w / ‖w‖ with a scalar gain g, per batch element. A zero w has no direction
// and throws. Gradients: dw += (g/‖w‖)(dy - (w·dy) w / ‖w‖²), dg += (w·dy) / ‖w‖.
// weight_norm: the norms per output batch element are read back to the host, which throws for a zero w as
// the CPU kernel does.
template <class P>
float* weight_norms(Device* dev, MemPool& scratch, const Tensor& w, size_t B) {
  const size_t n = w.d.batch_size(), ws = w.d.bd == 1 ? 0 : n;
  const float* wv = w.v;
  float* norm = scratch.allocate_floats(B);
  P::reduce(
      dev, B, n, 0.f, [=] DYNET_LAMBDA(size_t b, size_t k) { return wv[b * ws + k] * wv[b * ws + k]; }, dev::Sum(),
      [=] DYNET_LAMBDA(size_t b, float s) { norm[b] = fn::sqrt(s); });
  return norm;
}
template <class P>
void weight_norm_dev_fwd(const ForwardArgs& a) {
  const Tensor &w = a.xs[0], &g = a.xs[1];
  const size_t n = w.d.batch_size(), B = a.fx.d.bd, ws = w.d.bd == 1 ? 0 : n, gs = g.d.bd == 1 ? 0 : 1;
  const float* norm = weight_norms<P>(a.fx.device, a.scratch, w, B);
  std::vector<float> host(B);
  a.fx.device->copy_to_host(host.data(), norm, B * sizeof(float));
  for (size_t b = 0; b < B; ++b)
    if (!(host[b] > 0.f))
      throw std::runtime_error("weight_norm: w " + w.d.str() + " (batch element " + std::to_string(b) +
                               ") has norm " + std::to_string(host[b]) + "; its direction is undefined");
  const float *wv = w.v, *gv = g.v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t b = i / n;
    y[i] = wv[b * ws + i % n] * (gv[b * gs] / norm[b]);
  });
}
// dw += (g/‖w‖)(dy - (w·dy) w / ‖w‖²), dg += (w·dy) / ‖w‖
template <class P>
void weight_norm_dev_bwd(const BackwardArgs& a) {
  const Tensor &w = a.xs[0], &g = a.xs[1];
  const size_t n = w.d.batch_size(), B = a.fx.d.bd, ws = w.d.bd == 1 ? 0 : n, gs = g.d.bd == 1 ? 0 : 1;
  const float *wv = w.v, *gv = g.v, *dy = a.dEdf.v;
  const float* norm = weight_norms<P>(a.fx.device, a.scratch, w, B);
  const float* w_dot_dy = sums_per_batch<P>(a.fx.device, a.scratch, B, n, [=] DYNET_LAMBDA(size_t b, size_t k) {
    return wv[b * ws + k] * dy[b * n + k];
  });
  if (a.i == 1) {
    dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, g.d.bd != 1, B, 1,
                           [=] DYNET_LAMBDA(size_t b, size_t) { return w_dot_dy[b] / norm[b]; });
    return;
  }
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, w.d.bd != 1, B, n, [=] DYNET_LAMBDA(size_t b, size_t k) {
    const float nb = norm[b];
    return (gv[b * gs] / nb) * (dy[b * n + k] - wv[b * ws + k] * (w_dot_dy[b] / (nb * nb)));
  });
}
DYNET_DEVICE_KERNELS("weight_norm", weight_norm_dev_fwd, weight_norm_dev_bwd);

#ifndef DYNET_CUDA_PASS
Dim weight_norm_shape(const ArgDims& xs, AttrView) {
  if (xs[1].batch_size() != 1) op_error("weight_norm", "the gain must be a scalar, got " + xs[1].str());
  Dim y = xs[0];
  y.bd = ops::broadcast_bd("weight_norm", xs[0], xs[1]);
  return y;
}
// CPU kernel kept: op_perf generic/CPU 1.3 single, 1.2 x64 fwd+bwd, the x64 forward 1.2-2.0 (the generic one
// reads the norms back to the host to check them, and divides indices per element).
void weight_norm_fwd(const ForwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    const auto w = cpu::cbarr(a.xs[0], b);
    const float norm = std::sqrt(w.square().sum());
    if (!(norm > 0.f))
      throw std::runtime_error("weight_norm: w " + a.xs[0].d.str() + " (batch element " + std::to_string(b) +
                               ") has norm " + std::to_string(norm) + "; its direction is undefined");
    cpu::barr(a.fx, b) = w * (*a.xs[1].batch_ptr(b) / norm);
  }
}
void weight_norm_bwd(const BackwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    const auto w = cpu::cbarr(a.xs[0], b);
    const auto dy = cpu::cbarr(a.dEdf, b);
    const float norm = std::sqrt(w.square().sum());
    const float w_dot_dy = (w * dy).sum();
    if (a.i == 1) {
      *a.dEdxi.batch_ptr(b) += w_dot_dy / norm;
    } else {
      const float g = *a.xs[1].batch_ptr(b);
      cpu::barr(a.dEdxi, b) += (g / norm) * (dy - w * (w_dot_dy / (norm * norm)));
    }
  }
}
std::vector<OpSample> weight_norm_samples() {
  auto b = [](ComputationGraph&, Xs x) { return weight_norm(x[0], x[1]); };
  return {{"vector", {Dim({4}), Dim({1})}, b},
          {"matrix", {Dim({3, 2}), Dim({1})}, b},
          {"batched_w", {Dim({3}, 2), Dim({1})}, b},
          {"batched_gain", {Dim({3}), Dim({1}, 3)}, b},
          {"gain_not_scalar", {Dim({3}), Dim({3})}, b, -1, 1, true},
          {"batch_mismatch", {Dim({3}, 2), Dim({1}, 3)}, b, -1, 1, true}};
}
const OpId k_weight_norm = register_op({.name = "weight_norm",
                                        .doc = "y = g · w / ‖w‖",
                                        .shape = weight_norm_shape,
                                        .forward = weight_norm_fwd,
                                        .backward = weight_norm_bwd,
                                        .batch = {.batchable = true, .shared = 2},
                                        .samples = weight_norm_samples});
}  // namespace
Expression weight_norm(const Expression& w, const Expression& g) { return make_node(k_weight_norm, w, g); }
DYNET_API(weight_norm, "weight_norm", "weight_norm(w, g)", "weight_norm(w, g)", Expression(const Expression&, const Expression&));
namespace {
#endif

}  // namespace
}  // namespace dynet
