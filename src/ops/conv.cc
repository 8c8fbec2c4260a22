// Convolution: filter1d_narrow, conv1d_narrow, conv1d_wide, kmh_ngram, conv2d (with or without bias) and
// maxpooling2d.
//
// Layout is DyNet's: an image is column-major H x W x C (H fastest), a filter KH x KW x C_in x C_out,
// batch slowest. conv2d is a cross-correlation (the filter is not flipped), like DyNet's Eigen/cuDNN
// kernels and TensorFlow; 'same' padding puts the odd pixel after (pad_before = total / 2).
//
// conv2d has two kernels, chosen per node by the number of input channels C_in:
//  - C_in >= 4 (with an unbatched filter and bias): oneDNN's convolution primitives (forward, backward
//    data, backward weights), on memory descriptors that describe our layout with explicit strides;
//    reorders move data into and out of the primitives' blocked layouts (the backward ones accumulate,
//    via a sum post-op). Primitives are created once per geometry and batch count (~0.5 ms) and cached.
//  - otherwise im2col + GEMM (cpu::gemm): per batch element the patches form P {OH*OW, KH*KW*C_in}
//    whose column order matches the filter's memory order, so the filter is used in place as
//    F {KH*KW*C_in, C_out} and Y = P·F lands directly in the H x W x C output layout; backward is
//    dF += Pᵀ·dY and dX += col2im(dY·Fᵀ).
// Measured on this machine (AVX-512, one thread; forward / forward+backward in us, 'same', stride 1):
//   image     filter      batch     im2col          oneDNN
//   14x14x32  5x5 -> 64     1      252 / 761       159 / 500
//   14x14x32  5x5 -> 64    32     8140 / 24706    4976 / 15680
//   16x16x8   3x3 -> 16    16      183 / 796        91 / 376
//   16x16x4   3x3 -> 16    16       96 / 420        52 / 330
//   32x32x3   5x5 -> 8      8      200 / 802       226 / 1366
//   28x28x1   5x5 -> 32    32      515 / 2266      494 / 7752
// oneDNN's blocked kernels win from a few input channels on; with 1-3 channels its backward (weights
// above all) loses to im2col, hence the threshold.
//
// Other devices run the device kernels below (im2col + P::gemm_batched over the whole batch, gathers for
// the input gradients): cuBLAS on GPUs, not cuDNN, which the build would need as one more dependency
// (docs/design.md, "Devices").
#include <algorithm>
#include <cstdint>

#include "kernels/device/prims.h"

#ifndef DYNET_CUDA_PASS
#include <omp.h>

#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "core/mem.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {
namespace {

// ---------------------------------------------------------------------------------------------
// Window geometry shared by conv2d and maxpooling2d (DyNet's / TensorFlow's rules):
//   valid: out = ceil((in - k + 1) / s), no padding;
//   same:  out = ceil(in / s), total padding max((out-1)·s + k - in, 0), half of it (rounded down) before.
struct Axis {
  unsigned in, k, s, out, pad;
};
Axis make_axis(unsigned in, unsigned k, unsigned s, bool valid) {
  if (valid) return {in, k, s, (in - k) / s + 1, 0};
  const unsigned out = (in + s - 1) / s;
  const long total = std::max(long(out - 1) * s + long(k) - long(in), 0L);
  return {in, k, s, out, static_cast<unsigned>(total / 2)};
}
struct WindowAttr {
  uint32_t kh, kw, sh, sw, is_valid;
};


// ---- device kernels ----
// Written once over the primitives P (kernels/device/prims.h) for the devices other than the CPU: each
// output or input element is computed by its own thread, and the products go through P::gemm /
// P::gemm_batched (cuBLAS on GPUs). Gradients of inputs are gathers (each element sums what it received),
// so no two threads write one element, except maxpooling2d's, which scatters through dev::atomic_add.

long batch_stride(const Tensor& t, size_t per) { return t.d.bd == 1 ? 0 : long(per); }
}  // namespace

#ifndef DYNET_CUDA_PASS
namespace {
using ops::Xs;

using ops::common_bd;
using ops::join;

// Image dims {H, W, C} of an argument that is {H, W} or {H, W, C}.
bool is_image(const Dim& d) { return d.nd == 2 || d.nd == 3; }

// Checks a {rows, cols} pair argument (strides, window sizes): two positive entries first. Entries after them
// are ignored, as DyNet ignored them: programs ported from TensorFlow pass strides {1, 1, 1, 1}.
void check_pair(const char* op, const char* what, const std::vector<unsigned>& v) {
  if (v.size() < 2 || v[0] == 0 || v[1] == 0) {
    std::string s = "{";
    for (size_t k = 0; k < v.size(); ++k) {
      if (k) s += ',';
      s += std::to_string(v[k]);
    }
    op_error(op, std::string(what) + " must start with two positive numbers {rows, cols}, got " + s + "}");
  }
}
}  // namespace
#endif

