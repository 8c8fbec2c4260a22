// DyNet's matrix-product helpers for node code (dynet/matrix-multiply.h), on the CPU through Eigen.
// Batch rules as DyNet's: an unbatched left factor multiplies every batch element of the right one.
// (Like DyNet's, the function MatrixMultiply hides the node name of dynet/nodes.h where both are seen.)
#pragma once

#include <algorithm>

#include "dynet/devices.h"
#include "dynet/tensor-eigen.h"

namespace dynet {

// y = l · r + acc_scalar · y
inline void MatrixMultiply(const Device_CPU&, const Tensor& l, const Tensor& r, Tensor& y, const float* acc_scalar) {
  vec(y) *= *acc_scalar;
  if (l.d.bd == 1 && r.d.bd == y.d.bd) {
    colbatch_matrix(y).noalias() += mat(l) * colbatch_matrix(r);
  } else {
    DYNET_ARG_CHECK(l.d.bd == r.d.bd || l.d.bd == 1 || r.d.bd == 1,
                    "MatrixMultiply: batch sizes " << l.d.bd << " and " << r.d.bd << " do not match");
    for (unsigned b = 0; b < y.d.bd; ++b) batch_matrix(y, b).noalias() += batch_matrix(l, b) * batch_matrix(r, b);
  }
}

// y += lᵀ · r
inline void MatrixTranspMultiplyAcc(const Device_CPU&, const Tensor& l, const Tensor& r, Tensor& y) {
  if (l.d.bd == 1 && y.d.bd == r.d.bd) {
    colbatch_matrix(y).noalias() += mat(l).transpose() * colbatch_matrix(r);
  } else {
    for (unsigned b = 0; b < std::max(l.d.bd, r.d.bd); ++b)
      batch_matrix(y, b).noalias() += batch_matrix(l, b).transpose() * batch_matrix(r, b);
  }
}

// y += l · rᵀ (summed over the batch when y is unbatched)
inline void MatrixMultiplyTranspAcc(const Device_CPU&, const Tensor& l, const Tensor& r, Tensor& y) {
  if (y.d.bd == 1 && l.d.bd == r.d.bd) {
    mat(y).noalias() += colbatch_matrix(l) * colbatch_matrix(r).transpose();
  } else {
    for (unsigned b = 0; b < std::max(l.d.bd, r.d.bd); ++b)
      batch_matrix(y, b).noalias() += batch_matrix(l, b) * batch_matrix(r, b).transpose();
  }
}

}  // namespace dynet
