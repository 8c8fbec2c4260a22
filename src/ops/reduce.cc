// Reductions: sums, moments and standard deviations over all elements, a set of dims and/or the
// batch; max/min and logsumexp along one dim; cumsum; k-max pooling; fold_rows; average_cols.
#include "kernels/device/prims.h"
#include "kernels/device/strided.h"

#ifndef DYNET_CUDA_PASS
#include <algorithm>
#include <cmath>

#include "core/mem.h"
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {
namespace {

// ---------------------------------------------------------------------------------------------
#ifndef DYNET_CUDA_PASS
using ops::Xs;

using ops::ArrayMap;
using ops::CArrayMap;

std::string num(size_t v) { return std::to_string(v); }

// A tensor seen as [inner, n, outer] around axis `axis`; outer includes the batch.
using ops::Fibers;
size_t output_size_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.size(); }
#endif

// ---------------------------------------------------------------------------------------------
// sum_elems(x) = Σ x and mean_elems(x) = Σ x / n, per batch element. kMean selects the second.
// sum_elems / mean_elems per batch element; sum_batches over the batch.
template <bool kMean>
struct SumElemsDev {
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const size_t bs = a.xs[0].d.batch_size();
    const float scale = kMean ? 1.f / float(bs) : 1.f;
    const float* x = a.xs[0].v;
    float* y = a.fx.v;
    P::reduce(
        a.fx.device, a.xs[0].d.bd, bs, 0.f, [=] DYNET_LAMBDA(size_t b, size_t k) { return x[b * bs + k]; }, dev::Sum(),
        [=] DYNET_LAMBDA(size_t b, float v) { y[b] = v * scale; });
  }
  template <class P>
  static void bwd(const BackwardArgs& a) {
    const size_t bs = a.xs[0].d.batch_size();
    const float scale = kMean ? 1.f / float(bs) : 1.f;
    const float* g = a.dEdf.v;
    float* dx = a.dEdxi.v;
    P::for_each(a.fx.device, a.xs[0].d.size(), [=] DYNET_LAMBDA(size_t i) { dx[i] += g[i / bs] * scale; });
  }
};
DYNET_DEVICE_KERNELS("sum_elems", SumElemsDev<false>::fwd, SumElemsDev<false>::bwd);
DYNET_DEVICE_KERNELS("mean_elems", SumElemsDev<true>::fwd, SumElemsDev<true>::bwd);

#ifndef DYNET_CUDA_PASS
// CPU kernels kept: Eigen vectorises the sums (the generic reduce adds serially); op_perf generic/CPU
// sum_elems 1.32 single, 2.08 x64; mean_elems 1.26, 2.06 fwd+bwd.
template <bool kMean>
void sum_elems_fwd(const ForwardArgs& a) {
  const Tensor& x = a.xs[0];
  const size_t bs = x.d.batch_size();
  const float scale = kMean ? 1.f / float(bs) : 1.f;
  for (size_t b = 0; b < x.d.bd; ++b) a.fx.v[b] = cpu::cbarr(x, b).sum() * scale;
}
template <bool kMean>
void sum_elems_bwd(const BackwardArgs& a) {
  const Tensor& x = a.xs[0];
  const size_t bs = x.d.batch_size();
  const float scale = kMean ? 1.f / float(bs) : 1.f;
  for (size_t b = 0; b < x.d.bd; ++b) cpu::barr(a.dEdxi, b) += a.dEdf.v[b] * scale;
}
Dim per_batch_scalar(const ArgDims& xs, AttrView) { return Dim({1}, xs[0].bd); }
template <bool kMean>
std::vector<OpSample> sum_elems_samples() {
  auto build = [](ComputationGraph&, Xs x) { return kMean ? mean_elems(x[0]) : sum_elems(x[0]); };
  std::vector<OpSample> samples = {{"vector", {Dim({5})}, build}, {"matrix", {Dim({3, 4})}, build},
                                   {"batched", {Dim({3, 2}, 3)}, build}};
  for (OpSample& s : samples)
    s.reference = [d = s.inputs[0]](const std::vector<std::vector<double>>& xs) {
      std::vector<double> y(d.bd, 0.0);
      for (size_t i = 0; i < xs[0].size(); ++i) y[i / d.batch_size()] += xs[0][i] / (kMean ? d.batch_size() : 1);
      return y;
    };
  return samples;
}
const OpId k_sum_elems = register_op({.name = "sum_elems",
                                      .doc = "y_b = Σ_i x_b[i] (per batch element)",
                                      .shape = per_batch_scalar,
                                      .forward = sum_elems_fwd<false>,
                                      .backward = sum_elems_bwd<false>,
                                      .batch = {.batchable = true},
                                      .samples = sum_elems_samples<false>,
                                      .takes_empty = true});
const OpId k_mean_elems = register_op({.name = "mean_elems",
                                       .doc = "y_b = (1/N) Σ_i x_b[i], N = values per batch element",
                                       .shape = per_batch_scalar,
                                       .forward = sum_elems_fwd<true>,
                                       .backward = sum_elems_bwd<true>,
                                       .batch = {.batchable = true},
                                       .samples = sum_elems_samples<true>});
}  // namespace
Expression sum_elems(const Expression& x) { return make_node(k_sum_elems, x); }
DYNET_API(sum_elems, "sum_elems", "sum_elems(x)", "sum_elems(x)", Expression(const Expression&));
Expression mean_elems(const Expression& x) { return make_node(k_mean_elems, x); }
DYNET_API(mean_elems, "mean_elems", "mean_elems(x)", "mean_elems(x)", Expression(const Expression&));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// sum_batches(x) = Σ_b x[b]; the batch count of the result is 1.
// Reductions over any set of dims and/or the batch: sums, raw moments (1/n) Σ x^r and standard
// deviations sqrt((1/n) Σ (x - μ)²) with μ = (1/n) Σ x. n is the number of reduced values unless
// the caller overrides it (DyNet's masking trick: n = the number of unmasked values).
constexpr unsigned kBatchBit = DYNET_MAX_TENSOR_DIM;  // mask bit of the batch axis
struct ReduceAttr {
  uint32_t mask = 0;   // bit k: dim k is reduced; bit kBatchBit: the batch is reduced
  uint32_t order = 1;  // moment order r
  uint32_t n = 0;      // divisor override; 0 = the number of reduced values
  uint32_t all_dims = 0;  // 1: mask covers every dim, however many the input has
};

DYNET_HD inline float int_pow(float x, unsigned r) {
  float p = 1.f;
  for (size_t k = 0; k < r; ++k) p *= x;
  return p;
}

// ---- device kernels ----
// Where reduced values live: output o's k-th reduced input is in(o, k); input i goes to out(i).
// reduce_map drops axes of size 1 and merges neighbouring axes that are both kept or both reduced, and the
// last axis of each kind needs no modulo, so the common reductions (a dim of a matrix, the batch) cost a
// multiply-add per value: without that the index arithmetic cost 4x the CPU's loops (op_perf x64 sum_dim).
struct ReduceMap {
  unsigned nk = 0, nr = 0, na = 0;
  size_t ksize[dev::kAxes], kstride[dev::kAxes];  // kept axes: size, input stride
  size_t rsize[dev::kAxes], rstride[dev::kAxes];  // reduced axes
  size_t asize[dev::kAxes], aout[dev::kAxes];     // every axis: size, output stride (0 if reduced)
  size_t outputs = 1, reduced = 1;
  DYNET_HD static size_t gather(size_t i, unsigned n, const size_t* size, const size_t* stride) {
    size_t at = 0;
    for (unsigned a = 0; a + 1 < n; ++a) {
      at += (i % size[a]) * stride[a];
      i /= size[a];
    }
    return n ? at + i * stride[n - 1] : 0;
  }
  DYNET_HD size_t in(size_t o, size_t k) const { return gather(o, nk, ksize, kstride) + gather(k, nr, rsize, rstride); }
  DYNET_HD size_t out(size_t i) const { return gather(i, na, asize, aout); }
};
ReduceMap reduce_map(const Dim& x, uint32_t mask) {
  ReduceMap m;
  size_t in_stride = 1;
  int last = -1;  // whether the previous axis of size > 1 was reduced; -1 before the first
  for (unsigned ax = 0; ax <= x.nd; ++ax) {
    const bool batch = ax == x.nd;
    const size_t size = batch ? x.bd : x.d[ax];
    const bool reduced = (mask >> (batch ? kBatchBit : ax)) & 1u;
    const size_t stride = in_stride;
    in_stride *= size;
    if (size == 1) continue;
    if (int(reduced) == last) {
      m.asize[m.na - 1] *= size;
      (reduced ? m.rsize[m.nr - 1] : m.ksize[m.nk - 1]) *= size;
    } else {
      m.asize[m.na] = size;
      m.aout[m.na++] = reduced ? 0 : m.outputs;
      if (reduced) {
        m.rsize[m.nr] = size;
        m.rstride[m.nr++] = stride;
      } else {
        m.ksize[m.nk] = size;
        m.kstride[m.nk++] = stride;
      }
    }
    (reduced ? m.reduced : m.outputs) *= size;
    last = reduced;
  }
  return m;
}

