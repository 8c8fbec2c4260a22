// Elementwise unary ops: one table row each (name, math, y = f(x), dE/dx = f'(x, y)·g, test domain). A row
// is written once in the device-neutral vocabulary (kernels/device/prims.h: tanh, exp, square, select,
// ...) and expands into the CPU kernel (the same expression over Eigen arrays, kernels/cpu/eigen_fn.h) and
// the device kernels (over floats, for the emulated device and, in the CUDA pass, for GPUs).
#include "kernels/device/prims.h"

#ifndef DYNET_CUDA_PASS
#include <cmath>
#include <limits>

#include <unsupported/Eigen/SpecialFunctions>  // erf, lgamma, digamma on arrays

#include "kernels/cpu/activations.h"
#include "kernels/cpu/eigen_fn.h"
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {
namespace {

constexpr float kTwoOverSqrtPi = 1.1283791670955126f;
// SELU constants (Klambauer et al. 2017), as in DyNet
constexpr float kSeluLambda = 1.0507009873554804934f;
constexpr float kSeluAlpha = 1.6732632423543772848f;

#ifndef DYNET_CUDA_PASS
using ops::same_shape;

constexpr float kSmooth = std::numeric_limits<float>::quiet_NaN();  // no kink in the test domain
constexpr float kKinkMargin = 0.05f;

// Samples drawn from [lo, hi]. Where the derivative jumps at `kink` inside the domain, each side is
// sampled separately, kKinkMargin away from it, so finite differences never straddle the jump.
std::vector<OpSample> unary_samples(Expression (*f)(const Expression&), float lo, float hi, float kink) {
  if (!(kink > lo && kink < hi)) return ops::unary_samples(f, lo, hi);
  auto build = [f](ComputationGraph&, const std::vector<Expression>& x) { return f(x[0]); };
  const float below = kink - kKinkMargin, above = kink + kKinkMargin;
  return {{"vector_below_kink", {Dim({5})}, build, lo, below},
          {"vector_above_kink", {Dim({5})}, build, above, hi},
          {"matrix", {Dim({3, 4})}, build, above, hi},
          {"batched", {Dim({3, 2}, 3)}, build, lo, below}};
}
#endif

#ifndef DYNET_CUDA_PASS
}  // namespace
namespace fn {
struct tanh_row;
struct logistic_row;
}  // namespace fn
namespace {
// Rows whose CPU kernels are vectorized loops (kernels/cpu/activations.h) rather than the row's
// expression over Eigen arrays: σ and tanh at SSE2 width were among the largest elementwise costs
// of a batched Tree-LSTM.
template <class Row>
struct CpuKernels {
  static constexpr bool own = false;
  static void fwd(const float*, float*, size_t) {}
  static void bwd(const float*, const float*, float*, size_t) {}
};
template <>
struct CpuKernels<fn::tanh_row> {
  static constexpr bool own = true;
  static void fwd(const float* x, float* y, size_t n) { cpu::tanh_forward(x, y, n); }
  static void bwd(const float* y, const float* g, float* d, size_t n) { cpu::tanh_backward(y, g, d, n); }
};
template <>
struct CpuKernels<fn::logistic_row> {
  static constexpr bool own = true;
  static void fwd(const float* x, float* y, size_t n) { cpu::logistic_forward(x, y, n); }
  static void bwd(const float* y, const float* g, float* d, size_t n) { cpu::logistic_backward(y, g, d, n); }
};
#endif

// The row's math as a functor in dynet::fn (so that unqualified calls find the vocabulary), and its kernels:
// y[i] = f(x[i], p), dE/dx[i] += f'(x[i], y[i], g[i], p). p is the node's float attribute for rows that take
// one (elu's α, silu's β), 0 for the others, whose math ignores it. On the CPU the row runs over Eigen arrays
// (or the CpuKernels above); on devices over floats.
inline float row_param(AttrView a) { return a.words ? a.as<float>() : 0.f; }
#define DYNET_UNARY_ROW(FN, NAME, FWD, BWD)                                                                     \
  }                                                                                                             \
  namespace fn {                                                                                                \
  struct FN##_row {                                                                                             \
    template <class X>                                                                                          \
    static DYNET_HD auto f(const X& x, float p) {                                                               \
      return FWD;                                                                                               \
    }                                                                                                           \
    template <class X, class Y, class G>                                                                        \
    static DYNET_HD auto df(const X& x, const Y& y, const G& g, float p) {                                      \
      return BWD;                                                                                               \
    }                                                                                                           \
  };                                                                                                            \
  }                                                                                                             \
  namespace {                                                                                                   \
  template <class P>                                                                                            \
  void FN##_dev_fwd(const ForwardArgs& a) {                                                                     \
    const float p = row_param(a.attr);                                                                          \
    const float* x = a.xs[0].v;                                                                                 \
    float* y = a.fx.v;                                                                                          \
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) { y[i] = fn::FN##_row::f(x[i], p); });  \
  }                                                                                                             \
  template <class P>                                                                                            \
  void FN##_dev_bwd(const BackwardArgs& a) {                                                                    \
    const float p = row_param(a.attr);                                                                          \
    const float *x = a.xs[0].v, *y = a.fx.v, *g = a.dEdf.v;                                                     \
    float* d = a.dEdxi.v;                                                                                       \
    P::for_each(a.fx.device, a.fx.d.size(),                                                                     \
                [=] DYNET_LAMBDA(size_t i) { d[i] += fn::FN##_row::df(x[i], y[i], g[i], p); });                 \
  }                                                                                                             \
  DYNET_DEVICE_KERNELS(NAME, FN##_dev_fwd, FN##_dev_bwd);

// The row's kernels and its registration (rows with a parameter define their public function and samples
// themselves, below the table).
#ifdef DYNET_CUDA_PASS
#define DYNET_UNARY_OP(FN, NAME, DOC, FWD, BWD) DYNET_UNARY_ROW(FN, NAME, FWD, BWD)
#else
#define DYNET_UNARY_OP(FN, NAME, DOC, FWD, BWD)                                                                    \
  DYNET_UNARY_ROW(FN, NAME, FWD, BWD)                                                                              \
  void FN##_fwd(const ForwardArgs& a) {                                                                            \
    using K = CpuKernels<fn::FN##_row>;                                                                            \
    if constexpr (K::own)                                                                                          \
      K::fwd(a.xs[0].v, a.fx.v, a.fx.d.size());                                                                    \
    else                                                                                                           \
      cpu::arr(a.fx) = fn::FN##_row::f(cpu::carr(a.xs[0]), row_param(a.attr));                                     \
  }                                                                                                                \
  void FN##_bwd(const BackwardArgs& a) {                                                                           \
    using K = CpuKernels<fn::FN##_row>;                                                                            \
    if constexpr (K::own)                                                                                          \
      K::bwd(a.fx.v, a.dEdf.v, a.dEdxi.v, a.fx.d.size());                                                          \
    else                                                                                                           \
      cpu::arr(a.dEdxi) +=                                                                                         \
          fn::FN##_row::df(cpu::carr(a.xs[0]), cpu::carr(a.fx), cpu::carr(a.dEdf), row_param(a.attr));              \
  }                                                                                                                \
  std::vector<OpSample> FN##_samples();                                                                            \
  const OpId k_##FN = register_op({.name = NAME,                                                                   \
                                   .doc = DOC,                                                                     \
                                   .shape = same_shape,                                                            \
                                   .forward = FN##_fwd,                                                            \
                                   .backward = FN##_bwd,                                                           \
                                   .batch = {.batchable = true},                                                   \
                                   .samples = FN##_samples});
