// Softmax family and the losses built on it: softmax along any dim, log_softmax of columns (also
// restricted to a set of rows), elementwise logsumexp over a list, pickneglogsoftmax (one index,
// or one per batch element), sparsemax and its loss, constrained_softmax.
#include "kernels/device/prims.h"
#include "kernels/device/strided.h"

#ifndef DYNET_CUDA_PASS
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/mem.h"
#include "kernels/cpu/softmax.h"
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {
namespace {

// ---------------------------------------------------------------------------------------------
// ---- device kernels ----
// A fiber's element: fiber o (of outer·inner) at position k along the axis of length n.
struct FiberIndex {
  size_t inner, n;
  DYNET_HD size_t operator()(size_t o, size_t k) const { return (o / inner) * n * inner + k * inner + o % inner; }
  DYNET_HD size_t fiber_of(size_t i) const { return (i / (n * inner)) * inner + i % inner; }
};
// m[o] = max, s[o] = Σ exp(x - m) over each fiber (scratch memory of the device).
template <class P>
void max_and_sum_exp(Device* dev, const float* x, FiberIndex at, size_t fibers, float* m, float* s) {
  P::reduce(
      dev, fibers, at.n, -INFINITY, [=] DYNET_LAMBDA(size_t o, size_t k) { return x[at(o, k)]; }, dev::Max(),
      [=] DYNET_LAMBDA(size_t o, float v) { m[o] = v; });
  P::reduce(
      dev, fibers, at.n, 0.f, [=] DYNET_LAMBDA(size_t o, size_t k) { return fn::exp(x[at(o, k)] - m[o]); }, dev::Sum(),
      [=] DYNET_LAMBDA(size_t o, float v) { s[o] = v; });
}

#ifndef DYNET_CUDA_PASS
using ops::Xs;
using ops::ArrayMap;
using ops::CArrayMap;
using Array2Map = Eigen::Map<Eigen::ArrayXXf, Eigen::Unaligned>;
using CArray2Map = Eigen::Map<const Eigen::ArrayXXf, Eigen::Unaligned>;

using ops::arg_batch;

// A tensor seen as [inner, n, outer] around axis `axis` (batch folded into outer).
using ops::Fibers;
using ops::fibers;

// Samples of ops with kinks add fixed, well separated offsets to small random inputs (not scaled
// down, which would shrink the gradients below the harness's tolerance), so every
// finite-difference probe stays on one side of each kink.
Expression offset_rows(const Expression& x, const std::vector<float>& offsets) {
  ComputationGraph& g = *x.pg;
  return x + input(g, Dim({static_cast<unsigned>(offsets.size())}), offsets);
}
// Throws unless ids[0..n) are distinct rows below `rows` and n > 0.
void check_index_set(const char* op, const char* what, const unsigned* ids, size_t n, unsigned rows,
                     const Dim& x) {
  if (n == 0) op_error(op, std::string("empty ") + what);
  std::vector<bool> seen(rows, false);
  for (size_t k = 0; k < n; ++k) {
    if (ids[k] >= rows)
      op_error(op, std::string(what) + " index " + std::to_string(ids[k]) + " out of range for input " + x.str() +
                       " (" + std::to_string(rows) + " rows)");
    if (seen[ids[k]]) op_error(op, std::string(what) + " lists row " + std::to_string(ids[k]) + " twice");
    seen[ids[k]] = true;
  }
}
#endif

// ---------------------------------------------------------------------------------------------
// softmax(x, d): exp(x) / Σ exp(x) along dim d.
template <class P>
void softmax_dev_fwd(const ForwardArgs& a) {
  const dev::Fibers f = dev::fibers(a.fx.d, a.attr.as<unsigned>());
  const FiberIndex at{f.inner, f.n};
  const size_t fibers = f.outer * f.inner;
  float* m = a.scratch.allocate_floats(fibers);
  float* s = a.scratch.allocate_floats(fibers);
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  max_and_sum_exp<P>(a.fx.device, x, at, fibers, m, s);
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t o = at.fiber_of(i);
    y[i] = fn::exp(x[i] - m[o]) / s[o];
  });
}
// dx += y ⊙ (g - Σ g ⊙ y) along each fiber
template <class P>
void softmax_dev_bwd(const BackwardArgs& a) {
  const dev::Fibers f = dev::fibers(a.fx.d, a.attr.as<unsigned>());
  const FiberIndex at{f.inner, f.n};
  const size_t fibers = f.outer * f.inner;
  float* dot = a.scratch.allocate_floats(fibers);
  const float *y = a.fx.v, *g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::reduce(
      a.fx.device, fibers, f.n, 0.f, [=] DYNET_LAMBDA(size_t o, size_t k) { return y[at(o, k)] * g[at(o, k)]; },
      dev::Sum(), [=] DYNET_LAMBDA(size_t o, float v) { dot[o] = v; });
  P::for_each(a.fx.device, a.fx.d.size(),
              [=] DYNET_LAMBDA(size_t i) { dx[i] += y[i] * (g[i] - dot[at.fiber_of(i)]); });
}
DYNET_DEVICE_KERNELS("softmax", softmax_dev_fwd, softmax_dev_bwd);

#ifndef DYNET_CUDA_PASS
Dim softmax_shape(const ArgDims& xs, AttrView a) {
  const unsigned d = a.as<unsigned>();
  // Past the rank the "dim" has size 1 and the result would be all ones: a mistake, not a request.
  if (d >= xs[0].nd)
    op_error("softmax", "dim " + std::to_string(d) + " out of range for input " + xs[0].str());
  return xs[0];
}
// CPU kernel kept: op_perf generic/CPU 1.2 single, 1.4 x64 fwd+bwd; at a {10000} column 7.0 fwd, 5.7 bwd x64
// (cpu::sum_exp's vectorised exp; {100,100} along dim 1: 3.3 and 10.5).
void softmax_fwd(const ForwardArgs& a) {
  const Fibers f = fibers(a.fx.d, a.attr.as<unsigned>());
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  if (f.inner == 1) {
    for (size_t o = 0; o < f.outer; ++o) {
      const float* xc = x + size_t(o) * f.n;
      float* yc = y + size_t(o) * f.n;
      const float s = cpu::sum_exp(xc, long(f.n), cpu::max_of(xc, long(f.n)), yc);
      ArrayMap(yc, f.n) /= s;
    }
    return;
  }
  ArrayMap m(a.scratch.allocate_floats(f.inner), f.inner);
  ArrayMap s(a.scratch.allocate_floats(f.inner), f.inner);
  const size_t block = size_t(f.inner) * f.n;
  for (size_t o = 0; o < f.outer; ++o) {
    CArray2Map xb(x + o * block, f.inner, f.n);
    Array2Map yb(y + o * block, f.inner, f.n);
    m = xb.rowwise().maxCoeff();
    yb = (xb.colwise() - m).exp();
    s = yb.rowwise().sum();
    yb.colwise() /= s;
  }
}
// dx += y ⊙ (g - Σ g ⊙ y) along each fiber
void softmax_bwd(const BackwardArgs& a) {
  const Fibers f = fibers(a.fx.d, a.attr.as<unsigned>());
  const float* y = a.fx.v;
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  if (f.inner == 1) {
    for (size_t o = 0; o < f.outer; ++o) {
      const size_t off = size_t(o) * f.n;
      CArrayMap yc(y + off, f.n), gc(g + off, f.n);
      const float dot = (yc * gc).sum();
      ArrayMap(dx + off, f.n) += yc * (gc - dot);
    }
    return;
  }
  ArrayMap dot(a.scratch.allocate_floats(f.inner), f.inner);
  const size_t block = size_t(f.inner) * f.n;
  for (size_t o = 0; o < f.outer; ++o) {
    CArray2Map yb(y + o * block, f.inner, f.n), gb(g + o * block, f.inner, f.n);
    dot = (yb * gb).rowwise().sum();
    Array2Map(dx + o * block, f.inner, f.n) += yb * (gb.colwise() - dot);
  }
}
// softmax (or log_softmax) along dim d in double: the samples' reference.
OpSample::Reference softmax_reference(const Dim& dim, unsigned d, bool log) {
  return [dim, d, log](const std::vector<std::vector<double>>& xs) {
    const Fibers f = fibers(dim, d);
    std::vector<double> y(xs[0].size());
    for (size_t o = 0; o < f.outer; ++o)
      for (size_t i = 0; i < f.inner; ++i) {
        const double* x = xs[0].data() + o * f.n * f.inner + i;
        double m = -INFINITY, z = 0;
        for (size_t k = 0; k < f.n; ++k) m = std::max(m, x[k * f.inner]);
        for (size_t k = 0; k < f.n; ++k) z += std::exp(x[k * f.inner] - m);
        for (size_t k = 0; k < f.n; ++k) {
          const double v = x[k * f.inner] - m - std::log(z);
          y[o * f.n * f.inner + i + k * f.inner] = log ? v : std::exp(v);
        }
      }
    return y;
  };
}