// ---------------------------------------------------------------------------------------------
// filter1d_narrow(x, f): x {d, n}, f {d, k} or {d, k, m}; y {m, n-k+1} with
// y[i, j] = Σ_{r, c} x[r, j+c] · f[r, c, i]. Window j of x is the contiguous block of d·k floats at
// column j, so each output column is one product Fᵀ · window with F {d·k, m}.
namespace {
// filter1d_narrow. The windows of x as the columns of W {d·k, cols} per batch element of x.
template <class P>
float* filter_windows(const Tensor& x, size_t dk, size_t cols, MemPool& scratch) {
  const size_t d = x.d.rows(), per = x.d.batch_size(), n = dk * cols * x.d.bd;
  float* w = scratch.allocate_floats(n);
  const float* xv = x.v;
  P::for_each(x.device, n, [=] DYNET_LAMBDA(size_t i) {
    const size_t r = i % dk, j = (i / dk) % cols, b = i / (dk * cols);
    w[i] = xv[b * per + j * d + r];
  });
  return w;
}
template <class P>
void filter1d_dev_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &f = a.xs[1];
  const size_t dk = size_t(x.d.rows()) * f.d.cols(), m = f.d[2], cols = a.fx.d.cols();
  const float* w = filter_windows<P>(x, dk, cols, a.scratch);
  // Y_b {m, cols} = F_bᵀ {m, d·k} · W_b
  P::gemm_batched(a.fx.device, true, false, long(m), long(cols), long(dk), 1.f, f.v, long(dk), batch_stride(f, dk * m),
                  w, long(dk), batch_stride(x, dk * cols), 0.f, a.fx.v, long(m), long(m * cols), long(a.fx.d.bd));
}
template <class P>
void filter1d_dev_bwd(const BackwardArgs& a) {
  const Tensor &x = a.xs[0], &f = a.xs[1];
  Device* dev = a.fx.device;
  const size_t d = x.d.rows(), k = f.d.cols(), dk = d * k, m = f.d[2], cols = a.fx.d.cols(), bd = a.fx.d.bd;
  const float* g = a.dEdf.v;
  if (a.i == 1) {  // dF_b {d·k, m} += W_b · G_bᵀ
    const float* w = filter_windows<P>(x, dk, cols, a.scratch);
    if (a.dEdxi.d.bd == 1 && bd > 1)  // a shared filter (x is then batched): the batch folds into the columns
      P::gemm(dev, false, true, long(dk), long(m), long(cols * bd), 1.f, w, long(dk), g, long(m), 1.f, a.dEdxi.v,
              long(dk));
    else
      P::gemm_batched(dev, false, true, long(dk), long(m), long(cols), 1.f, w, long(dk), batch_stride(x, dk * cols), g,
                      long(m), long(m * cols), 1.f, a.dEdxi.v, long(dk), long(dk * m), long(bd));
    return;
  }
  // dW_b = F_b · G_b, then each element of x sums the window entries it was copied to.
  float* dw = a.scratch.allocate_floats(dk * cols * bd);
  P::gemm_batched(dev, false, false, long(dk), long(cols), long(m), 1.f, f.v, long(dk), batch_stride(f, dk * m), g,
                  long(m), long(m * cols), 0.f, dw, long(dk), long(dk * cols), long(bd));
  const size_t per = x.d.batch_size();
  dev::add_over_batch<P>(dev, a.dEdxi.v, a.dEdxi.d.bd > 1, bd, per, [=] DYNET_LAMBDA(size_t b, size_t e) {
    const size_t r = e % d, col = e / d;
    const size_t c_lo = col + 1 > cols ? col + 1 - cols : 0, c_hi = col < k - 1 ? col : k - 1;
    float s = 0.f;
    for (size_t c = c_lo; c <= c_hi; ++c) s += dw[b * dk * cols + (col - c) * dk + c * d + r];
    return s;
  });
}
DYNET_DEVICE_KERNELS("filter1d_narrow", filter1d_dev_fwd, filter1d_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim filter1d_shape(const ArgDims& xs, AttrView) {
  constexpr const char* op = "filter1d_narrow";
  const Dim &x = xs[0], &f = xs[1];
  if (x.nd > 2 || f.nd < 2 || f.nd > 3 || x.rows() != f.rows())
    op_error(op, "needs x {d,n} and f {d,k} or {d,k,filters} with the same d: x " + x.str() + ", f " + f.str());
  if (f.cols() > x.cols()) op_error(op, "filter " + f.str() + " is wider than x " + x.str());
  return Dim({f[2], x.cols() - f.cols() + 1}, common_bd(op, xs));
}
// CPU kernel kept: op_perf generic/CPU 3.82 single, 4.21 x64 fwd+bwd (Eigen products per output column;
// the generic kernel sums one output value per thread).
void filter1d_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &f = a.xs[1];
  const size_t d = x.d.rows(), k = f.d.cols(), m = f.d[2], out_cols = a.fx.d.cols();
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    cpu::CMatMap F(f.batch_ptr(b), d * k, m);
    cpu::MatMap Y(a.fx.batch_ptr(b), m, out_cols);
    const float* xb = x.batch_ptr(b);
    for (size_t j = 0; j < out_cols; ++j)
      Y.col(j).noalias() = F.transpose() * Eigen::Map<const Eigen::VectorXf>(xb + size_t(j) * d, d * k);
  }
}
void filter1d_bwd(const BackwardArgs& a) {
  const Tensor &x = a.xs[0], &f = a.xs[1];
  const size_t d = x.d.rows(), k = f.d.cols(), m = f.d[2], out_cols = a.fx.d.cols();
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    cpu::CMatMap G(a.dEdf.batch_ptr(b), m, out_cols);
    if (a.i == 0) {
      cpu::CMatMap F(f.batch_ptr(b), d * k, m);
      float* dx = a.dEdxi.batch_ptr(b);
      for (size_t j = 0; j < out_cols; ++j) Eigen::Map<Eigen::VectorXf>(dx + size_t(j) * d, d * k) += F * G.col(j);
    } else {
      cpu::MatMap dF(a.dEdxi.batch_ptr(b), d * k, m);
      const float* xb = x.batch_ptr(b);
      for (size_t j = 0; j < out_cols; ++j)
        dF.noalias() += Eigen::Map<const Eigen::VectorXf>(xb + size_t(j) * d, d * k) * G.col(j).transpose();
    }
  }
}
std::vector<OpSample> filter1d_samples() {
  auto b = [](ComputationGraph&, Xs x) { return filter1d_narrow(x[0], x[1]); };
  return {{"one_filter", {Dim({3, 6}), Dim({3, 2})}, b},
          {"three_filters", {Dim({2, 5}), Dim({2, 3, 3})}, b},
          {"full_width", {Dim({2, 3}), Dim({2, 3, 2})}, b},
          {"batched_x", {Dim({2, 5}, 2), Dim({2, 2, 3})}, b},
          {"batched_both", {Dim({2, 4}, 2), Dim({2, 2, 2}, 2)}, b},
          {"rows_differ", {Dim({3, 5}), Dim({2, 2})}, b, -1, 1, true},
          {"too_wide", {Dim({2, 2}), Dim({2, 3})}, b, -1, 1, true},
          {"x_not_matrix", {Dim({2, 3, 2}), Dim({2, 2})}, b, -1, 1, true},
          {"batch_mismatch", {Dim({2, 4}, 2), Dim({2, 2}, 3)}, b, -1, 1, true}};
}
const OpId k_filter1d = register_op({.name = "filter1d_narrow",
                                     .doc = "y[i,j] = Σ_{r,c} x[r,j+c] · f[r,c,i]",
                                     .shape = filter1d_shape,
                                     .forward = filter1d_fwd,
                                     .backward = filter1d_bwd,
                                     .batch = {.batchable = true, .shared = 2},
                                     .samples = filter1d_samples});
}  // namespace
Expression filter1d_narrow(const Expression& x, const Expression& f) { return make_node(k_filter1d, x, f); }
DYNET_API(filter1d_narrow, "filter1d_narrow", "filter1d_narrow(x, f)", "filter1d_narrow(x, y)", Expression(const Expression&, const Expression&));
#endif

// ---------------------------------------------------------------------------------------------
// conv1d_narrow(x, f) and conv1d_wide(x, f): DyNet 2.0's Conv1DNarrow and Conv1DWide (DyNet 2.1 dropped
// the two expressions; DyNet's own train_textcat.cc uses conv1d_wide). Each row of x {d, n} is combined
// with the same row of f {d, k}, as DyNet computed them:
//   narrow: y {d, n-k+1}, y[r, o] = Σ_{c<k} x[r, o+c] · f[r, c]                (valid; f not flipped)
//   wide:   y {d, n+k-1}, y[r, o] = Σ_{c<k, 0<=o-c<n} x[r, o-c] · f[r, c]      (full; a true convolution)
// A vector is one column. Either argument may be batched (the other is then shared by every element).
namespace {
// conv1d_narrow / conv1d_wide: every output element and every input gradient element is one gather over the
// k filter columns (or the output columns), so no two threads write one element.
template <class P, bool Wide>
void conv1d_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &f = a.xs[1];
  const size_t d = x.d.rows(), n = x.d.cols(), k = f.d.cols(), ycols = a.fx.d.cols();
  const size_t xstride = x.d.bd == 1 ? 0 : d * n, fstride = f.d.bd == 1 ? 0 : d * k;
  const float *xv = x.v, *fv = f.v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t r = i % d, o = (i / d) % ycols, b = i / (d * ycols);
    const float* xb = xv + b * xstride + r;
    const float* fb = fv + b * fstride + r;
    float s = 0.f;
    for (size_t c = 0; c < k; ++c) {
      const long j = Wide ? long(o) - long(c) : long(o + c);
      if (j >= 0 && j < long(n)) s += xb[size_t(j) * d] * fb[c * d];
    }
    y[i] = s;
  });
}
template <class P, bool Wide>
void conv1d_bwd(const BackwardArgs& a) {
  const Tensor &x = a.xs[0], &f = a.xs[1];
  const size_t d = x.d.rows(), n = x.d.cols(), k = f.d.cols(), ycols = a.fx.d.cols(), bd = a.fx.d.bd;
  const size_t xstride = x.d.bd == 1 ? 0 : d * n, fstride = f.d.bd == 1 ? 0 : d * k;
  const float *xv = x.v, *fv = f.v, *g = a.dEdf.v;
  if (a.i == 0) {  // dx[r, j] += Σ_c f[r, c] · g[r, o(j, c)]
    dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.dEdxi.d.bd > 1, bd, d * n, [=] DYNET_LAMBDA(size_t b, size_t e) {
      const size_t r = e % d, j = e / d;
      const float* fb = fv + b * fstride + r;
      const float* gb = g + b * d * ycols + r;
      float s = 0.f;
      for (size_t c = 0; c < k; ++c) {
        const long o = Wide ? long(j + c) : long(j) - long(c);
        if (o >= 0 && o < long(ycols)) s += fb[c * d] * gb[size_t(o) * d];
      }
      return s;
    });
  } else {  // df[r, c] += Σ_o g[r, o] · x[r, j(o, c)]
    dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.dEdxi.d.bd > 1, bd, d * k, [=] DYNET_LAMBDA(size_t b, size_t e) {
      const size_t r = e % d, c = e / d;
      const float* xb = xv + b * xstride + r;
      const float* gb = g + b * d * ycols + r;
      float s = 0.f;
      for (size_t o = 0; o < ycols; ++o) {
        const long j = Wide ? long(o) - long(c) : long(o + c);
        if (j >= 0 && j < long(n)) s += gb[o * d] * xb[size_t(j) * d];
      }
      return s;
    });
  }
}
template <class P>
void conv1d_narrow_fwd(const ForwardArgs& a) { conv1d_fwd<P, false>(a); }
template <class P>
void conv1d_narrow_bwd(const BackwardArgs& a) { conv1d_bwd<P, false>(a); }
template <class P>
void conv1d_wide_fwd(const ForwardArgs& a) { conv1d_fwd<P, true>(a); }
template <class P>
void conv1d_wide_bwd(const BackwardArgs& a) { conv1d_bwd<P, true>(a); }
DYNET_DEVICE_KERNELS("conv1d_narrow", conv1d_narrow_fwd, conv1d_narrow_bwd);
DYNET_DEVICE_KERNELS("conv1d_wide", conv1d_wide_fwd, conv1d_wide_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
template <bool Wide>
Dim conv1d_shape(const ArgDims& xs, AttrView) {
  const char* op = Wide ? "conv1d_wide" : "conv1d_narrow";
  const Dim &x = xs[0], &f = xs[1];
  if (x.nd > 2 || f.nd > 2 || x.rows() != f.rows())
    op_error(op, "needs x {d,n} and f {d,k} with the same d: x " + x.str() + ", f " + f.str());
  if (!Wide && f.cols() > x.cols()) op_error(op, "filter " + f.str() + " is wider than x " + x.str());
  return Dim({x.rows(), Wide ? x.cols() + f.cols() - 1 : x.cols() - f.cols() + 1}, common_bd(op, xs));
}
template <bool Wide>
std::vector<OpSample> conv1d_samples() {
  auto b = [](ComputationGraph&, Xs x) { return Wide ? conv1d_wide(x[0], x[1]) : conv1d_narrow(x[0], x[1]); };
  std::vector<OpSample> s = {{"matrix", {Dim({3, 6}), Dim({3, 2})}, b},
                             {"full_width", {Dim({2, 3}), Dim({2, 3})}, b},
                             {"one_column", {Dim({4, 1}), Dim({4, 1})}, b},
                             {"vector_x", {Dim({3}), Dim({3, 1})}, b},
                             {"batched_x", {Dim({2, 5}, 2), Dim({2, 3})}, b},
                             {"batched_f", {Dim({2, 4}), Dim({2, 2}, 3)}, b},
                             {"batched_both", {Dim({2, 4}, 2), Dim({2, 2}, 2)}, b},
                             {"rows_differ", {Dim({3, 5}), Dim({2, 2})}, b, -1, 1, true},
                             {"x_not_matrix", {Dim({2, 3, 2}), Dim({2, 2})}, b, -1, 1, true},
                             {"f_not_matrix", {Dim({2, 3}), Dim({2, 2, 2})}, b, -1, 1, true},
                             {"batch_mismatch", {Dim({2, 4}, 2), Dim({2, 2}, 3)}, b, -1, 1, true}};
  if (Wide)
    s.push_back({"filter_wider_than_x", {Dim({2, 2}), Dim({2, 4})}, b});
  else
    s.push_back({"too_wide", {Dim({2, 2}), Dim({2, 3})}, b, -1, 1, true});
  return s;
}
const OpId k_conv1d_narrow = register_op({.name = "conv1d_narrow",
                                          .doc = "y[r,o] = Σ_{c<k} x[r,o+c] · f[r,c]",
                                          .shape = conv1d_shape<false>,
                                          .forward = conv1d_narrow_fwd<dev::HostPrims>,
                                          .backward = conv1d_narrow_bwd<dev::HostPrims>,
                                          .batch = {.batchable = true, .shared = 2},
                                          .samples = conv1d_samples<false>});
const OpId k_conv1d_wide = register_op({.name = "conv1d_wide",
                                        .doc = "y[r,o] = Σ_{c<k, 0≤o-c<n} x[r,o-c] · f[r,c]",
                                        .shape = conv1d_shape<true>,
                                        .forward = conv1d_wide_fwd<dev::HostPrims>,
                                        .backward = conv1d_wide_bwd<dev::HostPrims>,
                                        .batch = {.batchable = true, .shared = 2},
                                        .samples = conv1d_samples<true>});
}  // namespace
Expression conv1d_narrow(const Expression& x, const Expression& f) { return make_node(k_conv1d_narrow, x, f); }
DYNET_API(conv1d_narrow, "conv1d_narrow", "conv1d_narrow(x, f)", nullptr, Expression(const Expression&, const Expression&));
Expression conv1d_wide(const Expression& x, const Expression& f) { return make_node(k_conv1d_wide, x, f); }
DYNET_API(conv1d_wide, "conv1d_wide", "conv1d_wide(x, f)", nullptr, Expression(const Expression&, const Expression&));
#endif

