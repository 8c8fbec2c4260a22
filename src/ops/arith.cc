// Elementwise arithmetic (broadcasting x+y, x-y, cmult, cdiv, pow, min, max; scalar forms),
// colwise_add, sum/average over a list, and the per-batch-element reductions dot_product,
// squared_norm and squared_distance.
#include "kernels/device/prims.h"
#include "kernels/device/strided.h"

#ifndef DYNET_CUDA_PASS
#include <algorithm>
#include <array>
#include <cmath>

#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {
namespace {
using dev::kAxes;
using dev::StridedSpace;
using dev::strided_space;
}  // namespace

#ifndef DYNET_CUDA_PASS
namespace {
using ops::Xs;
}  // namespace
#endif

// ---------------------------------------------------------------------------------------------
// Binary elementwise ops: f = F(x, y); dE/dx = Dx(g, x, y, f), dE/dy = Dy(g, x, y, f). Device-neutral
// scalar functors: the CPU kernels below and the device kernels share them.
namespace {
struct AddOp {
  DYNET_HD static float f(float x, float y) { return x + y; }
  DYNET_HD static float dx(float g, float, float, float) { return g; }
  DYNET_HD static float dy(float g, float, float, float) { return g; }
};
struct SubOp {
  DYNET_HD static float f(float x, float y) { return x - y; }
  DYNET_HD static float dx(float g, float, float, float) { return g; }
  DYNET_HD static float dy(float g, float, float, float) { return -g; }
};
struct MulOp {
  DYNET_HD static float f(float x, float y) { return x * y; }
  DYNET_HD static float dx(float g, float, float y, float) { return g * y; }
  DYNET_HD static float dy(float g, float x, float, float) { return g * x; }
};
struct DivOp {
  DYNET_HD static float f(float x, float y) { return x / y; }
  DYNET_HD static float dx(float g, float, float y, float) { return g / y; }
  DYNET_HD static float dy(float g, float, float y, float f) { return -g * f / y; }
};
// d/dx = y x^(y-1) rather than y f / x, which is 0/0 at x = 0; d/dy = f ln x, taken as its limit 0
// where f = 0 (x = 0) instead of 0·(-∞) = NaN.
struct PowOp {
  DYNET_HD static float f(float x, float y) { return fn::pow(x, y); }
  DYNET_HD static float dx(float g, float x, float y, float) { return g * y * fn::pow(x, y - 1.f); }
  DYNET_HD static float dy(float g, float x, float, float f) { return f == 0.f ? 0.f : g * f * fn::log(x); }
};
// As DyNet's Min/Max: the gradient goes to x only where x wins strictly, so on ties it goes to y.
struct MinOp {
  DYNET_HD static float f(float x, float y) { return x < y ? x : y; }
  DYNET_HD static float dx(float g, float x, float y, float) { return x < y ? g : 0.f; }
  DYNET_HD static float dy(float g, float x, float y, float) { return x < y ? 0.f : g; }
};
struct MaxOp {
  DYNET_HD static float f(float x, float y) { return x > y ? x : y; }
  DYNET_HD static float dx(float g, float x, float y, float) { return x > y ? g : 0.f; }
  DYNET_HD static float dy(float g, float x, float y, float) { return x > y ? 0.f : g; }
};

// Kernels of a binary op (and of colwise_add, which is x + bias broadcast), the CPU's and the devices':
// every output element from its operands' offsets; a broadcast argument's gradient adds up atomically.
// Operands that step one element per output (no broadcasting, the common case) skip the index arithmetic,
// which costs more than the math (op_perf x64 cwise_sum fwd+bwd 5.7x the Eigen kernel without it).
template <class Op>
struct Binary {
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const Tensor &x = a.xs[0], &y = a.xs[1], &f = a.fx;
    const auto s = strided_space<3>(f.d, {&f.d, &x.d, &y.d});
    float* o = f.v;
    const float *xp = x.v, *yp = y.v;
    if (s.dense(1) && s.dense(2))
      return P::for_each(f.device, f.d.size(), [=] DYNET_LAMBDA(size_t i) { o[i] = Op::f(xp[i], yp[i]); });
    P::for_each(f.device, f.d.size(), [=] DYNET_LAMBDA(size_t i) {
      size_t off[3];
      s.offsets(i, off);
      o[off[0]] = Op::f(xp[off[1]], yp[off[2]]);
    });
  }
  template <class P>
  static void bwd(const BackwardArgs& a) {
    if (a.i == 0)
      bwd_arg<P, true>(a);
    else
      bwd_arg<P, false>(a);
  }
  template <class P, bool kFirst>
  static void bwd_arg(const BackwardArgs& a) {
    const Tensor &x = a.xs[0], &y = a.xs[1], &f = a.fx, &g = a.dEdf, &d = a.dEdxi;
    const auto s = strided_space<5>(f.d, {&d.d, &f.d, &x.d, &y.d, &f.d});
    float* dp = d.v;
    const float *gp = g.v, *xp = x.v, *yp = y.v, *fp = f.v;
    if (s.dense(0) && s.dense(2) && s.dense(3))
      return P::for_each(f.device, f.d.size(), [=] DYNET_LAMBDA(size_t i) {
        dp[i] += kFirst ? Op::dx(gp[i], xp[i], yp[i], fp[i]) : Op::dy(gp[i], xp[i], yp[i], fp[i]);
      });
    const bool dense = s.dense(0);
    P::for_each(f.device, f.d.size(), [=] DYNET_LAMBDA(size_t i) {
      size_t off[5];
      s.offsets(i, off);
      const float gi = gp[off[1]], xi = xp[off[2]], yi = yp[off[3]], fi = fp[off[4]];
      const float v = kFirst ? Op::dx(gi, xi, yi, fi) : Op::dy(gi, xi, yi, fi);
      if (dense)
        dp[off[0]] += v;
      else
        dev::atomic_add(dp + off[0], v);
    });
  }
};

