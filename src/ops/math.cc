// Elementwise maximum over a list, circular convolution and correlation, rounding with a chosen
// gradient (round/ceil/floor), argmax as a one-hot, and flip_gradient.
#include "kernels/device/prims.h"

#include <cmath>
#include <vector>

#include "dynet/expr.h"  // GradientMode

#ifndef DYNET_CUDA_PASS
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {
namespace {

// ---------------------------------------------------------------------------------------------
#ifndef DYNET_CUDA_PASS
using ops::Xs;
#endif

// ---------------------------------------------------------------------------------------------
// max({x_1..x_n}): elementwise maximum; equal shapes, unbatched arguments broadcast over the batch.
// The gradient goes to the winning argument, the last one on ties, so the list form agrees with
// folding the pair form max(max(x_1, x_2), x_3)... (whose ties go to the right-hand side).
// max over a list, elementwise: the winner (the last one on ties) of every element goes to aux.
template <class P>
void max_list_fwd(const ForwardArgs& a) {
  const size_t bs = a.fx.d.batch_size(), n = a.n;
  const dev::ArgList xs = dev::upload_args(a.fx.device, a.scratch, a.xs, n, bs);
  unsigned* winner = reinterpret_cast<unsigned*>(a.aux);
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) {
    const size_t b = j / bs, e = j % bs;
    float m = xs.v[0][b * xs.stride[0] + e];
    unsigned w = 0;
    for (size_t i = 1; i < n; ++i)
      if (xs.v[i][b * xs.stride[i] + e] >= m) m = xs.v[i][b * xs.stride[i] + e], w = unsigned(i);
    y[j] = m;
    winner[j] = w;
  });
}
template <class P>
void max_list_bwd(const BackwardArgs& a) {
  const size_t bs = a.fx.d.batch_size();
  const unsigned i = a.i;
  const unsigned* winner = reinterpret_cast<const unsigned*>(a.aux);
  const float* g = a.dEdf.v;
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.xs[i].d.bd != 1, a.fx.d.bd, bs,
                         [=] DYNET_LAMBDA(size_t b, size_t e) { return winner[b * bs + e] == i ? g[b * bs + e] : 0.f; });
}
DYNET_DEVICE_KERNELS("max_list", max_list_fwd, max_list_bwd);