// ---------------------------------------------------------------------------------------------
// kmh_ngram(x, n): x {d, cols}; y {d, cols-n+1} with y[:, j] = Σ_{k<n} x[:, j+k].
namespace {
// kmh_ngram: y[:, j] = Σ_{k<n} x[:, j+k]; x[:, c] receives the gradients of the columns j in [c-n+1, c].
template <class P>
void kmh_dev_fwd(const ForwardArgs& a) {
  const size_t n = a.attr.as<unsigned>(), d = a.fx.d.rows(), cols = a.fx.d.cols(), xcols = a.xs[0].d.cols();
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t r = i % d, j = (i / d) % cols, b = i / (d * cols);
    const float* xb = x + b * d * xcols + r;
    float s = 0.f;
    for (size_t k = 0; k < n; ++k) s += xb[(j + k) * d];
    y[i] = s;
  });
}
template <class P>
void kmh_dev_bwd(const BackwardArgs& a) {
  const size_t n = a.attr.as<unsigned>(), d = a.fx.d.rows(), cols = a.fx.d.cols(), xcols = a.xs[0].d.cols();
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.dEdxi.d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t r = i % d, c = (i / d) % xcols, b = i / (d * xcols);
    const size_t j_lo = c + 1 > n ? c + 1 - n : 0, j_hi = c < cols - 1 ? c : cols - 1;
    float s = 0.f;
    for (size_t j = j_lo; j <= j_hi; ++j) s += g[(b * cols + j) * d + r];
    dx[i] += s;
  });
}
DYNET_DEVICE_KERNELS("kmh_ngram", kmh_dev_fwd, kmh_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim kmh_shape(const ArgDims& xs, AttrView a) {
  const unsigned n = a.as<unsigned>();
  const Dim& x = xs[0];
  if (x.nd > 2) op_error("kmh_ngram", "needs a matrix {d,cols}, got " + x.str());
  if (n == 0 || n > x.cols())
    op_error("kmh_ngram", "n = " + std::to_string(n) + " must be in [1, cols] for x " + x.str());
  return Dim({x.rows(), x.cols() - n + 1}, x.bd);
}
// CPU kernel kept: op_perf generic/CPU 2.22 single, 3.11 x64 fwd+bwd (Eigen column sums vectorise; the
// generic kernel sums one value per thread).
void kmh_fwd(const ForwardArgs& a) {
  const unsigned n = a.attr.as<unsigned>();
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    cpu::MatMap Y = cpu::mat(a.fx, b);
    cpu::CMatMap X = cpu::cmat(a.xs[0], b);
    for (Eigen::Index j = 0; j < Y.cols(); ++j) Y.col(j) = X.middleCols(j, n).rowwise().sum();
  }
}
void kmh_bwd(const BackwardArgs& a) {
  const unsigned n = a.attr.as<unsigned>();
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    cpu::CMatMap G = cpu::cmat(a.dEdf, b);
    cpu::MatMap dX = cpu::mat(a.dEdxi, b);
    for (Eigen::Index j = 0; j < G.cols(); ++j)
      for (size_t k = 0; k < n; ++k) dX.col(j + k) += G.col(j);
  }
}
std::vector<OpSample> kmh_samples() {
  auto with = [](unsigned n) { return [n](ComputationGraph&, Xs x) { return kmh_ngram(x[0], n); }; };
  return {{"bigram", {Dim({3, 5})}, with(2)},
          {"unigram", {Dim({2, 3})}, with(1)},
          {"full", {Dim({2, 4})}, with(4)},
          {"batched", {Dim({2, 4}, 3)}, with(3)},
          {"n_too_big", {Dim({2, 3})}, with(4), -1, 1, true},
          {"n_zero", {Dim({2, 3})}, with(0), -1, 1, true},
          {"three_dims", {Dim({2, 3, 2})}, with(2), -1, 1, true}};
}
const OpId k_kmh = register_op({.name = "kmh_ngram",
                                .doc = "y[:,j] = Σ_{k<n} x[:,j+k]",
                                .shape = kmh_shape,
                                .forward = kmh_fwd,
                                .backward = kmh_bwd,
                                .batch = {.batchable = true},
                                .samples = kmh_samples});
}  // namespace
Expression kmh_ngram(const Expression& x, unsigned n) { return make_node(k_kmh, x, n); }
DYNET_API(kmh_ngram, "kmh_ngram", "kmh_ngram(x, n)", "kmh_ngram(x, v)", Expression(const Expression&, unsigned));
#endif

