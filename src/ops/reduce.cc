// Reductions: sum_elems / mean_elems (per batch element), sum_batches, max_dim.

#include "ops/common.h"

namespace dynet {
namespace {

using Xs = const std::vector<Expression>&;
using ArrayMap = Eigen::Map<Eigen::ArrayXf, Eigen::Unaligned>;
using CArrayMap = Eigen::Map<const Eigen::ArrayXf, Eigen::Unaligned>;

Dim per_batch_scalar(const ArgDims& xs, AttrView) { return Dim({1}, xs[0].bd); }

// ---------------------------------------------------------------------------------------------
// sum_elems(x) = Σ x and mean_elems(x) = Σ x / n, per batch element. kMean selects the second.
template <bool kMean>
void sum_elems_fwd(const ForwardArgs& a) {
  const Tensor& x = a.xs[0];
  const unsigned bs = x.d.batch_size();
  const float scale = kMean ? 1.f / float(bs) : 1.f;
  for (unsigned b = 0; b < x.d.bd; ++b) a.fx.v[b] = cpu::cbarr(x, b).sum() * scale;
}
template <bool kMean>
void sum_elems_bwd(const BackwardArgs& a) {
  const Tensor& x = a.xs[0];
  const unsigned bs = x.d.batch_size();
  const float scale = kMean ? 1.f / float(bs) : 1.f;
  for (unsigned b = 0; b < x.d.bd; ++b) cpu::barr(a.dEdxi, b) += a.dEdf.v[b] * scale;
}
template <bool kMean>
std::vector<OpSample> sum_elems_samples() {
  auto build = [](ComputationGraph&, Xs x) { return kMean ? mean_elems(x[0]) : sum_elems(x[0]); };
  return {{"vector", {Dim({5})}, build}, {"matrix", {Dim({3, 4})}, build}, {"batched", {Dim({3, 2}, 3)}, build}};
}
const OpId k_sum_elems = register_op({.name = "sum_elems",
                                      .shape = per_batch_scalar,
                                      .forward = sum_elems_fwd<false>,
                                      .backward = sum_elems_bwd<false>,
                                      .batch = {.batchable = true},
                                      .samples = sum_elems_samples<false>});
const OpId k_mean_elems = register_op({.name = "mean_elems",
                                       .shape = per_batch_scalar,
                                       .forward = sum_elems_fwd<true>,
                                       .backward = sum_elems_bwd<true>,
                                       .batch = {.batchable = true},
                                       .samples = sum_elems_samples<true>});

// ---------------------------------------------------------------------------------------------
// sum_batches(x) = Σ_b x[b]; the batch count of the result is 1.
Dim sum_batches_shape(const ArgDims& xs, AttrView) { return xs[0].single_batch(); }
void sum_batches_fwd(const ForwardArgs& a) {
  const Tensor& x = a.xs[0];
  ArrayMap y = cpu::arr(a.fx);
  y = cpu::cbarr(x, 0);
  for (unsigned b = 1; b < x.d.bd; ++b) y += cpu::cbarr(x, b);
}
void sum_batches_bwd(const BackwardArgs& a) {
  CArrayMap g = cpu::carr(a.dEdf);
  for (unsigned b = 0; b < a.xs[0].d.bd; ++b) cpu::barr(a.dEdxi, b) += g;
}
std::vector<OpSample> sum_batches_samples() {
  auto build = [](ComputationGraph&, Xs x) { return sum_batches(x[0]); };
  return {{"batched", {Dim({3, 2}, 3)}, build}, {"unbatched", {Dim({4})}, build}};
}
// Not batchable: run as one node, the members' batches would be summed together.
const OpId k_sum_batches = register_op({.name = "sum_batches",
                                        .shape = sum_batches_shape,
                                        .forward = sum_batches_fwd,
                                        .backward = sum_batches_bwd,
                                        .samples = sum_batches_samples});

// ---------------------------------------------------------------------------------------------
// max_dim(x, d): the maximum along dim d, which is removed. The gradient goes to the (first) argmax,
// whose index is kept in aux.
struct Fibers {
  unsigned inner = 1, n = 1, outer = 1;
};
Fibers fibers_with_batch(const Dim& d, unsigned axis) {
  Fibers f;
  for (unsigned k = 0; k < d.nd; ++k) {
    if (k < axis)
      f.inner *= d.d[k];
    else if (k == axis)
      f.n = d.d[k];
    else
      f.outer *= d.d[k];
  }
  f.outer *= d.bd;
  return f;
}
Dim max_dim_shape(const ArgDims& xs, AttrView a) {
  const unsigned d = a.as<unsigned>();
  const Dim& x = xs[0];
  if (d >= x.nd) op_error("max_dim", "dim " + std::to_string(d) + " out of range for input " + x.str());
  if (x.d[d] == 0) op_error("max_dim", "dim " + std::to_string(d) + " of input " + x.str() + " is empty");
  Dim out = x;
  out.delete_dim(d);
  return out;
}
size_t max_dim_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.size(); }
void max_dim_fwd(const ForwardArgs& a) {
  const Fibers f = fibers_with_batch(a.xs[0].d, a.attr.as<unsigned>());
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  unsigned* arg = reinterpret_cast<unsigned*>(a.aux);
  for (unsigned o = 0; o < f.outer; ++o) {
    const float* xo = x + size_t(o) * f.n * f.inner;
    float* yo = y + size_t(o) * f.inner;
    unsigned* ao = arg + size_t(o) * f.inner;
    for (unsigned i = 0; i < f.inner; ++i) {
      yo[i] = xo[i];
      ao[i] = 0;
    }
    for (unsigned k = 1; k < f.n; ++k) {
      const float* xk = xo + size_t(k) * f.inner;
      for (unsigned i = 0; i < f.inner; ++i)
        if (xk[i] > yo[i]) {
          yo[i] = xk[i];
          ao[i] = k;
        }
    }
  }
}
void max_dim_bwd(const BackwardArgs& a) {
  const Fibers f = fibers_with_batch(a.xs[0].d, a.attr.as<unsigned>());
  const unsigned* arg = reinterpret_cast<const unsigned*>(a.aux);
  for (unsigned o = 0; o < f.outer; ++o)
    for (unsigned i = 0; i < f.inner; ++i) {
      const size_t j = size_t(o) * f.inner + i;
      a.dEdxi.v[(size_t(o) * f.n + arg[j]) * f.inner + i] += a.dEdf.v[j];
    }
}
std::vector<OpSample> max_dim_samples() {
  auto along = [](unsigned d) { return [d](ComputationGraph&, Xs x) { return max_dim(x[0], d); }; };
  return {{"vector", {Dim({5})}, along(0)},
          {"matrix_rows", {Dim({4, 3})}, along(0)},
          {"matrix_cols", {Dim({4, 3})}, along(1)},
          {"tensor_last", {Dim({2, 3, 4})}, along(2)},
          {"batched", {Dim({3, 2}, 3)}, along(1)},
          {"bad_dim", {Dim({4, 3})}, along(2), -1, 1, true}};
}
const OpId k_max_dim = register_op({.name = "max_dim",
                                    .shape = max_dim_shape,
                                    .forward = max_dim_fwd,
                                    .backward = max_dim_bwd,
                                    .aux_floats = max_dim_aux,
                                    .batch = {.batchable = true},
                                    .samples = max_dim_samples});

}  // namespace

Expression sum_elems(const Expression& x) { return make_node(k_sum_elems, x); }
Expression mean_elems(const Expression& x) { return make_node(k_mean_elems, x); }
Expression sum_batches(const Expression& x) { return make_node(k_sum_batches, x); }
Expression max_dim(const Expression& x, unsigned d) { return make_node(k_max_dim, x, d); }

}  // namespace dynet
