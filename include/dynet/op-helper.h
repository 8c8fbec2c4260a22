// Helpers for complex node code (DyNet's dynet/op-helper.h): a bump allocator over a node's aux
// memory and the layout changes its convolution code used (column-major; H, W, C and N are height,
// width, channels and batch).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "dynet/tensor.h"

namespace dynet {

class NodeMemPool {
 public:
  NodeMemPool() = default;
  NodeMemPool(size_t capacity, void* mem) : capacity_(capacity), mem_(mem) {}
  // nbytes from the block; throws std::runtime_error when it does not fit.
  void* allocate(size_t nbytes) {
    if (used_ + nbytes > capacity_)
      throw std::runtime_error("NodeMemPool::allocate: " + std::to_string(nbytes) + " bytes do not fit (" +
                               std::to_string(capacity_ - used_) + " left)");
    void* p = static_cast<char*>(mem_) + used_;
    used_ += nbytes;
    return p;
  }
  void free() { used_ = 0; }
  void* head() { return mem_; }
  size_t size() { return capacity_; }
  size_t used() { return used_; }

 private:
  size_t capacity_ = 0;
  size_t used_ = 0;
  void* mem_ = nullptr;
};

namespace detail {
// The input's four extents (the fourth is its last dim for 4-d tensors, else the batch).
inline void extents4(const Tensor& t, unsigned e[4]) {
  for (unsigned k = 0; k < 3; ++k) e[k] = t.d[k];
  e[3] = t.d.nd == 4 ? t.d[3] : t.d.bd;
}
// out ← in with axes permuted: out axis k is in axis perm[k].
inline void permute4(const Tensor& in, Tensor& out, const unsigned perm[4]) {
  unsigned e[4];
  extents4(in, e);
  unsigned oe[4], stride[4] = {1, e[0], e[0] * e[1], e[0] * e[1] * e[2]};
  for (unsigned k = 0; k < 4; ++k) oe[k] = e[perm[k]];
  size_t o = 0;
  for (unsigned i3 = 0; i3 < oe[3]; ++i3)
    for (unsigned i2 = 0; i2 < oe[2]; ++i2)
      for (unsigned i1 = 0; i1 < oe[1]; ++i1)
        for (unsigned i0 = 0; i0 < oe[0]; ++i0)
          out.v[o++] = in.v[i0 * stride[perm[0]] + i1 * stride[perm[1]] + i2 * stride[perm[2]] + i3 * stride[perm[3]]];
}
}  // namespace detail

template <class MyDevice>
struct HWCNToCHWN {
  void operator()(const Tensor* in, Tensor& out, const MyDevice&) {
    const unsigned perm[4] = {2, 0, 1, 3};
    detail::permute4(*in, out, perm);
  }
};
template <class MyDevice>
struct HWCNToNCHW {
  void operator()(const Tensor* in, Tensor& out, const MyDevice&) {
    const unsigned perm[4] = {3, 2, 0, 1};
    detail::permute4(*in, out, perm);
  }
};
template <class MyDevice>
struct CHWNToHWCN {
  void operator()(const Tensor* in, Tensor& out, const MyDevice&) {
    const unsigned perm[4] = {1, 2, 0, 3};
    detail::permute4(*in, out, perm);
  }
};
template <class MyDevice>
struct NCHWToHWCN {
  void operator()(const Tensor* in, Tensor& out, const MyDevice&) {
    const unsigned perm[4] = {2, 3, 1, 0};
    detail::permute4(*in, out, perm);
  }
};

}  // namespace dynet
