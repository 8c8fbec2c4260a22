// Contractions of a 3-d tensor with vectors: contract3d_1d(x, y[, b]) and contract3d_1d_1d(x, y, z[, b]).
// A tensor x {i,j,k} is, in memory, the matrix X {i·j, k}, so contracting its last dim is a GEMV (and,
// for a shared x against a batch of y's, one GEMM with the batch folded into the columns).
#include "core/mem.h"
#include "kernels/cpu/gemm.h"
#include "ops/api.h"
#include "ops/common.h"

namespace dynet {
namespace {

using ops::Xs;

using ops::common_bd;
using ops::join;
bool is_vector(const Dim& d, unsigned n) { return d.rows() == n && d.batch_size() == n; }

// out (+)= X · v for every batch element: X {m, k}, v {k}, out {m}. An unbatched X against a batch of
// v's (and outputs) is one GEMM over the batch; beta = 0 overwrites, 1 accumulates.
void contract_last(const Tensor& X, const Tensor& v, const Tensor& out, size_t m, size_t k, float beta) {
  const size_t bd = out.d.bd;
  if (X.d.bd == 1 && v.d.bd == bd) {
    cpu::gemm(false, false, long(m), long(bd), long(k), 1.f, X.v, long(m), v.v, long(k), beta, out.v,
              long(m));
    return;
  }
  for (size_t b = 0; b < bd; ++b)
    cpu::gemm(false, false, long(m), 1, long(k), 1.f, X.batch_ptr(b), long(m), v.batch_ptr(b), long(k), beta,
              out.batch_ptr(b), long(m));
}

// dX += g · vᵀ (X {m,k}, g {m}, v {k} per batch element), summing over the batch when X is unbatched.
void grad_outer(const float* g, const Tensor& v, const Tensor& dX, size_t m, size_t k, size_t bd,
                size_t g_stride) {
  if (dX.d.bd == 1 && v.d.bd == bd && g_stride == m) {  // Σ_b g_b v_bᵀ = G {m, bd} · V {k, bd}ᵀ
    cpu::gemm(false, true, long(m), long(k), long(bd), 1.f, g, long(m), v.v, long(k), 1.f, dX.v, long(m));
    return;
  }
  for (size_t b = 0; b < bd; ++b)
    cpu::gemm(false, true, long(m), long(k), 1, 1.f, g + b * g_stride, long(m), v.batch_ptr(b), long(k), 1.f,
              dX.batch_ptr(b), long(m));
}

// dv += Xᵀ · g (X {m,k}, g {m}, dv {k} per batch element), summing over the batch when v is unbatched.
void grad_transposed(const Tensor& X, const float* g, const Tensor& dv, size_t m, size_t k, size_t bd,
                     size_t g_stride) {
  if (X.d.bd == 1 && dv.d.bd == bd && g_stride == m) {
    cpu::gemm(true, false, long(k), long(bd), long(m), 1.f, X.v, long(m), g, long(m), 1.f, dv.v, long(k));
    return;
  }
  for (size_t b = 0; b < bd; ++b)
    cpu::gemm(true, false, long(k), 1, long(m), 1.f, X.batch_ptr(b), long(m), g + b * g_stride, long(m), 1.f,
              dv.batch_ptr(b), long(k));
}

// d += g over the batch (d unbatched: summed).
void add_bias_grad(const Tensor& g, const Tensor& d) {
  for (size_t b = 0; b < g.d.bd; ++b) cpu::barr(d, b) += cpu::cbarr(g, b);
}
void add_bias(const Tensor& bias, const Tensor& f) {
  for (size_t b = 0; b < f.d.bd; ++b) cpu::barr(f, b) += cpu::cbarr(bias, b);
}

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
void c31_fwd(const ForwardArgs& a) {
  const Dim& x = a.xs[0].d;
  contract_last(a.xs[0], a.xs[1], a.fx, size_t(x[0]) * x[1], x[2], 0.f);
  if (a.n == 3) add_bias(a.xs[2], a.fx);
}
void c31_bwd(const BackwardArgs& a) {
  const Dim& x = a.xs[0].d;
  const size_t m = size_t(x[0]) * x[1], k = x[2], bd = a.fx.d.bd;
  if (a.i == 0)
    grad_outer(a.dEdf.v, a.xs[1], a.dEdxi, m, k, bd, m);
  else if (a.i == 1)
    grad_transposed(a.xs[0], a.dEdf.v, a.dEdxi, m, k, bd, m);
  else
    add_bias_grad(a.dEdf, a.dEdxi);
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
                                .forward = c31_fwd,
                                .backward = c31_bwd,
                                .batch = {.batchable = true, .shared = 1 | 4},
                                .samples = c31_samples});

// ---------------------------------------------------------------------------------------------
// contract3d_1d_1d(x, y, z[, b]): x {i,j,k}, y {k}, z {j}, b {i}; t[i] = b[i] + Σ_{j,k} x[i,j,k] · y[k] · z[j].
// Computed as M = x·y {i,j} (kept in aux for the gradient of z), then t = M · z.
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
void c311_fwd(const ForwardArgs& a) {
  const Dim& x = a.xs[0].d;
  const size_t I = x[0], J = x[1], bd = a.fx.d.bd;
  const Tensor M(Dim({x[0], x[1]}, a.fx.d.bd), a.aux);
  contract_last(a.xs[0], a.xs[1], M, I * J, x[2], 0.f);
  for (size_t b = 0; b < bd; ++b)
    cpu::gemm(false, false, long(I), 1, long(J), 1.f, M.batch_ptr(b), long(I), a.xs[2].batch_ptr(b), long(J),
              0.f, a.fx.batch_ptr(b), long(I));
  if (a.n == 4) add_bias(a.xs[3], a.fx);
}
void c311_bwd(const BackwardArgs& a) {
  const Dim& x = a.xs[0].d;
  const size_t I = x[0], J = x[1], K = x[2], bd = a.fx.d.bd;
  const float* dt = a.dEdf.v;
  if (a.i == 3) {
    add_bias_grad(a.dEdf, a.dEdxi);
  } else if (a.i == 2) {  // dz += Mᵀ · dt
    const Tensor M(Dim({x[0], x[1]}, a.fx.d.bd), a.aux);
    grad_transposed(M, dt, a.dEdxi, I, J, bd, I);
  } else {
    // dM = dt · zᵀ {i,j} per batch element; dx += dM · yᵀ, dy += Xᵀ · dM.
    float* dM = a.scratch.allocate_floats(size_t(I) * J * bd);
    for (size_t b = 0; b < bd; ++b) {
      Eigen::Map<Eigen::MatrixXf>(dM + size_t(b) * I * J, I, J).noalias() =
          Eigen::Map<const Eigen::VectorXf>(dt + size_t(b) * I, I) *
          Eigen::Map<const Eigen::RowVectorXf>(a.xs[2].batch_ptr(b), J);
    }
    if (a.i == 0)
      grad_outer(dM, a.xs[1], a.dEdxi, I * J, K, bd, size_t(I) * J);
    else
      grad_transposed(a.xs[0], dM, a.dEdxi, I * J, K, bd, size_t(I) * J);
  }
}
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
                                 .forward = c311_fwd,
                                 .backward = c311_bwd,
                                 .aux_floats = c311_aux,
                                 .batch = {.batchable = true, .shared = 1 | 8},
                                 .samples = c311_samples});

}  // namespace

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

}  // namespace dynet