// ---------------------------------------------------------------------------------------------
// conv2d(x, f[, b], stride, is_valid): x {H,W,Ci}, f {KH,KW,Ci,Co}, b {Co}; y {OH,OW,Co} with
// y[i,j,o] = b[o] + Σ_{p,q,c} x[i·sh + p - pad_t, j·sw + q - pad_l, c] · f[p,q,c,o] (zero outside x).
namespace {
struct ConvGeom {
  Axis h, w;
  unsigned c_in, c_out;
  size_t out_pixels() const { return size_t(h.out) * w.out; }
  size_t patch() const { return size_t(h.k) * w.k * c_in; }
  long macs(unsigned images) const { return long(out_pixels()) * long(patch()) * c_out * images; }  // multiply-adds
};
ConvGeom conv_geom(const Dim& x, const Dim& f, const WindowAttr& at) {
  return {make_axis(x[0], f[0], at.sh, at.is_valid), make_axis(x[1], f[1], at.sw, at.is_valid), x[2], f[3]};
}

// conv2d: im2col into P_b {OH·OW, KH·KW·Ci} (every batch element of x at once), then GEMMs as on the CPU.
template <class P>
float* im2col_dev(const Tensor& x, const ConvGeom& g, MemPool& scratch) {
  const size_t M = g.out_pixels(), K = g.patch(), per = x.d.batch_size(), n = M * K * x.d.bd;
  float* cols = scratch.allocate_floats(n);
  const float* xv = x.v;
  P::for_each(x.device, n, [=] DYNET_LAMBDA(size_t i) {
    const size_t m = i % M, kk = (i / M) % K, b = i / (M * K);
    const long oi = long(m % g.h.out), oj = long(m / g.h.out);
    const long p = long(kk % g.h.k), q = long((kk / g.h.k) % g.w.k), c = long(kk / (size_t(g.h.k) * g.w.k));
    const long ih = oi * g.h.s + p - long(g.h.pad), iw = oj * g.w.s + q - long(g.w.pad);
    const bool inside = ih >= 0 && ih < long(g.h.in) && iw >= 0 && iw < long(g.w.in);
    cols[i] = inside ? xv[b * per + size_t(ih + long(g.h.in) * (iw + long(g.w.in) * c))] : 0.f;
  });
  return cols;
}
// The output positions along an axis whose window covers input index `in_idx` at offset `koff`: o with
// o·s + koff - pad = in_idx; -1 when there is none.
DYNET_HD inline long covering(const Axis& a, long in_idx, long koff) {
  const long t = in_idx + long(a.pad) - koff;
  if (t < 0 || t % long(a.s) != 0) return -1;
  const long o = t / long(a.s);
  return o < long(a.out) ? o : -1;
}
template <class P>
void conv2d_dev_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &f = a.xs[1];
  const ConvGeom g = conv_geom(x.d, f.d, a.attr.as<WindowAttr>());
  const long M = long(g.out_pixels()), K = long(g.patch()), N = long(g.c_out);
  const float* cols = im2col_dev<P>(x, g, a.scratch);
  P::gemm_batched(a.fx.device, false, false, M, N, K, 1.f, cols, M, batch_stride(x, size_t(M * K)), f.v, K,
                  batch_stride(f, size_t(K * N)), 0.f, a.fx.v, M, M * N, long(a.fx.d.bd));
  if (a.n == 3) {
    const bool batched = a.xs[2].d.bd > 1;
    const float* bias = a.xs[2].v;
    float* y = a.fx.v;
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
      const size_t o = size_t(i / M);  // b·N + channel
      y[i] += bias[batched ? o : o % size_t(N)];
    });
  }
}
template <class P>
void conv2d_dev_bwd(const BackwardArgs& a) {
  const Tensor &x = a.xs[0], &f = a.xs[1];
  Device* dev = a.fx.device;
  const ConvGeom g = conv_geom(x.d, f.d, a.attr.as<WindowAttr>());
  const size_t M = g.out_pixels(), K = g.patch(), N = g.c_out, bd = a.fx.d.bd;
  const float* dy = a.dEdf.v;
  if (a.i == 2) {  // db[o] += Σ over pixels (and over the batch when b is shared) of dY[:, o]
    dev::add_over_batch<P>(dev, a.dEdxi.v, a.dEdxi.d.bd > 1, bd, N, [=] DYNET_LAMBDA(size_t b, size_t o) {
      float s = 0.f;
      for (size_t m = 0; m < M; ++m) s += dy[(b * N + o) * M + m];
      return s;
    });
    return;
  }
  if (a.i == 1) {  // dF += Pᵀ · dY
    const float* cols = im2col_dev<P>(x, g, a.scratch);
    const long sp = batch_stride(x, M * K);
    if (a.dEdxi.d.bd == bd)
      P::gemm_batched(dev, true, false, long(K), long(N), long(M), 1.f, cols, long(M), sp, dy, long(M), long(M * N), 1.f,
                      a.dEdxi.v, long(K), long(K * N), long(bd));
    else  // a shared filter: every product adds into it, one after another
      for (size_t b = 0; b < bd; ++b)
        P::gemm(dev, true, false, long(K), long(N), long(M), 1.f, cols + b * sp, long(M), dy + b * M * N, long(M), 1.f,
                a.dEdxi.v, long(K));
    return;
  }
  // dX += col2im(dY · Fᵀ): each pixel of x sums the patch entries it was copied to.
  float* t = a.scratch.allocate_floats(M * K * bd);
  P::gemm_batched(dev, false, true, long(M), long(K), long(N), 1.f, dy, long(M), long(M * N), f.v, long(K),
                  batch_stride(f, K * N), 0.f, t, long(M), long(M * K), long(bd));
  const size_t H = g.h.in, W = g.w.in;
  dev::add_over_batch<P>(dev, a.dEdxi.v, a.dEdxi.d.bd > 1, bd, x.d.batch_size(), [=] DYNET_LAMBDA(size_t b, size_t e) {
    const long ih = long(e % H), iw = long((e / H) % W), c = long(e / (H * W));
    float s = 0.f;
    for (long q = 0; q < long(g.w.k); ++q) {
      const long oj = covering(g.w, iw, q);
      if (oj < 0) continue;
      for (long p = 0; p < long(g.h.k); ++p) {
        const long oi = covering(g.h, ih, p);
        if (oi >= 0) s += t[b * M * K + size_t(oi + long(g.h.out) * oj) + M * size_t(p + long(g.h.k) * (q + long(g.w.k) * c))];
      }
    }
    return s;
  });
}
DYNET_DEVICE_KERNELS("conv2d", conv2d_dev_fwd, conv2d_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
// Output positions o whose input index o·s + koff - pad lies in [0, in): [lo, hi).
inline void valid_range(const Axis& a, unsigned koff, unsigned& lo, unsigned& hi) {
  const long shift = long(koff) - long(a.pad);  // input index = o·s + shift
  const long first = shift >= 0 ? 0 : (-shift + a.s - 1) / a.s;
  const long last = (long(a.in) - 1 - shift) < 0 ? -1 : (long(a.in) - 1 - shift) / a.s;  // inclusive
  lo = static_cast<unsigned>(std::min<long>(first, a.out));
  hi = static_cast<unsigned>(std::clamp<long>(last + 1, lo, a.out));
}
Dim conv2d_shape(const ArgDims& xs, AttrView a) {
  constexpr const char* op = "conv2d";
  const WindowAttr& at = a.as<WindowAttr>();
  const Dim &x = xs[0], &f = xs[1];
  if (!is_image(x) || f.nd != 4 || f[2] != x[2])
    op_error(op, "needs x {H,W,Ci} and filters {KH,KW,Ci,Co} with the same Ci: " + join(xs));
  if (f[0] == 0 || f[1] == 0) op_error(op, "empty filter " + f.str());
  if (at.is_valid && (x[0] < f[0] || x[1] < f[1]))
    op_error(op, "in VALID convolution the filter " + f.str() + " must not be larger than the image " + x.str());
  if (xs.size() == 3 && (xs[2].nd != 1 || xs[2][0] != f[3]))
    op_error(op, "bias " + xs[2].str() + " must be a vector of the filters' Co = " + std::to_string(f[3]));
  const ConvGeom g = conv_geom(x, f, at);
  return Dim({g.h.out, g.w.out, g.c_out}, common_bd(op, xs));
}

// P {OH·OW, KH·KW·Ci} (column-major) from one image; zeros where a window hangs over the border.
void im2col(const float* x, const ConvGeom& g, float* P) {
  const size_t rows = g.out_pixels();
  const size_t H = g.h.in, W = g.w.in, OH = g.h.out;
  for (size_t c = 0; c < g.c_in; ++c)
    for (size_t q = 0; q < g.w.k; ++q)
      for (size_t p = 0; p < g.h.k; ++p) {
        float* col = P + rows * (p + size_t(g.h.k) * (q + size_t(g.w.k) * c));
        unsigned i_lo, i_hi, j_lo, j_hi;
        valid_range(g.h, p, i_lo, i_hi);
        valid_range(g.w, q, j_lo, j_hi);
        for (size_t j = 0; j < g.w.out; ++j) {
          float* dst = col + size_t(j) * OH;
          if (j < j_lo || j >= j_hi) {
            std::fill(dst, dst + OH, 0.f);
            continue;
          }
          // x[i·sh + p - pad_h, j·sw + q - pad_w, c] = x[base + i·sh]
          const long base = long(H) * (long(j) * g.w.s + q - long(g.w.pad) + long(W) * c) + p - long(g.h.pad);
          std::fill(dst, dst + i_lo, 0.f);
          if (g.h.s == 1)
            std::memcpy(dst + i_lo, x + base + i_lo, sizeof(float) * (i_hi - i_lo));
          else
            for (size_t i = i_lo; i < i_hi; ++i) dst[i] = x[base + long(i) * g.h.s];
          std::fill(dst + i_hi, dst + OH, 0.f);
        }
      }
}
// dx += col2im(dP): the adjoint of im2col.
void col2im_add(const float* dP, const ConvGeom& g, float* dx) {
  const size_t rows = g.out_pixels();
  const size_t H = g.h.in, W = g.w.in, OH = g.h.out;
  for (size_t c = 0; c < g.c_in; ++c)
    for (size_t q = 0; q < g.w.k; ++q)
      for (size_t p = 0; p < g.h.k; ++p) {
        const float* col = dP + rows * (p + size_t(g.h.k) * (q + size_t(g.w.k) * c));
        unsigned i_lo, i_hi, j_lo, j_hi;
        valid_range(g.h, p, i_lo, i_hi);
        valid_range(g.w, q, j_lo, j_hi);
        for (size_t j = j_lo; j < j_hi; ++j) {
          const float* s = col + size_t(j) * OH;
          const long base = long(H) * (long(j) * g.w.s + q - long(g.w.pad) + long(W) * c) + p - long(g.h.pad);
          for (size_t i = i_lo; i < i_hi; ++i) dx[base + long(i) * g.h.s] += s[i];
        }
      }
}

// Patches of x's batch element b, built into `buf` unless x is unbatched and they are already there.
const float* patches(const Tensor& x, unsigned b, const ConvGeom& g, float* buf) {
  if (x.d.bd > 1 || b == 0) im2col(x.batch_ptr(b), g, buf);
  return buf;
}

// CPU kernel kept: oneDNN (and threads via parallel_chunks) for large channel counts, and GEMMs over
// im2col; op_perf generic/CPU 1.94 single, 6.18 x64 fwd+bwd.
// ---- oneDNN path ----
// Primitives (forward, backward data, backward weights) and the reorders between our strided layouts and
// the primitives' blocked ones, for one geometry including the batch count. Created on first use (about
// 0.5 ms) and kept for the life of the process; executing primitives concurrently is safe, and each call
// passes its own scratchpad (scratchpad_mode::user), so several graphs may run them on several threads.
struct DnnlConv {
  dnnl::memory::desc src_user, wei_user, dst_user;
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
  // reorders into the primitives' layouts, and back (the backward ones accumulate: dst += src)
  dnnl::reorder src_in, wei_in, dst_out, ddst_in_data, wei_in_data, dsrc_acc, ddst_in_weights, src_in_weights, dwei_acc;
  long macs;    // multiply-adds of one pass
  int threads;  // the OpenMP team the primitives were made for (1: the calling thread alone)
};

dnnl::engine& dnnl_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to, bool accumulate) {
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.f);
    attr.set_post_ops(sum);
  }
  return dnnl::reorder(dnnl::reorder::primitive_desc(dnnl_engine(), from, dnnl_engine(), to, attr));
}