#ifndef DYNET_CUDA_PASS
Dim max_list_shape(const ArgDims& xs, AttrView) {
  Dim out = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i].single_batch() != xs[0].single_batch())
      op_error("max_list", "argument " + std::to_string(i) + " has dim " + xs[i].str() + " but argument 0 has " +
                               xs[0].str());
    out.bd = ops::broadcast_bd("max_list", out, xs[i]);
  }
  return out;
}
size_t max_list_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.size(); }
std::vector<OpSample> max_list_samples() {
  auto build = [](ComputationGraph&, Xs x) { return max(x); };
  return {{"single", {Dim({4})}, build},
          {"three", {Dim({3, 2}), Dim({3, 2}), Dim({3, 2})}, build},
          {"batched", {Dim({3}, 2), Dim({3}, 2)}, build},
          {"broadcast", {Dim({2, 2}, 3), Dim({2, 2}), Dim({2, 2}, 3)}, build},
          {"shape_mismatch", {Dim({3}), Dim({4})}, build, -1, 1, true},
          {"batch_mismatch", {Dim({3}, 2), Dim({3}, 3)}, build, -1, 1, true}};
}
const OpId k_max_list = register_op({.name = "max_list",
                                     .doc = "y = max(x₁, …, xₙ) elementwise; gradient to the argmax (last on ties)",
                                     .shape = max_list_shape,
                                     .forward = max_list_fwd<dev::HostPrims>,
                                     .backward = max_list_bwd<dev::HostPrims>,
                                     .aux_floats = max_list_aux,
                                     .batch = {.batchable = true},
                                     .samples = max_list_samples});
}  // namespace
Expression max(const std::initializer_list<Expression>& xs) {
  return make_node_n(k_max_list, xs);
}
DYNET_API(max, "max_list", "max(xs)", nullptr, Expression(const std::initializer_list<Expression>&));
Expression max(const std::vector<Expression>& xs) { return make_node_n(k_max_list, xs); }
DYNET_API(max, "max_list", "max(xs)", "emax(xs)", Expression(const std::vector<Expression>&));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// circ_conv(u, v)[k] = Σ_i u[i] v[(k - i) mod n] and circ_corr(u, v)[k] = Σ_i u[i] v[(i + k) mod n]
// for column vectors of equal length n. Direct O(n²) sums, not an FFT as DyNet (same values up to
// rounding): no FFT dependency, and cheap at the sizes these are used with (holographic embeddings,
// n in the hundreds). DyNet runs them on unbatched inputs only; here either side may be batched (per
// batch element, an unbatched side broadcasts).
// Σ_i a[i] b[(k - i) mod n] and Σ_i a[i] b[(i + k) mod n], each sum split where the index wraps so both
// runs are contiguous.
DYNET_HD inline float circ_conv_at(const float* a, const float* b, size_t n, size_t k) {
  float s = 0.f;
  for (size_t i = 0; i <= k; ++i) s += a[i] * b[k - i];
  for (size_t i = k + 1; i < n; ++i) s += a[i] * b[n + k - i];
  return s;
}
DYNET_HD inline float circ_corr_at(const float* a, const float* b, size_t n, size_t k) {
  float s = 0.f;
  for (size_t i = 0; i < n - k; ++i) s += a[i] * b[i + k];
  for (size_t i = n - k; i < n; ++i) s += a[i] * b[i + k - n];
  return s;
}
// circ_conv / circ_corr: one thread per output element; an unbatched side broadcasts.
template <bool kCorrelation>
struct Circular {
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const size_t n = a.fx.d.rows(), us = a.xs[0].d.bd == 1 ? 0 : n, vs = a.xs[1].d.bd == 1 ? 0 : n;
    const float *u = a.xs[0].v, *v = a.xs[1].v;
    float* y = a.fx.v;
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
      const size_t b = i / n, k = i % n;
      y[i] = kCorrelation ? circ_corr_at(u + b * us, v + b * vs, n, k) : circ_conv_at(u + b * us, v + b * vs, n, k);
    });
  }
  // conv: dE/du = corr(v, g), dE/dv = corr(u, g); corr: dE/du = corr(g, v), dE/dv = conv(g, u).
  template <class P>
  static void bwd(const BackwardArgs& a) {
    const size_t n = a.fx.d.rows(), us = a.xs[0].d.bd == 1 ? 0 : n, vs = a.xs[1].d.bd == 1 ? 0 : n;
    const float *u = a.xs[0].v, *v = a.xs[1].v, *g = a.dEdf.v;
    const unsigned i = a.i;
    dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.xs[i].d.bd != 1, a.fx.d.bd, n,
                           [=] DYNET_LAMBDA(size_t b, size_t k) {
                             const float *ub = u + b * us, *vb = v + b * vs, *gb = g + b * n;
                             if (!kCorrelation) return circ_corr_at(i == 0 ? vb : ub, gb, n, k);
                             return i == 0 ? circ_corr_at(gb, vb, n, k) : circ_conv_at(gb, ub, n, k);
                           });
  }
};
DYNET_DEVICE_KERNELS("circ_conv", Circular<false>::fwd, Circular<false>::bwd);
DYNET_DEVICE_KERNELS("circ_corr", Circular<true>::fwd, Circular<true>::bwd);

#ifndef DYNET_CUDA_PASS
template <const char* kName>
Dim circular_shape(const ArgDims& xs, AttrView) {
  const Dim &u = xs[0], &v = xs[1];
  if (u.batch_size() != u.rows() || v.batch_size() != v.rows())
    op_error(kName, "arguments must be column vectors, got " + u.str() + " and " + v.str());
  if (u.rows() != v.rows()) op_error(kName, "vector lengths differ: " + u.str() + " vs " + v.str());
  return Dim({u.rows()}, ops::broadcast_bd(kName, u, v));
}

std::vector<OpSample> circular_samples(Expression (*f)(const Expression&, const Expression&)) {
  auto b = [f](ComputationGraph&, Xs x) { return f(x[0], x[1]); };
  return {{"vector", {Dim({5}), Dim({5})}, b},
          {"column_matrix", {Dim({4, 1}), Dim({4})}, b},
          {"length_one", {Dim({1}), Dim({1})}, b},
          {"batched", {Dim({4}, 2), Dim({4}, 2)}, b},
          {"broadcast", {Dim({3}), Dim({3}, 3)}, b},
          {"length_mismatch", {Dim({3}), Dim({4})}, b, -1, 1, true},
          {"matrix", {Dim({3, 2}), Dim({3, 2})}, b, -1, 1, true},
          {"batch_mismatch", {Dim({3}, 2), Dim({3}, 3)}, b, -1, 1, true}};
}
constexpr char kCircConv[] = "circ_conv";
constexpr char kCircCorr[] = "circ_corr";
const OpId k_circ_conv = register_op({.name = kCircConv,
                                      .doc = "y[k] = Σᵢ u[i] v[(k - i) mod n]",
                                      .shape = circular_shape<kCircConv>,
                                      .forward = Circular<false>::fwd<dev::HostPrims>,
                                      .backward = Circular<false>::bwd<dev::HostPrims>,
                                      .batch = {.batchable = true},
                                      .samples = [] { return circular_samples(circ_conv); }});
