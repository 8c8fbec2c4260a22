// Linear algebra: inverse(x), logdet(x), trace_of_product(x, y). Each works per batch element (DyNet's
// versions take only unbatched arguments). The LU factorizations run in double: these ops are used on
// small matrices, where the cost is negligible and the float round-off of an LU would dominate the error.
#include <Eigen/LU>
#include <cmath>

#include "ops/api.h"
#include "ops/common.h"

namespace dynet {
namespace {

using ops::Xs;

Dim square_matrix(const char* op, const Dim& x) {
  if (x.nd > 2 || x.rows() != x.cols()) op_error(op, "needs a square matrix, got " + x.str());
  return x;
}

Eigen::MatrixXd to_double(const Tensor& x, unsigned b) { return cpu::cmat(x, b).cast<double>(); }

// ---------------------------------------------------------------------------------------------
// inverse(x) = x⁻¹; a singular x throws. d(x⁻¹) = -x⁻¹ dx x⁻¹, so dx += -yᵀ · dy · yᵀ.
Dim inverse_shape(const ArgDims& xs, AttrView) { return square_matrix("inverse", xs[0]); }
void inverse_fwd(const ForwardArgs& a) {
  const size_t n = a.fx.d.rows();
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    const Eigen::PartialPivLU<Eigen::MatrixXd> lu(to_double(a.xs[0], b));
    const auto pivots = lu.matrixLU().diagonal();
    for (size_t k = 0; k < n; ++k)
      if (pivots(k) == 0.0 || !std::isfinite(pivots(k)))
        throw std::runtime_error("inverse: the matrix " + a.xs[0].d.str() + " (batch element " + std::to_string(b) +
                                 ") is singular");
    cpu::mat(a.fx, b) = lu.inverse().cast<float>();
  }
}
void inverse_bwd(const BackwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    const auto Y = cpu::cmat(a.fx, b);
    cpu::mat(a.dEdxi, b).noalias() -= Y.transpose() * (cpu::cmat(a.dEdf, b) * Y.transpose());
  }
}
// Inputs in [-0.3, 0.3] plus 2·I: well-conditioned, so finite differences are accurate.
Expression shifted(ComputationGraph& g, const Expression& x) {
  const unsigned n = x.dim().rows();
  std::vector<float> eye(size_t(n) * n, 0.f);
  for (size_t k = 0; k < n; ++k) eye[size_t(k) * n + k] = 2.f;
  return x + input(g, Dim({n, n}), eye);
}
std::vector<OpSample> inverse_samples() {
  auto b = [](ComputationGraph& g, Xs x) { return inverse(shifted(g, x[0])); };
  auto raw = [](ComputationGraph&, Xs x) { return inverse(x[0]); };
  return {{"one_by_one", {Dim({1, 1})}, raw, 0.5f, 1.5f},
          {"three", {Dim({3, 3})}, b, -0.3f, 0.3f},
          {"batched", {Dim({2, 2}, 3)}, b, -0.3f, 0.3f},
          {"not_square", {Dim({2, 3})}, raw, -1, 1, true},
          {"three_dims", {Dim({2, 2, 2})}, raw, -1, 1, true}};
}
const OpId k_inverse = register_op({.name = "inverse",
                                    .doc = "y = x⁻¹",
                                    .shape = inverse_shape,
                                    .forward = inverse_fwd,
                                    .backward = inverse_bwd,
                                    .batch = {.batchable = true},
                                    .samples = inverse_samples});