std::vector<OpSample> softmax_samples() {
  // A good sample along dim d carries its reference; a bad one does not need it.
  auto along = [](const char* name, Dim x, unsigned d, bool bad = false) {
    OpSample s{name, {x}, [d](ComputationGraph&, Xs xs) { return softmax(xs[0], d); }, -2, 2, bad};
    if (!bad) s.reference = softmax_reference(x, d, false);
    return s;
  };
  return {along("vector", Dim({5}), 0),
          along("matrix", Dim({4, 3}), 0),
          along("matrix_dim1", Dim({3, 4}), 1),
          along("tensor_dim1", Dim({2, 3, 4}), 1),
          along("batched", Dim({3, 2}, 3), 0),
          along("batched_dim1", Dim({3, 2}, 2), 1),
          along("bad_dim", Dim({3}), DYNET_MAX_TENSOR_DIM, true),
          along("dim_past_rank", Dim({3, 4}), 2, true)};
}
const OpId k_softmax = register_op({.name = "softmax",
                                    .doc = "y = exp(x) / Σ exp(x) along dim d",
                                    .shape = softmax_shape,
                                    .forward = softmax_fwd,
                                    .backward = softmax_bwd,
                                    .batch = {.batchable = true},
                                    .samples = softmax_samples});
}  // namespace
Expression softmax(const Expression& x, unsigned d) { return make_node(k_softmax, x, d); }
DYNET_API(softmax, "softmax", "softmax(x, d = 0)", "softmax(x, d=0)", Expression(const Expression&, unsigned));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// log_softmax(x): x - log Σ exp(x) for each column.
// log_softmax of each column: y = x - m - log s.
template <class P>
void log_softmax_dev_fwd(const ForwardArgs& a) {
  const FiberIndex at{1, a.fx.d.rows()};
  const size_t fibers = a.fx.d.size() / at.n;
  float* m = a.scratch.allocate_floats(fibers);
  float* s = a.scratch.allocate_floats(fibers);
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  max_and_sum_exp<P>(a.fx.device, x, at, fibers, m, s);
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t o = at.fiber_of(i);
    y[i] = x[i] - m[o] - fn::log(s[o]);
  });
}
// dx += g - softmax(x) Σ g
template <class P>
void log_softmax_dev_bwd(const BackwardArgs& a) {
  const FiberIndex at{1, a.fx.d.rows()};
  const size_t fibers = a.fx.d.size() / at.n;
  float* gsum = a.scratch.allocate_floats(fibers);
  const float *y = a.fx.v, *g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::reduce(
      a.fx.device, fibers, at.n, 0.f, [=] DYNET_LAMBDA(size_t o, size_t k) { return g[at(o, k)]; }, dev::Sum(),
      [=] DYNET_LAMBDA(size_t o, float v) { gsum[o] = v; });
  P::for_each(a.fx.device, a.fx.d.size(),
              [=] DYNET_LAMBDA(size_t i) { dx[i] += g[i] - fn::exp(y[i]) * gsum[at.fiber_of(i)]; });
}
DYNET_DEVICE_KERNELS("log_softmax", log_softmax_dev_fwd, log_softmax_dev_bwd);

#ifndef DYNET_CUDA_PASS
// CPU kernel kept: op_perf x64 generic/CPU 0.6 fwd+bwd on 4-5 rows, but 5.0 fwd, 3.3 bwd at a {10000} column
// (the vectorised exp of kernels/cpu/softmax.h).
void log_softmax_fwd(const ForwardArgs& a) {
  const Fibers f = fibers(a.fx.d, 0);
  for (size_t o = 0; o < f.outer; ++o) {
    const size_t off = size_t(o) * f.n;
    const float* xc = a.xs[0].v + off;
    const float m = cpu::max_of(xc, long(f.n));
    ArrayMap(a.fx.v + off, f.n) = (CArrayMap(xc, f.n) - m) - std::log(cpu::sum_exp(xc, long(f.n), m, nullptr));
  }
}
// dx += g - softmax(x) Σ g
void log_softmax_bwd(const BackwardArgs& a) {
  const Fibers f = fibers(a.fx.d, 0);
  for (size_t o = 0; o < f.outer; ++o) {
    const size_t off = size_t(o) * f.n;
    CArrayMap gc(a.dEdf.v + off, f.n);
    ArrayMap(a.dEdxi.v + off, f.n) += gc;
    cpu::add_scaled_exp(a.fx.v + off, long(f.n), 0.f, -gc.sum(), a.dEdxi.v + off);
  }
}
std::vector<OpSample> log_softmax_samples() {
  auto build = [](ComputationGraph&, Xs x) { return log_softmax(x[0]); };
  std::vector<OpSample> samples = {{"vector", {Dim({5})}, build, -2, 2},
                                   {"matrix", {Dim({4, 3})}, build, -2, 2},
                                   {"batched", {Dim({4}, 3)}, build, -2, 2}};
  for (OpSample& x : samples) x.reference = softmax_reference(x.inputs[0], 0, true);
  return samples;
}
const OpId k_log_softmax = register_op({.name = "log_softmax",
                                        .doc = "y = x - log Σ exp(x) (each column)",
                                        .shape = ops::same_shape,
                                        .forward = log_softmax_fwd,
                                        .backward = log_softmax_bwd,
                                        .batch = {.batchable = true},
                                        .samples = log_softmax_samples});
}  // namespace
Expression log_softmax(const Expression& x) { return make_node(k_log_softmax, x); }
DYNET_API(log_softmax, "log_softmax", "log_softmax(x)", "log_softmax(x, restrict=None)", Expression(const Expression&));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// logsumexp({x_1..x_k}): log Σ_i exp(x_i), elementwise; the batch broadcasts.
// logsumexp over a list, elementwise.
template <class P>
void logsumexp_dev_fwd(const ForwardArgs& a) {
  const size_t bs = a.fx.d.batch_size(), n = a.n;
  const dev::ArgList xs = dev::upload_args(a.fx.device, a.scratch, a.xs, n, bs);
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) {
    const size_t b = j / bs, e = j % bs;
    float m = xs.v[0][b * xs.stride[0] + e];
    for (size_t i = 1; i < n; ++i) m = fn::max(m, xs.v[i][b * xs.stride[i] + e]);
    float s = 0.f;
    for (size_t i = 0; i < n; ++i) s += fn::exp(xs.v[i][b * xs.stride[i] + e] - m);
    y[j] = m + fn::log(s);
  });
}
template <class P>
void logsumexp_dev_bwd(const BackwardArgs& a) {
  const size_t bs = a.fx.d.batch_size();
  const Tensor& x = a.xs[a.i];
  const size_t xs = x.d.bd == 1 ? 0 : bs;
  const float *xv = x.v, *y = a.fx.v, *g = a.dEdf.v;
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, x.d.bd != 1, a.fx.d.bd, bs, [=] DYNET_LAMBDA(size_t b, size_t e) {
    return g[b * bs + e] * fn::exp(xv[b * xs + e] - y[b * bs + e]);
  });
}
DYNET_DEVICE_KERNELS("logsumexp", logsumexp_dev_fwd, logsumexp_dev_bwd);
#ifndef DYNET_CUDA_PASS
Dim logsumexp_shape(const ArgDims& xs, AttrView) {
  Dim out = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i].single_batch() != xs[0].single_batch())
      op_error("logsumexp", "arguments must have the same shape, got " + xs[0].str() + " and " + xs[i].str());
    out.bd = ops::broadcast_bd("logsumexp", out, xs[i]);
  }
  return out;
}
// CPU kernel kept: op_perf x64 generic/CPU 0.85 fwd+bwd at 3-6 values, but 1.75 fwd, 1.86 bwd for three {1000}
// arguments (Eigen's vectorised exp).
void logsumexp_fwd(const ForwardArgs& a) {
  const size_t B = a.fx.d.bd, bs = a.fx.d.batch_size();
  ArrayMap s(a.scratch.allocate_floats(bs), bs);
  for (size_t b = 0; b < B; ++b) {
    ArrayMap y(a.fx.batch_ptr(b), bs);
    auto arg = [&](unsigned i) { return CArrayMap(a.xs[i].v + size_t(arg_batch(a.xs[i].d, b, B)) * bs, bs); };
    if (a.n == 1) {
      y = arg(0);
      continue;
    }
    y = arg(0);  // running max, then the result
    for (size_t i = 1; i < a.n; ++i) y = y.max(arg(i));
    s.setZero();
    for (size_t i = 0; i < a.n; ++i) s += (arg(i) - y).exp();
    y += s.log();
  }
}
// dx_i += g ⊙ exp(x_i - y)
void logsumexp_bwd(const BackwardArgs& a) {
  const size_t B = a.fx.d.bd, bs = a.fx.d.batch_size();
  const Tensor& x = a.xs[a.i];
  for (size_t b = 0; b < B; ++b) {
    const size_t xoff = size_t(arg_batch(x.d, b, B)) * bs;
    CArrayMap xb(x.v + xoff, bs), y(a.fx.batch_ptr(b), bs), g(a.dEdf.batch_ptr(b), bs);
    ArrayMap(a.dEdxi.v + xoff, bs) += g * (xb - y).exp();
  }
}
std::vector<OpSample> logsumexp_samples() {
  auto build = [](ComputationGraph&, Xs x) { return logsumexp(x); };
  std::vector<OpSample> samples = {{"single", {Dim({4})}, build, -2, 2},
          {"two", {Dim({3, 2}), Dim({3, 2})}, build, -2, 2},
          {"three", {Dim({4}), Dim({4}), Dim({4})}, build, -2, 2},
          {"batched", {Dim({3}, 2), Dim({3}, 2)}, build, -2, 2},
          {"broadcast", {Dim({3}, 2), Dim({3})}, build, -2, 2},
          {"bad_shape", {Dim({3}), Dim({4})}, build, -1, 1, true},
          {"bad_batch", {Dim({3}, 2), Dim({3}, 3)}, build, -1, 1, true}};
  for (OpSample& x : samples)  // an unbatched argument repeats against the batched ones
    x.reference = [dims = x.inputs](const std::vector<std::vector<double>>& xs) {
      const size_t n = dims[0].batch_size();
      size_t size = 0;
      for (const std::vector<double>& v : xs) size = std::max(size, v.size());
      std::vector<double> y(size);
      for (size_t i = 0; i < size; ++i) {
        double z = 0;
        for (size_t k = 0; k < xs.size(); ++k) z += std::exp(xs[k][dims[k].bd == 1 ? i % n : i]);
        y[i] = std::log(z);
      }
      return y;
    };
  return samples;
}
const OpId k_logsumexp = register_op({.name = "logsumexp",
                                      .doc = "y = log Σᵢ exp(xᵢ) (elementwise over the list)",
                                      .shape = logsumexp_shape,
                                      .forward = logsumexp_fwd,
                                      .backward = logsumexp_bwd,
                                      .batch = {.batchable = true},
                                      .samples = logsumexp_samples});
}  // namespace
Expression logsumexp(const std::initializer_list<Expression>& xs) { return make_node_n(k_logsumexp, xs); }
DYNET_API(logsumexp, "logsumexp", "logsumexp(xs)", nullptr, Expression(const std::initializer_list<Expression>&));
Expression logsumexp(const std::vector<Expression>& xs) { return make_node_n(k_logsumexp, xs); }
DYNET_API(logsumexp, "logsumexp", "logsumexp(xs)", "logsumexp(xs)", Expression(const std::vector<Expression>&));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// pickneglogsoftmax(x, v): -log softmax(x)[v] = logZ - x[v], per batch element.
}  // namespace
// The pick indices of a pickneglogsoftmax node, validated (defined with the CPU kernels below; the CUDA
// pass links to the host pass's definition).
void pnls_read_indices(AttrView a, unsigned rows, unsigned B, unsigned* ids);