// moment (sum_dim: order 1, divisor 1; mean: order 1) and std over the attribute's mask.
template <bool kStd, bool kSum>
struct ReduceDev {
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const ReduceAttr& r = a.attr.as<ReduceAttr>();
    const ReduceMap m = reduce_map(a.xs[0].d, r.mask);
    const float inv_n = kSum ? 1.f : 1.f / (r.n ? float(r.n) : float(m.reduced));
    const unsigned order = r.order;
    const float* x = a.xs[0].v;
    float* y = a.fx.v;
    if (!kStd) {
      P::reduce(
          a.fx.device, m.outputs, m.reduced, 0.f, [=] DYNET_LAMBDA(size_t o, size_t k) { return int_pow(x[m.in(o, k)], order); },
          dev::Sum(), [=] DYNET_LAMBDA(size_t o, float v) { y[o] = v * inv_n; });
      return;
    }
    float* mean = a.aux;  // kept for backward
    P::reduce(
        a.fx.device, m.outputs, m.reduced, 0.f, [=] DYNET_LAMBDA(size_t o, size_t k) { return x[m.in(o, k)]; }, dev::Sum(),
        [=] DYNET_LAMBDA(size_t o, float v) { mean[o] = v * inv_n; });
    P::reduce(
        a.fx.device, m.outputs, m.reduced, 0.f,
        [=] DYNET_LAMBDA(size_t o, size_t k) {
          const float d = x[m.in(o, k)] - mean[o];
          return d * d;
        },
        dev::Sum(), [=] DYNET_LAMBDA(size_t o, float v) { y[o] = fn::sqrt(v * inv_n); });
  }
  template <class P>
  static void bwd(const BackwardArgs& a) {
    const ReduceAttr& r = a.attr.as<ReduceAttr>();
    const ReduceMap m = reduce_map(a.xs[0].d, r.mask);
    const float n = kSum ? 1.f : (r.n ? float(r.n) : float(m.reduced));
    const unsigned order = r.order;
    const float mean_shift = (n - float(m.reduced)) / n;
    const float *x = a.xs[0].v, *g = a.dEdf.v, *sigma = a.fx.v, *mean = a.aux;
    float* dx = a.dEdxi.v;
    P::for_each(a.fx.device, a.xs[0].d.size(), [=] DYNET_LAMBDA(size_t i) {
      const size_t o = m.out(i);
      if (!kStd) {
        dx[i] += g[o] * (float(order) / n) * int_pow(x[i], order - 1);
      } else if (sigma[o] != 0.f) {  // see std_bwd
        dx[i] += g[o] * ((x[i] - mean[o]) - mean[o] * mean_shift) / (n * sigma[o]);
      }
    });
  }
};
using SumDimDev = ReduceDev<false, true>;
using MomentDev = ReduceDev<false, false>;
using StdDev = ReduceDev<true, false>;
DYNET_DEVICE_KERNELS("sum_dim", SumDimDev::fwd, SumDimDev::bwd);
DYNET_DEVICE_KERNELS("moment_elems", MomentDev::fwd, MomentDev::bwd);
DYNET_DEVICE_KERNELS("moment_batches", MomentDev::fwd, MomentDev::bwd);
DYNET_DEVICE_KERNELS("mean_batches", MomentDev::fwd, MomentDev::bwd);
DYNET_DEVICE_KERNELS("moment_dim", MomentDev::fwd, MomentDev::bwd);
DYNET_DEVICE_KERNELS("mean_dim", MomentDev::fwd, MomentDev::bwd);
DYNET_DEVICE_KERNELS("std_elems", StdDev::fwd, StdDev::bwd);
DYNET_DEVICE_KERNELS("std_batches", StdDev::fwd, StdDev::bwd);
DYNET_DEVICE_KERNELS("std_dim", StdDev::fwd, StdDev::bwd);

// Each member's own B batch elements summed (autobatched, the members' one after another).
template <class P>
void sum_batches_fwd(const ForwardArgs& a) {
  const size_t bs = a.xs[0].d.batch_size(), B = a.xs[0].d.bd / a.members;
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::reduce(
      a.fx.device, a.members * bs, B, 0.f, [=] DYNET_LAMBDA(size_t o, size_t b) { return x[(o / bs * B + b) * bs + o % bs]; },
      dev::Sum(), [=] DYNET_LAMBDA(size_t o, float v) { y[o] = v; });
}
template <class P>
void sum_batches_bwd(const BackwardArgs& a) {
  const size_t bs = a.xs[0].d.batch_size(), member = a.xs[0].d.size() / a.members;
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.xs[0].d.size(), [=] DYNET_LAMBDA(size_t i) { dx[i] += g[i / member * bs + i % bs]; });
}
DYNET_DEVICE_KERNELS("sum_batches", sum_batches_fwd, sum_batches_bwd);

#ifndef DYNET_CUDA_PASS
Dim sum_batches_shape(const ArgDims& xs, AttrView) { return xs[0].single_batch(); }
std::vector<OpSample> sum_batches_samples() {
  auto build = [](ComputationGraph&, Xs x) { return sum_batches(x[0]); };
  std::vector<OpSample> samples = {{"batched", {Dim({3, 2}, 3)}, build}, {"unbatched", {Dim({4})}, build}};
  for (OpSample& s : samples)
    s.reference = [n = s.inputs[0].batch_size()](const std::vector<std::vector<double>>& xs) {
      std::vector<double> y(n, 0.0);
      for (size_t i = 0; i < xs[0].size(); ++i) y[i % n] += xs[0][i];
      return y;
    };
  return samples;
}
constexpr const char* kOverBatch = "it reduces over the batch: batched, the members' batch elements would mix";
const OpId k_sum_batches = register_op({.name = "sum_batches",
                                        .doc = "y = Σ_b x[b] (result has one batch element)",
                                        .shape = sum_batches_shape,
                                        .forward = sum_batches_fwd<dev::HostPrims>,
                                        .backward = sum_batches_bwd<dev::HostPrims>,
                                        .batch = {.batchable = true},
                                        .samples = sum_batches_samples});

// CPU kernels kept (sum_dim, moment_*, mean_*, std_*, average_cols): runs of contiguous values; the generic
// reduce computes each value's offset. op_perf x64 generic/CPU fwd+bwd after merging axes in reduce_map
// (before): sum_dim 2.6 (4.1), mean_dim 2.2 (4.2), moment_dim 1.9 (3.4), std_dim 2.1 (4.1), average_cols
// 2.5 (4.6), moment_elems 1.7 (4.4), std_elems 2.3 (6.6), moment_batches 1.4 (2.6), mean_batches 1.5
// (2.5), std_batches 1.6 (2.8).
// The input as axes (dims 0..nd-1, then the batch), with the output offset step of each axis
// (0 on reduced axes). Input values are contiguous along axis 0.
struct ReduceLayout {
  unsigned rank = 0;
  unsigned size[DYNET_MAX_TENSOR_DIM + 1] = {};
  size_t out_step[DYNET_MAX_TENSOR_DIM + 1] = {};
  size_t reduced = 1;  // input values per output value
};
ReduceLayout reduce_layout(const Dim& x, uint32_t mask) {
  ReduceLayout l;
  size_t out_stride = 1;
  auto add_axis = [&](unsigned size, bool is_reduced) {
    l.size[l.rank] = size;
    l.out_step[l.rank] = is_reduced ? 0 : out_stride;
    if (is_reduced)
      l.reduced *= size;
    else
      out_stride *= size;
    ++l.rank;
  };
  for (size_t k = 0; k < x.nd; ++k) add_axis(x.d[k], (mask >> k) & 1u);
  add_axis(x.bd, (mask >> kBatchBit) & 1u);
  return l;
}
float divisor(const ReduceAttr& r, const ReduceLayout& l) { return r.n ? float(r.n) : float(l.reduced); }