#define DYNET_BINARY_DEVICE(NAME, OP) DYNET_DEVICE_KERNELS(NAME, Binary<OP>::fwd, Binary<OP>::bwd);
DYNET_BINARY_DEVICE("cwise_sum", AddOp)
DYNET_BINARY_DEVICE("cwise_subtract", SubOp)
DYNET_BINARY_DEVICE("cmult", MulOp)
DYNET_BINARY_DEVICE("cdiv", DivOp)
DYNET_BINARY_DEVICE("pow", PowOp)
DYNET_BINARY_DEVICE("min", MinOp)
DYNET_BINARY_DEVICE("max", MaxOp)
#undef DYNET_BINARY_DEVICE
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
// CPU kernels kept: with its same-shape fast path the generic kernel is at 1.1-1.2x on same-shape operands
// (x64), but broadcasting operands cost a division per element and axis: op_perf x64 generic/CPU fwd+bwd
// cwise_sum 5.0, cwise_subtract 4.9, cmult 4.7, cdiv 4.7, pow 1.9, min 4.5, max 4.5 (was 5.2-5.9).
// Calls run(offsets, n, inner_strides) for every run along the innermost axis.
template <unsigned N, class Run>
void for_each_run(const StridedSpace<N>& s, Run run) {
  size_t count = 1;
  for (size_t ax = 1; ax < s.nax; ++ax) count *= s.size[ax];
  size_t idx[kAxes] = {};
  size_t off[N] = {};
  size_t inner[N];
  for (size_t k = 0; k < N; ++k) inner[k] = s.stride[k][0];
  for (size_t r = 0; r < count; ++r) {
    run(static_cast<const size_t*>(off), s.size[0], static_cast<const size_t*>(inner));
    for (size_t ax = 1; ax < s.nax; ++ax) {
      if (++idx[ax] < s.size[ax]) {
        for (size_t k = 0; k < N; ++k) off[k] += s.stride[k][ax];
        break;
      }
      idx[ax] = 0;
      for (size_t k = 0; k < N; ++k) off[k] -= s.stride[k][ax] * (s.size[ax] - 1);
    }
  }
}

// Output dim of a broadcasting binary op.
Dim broadcast_shape(const char* op, const Dim& x, const Dim& y) {
  Dim out;
  out.nd = std::max(x.nd, y.nd);
  for (size_t i = 0; i < out.nd; ++i) {
    const unsigned a = x[i], b = y[i];
    if (a == b || b == 1)
      out.d[i] = a;
    else if (a == 1)
      out.d[i] = b;
    else
      op_error(op, "cannot broadcast " + x.str() + " against " + y.str() + " (dim " + std::to_string(i) + ": " +
                       std::to_string(a) + " vs " + std::to_string(b) + ")");
  }
  out.bd = ops::broadcast_bd(op, x, y);
  return out;
}

template <class Op>
void zip(float* __restrict o, const float* __restrict x, const float* __restrict y, size_t n) {
  for (size_t t = 0; t < n; ++t) o[t] = Op::f(x[t], y[t]);
}

template <class Op>
void binary_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &y = a.xs[1];
  const Tensor& f = a.fx;
  const size_t bs = f.d.batch_size();
  if (x.d.batch_size() == bs && y.d.batch_size() == bs) {
    if (x.d.bd == y.d.bd) return zip<Op>(f.v, x.v, y.v, f.d.size());
    for (size_t b = 0; b < f.d.bd; ++b) zip<Op>(f.batch_ptr(b), x.batch_ptr(b), y.batch_ptr(b), bs);
    return;
  }
  const auto s = strided_space<3>(f.d, {&f.d, &x.d, &y.d});
  for_each_run(s, [&](const size_t* off, size_t n, const size_t* st) {
    float* __restrict o = f.v + off[0];
    const float* __restrict xp = x.v + off[1];
    const float* __restrict yp = y.v + off[2];
    if (st[1] == 1 && st[2] == 1) {
      zip<Op>(o, xp, yp, n);
    } else if (st[1] == 1) {
      const float yv = *yp;
      for (size_t t = 0; t < n; ++t) o[t] = Op::f(xp[t], yv);
    } else if (st[2] == 1) {
      const float xv = *xp;
      for (size_t t = 0; t < n; ++t) o[t] = Op::f(xv, yp[t]);
    } else {
      for (size_t t = 0; t < n; ++t) o[t] = Op::f(xp[t * st[1]], yp[t * st[2]]);
    }
  });
}

template <class Op, bool kFirst>
float derivative(float g, float x, float y, float f) {
  return kFirst ? Op::dx(g, x, y, f) : Op::dy(g, x, y, f);
}