#endif

#ifdef DYNET_CUDA_PASS
#define DYNET_UNARY(FN, NAME, DOC, FWD, BWD, LO, HI, KINK) DYNET_UNARY_ROW(FN, NAME, FWD, BWD)
#else
#define DYNET_UNARY(FN, NAME, DOC, FWD, BWD, LO, HI, KINK)                                                         \
  DYNET_UNARY_OP(FN, NAME, DOC, FWD, BWD)                                                                          \
  }                                                                                                                \
  Expression FN(const Expression& x) { return make_node(k_##FN, x); }                                             \
  DYNET_API(FN, NAME, ops::public_name(#FN "(x)"), ops::public_name(#FN "(x)"), Expression(const Expression&)); \
  namespace {                                                                                                      \
  std::vector<OpSample> FN##_samples() {                                                                           \
    std::vector<OpSample> s = unary_samples(static_cast<Expression (*)(const Expression&)>(FN), LO, HI, KINK);    \
    for (OpSample& x : s) x.reference = elementwise_reference([](double v) { return double(fn::FN##_row::f(v, 0.f)); }); \
    return s;                                                                                                      \
  }
#endif

// clang-format off
//          function     name           math                                   y = f(x)                                  dE/dx                                                domain         kink
DYNET_UNARY(negate_,     "negate",      "y = -x",                              -x,                                       -g,                                                  -1, 1,         kSmooth)
DYNET_UNARY(tanh,        "tanh",        "y = tanh(x)",                         tanh(x),                                  g * (1 - y * y),                                     -2, 2,         kSmooth)
DYNET_UNARY(logistic,    "logistic",    "y = 1 / (1 + e^-x)",                  logistic(x),                              g * y * (1 - y),                                     -3, 3,         kSmooth)
DYNET_UNARY(rectify,     "rectify",     "y = max(x, 0)",                       max(x, 0.f),                              step(x) * g,                                         -1, 1,         0.f)
DYNET_UNARY(exp,         "exp",         "y = e^x",                             exp(x),                                   g * y,                                               -2, 2,         kSmooth)
DYNET_UNARY(log,         "log",         "y = ln(x)",                           log(x),                                   g / x,                                               0.2f, 3,       kSmooth)
DYNET_UNARY(sqrt,        "sqrt",        "y = √x",                              sqrt(x),                                  g * 0.5f / y,                                        0.2f, 3,       kSmooth)
DYNET_UNARY(square,      "square",      "y = x²",                              square(x),                                g * 2.f * x,                                         -2, 2,         kSmooth)
DYNET_UNARY(cube,        "cube",        "y = x³",                              cube(x),                                  g * 3.f * square(x),                                 -2, 2,         kSmooth)
DYNET_UNARY(abs,         "abs",         "y = abs(x)",                          abs(x),                                   g * sign(x),                                         -1, 1,         0.f)
DYNET_UNARY(erf,         "erf",         "y = erf(x) = 2/√π ∫₀ˣ e^(-t²) dt",    erf(x),                                   g * kTwoOverSqrtPi * exp(-square(x)),                -2, 2,         kSmooth)
DYNET_UNARY(sin,         "sin",         "y = sin(x)",                          sin(x),                                   g * cos(x),                                          -3, 3,         kSmooth)
DYNET_UNARY(cos,         "cos",         "y = cos(x)",                          cos(x),                                   -g * sin(x),                                         -3, 3,         kSmooth)
DYNET_UNARY(tan,         "tan",         "y = tan(x)",                          tan(x),                                   g * (1 + square(y)),                                 -1.2f, 1.2f,   kSmooth)
DYNET_UNARY(asin,        "asin",        "y = arcsin(x)",                       asin(x),                                  g / sqrt(1 - square(x)),                             -0.9f, 0.9f,   kSmooth)
DYNET_UNARY(acos,        "acos",        "y = arccos(x)",                       acos(x),                                  -g / sqrt(1 - square(x)),                            -0.9f, 0.9f,   kSmooth)
DYNET_UNARY(atan,        "atan",        "y = arctan(x)",                       atan(x),                                  g / (1 + square(x)),                                 -2, 2,         kSmooth)
DYNET_UNARY(sinh,        "sinh",        "y = sinh(x)",                         sinh(x),                                  g * cosh(x),                                         -2, 2,         kSmooth)
DYNET_UNARY(cosh,        "cosh",        "y = cosh(x)",                         cosh(x),                                  g * sinh(x),                                         -2, 2,         kSmooth)
DYNET_UNARY(asinh,       "asinh",       "y = arsinh(x)",                       asinh(x),                                 g / sqrt(square(x) + 1),                             -2, 2,         kSmooth)
DYNET_UNARY(acosh,       "acosh",       "y = arcosh(x), x ≥ 1",                acosh(x),                                 g / sqrt(square(x) - 1),                             1.2f, 3,       kSmooth)
DYNET_UNARY(atanh,       "atanh",       "y = artanh(x), -1 < x < 1",           atanh(x),                                 g / (1 - square(x)),                                 -0.8f, 0.8f,   kSmooth)
// ln σ(x) = min(x, 0) - ln(1 + e^-|x|) never overflows; its derivative 1 - σ(x) = -expm1(y) keeps precision as y → 0
DYNET_UNARY(log_sigmoid, "log_sigmoid", "y = ln σ(x) = -ln(1 + e^-x)",         min(x, 0.f) - log1p(exp(-abs(x))),        -g * expm1(y),                                       -3, 3,         kSmooth)
DYNET_UNARY(lgamma,      "lgamma",      "y = ln Γ(x)",                         lgamma(x),                                g * digamma(x),                                      0.5f, 4,       kSmooth)
DYNET_UNARY(softsign,    "softsign",    "y = x / (1 + abs(x))",                x / (1 + abs(x)),                         g / square(1 + abs(x)),                              -2, 2,         kSmooth)
DYNET_UNARY(selu,        "selu",        "y = λ (x > 0 ? x : α (e^x - 1)), λ = 1.0507, α = 1.6733", kSeluLambda * select(x > 0, x, kSeluAlpha * expm1(x)), select(x > 0, kSeluLambda * g, g * (y + kSeluLambda * kSeluAlpha)), -2, 2, 0.f)
// clang-format on
#undef DYNET_UNARY

// Rows with a parameter p: σ(βx) of silu is recomputed in backward rather than kept: it is one vectorised
// logistic, cheaper than an aux buffer's memory traffic.
// clang-format off
//             name  name    math                                  y = f(x, p)                                dE/dx
DYNET_UNARY_OP(elu,  "elu",  "y = x > 0 ? x : α (e^x - 1)",        select(x > 0, x, p * expm1(x)),            select(x > 0, g, g * (y + p)))
DYNET_UNARY_OP(silu, "silu", "y = x σ(βx)",                        x * logistic(p * x),                       g * logistic(p * x) * (1 + p * x * (1 - logistic(p * x))))
// clang-format on
#undef DYNET_UNARY_OP
#undef DYNET_UNARY_ROW

#ifndef DYNET_CUDA_PASS
std::vector<OpSample> elu_samples() {
  auto build = [](ComputationGraph&, const std::vector<Expression>& x) { return elu(x[0], 0.7f); };
  return {{"vector_negative", {Dim({6})}, build, -2, -kKinkMargin},
          {"vector_positive", {Dim({6})}, build, kKinkMargin, 2},
          {"batched", {Dim({3, 2}, 2)}, build, -2, -kKinkMargin}};
}
std::vector<OpSample> silu_samples() {
  auto with = [](float beta) {
    return [beta](ComputationGraph&, const std::vector<Expression>& x) { return silu(x[0], beta); };
  };
  return {{"vector", {Dim({6})}, with(1.f), -3, 3},
          {"matrix_beta2", {Dim({3, 4})}, with(2.f), -3, 3},
          {"batched", {Dim({3, 2}, 2)}, with(0.5f), -3, 3}};
}
#endif
}  // namespace

#ifndef DYNET_CUDA_PASS
Expression elu(const Expression& x, float alpha) { return make_node(k_elu, x, alpha); }
DYNET_API(elu, "elu", "elu(x, alpha = 1.f)", "elu(x, alpha=1.0)", Expression(const Expression&, float));
Expression silu(const Expression& x, float beta) { return make_node(k_silu, x, beta); }
DYNET_API(silu, "silu", "silu(x, beta = 1.f)", "silu(x, beta=1.0)", Expression(const Expression&, float));
Expression operator-(const Expression& x) { return negate_(x); }
DYNET_API(operator-, "negate", "operator-(x)", nullptr, Expression(const Expression&));
#endif

}  // namespace dynet