namespace {
// aux: logZ per batch element, then the picked index per batch element (as in pnls_fwd).
template <class P>
void pnls_dev_fwd(const ForwardArgs& a) {
  const Tensor& x = a.xs[0];
  const size_t B = a.fx.d.bd, n = x.d.rows(), xs = x.d.bd == 1 ? 0 : n;
  std::vector<unsigned> host_ids(B);
  pnls_read_indices(a.attr, n, B, host_ids.data());
  float* logz = a.aux;
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux + B);
  a.fx.device->copy_from_host(ids, host_ids.data(), B * sizeof(unsigned));
  float* m = a.scratch.allocate_floats(B);
  const float* xv = x.v;
  float* y = a.fx.v;
  P::reduce(
      a.fx.device, B, n, -INFINITY, [=] DYNET_LAMBDA(size_t b, size_t k) { return xv[b * xs + k]; }, dev::Max(),
      [=] DYNET_LAMBDA(size_t b, float v) { m[b] = v; });
  P::reduce(
      a.fx.device, B, n, 0.f, [=] DYNET_LAMBDA(size_t b, size_t k) { return fn::exp(xv[b * xs + k] - m[b]); },
      dev::Sum(), [=] DYNET_LAMBDA(size_t b, float v) {
        logz[b] = m[b] + fn::log(v);
        y[b] = logz[b] - xv[b * xs + ids[b]];
      });
}
// dx += g (softmax(x) - onehot(v))
template <class P>
void pnls_dev_bwd(const BackwardArgs& a) {
  const Tensor& x = a.xs[0];
  const size_t n = x.d.rows(), B = a.fx.d.bd, xs = x.d.bd == 1 ? 0 : n;
  const float *xv = x.v, *g = a.dEdf.v, *logz = a.aux;
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux + B);
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, x.d.bd != 1, B, n, [=] DYNET_LAMBDA(size_t b, size_t k) {
    return g[b] * (fn::exp(xv[b * xs + k] - logz[b]) - (k == ids[b] ? 1.f : 0.f));
  });
}
DYNET_DEVICE_KERNELS("pickneglogsoftmax", pnls_dev_fwd, pnls_dev_bwd);

#ifndef DYNET_CUDA_PASS
struct PickAttr {
  const unsigned* pv = nullptr;                 // single index read at forward time
  const std::vector<unsigned>* pvec = nullptr;  // one index per batch element, read at forward time
  uint32_t n = 0;                               // number of indices (inline ones follow in the tail)
  uint32_t per_batch = 0;                       // 1: the vector forms (one index per batch element)
};

// Fills ids[0..B) with the index for each output batch element, validated against `rows`.
void read_indices(const char* op, AttrView a, unsigned rows, unsigned B, unsigned* ids) {
  const ops::IndexList src = ops::index_list<PickAttr>(op, a);
  for (size_t b = 0; b < B; ++b) {
    const unsigned v = src.ids[b % src.n];
    if (v >= rows)
      op_error(op, "index " + std::to_string(v) + " out of range for dim " + std::to_string(rows) + " of the input");
    ids[b] = v;
  }
}