template <class Op, bool kFirst>
void accumulate(float* __restrict d, const float* __restrict g, const float* __restrict x, const float* __restrict y,
                const float* __restrict f, size_t n) {
  for (size_t t = 0; t < n; ++t) d[t] += derivative<Op, kFirst>(g[t], x[t], y[t], f[t]);
}

template <class Op, bool kFirst>
void binary_bwd_arg(const BackwardArgs& a) {
  const Tensor &x = a.xs[0], &y = a.xs[1];
  const Tensor &f = a.fx, &g = a.dEdf;
  const Tensor& d = a.dEdxi;
  const size_t bs = f.d.batch_size();
  if (x.d.batch_size() == bs && y.d.batch_size() == bs) {
    if (x.d.bd == y.d.bd) return accumulate<Op, kFirst>(d.v, g.v, x.v, y.v, f.v, f.d.size());
    // One side unbatched: its batch_ptr stays at element 0, so its gradient sums over the batch.
    for (size_t b = 0; b < f.d.bd; ++b)
      accumulate<Op, kFirst>(d.batch_ptr(b), g.batch_ptr(b), x.batch_ptr(b), y.batch_ptr(b), f.batch_ptr(b), bs);
    return;
  }
  const auto s = strided_space<5>(f.d, {&d.d, &f.d, &x.d, &y.d, &f.d});
  for_each_run(s, [&](const size_t* off, size_t n, const size_t* st) {
    float* dp = d.v + off[0];
    const float* gp = g.v + off[1];
    const float* xp = x.v + off[2];
    const float* yp = y.v + off[3];
    const float* fp = f.v + off[4];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1 && st[4] == 1)
      return accumulate<Op, kFirst>(dp, gp, xp, yp, fp, n);
    if (st[0] == 0) {  // this argument is broadcast along the run: reduce
      float acc = 0.f;
      for (size_t t = 0; t < n; ++t) acc += derivative<Op, kFirst>(gp[t * st[1]], xp[t * st[2]], yp[t * st[3]], fp[t * st[4]]);
      *dp += acc;
      return;
    }
    for (size_t t = 0; t < n; ++t)
      dp[t * st[0]] += derivative<Op, kFirst>(gp[t * st[1]], xp[t * st[2]], yp[t * st[3]], fp[t * st[4]]);
  });
}

template <class Op>
void binary_bwd(const BackwardArgs& a) {
  if (a.i == 0)
    binary_bwd_arg<Op, true>(a);
  else
    binary_bwd_arg<Op, false>(a);
}

template <const char* kName>
Dim binary_shape(const ArgDims& xs, AttrView) {
  return broadcast_shape(kName, xs[0], xs[1]);
}

std::vector<OpSample> binary_samples(Expression (*f)(const Expression&, const Expression&), float lo, float hi,
                                    double (*ref)(double, double)) {
  auto b = [f](ComputationGraph&, Xs x) { return f(x[0], x[1]); };
  std::vector<OpSample> samples = {{"same", {Dim({3, 2}), Dim({3, 2})}, b, lo, hi},
          {"batched", {Dim({3, 2}, 2), Dim({3, 2}, 2)}, b, lo, hi},
          {"unbatched_left", {Dim({3, 2}), Dim({3, 2}, 3)}, b, lo, hi},
          {"unbatched_right", {Dim({4}, 2), Dim({4})}, b, lo, hi},
          {"broadcast_columns", {Dim({3, 2}, 2), Dim({3})}, b, lo, hi},
          {"broadcast_rows", {Dim({1, 2}), Dim({3, 2}, 2)}, b, lo, hi},
          {"broadcast_both", {Dim({3, 1, 2}), Dim({1, 4}, 2)}, b, lo, hi},
          {"broadcast_scalar", {Dim({2, 3}, 2), Dim({1})}, b, lo, hi},
          {"extra_trailing_dim", {Dim({3}), Dim({3, 1})}, b, lo, hi},
          {"mismatch", {Dim({3, 2}), Dim({2, 3})}, b, lo, hi, true},
          {"batch_mismatch", {Dim({3}, 2), Dim({3}, 3)}, b, lo, hi, true}};
  for (OpSample& s : samples)
    if (!s.bad) s.reference = broadcast_reference(s.inputs[0], s.inputs[1], ref);
  return samples;
}

constexpr char kSumName[] = "cwise_sum";
constexpr char kSubName[] = "cwise_subtract";
constexpr char kMulName[] = "cmult";
constexpr char kDivName[] = "cdiv";
constexpr char kPowName[] = "pow";
constexpr char kMinName[] = "min";
constexpr char kMaxName[] = "max";

#define DYNET_BINARY(ID, NAME, DOC, OP, FN, LO, HI, REF)                                                           \
  const OpId ID = register_op({.name = NAME,                                                                  \
                               .doc = DOC,                                                                    \
                               .shape = binary_shape<NAME>,                                                   \
                               .forward = binary_fwd<OP>,                                                     \
                               .backward = binary_bwd<OP>,                                                    \
                               .batch = {.batchable = true},                                                  \
                               .samples = [] {                                                                \
                                 return binary_samples([](const Expression& x, const Expression& y) { return FN; }, \
                                                       LO, HI, [](double x, double y) { return REF; });       \
                               }});