const OpId k_circ_corr = register_op({.name = kCircCorr,
                                      .doc = "y[k] = Σᵢ u[i] v[(i + k) mod n]",
                                      .shape = circular_shape<kCircCorr>,
                                      .forward = Circular<true>::fwd<dev::HostPrims>,
                                      .backward = Circular<true>::bwd<dev::HostPrims>,
                                      .batch = {.batchable = true},
                                      .samples = [] { return circular_samples(circ_corr); }});
}  // namespace
Expression circ_conv(const Expression& u, const Expression& v) { return make_node(k_circ_conv, u, v); }
DYNET_API(circ_conv, "circ_conv", "circ_conv(u, v)", "circ_conv(u, v)", Expression(const Expression&, const Expression&));
Expression circ_corr(const Expression& u, const Expression& v) { return make_node(k_circ_corr, u, v); }
DYNET_API(circ_corr, "circ_corr", "circ_corr(u, v)", "circ_corr(u, v)", Expression(const Expression&, const Expression&));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// Ops whose value is piecewise constant: the true gradient is zero; with straight_through_gradient
// the incoming gradient passes through unchanged (the identity's gradient).
// argmax(x, gm): one-hot of the maximum of each column (dim-0 fiber), the first one on ties.
// DyNet accepts vectors only; every column of a matrix or tensor is a natural extension.
// Piecewise constant ops: zero gradient, or the incoming one passed straight through.
template <class P>
void straight_through_bwd(const BackwardArgs& a) {
  if (a.attr.as<GradientMode>() != straight_through_gradient) return;
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) { dx[i] += g[i]; });
}
enum class Rounding { nearest, up, down };
template <Rounding kR>
struct RoundTo {
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const float* x = a.xs[0].v;
    float* y = a.fx.v;
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
      y[i] = kR == Rounding::nearest ? fn::round(x[i]) : kR == Rounding::up ? fn::ceil(x[i]) : fn::floor(x[i]);
    });
  }
};
DYNET_DEVICE_KERNELS("round", RoundTo<Rounding::nearest>::fwd, straight_through_bwd);
DYNET_DEVICE_KERNELS("ceil", RoundTo<Rounding::up>::fwd, straight_through_bwd);
DYNET_DEVICE_KERNELS("floor", RoundTo<Rounding::down>::fwd, straight_through_bwd);

// argmax: one thread per column writes its one-hot (the first maximum on ties).
template <class P>
void argmax_fwd(const ForwardArgs& a) {
  const size_t rows = a.fx.d.rows(), columns = a.fx.d.size() / (rows ? rows : 1);
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, columns, [=] DYNET_LAMBDA(size_t c) {
    const float* xc = x + c * rows;
    size_t best = 0;
    for (size_t r = 1; r < rows; ++r)
      if (xc[r] > xc[best]) best = r;
    for (size_t r = 0; r < rows; ++r) y[c * rows + r] = r == best ? 1.f : 0.f;
  });
}
DYNET_DEVICE_KERNELS("argmax", argmax_fwd, straight_through_bwd);

#ifndef DYNET_CUDA_PASS
void check_gradient_mode(const char* op, GradientMode gm) {
  if (gm != zero_gradient && gm != straight_through_gradient)
    op_error(op, "unknown gradient mode " + std::to_string(int(gm)) +
                     " (expected zero_gradient or straight_through_gradient)");
}

// CPU kernels kept for ceil and floor: op_perf x64 generic/CPU 1.4 (ceil), 1.5 (floor) fwd+bwd, the forward
// 1.5-1.9 (Eigen vectorises ceil/floor with SSE2 bit tricks; the generic kernel calls ceilf/floorf per element).
template <Rounding kR>
void rounding_fwd(const ForwardArgs& a) {
  static_assert(kR != Rounding::nearest, "round has one kernel, RoundTo");
  if constexpr (kR == Rounding::up)
    cpu::arr(a.fx) = cpu::carr(a.xs[0]).ceil();
  else
    cpu::arr(a.fx) = cpu::carr(a.xs[0]).floor();
}
// Domains stay between the steps so finite differences see the (zero) gradient; straight-through
// samples check values and shapes only (their gradient is by design not the derivative).
template <Rounding kR>
std::vector<OpSample> rounding_samples() {
  using F = Expression (*)(const Expression&, GradientMode);
  constexpr F f = kR == Rounding::nearest ? F(round) : kR == Rounding::up ? F(ceil) : F(floor);
  auto with = [](GradientMode gm) { return [gm](ComputationGraph&, Xs x) { return f(x[0], gm); }; };
  const float lo = kR == Rounding::nearest ? 1.55f : 1.05f, hi = kR == Rounding::nearest ? 2.45f : 1.95f;
  return {{"vector", {Dim({5})}, with(zero_gradient), lo, hi},
          {"matrix_negative", {Dim({3, 4})}, with(zero_gradient), -hi, -lo},
          {"batched", {Dim({3, 2}, 2)}, with(zero_gradient), lo, hi},
          {"straight_through", {Dim({4}, 2)}, with(straight_through_gradient), lo, hi, false, {true}},
          {"bad_mode", {Dim({3})}, with(static_cast<GradientMode>(7)), lo, hi, true}};
}
const OpId k_round = register_op({.name = "round",
                                  .doc = "y = round(x) (halves away from 0); ∂y/∂x = 0, or 1 straight-through",
                                  .shape = ops::same_shape,
                                  .forward = RoundTo<Rounding::nearest>::fwd<dev::HostPrims>,
                                  .backward = straight_through_bwd<dev::HostPrims>,
                                  .batch = {.batchable = true},
                                  .samples = rounding_samples<Rounding::nearest>});
