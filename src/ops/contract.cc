// Contractions of a 3-d tensor with vectors: contract3d_1d(x, y[, b]) and contract3d_1d_1d(x, y, z[, b]).
// A tensor x {i,j,k} is, in memory, the matrix X {i·j, k}, so contracting its last dim is a GEMV (and,
// for a shared x against a batch of y's, one GEMM with the batch folded into the columns).
//
// The kernels are written once over the primitives P (kernels/device/prims.h): the CPU runs their HostPrims
// instantiation (GEMM through oneDNN), other devices theirs (cuBLAS on GPUs).
#include "kernels/device/prims.h"

#ifndef DYNET_CUDA_PASS
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {
namespace {

long batch_stride(const Tensor& t, size_t per) { return t.d.bd == 1 ? 0 : long(per); }

// out (+)= X · v for every batch element: X {m, k}, v {k}, out {m}. An unbatched X against a batch of
// v's (and outputs) is one GEMM over the batch; beta = 0 overwrites, 1 accumulates.
template <class P>
void contract_last(const Tensor& X, const Tensor& v, const Tensor& out, size_t m, size_t k, float beta) {
  const size_t bd = out.d.bd;
  if (X.d.bd == 1 && v.d.bd == bd) {
    P::gemm(out.device, false, false, long(m), long(bd), long(k), 1.f, X.v, long(m), v.v, long(k), beta, out.v, long(m));
    return;
  }
  P::gemm_batched(out.device, false, false, long(m), 1, long(k), 1.f, X.v, long(m), batch_stride(X, m * k), v.v,
                  long(k), batch_stride(v, k), beta, out.v, long(m), long(m), long(bd));
}

// dX += g · vᵀ (X {m,k}, g {m}, v {k} per batch element, g's elements g_stride apart), summing over the
// batch when X is unbatched.
template <class P>
void grad_outer(const float* g, const Tensor& v, const Tensor& dX, size_t m, size_t k, size_t bd, size_t g_stride) {
  Device* dev = dX.device;
  if (dX.d.bd == 1 && v.d.bd == bd && g_stride == m) {  // Σ_b g_b v_bᵀ = G {m, bd} · V {k, bd}ᵀ
    P::gemm(dev, false, true, long(m), long(k), long(bd), 1.f, g, long(m), v.v, long(k), 1.f, dX.v, long(m));
  } else if (dX.d.bd == bd) {
    P::gemm_batched(dev, false, true, long(m), long(k), 1, 1.f, g, long(m), long(g_stride), v.v, long(k),
                    batch_stride(v, k), 1.f, dX.v, long(m), long(m * k), long(bd));
  } else {  // every product adds into the one shared dX: one after another
    for (size_t b = 0; b < bd; ++b)
      P::gemm(dev, false, true, long(m), long(k), 1, 1.f, g + b * g_stride, long(m), v.batch_ptr(b), long(k), 1.f,
              dX.v, long(m));
  }
}

// dv += Xᵀ · g (X {m,k}, g {m}, dv {k} per batch element), summing over the batch when v is unbatched.
template <class P>
void grad_transposed(const Tensor& X, const float* g, const Tensor& dv, size_t m, size_t k, size_t bd,
                     size_t g_stride) {
  Device* dev = dv.device;
  if (X.d.bd == 1 && dv.d.bd == bd && g_stride == m) {
    P::gemm(dev, true, false, long(k), long(bd), long(m), 1.f, X.v, long(m), g, long(m), 1.f, dv.v, long(k));
  } else if (dv.d.bd == bd) {
    P::gemm_batched(dev, true, false, long(k), 1, long(m), 1.f, X.v, long(m), batch_stride(X, m * k), g, long(m),
                    long(g_stride), 1.f, dv.v, long(k), long(k), long(bd));
  } else {
    for (size_t b = 0; b < bd; ++b)
      P::gemm(dev, true, false, long(k), 1, long(m), 1.f, X.batch_ptr(b), long(m), g + b * g_stride, long(m), 1.f,
              dv.v, long(k));
  }
}

// f += bias (bias unbatched: added to every batch element); d += g over the batch (d unbatched: summed).
template <class P>
void add_bias(const Tensor& bias, const Tensor& f) {
  const size_t bs = f.d.batch_size();
  const bool batched = bias.d.bd > 1;
  float* y = f.v;
  const float* c = bias.v;
  P::for_each(f.device, f.d.size(), [=] DYNET_LAMBDA(size_t i) { y[i] += c[batched ? i : i % bs]; });
}
template <class P>
void add_bias_grad(const Tensor& g, const Tensor& d) {
  const size_t bs = g.d.batch_size();
  const float* gv = g.v;
  dev::add_over_batch<P>(g.device, d.v, d.d.bd > 1, g.d.bd, bs,
                         [=] DYNET_LAMBDA(size_t b, size_t j) { return gv[b * bs + j]; });
}

// contract3d_1d: z {i,j} = X {i·j, k} · y (+ b).
template <class P>
void c31_fwd(const ForwardArgs& a) {
  const Dim& x = a.xs[0].d;
  contract_last<P>(a.xs[0], a.xs[1], a.fx, size_t(x[0]) * x[1], x[2], 0.f);
  if (a.n == 3) add_bias<P>(a.xs[2], a.fx);
}
template <class P>
void c31_bwd(const BackwardArgs& a) {
  const Dim& x = a.xs[0].d;
  const size_t m = size_t(x[0]) * x[1], k = x[2], bd = a.fx.d.bd;
  if (a.i == 0)
    grad_outer<P>(a.dEdf.v, a.xs[1], a.dEdxi, m, k, bd, m);
  else if (a.i == 1)
    grad_transposed<P>(a.xs[0], a.dEdf.v, a.dEdxi, m, k, bd, m);
  else
    add_bias_grad<P>(a.dEdf, a.dEdxi);
}
DYNET_DEVICE_KERNELS("contract3d_1d", c31_fwd, c31_bwd);

// contract3d_1d_1d: M = x·y {i,j} (kept in aux for the gradient of z), then t = M · z (+ b).
template <class P>
void c311_fwd(const ForwardArgs& a) {
  const Dim& x = a.xs[0].d;
  const size_t I = x[0], J = x[1], bd = a.fx.d.bd;
  const Tensor M(Dim({x[0], x[1]}, a.fx.d.bd), a.aux, a.fx.device, a.fx.mem_pool);
  contract_last<P>(a.xs[0], a.xs[1], M, I * J, x[2], 0.f);
  P::gemm_batched(a.fx.device, false, false, long(I), 1, long(J), 1.f, M.v, long(I), long(I * J), a.xs[2].v, long(J),
                  batch_stride(a.xs[2], J), 0.f, a.fx.v, long(I), long(I), long(bd));
  if (a.n == 4) add_bias<P>(a.xs[3], a.fx);
}
template <class P>
void c311_bwd(const BackwardArgs& a) {
  const Dim& x = a.xs[0].d;
  const size_t I = x[0], J = x[1], K = x[2], bd = a.fx.d.bd;
  const float* dt = a.dEdf.v;
  if (a.i == 3) {
    add_bias_grad<P>(a.dEdf, a.dEdxi);
  } else if (a.i == 2) {  // dz += Mᵀ · dt
    const Tensor M(Dim({x[0], x[1]}, a.fx.d.bd), a.aux, a.fx.device, a.fx.mem_pool);
    grad_transposed<P>(M, dt, a.dEdxi, I, J, bd, I);
  } else {
    // dM = dt · zᵀ {i,j} per batch element; dx += dM · yᵀ, dy += Xᵀ · dM.
    float* dM = a.scratch.allocate_floats(I * J * bd);
    P::gemm_batched(a.fx.device, false, true, long(I), long(J), 1, 1.f, dt, long(I), long(I), a.xs[2].v, long(J),
                    batch_stride(a.xs[2], J), 0.f, dM, long(I), long(I * J), long(bd));
    if (a.i == 0)
      grad_outer<P>(dM, a.xs[1], a.dEdxi, I * J, K, bd, I * J);
    else
      grad_transposed<P>(a.xs[0], dM, a.dEdxi, I * J, K, bd, I * J);
  }
}
DYNET_DEVICE_KERNELS("contract3d_1d_1d", c311_fwd, c311_bwd);

#ifndef DYNET_CUDA_PASS
using ops::Xs;
using dev::HostPrims;

using ops::common_bd;
bool is_vector(const Dim& d, unsigned n) { return d.rows() == n && d.batch_size() == n; }

// ---------------------------------------------------------------------------------------------
// contract3d_1d(x, y[, b]): x {i,j,k}, y {k}, b {i,j}; z[i,j] = b[i,j] + Σ_k x[i,j,k] · y[k].
Dim c31_shape(const ArgDims& xs, AttrView) {
  constexpr const char* op = "contract3d_1d";
  const Dim &x = xs[0], &y = xs[1];
  if (x.nd != 3) op_error(op, "x must be a 3-d tensor {i,j,k}, got " + x.str());
  if (!is_vector(y, x[2])) op_error(op, "y " + y.str() + " must be a vector of x's last dim: x " + x.str());
  if (xs.size() == 3 && (xs[2].nd > 2 || xs[2].rows() != x[0] || xs[2].cols() != x[1]))
    op_error(op, "bias " + xs[2].str() + " must be {" + std::to_string(x[0]) + "," + std::to_string(x[1]) + "} for x " +
                     x.str());
  return Dim({x[0], x[1]}, common_bd(op, xs));
}
std::vector<OpSample> c31_samples() {
  auto nb = [](ComputationGraph&, Xs x) { return contract3d_1d(x[0], x[1]); };
  auto wb = [](ComputationGraph&, Xs x) { return contract3d_1d(x[0], x[1], x[2]); };
  return {{"plain", {Dim({2, 3, 4}), Dim({4})}, nb},
          {"bias", {Dim({2, 3, 4}), Dim({4}), Dim({2, 3})}, wb},
          {"batched_y", {Dim({3, 2, 4}), Dim({4}, 3)}, nb},
          {"batched_x", {Dim({3, 2, 2}, 2), Dim({2})}, nb},
          {"batched_bias", {Dim({2, 2, 3}), Dim({3}), Dim({2, 2}, 2)}, wb},
          {"all_batched", {Dim({2, 2, 3}, 2), Dim({3}, 2), Dim({2, 2}, 2)}, wb},
          {"y_size", {Dim({2, 3, 4}), Dim({3})}, nb, -1, 1, true},
          {"x_not_3d", {Dim({2, 4}), Dim({4})}, nb, -1, 1, true},
          {"bias_shape", {Dim({2, 3, 4}), Dim({4}), Dim({3, 2})}, wb, -1, 1, true},
          {"batch_mismatch", {Dim({2, 3, 4}, 2), Dim({4}, 3)}, nb, -1, 1, true}};
}
const OpId k_c31 = register_op({.name = "contract3d_1d",
                                .doc = "z[i,j] = b[i,j] + Σ_k x[i,j,k] · y[k]",
                                .shape = c31_shape,
                                .forward = c31_fwd<HostPrims>,
                                .backward = c31_bwd<HostPrims>,
                                .batch = {.batchable = true, .shared = 1 | 4},
                                .samples = c31_samples});

// ---------------------------------------------------------------------------------------------
// contract3d_1d_1d(x, y, z[, b]): x {i,j,k}, y {k}, z {j}, b {i}; t[i] = b[i] + Σ_{j,k} x[i,j,k] · y[k] · z[j].
Dim c311_shape(const ArgDims& xs, AttrView) {
  constexpr const char* op = "contract3d_1d_1d";
  const Dim &x = xs[0], &y = xs[1], &z = xs[2];
  if (x.nd != 3) op_error(op, "x must be a 3-d tensor {i,j,k}, got " + x.str());
  if (!is_vector(y, x[2])) op_error(op, "y " + y.str() + " must be a vector of x's last dim: x " + x.str());
  if (!is_vector(z, x[1])) op_error(op, "z " + z.str() + " must be a vector of x's second dim: x " + x.str());
  if (xs.size() == 4 && !is_vector(xs[3], x[0]))
    op_error(op, "bias " + xs[3].str() + " must be a vector of x's first dim: x " + x.str());
  return Dim({x[0]}, common_bd(op, xs));
}
size_t c311_aux(const Dim& fx, const ArgDims& xs, AttrView) { return size_t(xs[0][0]) * xs[0][1] * fx.bd; }
std::vector<OpSample> c311_samples() {
  auto nb = [](ComputationGraph&, Xs x) { return contract3d_1d_1d(x[0], x[1], x[2]); };
  auto wb = [](ComputationGraph&, Xs x) { return contract3d_1d_1d(x[0], x[1], x[2], x[3]); };
  return {{"plain", {Dim({2, 3, 4}), Dim({4}), Dim({3})}, nb},
          {"bias", {Dim({2, 3, 4}), Dim({4}), Dim({3}), Dim({2})}, wb},
          {"batched_y", {Dim({3, 2, 4}), Dim({4}, 2), Dim({2})}, nb},
          {"batched_z", {Dim({3, 2, 4}), Dim({4}), Dim({2}, 3)}, nb},
          {"batched_x_bias", {Dim({2, 2, 3}, 2), Dim({3}), Dim({2}), Dim({2}, 2)}, wb},
          {"all_batched", {Dim({2, 3, 2}, 2), Dim({2}, 2), Dim({3}, 2), Dim({2}, 2)}, wb},
          {"y_size", {Dim({2, 3, 4}), Dim({3}), Dim({3})}, nb, -1, 1, true},
          {"z_size", {Dim({2, 3, 4}), Dim({4}), Dim({4})}, nb, -1, 1, true},
          {"bias_size", {Dim({2, 3, 4}), Dim({4}), Dim({3}), Dim({3})}, wb, -1, 1, true},
          {"batch_mismatch", {Dim({2, 3, 4}), Dim({4}, 2), Dim({3}, 3)}, nb, -1, 1, true}};
}
const OpId k_c311 = register_op({.name = "contract3d_1d_1d",
                                 .doc = "t[i] = b[i] + Σ_{j,k} x[i,j,k] · y[k] · z[j]",
                                 .shape = c311_shape,
                                 .forward = c311_fwd<HostPrims>,
                                 .backward = c311_bwd<HostPrims>,
                                 .aux_floats = c311_aux,
                                 .batch = {.batchable = true, .shared = 1 | 8},
                                 .samples = c311_samples});

#endif  // DYNET_CUDA_PASS
}  // namespace

#ifndef DYNET_CUDA_PASS
Expression contract3d_1d(const Expression& x, const Expression& y) { return make_node(k_c31, x, y); }
DYNET_API(contract3d_1d, "contract3d_1d", "contract3d_1d(x, y)", "contract3d_1d(x, y)", Expression(const Expression&, const Expression&));
Expression contract3d_1d(const Expression& x, const Expression& y, const Expression& b) {
  return make_node(k_c31, {&x, &y, &b});
}
DYNET_API(contract3d_1d, "contract3d_1d", "contract3d_1d(x, y, b)", "contract3d_1d_bias(x, y, b)", Expression(const Expression&, const Expression&, const Expression&));
Expression contract3d_1d_1d(const Expression& x, const Expression& y, const Expression& z) {
  return make_node(k_c311, {&x, &y, &z});
}
DYNET_API(contract3d_1d_1d, "contract3d_1d_1d", "contract3d_1d_1d(x, y, z)", "contract3d_1d_1d(x, y, z)", Expression(const Expression&, const Expression&, const Expression&));
Expression contract3d_1d_1d(const Expression& x, const Expression& y, const Expression& z, const Expression& b) {
  return make_node(k_c311, {&x, &y, &z, &b});
}
DYNET_API(contract3d_1d_1d, "contract3d_1d_1d", "contract3d_1d_1d(x, y, z, b)", "contract3d_1d_1d_bias(x, y, z, b)", Expression(const Expression&, const Expression&, const Expression&, const Expression&));
#endif

}  // namespace dynet
