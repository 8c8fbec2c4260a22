// Normalization: layer_norm(x, g, b) and weight_norm(w, g).
//
// layer_norm is one node with exactly the math of DyNet's composition
//   cmult(g, cdiv(x - mean_elems(x), std_elems(x) + 1e-8)) + b
// i.e. μ and σ over all elements of each batch element, σ with 1/n (not 1/(n-1)), and ε = 1e-8 added
// to σ (not to the variance). One node instead of six saves the intermediates and their gradients.
#include <cmath>

#include "ops/api.h"
#include "ops/common.h"

namespace dynet {
namespace {

using ops::Xs;

constexpr float kLayerNormEps = 1e-8f;

// ---------------------------------------------------------------------------------------------
// layer_norm(x, g, b): y = g ⊙ (x - μ) / (σ + ε) + b. g and b have x's shape; any of the three may be
// unbatched against the others' batch. aux keeps μ and σ per output batch element.
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
void layer_norm_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &g = a.xs[1], &bias = a.xs[2];
  const size_t n = x.d.batch_size();
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    const auto xb = cpu::cbarr(x, b);
    const float mu = xb.sum() / float(n);
    const float sigma = std::sqrt((xb - mu).square().sum() / float(n));
    a.aux[2 * b] = mu;
    a.aux[2 * b + 1] = sigma;
    cpu::barr(a.fx, b) = cpu::cbarr(g, b) * (xb - mu) / (sigma + kLayerNormEps) + cpu::cbarr(bias, b);
  }
}
void layer_norm_bwd(const BackwardArgs& a) {
  const Tensor &x = a.xs[0], &g = a.xs[1];
  const size_t n = x.d.batch_size();
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    const float mu = a.aux[2 * b], sigma = a.aux[2 * b + 1], s = sigma + kLayerNormEps;
    const auto dy = cpu::cbarr(a.dEdf, b);
    if (a.i == 2) {
      cpu::barr(a.dEdxi, b) += dy;
    } else if (a.i == 1) {
      cpu::barr(a.dEdxi, b) += dy * (cpu::cbarr(x, b) - mu) / s;
    } else {
      // With u = g ⊙ dy and c = x - μ: dx = (u - mean(u)) / s - c · Σ(u ⊙ c) / (n σ s²); the second
      // term is the path through σ, whose derivative c / (n σ) is taken as 0 when σ = 0 (then c = 0).
      const Eigen::ArrayXf u = cpu::cbarr(g, b) * dy;
      const Eigen::ArrayXf c = cpu::cbarr(x, b) - mu;
      auto dx = cpu::barr(a.dEdxi, b);
      dx += (u - u.mean()) / s;
      if (sigma > 0.f) dx -= c * ((u * c).sum() / (float(n) * sigma * s * s));
    }
  }
}
std::vector<OpSample> layer_norm_samples() {
  auto b = [](ComputationGraph&, Xs x) { return layer_norm(x[0], x[1], x[2]); };
  return {{"vector", {Dim({5}), Dim({5}), Dim({5})}, b},
          {"matrix", {Dim({3, 2}), Dim({3, 2}), Dim({3, 2})}, b},
          {"batched_x", {Dim({4}, 3), Dim({4}), Dim({4})}, b},
          {"batched_gain", {Dim({4}), Dim({4}, 2), Dim({4})}, b},
          {"all_batched", {Dim({3}, 2), Dim({3}, 2), Dim({3}, 2)}, b},
          {"gain_shape", {Dim({4}), Dim({3}), Dim({4})}, b, -1, 1, true},
          {"bias_shape", {Dim({4}), Dim({4}), Dim({4, 2})}, b, -1, 1, true},
          {"batch_mismatch", {Dim({4}, 2), Dim({4}, 3), Dim({4})}, b, -1, 1, true}};
}
const OpId k_layer_norm = register_op({.name = "layer_norm",
                                       .doc = "y = g ⊙ (x - μ) / (σ + 1e-8) + b, μ and σ (1/n) over the elements",
                                       .shape = layer_norm_shape,
                                       .forward = layer_norm_fwd,
                                       .backward = layer_norm_bwd,
                                       .aux_floats = layer_norm_aux,
                                       .batch = {.batchable = true, .shared = 2 | 4},
                                       .samples = layer_norm_samples});

// ---------------------------------------------------------------------------------------------
// weight_norm(w, g) = g · w / ‖w‖ with a scalar gain g, per batch element. A zero w has no direction
// and throws. Gradients: dw += (g/‖w‖)(dy - (w·dy) w / ‖w‖²), dg += (w·dy) / ‖w‖.
Dim weight_norm_shape(const ArgDims& xs, AttrView) {
  if (xs[1].batch_size() != 1) op_error("weight_norm", "the gain must be a scalar, got " + xs[1].str());
  Dim y = xs[0];
  y.bd = ops::broadcast_bd("weight_norm", xs[0], xs[1]);
  return y;
}
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

Expression layer_norm(const Expression& x, const Expression& g, const Expression& b) {
  return make_node(k_layer_norm, {&x, &g, &b});
}
DYNET_API(layer_norm, "layer_norm", "layer_norm(x, g, b)", "layer_norm(x, g, b)", Expression(const Expression&, const Expression&, const Expression&));
Expression weight_norm(const Expression& w, const Expression& g) { return make_node(k_weight_norm, w, g); }
DYNET_API(weight_norm, "weight_norm", "weight_norm(w, g)", "weight_norm(w, g)", Expression(const Expression&, const Expression&));

}  // namespace dynet
