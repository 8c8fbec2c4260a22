// DyNet's Eigen functors (dynet/simd-functors.h), for Eigen's unaryExpr / binaryExpr in DyNet-style
// node code. Forward functors take x; backward ones take (t, d) = (the forward's input or output as
// DyNet's did, dE/dy). Scalar evaluation only (DyNet added packet versions for speed). Needs Eigen.
#pragma once

#include <Eigen/Core>
#include <cmath>

#include "dynet/functors.h"

namespace dynet {

template <typename Scalar>
struct scalar_logistic_sigmoid_op {
  Scalar operator()(const Scalar& x) const { return 1 / (1 + std::exp(-x)); }
};
template <typename Scalar>
struct scalar_log_sigmoid_forward_op {
  Scalar operator()(const Scalar& x) const { return x > 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }
};
template <typename Scalar>
struct scalar_log_sigmoid_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return (1 - std::exp(t)) * d; }
};
template <typename Scalar>
struct scalar_sqrt_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return d / (2 * t); }
};
template <typename Scalar>
struct scalar_asinh_forward_op {
  Scalar operator()(const Scalar& x) const { return std::asinh(x); }
};
template <typename Scalar>
struct scalar_acosh_forward_op {
  Scalar operator()(const Scalar& x) const { return std::acosh(x); }
};
template <typename Scalar>
struct scalar_atanh_forward_op {
  Scalar operator()(const Scalar& x) const { return std::atanh(x); }
};
template <typename Scalar>
struct scalar_tan_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return (1 + t * t) * d; }
};
template <typename Scalar>
struct scalar_asin_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return d / std::sqrt(1 - t * t); }
};
template <typename Scalar>
struct scalar_acos_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return -d / std::sqrt(1 - t * t); }
};
template <typename Scalar>
struct scalar_atan_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return d / (t * t + 1); }
};
template <typename Scalar>
struct scalar_asinh_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return d / std::sqrt(t * t + 1); }
};
template <typename Scalar>
struct scalar_acosh_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return d / std::sqrt(t * t - 1); }
};
template <typename Scalar>
struct scalar_atanh_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return d / (1 - t * t); }
};
template <typename Scalar>
struct scalar_erf_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return Scalar(1.1283791670955126) * std::exp(-t * t) * d; }
};
template <typename Scalar>
struct scalar_logistic_sigmoid_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return (1 - t) * t * d; }
};
template <typename Scalar>
struct scalar_tanh_backward_op {
  Scalar operator()(const Scalar& t, const Scalar& d) const { return (1 - t * t) * d; }
};
// c + x and c - x.
template <typename Scalar>
struct const_add_op {
  explicit const_add_op(const Scalar& c) : c(c) {}
  Scalar operator()(const Scalar& x) const { return c + x; }
  Scalar c;
};
template <typename Scalar>
struct const_minus_op {
  explicit const_minus_op(const Scalar& c) : c(c) {}
  Scalar operator()(const Scalar& x) const { return c - x; }
  Scalar c;
};
// exp(t - logz) · d
template <typename Scalar>
struct scalar_nlsoftmax_backward_op {
  scalar_nlsoftmax_backward_op(const Scalar& lz, const Scalar& err) : logz(lz), d(err) {}
  Scalar operator()(const Scalar& t) const { return std::exp(t - logz) * d; }
  Scalar logz, d;
};

}  // namespace dynet