// clang-format off
//           id            name      math                                     op      expression    domain      reference
DYNET_BINARY(k_cwise_sum,  kSumName, "y = x₁ + x₂ (broadcasting)",            AddOp,  x + y,        -1.f, 1.f, x + y)
DYNET_BINARY(k_cwise_sub,  kSubName, "y = x₁ - x₂ (broadcasting)",            SubOp,  x - y,        -1.f, 1.f, x - y)
DYNET_BINARY(k_cmult,      kMulName, "y = x₁ ⊙ x₂ (broadcasting)",            MulOp,  cmult(x, y),  -1.f, 1.f, x * y)
DYNET_BINARY(k_cdiv,       kDivName, "y = x₁ / x₂ (broadcasting)",            DivOp,  cdiv(x, y),   0.5f, 2.f, x / y)
DYNET_BINARY(k_pow,        kPowName, "y = x₁ ^ x₂ (broadcasting)",            PowOp,  pow(x, y),    0.5f, 2.f, std::pow(x, y))
DYNET_BINARY(k_min,        kMinName, "y = min(x₁, x₂) (broadcasting)",        MinOp,  min(x, y),    -1.f, 1.f, std::min(x, y))
DYNET_BINARY(k_max,        kMaxName, "y = max(x₁, x₂) (broadcasting)",        MaxOp,  max(x, y),    -1.f, 1.f, std::max(x, y))
// clang-format on
#undef DYNET_BINARY
}  // namespace
Expression operator+(const Expression& x, const Expression& y) { return make_node(k_cwise_sum, x, y); }
DYNET_API(operator+, "cwise_sum", "operator+(x, y)", nullptr, Expression(const Expression&, const Expression&));
Expression operator-(const Expression& x, const Expression& y) { return make_node(k_cwise_sub, x, y); }
DYNET_API(operator-, "cwise_subtract", "operator-(x, y)", nullptr, Expression(const Expression&, const Expression&));
Expression cmult(const Expression& x, const Expression& y) { return make_node(k_cmult, x, y); }
DYNET_API(cmult, "cmult", "cmult(x, y)", "cmult(x, y)", Expression(const Expression&, const Expression&));
Expression cdiv(const Expression& x, const Expression& y) { return make_node(k_cdiv, x, y); }
DYNET_API(cdiv, "cdiv", "cdiv(x, y)", "cdiv(x, y)", Expression(const Expression&, const Expression&));
Expression operator/(const Expression& x, const Expression& y) { return make_node(k_cdiv, x, y); }
DYNET_API(operator/, "cdiv", "operator/(x, y)", nullptr, Expression(const Expression&, const Expression&));
Expression pow(const Expression& x, const Expression& y) { return make_node(k_pow, x, y); }
DYNET_API(pow, "pow", "pow(x, y)", "pow(x, y)", Expression(const Expression&, const Expression&));
Expression min(const Expression& x, const Expression& y) { return make_node(k_min, x, y); }
DYNET_API(min, "min", "min(x, y)", "bmin(x, y)", Expression(const Expression&, const Expression&));
Expression max(const Expression& x, const Expression& y) { return make_node(k_max, x, y); }
DYNET_API(max, "max", "max(x, y)", "bmax(x, y)", Expression(const Expression&, const Expression&));
#endif