Dim pnls_shape(const ArgDims& xs, AttrView a) {
  const Dim& x = xs[0];
  const PickAttr& p = a.as<PickAttr>();
  if (x.batch_size() != x.rows() || x.rows() == 0)
    op_error("pickneglogsoftmax", "input must be a column vector, got " + x.str());
  if (p.per_batch && p.n != x.bd)
    op_error("pickneglogsoftmax", std::to_string(p.n) + " indices given for input " + x.str() + " with " +
                                      std::to_string(x.bd) + " batch elements");
  if (!p.pv && !p.pvec) {
    const unsigned* ids = a.tail<unsigned, PickAttr>();
    for (size_t k = 0; k < p.n; ++k)
      if (ids[k] >= x.rows())
        op_error("pickneglogsoftmax",
                 "index " + std::to_string(ids[k]) + " out of range for input " + x.str() + " (dim " +
                     std::to_string(x.rows()) + ")");
  }
  return Dim({1}, x.bd);
}
// aux: logZ per batch element, then the picked index per batch element.
size_t pnls_aux(const Dim& fx, const ArgDims&, AttrView) { return 2 * size_t(fx.bd); }
// CPU kernel kept: op_perf x64 generic/CPU 0.5 fwd+bwd at 3-5 rows, but 4.4 fwd, 13 bwd at 10000 rows (an
// rnnlm vocabulary: cpu::sum_exp / add_scaled_exp vectorise the exp).
void pnls_fwd(const ForwardArgs& a) {
  const Tensor& x = a.xs[0];
  const size_t B = a.fx.d.bd, n = x.d.rows();
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux + B);
  read_indices("pickneglogsoftmax", a.attr, n, B, ids);
  for (size_t b = 0; b < B; ++b) {
    const float* xc = x.v + size_t(arg_batch(x.d, b, B)) * n;
    const float m = cpu::max_of(xc, long(n));
    const float logz = m + std::log(cpu::sum_exp(xc, long(n), m, nullptr));
    a.aux[b] = logz;
    a.fx.v[b] = logz - xc[ids[b]];
  }
}
// dx += g (softmax(x) - onehot(v))
void pnls_bwd(const BackwardArgs& a) {
  const Tensor& x = a.xs[0];
  const size_t B = a.fx.d.bd, n = x.d.rows();
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux + B);
  for (size_t b = 0; b < B; ++b) {
    const size_t off = size_t(arg_batch(x.d, b, B)) * n;
    const float g = a.dEdf.v[b];
    cpu::add_scaled_exp(x.v + off, long(n), a.aux[b], g, a.dEdxi.v + off);
    a.dEdxi.v[off + ids[b]] -= g;
  }
}
std::vector<OpSample> pnls_samples() {
  static const unsigned index = 3;
  static const std::vector<unsigned> indices = {1, 0};
  static const unsigned bad_index = 9;
  static const std::vector<unsigned> bad_indices = {0, 4};
  auto one = [](unsigned v) { return [v](ComputationGraph&, Xs x) { return pickneglogsoftmax(x[0], v); }; };
  auto many = [](std::vector<unsigned> v) {
    return [v](ComputationGraph&, Xs x) { return pickneglogsoftmax(x[0], v); };
  };
  auto ptr = [](const unsigned* p) { return [p](ComputationGraph&, Xs x) { return pickneglogsoftmax(x[0], p); }; };
  auto vptr = [](const std::vector<unsigned>* p) {
    return [p](ComputationGraph&, Xs x) { return pickneglogsoftmax(x[0], p); };
  };
  static const unsigned per_index[3] = {3, 0, 2};
  static const std::vector<unsigned> per_indices[3] = {{1, 0}, {3, 3}, {0, 2}};
  return {{.name = "instances", .inputs = {Dim({4})}, .build = one(1), .lo = -2, .hi = 2,
           .instance = [](ComputationGraph&, Xs x, unsigned k) { return pickneglogsoftmax(x[0], k % 4); }},
          {.name = "vector_instances", .inputs = {Dim({4}, 2)}, .build = many({1, 0}), .lo = -2, .hi = 2,
           .instance = [](ComputationGraph&, Xs x, unsigned k) { return pickneglogsoftmax(x[0], per_indices[k % 3]); }},
          {.name = "pointer_instances", .inputs = {Dim({4}, 2)}, .build = ptr(&per_index[0]), .lo = -2, .hi = 2,
           .instance = [](ComputationGraph&, Xs x, unsigned k) { return pickneglogsoftmax(x[0], &per_index[k % 3]); }},
          {"index", {Dim({5})}, one(2), -2, 2},
          {"column", {Dim({4, 1})}, one(0), -2, 2},
          {"batched_one_index", {Dim({4}, 3)}, one(1), -2, 2},
          {"batched_indices", {Dim({4}, 3)}, many({0, 3, 1}), -2, 2},
          {"pointer", {Dim({4}, 2)}, ptr(&index), -2, 2},
          {"pointer_vector", {Dim({3}, 2)}, vptr(&indices), -2, 2},
          {"out_of_range", {Dim({5})}, one(5), -1, 1, true},
          {"vector_out_of_range", {Dim({3}, 2)}, many({0, 3}), -1, 1, true},
          {"wrong_count", {Dim({4}, 3)}, many({0, 1}), -1, 1, true},
          {"matrix", {Dim({3, 2})}, one(0), -1, 1, true},
          {"pointer_out_of_range", {Dim({4})}, ptr(&bad_index), -1, 1, true},
          {"pointer_vector_out_of_range", {Dim({4}, 2)}, vptr(&bad_indices), -1, 1, true}};
}
// Every pickneglogsoftmax of one input dim batches; the batched node picks every member's indices.
void pnls_merge(const AttrView* m, unsigned k, const Dim& d, std::vector<uint64_t>& out) {
  ops::merge_index_lists<PickAttr>("pickneglogsoftmax", m, k, d, out);
}
const OpId k_pnls = register_op({.name = "pickneglogsoftmax",
                                 .doc = "y = log Σ exp(x) - x[v] (per batch element, v one index or one per element)",
                                 .shape = pnls_shape,
                                 .forward = pnls_fwd,
                                 .backward = pnls_bwd,
                                 .aux_floats = pnls_aux,
                                 .batch = {.batchable = true, .key = no_key, .merge = pnls_merge},
                                 .samples = pnls_samples});

Expression pnls_node(const Expression& x, PickAttr p, const unsigned* ids) {
  return make_node_with_ids(k_pnls, x, p, ids, p.n);
}
// pickneglogsoftmax's public functions are at the end of this file (the API entries keep their order).
}  // namespace
void pnls_read_indices(AttrView a, unsigned rows, unsigned B, unsigned* ids) {
  read_indices("pickneglogsoftmax", a, rows, B, ids);
}
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// log_softmax(x, R): x - log Σ_{j∈R} exp(x_j) on the rows listed in R, for each column. The other
// rows are -inf, the log of their zero probability, exactly as DyNet's RestrictedLogSoftmax; every
// value DyNet gives as finite is finite here too. Their incoming gradient is ignored.
// restricted_log_softmax: the restricted rows (host memory, in the attribute's tail) go to scratch.
struct RestrictAttr {
  uint32_t n = 0;  // number of restricted rows (they follow in the tail)
  uint32_t unused = 0;
};
template <class P>
void restricted_log_softmax_fwd(const ForwardArgs& a) {
  const size_t nr = a.attr.as<RestrictAttr>().n, rows = a.fx.d.rows(), cols = a.fx.d.size() / rows;
  const unsigned* ids = dev::upload(a.fx.device, a.scratch, a.attr.tail<unsigned, RestrictAttr>(), nr);
  float* m = a.scratch.allocate_floats(cols);
  float* logz = a.scratch.allocate_floats(cols);
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::reduce(
      a.fx.device, cols, nr, -INFINITY, [=] DYNET_LAMBDA(size_t o, size_t k) { return x[o * rows + ids[k]]; },
      dev::Max(), [=] DYNET_LAMBDA(size_t o, float v) { m[o] = v; });
  P::reduce(
      a.fx.device, cols, nr, 0.f, [=] DYNET_LAMBDA(size_t o, size_t k) { return fn::exp(x[o * rows + ids[k]] - m[o]); },
      dev::Sum(), [=] DYNET_LAMBDA(size_t o, float v) { logz[o] = m[o] + fn::log(v); });
  a.fx.device->fill(y, a.fx.d.size(), -INFINITY);
  P::for_each(a.fx.device, cols * nr, [=] DYNET_LAMBDA(size_t j) {
    const size_t o = j / nr, r = o * rows + ids[j % nr];
    y[r] = x[r] - logz[o];
  });
}
// dx_r += g_r - softmax_R(x)_r Σ_{j∈R} g_j for r ∈ R
template <class P>
void restricted_log_softmax_bwd(const BackwardArgs& a) {
  const size_t nr = a.attr.as<RestrictAttr>().n, rows = a.fx.d.rows(), cols = a.fx.d.size() / rows;
  const unsigned* ids = dev::upload(a.fx.device, a.scratch, a.attr.tail<unsigned, RestrictAttr>(), nr);
  float* gsum = a.scratch.allocate_floats(cols);
  const float *y = a.fx.v, *g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::reduce(
      a.fx.device, cols, nr, 0.f, [=] DYNET_LAMBDA(size_t o, size_t k) { return g[o * rows + ids[k]]; }, dev::Sum(),
      [=] DYNET_LAMBDA(size_t o, float v) { gsum[o] = v; });
  P::for_each(a.fx.device, cols * nr, [=] DYNET_LAMBDA(size_t j) {
    const size_t o = j / nr, r = o * rows + ids[j % nr];
    dx[r] += g[r] - fn::exp(y[r]) * gsum[o];
  });
}
DYNET_DEVICE_KERNELS("restricted_log_softmax", restricted_log_softmax_fwd, restricted_log_softmax_bwd);

