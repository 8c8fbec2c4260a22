// Elementwise unary ops: one table row each (name, y = f(x), dE/dx = f'(x, y)·g, test domain).
#include "ops/common.h"

namespace dynet {
namespace {
using ops::same_shape;

#define DYNET_UNARY(FN, NAME, FWD, BWD, LO, HI)                                                          \
  void FN##_fwd(const ForwardArgs& a) {                                                                  \
    auto x = cpu::carr(a.xs[0]);                                                                         \
    cpu::arr(a.fx) = FWD;                                                                                \
  }                                                                                                      \
  void FN##_bwd(const BackwardArgs& a) {                                                                 \
    auto x = cpu::carr(a.xs[0]);                                                                         \
    auto y = cpu::carr(a.fx);                                                                            \
    auto g = cpu::carr(a.dEdf);                                                                          \
    (void)x;                                                                                             \
    (void)y;                                                                                             \
    cpu::arr(a.dEdxi) += BWD;                                                                            \
  }                                                                                                      \
  std::vector<OpSample> FN##_samples();                                                                  \
  const OpId k_##FN = register_op({.name = NAME,                                                         \
                                   .shape = same_shape,                                                  \
                                   .forward = FN##_fwd,                                                  \
                                   .backward = FN##_bwd,                                                 \
                                   .batch = {.batchable = true},                                         \
                                   .samples = FN##_samples});                                            \
  }                                                                                                      \
  Expression FN(const Expression& x) { return make_node(k_##FN, x); }                                   \
  namespace {                                                                                            \
  std::vector<OpSample> FN##_samples() { return ops::unary_samples(static_cast<Expression (*)(const Expression&)>(FN), LO, HI); }

//          function  name        y = f(x)                        dE/dx                           domain
DYNET_UNARY(negate_,  "negate",   -x,                             -g,                             -1, 1)
DYNET_UNARY(tanh,     "tanh",     x.tanh(),                       g * (1 - y * y),                -2, 2)
DYNET_UNARY(logistic, "logistic", x.logistic(),                   g * y * (1 - y),                -3, 3)
DYNET_UNARY(rectify,  "rectify",  x.max(0.f),                     (x > 0).cast<float>() * g,      0.05f, 1)
DYNET_UNARY(exp,      "exp",      x.exp(),                        g * y,                          -2, 2)
DYNET_UNARY(log,      "log",      x.log(),                        g / x,                          0.2f, 3)
DYNET_UNARY(sqrt,     "sqrt",     x.sqrt(),                       g * 0.5f / y,                   0.2f, 3)
DYNET_UNARY(square,   "square",   x.square(),                     g * 2.f * x,                    -2, 2)
DYNET_UNARY(abs,      "abs",      x.abs(),                        g * x.sign(),                   0.05f, 1)
#undef DYNET_UNARY

// elu(x, alpha) = x > 0 ? x : alpha (e^x - 1)
void elu_fwd(const ForwardArgs& a) {
  const float alpha = a.attr.as<float>();
  auto x = cpu::carr(a.xs[0]);
  cpu::arr(a.fx) = (x > 0).select(x, alpha * (x.exp() - 1));
}
void elu_bwd(const BackwardArgs& a) {
  const float alpha = a.attr.as<float>();
  auto x = cpu::carr(a.xs[0]);
  auto y = cpu::carr(a.fx);
  cpu::arr(a.dEdxi) += (x > 0).select(cpu::carr(a.dEdf), cpu::carr(a.dEdf) * (y + alpha));
}
std::vector<OpSample> elu_samples() {
  auto build = [](ComputationGraph&, const std::vector<Expression>& x) { return elu(x[0], 0.7f); };
  return {{"vector", {Dim({6})}, build, -2, 2}, {"batched", {Dim({3, 2}, 2)}, build, -2, 2}};
}
const OpId k_elu = register_op({.name = "elu",
                                .shape = same_shape,
                                .forward = elu_fwd,
                                .backward = elu_bwd,
                                .batch = {.batchable = true},
                                .samples = elu_samples});
}  // namespace

Expression elu(const Expression& x, float alpha) { return make_node(k_elu, x, alpha); }
Expression operator-(const Expression& x) { return negate_(x); }

}  // namespace dynet
