// Declarations for nodes written in DyNet's style (dynet/nodes-def-macros.h): inside a Node subclass,
// DYNET_NODE_DEFINE_DEV_IMPL() declares as_string, dim_forward, forward_impl and backward_impl, and
// the per-device templates forward_dev_impl / backward_dev_impl that DYNET_NODE_INST_DEV_IMPL
// (dynet/nodes-impl-macros.h) connects to them.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "dynet/dim.h"
#include "dynet/except.h"

namespace dynet {

// A dim with at most one dimension larger than 1, the first (a column vector).
inline bool LooksLikeVector(const Dim& d) {
  for (unsigned i = 1; i < d.ndims(); ++i)
    if (d[i] != 1) return false;
  return true;
}

// "[a,b,c]" and "[[a,b],[c]]"
template <class T>
std::string print_vec(const std::vector<T>& vec) {
  std::ostringstream oss;
  oss << '[';
  for (size_t i = 0; i < vec.size(); ++i) oss << (i ? "," : "") << vec[i];
  oss << ']';
  return oss.str();
}
template <class T>
std::string print_vecs(const std::vector<std::vector<T>>& vecs) {
  std::string s = "[";
  for (size_t i = 0; i < vecs.size(); ++i) s += (i ? "," : "") + print_vec(vecs[i]);
  return s + "]";
}

}  // namespace dynet

#define DYNET_NODE_DEFINE_DEV_IMPL()                                                                  \
  std::string as_string(const std::vector<std::string>& arg_names) const override;                    \
  Dim dim_forward(const std::vector<Dim>& xs) const override;                                          \
  void forward_impl(const std::vector<const Tensor*>& xs, Tensor& fx) const override;                  \
  template <class MyDevice>                                                                            \
  void forward_dev_impl(const MyDevice& dev, const std::vector<const Tensor*>& xs, Tensor& fx) const;  \
  void backward_impl(const std::vector<const Tensor*>& xs, const Tensor& fx, const Tensor& dEdf, unsigned i, \
                     Tensor& dEdxi) const override;                                                    \
  template <class MyDevice>                                                                            \
  void backward_dev_impl(const MyDevice& dev, const std::vector<const Tensor*>& xs, const Tensor& fx,  \
                         const Tensor& dEdf, unsigned i, Tensor& dEdxi) const;