#ifndef DYNET_CUDA_PASS
Dim restricted_log_softmax_shape(const ArgDims& xs, AttrView a) {
  check_index_set("restricted_log_softmax", "restriction", a.tail<unsigned, RestrictAttr>(),
                  a.as<RestrictAttr>().n, xs[0].rows(), xs[0]);
  return xs[0];
}
std::vector<OpSample> restricted_log_softmax_samples() {
  auto build = [](std::vector<unsigned> r) {
    return [r](ComputationGraph&, Xs x) { return log_softmax(x[0], r); };
  };
  // The rows outside the restriction are -inf; the harness needs finite values, so these samples
  // read back the restricted rows (test_losses.cc checks the -inf rows).
  auto restricted_rows = [](std::vector<unsigned> r) {
    return [r](ComputationGraph&, Xs x) { return select_rows(log_softmax(x[0], r), r); };
  };
  return {{"all_rows_permuted", {Dim({4})}, build({2, 0, 3, 1}), -2, 2},
          {"subset", {Dim({5})}, restricted_rows({3, 0, 1}), -2, 2},
          {"single_row", {Dim({5})}, restricted_rows({2}), -2, 2},
          {"matrix_columns", {Dim({4, 3})}, restricted_rows({1, 3}), -2, 2},
          {"batched", {Dim({5}, 3)}, restricted_rows({4, 2, 0}), -2, 2},
          {"empty", {Dim({4})}, build({}), -1, 1, true},
          {"out_of_range", {Dim({4})}, build({1, 4}), -1, 1, true},
          {"repeated_row", {Dim({4})}, build({1, 2, 1}), -1, 1, true}};
}
const OpId k_restricted_log_softmax =
    register_op({.name = "restricted_log_softmax",
                 .doc = "y_r = x_r - log Σ_{j∈R} exp(x_j) for r ∈ R, y_r = -inf otherwise (each column)",
                 .shape = restricted_log_softmax_shape,
                 .forward = restricted_log_softmax_fwd<dev::HostPrims>,
                 .backward = restricted_log_softmax_bwd<dev::HostPrims>,
                 .batch = {.batchable = true},
                 .samples = restricted_log_softmax_samples});
}  // namespace
Expression log_softmax(const Expression& x, const std::vector<unsigned>& restriction) {
  const RestrictAttr r{static_cast<uint32_t>(restriction.size()), 0};
  const auto blob = attr_with_tail(r, restriction.data(), restriction.size());
  return make_node_n(k_restricted_log_softmax, &x, 1, blob.data(), blob.bytes());
}
DYNET_API(log_softmax, "restricted_log_softmax", "log_softmax(x, restriction)", "log_softmax(x, restrict=None)", Expression(const Expression&, const std::vector<unsigned>&));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// sparsemax(x) (Martins & Astudillo 2016): the Euclidean projection of each column onto the
// probability simplex, max(x - τ, 0) with τ chosen so the column sums to 1.
// sparsemax_loss(x, Q): the sparsemax loss (Martins & Astudillo 2016) of a column vector x for
// the target distribution q uniform over the rows Q: ½ Σ_{j∈S(x)} (x_j² - τ²) + ½ ‖q‖² - qᵀx,
// clamped at 0 against rounding, per batch element (one Q for all of them). Its gradient is
// sparsemax(x) - q.
}  // namespace
// The rows of sparsemax_loss's target support, validated (a pointer's vector is checked as forward reads it),
// and their number (defined with the CPU kernels below; the CUDA pass links to the host pass's definition).
const unsigned* sparsemax_loss_support(AttrView a, const Dim& x, size_t* n);

namespace {
// The sparsemax threshold τ of each of the `cols` columns of z (n rows), into scratch. Without sorting:
// element j is in the support iff Σ_i max(z_i - z_j, 0) < 1 (the sorted prefix condition of
// sparsemax_threshold, 1 + k z_(k) > Σ_{i≤k} z_(i), rewritten for z_j = z_(k); ties agree), and
// τ = (Σ_support z - 1) / |support|. O(n²) per column, all of it in parallel.
template <class P>
float* sparsemax_thresholds(Device* dev, MemPool& scratch, const float* z, size_t n, size_t cols) {
  float* in_support = scratch.allocate_floats(n * cols);
  float* support_sum = scratch.allocate_floats(cols);
  float* tau = scratch.allocate_floats(cols);
  P::reduce(
      dev, n * cols, n, 0.f, [=] DYNET_LAMBDA(size_t j, size_t i) { return fn::max(z[j - j % n + i] - z[j], 0.f); },
      dev::Sum(), [=] DYNET_LAMBDA(size_t j, float s) { in_support[j] = s < 1.f ? 1.f : 0.f; });
  P::reduce(
      dev, cols, n, 0.f, [=] DYNET_LAMBDA(size_t o, size_t i) { return in_support[o * n + i] * z[o * n + i]; },
      dev::Sum(), [=] DYNET_LAMBDA(size_t o, float s) { support_sum[o] = s; });
  P::reduce(
      dev, cols, n, 0.f, [=] DYNET_LAMBDA(size_t o, size_t i) { return in_support[o * n + i]; }, dev::Sum(),
      [=] DYNET_LAMBDA(size_t o, float k) { tau[o] = (support_sum[o] - 1.f) / k; });
  return tau;
}
template <class P>
void sparsemax_dev_fwd(const ForwardArgs& a) {
  const size_t n = a.fx.d.rows(), cols = a.fx.d.size() / n;
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  const float* tau = sparsemax_thresholds<P>(a.fx.device, a.scratch, x, n, cols);
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) { y[i] = fn::max(x[i] - tau[i / n], 0.f); });
}
// On the support S = {y > 0}: dx_i += g_i - mean_{j∈S} g_j.
template <class P>
void sparsemax_dev_bwd(const BackwardArgs& a) {
  const size_t n = a.fx.d.rows(), cols = a.fx.d.size() / n;
  const float *y = a.fx.v, *g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  float* gsum = a.scratch.allocate_floats(cols);
  float* gmean = a.scratch.allocate_floats(cols);
  P::reduce(
      a.fx.device, cols, n, 0.f, [=] DYNET_LAMBDA(size_t o, size_t i) { return y[o * n + i] > 0.f ? g[o * n + i] : 0.f; },
      dev::Sum(), [=] DYNET_LAMBDA(size_t o, float s) { gsum[o] = s; });
  P::reduce(
      a.fx.device, cols, n, 0.f, [=] DYNET_LAMBDA(size_t o, size_t i) { return y[o * n + i] > 0.f ? 1.f : 0.f; },
      dev::Sum(), [=] DYNET_LAMBDA(size_t o, float k) { gmean[o] = gsum[o] / k; });
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
    if (y[i] > 0.f) dx[i] += g[i] - gmean[i / n];
  });
}
DYNET_DEVICE_KERNELS("sparsemax", sparsemax_dev_fwd, sparsemax_dev_bwd);

// sparsemax_loss: aux as in sparsemax_loss_fwd (sparsemax(x), then the support's size and rows, which the
// gradient reads on the device).
struct SupportAttr {
  const std::vector<unsigned>* pvec = nullptr;  // read at forward time
  uint32_t n = 0;                               // number of inline rows (they follow in the tail)
  uint32_t unused = 0;
};
template <class P>
void sparsemax_loss_dev_fwd(const ForwardArgs& a) {
  const Tensor& x = a.xs[0];
  const size_t n = x.d.rows(), B = a.fx.d.bd;
  size_t nq = 0;
  const unsigned* host_q = sparsemax_loss_support(a.attr, x.d, &nq);
  std::vector<uint32_t> kept(nq + 1);
  kept[0] = static_cast<uint32_t>(nq);
  std::copy(host_q, host_q + nq, kept.begin() + 1);
  uint32_t* dev_kept = reinterpret_cast<uint32_t*>(a.aux + x.d.size());
  a.fx.device->copy_from_host(dev_kept, kept.data(), kept.size() * sizeof(uint32_t));
  const unsigned* q = dev_kept + 1;
  const float qprob = 1.f / static_cast<float>(nq);
  const float* z = x.v;
  float *sm = a.aux, *y = a.fx.v;
  const float* tau = sparsemax_thresholds<P>(a.fx.device, a.scratch, z, n, B);
  P::for_each(a.fx.device, B * n, [=] DYNET_LAMBDA(size_t i) { sm[i] = fn::max(z[i] - tau[i / n], 0.f); });
  // ½ Σ_{j∈S} (z_j² - τ²) + ½ ‖q‖² - qᵀz, with ½ ‖q‖² = ½ · nq · (1/nq)²
  float* support_term = a.scratch.allocate_floats(B);
  P::reduce(
      a.fx.device, B, n, 0.f,
      [=] DYNET_LAMBDA(size_t b, size_t k) {
        const float zk = z[b * n + k], t = tau[b];
        return sm[b * n + k] > 0.f ? 0.5f * (zk - t) * (zk + t) : 0.f;
      },
      dev::Sum(), [=] DYNET_LAMBDA(size_t b, float s) { support_term[b] = s; });
  P::reduce(
      a.fx.device, B, nq, 0.f, [=] DYNET_LAMBDA(size_t b, size_t k) { return z[b * n + q[k]]; }, dev::Sum(),
      [=] DYNET_LAMBDA(size_t b, float s) { y[b] = fn::max(0.5f * qprob + support_term[b] - qprob * s, 0.f); });
}
// dx += g (sparsemax(x) - q)
template <class P>
void sparsemax_loss_dev_bwd(const BackwardArgs& a) {
  const size_t n = a.xs[0].d.rows();
  const uint32_t* kept = reinterpret_cast<const uint32_t*>(a.aux + a.xs[0].d.size());
  const float *sm = a.aux, *g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.xs[0].d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t b = i / n, k = i % n, nq = kept[0];
    bool target = false;
    for (size_t j = 0; j < nq; ++j) target |= kept[1 + j] == k;
    dx[i] += g[b] * (sm[i] - (target ? 1.f / static_cast<float>(nq) : 0.f));
  });
}
DYNET_DEVICE_KERNELS("sparsemax_loss", sparsemax_loss_dev_fwd, sparsemax_loss_dev_bwd);

