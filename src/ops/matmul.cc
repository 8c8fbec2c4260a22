// Matrix products: x * y (matmul) and affine_transform({b, W1, x1, W2, x2, ...}) = b + Σ Wi·xi as one
// node. Either factor may be batched or not; when the left factor is shared (unbatched) and the right
// one batched, the batch folds into the columns of a single GEMM, since batch is the slowest axis.
//
// The products are written once, over the primitives P (kernels/device/prims.h): GEMM is P::gemm, oneDNN
// on the host (the CPU's kernels and the emulated device) and cuBLAS on GPUs.
#include "kernels/cpu/low_rank.h"
#include "kernels/device/prims.h"
#include "kernels/device/strided.h"

#ifndef DYNET_CUDA_PASS
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {
namespace {

long rows(const Tensor& t) { return t.d.rows(); }
long cols(const Tensor& t) { return t.d.cols(); }

// out (+)= W · x, out {m,n} with out.bd >= W.bd, x.bd. beta = 0 overwrites, 1 accumulates.
template <class P>
void multiply(const Tensor& W, const Tensor& x, const Tensor& out, float beta, MemPool& scratch) {
  Device* dev = out.device;
  const long m = rows(W), k = cols(W), n = cols(x);
  const long bd = static_cast<long>(out.d.bd);
  if (W.d.bd == 1 && x.d.bd == out.d.bd) {
    // Also the plain unbatched case; a batched x is {k, n·bd} in memory.
    P::gemm(dev, false, false, m, n * bd, k, 1.f, W.v, m, x.v, k, beta, out.v, m);
  } else if (W.d.bd == 1 && x.d.bd == 1) {
    // Only in affine_transform (a batched bias or other term): one product added to every element.
    float* t = scratch.allocate_floats(size_t(m) * n);
    P::gemm(dev, false, false, m, n, k, 1.f, W.v, m, x.v, k, 0.f, t, m);
    const size_t mn = size_t(m) * n;
    float* o = out.v;
    P::for_each(dev, mn * bd, [=] DYNET_LAMBDA(size_t i) { o[i] = (beta == 0.f ? 0.f : o[i]) + t[i % mn]; });
  } else {
    P::gemm_batched(dev, false, false, m, n, k, 1.f, W.v, m, W.d.bd == 1 ? 0 : m * k, x.v, k,
                    x.d.bd == 1 ? 0 : k * n, beta, out.v, m, m * n, bd);
  }
}

// Σ over the batch of g {m,n,X bd} into scratch memory.
template <class P>
const float* batch_sum(const Tensor& g, MemPool& scratch) {
  const size_t bs = g.d.batch_size();
  float* s = scratch.allocate_floats(bs);
  const float* gv = g.v;
  P::reduce(
      g.device, bs, g.d.bd, 0.f, [=] DYNET_LAMBDA(size_t j, size_t b) { return gv[b * bs + j]; }, dev::Sum(),
      [=] DYNET_LAMBDA(size_t j, float v) { s[j] = v; });
  return s;
}

// dW (+)= g · xᵀ for out = W · x (g {m,n}, x {k,n}, dW {m,k}), summing over the batch where W is shared.
// beta 0 writes dW (BackwardArgs::overwrite), 1 accumulates.
template <class P>
void grad_left(const Tensor& g, const Tensor& x, const Tensor& dW, MemPool& scratch, const LowRankSink* low_rank,
               float beta) {
  Device* dev = g.device;
  const long m = rows(g), n = cols(x), k = rows(x);
  const long bd = static_cast<long>(g.d.bd);
  if (low_rank && dW.d.bd == 1 && x.d.bd == g.d.bd && low_rank->takes(n * bd)) {
    // the batch folds into the columns; the deferred update adds
    if (beta == 0.f) {
      float* d = dW.v;
      P::for_each(dev, dW.d.size(), [=] DYNET_LAMBDA(size_t i) { d[i] = 0.f; });
    }
    low_rank->add(g.v, x.v, m, k, n * bd);
    return;
  }
  if (dW.d.bd == 1 && bd > 1) {
    if (x.d.bd == g.d.bd)  // fold the batch into the inner dimension: one GEMM over n·bd columns
      P::gemm(dev, false, true, m, k, n * bd, 1.f, g.v, m, x.v, k, beta, dW.v, m);
    else
      P::gemm(dev, false, true, m, k, n, 1.f, batch_sum<P>(g, scratch), m, x.v, k, beta, dW.v, m);
    return;
  }
  // Here dW has g's batch elements, or there is one: no two products write the same dW.
  P::gemm_batched(dev, false, true, m, k, n, 1.f, g.v, m, m * n, x.v, k, x.d.bd == 1 ? 0 : k * n, beta, dW.v, m,
                  dW.d.bd == 1 ? 0 : m * k, bd);
}

// dx (+)= Wᵀ · g for out = W · x (W {m,k}, g {m,n}, dx {k,n}), summing over the batch where x is shared.
// beta 0 writes dx (BackwardArgs::overwrite), 1 accumulates.
template <class P>
void grad_right(const Tensor& W, const Tensor& g, const Tensor& dx, MemPool& scratch, float beta) {
  Device* dev = g.device;
  const long m = rows(W), k = cols(W), n = cols(dx);
  const long bd = static_cast<long>(g.d.bd);
  if (dx.d.bd == g.d.bd) {
    if (W.d.bd == 1)
      P::gemm_tn_unchanged(dev, k, n * bd, m, 1.f, W.v, m, g.v, m, beta, dx.v, k);  // W: unchanged in backward
    else
      P::gemm_batched(dev, true, false, k, n, m, 1.f, W.v, m, m * k, g.v, m, m * n, beta, dx.v, k, k * n, bd);
    return;
  }
  if (W.d.bd == g.d.bd) {
    // Every product adds into the one shared dx: one after another (a batched GEMM would race on dx).
    for (long b = 0; b < bd; ++b)
      P::gemm(dev, true, false, k, n, m, 1.f, W.v + b * m * k, m, g.v + b * m * n, m, b == 0 ? beta : 1.f, dx.v, k);
  } else {
    P::gemm_tn_unchanged(dev, k, n, m, 1.f, W.v, m, batch_sum<P>(g, scratch), m, beta, dx.v, k);
  }
}
}  // namespace

#ifndef DYNET_CUDA_PASS
namespace {
using ops::Xs;
using dev::HostPrims;

bool is_matrix(const Dim& d) { return d.batch_size() == size_t(d.rows()) * d.cols(); }

// The harness's reference in double: Y += A·B per batch element of Y (unbatched factors are shared).
void add_product(const Dim& a, const std::vector<double>& A, const Dim& b, const std::vector<double>& B,
                 std::vector<double>& Y) {
  const size_t m = a.rows(), k = a.cols(), n = b.cols(), bd = Y.size() / (m * n);
  for (size_t t = 0; t < bd; ++t)
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 0; i < m; ++i)
        for (size_t r = 0; r < k; ++r)
          Y[t * m * n + j * m + i] += A[(a.bd > 1 ? t : 0) * m * k + r * m + i] * B[(b.bd > 1 ? t : 0) * k * n + j * k + r];
}
}  // namespace
#endif