// Calls f(in_offset, out_offset) for every run of axis 0 (size[0] contiguous input values whose
// outputs are out_offset + i * out_step[0]).
template <class F>
void for_each_run(const ReduceLayout& l, F f) {
  size_t runs = 1;
  for (size_t k = 1; k < l.rank; ++k) runs *= l.size[k];
  if (l.size[0] == 0) return;
  unsigned idx[DYNET_MAX_TENSOR_DIM + 1] = {};
  size_t in = 0, out = 0;
  for (size_t t = 0; t < runs; ++t, in += l.size[0]) {
    f(in, out);
    for (size_t k = 1; k < l.rank; ++k) {
      out += l.out_step[k];
      if (++idx[k] < l.size[k]) break;
      out -= l.out_step[k] * l.size[k];
      idx[k] = 0;
    }
  }
}

// y[o] = Σ_{i → o} f(x_i), accumulated into y (which must be zeroed or hold a partial sum).
template <class F>
void reduce_into(const ReduceLayout& l, const float* x, float* y, F f) {
  const size_t len = l.size[0];
  const size_t step = l.out_step[0];
  for_each_run(l, [&](size_t in, size_t out) {
    const float* xr = x + in;
    if (step == 0) {
      float s = 0.f;
      for (size_t i = 0; i < len; ++i) s += f(xr[i], out);
      y[out] += s;
    } else {
      float* yr = y + out;
      for (size_t i = 0; i < len; ++i) yr[i] += f(xr[i], out + i);
    }
  });
}
// dx_i += f(x_i, o) for every input value i and its output o.
template <class F>
void spread_into(const ReduceLayout& l, const float* x, float* dx, F f) {
  const size_t len = l.size[0];
  const size_t step = l.out_step[0];
  for_each_run(l, [&](size_t in, size_t out) {
    for (size_t i = 0; i < len; ++i) dx[in + i] += f(x[in + i], out + i * step);
  });
}

Dim reduce_shape_checked(const char* op, const Dim& x, const ReduceAttr& r, bool needs_axis) {
  for (size_t k = 0; k < DYNET_MAX_TENSOR_DIM && !r.all_dims; ++k)
    if (((r.mask >> k) & 1u) && k > x.nd)
      op_error(op, "dim " + num(k) + " out of range for input " + x.str());
  if (needs_axis && r.mask == 0) op_error(op, "nothing to reduce: no dims given and the batch is kept");
  if (r.order == 0) op_error(op, "the moment order must be >= 1");
  Dim out = x;
  for (int k = DYNET_MAX_TENSOR_DIM - 1; k >= 0; --k)
    if ((r.mask >> k) & 1u) out.delete_dim(unsigned(k));
  if ((r.mask >> kBatchBit) & 1u) out.bd = 1;
  return out;
}
template <const char* kName, bool kNeedsAxis = true>
Dim reduce_shape(const ArgDims& xs, AttrView a) {
  return reduce_shape_checked(kName, xs[0], a.as<ReduceAttr>(), kNeedsAxis);
}

void sum_dim_fwd(const ForwardArgs& a) {
  const ReduceLayout l = reduce_layout(a.xs[0].d, a.attr.as<ReduceAttr>().mask);
  cpu::arr(a.fx).setZero();
  reduce_into(l, a.xs[0].v, a.fx.v, [](float x, size_t) { return x; });
}
void sum_dim_bwd(const BackwardArgs& a) {
  const ReduceLayout l = reduce_layout(a.xs[0].d, a.attr.as<ReduceAttr>().mask);
  const float* g = a.dEdf.v;
  spread_into(l, a.xs[0].v, a.dEdxi.v, [g](float, size_t o) { return g[o]; });
}

void moment_fwd(const ForwardArgs& a) {
  const ReduceAttr& r = a.attr.as<ReduceAttr>();
  const ReduceLayout l = reduce_layout(a.xs[0].d, r.mask);
  cpu::arr(a.fx).setZero();
  const unsigned order = r.order;
  reduce_into(l, a.xs[0].v, a.fx.v, [order](float x, size_t) { return int_pow(x, order); });
  cpu::arr(a.fx) *= 1.f / divisor(r, l);
}
void moment_bwd(const BackwardArgs& a) {
  const ReduceAttr& r = a.attr.as<ReduceAttr>();
  const ReduceLayout l = reduce_layout(a.xs[0].d, r.mask);
  const float scale = float(r.order) / divisor(r, l);
  const unsigned order = r.order;
  const float* g = a.dEdf.v;
  spread_into(l, a.xs[0].v, a.dEdxi.v,
              [=](float x, size_t o) { return g[o] * scale * int_pow(x, order - 1); });
}

// std keeps the means μ in aux for backward.
size_t std_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.size(); }
void std_fwd(const ForwardArgs& a) {
  const ReduceAttr& r = a.attr.as<ReduceAttr>();
  const ReduceLayout l = reduce_layout(a.xs[0].d, r.mask);
  const float inv_n = 1.f / divisor(r, l);
  const size_t m = a.fx.d.size();
  float* mean = a.aux;
  ArrayMap(mean, m).setZero();
  reduce_into(l, a.xs[0].v, mean, [](float x, size_t) { return x; });
  ArrayMap(mean, m) *= inv_n;
  cpu::arr(a.fx).setZero();
  reduce_into(l, a.xs[0].v, a.fx.v, [mean](float x, size_t o) { return (x - mean[o]) * (x - mean[o]); });
  cpu::arr(a.fx) = (cpu::arr(a.fx) * inv_n).sqrt();
}
// With N values reduced and divisor n: σ² = (1/n) Σ (x_j - μ)², μ = (1/n) Σ x_j, so
// ∂σ/∂x_i = [(x_i - μ) - μ (n - N) / n] / (n σ) (the second term vanishes when n = N).
// A zero σ (all values equal) has no derivative; it passes no gradient.
void std_bwd(const BackwardArgs& a) {
  const ReduceAttr& r = a.attr.as<ReduceAttr>();
  const ReduceLayout l = reduce_layout(a.xs[0].d, r.mask);
  const float n = divisor(r, l);
  const float mean_shift = (n - float(l.reduced)) / n;
  const float* g = a.dEdf.v;
  const float* sigma = a.fx.v;
  const float* mean = a.aux;
  spread_into(l, a.xs[0].v, a.dEdxi.v, [=](float x, size_t o) {
    if (sigma[o] == 0.f) return 0.f;
    return g[o] * ((x - mean[o]) - mean[o] * mean_shift) / (n * sigma[o]);
  });
}

constexpr char kMomentElems[] = "moment_elems";
constexpr char kStdElems[] = "std_elems";
constexpr char kMomentBatches[] = "moment_batches";
constexpr char kMeanBatches[] = "mean_batches";
constexpr char kStdBatches[] = "std_batches";
constexpr char kSumDim[] = "sum_dim";
constexpr char kMomentDim[] = "moment_dim";
constexpr char kMeanDim[] = "mean_dim";
constexpr char kStdDim[] = "std_dim";