#ifndef DYNET_CUDA_PASS
// The threshold τ of one column z[0..n): with z sorted descending, the support is the longest
// prefix k with 1 + k z_(k) > Σ_{j≤k} z_(j) (it is always a prefix), and τ = (Σ_{j≤k} z_(j) - 1) / k.
// `sorted` is n floats of scratch.
float sparsemax_threshold(const float* z, unsigned n, float* sorted) {
  std::copy(z, z + n, sorted);
  std::sort(sorted, sorted + n, std::greater<float>());
  double prefix = 0, support_sum = 0;
  unsigned k = 0;
  for (; k < n; ++k) {
    prefix += sorted[k];
    if (1.0 + double(k + 1) * sorted[k] <= prefix) break;
    support_sum = prefix;
  }
  return static_cast<float>((support_sum - 1.0) / k);
}

// CPU kernel kept: op_perf x64 generic/CPU 1.6 fwd+bwd; and it sorts each column, O(n log n), where the
// generic threshold costs O(n²) (a parallel test per element).
void sparsemax_fwd(const ForwardArgs& a) {
  const Fibers f = fibers(a.fx.d, 0);
  float* sorted = a.scratch.allocate_floats(f.n);
  for (size_t o = 0; o < f.outer; ++o) {
    const size_t off = size_t(o) * f.n;
    const float tau = sparsemax_threshold(a.xs[0].v + off, f.n, sorted);
    ArrayMap(a.fx.v + off, f.n) = (CArrayMap(a.xs[0].v + off, f.n) - tau).max(0.f);
  }
}
// On the support S = {y > 0}: dx_i += g_i - mean_{j∈S} g_j; zero elsewhere.
void sparsemax_bwd(const BackwardArgs& a) {
  const Fibers f = fibers(a.fx.d, 0);
  for (size_t o = 0; o < f.outer; ++o) {
    const size_t off = size_t(o) * f.n;
    const float *y = a.fx.v + off, *g = a.dEdf.v + off;
    float* dx = a.dEdxi.v + off;
    float gsum = 0.f;
    unsigned support = 0;
    for (size_t k = 0; k < f.n; ++k)
      if (y[k] > 0.f) gsum += g[k], ++support;
    const float gmean = gsum / static_cast<float>(support);
    for (size_t k = 0; k < f.n; ++k)
      if (y[k] > 0.f) dx[k] += g[k] - gmean;
  }
}
std::vector<OpSample> sparsemax_samples() {
  // support {0, 2} (τ = 0.4) and {0, 1, 2} (τ ≈ -0.12); the inputs add at most ±0.05
  static const std::vector<float> two = {1.f, -0.5f, 0.8f, -1.f, 0.1f};
  static const std::vector<float> three = {0.3f, 0.1f, 0.25f, -2.f};
  auto build = [](const std::vector<float>* off) {
    return [off](ComputationGraph&, Xs x) { return sparsemax(offset_rows(x[0], *off)); };
  };
  auto matrix = [](ComputationGraph& g, Xs x) {
    // columns: `three` and a shuffled copy of `two` (an offset per column, added as a matrix)
    std::vector<float> off = three;
    off.insert(off.end(), {-1.f, 1.f, 0.1f, 0.8f});
    return sparsemax(x[0] + input(g, Dim({4, 2}), off));
  };
  return {{"support_two", {Dim({5})}, build(&two), -0.05f, 0.05f},
          {"support_three", {Dim({4})}, build(&three), -0.05f, 0.05f},
          {"matrix_columns", {Dim({4, 2})}, matrix, -0.05f, 0.05f},
          {"batched", {Dim({5}, 3)}, build(&two), -0.05f, 0.05f},
          {"plain_input", {Dim({3})}, [](ComputationGraph&, Xs x) { return sparsemax(x[0]); }, -0.2f, 0.2f}};
}
const OpId k_sparsemax = register_op({.name = "sparsemax",
                                      .doc = "y = max(x - τ, 0) with τ such that Σ y = 1 (each column)",
                                      .shape = ops::same_shape,
                                      .forward = sparsemax_fwd,
                                      .backward = sparsemax_bwd,
                                      .batch = {.batchable = true},
                                      .samples = sparsemax_samples});

