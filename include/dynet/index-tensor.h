// IndexTensor: integer indices laid out like a Tensor (DyNet's dynet/index-tensor.h).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <utility>
#include <vector>

#include "dynet/device-structs.h"
#include "dynet/dim.h"

// DyNet's headers made Eigen's index type visible; declaring the same typedef Eigen declares keeps
// Eigen optional for programs that only name the type (it stays valid when Eigen is included too).
namespace Eigen {
#ifdef EIGEN_DEFAULT_DENSE_INDEX_TYPE
typedef EIGEN_DEFAULT_DENSE_INDEX_TYPE DenseIndex;
#else
typedef std::ptrdiff_t DenseIndex;
#endif
}  // namespace Eigen

namespace dynet {

struct Device;

// Column-major, batch last, e.g. TensorTools::argmax results. Unlike DyNet's, which points into a
// device pool, it owns its storage (v is a vector; v[i] and v.data() read as DyNet's pointer did),
// so a result never dangles. dynet/tensor-eigen.h has Eigen views t<N>/tb<N> of it.
struct IndexTensor {
  IndexTensor() = default;
  IndexTensor(const Dim& d, std::vector<Eigen::DenseIndex> v, Device* dev = nullptr,
              DeviceMempool mem = DeviceMempool::NONE)
      : d(d), v(std::move(v)), device(dev), mem_pool(mem) {}
  Dim d;
  std::vector<Eigen::DenseIndex> v;
  Device* device = nullptr;
  DeviceMempool mem_pool = DeviceMempool::NONE;
  // The floats of the values Tensor TensorTools::topk returns beside these indices (DyNet put them in
  // a scratch pool): they live as long as this IndexTensor or a copy of it.
  std::shared_ptr<std::vector<float>> topk_values;
};
std::vector<Eigen::DenseIndex> as_vector(const IndexTensor& v);
std::ostream& operator<<(std::ostream& os, const IndexTensor& t);

}  // namespace dynet