std::vector<OpSample> moment_elems_samples() {
  auto with = [](unsigned r) { return [r](ComputationGraph&, Xs x) { return moment_elems(x[0], r); }; };
  return {{"order1", {Dim({5})}, with(1)},
          {"order2", {Dim({3, 4})}, with(2)},
          {"order3_batched", {Dim({3, 2}, 3)}, with(3)},
          {"order0", {Dim({3})}, with(0), -1, 1, true}};
}
std::vector<OpSample> std_elems_samples() {
  auto build = [](ComputationGraph&, Xs x) { return std_elems(x[0]); };
  return {{"vector", {Dim({5})}, build}, {"matrix", {Dim({3, 4})}, build}, {"batched", {Dim({3, 2}, 3)}, build}};
}
std::vector<OpSample> moment_batches_samples() {
  auto with = [](unsigned r) { return [r](ComputationGraph&, Xs x) { return moment_batches(x[0], r); }; };
  return {{"order1", {Dim({3}, 4)}, with(1)},
          {"order2", {Dim({2, 3}, 3)}, with(2)},
          {"order4", {Dim({2}, 3)}, with(4)},
          {"unbatched", {Dim({3})}, with(2)},
          {"order0", {Dim({3}, 2)}, with(0), -1, 1, true}};
}
std::vector<OpSample> mean_batches_samples() {
  auto build = [](ComputationGraph&, Xs x) { return mean_batches(x[0]); };
  return {{"batched", {Dim({3, 2}, 4)}, build}, {"unbatched", {Dim({4})}, build}};
}
std::vector<OpSample> std_batches_samples() {
  auto build = [](ComputationGraph&, Xs x) { return std_batches(x[0]); };
  return {{"batched", {Dim({3, 2}, 4)}, build}, {"vector", {Dim({3}, 3)}, build}};
}
std::vector<OpSample> sum_dim_samples() {
  auto over = [](std::vector<unsigned> dims, bool b) {
    return [dims, b](ComputationGraph&, Xs x) { return sum_dim(x[0], dims, b); };
  };
  return {{"rows", {Dim({3, 4})}, over({0}, false)},
          {"cols", {Dim({3, 4})}, over({1}, false)},
          {"two_of_three", {Dim({2, 3, 4})}, over({0, 2}, false)},
          {"all_dims", {Dim({2, 3})}, over({1, 0}, false)},
          {"batched", {Dim({3, 2}, 3)}, over({1}, false)},
          {"with_batch", {Dim({3, 2}, 3)}, over({0}, true)},
          {"only_batch", {Dim({3, 2}, 3)}, over({}, true)},
          {"implicit_dim", {Dim({3})}, over({1}, false)},
          {"sum_rows", {Dim({3, 4}, 2)}, [](ComputationGraph&, Xs x) { return sum_rows(x[0]); }},
          {"sum_cols", {Dim({3, 4}, 2)}, [](ComputationGraph&, Xs x) { return sum_cols(x[0]); }},
          {"out_of_range", {Dim({3, 4})}, over({3}, false), -1, 1, true},
          {"past_max_dims", {Dim({3, 4})}, over({DYNET_MAX_TENSOR_DIM}, false), -1, 1, true},
          {"repeated", {Dim({3, 4})}, over({1, 1}, false), -1, 1, true}};
}
std::vector<OpSample> moment_dim_samples() {
  auto over = [](std::vector<unsigned> dims, unsigned r, bool b, unsigned n) {
    return [=](ComputationGraph&, Xs x) { return moment_dim(x[0], dims, r, b, n); };
  };
  return {{"rows_order2", {Dim({3, 4})}, over({0}, 2, false, 0)},
          {"cols_order3", {Dim({3, 4}, 2)}, over({1}, 3, false, 0)},
          {"with_batch", {Dim({3, 2}, 3)}, over({1}, 2, true, 0)},
          {"only_batch", {Dim({3, 2}, 3)}, over({}, 1, true, 0)},
          {"two_dims_n", {Dim({2, 3, 2})}, over({0, 2}, 2, false, 3)},
          {"order0", {Dim({3})}, over({0}, 0, false, 0), -1, 1, true},
          {"nothing", {Dim({3})}, over({}, 1, false, 0), -1, 1, true},
          {"out_of_range", {Dim({3, 4})}, over({3}, 1, false, 0), -1, 1, true}};
}
std::vector<OpSample> mean_dim_samples() {
  auto over = [](std::vector<unsigned> dims, bool b, unsigned n) {
    return [=](ComputationGraph&, Xs x) { return mean_dim(x[0], dims, b, n); };
  };
  return {{"rows", {Dim({3, 4})}, over({0}, false, 0)},
          {"cols_batched", {Dim({3, 4}, 2)}, over({1}, false, 0)},
          {"with_batch", {Dim({3, 2}, 3)}, over({0}, true, 0)},
          {"masked_n", {Dim({4, 2})}, over({0}, false, 3)},
          {"nothing", {Dim({3})}, over({}, false, 0), -1, 1, true}};
}
std::vector<OpSample> std_dim_samples() {
  auto over = [](std::vector<unsigned> dims, bool b, unsigned n) {
    return [=](ComputationGraph&, Xs x) { return std_dim(x[0], dims, b, n); };
  };
  return {{"rows", {Dim({3, 4})}, over({0}, false, 0)},
          {"cols_batched", {Dim({3, 4}, 2)}, over({1}, false, 0)},
          {"with_batch", {Dim({3, 2}, 3)}, over({0}, true, 0)},
          {"only_batch", {Dim({3, 2}, 3)}, over({}, true, 0)},
          {"masked_n", {Dim({4, 2})}, over({0}, false, 3)},
          {"nothing", {Dim({3})}, over({}, false, 0), -1, 1, true},
          {"out_of_range", {Dim({3})}, over({2}, false, 0), -1, 1, true}};
}

// The *_dim forms take b, which reduces the batch: such a node runs alone so that members' batches
// stay apart.
uint32_t reduce_dim_key(AttrView a, uint64_t* out) {
  if ((a.as<ReduceAttr>().mask >> kBatchBit) & 1u) return BatchRule::kRunsAlone;
  std::copy(a.p, a.p + a.words, out);
  return a.words;
}
constexpr BatchRule kReduceDimBatch = {.batchable = true, .key = reduce_dim_key};
const OpId k_moment_elems = register_op({.name = kMomentElems,
                                         .doc = "y_b = (1/N) Σ_i x_b[i]^r, N = values per batch element",
                                         .shape = reduce_shape<kMomentElems>,
                                         .forward = moment_fwd,
                                         .backward = moment_bwd,
                                         .batch = {.batchable = true},
                                         .samples = moment_elems_samples});
const OpId k_std_elems = register_op({.name = kStdElems,
                                      .doc = "y_b = sqrt((1/N) Σ_i (x_b[i] - μ_b)²), μ_b = mean_elems(x)_b",
                                      .shape = reduce_shape<kStdElems>,
                                      .forward = std_fwd,
                                      .backward = std_bwd,
                                      .aux_floats = std_aux,
                                      .batch = {.batchable = true},
                                      .samples = std_elems_samples});
const OpId k_moment_batches = register_op({.name = kMomentBatches,
                                           .doc = "y = (1/B) Σ_b x[b]^r (elementwise over the B batch elements)",
                                           .shape = reduce_shape<kMomentBatches>,
                                           .forward = moment_fwd,
                                           .backward = moment_bwd,
                                           .batch = {.why_not = kOverBatch},
                                           .samples = moment_batches_samples});
const OpId k_mean_batches = register_op({.name = kMeanBatches,
                                         .doc = "y = (1/B) Σ_b x[b]",
                                         .shape = reduce_shape<kMeanBatches>,
                                         .forward = moment_fwd,
                                         .backward = moment_bwd,
                                         .batch = {.why_not = kOverBatch},
                                           .samples = mean_batches_samples});
const OpId k_std_batches = register_op({.name = kStdBatches,
                                        .doc = "y = sqrt((1/B) Σ_b (x[b] - μ)²), μ = mean_batches(x)",
                                        .shape = reduce_shape<kStdBatches>,
                                        .forward = std_fwd,
                                        .backward = std_bwd,
                                        .aux_floats = std_aux,
                                        .batch = {.why_not = kOverBatch},
                                           .samples = std_batches_samples});
const OpId k_sum_dim = register_op({.name = kSumDim,
                                    .doc = "y = Σ x over the given dims (and the batch when b); those dims are removed",
                                    .shape = reduce_shape<kSumDim, false>,
                                    .forward = sum_dim_fwd,
                                    .backward = sum_dim_bwd,
                                    .batch = kReduceDimBatch,
                                    .samples = sum_dim_samples,
                                    .takes_empty = true});
const OpId k_moment_dim = register_op({.name = kMomentDim,
                                       .doc = "y = (1/n) Σ x^r over the given dims (and the batch when b); n = count unless given",
                                       .shape = reduce_shape<kMomentDim>,
                                       .forward = moment_fwd,
                                       .backward = moment_bwd,
                                       .batch = kReduceDimBatch,
                                    .samples = moment_dim_samples});
const OpId k_mean_dim = register_op({.name = kMeanDim,
                                     .doc = "y = (1/n) Σ x over the given dims (and the batch when b); n = count unless given",
                                     .shape = reduce_shape<kMeanDim>,
                                     .forward = moment_fwd,
                                     .backward = moment_bwd,
                                     .batch = kReduceDimBatch,
                                    .samples = mean_dim_samples});