Dim sparsemax_loss_shape(const ArgDims& xs, AttrView a) {
  const Dim& x = xs[0];
  if (x.batch_size() != x.rows() || x.rows() == 0)
    op_error("sparsemax_loss", "input must be a column vector, got " + x.str());
  const SupportAttr& s = a.as<SupportAttr>();
  if (!s.pvec) check_index_set("sparsemax_loss", "target support", a.tail<unsigned, SupportAttr>(), s.n, x.rows(), x);
  return Dim({1}, x.bd);
}
// aux: sparsemax(x), then the support the forward read (its size, then its rows): the gradient uses
// exactly those, even when the vector behind the pointer changed since.
size_t sparsemax_loss_aux(const Dim&, const ArgDims& xs, AttrView a) {
  const SupportAttr& s = a.as<SupportAttr>();
  return xs[0].size() + 1 + (s.pvec ? s.pvec->size() : s.n);
}
// CPU kernel kept: op_perf x64 generic/CPU 1.9 fwd+bwd, the forward 1.8-2.0 (sparsemax's O(n²) threshold).
void sparsemax_loss_fwd(const ForwardArgs& a) {
  const Tensor& x = a.xs[0];
  const size_t n = x.d.rows(), B = a.fx.d.bd;
  size_t nq = 0;
  const unsigned* q = sparsemax_loss_support(a.attr, x.d, &nq);
  uint32_t* kept = reinterpret_cast<uint32_t*>(a.aux + x.d.size());
  kept[0] = static_cast<uint32_t>(nq);
  std::memcpy(kept + 1, q, nq * sizeof(unsigned));
  const float qprob = 1.f / static_cast<float>(nq);
  float* sorted = a.scratch.allocate_floats(n);
  for (size_t b = 0; b < B; ++b) {
    const float* z = x.v + size_t(arg_batch(x.d, b, B)) * n;
    float* sm = a.aux + size_t(b) * n;
    const float tau = sparsemax_threshold(z, n, sorted);
    double loss = 0.5 * qprob;  // ½ ‖q‖² = ½ · nq · (1/nq)²
    for (size_t k = 0; k < n; ++k) {
      sm[k] = std::max(z[k] - tau, 0.f);
      if (sm[k] > 0.f) loss += 0.5 * (double(z[k]) - tau) * (double(z[k]) + tau);
    }
    for (size_t k = 0; k < nq; ++k) loss -= double(qprob) * z[q[k]];
    a.fx.v[b] = static_cast<float>(std::max(loss, 0.0));
  }
}
// dx += g (sparsemax(x) - q)
void sparsemax_loss_bwd(const BackwardArgs& a) {
  const Tensor& x = a.xs[0];
  const size_t n = x.d.rows(), B = a.fx.d.bd;
  const uint32_t* kept = reinterpret_cast<const uint32_t*>(a.aux + x.d.size());
  const size_t nq = kept[0];
  const unsigned* q = kept + 1;
  const float qprob = 1.f / static_cast<float>(nq);
  for (size_t b = 0; b < B; ++b) {
    const float g = a.dEdf.v[b];
    float* dx = a.dEdxi.v + size_t(arg_batch(x.d, b, B)) * n;
    ArrayMap(dx, n) += g * CArrayMap(a.aux + size_t(b) * n, n);
    for (size_t k = 0; k < nq; ++k) dx[q[k]] -= g * qprob;
  }
}
std::vector<OpSample> sparsemax_loss_samples() {
  static const std::vector<float> two = {1.f, -0.5f, 0.8f, -1.f, 0.1f};  // sparsemax support {0, 2}
  static const std::vector<unsigned> target = {2, 3};
  static const std::vector<unsigned> bad_target = {0, 5};
  auto build = [](std::vector<unsigned> q) {
    return [q](ComputationGraph&, Xs x) { return sparsemax_loss(offset_rows(x[0], two), q); };
  };
  auto ptr = [](const std::vector<unsigned>* q) {
    return [q](ComputationGraph&, Xs x) { return sparsemax_loss(offset_rows(x[0], two), q); };
  };
  auto plain = [](std::vector<unsigned> q) {
    return [q](ComputationGraph&, Xs x) { return sparsemax_loss(x[0], q); };
  };
  return {{"one_target", {Dim({5})}, build({1}), -0.05f, 0.05f},
          {"target_in_support", {Dim({5})}, build({0, 2}), -0.05f, 0.05f},
          {"pointer", {Dim({5})}, ptr(&target), -0.05f, 0.05f},
          {"batched", {Dim({5}, 3)}, build({4, 0}), -0.05f, 0.05f},
          {"empty_target", {Dim({4})}, plain({}), -1, 1, true},
          {"out_of_range", {Dim({4})}, plain({1, 4}), -1, 1, true},
          {"repeated_target", {Dim({4})}, plain({1, 1}), -1, 1, true},
          {"matrix", {Dim({4, 2})}, plain({1}), -1, 1, true},
          {"pointer_out_of_range", {Dim({5})}, [](ComputationGraph&, Xs x) {
             return sparsemax_loss(x[0], &bad_target); }, -1, 1, true}};
}
const OpId k_sparsemax_loss =
    register_op({.name = "sparsemax_loss",
                 .doc = "y = ½ Σ_{j: x_j>τ} (x_j² - τ²) + ½ ‖q‖² - qᵀx, q uniform over the target rows (per batch element)",
                 .shape = sparsemax_loss_shape,
                 .forward = sparsemax_loss_fwd,
                 .backward = sparsemax_loss_bwd,
                 .aux_floats = sparsemax_loss_aux,
                 .batch = {.batchable = true},
                 .samples = sparsemax_loss_samples});

Expression sparsemax_loss_node(const Expression& x, SupportAttr s, const unsigned* ids) {
  return make_node_with_ids(k_sparsemax_loss, x, s, ids, s.n);
}
}  // namespace
const unsigned* sparsemax_loss_support(AttrView a, const Dim& x, size_t* n) {
  const SupportAttr& s = a.as<SupportAttr>();
  const unsigned* q = s.pvec ? s.pvec->data() : a.tail<unsigned, SupportAttr>();
  *n = s.pvec ? s.pvec->size() : s.n;
  if (s.pvec) check_index_set("sparsemax_loss", "target support", q, *n, x.rows(), x);
  return q;
}
Expression sparsemax(const Expression& x) { return make_node(k_sparsemax, x); }
DYNET_API(sparsemax, "sparsemax", "sparsemax(x)", "sparsemax(x)", Expression(const Expression&));
Expression sparsemax_loss(const Expression& x, const std::vector<unsigned>& target_support) {
  return sparsemax_loss_node(x, SupportAttr{nullptr, static_cast<uint32_t>(target_support.size()), 0},
                             target_support.data());
}
DYNET_API(sparsemax_loss, "sparsemax_loss", "sparsemax_loss(x, target_support: payload)", nullptr, Expression(const Expression&, const std::vector<unsigned>&));
Expression sparsemax_loss(const Expression& x, const std::vector<unsigned>* ptarget_support) {
  if (!ptarget_support)
    throw std::invalid_argument(
        "sparsemax_loss: null target support pointer (a braced {0} selects this overload; write "
        "std::vector<unsigned>{0})");
  return sparsemax_loss_node(x, SupportAttr{ptarget_support, 0, 0}, nullptr);
}
DYNET_API(sparsemax_loss, "sparsemax_loss", "sparsemax_loss(x, ptarget_support: payload)", nullptr, Expression(const Expression&, const std::vector<unsigned>*));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// constrained_softmax(x, u) (Martins & Kreutzer 2017): the distribution p closest to softmax(x) in
// KL divergence with p ≤ u. Rows whose bound binds (the saturated set A) get p = u; the others
// share the remaining mass 1 - Σ_A u in proportion to exp(x). x and u are column vectors of the
// same size; either may be unbatched. Needs u ≥ 0; where Σ u < 1 (no such p) y = u, every row saturated.
}  // namespace
// Throws unless constrained_softmax's bounds for output batch element b (n of them at ub, host memory) are
// non-negative (defined with the CPU kernels below).
void check_constrained_bounds(const float* ub, size_t n, size_t b);

namespace {
// constrained_softmax of one column: p ≤ u closest to softmax(x) in KL divergence;
// saturated[k] = 1 for the rows at their bound, saturated[n] = the saturated mass. q: n floats of scratch.
DYNET_HD inline void constrained_softmax_column(const float* x, const float* u, size_t n, float* q, float* p,
                                                float* saturated) {
  // Bounds summing to less than 1 admit no distribution: every row is then at its bound (p = u, the limit
  // of min(u_k, c exp(x_k)) as c grows), as in DyNet, whose tutorial calls it so.
  double bound_sum = 0;
  for (size_t k = 0; k < n; ++k) bound_sum += u[k];
  if (bound_sum < 1.0 - 1e-5) {
    for (size_t k = 0; k < n; ++k) p[k] = u[k], saturated[k] = 1.f;
    saturated[n] = static_cast<float>(bound_sum);
    return;
  }
  float m = x[0];
  for (size_t k = 1; k < n; ++k) m = fn::max(m, x[k]);
  for (size_t k = 0; k < n; ++k) q[k] = fn::exp(x[k] - m), saturated[k] = 0.f;
  // Saturating the rows that exceed their bound only raises the others' share, so a row once
  // saturated stays saturated: repeat until no free row exceeds its bound (at most n rounds).
  double mass = 0;  // Σ_A u
  for (bool changed = true; changed;) {
    changed = false;
    double free_sum = 0;
    for (size_t k = 0; k < n; ++k)
      if (saturated[k] == 0.f) free_sum += q[k];
    if (free_sum <= 0) break;
    const double scale = (1.0 - mass) / free_sum;
    double new_mass = mass;
    for (size_t k = 0; k < n; ++k) {
      if (saturated[k] != 0.f) continue;
      p[k] = static_cast<float>(q[k] * scale);
      if (p[k] > u[k]) p[k] = u[k], saturated[k] = 1.f, new_mass += u[k], changed = true;
    }
    mass = new_mass;
  }
  saturated[n] = static_cast<float>(mass);
}
// Per batch element: the number of bounds that are not >= 0, read back to the host for
// check_constrained_bounds (which reads the bounds themselves only to name the bad one); then one thread per
// batch element.
template <class P>
void constrained_softmax_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &u = a.xs[1];
  const size_t n = a.fx.d.rows(), B = a.fx.d.bd, xs = x.d.bd == 1 ? 0 : n, us = u.d.bd == 1 ? 0 : n;
  const float *xv = x.v, *uv = u.v;
  double* checks = static_cast<double*>(a.scratch.allocate(B * sizeof(double)));
  P::reduce(
      a.fx.device, B, n, 0.0, [=] DYNET_LAMBDA(size_t b, size_t k) { return uv[b * us + k] >= 0.f ? 0.0 : 1.0; },
      dev::Sum(), [=] DYNET_LAMBDA(size_t b, double s) { checks[b] = s; });
  std::vector<double> host(B);
  a.fx.device->copy_to_host(host.data(), checks, host.size() * sizeof(double));
  for (size_t b = 0; b < B; ++b)
    if (host[b] > 0) {
      std::vector<float> buf;
      check_constrained_bounds(host_values(u, &buf) + b * us, n, b);
    }
  float* q = a.scratch.allocate_floats(B * n);
  float *p = a.fx.v, *saturated = a.aux;
  P::for_each(a.fx.device, B, [=] DYNET_LAMBDA(size_t b) {
    constrained_softmax_column(xv + b * xs, uv + b * us, n, q + b * n, p + b * n, saturated + b * (n + 1));
  });
}
// With s = 1 - Σ_A u and ḡ = Σ_{k∉A} p_k g_k / s (per batch element):
// dx_k += p_k (g_k - ḡ) for free rows, du_k += g_k - ḡ for saturated rows.
template <class P>
void constrained_softmax_bwd(const BackwardArgs& a) {
  const size_t n = a.fx.d.rows(), B = a.fx.d.bd;
  const float *p = a.fx.v, *g = a.dEdf.v, *saturated = a.aux;
  float* gbar = a.scratch.allocate_floats(B);
  P::reduce(
      a.fx.device, B, n, 0.0,
      [=] DYNET_LAMBDA(size_t b, size_t k) {
        return saturated[b * (n + 1) + k] == 0.f ? double(p[b * n + k]) * g[b * n + k] : 0.0;
      },
      dev::Sum(), [=] DYNET_LAMBDA(size_t b, double weighted) {
        const double free_mass = 1.0 - saturated[b * (n + 1) + n];
        gbar[b] = free_mass > 0 ? static_cast<float>(weighted / free_mass) : 0.f;
      });
  const bool logits = a.i == 0;
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.xs[a.i].d.bd != 1, B, n, [=] DYNET_LAMBDA(size_t b, size_t k) {
    const bool is_saturated = saturated[b * (n + 1) + k] != 0.f;
    const float d = g[b * n + k] - gbar[b];
    if (logits) return is_saturated ? 0.f : p[b * n + k] * d;
    return is_saturated ? d : 0.f;
  });
}
DYNET_DEVICE_KERNELS("constrained_softmax", constrained_softmax_fwd, constrained_softmax_bwd);

