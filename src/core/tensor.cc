#include "dynet/tensor.h"

#include <cmath>
#include <ostream>
#include <stdexcept>

#include "core/device.h"

namespace dynet {

Tensor Tensor::batch_elem(size_t b) const {
  if (b >= d.bd && d.bd != 1)
    throw std::invalid_argument("Tensor::batch_elem: index " + std::to_string(b) + " out of range for " + d.str());
  return Tensor(d.single_batch(), batch_ptr(b), device, mem_pool);
}

std::vector<Tensor> Tensor::batch_elems() const {
  std::vector<Tensor> elems;
  elems.reserve(d.bd);
  for (size_t b = 0; b < d.bd; ++b) elems.push_back(batch_elem(b));
  return elems;
}

// Values of tensors on other devices are read through a host copy (host_values).
bool Tensor::is_valid() const {
  std::vector<float> buf;
  const float* x = host_values(*this, &buf);
  const size_t n = d.size();
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

float as_scalar(const Tensor& t) {
  if (t.d.size() != 1)
    throw std::invalid_argument("as_scalar: tensor has " + std::to_string(t.d.size()) + " elements " + t.d.str() +
                                ", expected 1");
  if (detail::host_addressable(t.device)) return t.v[0];
  float x;
  t.device->copy_to_host(&x, t.v, sizeof(float));
  return x;
}

std::vector<float> as_vector(const Tensor& t) {
  if (detail::host_addressable(t.device)) return std::vector<float>(t.v, t.v + t.d.size());
  std::vector<float> r(t.d.size());
  t.device->copy_to_host(r.data(), t.v, r.size() * sizeof(float));
  return r;
}

std::vector<float> as_scale_vector(const Tensor& t, float scale) {
  std::vector<float> r = as_vector(t);
  for (float& x : r) x *= scale;
  return r;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  std::vector<float> buf;
  const float* x = host_values(t, &buf);
  os << t.d << " [";
  const size_t n = t.d.size();
  for (size_t i = 0; i < n; ++i) os << (i ? " " : "") << x[i];
  return os << ']';
}

}  // namespace dynet