const OpId k_ceil = register_op({.name = "ceil",
                                 .doc = "y = ⌈x⌉; ∂y/∂x = 0, or 1 straight-through",
                                 .shape = ops::same_shape,
                                 .forward = rounding_fwd<Rounding::up>,
                                 .backward = straight_through_bwd<dev::HostPrims>,
                                 .batch = {.batchable = true},
                                 .samples = rounding_samples<Rounding::up>});
const OpId k_floor = register_op({.name = "floor",
                                  .doc = "y = ⌊x⌋; ∂y/∂x = 0, or 1 straight-through",
                                  .shape = ops::same_shape,
                                  .forward = rounding_fwd<Rounding::down>,
                                  .backward = straight_through_bwd<dev::HostPrims>,
                                  .batch = {.batchable = true},
                                  .samples = rounding_samples<Rounding::down>});

std::vector<OpSample> argmax_samples() {
  auto with = [](GradientMode gm) { return [gm](ComputationGraph&, Xs x) { return argmax(x[0], gm); }; };
  return {{"vector", {Dim({5})}, with(zero_gradient)},
          {"matrix_columns", {Dim({4, 3})}, with(zero_gradient)},
          {"batched", {Dim({3}, 3)}, with(zero_gradient)},
          {"straight_through", {Dim({4}, 2)}, with(straight_through_gradient), -1, 1, false, {true}},
          {"bad_mode", {Dim({3})}, with(static_cast<GradientMode>(-1)), -1, 1, true}};
}
const OpId k_argmax = register_op({.name = "argmax",
                                   .doc = "y = one_hot(argmaxᵢ x[i, j]) per column j; ∂y/∂x = 0, or 1 straight-through",
                                   .shape = ops::same_shape,
                                   .forward = argmax_fwd<dev::HostPrims>,
                                   .backward = straight_through_bwd<dev::HostPrims>,
                                   .batch = {.batchable = true},
                                   .samples = argmax_samples});

Expression gradient_mode_node(OpId op, const Expression& x, GradientMode gm) {
  check_gradient_mode(op_def(op).name, gm);
  return make_node(op, x, gm);
}
}  // namespace
Expression round(const Expression& x, GradientMode gradient_mode) {
  return gradient_mode_node(k_round, x, gradient_mode);
}
DYNET_API(round, "round", "round(x, gradient_mode = zero_gradient)", "round(x, gradient_mode)", Expression(const Expression&, GradientMode));
Expression ceil(const Expression& x, GradientMode gradient_mode) { return gradient_mode_node(k_ceil, x, gradient_mode); }
DYNET_API(ceil, "ceil", "ceil(x, gradient_mode = zero_gradient)", "ceil(x, gradient_mode)", Expression(const Expression&, GradientMode));
Expression floor(const Expression& x, GradientMode gradient_mode) {
  return gradient_mode_node(k_floor, x, gradient_mode);
}
DYNET_API(floor, "floor", "floor(x, gradient_mode = zero_gradient)", "floor(x, gradient_mode)", Expression(const Expression&, GradientMode));
Expression argmax(const Expression& x, GradientMode gradient_mode) {
  return gradient_mode_node(k_argmax, x, gradient_mode);
}
DYNET_API(argmax, "argmax", "argmax(x, gradient_mode)", "argmax(x, gradient_mode)", Expression(const Expression&, GradientMode));
namespace {
#endif

}  // namespace

// ---------------------------------------------------------------------------------------------
// As DyNet: scale_gradient with λ = -1 (the value is x's memory, the gradient is negated).
#ifndef DYNET_CUDA_PASS
Expression flip_gradient(const Expression& x) { return scale_gradient(x, -1.f); }
DYNET_API(flip_gradient, "scale_gradient", "flip_gradient(x)", "flip_gradient(x)", Expression(const Expression&));
#endif

}  // namespace dynet
