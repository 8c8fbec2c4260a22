// Eigen views of tensors for CPU kernels.
#pragma once

#include <Eigen/Core>

#include "dynet/tensor.h"

namespace dynet::cpu {

using ArrMap = Eigen::Map<Eigen::ArrayXf, Eigen::Unaligned>;
using CArrMap = Eigen::Map<const Eigen::ArrayXf, Eigen::Unaligned>;
using MatMap = Eigen::Map<Eigen::MatrixXf, Eigen::Unaligned>;
using CMatMap = Eigen::Map<const Eigen::MatrixXf, Eigen::Unaligned>;

// All elements (including the batch) as a flat array.
inline ArrMap arr(const Tensor& t) { return ArrMap(t.v, t.d.size()); }
inline CArrMap carr(const Tensor& t) { return CArrMap(t.v, t.d.size()); }
// rows x (cols * other dims) of batch element b (b ignored for unbatched tensors).
inline MatMap mat(const Tensor& t, size_t b = 0) {
  return MatMap(t.batch_ptr(b), t.d.rows(), t.d.batch_size() / (t.d.rows() ? t.d.rows() : 1));
}
inline CMatMap cmat(const Tensor& t, size_t b = 0) {
  return CMatMap(t.batch_ptr(b), t.d.rows(), t.d.batch_size() / (t.d.rows() ? t.d.rows() : 1));
}
// Batch element b as a flat array.
inline ArrMap barr(const Tensor& t, size_t b) { return ArrMap(t.batch_ptr(b), t.d.batch_size()); }
inline CArrMap cbarr(const Tensor& t, size_t b) { return CArrMap(t.batch_ptr(b), t.d.batch_size()); }

}  // namespace dynet::cpu
