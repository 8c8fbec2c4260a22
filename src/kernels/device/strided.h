// Broadcasting as strides: an elementwise op over operands whose dims broadcast to the output's is a loop
// over the output's axes (7 dims, then the batch), each operand stepping by its own stride (0 along axes
// where it has size 1). Axes that are contiguous for every operand are merged, so e.g. a bias {m} against
// {m,n,X b} is a 2-axis space. Built on the host; offsets() runs in device kernels too.
#pragma once

#include <array>
#include <cstddef>

#include "dynet/dim.h"
#include "kernels/device/prims.h"

namespace dynet::dev {

constexpr unsigned kAxes = DYNET_MAX_TENSOR_DIM + 1;

template <unsigned N>
struct StridedSpace {
  unsigned nax = 0;
  size_t size[kAxes];
  size_t stride[N][kAxes];
  // Element offsets of every operand for output element i (in the order of the merged axes).
  DYNET_HD void offsets(size_t i, size_t* off) const {
    for (unsigned k = 0; k < N; ++k) off[k] = 0;
    for (unsigned ax = 0; ax < nax; ++ax) {
      const size_t c = i % size[ax];
      i /= size[ax];
      for (unsigned k = 0; k < N; ++k) off[k] += c * stride[k][ax];
    }
  }
  // Whether operand k steps through memory one element per output element (no broadcasting).
  bool dense(unsigned k) const {
    size_t run = 1;
    for (unsigned ax = 0; ax < nax; ++ax) {
      if (stride[k][ax] != run) return false;
      run *= size[ax];
    }
    return true;
  }
};

inline unsigned axis_size(const Dim& d, unsigned ax) { return ax < DYNET_MAX_TENSOR_DIM ? d[ax] : d.bd; }

template <unsigned N>
StridedSpace<N> strided_space(const Dim& out, const std::array<const Dim*, N>& dims) {
  StridedSpace<N> s;
  size_t run[N];
  for (size_t k = 0; k < N; ++k) run[k] = 1;
  for (size_t ax = 0; ax < kAxes; ++ax) {
    const size_t n = axis_size(out, ax);
    size_t st[N];
    for (size_t k = 0; k < N; ++k) {
      const unsigned dk = axis_size(*dims[k], ax);
      st[k] = dk == 1 ? 0 : run[k];
      run[k] *= dk;
    }
    if (n == 1) continue;
    bool merge = s.nax > 0;
    for (size_t k = 0; k < N && merge; ++k) merge = st[k] == s.stride[k][s.nax - 1] * s.size[s.nax - 1];
    if (merge) {
      s.size[s.nax - 1] *= n;
      continue;
    }
    s.size[s.nax] = n;
    for (size_t k = 0; k < N; ++k) s.stride[k][s.nax] = st[k];
    ++s.nax;
  }
  if (s.nax == 0) {  // a single element
    s.size[0] = 1;
    for (size_t k = 0; k < N; ++k) s.stride[k][0] = 0;
    s.nax = 1;
  }
  return s;
}

// A tensor seen as [inner, n, outer] around dim `axis`; outer includes the batch when `with_batch`.
struct Fibers {
  size_t inner = 1, n = 1, outer = 1;
};
inline Fibers fibers(const Dim& d, unsigned axis, bool with_batch = true) {
  Fibers f;
  for (size_t k = 0; k < d.nd; ++k) {
    if (k < axis)
      f.inner *= d.d[k];
    else if (k == axis)
      f.n = d.d[k];
    else
      f.outer *= d.d[k];
  }
  if (with_batch) f.outer *= d.bd;
  return f;
}

}  // namespace dynet::dev