const OpId k_std_dim = register_op({.name = kStdDim,
                                    .doc = "y = sqrt((1/n) Σ (x - μ)²), μ = (1/n) Σ x, over the given dims (and the batch when b)",
                                    .shape = reduce_shape<kStdDim>,
                                    .forward = std_fwd,
                                    .backward = std_bwd,
                                    .aux_floats = std_aux,
                                    .batch = kReduceDimBatch,
                                    .samples = std_dim_samples});

uint32_t dims_mask(const char* op, const std::vector<unsigned>& dims, bool b) {
  uint32_t mask = b ? (1u << kBatchBit) : 0u;
  for (size_t d : dims) {
    if (d >= DYNET_MAX_TENSOR_DIM)
      op_error(op, "dim " + num(d) + " out of range (tensors have at most " + num(DYNET_MAX_TENSOR_DIM) + " dims)");
    if ((mask >> d) & 1u) op_error(op, "dim " + num(d) + " is listed twice");
    mask |= 1u << d;
  }
  return mask;
}
Expression reduce_node(OpId op, const Expression& x, uint32_t mask, unsigned order = 1, unsigned n = 0) {
  return make_node(op, x, ReduceAttr{mask, order, n, 0});
}
// Over every dim of x (the shape rule sees how many it has).
Expression reduce_elems_node(OpId op, const Expression& x, unsigned order = 1) {
  constexpr uint32_t kAllDims = (1u << DYNET_MAX_TENSOR_DIM) - 1u;
  return make_node(op, x, ReduceAttr{kAllDims, order, 0, 1});
}
}  // namespace
Expression moment_elems(const Expression& x, unsigned r) {
  return reduce_elems_node(k_moment_elems, x, r);
}
DYNET_API(moment_elems, "moment_elems", "moment_elems(x, r)", "moment_elems(x, r)", Expression(const Expression&, unsigned));
Expression std_elems(const Expression& x) { return reduce_elems_node(k_std_elems, x); }
DYNET_API(std_elems, "std_elems", "std_elems(x)", "std_elems(x)", Expression(const Expression&));

Expression sum_batches(const Expression& x) { return make_node(k_sum_batches, x); }
DYNET_API(sum_batches, "sum_batches", "sum_batches(x)", "sum_batches(x)", Expression(const Expression&));
Expression moment_batches(const Expression& x, unsigned r) {
  return reduce_node(k_moment_batches, x, 1u << kBatchBit, r);
}
DYNET_API(moment_batches, "moment_batches", "moment_batches(x, r)", "moment_batches(x, r)", Expression(const Expression&, unsigned));
Expression mean_batches(const Expression& x) { return reduce_node(k_mean_batches, x, 1u << kBatchBit); }
DYNET_API(mean_batches, "mean_batches", "mean_batches(x)", "mean_batches(x)", Expression(const Expression&));
Expression std_batches(const Expression& x) { return reduce_node(k_std_batches, x, 1u << kBatchBit); }
DYNET_API(std_batches, "std_batches", "std_batches(x)", "std_batches(x)", Expression(const Expression&));

Expression sum_dim(const Expression& x, const std::vector<unsigned>& dims, bool b) {
  return reduce_node(k_sum_dim, x, dims_mask(kSumDim, dims, b));
}
DYNET_API(sum_dim, "sum_dim", "sum_dim(x, dims, b = false)", "sum_dim(x, d, b=False, n: ignored=0)", Expression(const Expression&, const std::vector<unsigned>&, bool));
Expression sum_rows(const Expression& x) { return sum_dim(x, {0}); }
DYNET_API(sum_rows, "sum_dim", "sum_rows(x)", nullptr, Expression(const Expression&));
Expression sum_cols(const Expression& x) { return sum_dim(x, {1}); }
DYNET_API(sum_cols, "sum_dim", "sum_cols(x)", nullptr, Expression(const Expression&));
Expression moment_dim(const Expression& x, const std::vector<unsigned>& dims, unsigned r, bool b, unsigned n) {
  return reduce_node(k_moment_dim, x, dims_mask(kMomentDim, dims, b), r, n);
}
DYNET_API(moment_dim, "moment_dim", "moment_dim(x, dims, r, b = false, n = 0)", "moment_dim(x, d, r, b, n=0)", Expression(const Expression&, const std::vector<unsigned>&, unsigned, bool, unsigned));
Expression mean_dim(const Expression& x, const std::vector<unsigned>& dims, bool b, unsigned n) {
  return reduce_node(k_mean_dim, x, dims_mask(kMeanDim, dims, b), 1, n);
}
DYNET_API(mean_dim, "mean_dim", "mean_dim(x, dims, b = false, n = 0)", "mean_dim(x, d, b, n=0)", Expression(const Expression&, const std::vector<unsigned>&, bool, unsigned));
Expression std_dim(const Expression& x, const std::vector<unsigned>& dims, bool b, unsigned n) {
  return reduce_node(k_std_dim, x, dims_mask(kStdDim, dims, b), 1, n);
}
DYNET_API(std_dim, "std_dim", "std_dim(x, dims, b = false, n = 0)", "std_dim(x, d, b, n=0)", Expression(const Expression&, const std::vector<unsigned>&, bool, unsigned));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// average_cols(x): the mean of the columns of a matrix (runs the mean kernel over dim 1).
DYNET_DEVICE_KERNELS("average_cols", MomentDev::fwd, MomentDev::bwd);

#ifndef DYNET_CUDA_PASS
Dim average_cols_shape(const ArgDims& xs, AttrView a) {
  const Dim& x = xs[0];
  if (x.nd > 2) op_error("average_cols", "expects a vector or matrix, got " + x.str());
  return reduce_shape_checked("average_cols", x, a.as<ReduceAttr>(), true);
}
std::vector<OpSample> average_cols_samples() {
  auto build = [](ComputationGraph&, Xs x) { return average_cols(x[0]); };
  return {{"matrix", {Dim({3, 4})}, build},
          {"batched", {Dim({2, 3}, 2)}, build},
          {"vector", {Dim({3})}, build},
          {"tensor", {Dim({2, 3, 2})}, build, -1, 1, true}};
}
const OpId k_average_cols = register_op({.name = "average_cols",
                                         .doc = "y[i] = (1/C) Σ_j x[i, j] for an R x C matrix x",
                                         .shape = average_cols_shape,
                                         .forward = moment_fwd,
                                         .backward = moment_bwd,
                                         .batch = {.batchable = true},
                                         .samples = average_cols_samples});
}  // namespace
Expression average_cols(const Expression& x) { return reduce_node(k_average_cols, x, 1u << 1); }
DYNET_API(average_cols, "average_cols", "average_cols(x)", nullptr, Expression(const Expression&));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// max_dim(x, d) / min_dim(x, d): the maximum (minimum) along dim d, which is removed. The gradient
// goes to the (first) extreme value, whose index is kept in aux.
// max_dim / min_dim along a dim: one thread per output scans its fiber; the first extreme's index goes to aux.
template <bool kMax>
struct ExtremeDev {
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const dev::Fibers f = dev::fibers(a.xs[0].d, a.attr.as<unsigned>());
    const size_t inner = f.inner, n = f.n;
    const float* x = a.xs[0].v;
    float* y = a.fx.v;
    unsigned* arg = reinterpret_cast<unsigned*>(a.aux);
    P::for_each(a.fx.device, f.outer * inner, [=] DYNET_LAMBDA(size_t j) {
      const float* xo = x + (j / inner) * n * inner + j % inner;
      float best = xo[0];
      unsigned at = 0;
      for (size_t k = 1; k < n; ++k)
        if (kMax ? xo[k * inner] > best : xo[k * inner] < best) {
          best = xo[k * inner];
          at = unsigned(k);
        }
      y[j] = best;
      arg[j] = at;
    });
  }
  template <class P>
  static void bwd(const BackwardArgs& a) {
    const dev::Fibers f = dev::fibers(a.xs[0].d, a.attr.as<unsigned>());
    const size_t inner = f.inner, n = f.n;
    const unsigned* arg = reinterpret_cast<const unsigned*>(a.aux);
    const float* g = a.dEdf.v;
    float* dx = a.dEdxi.v;
    P::for_each(a.fx.device, f.outer * inner, [=] DYNET_LAMBDA(size_t j) {
      dx[((j / inner) * n + arg[j]) * inner + j % inner] += g[j];
    });
  }
};
DYNET_DEVICE_KERNELS("max_dim", ExtremeDev<true>::fwd, ExtremeDev<true>::bwd);
DYNET_DEVICE_KERNELS("min_dim", ExtremeDev<false>::fwd, ExtremeDev<false>::bwd);

