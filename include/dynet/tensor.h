// Tensor: a view of column-major float storage with a Dim (batch elements are contiguous blocks).
#pragma once

#include <iosfwd>
#include <vector>

#include "dynet/dim.h"

namespace dynet {

struct Device;
enum class DeviceMempool { FXS = 0, DEDFS = 1, PS = 2, SCS = 3, NONE = 4 };

struct Tensor {
  Dim d;
  float* v = nullptr;
  Device* device = nullptr;
  DeviceMempool mem_pool = DeviceMempool::NONE;

  Tensor() = default;
  Tensor(const Dim& dim, float* data, Device* dev = nullptr, DeviceMempool pool = DeviceMempool::NONE)
      : d(dim), v(data), device(dev), mem_pool(pool) {}

  // pointer to the start of batch element b (element 0 when the tensor is unbatched)
  float* batch_ptr(unsigned b) const { return v + (d.bd == 1 ? 0 : b * d.batch_size()); }
  // a view of batch element b
  Tensor batch_elem(unsigned b) const;
  bool is_valid() const;  // no NaN or Inf
};

// The single value of a one-element tensor.
float as_scalar(const Tensor& t);
// All values, column-major, batch last.
std::vector<float> as_vector(const Tensor& t);
std::vector<float> as_scale_vector(const Tensor& t, float scale);
std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace dynet
