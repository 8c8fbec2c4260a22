// Eigen views of tensors (DyNet's dynet/tensor-eigen.h): matrices and vectors (Eigen::Map) and
// Eigen::TensorMap views of a given order, for node code written in DyNet's style. Including this
// header makes Eigen (3.3 or later, with its unsupported Tensor module) a dependency of the
// including code; find_package(dynet) adds Eigen's include path when Eigen3 is found.
#pragma once

#if !__has_include(<Eigen/Core>) || !__has_include(<unsupported/Eigen/CXX11/Tensor>)
#error "dynet/tensor-eigen.h needs Eigen 3 on the include path (Debian: libeigen3-dev; CMake: find_package(Eigen3))"
#endif

#include <Eigen/Core>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>

#include "dynet/except.h"
#include "dynet/tensor.h"

namespace dynet {

namespace detail {
// The first `order` dims of d (1 past its rank), checking that d has no more than `order` dims
// that are not 1 (DyNet also accepted an order-1 view of a column stored as {n, 1, ...}).
template <int Order>
Eigen::DSizes<Eigen::DenseIndex, Order> eigen_dims(const char* fn, const Dim& d, bool batched) {
  Eigen::DSizes<Eigen::DenseIndex, Order> s;
  const int n = batched ? Order - 1 : Order;
  DYNET_ARG_CHECK(batched || d.bd == 1, fn << ": tensor " << d << " has several batch elements");
  for (unsigned k = static_cast<unsigned>(n > 0 ? n : 0); k < d.nd; ++k)
    DYNET_ARG_CHECK(d.d[k] == 1, fn << "<" << n << ">: tensor " << d << " has more dims than the view");
  for (int k = 0; k < n; ++k) s[k] = d[static_cast<unsigned>(k)];
  if (batched) s[Order - 1] = d.bd;
  return s;
}
}  // namespace detail

// The tensor as a rows x cols matrix (one batch element, at most two dims).
inline Eigen::Map<Eigen::MatrixXf> mat(const Tensor& t) {
  DYNET_ARG_CHECK(t.d.bd == 1 && t.d.nd < 3, "mat: tensor " << t.d << " is not a single matrix");
  return Eigen::Map<Eigen::MatrixXf>(t.v, t.d.rows(), t.d.cols());
}
// All values as one vector.
inline Eigen::Map<Eigen::VectorXf> vec(const Tensor& t) { return Eigen::Map<Eigen::VectorXf>(t.v, t.d.size()); }
// All values as an order-1 tensor.
inline Eigen::TensorMap<Eigen::Tensor<float, 1>> tvec(const Tensor& t) {
  return Eigen::TensorMap<Eigen::Tensor<float, 1>>(t.v, static_cast<Eigen::DenseIndex>(t.d.size()));
}
// (values of one batch element) x (batch elements).
inline Eigen::TensorMap<Eigen::Tensor<float, 2>> tbvec(const Tensor& t) {
  return Eigen::TensorMap<Eigen::Tensor<float, 2>>(t.v, t.d.batch_size(), t.d.bd);
}
// A view of order Order (the tensor's dims, padded with 1s; one batch element).
template <int Order>
Eigen::TensorMap<Eigen::Tensor<float, Order>> t(const Tensor& x) {
  return Eigen::TensorMap<Eigen::Tensor<float, Order>>(x.v, detail::eigen_dims<Order>("t", x.d, false));
}
// A view of order Order + 1 whose last dim is the batch.
template <int Order>
Eigen::TensorMap<Eigen::Tensor<float, Order + 1>> tb(const Tensor& x) {
  return Eigen::TensorMap<Eigen::Tensor<float, Order + 1>>(x.v, detail::eigen_dims<Order + 1>("tb", x.d, true));
}
// The same views of an IndexTensor.
template <int Order>
Eigen::TensorMap<Eigen::Tensor<Eigen::DenseIndex, Order>> t(IndexTensor& x) {
  return Eigen::TensorMap<Eigen::Tensor<Eigen::DenseIndex, Order>>(x.v.data(),
                                                                   detail::eigen_dims<Order>("t", x.d, false));
}
template <int Order>
Eigen::TensorMap<Eigen::Tensor<Eigen::DenseIndex, Order + 1>> tb(IndexTensor& x) {
  return Eigen::TensorMap<Eigen::Tensor<Eigen::DenseIndex, Order + 1>>(
      x.v.data(), detail::eigen_dims<Order + 1>("tb", x.d, true));
}
// Batch element bid as a rows x cols matrix (an unbatched tensor serves every bid).
inline Eigen::Map<Eigen::MatrixXf> batch_matrix(const Tensor& t, unsigned bid) {
  return Eigen::Map<Eigen::MatrixXf>(t.v + (bid % t.d.bd) * t.d.batch_size(), t.d.rows(), t.d.cols());
}
// (rows·cols) x (batch elements).
inline Eigen::Map<Eigen::MatrixXf> rowcol_matrix(const Tensor& t) {
  return Eigen::Map<Eigen::MatrixXf>(t.v, t.d.rows() * t.d.cols(), t.d.bd);
}
// rows x (cols·batch elements).
inline Eigen::Map<Eigen::MatrixXf> colbatch_matrix(const Tensor& t) {
  return Eigen::Map<Eigen::MatrixXf>(t.v, t.d.rows(), t.d.cols() * t.d.bd);
}

}  // namespace dynet