#ifndef DYNET_CUDA_PASS
template <bool kMax>
constexpr const char* extreme_name() {
  return kMax ? "max_dim" : "min_dim";
}
template <bool kMax>
Dim extreme_dim_shape(const ArgDims& xs, AttrView a) {
  const unsigned d = a.as<unsigned>();
  const Dim& x = xs[0];
  if (d >= x.nd) op_error(extreme_name<kMax>(), "dim " + num(d) + " out of range for input " + x.str());
  if (x.d[d] == 0) op_error(extreme_name<kMax>(), "dim " + num(d) + " of input " + x.str() + " is empty");
  Dim out = x;
  out.delete_dim(d);
  return out;
}
// CPU kernel kept: op_perf generic/CPU max_dim 1.15 single, 1.40 x64; min_dim 1.13, 1.38 fwd+bwd (it
// compares contiguous rows; the generic kernel scans one strided fiber per thread).
template <bool kMax>
void extreme_dim_fwd(const ForwardArgs& a) {
  const Fibers f = ops::fibers(a.xs[0].d, a.attr.as<unsigned>());
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  unsigned* arg = reinterpret_cast<unsigned*>(a.aux);
  for (size_t o = 0; o < f.outer; ++o) {
    const float* xo = x + size_t(o) * f.n * f.inner;
    float* yo = y + size_t(o) * f.inner;
    unsigned* ao = arg + size_t(o) * f.inner;
    for (size_t i = 0; i < f.inner; ++i) {
      yo[i] = xo[i];
      ao[i] = 0;
    }
    for (size_t k = 1; k < f.n; ++k) {
      const float* xk = xo + size_t(k) * f.inner;
      for (size_t i = 0; i < f.inner; ++i)
        if (kMax ? xk[i] > yo[i] : xk[i] < yo[i]) {
          yo[i] = xk[i];
          ao[i] = k;
        }
    }
  }
}
void extreme_dim_bwd(const BackwardArgs& a) {
  const Fibers f = ops::fibers(a.xs[0].d, a.attr.as<unsigned>());
  const unsigned* arg = reinterpret_cast<const unsigned*>(a.aux);
  for (size_t o = 0; o < f.outer; ++o)
    for (size_t i = 0; i < f.inner; ++i) {
      const size_t j = size_t(o) * f.inner + i;
      a.dEdxi.v[(size_t(o) * f.n + arg[j]) * f.inner + i] += a.dEdf.v[j];
    }
}
template <bool kMax>
std::vector<OpSample> extreme_dim_samples() {
  auto along = [](unsigned d) {
    return [d](ComputationGraph&, Xs x) { return kMax ? max_dim(x[0], d) : min_dim(x[0], d); };
  };
  return {{"vector", {Dim({5})}, along(0)},
          {"matrix_rows", {Dim({4, 3})}, along(0)},
          {"matrix_cols", {Dim({4, 3})}, along(1)},
          {"tensor_last", {Dim({2, 3, 4})}, along(2)},
          {"batched", {Dim({3, 2}, 3)}, along(1)},
          {"bad_dim", {Dim({4, 3})}, along(2), -1, 1, true}};
}
const OpId k_max_dim = register_op({.name = "max_dim",
                                    .doc = "y = max_k x[.., k, ..] along dim d (removed); gradient to the first argmax",
                                    .shape = extreme_dim_shape<true>,
                                    .forward = extreme_dim_fwd<true>,
                                    .backward = extreme_dim_bwd,
                                    .aux_floats = output_size_aux,
                                    .batch = {.batchable = true},
                                    .samples = extreme_dim_samples<true>});
const OpId k_min_dim = register_op({.name = "min_dim",
                                    .doc = "y = min_k x[.., k, ..] along dim d (removed); gradient to the first argmin",
                                    .shape = extreme_dim_shape<false>,
                                    .forward = extreme_dim_fwd<false>,
                                    .backward = extreme_dim_bwd,
                                    .aux_floats = output_size_aux,
                                    .batch = {.batchable = true},
                                    .samples = extreme_dim_samples<false>});
}  // namespace
Expression max_dim(const Expression& x, unsigned d) { return make_node(k_max_dim, x, d); }
DYNET_API(max_dim, "max_dim", "max_dim(x, d = 0)", "max_dim(x, d=0)", Expression(const Expression&, unsigned));
Expression min_dim(const Expression& x, unsigned d) { return make_node(k_min_dim, x, d); }
DYNET_API(min_dim, "min_dim", "min_dim(x, d = 0)", "min_dim(x, d=0)", Expression(const Expression&, unsigned));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// logsumexp_dim(x, d) = log Σ_k exp(x[.., k, ..]) along dim d (removed), computed around the max.
// logsumexp_dim: one thread per output (around the fiber's max); ∂y/∂x_k = exp(x_k - y).
template <class P>
void logsumexp_dim_dev_fwd(const ForwardArgs& a) {
  const dev::Fibers f = dev::fibers(a.xs[0].d, a.attr.as<unsigned>());
  const size_t inner = f.inner, n = f.n;
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, f.outer * inner, [=] DYNET_LAMBDA(size_t j) {
    const float* xo = x + (j / inner) * n * inner + j % inner;
    float m = xo[0];
    for (size_t k = 1; k < n; ++k) m = fn::max(m, xo[k * inner]);
    if (m == INFINITY || m == -INFINITY) {  // all -inf (or any +inf): the max is the answer
      y[j] = m;
      return;
    }
    float s = 0.f;
    for (size_t k = 0; k < n; ++k) s += fn::exp(xo[k * inner] - m);
    y[j] = m + fn::log(s);
  });
}
template <class P>
void logsumexp_dim_dev_bwd(const BackwardArgs& a) {
  const dev::Fibers f = dev::fibers(a.xs[0].d, a.attr.as<unsigned>());
  const size_t inner = f.inner, n = f.n;
  const float *x = a.xs[0].v, *y = a.fx.v, *g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.xs[0].d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t o = (i / (n * inner)) * inner + i % inner;
    dx[i] += g[o] * fn::exp(x[i] - y[o]);
  });
}
DYNET_DEVICE_KERNELS("logsumexp_dim", logsumexp_dim_dev_fwd, logsumexp_dim_dev_bwd);