// ---------------------------------------------------------------------------------------------
// Scalar forms: the constant lives in the attributes (so nodes with equal constants batch).
namespace {
// y = s·x + c (plus_const: s = 1; const_minus: s = -1; scalar_mult: c = 0); dE/dx += s·g.
template <int kScale>
struct AffineScalar {
  // kScale: 1 (x + c), -1 (c - x), 0 (c·x, the constant is the scale)
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const float c = a.attr.as<float>();
    const float* x = a.xs[0].v;
    float* y = a.fx.v;
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
      y[i] = kScale == 0 ? x[i] * c : kScale * x[i] + c;
    });
  }
  template <class P>
  static void bwd(const BackwardArgs& a) {
    const float s = kScale == 0 ? a.attr.as<float>() : float(kScale);
    const float* g = a.dEdf.v;
    float* d = a.dEdxi.v;
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) { d[i] += s * g[i]; });
  }
};
DYNET_DEVICE_KERNELS("plus_const", AffineScalar<1>::fwd, AffineScalar<1>::bwd);
DYNET_DEVICE_KERNELS("const_minus", AffineScalar<-1>::fwd, AffineScalar<-1>::bwd);
DYNET_DEVICE_KERNELS("scalar_mult", AffineScalar<0>::fwd, AffineScalar<0>::bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {

std::vector<OpSample> scalar_samples(Expression (*f)(const Expression&), double (*ref)(double)) {
  auto b = [f](ComputationGraph&, Xs x) { return f(x[0]); };
  std::vector<OpSample> samples = {{"vector", {Dim({5})}, b}, {"batched", {Dim({3, 2}, 3)}, b}};
  for (OpSample& s : samples) s.reference = elementwise_reference(ref);
  return samples;
}
const OpId k_plus_const = register_op(
    {.name = "plus_const", .doc = "y = x + c", .shape = ops::same_shape, .forward = AffineScalar<1>::fwd<dev::HostPrims>,
     .backward = AffineScalar<1>::bwd<dev::HostPrims>,
     .batch = {.batchable = true}, .samples = [] {
       return scalar_samples([](const Expression& x) { return x + 1.5f; }, [](double x) { return x + 1.5; });
     }});
const OpId k_const_minus = register_op(
    {.name = "const_minus", .doc = "y = c - x", .shape = ops::same_shape, .forward = AffineScalar<-1>::fwd<dev::HostPrims>,
     .backward = AffineScalar<-1>::bwd<dev::HostPrims>,
     .batch = {.batchable = true}, .samples = [] {
       return scalar_samples([](const Expression& x) { return 2.f - x; }, [](double x) { return 2 - x; });
     }});
const OpId k_scalar_mult = register_op(
    {.name = "scalar_mult", .doc = "y = c x", .shape = ops::same_shape, .forward = AffineScalar<0>::fwd<dev::HostPrims>,
     .backward = AffineScalar<0>::bwd<dev::HostPrims>,
     .batch = {.batchable = true}, .samples = [] {
       return scalar_samples([](const Expression& x) { return x * -0.75f; }, [](double x) { return x * -0.75; });
     }});
}  // namespace
Expression operator+(const Expression& x, real y) { return make_node(k_plus_const, x, y); }
DYNET_API(operator+, "plus_const", "operator+(x, y)", nullptr, Expression(const Expression&, float));
Expression operator+(real x, const Expression& y) { return make_node(k_plus_const, y, x); }
DYNET_API(operator+, "plus_const", "operator+(x, y)", nullptr, Expression(float, const Expression&));
Expression operator-(const Expression& x, real y) { return make_node(k_plus_const, x, -y); }
DYNET_API(operator-, "plus_const", "operator-(x, y)", nullptr, Expression(const Expression&, float));
Expression operator-(real x, const Expression& y) { return make_node(k_const_minus, y, x); }
DYNET_API(operator-, "const_minus", "operator-(x, y)", nullptr, Expression(float, const Expression&));
Expression operator*(const Expression& x, float y) { return make_node(k_scalar_mult, x, y); }
DYNET_API(operator*, "scalar_mult", "operator*(x, y)", nullptr, Expression(const Expression&, float));
Expression operator/(const Expression& x, float y) { return make_node(k_scalar_mult, x, 1.f / y); }
Expression operator*(float y, const Expression& x) { return x * y; }
DYNET_API(operator*, "scalar_mult", "operator*(y, x)", nullptr, Expression(float, const Expression&));
DYNET_API(operator/, "scalar_mult", "operator/(x, y)", nullptr, Expression(const Expression&, float));
#endif

// ---------------------------------------------------------------------------------------------
// colwise_add(x, bias): bias {m} added to every column of x {m, ...}.
namespace {
DYNET_DEVICE_KERNELS("colwise_add", Binary<AddOp>::fwd, Binary<AddOp>::bwd);  // x + bias, the bias broadcast along the columns
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim colwise_add_shape(const ArgDims& xs, AttrView) {
  const Dim &x = xs[0], &b = xs[1];
  if (b.batch_size() != b.rows() || b.rows() != x.rows())
    op_error("colwise_add", "bias " + b.str() + " must be a column vector with as many rows as x " + x.str());
  Dim out = x;
  out.bd = ops::broadcast_bd("colwise_add", x, b);
  return out;
}
// CPU kernel kept: op_perf x64 generic/CPU 6.4 fwd+bwd (Eigen broadcasts the bias by columns; the generic
// kernel, Binary<AddOp>, divides indices per element).
using CVec = Eigen::Map<const Eigen::VectorXf>;
using Vec = Eigen::Map<Eigen::VectorXf>;
void colwise_add_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &bias = a.xs[1];
  const size_t m = bias.d.rows();
  for (size_t b = 0; b < a.fx.d.bd; ++b)
    cpu::mat(a.fx, b) = cpu::cmat(x, b).colwise() + CVec(bias.batch_ptr(b), m);
}
void colwise_add_bwd(const BackwardArgs& a) {
  const Tensor& g = a.dEdf;
  for (size_t b = 0; b < g.d.bd; ++b) {
    if (a.i == 0)
      cpu::barr(a.dEdxi, b) += cpu::cbarr(g, b);  // unbatched x: batch_ptr stays at 0, summing the batch
    else
      Vec(a.dEdxi.batch_ptr(b), a.dEdxi.d.rows()) += cpu::cmat(g, b).rowwise().sum();
  }
}
std::vector<OpSample> colwise_add_samples() {
  auto b = [](ComputationGraph&, Xs x) { return colwise_add(x[0], x[1]); };
  return {{"matrix", {Dim({3, 4}), Dim({3})}, b},
          {"batched_x", {Dim({3, 2}, 2), Dim({3})}, b},
          {"batched_bias", {Dim({3, 2}), Dim({3, 1}, 3)}, b},
          {"batched_both", {Dim({2, 3, 2}, 2), Dim({2}, 2)}, b},
          {"wrong_rows", {Dim({3, 4}), Dim({4})}, b, -1, 1, true},
          {"matrix_bias", {Dim({3, 4}), Dim({3, 4})}, b, -1, 1, true},
          {"batch_mismatch", {Dim({3, 4}, 2), Dim({3}, 3)}, b, -1, 1, true}};
}
const OpId k_colwise_add = register_op({.name = "colwise_add",
                                        .doc = "y[:, j] = x[:, j] + b",
                                        .shape = colwise_add_shape,
                                        .forward = colwise_add_fwd,
                                        .backward = colwise_add_bwd,
                                        .batch = {.batchable = true},
                                        .samples = colwise_add_samples});
}  // namespace
Expression colwise_add(const Expression& x, const Expression& bias) { return make_node(k_colwise_add, x, bias); }
DYNET_API(colwise_add, "colwise_add", "colwise_add(x, bias)", "colwise_add(x, y)", Expression(const Expression&, const Expression&));
#endif

