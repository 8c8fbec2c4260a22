// Noise and gradient flow: dropout, noise, nobackprop, scale_gradient.
#include <random>

#include "ops/common.h"

namespace dynet {
namespace {

using Xs = const std::vector<Expression>&;

// ---------------------------------------------------------------------------------------------
// dropout(x, p): inverted dropout. Each value is kept with probability 1 - p and scaled by
// 1 / (1 - p), so the expected value is unchanged; the mask (0 or the scale) is kept in aux.
size_t dropout_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.size(); }
void dropout_fwd(const ForwardArgs& a) {
  const float p = a.attr.as<float>();
  const float keep_scale = 1.f / (1.f - p);
  std::bernoulli_distribution keep(1.0 - double(p));
  auto& rng = random_engine();
  const unsigned n = a.fx.d.size();
  for (unsigned k = 0; k < n; ++k) a.aux[k] = keep(rng) ? keep_scale : 0.f;
  cpu::arr(a.fx) = cpu::carr(a.xs[0]) * cpu::CArrMap(a.aux, n);
}
void dropout_bwd(const BackwardArgs& a) {
  cpu::arr(a.dEdxi) += cpu::carr(a.dEdf) * cpu::CArrMap(a.aux, a.fx.d.size());
}
std::vector<OpSample> dropout_samples() {
  auto with = [](float p) { return [p](ComputationGraph&, Xs x) { return dropout(x[0], p); }; };
  return {{"matrix", {Dim({4, 3})}, with(0.3f)},
          {"batched", {Dim({3}, 2)}, with(0.5f)},
          {"keep_all", {Dim({3})}, with(0.f)},
          {"p_one", {Dim({3})}, with(1.f), -1, 1, true},
          {"p_negative", {Dim({3})}, with(-0.1f), -1, 1, true}};
}
const OpId k_dropout = register_op({.name = "dropout",
                                    .shape = ops::same_shape,
                                    .forward = dropout_fwd,
                                    .backward = dropout_bwd,
                                    .aux_floats = dropout_aux,
                                    .batch = {.batchable = true},
                                    .samples = dropout_samples,
                                    .flags = kRandom});

// ---------------------------------------------------------------------------------------------
// noise(x, stddev) = x + N(0, stddev²) per value; the gradient passes through unchanged.
void noise_fwd(const ForwardArgs& a) {
  const float stddev = a.attr.as<float>();
  const unsigned n = a.fx.d.size();
  const float* x = a.xs[0].v;
  if (stddev == 0.f) {
    cpu::arr(a.fx) = cpu::carr(a.xs[0]);
    return;
  }
  std::normal_distribution<float> gauss(0.f, stddev);
  auto& rng = random_engine();
  for (unsigned k = 0; k < n; ++k) a.fx.v[k] = x[k] + gauss(rng);
}
void noise_bwd(const BackwardArgs& a) { cpu::arr(a.dEdxi) += cpu::carr(a.dEdf); }
std::vector<OpSample> noise_samples() {
  auto with = [](float s) { return [s](ComputationGraph&, Xs x) { return noise(x[0], s); }; };
  return {{"matrix", {Dim({4, 3})}, with(0.5f)},
          {"batched", {Dim({3}, 2)}, with(1.f)},
          {"zero", {Dim({3})}, with(0.f)},
          {"negative_stddev", {Dim({3})}, with(-1.f), -1, 1, true}};
}
const OpId k_noise = register_op({.name = "noise",
                                  .shape = ops::same_shape,
                                  .forward = noise_fwd,
                                  .backward = noise_bwd,
                                  .batch = {.batchable = true},
                                  .samples = noise_samples,
                                  .flags = kRandom});

// ---------------------------------------------------------------------------------------------
// nobackprop(x) = x (same memory); no gradient flows back to x.
void alias_fwd(const ForwardArgs& a) { a.fx.v = a.xs[0].v; }
std::vector<OpSample> nobackprop_samples() {
  auto build = [](ComputationGraph&, Xs x) { return nobackprop(x[0]); };
  return {{"matrix", {Dim({3, 2})}, build}, {"batched", {Dim({3}, 2)}, build}};
}
const OpId k_nobackprop = register_op({.name = "nobackprop",
                                       .shape = ops::same_shape,
                                       .forward = alias_fwd,
                                       .samples = nobackprop_samples,
                                       .flags = kAliasOutput | kNoGradient});

// ---------------------------------------------------------------------------------------------
// scale_gradient(x, λ) = x (same memory); backward passes λ·g.
void scale_gradient_bwd(const BackwardArgs& a) { cpu::arr(a.dEdxi) += a.attr.as<float>() * cpu::carr(a.dEdf); }
std::vector<OpSample> scale_gradient_samples() {
  // λ = 1 only: any other value makes the gradient differ from the finite difference on purpose
  // (tests/test_select_softmax.cc checks other values).
  auto build = [](ComputationGraph&, Xs x) { return scale_gradient(x[0], 1.f); };
  return {{"matrix", {Dim({3, 2})}, build}, {"batched", {Dim({3}, 2)}, build}};
}
const OpId k_scale_gradient = register_op({.name = "scale_gradient",
                                           .shape = ops::same_shape,
                                           .forward = alias_fwd,
                                           .backward = scale_gradient_bwd,
                                           .samples = scale_gradient_samples,
                                           .flags = kAliasOutput});

}  // namespace

Expression dropout(const Expression& x, real p) {
  if (!(p >= 0.f && p < 1.f)) op_error("dropout", "p must be in [0, 1), got " + std::to_string(p));
  return make_node(k_dropout, x, p);
}
Expression noise(const Expression& x, real stddev) {
  if (!(stddev >= 0.f)) op_error("noise", "stddev must be >= 0, got " + std::to_string(stddev));
  return make_node(k_noise, x, stddev);
}
Expression nobackprop(const Expression& x) { return make_node(k_nobackprop, x); }
Expression scale_gradient(const Expression& x, float lambd) { return make_node(k_scale_gradient, x, lambd); }

}  // namespace dynet