std::unique_ptr<DnnlConv> make_dnnl_conv(const ConvGeom& g, long N, int threads) {
  using dnnl::memory;
  using md = memory::desc;
  const auto f32 = memory::data_type::f32;
  const long H = g.h.in, W = g.w.in, C = g.c_in, KH = g.h.k, KW = g.w.k, CO = g.c_out, OH = g.h.out, OW = g.w.out;
  // Our layout as oneDNN's logical NCHW / OIHW dims with explicit strides (H is the fastest axis).
  auto p = std::make_unique<DnnlConv>();
  p->macs = g.macs(unsigned(N));
  p->threads = threads;
  // Primitives and reorders run with the thread count they were made with (see dnnl_conv).
  const cpu::OmpThreads team(threads);
  p->src_user = md({N, C, H, W}, f32, memory::dims{H * W * C, H * W, 1, H});
  p->wei_user = md({CO, C, KH, KW}, f32, memory::dims{KH * KW * C, KH * KW, 1, KH});
  p->dst_user = md({N, CO, OH, OW}, f32, memory::dims{OH * OW * CO, OH * OW, 1, OH});
  const md src_any({N, C, H, W}, f32, memory::format_tag::any), wei_any({CO, C, KH, KW}, f32, memory::format_tag::any),
      dst_any({N, CO, OH, OW}, f32, memory::format_tag::any);
  const memory::dims strides = {long(g.h.s), long(g.w.s)}, pad_l = {long(g.h.pad), long(g.w.pad)};
  const memory::dims pad_r = {std::max((OH - 1) * long(g.h.s) + KH - H - long(g.h.pad), 0L),
                              std::max((OW - 1) * long(g.w.s) + KW - W - long(g.w.pad), 0L)};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto& eng = dnnl_engine();
  const auto alg = dnnl::algorithm::convolution_direct;
  p->fwd_pd = dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, src_any, wei_any, dst_any, strides, pad_l,
                                      pad_r),
      attr, eng);
  p->bwd_data_pd = dnnl::convolution_backward_data::primitive_desc(
      dnnl::convolution_backward_data::desc(alg, src_any, wei_any, dst_any, strides, pad_l, pad_r), attr, eng,
      p->fwd_pd);
  {
    // The weight gradient is a sum over the batch and the image, which oneDNN splits by the thread count
    // its descriptor is made with: made with one thread, its bits depend on the geometry alone, not on
    // OMP_NUM_THREADS. (Forward and backward data split only their outputs.)
    const cpu::OmpThreads one(1);
    p->bwd_weights_pd = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(alg, src_any, wei_any, dst_any, strides, pad_l, pad_r), attr, eng,
        p->fwd_pd);
    p->bwd_weights = dnnl::convolution_backward_weights(p->bwd_weights_pd);
  }
  p->fwd = dnnl::convolution_forward(p->fwd_pd);
  p->bwd_data = dnnl::convolution_backward_data(p->bwd_data_pd);
  p->src_in = make_reorder(p->src_user, p->fwd_pd.src_desc(), false);
  p->wei_in = make_reorder(p->wei_user, p->fwd_pd.weights_desc(), false);
  p->dst_out = make_reorder(p->fwd_pd.dst_desc(), p->dst_user, false);
  p->ddst_in_data = make_reorder(p->dst_user, p->bwd_data_pd.diff_dst_desc(), false);
  p->wei_in_data = make_reorder(p->wei_user, p->bwd_data_pd.weights_desc(), false);
  p->dsrc_acc = make_reorder(p->bwd_data_pd.diff_src_desc(), p->src_user, true);
  p->ddst_in_weights = make_reorder(p->dst_user, p->bwd_weights_pd.diff_dst_desc(), false);
  p->src_in_weights = make_reorder(p->src_user, p->bwd_weights_pd.src_desc(), false);
  p->dwei_acc = make_reorder(p->bwd_weights_pd.diff_weights_desc(), p->wei_user, true);
  return p;
}

// The cached primitives for a geometry, batch count and thread count; null when oneDNN cannot make them
// (the im2col kernels then run instead). One thread unless `team` (a large convolution that has no parts,
// see ConvPart): an OpenMP team's barrier waits a scheduler time slice for a worker that a busy neighbour
// process keeps off its core (a text CNN's 0.1 ms convolution took ~60 ms).
const DnnlConv* dnnl_conv(const ConvGeom& g, unsigned N, bool team = false) {
  using Key = std::array<uint32_t, 12>;
  struct KeyHash {
    size_t operator()(const Key& k) const {
      size_t h = 1469598103934665603ull;
      for (uint32_t v : k) h = (h ^ v) * 1099511628211ull;
      return h;
    }
  };
  static std::mutex mutex;
  // Never destroyed: primitives must not be torn down during static destruction.
  static auto* cache = new std::unordered_map<Key, std::unique_ptr<DnnlConv>, KeyHash>();
  const int threads = team ? omp_get_max_threads() : 1;
  const Key key = {g.h.in, g.w.in, g.c_in, g.h.k, g.w.k, g.c_out, N, g.h.s, g.w.s, g.h.pad, g.w.pad, uint32_t(threads)};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache->find(key);
  if (it == cache->end()) {
    std::unique_ptr<DnnlConv> p;
    try {
      p = make_dnnl_conv(g, N, threads);
    } catch (const dnnl::error&) {
    }
    it = cache->emplace(key, std::move(p)).first;
  }
  return it->second.get();
}