// ---------------------------------------------------------------------------------------------
// sum / average over a list: equal dims; unbatched arguments broadcast over the batch.
namespace {
// sum / average over a list: y = scale · Σ xₖ, an unbatched xₖ added to every batch element.
template <bool kAverage>
struct List {
  // One launch whatever the number of terms (a program's sum of 64 losses was 65 on a GPU).
  template <class P>
  static void fwd(const ForwardArgs& a) {
    float* y = a.fx.v;
    const size_t bs = a.fx.d.batch_size();
    const unsigned n = a.n;
    const float scale = kAverage ? 1.f / a.n : 1.f;
    const dev::ArgList x = dev::upload_args(a.fx.device, a.scratch, a.xs, n, bs);
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
      const size_t b = i / bs, e = i % bs;
      float s = 0.f;
      for (unsigned k = 0; k < n; ++k) s += x.v[k][b * x.stride[k] + e];
      y[i] = s * scale;
    });
  }
  template <class P>
  static void bwd(const BackwardArgs& a) {
    const float scale = kAverage ? 1.f / a.n : 1.f;
    const float* g = a.dEdf.v;
    const size_t bs = a.fx.d.batch_size(), bd = a.fx.d.bd;
    if (a.member_dx) {
      // kGradientsInOneCall: dxₖ += scale · g for argument k of every member j (member_dx[k · members + j]),
      // member j's gradient being its bd / members blocks of g; an unbatched dxₖ sums them.
      const unsigned K = a.members;
      const size_t mbd = bd / K;
      thread_local std::vector<Tensor> dx;
      dx.clear();
      for (unsigned k = 0; k < a.n; ++k)
        for (unsigned j = 0; j < K; ++j) {
          Dim d = a.xs[k].d;
          d.bd /= K;
          dx.emplace_back(d, a.member_dx[size_t(k) * K + j]);
        }
      const dev::ArgList d = dev::upload_args(a.fx.device, a.scratch, dx.data(), dx.size(), bs);
      P::for_each(a.fx.device, dx.size() * bs, [=] DYNET_LAMBDA(size_t i) {
        const size_t slot = i / bs, e = i % bs;
        const float* gj = g + slot % K * mbd * bs;
        float* out = const_cast<float*>(d.v[slot]);
        if (!out) return;
        // Atomic: an argument may repeat.
        if (d.stride[slot]) {
          for (size_t b = 0; b < mbd; ++b) dev::atomic_add(out + b * bs + e, gj[b * bs + e] * scale);
          return;
        }
        float s = 0.f;
        for (size_t b = 0; b < mbd; ++b) s += gj[b * bs + e];
        dev::atomic_add(out + e, s * scale);
      });
      return;
    }
    dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.dEdxi.d.bd == a.fx.d.bd, a.fx.d.bd, bs,
                           [=] DYNET_LAMBDA(size_t b, size_t j) { return g[b * bs + j] * scale; });
  }
};
DYNET_DEVICE_KERNELS("sum", List<false>::fwd, List<false>::bwd);
DYNET_DEVICE_KERNELS("average", List<true>::fwd, List<true>::bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
template <const char* kName>
Dim list_shape(const ArgDims& xs, AttrView) {
  Dim out = xs[0];
  for (size_t k = 1; k < xs.size(); ++k) {
    if (xs[k].single_batch() != xs[0].single_batch())
      op_error(kName, "argument " + std::to_string(k) + " has dim " + xs[k].str() + " but argument 0 has " +
                          xs[0].str());
    if (xs[k].bd != out.bd) {
      if (out.bd == 1)
        out.bd = xs[k].bd;
      else if (xs[k].bd != 1)
        op_error(kName, "batch sizes differ: argument " + std::to_string(k) + " has dim " + xs[k].str() +
                            " but an earlier argument has " + std::to_string(out.bd) + " batch elements");
    }
  }
  return out;
}
std::vector<OpSample> list_samples(Expression (*f)(const std::vector<Expression>&), bool average) {
  auto b = [f](ComputationGraph&, Xs x) { return f(x); };
  std::vector<OpSample> samples = {{"one", {Dim({3})}, b},
                                   {"two", {Dim({3, 2}), Dim({3, 2})}, b},
                                   {"three_batched", {Dim({2}, 2), Dim({2}, 2), Dim({2}, 2)}, b},
                                   {"mixed_batch", {Dim({2, 2}), Dim({2, 2}, 3), Dim({2, 2})}, b},
                                   {"mismatch", {Dim({3}), Dim({4})}, b, -1, 1, true},
                                   {"batch_mismatch", {Dim({3}, 2), Dim({3}), Dim({3}, 3)}, b, -1, 1, true}};
  for (OpSample& s : samples)  // unbatched arguments repeat against the batched ones
    s.reference = [dims = s.inputs, average](const std::vector<std::vector<double>>& xs) {
      unsigned bd = 1;
      for (const Dim& d : dims) bd = std::max(bd, d.bd);
      const size_t n = dims[0].batch_size();
      std::vector<double> y(n * bd, 0.0);
      for (size_t k = 0; k < xs.size(); ++k)
        for (size_t i = 0; i < y.size(); ++i) y[i] += xs[k][dims[k].bd == 1 ? i % n : i] / (average ? xs.size() : 1);
      return y;
    };
  // Arguments that repeat add into one gradient more than once (on devices in one kernel: atomically).
  samples.push_back({"repeated", {Dim({3}, 2), Dim({3})}, [f](ComputationGraph&, Xs x) { return f({x[0], x[1], x[0], x[1]}); }});
  samples.back().reference = [average](const std::vector<std::vector<double>>& xs) {
    std::vector<double> y(6);
    for (size_t i = 0; i < y.size(); ++i) y[i] = 2 * (xs[0][i] + xs[1][i % 3]) / (average ? 4 : 1);
    return y;
  };
  return samples;
}
constexpr char kListSum[] = "sum";
constexpr char kListAverage[] = "average";
const OpId k_sum = register_op({.name = kListSum,
                                .doc = "y = Σᵢ xᵢ",
                                .shape = list_shape<kListSum>,
                                .forward = List<false>::fwd<dev::HostPrims>,
                                .backward = List<false>::bwd<dev::HostPrims>,
                                .batch = {.batchable = true},
                                .samples = [] { return list_samples(static_cast<Expression (*)(Xs)>(sum), false); },
                                .flags = kGradientsInOneCall});
const OpId k_average = register_op({.name = kListAverage,
                                    .doc = "y = (1/n) Σᵢ xᵢ",
                                    .shape = list_shape<kListAverage>,
                                    .forward = List<true>::fwd<dev::HostPrims>,
                                    .backward = List<true>::bwd<dev::HostPrims>,
                                    .batch = {.batchable = true},
                                    .samples = [] { return list_samples(static_cast<Expression (*)(Xs)>(average), true); },
                                    .flags = kGradientsInOneCall});
}  // namespace
Expression sum(const std::initializer_list<Expression>& xs) { return make_node_n(k_sum, xs); }
DYNET_API(sum, "sum", "sum(xs)", nullptr, Expression(const std::initializer_list<Expression>&));
Expression sum(const std::vector<Expression>& xs) { return make_node_n(k_sum, xs); }
DYNET_API(sum, "sum", "sum(xs)", "esum(xs)", Expression(const std::vector<Expression>&));
Expression average(const std::initializer_list<Expression>& xs) {
  return make_node_n(k_average, xs);
}
DYNET_API(average, "average", "average(xs)", nullptr, Expression(const std::initializer_list<Expression>&));
Expression average(const std::vector<Expression>& xs) { return make_node_n(k_average, xs); }
DYNET_API(average, "average", "average(xs)", "average(xs)", Expression(const std::vector<Expression>&));
#endif

