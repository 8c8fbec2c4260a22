#include "dynet/tensor.h"

#include <cmath>
#include <ostream>
#include <stdexcept>

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

bool Tensor::is_valid() const {
  const size_t n = d.size();
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) return false;
  return true;
}

float as_scalar(const Tensor& t) {
  if (t.d.size() != 1)
    throw std::invalid_argument("as_scalar: tensor has " + std::to_string(t.d.size()) + " elements " + t.d.str() +
                                ", expected 1");
  return t.v[0];
}

std::vector<float> as_vector(const Tensor& t) { return std::vector<float>(t.v, t.v + t.d.size()); }

std::vector<float> as_scale_vector(const Tensor& t, float scale) {
  std::vector<float> r(t.v, t.v + t.d.size());
  for (float& x : r) x *= scale;
  return r;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  os << t.d << " [";
  const size_t n = t.d.size();
  for (size_t i = 0; i < n; ++i) os << (i ? " " : "") << t.v[i];
  return os << ']';
}

}  // namespace dynet
