// Tensor: a view of column-major float storage with a Dim (batch elements are contiguous blocks).
#pragma once

#include <cassert>  // DyNet's tensor.h brought in Eigen, and with it assert, which DyNet programs use
#include <cstddef>
#include <iosfwd>
#include <utility>
#include <vector>

#include "dynet/device-structs.h"
#include "dynet/dim.h"
#include "dynet/index-tensor.h"

namespace dynet {

typedef float real;
struct Device;

struct Tensor {
  Dim d;
  float* v = nullptr;
  Device* device = nullptr;
  DeviceMempool mem_pool = DeviceMempool::NONE;

  Tensor() = default;
  Tensor(const Dim& dim, float* data, Device* dev = nullptr, DeviceMempool pool = DeviceMempool::NONE)
      : d(dim), v(data), device(dev), mem_pool(pool) {}

  // pointer to the start of batch element b (element 0 when the tensor is unbatched)
  float* batch_ptr(size_t b) const { return v + (d.bd == 1 ? 0 : b * d.batch_size()); }
  // a view of batch element b
  Tensor batch_elem(size_t b) const;
  // views of every batch element (one, the tensor itself, when it is unbatched)
  std::vector<Tensor> batch_elems() const;
  bool is_valid() const;  // no NaN or Inf
};

// The single value of a one-element tensor.
float as_scalar(const Tensor& t);
// All values, column-major, batch last.
std::vector<float> as_vector(const Tensor& t);
std::vector<float> as_scale_vector(const Tensor& t, float scale);
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// In-place tools on CPU tensors (DyNet's TensorTools). Bad sizes and indices throw std::invalid_argument
// naming the function. Random values come from the calling thread's engine (random_engine()).
struct TensorTools {
  static void clip(Tensor& d, float left, float right);  // each value into [left, right]
  static void scale(Tensor& x, float left, float right);  // x ← left + x (right - left): [0, 1) onto [left, right)
  static void uniform_to_bernoulli(Tensor& x, float p);  // x ← x < p ? 1 : 0 (x uniform in [0, 1))
  static void constant(Tensor& d, float c);
  static void zero(Tensor& d);
  static void identity(Tensor& val);  // a square matrix {n,n} (each batch element) ← I
  static void randomize_bernoulli(Tensor& val, float p, float scale = 1.0f);  // scale with probability p, else 0
  static void randomize_normal(Tensor& val, float mean = 0.0f, float stddev = 1.0f);
  static void randomize_uniform(Tensor& val, float left = 0.0f, float right = 1.0f);  // DyNet's defaults
  // A square matrix ← scale · Q, Q uniformly random orthonormal (QR of a Gaussian matrix, signs fixed by R).
  static void randomize_orthonormal(Tensor& val, float scale = 1.0f);
  static float access_element(const Tensor& v, int index);  // v.v[index], bounds-checked
  // Element at coordinates index.d[k] along dim k (missing trailing coordinates are 0), batch element 0.
  static float access_element(const Tensor& v, const Dim& index);
  static void set_element(const Tensor& v, int index, float value);
  static void copy_element(const Tensor& l, int lindex, Tensor& r, int rindex);  // r[rindex] ← l[lindex]
  // The first vec.size() values ← vec (DyNet's copy); more values than v holds throw.
  static void set_elements(const Tensor& v, const std::vector<float>& vec);
  // All of v ← the first v.d.size() values of v_src (DyNet's copy); a smaller v_src throws.
  static void copy_elements(Tensor& v, const Tensor& v_src);
  static void accumulate(Tensor& v, const Tensor& v_src);                         // v += v_src, sizes equal
  // z ← log Σ exp(x) along dim d, per fiber (z has x's size over x.d[d]); m ← the fibers' maxima
  // (caller-provided scratch of z's size). As DyNet: the caller owns both outputs.
  static void logsumexp(const Tensor& x, Tensor& m, Tensor& z, unsigned d = 0);
  // Indices of the `num` largest values along `dim` in descending order (earlier index first on ties);
  // the result has v's dims with dim `dim` of size num. (DyNet implemented num = 1 only.)
  static IndexTensor argmax(const Tensor& v, unsigned dim = 0, unsigned num = 1);
  // The `num` largest values along `dim` and their indices (as argmax). The values Tensor views
  // floats owned by the IndexTensor beside it (IndexTensor::topk_values): keep the pair, or that
  // IndexTensor, while using them.
  static std::pair<Tensor, IndexTensor> topk(const Tensor& v, unsigned dim = 0, unsigned num = 1);
  // Same, and their values into `values` (caller-provided, of the result's size).
  static IndexTensor topk(const Tensor& v, Tensor& values, unsigned dim = 0, unsigned num = 1);
  // `num` independent draws per fiber along `dim` from the categorical distribution with (possibly
  // unnormalized) log-probabilities v, by the Gumbel-max trick; laid out as argmax's result.
  static IndexTensor categorical_sample_log_prob(const Tensor& v, unsigned dim = 0, unsigned num = 1);

  // DyNet's forms for a known device (node code calls them with its `dev`): every tensor is on the CPU
  // here, so each is the function above.
  template <class MyDevice>
  static void clip_dev(const MyDevice&, Tensor& d, float left, float right) { clip(d, left, right); }
  template <class MyDevice>
  static void constant_dev(const MyDevice&, Tensor& d, float c) { constant(d, c); }
  template <class MyDevice>
  static void accumulate_dev(const MyDevice&, Tensor& v, const Tensor& v_src) { accumulate(v, v_src); }
  template <class MyDevice>
  static void scale_dev(const MyDevice&, Tensor& x, float a, float b) { scale(x, a, b); }
  template <class MyDevice>
  static void uniform_to_bernoulli_dev(const MyDevice&, Tensor& x, float p) { uniform_to_bernoulli(x, p); }
  template <class MyDevice>
  static IndexTensor argmax_dev(const MyDevice&, const Tensor& v, unsigned dim = 0, unsigned num = 1) {
    return argmax(v, dim, num);
  }
  template <class MyDevice>
  static IndexTensor categorical_sample_log_prob_dev(const MyDevice&, const Tensor& v, unsigned dim = 0,
                                                     unsigned num = 1) {
    return categorical_sample_log_prob(v, dim, num);
  }
  template <class MyDevice>
  static void logsumexp_dev(const MyDevice&, const Tensor& x, Tensor& m, Tensor& z, unsigned d = 0) {
    logsumexp(x, m, z, d);
  }
};

float rand01();          // uniform in [0, 1)
int rand0n(int n);       // uniform in {0, ..., n-1}; n must be positive
float rand_normal();     // standard normal

}  // namespace dynet