// ---------------------------------------------------------------------------------------------
// matmul: x {m,k} · y {k,n} -> {m,n}; {m} when y is a vector {k} (as in DyNet: a {k,1} column gives {m,1},
// which programs see in npvalue()'s shape).
namespace {
template <class P>
void matmul_fwd(const ForwardArgs& a) {
  multiply<P>(a.xs[0], a.xs[1], a.fx, 0.f, a.scratch);
}
template <class P>
void matmul_bwd(const BackwardArgs& a) {
  const float beta = a.overwrite ? 0.f : 1.f;
  if (a.i == 0)
    grad_left<P>(a.dEdf, a.xs[1], a.dEdxi, a.scratch, a.low_rank, beta);
  else
    grad_right<P>(a.xs[0], a.dEdf, a.dEdxi, a.scratch, beta);
}
DYNET_DEVICE_KERNELS("matmul", matmul_fwd, matmul_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim matmul_shape(const ArgDims& xs, AttrView) {
  const Dim &x = xs[0], &y = xs[1];
  if (!is_matrix(x) || !is_matrix(y))
    op_error("matmul", "only matrices and vectors can be multiplied: " + x.str() + " * " + y.str());
  if (x.cols() != y.rows()) op_error("matmul", x.str() + " cannot multiply " + y.str());
  const unsigned bd = ops::broadcast_bd("matmul", x, y);
  return y.nd >= 2 ? Dim({x.rows(), y.cols()}, bd) : Dim({x.rows()}, bd);
}
OpSample::Reference product_reference(const std::vector<Dim>& dims) {
  return [dims](const std::vector<std::vector<double>>& xs) {
    std::vector<double> y(dims[0].rows() * dims[1].cols() * std::max(dims[0].bd, dims[1].bd), 0.0);
    add_product(dims[0], xs[0], dims[1], xs[1], y);
    return y;
  };
}

std::vector<OpSample> matmul_samples() {
  auto b = [](ComputationGraph&, Xs x) { return x[0] * x[1]; };
  std::vector<OpSample> samples = {{"matrix", {Dim({2, 3}), Dim({3, 4})}, b},
          {"matrix_vector", {Dim({3, 4}), Dim({4})}, b},
          {"row_times_column", {Dim({1, 3}), Dim({3, 1})}, b},
          {"batched_right", {Dim({2, 3}), Dim({3, 2}, 3)}, b},
          {"batched_left", {Dim({2, 3}, 3), Dim({3, 2})}, b},
          {"batched_both", {Dim({2, 3}, 2), Dim({3}, 2)}, b},
          // large enough for the oneDNN path, batch folded into the columns
          {"large_batched_right", {Dim({32, 32}), Dim({32, 16}, 2)}, b},
          {"inner_mismatch", {Dim({2, 3}), Dim({2, 3})}, b, -1, 1, true},
          {"batch_mismatch", {Dim({2, 3}, 2), Dim({3}, 3)}, b, -1, 1, true},
          {"three_dims", {Dim({2, 3, 2}), Dim({3})}, b, -1, 1, true}};
  for (OpSample& s : samples) s.reference = product_reference(s.inputs);
  return samples;
}
const OpId k_matmul = register_op({.name = "matmul",
                                   .doc = "y = x₁ x₂ (matrix product)",
                                   .shape = matmul_shape,
                                   .forward = matmul_fwd<HostPrims>,
                                   .backward = matmul_bwd<HostPrims>,
                                   .batch = {.batchable = true, .shared = 1},
                                   .samples = matmul_samples,
                                   .flags = kOverwritesGradient,
                                   .takes_empty = true});
}  // namespace
Expression operator*(const Expression& x, const Expression& y) { return make_node(k_matmul, x, y); }
DYNET_API(operator*, "matmul", "operator*(x, y)", nullptr, Expression(const Expression&, const Expression&));
#endif

// ---------------------------------------------------------------------------------------------
// affine_transform: xs = {b, W1, x1, W2, x2, ...}; f = b + Σ Wi·xi. The bias may be {m} against
// products {m,n} (added to every column).
namespace {
// affine_transform on devices: the bias broadcast into the output, then the products added.
template <class P>
void affine_dev_fwd(const ForwardArgs& a) {
  const Tensor &f = a.fx, &bias = a.xs[0];
  const auto s = dev::strided_space<2>(f.d, {&f.d, &bias.d});
  float* o = f.v;
  const float* b = bias.v;
  P::for_each(f.device, f.d.size(), [=] DYNET_LAMBDA(size_t i) {
    size_t off[2];
    s.offsets(i, off);
    o[off[0]] = b[off[1]];
  });
  for (size_t k = 1; k < a.n; k += 2) multiply<P>(a.xs[k], a.xs[k + 1], f, 1.f, a.scratch);
}
template <class P>
void affine_dev_bwd(const BackwardArgs& a) {
  const Tensor& g = a.dEdf;
  const float beta = a.overwrite ? 0.f : 1.f;
  if (a.i % 2 == 1) return grad_left<P>(g, a.xs[a.i + 1], a.dEdxi, a.scratch, a.low_rank, beta);
  if (a.i > 0) return grad_right<P>(a.xs[a.i - 1], g, a.dEdxi, a.scratch, beta);
  // The bias: every output element's gradient to the bias element it read; a column's as a product with ones,
  // deferred with the weights' (LowRankSink).
  const Tensor& d = a.dEdxi;
  const size_t m = d.d.size(), cols = g.d.size() / std::max<size_t>(m, 1);
  if (a.low_rank && d.d.bd == 1 && d.d.rows() == m && g.d.rows() == m && m && a.low_rank->takes(long(cols)))
    return a.low_rank->add(g.v, device_ones(a.fx.device, cols), long(m), 1, long(cols));
  const auto s = dev::strided_space<2>(g.d, {&d.d, &g.d});
  const bool dense = s.dense(0);
  float* dp = d.v;
  const float* gp = g.v;
  P::for_each(g.device, g.d.size(), [=] DYNET_LAMBDA(size_t i) {
    size_t off[2];
    s.offsets(i, off);
    if (dense)
      dp[off[0]] += gp[off[1]];
    else
      dev::atomic_add(dp + off[0], gp[off[1]]);
  });
}
DYNET_DEVICE_KERNELS("affine_transform", affine_dev_fwd, affine_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
// Batch count of a product (or sum of products): every side either unbatched or of the common count.
unsigned combine_bd(const char* op, unsigned bd, const Dim& d, const std::string& what) {
  if (d.bd == bd || d.bd == 1) return bd;
  if (bd == 1) return d.bd;
  op_error(op, "batch sizes differ: " + what + " " + d.str() + " vs " + std::to_string(bd) + " batch elements");
}

Dim product_dim(unsigned m, unsigned n, unsigned bd) { return n == 1 ? Dim({m}, bd) : Dim({m, n}, bd); }

Dim affine_shape(const ArgDims& xs, AttrView) {
  constexpr const char* op = "affine_transform";
  const size_t n = xs.size();
  if (n % 2 == 0)
    op_error(op, "needs an odd number of arguments {b, W1, x1, W2, x2, ...}, got " + std::to_string(n));
  const Dim& bias = xs[0];
  if (n == 1) return bias;
  size_t m = 0, cols = 0, bd = 1;
  for (size_t k = 1; k < n; k += 2) {
    const Dim &W = xs[k], &x = xs[k + 1];
    if (!is_matrix(W) || !is_matrix(x))
      op_error(op, "only matrices and vectors can be multiplied: W " + W.str() + " * x " + x.str());
    if (W.cols() != x.rows()) op_error(op, "W " + W.str() + " cannot multiply x " + x.str());
    if (k == 1) {
      m = W.rows();
      cols = x.cols();
    } else if (W.rows() != m || x.cols() != cols) {
      op_error(op, "product " + std::to_string(k / 2 + 1) + " (W " + W.str() + " * x " + x.str() + ") is {" +
                       std::to_string(W.rows()) + "," + std::to_string(x.cols()) + "} but the first is {" +
                       std::to_string(m) + "," + std::to_string(cols) + "}");
    }
    bd = combine_bd(op, bd, W, "W");
    bd = combine_bd(op, bd, x, "x");
  }
  if (!is_matrix(bias) || bias.rows() != m || (bias.cols() != cols && bias.cols() != 1))
    op_error(op, "bias " + bias.str() + " does not match the products' shape {" + std::to_string(m) + "," +
                     std::to_string(cols) + "}");
  bd = combine_bd(op, bd, bias, "bias");
  return product_dim(m, cols, bd);
}

// CPU kernel kept: its bias gradient honours BackwardArgs::overwrite (kOverwritesGradient, CPU only) and
// Eigen broadcasts the bias; op_perf generic/CPU 1.57 single, 1.38 x64 fwd+bwd. The products are shared.
void affine_fwd(const ForwardArgs& a) {
  const Tensor& f = a.fx;
  const Tensor& bias = a.xs[0];
  const size_t bs = f.d.batch_size();
  if (bias.d.batch_size() == bs) {
    if (bias.d.bd == f.d.bd)
      cpu::arr(f) = cpu::carr(bias);
    else
      for (size_t b = 0; b < f.d.bd; ++b) cpu::barr(f, b) = cpu::cbarr(bias, 0);
  } else {
    // {m} bias against {m,n} products: every column
    for (size_t b = 0; b < f.d.bd; ++b)
      cpu::mat(f, b).colwise() = Eigen::Map<const Eigen::VectorXf>(bias.batch_ptr(b), bias.d.rows());
  }
  for (size_t k = 1; k < a.n; k += 2) multiply<HostPrims>(a.xs[k], a.xs[k + 1], f, 1.f, a.scratch);
}

void affine_bwd(const BackwardArgs& a) {
  const Tensor& g = a.dEdf;
  if (a.i == 0) {
    const Tensor& d = a.dEdxi;
    if (a.overwrite) cpu::arr(d).setZero();  // the sums below add (a bias is small)
    if (d.d.batch_size() == g.d.batch_size()) {
      if (d.d.bd == g.d.bd)
        cpu::arr(d) += cpu::carr(g);
      else
        for (size_t b = 0; b < g.d.bd; ++b) cpu::barr(d, 0) += cpu::cbarr(g, b);
    } else {
      for (size_t b = 0; b < g.d.bd; ++b)
        Eigen::Map<Eigen::VectorXf>(d.batch_ptr(b), d.d.rows()) += cpu::cmat(g, b).rowwise().sum();
    }
  } else {
    affine_dev_bwd<HostPrims>(a);  // the products' gradients
  }
}

// b + Σ Wᵢ·xᵢ in double, the bias repeated along the columns (and over the batch) where it has fewer.
OpSample::Reference affine_reference(const std::vector<Dim>& dims) {
  return [dims](const std::vector<std::vector<double>>& xs) {
    size_t cols = dims[0].cols();
    unsigned bd = 1;
    for (const Dim& d : dims) bd = std::max(bd, d.bd);
    for (size_t i = 2; i < dims.size(); i += 2) cols = dims[i].cols();
    const size_t m = dims[0].rows(), bias_cols = dims[0].cols();
    std::vector<double> y(m * cols * bd);
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = xs[0][(dims[0].bd > 1 ? i / (m * cols) : 0) * m * bias_cols + (bias_cols > 1 ? i % (m * cols) : i % m)];
    for (size_t i = 1; i + 1 < dims.size(); i += 2) add_product(dims[i], xs[i], dims[i + 1], xs[i + 1], y);
    return y;
  };
}

std::vector<OpSample> affine_samples() {
  auto b = [](ComputationGraph&, Xs x) { return affine_transform(x); };
  std::vector<OpSample> samples = {{"identity", {Dim({3})}, b},
          {"one_product", {Dim({2}), Dim({2, 3}), Dim({3})}, b},
          {"two_products", {Dim({2}), Dim({2, 3}), Dim({3}), Dim({2, 4}), Dim({4})}, b},
          {"batched_x", {Dim({2}), Dim({2, 3}), Dim({3}, 3)}, b},
          {"batched_bias", {Dim({2}, 2), Dim({2, 3}), Dim({3})}, b},
          {"batched_W", {Dim({2}), Dim({2, 3}, 2), Dim({3})}, b},
          {"mixed", {Dim({2}), Dim({2, 3}, 2), Dim({3}), Dim({2, 3}), Dim({3}, 2)}, b},
          {"column_bias", {Dim({2}), Dim({2, 3}), Dim({3, 4})}, b},
          {"column_bias_batched", {Dim({2}, 2), Dim({2, 3}), Dim({3, 4}, 2)}, b},
          {"matrix_bias", {Dim({2, 4}, 2), Dim({2, 3}), Dim({3, 4})}, b},
          {"even_count", {Dim({2}), Dim({2, 3})}, b, -1, 1, true},
          {"inner_mismatch", {Dim({2}), Dim({2, 3}), Dim({4})}, b, -1, 1, true},
          {"product_mismatch", {Dim({2}), Dim({2, 3}), Dim({3}), Dim({3, 3}), Dim({3})}, b, -1, 1, true},
          {"bias_mismatch", {Dim({3}), Dim({2, 3}), Dim({3})}, b, -1, 1, true},
          {"batch_mismatch", {Dim({2}, 2), Dim({2, 3}), Dim({3}, 3)}, b, -1, 1, true}};
  for (OpSample& s : samples) s.reference = affine_reference(s.inputs);
  return samples;
}
// Arguments b(0), W1(1), x1(2), W2(3), ...: the bias and the weights are shared, the x's concatenated.
constexpr uint64_t kAffineShared = 0xAAAAAAAAAAAAAAAAull | 1ull;
const OpId k_affine = register_op({.name = "affine_transform",
                                   .doc = "y = b + Σᵢ Wᵢ xᵢ (b {m} is added to every column)",
                                   .shape = affine_shape,
                                   .forward = affine_fwd,
                                   .backward = affine_bwd,
                                   .batch = {.batchable = true, .shared = kAffineShared},
                                   .samples = affine_samples,
                                   .flags = kOverwritesGradient,
                                   .takes_empty = true});
}  // namespace
Expression affine_transform(const std::initializer_list<Expression>& xs) {
  return make_node_n(k_affine, xs);
}
DYNET_API(affine_transform, "affine_transform", "affine_transform(xs)", nullptr, Expression(const std::initializer_list<Expression>&));
Expression affine_transform(const std::vector<Expression>& xs) {
  return make_node_n(k_affine, xs);
}
DYNET_API(affine_transform, "affine_transform", "affine_transform(xs)", "affine_transform(exprs)", Expression(const std::vector<Expression>&));
#endif

}  // namespace dynet