// ---------------------------------------------------------------------------------------------
// Per-batch-element reductions to {1}: dot_product, squared_norm, squared_distance.
namespace {
// Per-batch-element reductions: y[b] = Σ_j v(x₁[b, j], x₂[b, j]), an unbatched argument shared.
// kKind: 0 dot_product, 1 squared_norm (one argument), 2 squared_distance.
template <int kKind>
struct PairReduceDev {
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const size_t bs = a.xs[0].d.batch_size();
    const float* x = a.xs[0].v;
    const float* y = a.xs[kKind == 1 ? 0 : 1].v;
    const size_t xs = a.xs[0].d.bd == 1 ? 0 : bs, ys = a.xs[kKind == 1 ? 0 : 1].d.bd == 1 ? 0 : bs;
    float* f = a.fx.v;
    P::reduce(
        a.fx.device, a.fx.d.bd, bs, 0.f,
        [=] DYNET_LAMBDA(size_t b, size_t j) {
          const float u = x[b * xs + j], w = y[b * ys + j];
          return kKind == 0 ? u * w : kKind == 1 ? u * u : (u - w) * (u - w);
        },
        dev::Sum(), [=] DYNET_LAMBDA(size_t b, float v) { f[b] = v; });
  }
  template <class P>
  static void bwd(const BackwardArgs& a) {
    const size_t bs = a.xs[0].d.batch_size();
    const unsigned other = kKind == 1 ? 0 : 1 - a.i;
    const float* u = a.xs[a.i].v;  // this argument
    const float* w = a.xs[other].v;
    const size_t us = a.xs[a.i].d.bd == 1 ? 0 : bs, ws = a.xs[other].d.bd == 1 ? 0 : bs;
    const float* g = a.dEdf.v;
    // d/du: g·w (dot), 2g·u (norm), 2g·(u - w) (distance, from either side)
    dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.dEdxi.d.bd != 1, a.fx.d.bd, bs,
                           [=] DYNET_LAMBDA(size_t b, size_t j) {
                             const float ub = u[b * us + j], wb = w[b * ws + j];
                             return kKind == 0 ? g[b] * wb : kKind == 1 ? 2.f * g[b] * ub : 2.f * g[b] * (ub - wb);
                           });
  }
};
DYNET_DEVICE_KERNELS("dot_product", PairReduceDev<0>::fwd, PairReduceDev<0>::bwd);
DYNET_DEVICE_KERNELS("squared_norm", PairReduceDev<1>::fwd, PairReduceDev<1>::bwd);
DYNET_DEVICE_KERNELS("squared_distance", PairReduceDev<2>::fwd, PairReduceDev<2>::bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
template <const char* kName>
Dim pair_reduce_shape(const ArgDims& xs, AttrView) {
  if (xs[0].single_batch() != xs[1].single_batch())
    op_error(kName, "dims differ: " + xs[0].str() + " vs " + xs[1].str());
  return Dim({1}, ops::broadcast_bd(kName, xs[0], xs[1]));
}
Dim squared_norm_shape(const ArgDims& xs, AttrView) { return Dim({1}, xs[0].bd); }

// CPU kernels kept: Eigen vectorises the sums (the generic reduce adds serially); op_perf generic/CPU
// dot_product 1.08 single, 1.39 x64; squared_distance 1.16, 1.36; squared_norm 1.28, 1.89 fwd+bwd.
void dot_product_fwd(const ForwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b)
    a.fx.v[b] = (cpu::cbarr(a.xs[0], b) * cpu::cbarr(a.xs[1], b)).sum();
}
void dot_product_bwd(const BackwardArgs& a) {
  const Tensor& other = a.xs[1 - a.i];
  for (size_t b = 0; b < a.dEdf.d.bd; ++b) cpu::barr(a.dEdxi, b) += a.dEdf.v[b] * cpu::cbarr(other, b);
}
void squared_norm_fwd(const ForwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b) a.fx.v[b] = cpu::cbarr(a.xs[0], b).square().sum();
}
void squared_norm_bwd(const BackwardArgs& a) {
  for (size_t b = 0; b < a.dEdf.d.bd; ++b)
    cpu::barr(a.dEdxi, b) += (2.f * a.dEdf.v[b]) * cpu::cbarr(a.xs[0], b);
}
void squared_distance_fwd(const ForwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b)
    a.fx.v[b] = (cpu::cbarr(a.xs[0], b) - cpu::cbarr(a.xs[1], b)).square().sum();
}
void squared_distance_bwd(const BackwardArgs& a) {
  const float sign = a.i == 0 ? 2.f : -2.f;
  for (size_t b = 0; b < a.dEdf.d.bd; ++b)
    cpu::barr(a.dEdxi, b) += (sign * a.dEdf.v[b]) * (cpu::cbarr(a.xs[0], b) - cpu::cbarr(a.xs[1], b));
}
std::vector<OpSample> pair_reduce_samples(Expression (*f)(const Expression&, const Expression&)) {
  auto b = [f](ComputationGraph&, Xs x) { return f(x[0], x[1]); };
  return {{"vector", {Dim({4}), Dim({4})}, b},
          {"matrix_batched", {Dim({2, 3}, 2), Dim({2, 3}, 2)}, b},
          {"unbatched_left", {Dim({3}), Dim({3}, 3)}, b},
          {"unbatched_right", {Dim({3}, 2), Dim({3, 1})}, b},
          {"mismatch", {Dim({3}), Dim({4})}, b, -1, 1, true},
          {"batch_mismatch", {Dim({3}, 2), Dim({3}, 3)}, b, -1, 1, true}};
}
constexpr char kDot[] = "dot_product";
constexpr char kSqDist[] = "squared_distance";
const OpId k_dot_product = register_op({.name = kDot,
                                        .doc = "y = Σ x₁ ⊙ x₂ (per batch element)",
                                        .shape = pair_reduce_shape<kDot>,
                                        .forward = dot_product_fwd,
                                        .backward = dot_product_bwd,
                                        .batch = {.batchable = true},
                                        .samples = [] { return pair_reduce_samples(dot_product); },
                                        .takes_empty = true});