#ifndef DYNET_CUDA_PASS
Dim logsumexp_dim_shape(const ArgDims& xs, AttrView a) {
  const unsigned d = a.as<unsigned>();
  const Dim& x = xs[0];
  if (d >= x.nd) op_error("logsumexp_dim", "dim " + num(d) + " out of range for input " + x.str());
  if (x.d[d] == 0) op_error("logsumexp_dim", "dim " + num(d) + " of input " + x.str() + " is empty");
  Dim out = x;
  out.delete_dim(d);
  return out;
}
// CPU kernel kept: op_perf generic/CPU 1.23 single, 1.50 x64 fwd+bwd (the generic backward divides
// indices per element).
void logsumexp_dim_fwd(const ForwardArgs& a) {
  const Fibers f = ops::fibers(a.xs[0].d, a.attr.as<unsigned>());
  for (size_t o = 0; o < f.outer; ++o) {
    const float* xo = a.xs[0].v + size_t(o) * f.n * f.inner;
    float* yo = a.fx.v + size_t(o) * f.inner;
    for (size_t i = 0; i < f.inner; ++i) {
      float m = xo[i];
      for (size_t k = 1; k < f.n; ++k) m = std::max(m, xo[size_t(k) * f.inner + i]);
      if (std::isinf(m)) {  // all -inf (or any +inf): the max is the answer
        yo[i] = m;
        continue;
      }
      float s = 0.f;
      for (size_t k = 0; k < f.n; ++k) s += std::exp(xo[size_t(k) * f.inner + i] - m);
      yo[i] = m + std::log(s);
    }
  }
}
// ∂y/∂x_k = exp(x_k - y), the softmax along d.
void logsumexp_dim_bwd(const BackwardArgs& a) {
  const Fibers f = ops::fibers(a.xs[0].d, a.attr.as<unsigned>());
  for (size_t o = 0; o < f.outer; ++o) {
    const float* xo = a.xs[0].v + size_t(o) * f.n * f.inner;
    float* dxo = a.dEdxi.v + size_t(o) * f.n * f.inner;
    const float* yo = a.fx.v + size_t(o) * f.inner;
    const float* go = a.dEdf.v + size_t(o) * f.inner;
    for (size_t k = 0; k < f.n; ++k)
      for (size_t i = 0; i < f.inner; ++i) {
        const size_t j = size_t(k) * f.inner + i;
        dxo[j] += go[i] * std::exp(xo[j] - yo[i]);
      }
  }
}
std::vector<OpSample> logsumexp_dim_samples() {
  auto along = [](unsigned d) { return [d](ComputationGraph&, Xs x) { return logsumexp_dim(x[0], d); }; };
  return {{"vector", {Dim({5})}, along(0)},
          {"matrix_rows", {Dim({4, 3})}, along(0)},
          {"matrix_cols", {Dim({4, 3})}, along(1)},
          {"tensor_middle", {Dim({2, 3, 2})}, along(1)},
          {"batched", {Dim({3, 2}, 3)}, along(1)},
          {"bad_dim", {Dim({4, 3})}, along(2), -1, 1, true}};
}
const OpId k_logsumexp_dim = register_op({.name = "logsumexp_dim",
                                          .doc = "y = log Σ_k exp(x[.., k, ..]) along dim d (removed)",
                                          .shape = logsumexp_dim_shape,
                                          .forward = logsumexp_dim_fwd,
                                          .backward = logsumexp_dim_bwd,
                                          .batch = {.batchable = true},
                                          .samples = logsumexp_dim_samples});
}  // namespace
Expression logsumexp_dim(const Expression& x, unsigned d) { return make_node(k_logsumexp_dim, x, d); }
DYNET_API(logsumexp_dim, "logsumexp_dim", "logsumexp_dim(x, d)", "logsumexp_dim(x, d=0)", Expression(const Expression&, unsigned));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// cumsum(x, d): y[.., k, ..] = Σ_{j ≤ k} x[.., j, ..] along dim d (same shape).
// cumsum along a dim: one thread per fiber, in order (and reversed for the gradient).
template <class P>
void cumsum_fwd(const ForwardArgs& a) {
  const dev::Fibers f = dev::fibers(a.xs[0].d, a.attr.as<unsigned>());
  const size_t inner = f.inner, n = f.n;
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, f.outer * inner, [=] DYNET_LAMBDA(size_t j) {
    const size_t base = (j / inner) * n * inner + j % inner;
    float s = 0.f;
    for (size_t k = 0; k < n; ++k) y[base + k * inner] = s += x[base + k * inner];
  });
}
template <class P>
void cumsum_bwd(const BackwardArgs& a) {
  const dev::Fibers f = dev::fibers(a.xs[0].d, a.attr.as<unsigned>());
  const size_t inner = f.inner, n = f.n;
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, f.outer * inner, [=] DYNET_LAMBDA(size_t j) {
    const size_t base = (j / inner) * n * inner + j % inner;
    float tail = 0.f;
    for (size_t k = n; k-- > 0;) dx[base + k * inner] += tail += g[base + k * inner];
  });
}
DYNET_DEVICE_KERNELS("cumsum", cumsum_fwd, cumsum_bwd);

#ifndef DYNET_CUDA_PASS
Dim cumsum_shape(const ArgDims& xs, AttrView a) {
  const unsigned d = a.as<unsigned>();
  // d == nd is an implicit dim of size 1 (the identity), as DyNet allows.
  if (d > xs[0].nd) op_error("cumsum", "dim " + num(d) + " out of range for input " + xs[0].str());
  return xs[0];
}
std::vector<OpSample> cumsum_samples() {
  auto along = [](unsigned d) { return [d](ComputationGraph&, Xs x) { return cumsum(x[0], d); }; };
  return {{"vector", {Dim({5})}, along(0)},
          {"matrix_cols", {Dim({3, 4})}, along(1)},
          {"tensor_middle", {Dim({2, 3, 2})}, along(1)},
          {"batched", {Dim({3, 2}, 2)}, along(0)},
          {"implicit_dim", {Dim({3})}, along(1)},
          {"bad_dim", {Dim({3})}, along(2), -1, 1, true}};
}
const OpId k_cumsum = register_op({.name = "cumsum",
                                   .doc = "y[.., k, ..] = Σ_{j ≤ k} x[.., j, ..] along dim d",
                                   .shape = cumsum_shape,
                                   .forward = cumsum_fwd<dev::HostPrims>,
                                   .backward = cumsum_bwd<dev::HostPrims>,
                                   .batch = {.batchable = true},
                                   .samples = cumsum_samples});
}  // namespace
Expression cumsum(const Expression& x, unsigned d) { return make_node(k_cumsum, x, d); }
DYNET_API(cumsum, "cumsum", "cumsum(x, d)", "cumsum(x, d=0)", Expression(const Expression&, unsigned));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// kmax_pooling(x, k, d): the k largest values along dim d, kept in their original order (ties:
// the earlier index wins). Dim d becomes k. The source index of every output is kept in aux.
// kmax_pooling: the rank of every input along its fiber (how many elements come before it), then one thread per fiber keeps the k first-ranked
// in their original order; their positions go to aux.
struct KMaxAttr {
  uint32_t k, axis;
};
// Whether x[u] comes before x[v] along a fiber: larger first, then earlier; NaN ranks above everything so
// the order stays strict.
DYNET_HD inline bool kmax_before(float xu, size_t u, float xv, size_t v) {
  const bool nu = xu != xu, nv = xv != xv;
  if (nu != nv) return nu;
  if (!nu && xu != xv) return xu > xv;
  return u < v;
}
template <class P>
void kmax_pooling_dev_fwd(const ForwardArgs& a) {
  const KMaxAttr& p = a.attr.as<KMaxAttr>();
  const dev::Fibers f = dev::fibers(a.xs[0].d, p.axis);
  const size_t inner = f.inner, n = f.n, k = p.k;
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  unsigned* src = reinterpret_cast<unsigned*>(a.aux);
  float* rank = a.scratch.allocate_floats(a.xs[0].d.size());
  P::reduce(
      a.fx.device, a.xs[0].d.size(), n, 0.f,
      [=] DYNET_LAMBDA(size_t e, size_t u) {
        const size_t pos = (e / inner) % n;
        const float xu = x[e + u * inner - pos * inner];
        return kmax_before(xu, u, x[e], pos) ? 1.f : 0.f;
      },
      dev::Sum(), [=] DYNET_LAMBDA(size_t e, float r) { rank[e] = r; });
  P::for_each(a.fx.device, f.outer * inner, [=] DYNET_LAMBDA(size_t j) {
    const size_t o = j / inner, i = j % inner;
    size_t kept = 0;
    for (size_t u = 0; u < n && kept < k; ++u) {
      const size_t e = (o * n + u) * inner + i;
      if (rank[e] < float(k)) {
        const size_t out = (o * k + kept++) * inner + i;
        y[out] = x[e];
        src[out] = unsigned(u);
      }
    }
  });
}
template <class P>
void kmax_pooling_dev_bwd(const BackwardArgs& a) {
  const KMaxAttr& p = a.attr.as<KMaxAttr>();
  const dev::Fibers f = dev::fibers(a.xs[0].d, p.axis);
  const size_t inner = f.inner, n = f.n, k = p.k;
  const unsigned* src = reinterpret_cast<const unsigned*>(a.aux);
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) {
    dx[((j / inner / k) * n + src[j]) * inner + j % inner] += g[j];
  });
}
DYNET_DEVICE_KERNELS("kmax_pooling", kmax_pooling_dev_fwd, kmax_pooling_dev_bwd);

