// The device-neutral math vocabulary (kernels/device/prims.h, namespace dynet::fn) over Eigen arrays, for
// the names Eigen does not define as free functions: with it, one elementwise row written in that
// vocabulary expands into the CPU's Eigen expression (vectorised as before) as well as the scalar
// device kernels. Eigen's own free functions (tanh, exp, square, ...) are found by argument-dependent lookup.
#pragma once

#include <Eigen/Core>

#include "kernels/device/prims.h"

namespace dynet::fn {

template <class D>
auto max(const Eigen::ArrayBase<D>& x, float c) {
  return x.derived().max(c);
}
template <class D>
auto min(const Eigen::ArrayBase<D>& x, float c) {
  return x.derived().min(c);
}
template <class D>
auto step(const Eigen::ArrayBase<D>& x) {
  return (x.derived() > 0.f).template cast<float>();
}
template <class C, class A, class B>
auto select(const Eigen::DenseBase<C>& c, const A& a, const B& b) {
  return c.derived().select(a, b);
}

}  // namespace dynet::fn