const OpId k_squared_distance = register_op({.name = kSqDist,
                                             .doc = "y = Σ (x₁ - x₂)² (per batch element)",
                                             .shape = pair_reduce_shape<kSqDist>,
                                             .forward = squared_distance_fwd,
                                             .backward = squared_distance_bwd,
                                             .batch = {.batchable = true},
                                             .samples = [] { return pair_reduce_samples(squared_distance); },
                                             .takes_empty = true});
const OpId k_squared_norm = register_op({.name = "squared_norm",
                                         .doc = "y = Σ x² (per batch element)",
                                         .shape = squared_norm_shape,
                                         .forward = squared_norm_fwd,
                                         .backward = squared_norm_bwd,
                                         .batch = {.batchable = true},
                                         .samples = [] {
                                           auto b = [](ComputationGraph&, Xs x) { return squared_norm(x[0]); };
                                           return std::vector<OpSample>{{"vector", {Dim({5})}, b},
                                                                        {"batched", {Dim({2, 3}, 3)}, b}};
                                         },
                                         .takes_empty = true});
}  // namespace
Expression dot_product(const Expression& x, const Expression& y) { return make_node(k_dot_product, x, y); }
DYNET_API(dot_product, "dot_product", "dot_product(x, y)", "dot_product(x, y)", Expression(const Expression&, const Expression&));
Expression squared_norm(const Expression& x) { return make_node(k_squared_norm, x); }
DYNET_API(squared_norm, "squared_norm", "squared_norm(x)", "squared_norm(x)", Expression(const Expression&));
Expression squared_distance(const Expression& x, const Expression& y) {
  return make_node(k_squared_distance, x, y);
}
DYNET_API(squared_distance, "squared_distance", "squared_distance(x, y)", "squared_distance(x, y)", Expression(const Expression&, const Expression&));
#endif

}  // namespace dynet