// Runs primitives on this thread's stream, with the thread count they were made with.
class DnnlRun {
 public:
  DnnlRun(const DnnlConv& p, MemPool& scratch) : scratch_(scratch), team_(p.threads) {}
  dnnl::memory user(const dnnl::memory::desc& d, const float* data) {
    return dnnl::memory(d, dnnl_engine(), const_cast<float*>(data));
  }
  dnnl::memory temp(const dnnl::memory::desc& d) {
    return dnnl::memory(d, dnnl_engine(), scratch_.allocate(d.get_size()));
  }
  // `data` in the primitive's layout `want`: the user memory itself, or a reordered copy.
  dnnl::memory in(const dnnl::reorder& r, const dnnl::memory::desc& user_d, const dnnl::memory::desc& want,
                  const float* data) {
    dnnl::memory u = user(user_d, data);
    if (want == user_d) return u;
    dnnl::memory t = temp(want);
    r.execute(stream(), u, t);
    return t;
  }
  void exec(const dnnl::primitive& p, const dnnl::memory::desc& scratchpad,
            std::unordered_map<int, dnnl::memory> args) {
    args.emplace(DNNL_ARG_SCRATCHPAD, temp(scratchpad));
    p.execute(stream(), args);
  }
  dnnl::stream& stream() {
    thread_local dnnl::stream s(dnnl_engine());
    return s;
  }
  void wait() { stream().wait(); }

 private:
  MemPool& scratch_;
  cpu::OmpThreads team_;
};

// Large convolutions run in parts (chunks of images, or of one image's output channels: ConvPart) on the
// calling thread and the helpers that large products share (cpu::parallel_chunks), each part whole on one
// thread: a helper that a busy neighbour keeps off its core takes no part, where an OpenMP team's barrier
// would wait for it (4 images of 64x64x32, 3x3x32->64, forward and backward, on 2 cores idle / beside a
// spinning process: a 2-thread team 9.4 / 24 ms median, 76 ms at worst; parts 8.1 / 11.9 ms, 40 at worst;
// one thread 11.6 / 11.5 ms). The parts follow the shape alone, so a gradient that several parts add to, summed over them in order, has
// bits that do not depend on the threads. A large single image with fewer than 32 output channels runs on
// an OpenMP team (dnnl_conv's `team`): it has no parts.
constexpr long kChunkFromMacs = 1L << 23;
constexpr unsigned kMaxChunks = 8;
constexpr unsigned kChannelBlock = 16;

// oneDNN takes over from C_in = 4 with a shared (unbatched) filter and bias; below that its backward
// kernels are slower than im2col (see the header comment).
constexpr unsigned kDnnlMinChannels = 4;
const DnnlConv* use_dnnl(const Tensor* xs, unsigned n, const Tensor& fx, const ConvGeom& g) {
  if (xs[0].d[2] < kDnnlMinChannels || xs[0].d.bd != fx.d.bd || xs[1].d.bd != 1 || (n == 3 && xs[2].d.bd != 1))
    return nullptr;
  const unsigned N = fx.d.bd;
  const bool no_parts = N == 1 && g.c_out < 2 * kChannelBlock;  // see conv_parts
  return dnnl_conv(g, N, no_parts && g.macs(N) >= kChunkFromMacs && omp_get_max_threads() > 1);
}

// A part of a large convolution that one thread runs whole: images [image, image + images) when the batch
// has several, else output channels [channel, channel + channels) of its one image, in multiples of 16 (the
// channels of oneDNN's blocks). The parts depend on the shape alone.
struct ConvPart {
  unsigned image, images, channel, channels;
  const DnnlConv* p;
};
using ConvParts = std::array<ConvPart, kMaxChunks>;

// Fills `parts` and returns their count: 1 (the whole) when the convolution is small or cannot be split.
unsigned conv_parts(const ConvGeom& g, unsigned N, const DnnlConv& whole, ConvParts& parts) {
  parts[0] = {0, N, 0, g.c_out, &whole};
  const unsigned units = N >= 2 ? N : g.c_out / kChannelBlock, k = std::min(units, kMaxChunks);
  if (whole.macs < kChunkFromMacs || k < 2) return 1;
  for (unsigned c = 0; c < k; ++c) {
    const unsigned lo = units * c / k, hi = units * (c + 1) / k;
    ConvGeom part = g;
    if (N >= 2) {
      parts[c] = {lo, hi - lo, 0, g.c_out, nullptr};
    } else {
      part.c_out = (c + 1 == k ? g.c_out : hi * kChannelBlock) - lo * kChannelBlock;
      parts[c] = {0, 1, lo * kChannelBlock, part.c_out, nullptr};
    }
    if (!(parts[c].p = dnnl_conv(part, parts[c].images))) {
      parts[0] = {0, N, 0, g.c_out, &whole};
      return 1;
    }
  }
  return k;
}

// Runs run(c, part c, scratch) for each part: several on the calling thread and parallel_chunks' helpers.
template <class Run>
void over_parts(unsigned n, const ConvParts& parts, MemPool& scratch, Run&& run) {
  if (n == 1) return run(0u, parts[0], scratch);
  cpu::parallel_chunks(int(n), omp_get_max_threads(), [&](int c) {
    thread_local MemPool pool;
    const PoolScope release(pool);
    run(unsigned(c), parts[size_t(c)], pool);
  });
}

// Where part c writes a gradient that several parts add to: its own zeroed buffer of `size` floats, summed
// into `to` in part order afterwards (sum_parts), so that the bits do not depend on the threads.
struct PartSums {
  float* buffers = nullptr;
  size_t size = 0;
  PartSums(bool shared, unsigned n, size_t size_, MemPool& scratch) : size(size_) {
    if (!shared || n == 1) return;
    buffers = scratch.allocate_floats(n * size);
    std::memset(buffers, 0, n * size * sizeof(float));
  }
  float* target(unsigned c, float* own) const { return buffers ? buffers + c * size : own; }
  void sum_parts(unsigned n, float* to) const {
    if (!buffers) return;
    Eigen::Map<Eigen::ArrayXf> sum(to, long(size));
    for (unsigned c = 0; c < n; ++c) sum += Eigen::Map<const Eigen::ArrayXf>(buffers + c * size, long(size));
  }
};

void conv2d_fwd_dnnl(const ForwardArgs& a, const ConvGeom& g, const DnnlConv& whole) {
  const size_t in = size_t(g.h.in) * g.w.in * g.c_in, out = g.out_pixels() * g.c_out, per_channel = g.patch();
  ConvParts parts;
  over_parts(conv_parts(g, a.fx.d.bd, whole, parts), parts, a.scratch,
             [&](unsigned, const ConvPart& part, MemPool& scratch) {
    const DnnlConv& p = *part.p;
    DnnlRun run(p, scratch);
    dnnl::memory x = run.in(p.src_in, p.src_user, p.fwd_pd.src_desc(), a.xs[0].v + part.image * in);
    dnnl::memory f = run.in(p.wei_in, p.wei_user, p.fwd_pd.weights_desc(), a.xs[1].v + part.channel * per_channel);
    dnnl::memory yu = run.user(p.dst_user, a.fx.v + part.image * out + part.channel * g.out_pixels());
    const bool direct = p.fwd_pd.dst_desc() == p.dst_user;
    dnnl::memory y = direct ? yu : run.temp(p.fwd_pd.dst_desc());
    run.exec(p.fwd, p.fwd_pd.scratchpad_desc(), {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, f}, {DNNL_ARG_DST, y}});
    if (!direct) p.dst_out.execute(run.stream(), y, yu);
    run.wait();
  });
}
void conv2d_bwd_dnnl(const BackwardArgs& a, const ConvGeom& g, const DnnlConv& whole) {
  const size_t in = size_t(g.h.in) * g.w.in * g.c_in, out = g.out_pixels() * g.c_out, per_channel = g.patch();
  const unsigned N = a.fx.d.bd;
  ConvParts parts;
  const unsigned n = conv_parts(g, N, whole, parts);
  // Parts of images share the weight gradient; parts of channels, the input gradient.
  const PartSums sums(a.i == (N >= 2 ? 1 : 0), n, a.i == 1 ? a.xs[1].d.size() : in, a.scratch);
  over_parts(n, parts, a.scratch, [&](unsigned c, const ConvPart& part, MemPool& scratch) {
    const DnnlConv& p = *part.p;
    DnnlRun run(p, scratch);
    const float* dEdf = a.dEdf.v + part.image * out + part.channel * g.out_pixels();
    const float* f_part = a.xs[1].v + part.channel * per_channel;
    if (a.i == 0) {  // dX += conv_backward_data(dY, F)
      dnnl::memory dy = run.in(p.ddst_in_data, p.dst_user, p.bwd_data_pd.diff_dst_desc(), dEdf);
      dnnl::memory f = run.in(p.wei_in_data, p.wei_user, p.bwd_data_pd.weights_desc(), f_part);
      dnnl::memory dx = run.temp(p.bwd_data_pd.diff_src_desc());
      run.exec(p.bwd_data, p.bwd_data_pd.scratchpad_desc(),
               {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, f}, {DNNL_ARG_DIFF_SRC, dx}});
      dnnl::memory dx_user = run.user(p.src_user, sums.target(c, a.dEdxi.v + part.image * in));
      p.dsrc_acc.execute(run.stream(), dx, dx_user);
    } else {  // dF += conv_backward_weights(dY, X)
      dnnl::memory dy = run.in(p.ddst_in_weights, p.dst_user, p.bwd_weights_pd.diff_dst_desc(), dEdf);
      dnnl::memory x = run.in(p.src_in_weights, p.src_user, p.bwd_weights_pd.src_desc(), a.xs[0].v + part.image * in);
      dnnl::memory df = run.temp(p.bwd_weights_pd.diff_weights_desc());
      run.exec(p.bwd_weights, p.bwd_weights_pd.scratchpad_desc(),
               {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_WEIGHTS, df}});
      dnnl::memory df_user = run.user(p.wei_user, sums.target(c, a.dEdxi.v + part.channel * per_channel));
      p.dwei_acc.execute(run.stream(), df, df_user);
    }
    run.wait();
  });
  sums.sum_parts(n, a.dEdxi.v);
}