#ifndef DYNET_CUDA_PASS
Dim constrained_softmax_shape(const ArgDims& xs, AttrView) {
  const Dim &x = xs[0], &u = xs[1];
  if (x.batch_size() != x.rows() || u.batch_size() != u.rows() || x.rows() != u.rows() || x.rows() == 0)
    op_error("constrained_softmax",
             "x and the upper bounds u must be column vectors of the same size, got " + x.str() + " and " + u.str());
  Dim out = x;
  out.bd = ops::broadcast_bd("constrained_softmax", x, u);
  return out;
}
// aux per batch element: n flags (1 = saturated) and the saturated mass Σ_A u
size_t constrained_softmax_aux(const Dim& fx, const ArgDims&, AttrView) { return size_t(fx.bd) * (fx.rows() + 1); }
std::vector<OpSample> constrained_softmax_samples() {
  // logits 3 + ε, 0.5 + ε, ε, ε and bounds 0.3 + ε', 1 + ε', ... (|ε| ≤ 0.05): row 0 (softmax
  // ≈ 0.85) saturates at ≈ 0.3, the others stay well below their bounds.
  static const std::vector<float> logits = {3.f, 0.5f, 0.f, 0.f};
  static const std::vector<float> bounds = {0.3f, 1.f, 1.f, 1.f};
  static const std::vector<float> loose = {1.f, 1.f, 1.f, 1.f};
  auto build = [](const std::vector<float>* u) {
    return [u](ComputationGraph&, Xs x) {
      return constrained_softmax(offset_rows(x[0], logits), offset_rows(x[1], *u));
    };
  };
  auto plain = [](ComputationGraph&, Xs x) { return constrained_softmax(x[0], x[1]); };
  return {{"one_saturated", {Dim({4}), Dim({4})}, build(&bounds), -0.05f, 0.05f},
          {"none_saturated", {Dim({4}), Dim({4})}, build(&loose), -0.05f, 0.05f},
          {"batched", {Dim({4}, 2), Dim({4}, 2)}, build(&bounds), -0.05f, 0.05f},
          {"unbatched_bounds", {Dim({4}, 3), Dim({4})}, build(&bounds), -0.05f, 0.05f},
          {"unbatched_logits", {Dim({4}), Dim({4}, 2)}, build(&bounds), -0.05f, 0.05f},
          {"size_mismatch", {Dim({4}), Dim({3})}, plain, 0.5f, 1.f, true},
          {"matrix", {Dim({2, 2}), Dim({2, 2})}, plain, 0.5f, 1.f, true},
          {"batch_mismatch", {Dim({3}, 2), Dim({3}, 3)}, plain, 0.5f, 1.f, true},
          {"bounds_below_one", {Dim({4}), Dim({4})}, plain, 0.f, 0.2f},  // y = u
          {"negative_bound", {Dim({2}), Dim({2})}, plain, -2.f, -1.f, true}};
}
const OpId k_constrained_softmax =
    register_op({.name = "constrained_softmax",
                 .doc = "y = argmin_{p ∈ simplex, p ≤ u} KL(p ‖ softmax(x)), i.e. y_k = min(u_k, c exp(x_k)) with c such that Σ y = 1",
                 .shape = constrained_softmax_shape,
                 .forward = constrained_softmax_fwd<dev::HostPrims>,
                 .backward = constrained_softmax_bwd<dev::HostPrims>,
                 .aux_floats = constrained_softmax_aux,
                 .batch = {.batchable = true},
                 .samples = constrained_softmax_samples});
}  // namespace
void check_constrained_bounds(const float* ub, size_t n, size_t b) {
  for (size_t k = 0; k < n; ++k) {
    if (!(ub[k] >= 0.f))
      op_error("constrained_softmax", "upper bound u[" + std::to_string(k) + "] = " + std::to_string(ub[k]) +
                                          " is negative (batch element " + std::to_string(b) + ")");
  }
}
Expression constrained_softmax(const Expression& x, const Expression& y) {
  return make_node(k_constrained_softmax, x, y);
}
DYNET_API(constrained_softmax, "constrained_softmax", "constrained_softmax(x, y)", "constrained_softmax(x, y)", Expression(const Expression&, const Expression&));
namespace {
#endif

}  // namespace

// ---------------------------------------------------------------------------------------------
// pickneglogsoftmax's public functions (its op is defined above, after logsumexp's): they come last
// because include/dynet/expr.h declares the API entries in this file's order.
#ifndef DYNET_CUDA_PASS
Expression pickneglogsoftmax(const Expression& x, unsigned v) {
  return pnls_node(x, PickAttr{nullptr, nullptr, 1, 0}, &v);
}
DYNET_API(pickneglogsoftmax, "pickneglogsoftmax", "pickneglogsoftmax(x, v: payload)", "pickneglogsoftmax(x, v)", Expression(const Expression&, unsigned));
Expression pickneglogsoftmax(const Expression& x, const unsigned* pv) {
  if (!pv) throw std::invalid_argument("pickneglogsoftmax: null index pointer");
  return pnls_node(x, PickAttr{pv, nullptr, 1, 0}, nullptr);
}
DYNET_API(pickneglogsoftmax, "pickneglogsoftmax", "pickneglogsoftmax(x, pv: payload)", nullptr, Expression(const Expression&, const unsigned*));
Expression pickneglogsoftmax(const Expression& x, const std::vector<unsigned>& v) {
  if (v.empty()) throw std::invalid_argument("pickneglogsoftmax: empty index vector");
  return pnls_node(x, PickAttr{nullptr, nullptr, static_cast<uint32_t>(v.size()), 1}, v.data());
}
DYNET_API(pickneglogsoftmax, "pickneglogsoftmax", "pickneglogsoftmax(x, v: payload)", "pickneglogsoftmax_batch(x, vs)", Expression(const Expression&, const std::vector<unsigned>&));
Expression pickneglogsoftmax(const Expression& x, const std::vector<unsigned>* pv) {
  if (!pv) throw std::invalid_argument("pickneglogsoftmax: null index pointer");
  if (pv->empty()) throw std::invalid_argument("pickneglogsoftmax: empty index vector");
  return pnls_node(x, PickAttr{nullptr, pv, static_cast<uint32_t>(pv->size()), 1}, nullptr);
}
DYNET_API(pickneglogsoftmax, "pickneglogsoftmax", "pickneglogsoftmax(x, pv: payload)", nullptr, Expression(const Expression&, const std::vector<unsigned>*));
#endif
}  // namespace dynet