#ifndef DYNET_CUDA_PASS
Dim kmax_pooling_shape(const ArgDims& xs, AttrView a) {
  const KMaxAttr& p = a.as<KMaxAttr>();
  const Dim& x = xs[0];
  if (p.axis >= x.nd) op_error("kmax_pooling", "dim " + num(p.axis) + " out of range for input " + x.str());
  if (p.k < 1 || p.k > x.d[p.axis])
    op_error("kmax_pooling", "k = " + num(p.k) + " must be in [1, " + num(x.d[p.axis]) + "] (dim " + num(p.axis) +
                                 " of input " + x.str() + ")");
  Dim out = x;
  out.d[p.axis] = p.k;
  return out;
}
// CPU kernel kept: op_perf generic/CPU 1.42 single, 1.52 x64 fwd+bwd (nth_element per fiber; the generic
// kernel ranks every element against its whole fiber).
void kmax_pooling_fwd(const ForwardArgs& a) {
  const KMaxAttr& p = a.attr.as<KMaxAttr>();
  const Fibers f = ops::fibers(a.xs[0].d, p.axis);
  unsigned* order = static_cast<unsigned*>(a.scratch.allocate(f.n * sizeof(unsigned)));
  unsigned* src = reinterpret_cast<unsigned*>(a.aux);
  for (size_t o = 0; o < f.outer; ++o)
    for (size_t i = 0; i < f.inner; ++i) {
      const float* x = a.xs[0].v + size_t(o) * f.n * f.inner + i;
      auto at = [&](unsigned k) { return x[size_t(k) * f.inner]; };
      auto before = [&](unsigned u, unsigned v) { return kmax_before(at(u), u, at(v), v); };
      for (size_t k = 0; k < f.n; ++k) order[k] = k;
      std::nth_element(order, order + (p.k - 1), order + f.n, before);
      std::sort(order, order + p.k);
      float* y = a.fx.v + size_t(o) * p.k * f.inner + i;
      unsigned* s = src + size_t(o) * p.k * f.inner + i;
      for (size_t j = 0; j < p.k; ++j) {
        y[size_t(j) * f.inner] = at(order[j]);
        s[size_t(j) * f.inner] = order[j];
      }
    }
}
void kmax_pooling_bwd(const BackwardArgs& a) {
  const KMaxAttr& p = a.attr.as<KMaxAttr>();
  const Fibers f = ops::fibers(a.xs[0].d, p.axis);
  const unsigned* src = reinterpret_cast<const unsigned*>(a.aux);
  for (size_t o = 0; o < f.outer; ++o)
    for (size_t j = 0; j < p.k; ++j)
      for (size_t i = 0; i < f.inner; ++i) {
        const size_t y = (size_t(o) * p.k + j) * f.inner + i;
        a.dEdxi.v[(size_t(o) * f.n + src[y]) * f.inner + i] += a.dEdf.v[y];
      }
}
std::vector<OpSample> kmax_pooling_samples() {
  auto pool = [](unsigned k, unsigned d) {
    return [k, d](ComputationGraph&, Xs x) { return kmax_pooling(x[0], k, d); };
  };
  return {{"cols", {Dim({3, 5})}, pool(2, 1)},
          {"rows", {Dim({5, 2})}, pool(3, 0)},
          {"k_is_size", {Dim({2, 3})}, pool(3, 1)},
          {"tensor_middle", {Dim({2, 4, 2})}, pool(2, 1)},
          {"batched", {Dim({2, 4}, 3)}, pool(1, 1)},
          {"k_zero", {Dim({3, 4})}, pool(0, 1), -1, 1, true},
          {"k_too_big", {Dim({3, 4})}, pool(5, 1), -1, 1, true},
          {"bad_dim", {Dim({3})}, pool(1, 1), -1, 1, true}};
}
const OpId k_kmax_pooling = register_op({.name = "kmax_pooling",
                                         .doc = "y = the k largest x along dim d, in their original order",
                                         .shape = kmax_pooling_shape,
                                         .forward = kmax_pooling_fwd,
                                         .backward = kmax_pooling_bwd,
                                         .aux_floats = output_size_aux,
                                         .batch = {.batchable = true},
                                         .samples = kmax_pooling_samples});
}  // namespace
Expression kmax_pooling(const Expression& x, unsigned k, unsigned d) {
  return make_node(k_kmax_pooling, x, KMaxAttr{k, d});
}
DYNET_API(kmax_pooling, "kmax_pooling", "kmax_pooling(x, k, d = 1)", "kmax_pooling(x, k, d=1)", Expression(const Expression&, unsigned, unsigned));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// fold_rows(x, nrows): sums each block of nrows consecutive rows: y[i, j] = Σ_{t<nrows} x[i·nrows + t, j].
// fold_rows: y[i, c] = Σ_t x[i·nrows + t, c]; every x element gets its block's gradient.
template <class P>
void fold_rows_dev_fwd(const ForwardArgs& a) {
  const size_t nrows = a.attr.as<unsigned>(), rows = a.xs[0].d.rows(), orows = rows / nrows;
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) {
    const float* block = x + (j / orows) * rows + (j % orows) * nrows;
    float s = 0.f;
    for (size_t t = 0; t < nrows; ++t) s += block[t];
    y[j] = s;
  });
}
template <class P>
void fold_rows_dev_bwd(const BackwardArgs& a) {
  const size_t nrows = a.attr.as<unsigned>(), rows = a.xs[0].d.rows(), orows = rows / nrows;
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.xs[0].d.size(),
              [=] DYNET_LAMBDA(size_t i) { dx[i] += g[(i / rows) * orows + (i % rows) / nrows]; });
}
DYNET_DEVICE_KERNELS("fold_rows", fold_rows_dev_fwd, fold_rows_dev_bwd);

#ifndef DYNET_CUDA_PASS
Dim fold_rows_shape(const ArgDims& xs, AttrView a) {
  const unsigned nrows = a.as<unsigned>();
  const Dim& x = xs[0];
  if (x.nd > 2) op_error("fold_rows", "expects a vector or matrix, got " + x.str());
  if (nrows == 0 || x.rows() % nrows != 0)
    op_error("fold_rows", "nrows = " + num(nrows) + " must divide the " + num(x.rows()) + " rows of input " + x.str());
  return Dim({x.rows() / nrows, x.cols()}, x.bd);  // a matrix, a vector's too ({3} -> {3,1}), as in DyNet
}
// CPU kernel kept: op_perf generic/CPU 1.56 single, 3.27 x64 fwd+bwd (the generic kernel divides indices
// per element).
void fold_rows_fwd(const ForwardArgs& a) {
  const unsigned nrows = a.attr.as<unsigned>();
  const size_t rows = a.xs[0].d.rows(), cols = a.xs[0].d.size() / rows, orows = rows / nrows;
  for (size_t c = 0; c < cols; ++c) {
    const float* x = a.xs[0].v + size_t(c) * rows;
    float* y = a.fx.v + size_t(c) * orows;
    for (size_t i = 0; i < orows; ++i) {
      float s = 0.f;
      for (size_t t = 0; t < nrows; ++t) s += x[i * nrows + t];
      y[i] = s;
    }
  }
}
void fold_rows_bwd(const BackwardArgs& a) {
  const unsigned nrows = a.attr.as<unsigned>();
  const size_t rows = a.xs[0].d.rows(), cols = a.xs[0].d.size() / rows, orows = rows / nrows;
  for (size_t c = 0; c < cols; ++c) {
    float* dx = a.dEdxi.v + size_t(c) * rows;
    const float* g = a.dEdf.v + size_t(c) * orows;
    for (size_t i = 0; i < orows; ++i)
      for (size_t t = 0; t < nrows; ++t) dx[i * nrows + t] += g[i];
  }
}
std::vector<OpSample> fold_rows_samples() {
  auto fold = [](unsigned n) { return [n](ComputationGraph&, Xs x) { return fold_rows(x[0], n); }; };
  return {{"pairs", {Dim({4, 3})}, fold(2)},
          {"triples", {Dim({6, 2})}, fold(3)},
          {"vector", {Dim({4})}, fold(4)},
          {"batched", {Dim({4, 2}, 2)}, fold(2)},
          {"not_divisible", {Dim({5, 2})}, fold(2), -1, 1, true},
          {"zero", {Dim({4, 2})}, fold(0), -1, 1, true},
          {"tensor", {Dim({4, 2, 2})}, fold(2), -1, 1, true}};
}
const OpId k_fold_rows = register_op({.name = "fold_rows",
                                      .doc = "y[i, j] = Σ_{t<nrows} x[i·nrows + t, j]",
                                      .shape = fold_rows_shape,
                                      .forward = fold_rows_fwd,
                                      .backward = fold_rows_bwd,
                                      .batch = {.batchable = true},
                                      .samples = fold_rows_samples});
}  // namespace
Expression fold_rows(const Expression& x, unsigned nrows) { return make_node(k_fold_rows, x, nrows); }
DYNET_API(fold_rows, "fold_rows", "fold_rows(x, nrows = 2)", "fold_rows(x, nrows=2)", Expression(const Expression&, unsigned));
namespace {
#endif

}  // namespace
}  // namespace dynet