// ---- forward and backward ----
void add_conv_bias(const Tensor& bias, const Tensor& y, const ConvGeom& g) {
  const size_t pixels = g.out_pixels();
  for (size_t b = 0; b < y.d.bd; ++b) {
    const float* bb = bias.batch_ptr(b);
    float* yb = y.batch_ptr(b);
    for (size_t o = 0; o < g.c_out; ++o) Eigen::Map<Eigen::ArrayXf>(yb + o * pixels, pixels) += bb[o];
  }
}

void conv2d_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &f = a.xs[1];
  const ConvGeom g = conv_geom(x.d, f.d, a.attr.as<WindowAttr>());
  if (const DnnlConv* p = use_dnnl(a.xs, a.n, a.fx, g)) {
    conv2d_fwd_dnnl(a, g, *p);
  } else {
    const long M = long(g.out_pixels()), K = long(g.patch()), N = long(g.c_out);
    float* P = a.scratch.allocate_floats(size_t(M) * K);
    for (size_t b = 0; b < a.fx.d.bd; ++b) {
      patches(x, b, g, P);
      cpu::gemm(false, false, M, N, K, 1.f, P, M, f.batch_ptr(b), K, 0.f, a.fx.batch_ptr(b), M);
    }
  }
  if (a.n == 3) add_conv_bias(a.xs[2], a.fx, g);
}
void conv2d_bwd(const BackwardArgs& a) {
  const Tensor &x = a.xs[0], &f = a.xs[1];
  const ConvGeom g = conv_geom(x.d, f.d, a.attr.as<WindowAttr>());
  const long M = long(g.out_pixels()), K = long(g.patch()), N = long(g.c_out);
  const size_t bd = a.fx.d.bd;
  if (a.i == 2) {  // db[o] += Σ over pixels and batch of dY[:, o]
    for (size_t b = 0; b < bd; ++b) {
      cpu::CMatMap G(a.dEdf.batch_ptr(b), M, N);
      Eigen::Map<Eigen::VectorXf>(a.dEdxi.batch_ptr(b), N) += G.colwise().sum().transpose();
    }
    return;
  }
  if (const DnnlConv* p = use_dnnl(a.xs, a.n, a.fx, g)) {
    conv2d_bwd_dnnl(a, g, *p);
    return;
  }
  float* P = a.scratch.allocate_floats(size_t(M) * K);
  for (size_t b = 0; b < bd; ++b) {
    const float* dy = a.dEdf.batch_ptr(b);
    if (a.i == 1) {  // dF += Pᵀ · dY
      patches(x, b, g, P);
      cpu::gemm(true, false, K, N, M, 1.f, P, M, dy, M, 1.f, a.dEdxi.batch_ptr(b), K);
    } else {  // dX += col2im(dY · Fᵀ)
      cpu::gemm(false, true, M, K, N, 1.f, dy, M, f.batch_ptr(b), K, 0.f, P, M);
      col2im_add(P, g, a.dEdxi.batch_ptr(b));
    }
  }
}
std::vector<OpSample> conv2d_samples() {
  auto nb = [](std::vector<unsigned> s, bool valid) {
    return [s, valid](ComputationGraph&, Xs x) { return conv2d(x[0], x[1], s, valid); };
  };
  auto wb = [](std::vector<unsigned> s, bool valid) {
    return [s, valid](ComputationGraph&, Xs x) { return conv2d(x[0], x[1], x[2], s, valid); };
  };
  return {{"valid", {Dim({5, 4, 2}), Dim({3, 2, 2, 3})}, nb({1, 1}, true)},
          {"same", {Dim({5, 4, 2}), Dim({3, 2, 2, 3})}, nb({1, 1}, false)},
          {"valid_strided", {Dim({7, 6, 2}), Dim({3, 2, 2, 2})}, nb({2, 3}, true)},
          {"same_strided", {Dim({6, 5, 1}), Dim({3, 4, 1, 2})}, nb({2, 2}, false)},
          {"two_dim_image", {Dim({4, 5}), Dim({2, 3, 1, 2})}, nb({1, 2}, true)},
          {"bias", {Dim({4, 4, 2}), Dim({2, 2, 2, 3}), Dim({3})}, wb({1, 1}, true)},
          {"bias_same_batched", {Dim({4, 3, 2}, 2), Dim({3, 3, 2, 2}), Dim({2})}, wb({2, 1}, false)},
          {"batched", {Dim({4, 4, 1}, 3), Dim({2, 2, 1, 2})}, nb({1, 1}, true)},
          {"batched_filter", {Dim({4, 4, 1}), Dim({2, 2, 1, 2}, 2)}, nb({1, 1}, false)},
          // from 4 input channels on, oneDNN's primitives (except with a batched filter)
          {"dnnl_valid", {Dim({5, 4, 4}), Dim({3, 2, 4, 3})}, nb({1, 1}, true)},
          {"dnnl_valid_strided", {Dim({7, 6, 5}), Dim({2, 3, 5, 2})}, nb({2, 3}, true)},
          {"dnnl_same_bias_batched", {Dim({6, 5, 4}, 2), Dim({3, 3, 4, 2}), Dim({2})}, wb({2, 2}, false)},
          {"dnnl_same_odd_padding", {Dim({4, 5, 4}), Dim({2, 4, 4, 1})}, nb({1, 1}, false)},
          {"many_channels_batched_filter", {Dim({3, 3, 4}, 2), Dim({2, 2, 4, 2}, 2)}, nb({1, 1}, true)},
          {"channels_differ", {Dim({4, 4, 2}), Dim({2, 2, 3, 1})}, nb({1, 1}, true), -1, 1, true},
          {"filter_too_big", {Dim({2, 4, 1}), Dim({3, 2, 1, 1})}, nb({1, 1}, true), -1, 1, true},
          {"filter_not_4d", {Dim({4, 4, 1}), Dim({2, 2, 1})}, nb({1, 1}, true), -1, 1, true},
          {"bias_size", {Dim({4, 4, 1}), Dim({2, 2, 1, 2}), Dim({3})}, wb({1, 1}, true), -1, 1, true},
          {"zero_stride", {Dim({4, 4, 1}), Dim({2, 2, 1, 1})}, nb({0, 1}, true), -1, 1, true},
          {"one_stride", {Dim({4, 4, 1}), Dim({2, 2, 1, 1})}, nb({1}, true), -1, 1, true},
          {"batch_mismatch", {Dim({4, 4, 1}, 2), Dim({2, 2, 1, 1}, 3)}, nb({1, 1}, true), -1, 1, true}};
}
const OpId k_conv2d = register_op({.name = "conv2d",
                                   .doc = "y[i,j,o] = b[o] + Σ_{p,q,c} x[i·sh+p-pad_h, j·sw+q-pad_w, c] · f[p,q,c,o]",
                                   .shape = conv2d_shape,
                                   .forward = conv2d_fwd,
                                   .backward = conv2d_bwd,
                                   .batch = {.batchable = true, .shared = 2 | 4},
                                   .samples = conv2d_samples});
}  // namespace
Expression conv2d(const Expression& x, const Expression& f, const std::vector<unsigned>& stride, bool is_valid) {
  check_pair("conv2d", "stride", stride);
  const WindowAttr at{0, 0, stride[0], stride[1], is_valid};
  return make_node(k_conv2d, {&x, &f}, &at);
}
DYNET_API(conv2d, "conv2d", "conv2d(x, f, stride, is_valid = true)", "conv2d(x, f, stride, is_valid=True)", Expression(const Expression&, const Expression&, const std::vector<unsigned>&, bool));
Expression conv2d(const Expression& x, const Expression& f, const Expression& b, const std::vector<unsigned>& stride,
                  bool is_valid) {
  check_pair("conv2d", "stride", stride);
  const WindowAttr at{0, 0, stride[0], stride[1], is_valid};
  return make_node(k_conv2d, {&x, &f, &b}, &at);
}
DYNET_API(conv2d, "conv2d", "conv2d(x, f, b, stride, is_valid = true)", "conv2d_bias(x, f, b, stride, is_valid=True)", Expression(const Expression&, const Expression&, const Expression&, const std::vector<unsigned>&, bool));
#endif