// ---------------------------------------------------------------------------------------------
// logdet(x) = log |det x| from the LU pivots; d log|det x| / dx = x⁻ᵀ.
Dim logdet_shape(const ArgDims& xs, AttrView) { return Dim({1}, square_matrix("logdet", xs[0]).bd); }
void logdet_fwd(const ForwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    const Eigen::PartialPivLU<Eigen::MatrixXd> lu(to_double(a.xs[0], b));
    a.fx.v[b] = static_cast<float>(lu.matrixLU().diagonal().array().abs().log().sum());
  }
}
void logdet_bwd(const BackwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b) {
    const Eigen::MatrixXd inv = to_double(a.xs[0], b).partialPivLu().inverse();
    cpu::mat(a.dEdxi, b) += (a.dEdf.v[b] * inv.transpose()).cast<float>();
  }
}
std::vector<OpSample> logdet_samples() {
  auto b = [](ComputationGraph& g, Xs x) { return logdet(shifted(g, x[0])); };
  auto negated = [](ComputationGraph& g, Xs x) { return logdet(-shifted(g, x[0])); };
  auto raw = [](ComputationGraph&, Xs x) { return logdet(x[0]); };
  return {{"one_by_one", {Dim({1, 1})}, raw, 0.5f, 1.5f},
          {"three", {Dim({3, 3})}, b, -0.3f, 0.3f},
          {"negative_determinant", {Dim({3, 3})}, negated, -0.3f, 0.3f},
          {"batched", {Dim({2, 2}, 3)}, b, -0.3f, 0.3f},
          {"not_square", {Dim({3, 2})}, raw, -1, 1, true}};
}
const OpId k_logdet = register_op({.name = "logdet",
                                   .doc = "y = log abs(det x)",
                                   .shape = logdet_shape,
                                   .forward = logdet_fwd,
                                   .backward = logdet_bwd,
                                   .batch = {.batchable = true},
                                   .samples = logdet_samples});

// ---------------------------------------------------------------------------------------------
// trace_of_product(x, y) = tr(x · yᵀ) = Σ x ⊙ y per batch element (x and y of one shape).
Dim trace_shape(const ArgDims& xs, AttrView) {
  if (xs[0].single_batch() != xs[1].single_batch())
    op_error("trace_of_product", "x " + xs[0].str() + " and y " + xs[1].str() + " must have the same shape");
  return Dim({1}, ops::broadcast_bd("trace_of_product", xs[0], xs[1]));
}
void trace_fwd(const ForwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b) a.fx.v[b] = (cpu::cbarr(a.xs[0], b) * cpu::cbarr(a.xs[1], b)).sum();
}
void trace_bwd(const BackwardArgs& a) {
  const Tensor& other = a.xs[1 - a.i];
  for (size_t b = 0; b < a.fx.d.bd; ++b) cpu::barr(a.dEdxi, b) += a.dEdf.v[b] * cpu::cbarr(other, b);
}
std::vector<OpSample> trace_samples() {
  auto b = [](ComputationGraph&, Xs x) { return trace_of_product(x[0], x[1]); };
  return {{"square", {Dim({3, 3}), Dim({3, 3})}, b},
          {"rectangular", {Dim({2, 4}), Dim({2, 4})}, b},
          {"batched", {Dim({2, 2}, 2), Dim({2, 2}, 2)}, b},
          {"broadcast", {Dim({2, 3}), Dim({2, 3}, 3)}, b},
          {"shapes_differ", {Dim({2, 3}), Dim({3, 2})}, b, -1, 1, true},
          {"batch_mismatch", {Dim({2, 2}, 2), Dim({2, 2}, 3)}, b, -1, 1, true}};
}
const OpId k_trace = register_op({.name = "trace_of_product",
                                  .doc = "y = tr(x · yᵀ) = Σ x ⊙ y",
                                  .shape = trace_shape,
                                  .forward = trace_fwd,
                                  .backward = trace_bwd,
                                  .batch = {.batchable = true},
                                  .samples = trace_samples});

}  // namespace

Expression inverse(const Expression& x) { return make_node(k_inverse, x); }
DYNET_API(inverse, "inverse", "inverse(x)", "inverse(x)", Expression(const Expression&));
Expression logdet(const Expression& x) { return make_node(k_logdet, x); }
DYNET_API(logdet, "logdet", "logdet(x)", "logdet(x)", Expression(const Expression&));
Expression trace_of_product(const Expression& x, const Expression& y) { return make_node(k_trace, x, y); }
DYNET_API(trace_of_product, "trace_of_product", "trace_of_product(x, y)", "trace_of_product(x, y)", Expression(const Expression&, const Expression&));

}  // namespace dynet