// ---------------------------------------------------------------------------------------------
// maxpooling2d(x, ksize, stride, is_valid): x {H,W,C}; y {OH,OW,C}, each value the maximum of its window
// (positions outside x are ignored). The gradient goes to the first maximum; its index is kept in aux.
namespace {
// maxpooling2d: one thread per output value scans its window as the CPU kernel does (so ties go to the same
// first maximum) and keeps the index in aux; backward adds each gradient to that input.
template <class P>
void maxpool_dev_fwd(const ForwardArgs& a) {
  const WindowAttr at = a.attr.as<WindowAttr>();
  const Tensor& x = a.xs[0];
  const size_t H = x.d[0], W = x.d[1], C = x.d[2];
  const Axis h = make_axis(H, at.kh, at.sh, at.is_valid), w = make_axis(W, at.kw, at.sw, at.is_valid);
  uint32_t* argmax = reinterpret_cast<uint32_t*>(a.aux);
  const float* xv = x.v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t oi = i % h.out, oj = (i / h.out) % w.out, c = (i / (size_t(h.out) * w.out)) % C;
    const float* xb = xv + i / (size_t(h.out) * w.out * C) * H * W * C;
    const long q0 = long(oj) * w.s - long(w.pad), p0 = long(oi) * h.s - long(h.pad);
    const long q_lo = q0 > 0 ? q0 : 0, q_hi = q0 + long(w.k) < long(W) ? q0 + long(w.k) : long(W);
    const long p_lo = p0 > 0 ? p0 : 0, p_hi = p0 + long(h.k) < long(H) ? p0 + long(h.k) : long(H);
    float best = -INFINITY;
    uint32_t where = uint32_t(p_lo + long(H) * (q_lo + long(W * c)));
    for (long q = q_lo; q < q_hi; ++q)
      for (long p = p_lo; p < p_hi; ++p) {
        const uint32_t k = uint32_t(p + long(H) * (q + long(W * c)));
        if (xb[k] > best) {
          best = xb[k];
          where = k;
        }
      }
    y[i] = xb[where];
    argmax[i] = where;
  });
}
template <class P>
void maxpool_dev_bwd(const BackwardArgs& a) {
  const uint32_t* argmax = reinterpret_cast<const uint32_t*>(a.aux);
  const size_t per = a.fx.d.batch_size(), xper = a.xs[0].d.batch_size();
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.fx.d.size(),
              [=] DYNET_LAMBDA(size_t i) { dev::atomic_add(dx + i / per * xper + argmax[i], g[i]); });
}
DYNET_DEVICE_KERNELS("maxpooling2d", maxpool_dev_fwd, maxpool_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim maxpool_shape(const ArgDims& xs, AttrView a) {
  const WindowAttr& at = a.as<WindowAttr>();
  const Dim& x = xs[0];
  if (!is_image(x)) op_error("maxpooling2d", "needs x {H,W,C} or {H,W}, got " + x.str());
  if (at.is_valid && (x[0] < at.kh || x[1] < at.kw))
    op_error("maxpooling2d", "in VALID pooling the window {" + std::to_string(at.kh) + "," + std::to_string(at.kw) +
                                 "} must not be larger than the image " + x.str());
  const Axis h = make_axis(x[0], at.kh, at.sh, at.is_valid), w = make_axis(x[1], at.kw, at.sw, at.is_valid);
  if (x.nd == 2) return Dim({h.out, w.out}, x.bd);  // DyNet keeps the input's rank
  return Dim({h.out, w.out, x[2]}, x.bd);
}
// CPU kernel kept: op_perf generic/CPU 1.75 single, 2.57 x64 fwd+bwd (it walks windows with running
// offsets; the generic kernel divides indices per output).
size_t maxpool_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.size(); }
void maxpool_fwd(const ForwardArgs& a) {
  const WindowAttr& at = a.attr.as<WindowAttr>();
  const Tensor& x = a.xs[0];
  const size_t H = x.d[0], W = x.d[1], C = x.d[2];
  const Axis h = make_axis(H, at.kh, at.sh, at.is_valid), w = make_axis(W, at.kw, at.sw, at.is_valid);
  uint32_t* argmax = reinterpret_cast<uint32_t*>(a.aux);
  float* y = a.fx.v;
  for (size_t b = 0; b < x.d.bd; ++b) {
    const float* xb = x.batch_ptr(b);
    for (size_t c = 0; c < C; ++c)
      for (size_t j = 0; j < w.out; ++j) {
        const long q0 = long(j) * w.s - w.pad;
        const unsigned q_lo = unsigned(std::max(q0, 0L)), q_hi = unsigned(std::min(q0 + long(w.k), long(W)));
        for (size_t i = 0; i < h.out; ++i, ++y, ++argmax) {
          const long p0 = long(i) * h.s - h.pad;
          const unsigned p_lo = unsigned(std::max(p0, 0L)), p_hi = unsigned(std::min(p0 + long(h.k), long(H)));
          float best = -std::numeric_limits<float>::infinity();
          uint32_t where = p_lo + H * (q_lo + W * c);
          for (size_t q = q_lo; q < q_hi; ++q)
            for (size_t p = p_lo; p < p_hi; ++p) {
              const uint32_t k = p + H * (q + W * c);
              if (xb[k] > best) {
                best = xb[k];
                where = k;
              }
            }
          *y = xb[where];
          *argmax = where;
        }
      }
  }
}
void maxpool_bwd(const BackwardArgs& a) {
  const uint32_t* argmax = reinterpret_cast<const uint32_t*>(a.aux);
  const size_t per = a.fx.d.batch_size();
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    float* dx = a.dEdxi.batch_ptr(b);
    const float* g = a.dEdf.batch_ptr(b);
    for (size_t k = 0; k < per; ++k) dx[argmax[size_t(b) * per + k]] += g[k];
  }
}
std::vector<OpSample> maxpool_samples() {
  auto with = [](std::vector<unsigned> k, std::vector<unsigned> s, bool valid) {
    return [k, s, valid](ComputationGraph&, Xs x) { return maxpooling2d(x[0], k, s, valid); };
  };
  return {{"valid", {Dim({4, 4, 2})}, with({2, 2}, {2, 2}, true)},
          {"valid_overlapping", {Dim({5, 4, 1})}, with({3, 2}, {1, 1}, true)},
          {"same", {Dim({5, 3, 2})}, with({2, 2}, {2, 2}, false)},
          {"same_stride_one", {Dim({3, 4})}, with({3, 3}, {1, 1}, false)},
          {"batched", {Dim({4, 3, 1}, 3)}, with({2, 3}, {2, 1}, true)},
          {"window_too_big", {Dim({2, 4, 1})}, with({3, 2}, {1, 1}, true), -1, 1, true},
          {"zero_window", {Dim({4, 4, 1})}, with({0, 2}, {1, 1}, true), -1, 1, true},
          {"zero_stride", {Dim({4, 4, 1})}, with({2, 2}, {1, 0}, true), -1, 1, true},
          {"short_ksize", {Dim({4, 4, 1})}, with({2}, {1, 1}, true), -1, 1, true},
          {"not_image", {Dim({4})}, with({2, 2}, {1, 1}, false), -1, 1, true}};
}
const OpId k_maxpool = register_op({.name = "maxpooling2d",
                                    .doc = "y[i,j,c] = max over the window at (i·sh-pad_h, j·sw-pad_w) of x[·,·,c]",
                                    .shape = maxpool_shape,
                                    .forward = maxpool_fwd,
                                    .backward = maxpool_bwd,
                                    .aux_floats = maxpool_aux,
                                    .batch = {.batchable = true},
                                    .samples = maxpool_samples});
}  // namespace
Expression maxpooling2d(const Expression& x, const std::vector<unsigned>& ksize, const std::vector<unsigned>& stride,
                        bool is_valid) {
  check_pair("maxpooling2d", "ksize", ksize);
  check_pair("maxpooling2d", "stride", stride);
  const WindowAttr at{ksize[0], ksize[1], stride[0], stride[1], is_valid};
  return make_node(k_maxpool, x, at);
}
DYNET_API(maxpooling2d, "maxpooling2d", "maxpooling2d(x, ksize, stride, is_valid = true)", "maxpooling2d(x, ksize, stride, is_valid=True)", Expression(const Expression&, const std::vector<unsigned>&, const std::vector<unsigned>&, bool));
#endif

}  // namespace dynet
