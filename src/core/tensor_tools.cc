// TensorTools: in-place fills, element access and per-fiber reductions on CPU tensors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>

#include <Eigen/Core>
#include <Eigen/QR>

#include "dynet/globals.h"
#include "dynet/rand.h"
#include "dynet/tensor.h"

namespace dynet {
namespace {

using ArrMap = Eigen::Map<Eigen::ArrayXf, Eigen::Unaligned>;
using CArrMap = Eigen::Map<const Eigen::ArrayXf, Eigen::Unaligned>;

ArrMap values(const Tensor& t) { return ArrMap(t.v, t.d.size()); }
CArrMap cvalues(const Tensor& t) { return CArrMap(t.v, t.d.size()); }

[[noreturn]] void fail(const char* fn, const std::string& msg) {
  throw std::invalid_argument(std::string("TensorTools::") + fn + ": " + msg);
}

void check_index(const char* fn, const Tensor& t, int index) {
  if (index < 0 || unsigned(index) >= t.d.size())
    fail(fn, "index " + std::to_string(index) + " out of range for a tensor " + t.d.str() + " of " +
                 std::to_string(t.d.size()) + " elements");
}

void check_same_size(const char* fn, const Tensor& a, const Tensor& b) {
  if (a.d.size() != b.d.size())
    fail(fn, "sizes differ: " + a.d.str() + " (" + std::to_string(a.d.size()) + " elements) vs " + b.d.str() + " (" +
                 std::to_string(b.d.size()) + ")");
}

void check_square(const char* fn, const Tensor& t) {
  if (t.d.nd != 2 || t.d[0] != t.d[1]) fail(fn, "needs a square matrix, got " + t.d.str());
}

// A tensor seen as [inner, n, outer] around dim `dim`; outer includes the batch.
struct Fibers {
  size_t inner = 1, n = 1, outer = 1;
};
Fibers fibers(const char* fn, const Dim& d, unsigned dim) {
  if (dim >= d.nd) fail(fn, "dim " + std::to_string(dim) + " out of range for " + d.str());
  Fibers f;
  for (size_t k = 0; k < d.nd; ++k) {
    if (k < dim)
      f.inner *= d.d[k];
    else if (k == dim)
      f.n = d.d[k];
    else
      f.outer *= d.d[k];
  }
  f.outer *= d.bd;
  return f;
}

// The result of a per-fiber selection of `num` indices: v's dims with dim `dim` of size num.
IndexTensor index_result(const char* fn, const Tensor& v, unsigned dim, unsigned num, const Fibers& f) {
  if (num == 0) fail(fn, "num must be at least 1");
  IndexTensor r;
  r.d = v.d;
  r.d.d[dim] = num;
  r.v.resize(f.inner * num * f.outer);
  r.device = v.device;
  return r;
}

// For each fiber, the num largest values' indices in descending order (stable: earlier first on ties).
IndexTensor top_indices(const char* fn, const Tensor& v, unsigned dim, unsigned num) {
  const Fibers f = fibers(fn, v.d, dim);
  if (num > f.n)
    fail(fn, "num = " + std::to_string(num) + " exceeds the size " + std::to_string(f.n) + " of dim " +
                 std::to_string(dim) + " of " + v.d.str());
  IndexTensor r = index_result(fn, v, dim, num, f);
  std::vector<unsigned> order(f.n);
  for (size_t o = 0; o < f.outer; ++o)
    for (size_t i = 0; i < f.inner; ++i) {
      const float* x = v.v + o * f.n * f.inner + i;
      auto at = [&](unsigned k) { return x[k * f.inner]; };
      std::iota(order.begin(), order.end(), 0u);
      if (num == 1) {
        order[0] = unsigned(std::max_element(order.begin(), order.end(),
                                             [&](unsigned a, unsigned b) { return at(a) < at(b); }) -
                            order.begin());
      } else {
        std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) { return at(a) > at(b); });
      }
      for (size_t k = 0; k < num; ++k) r.v[(o * num + k) * f.inner + i] = order[k];
    }
  return r;
}

}  // namespace

std::vector<Eigen::DenseIndex> as_vector(const IndexTensor& v) { return v.v; }

std::ostream& operator<<(std::ostream& os, const IndexTensor& t) {
  os << t.d << " [";
  for (size_t i = 0; i < t.v.size(); ++i) os << (i ? " " : "") << t.v[i];
  return os << ']';
}

void TensorTools::clip(Tensor& d, float left, float right) {
  if (!(left <= right)) fail("clip", "empty range [" + std::to_string(left) + ", " + std::to_string(right) + "]");
  values(d) = cvalues(d).max(left).min(right);
}

void TensorTools::scale(Tensor& x, float left, float right) { values(x) = cvalues(x) * (right - left) + left; }

void TensorTools::uniform_to_bernoulli(Tensor& x, float p) { values(x) = (cvalues(x) < p).cast<float>(); }

void TensorTools::constant(Tensor& d, float c) { values(d).setConstant(c); }

void TensorTools::zero(Tensor& d) { values(d).setZero(); }

void TensorTools::identity(Tensor& val) {
  check_square("identity", val);
  const size_t n = val.d[0];
  for (size_t b = 0; b < val.d.bd; ++b)
    Eigen::Map<Eigen::MatrixXf>(val.batch_ptr(b), n, n).setIdentity();
}

void TensorTools::randomize_bernoulli(Tensor& val, float p, float scale) {
  if (!(p >= 0.f && p <= 1.f)) fail("randomize_bernoulli", "p must be in [0, 1], got " + std::to_string(p));
  std::bernoulli_distribution draw(p);
  auto& rng = random_engine();
  for (size_t k = 0; k < val.d.size(); ++k) val.v[k] = draw(rng) ? scale : 0.f;
}

void TensorTools::randomize_normal(Tensor& val, float mean, float stddev) {
  if (!(stddev >= 0.f)) fail("randomize_normal", "stddev must be >= 0, got " + std::to_string(stddev));
  if (stddev == 0.f) return constant(val, mean);
  std::normal_distribution<float> draw(mean, stddev);
  auto& rng = random_engine();
  for (size_t k = 0; k < val.d.size(); ++k) val.v[k] = draw(rng);
}

void TensorTools::randomize_uniform(Tensor& val, float left, float right) {
  if (!(left < right))
    fail("randomize_uniform", "empty interval [" + std::to_string(left) + ", " + std::to_string(right) + ")");
  std::uniform_real_distribution<float> draw(left, right);
  auto& rng = random_engine();
  for (size_t k = 0; k < val.d.size(); ++k) val.v[k] = draw(rng);
}

// Q of the QR decomposition of a standard Gaussian matrix, with each column's sign flipped to make
// R's diagonal positive, is distributed uniformly (Haar) over the orthogonal matrices; without the
// sign fix the distribution would be biased by the Householder convention.
void TensorTools::randomize_orthonormal(Tensor& val, float scale) {
  check_square("randomize_orthonormal", val);
  const size_t n = val.d[0];
  std::normal_distribution<double> draw(0.0, 1.0);
  auto& rng = random_engine();
  for (size_t b = 0; b < val.d.bd; ++b) {
    Eigen::MatrixXd g(n, n);
    for (size_t k = 0; k < n * n; ++k) g.data()[k] = draw(rng);
    Eigen::HouseholderQR<Eigen::MatrixXd> qr(g);
    Eigen::MatrixXd q = qr.householderQ();
    const Eigen::MatrixXd& r = qr.matrixQR();
    for (size_t c = 0; c < n; ++c)
      if (r(c, c) < 0) q.col(c) = -q.col(c);
    Eigen::Map<Eigen::MatrixXf>(val.batch_ptr(b), n, n) = (q * double(scale)).cast<float>();
  }
}

float TensorTools::access_element(const Tensor& v, int index) {
  check_index("access_element", v, index);
  return v.v[index];
}

float TensorTools::access_element(const Tensor& v, const Dim& index) {
  if (index.nd > DYNET_MAX_TENSOR_DIM) fail("access_element", "bad index " + index.str());
  size_t offset = 0, stride = 1;
  for (size_t k = 0; k < std::max(index.nd, v.d.nd); ++k) {
    const unsigned c = k < index.nd ? index.d[k] : 0;
    if (c >= v.d[k]) fail("access_element", "index " + index.str() + " out of range for a tensor " + v.d.str());
    offset += c * stride;
    stride *= v.d[k];
  }
  return v.v[offset];
}

void TensorTools::set_element(const Tensor& v, int index, float value) {
  check_index("set_element", v, index);
  v.v[index] = value;
}

void TensorTools::copy_element(const Tensor& l, int lindex, Tensor& r, int rindex) {
  check_index("copy_element", l, lindex);
  check_index("copy_element", r, rindex);
  r.v[rindex] = l.v[lindex];
}

void TensorTools::set_elements(const Tensor& v, const std::vector<float>& vec) {
  if (vec.size() > v.d.size())
    fail("set_elements", std::to_string(vec.size()) + " values for a tensor " + v.d.str() + " of " +
                             std::to_string(v.d.size()) + " elements");
  if (!vec.empty()) std::memcpy(v.v, vec.data(), vec.size() * sizeof(float));
}

void TensorTools::copy_elements(Tensor& v, const Tensor& v_src) {
  if (v_src.d.size() < v.d.size())
    fail("copy_elements", "source " + v_src.d.str() + " has fewer elements than the destination " + v.d.str());
  if (v.v != v_src.v && v.d.size()) std::memmove(v.v, v_src.v, v.d.size() * sizeof(float));
}

void TensorTools::accumulate(Tensor& v, const Tensor& v_src) {
  check_same_size("accumulate", v, v_src);
  values(v) += cvalues(v_src);
}

void TensorTools::logsumexp(const Tensor& x, Tensor& m, Tensor& z, unsigned d) {
  const Fibers f = fibers("logsumexp", x.d, d);
  const size_t out = f.inner * f.outer;
  if (m.d.size() != out || z.d.size() != out)
    fail("logsumexp", "m " + m.d.str() + " and z " + z.d.str() + " must have " + std::to_string(out) +
                          " elements (" + x.d.str() + " reduced along dim " + std::to_string(d) + ")");
  for (size_t o = 0; o < f.outer; ++o)
    for (size_t i = 0; i < f.inner; ++i) {
      const float* xs = x.v + o * f.n * f.inner + i;
      const size_t j = o * f.inner + i;
      float mx = -std::numeric_limits<float>::infinity();
      for (size_t k = 0; k < f.n; ++k) mx = std::max(mx, xs[k * f.inner]);
      m.v[j] = mx;
      if (std::isinf(mx)) {  // all -inf (log 0) or some +inf: the max is the answer, not NaN
        z.v[j] = mx;
        continue;
      }
      double s = 0;
      for (size_t k = 0; k < f.n; ++k) s += std::exp(double(xs[k * f.inner]) - mx);
      z.v[j] = mx + float(std::log(s));
    }
}

IndexTensor TensorTools::argmax(const Tensor& v, unsigned dim, unsigned num) {
  return top_indices("argmax", v, dim, num);
}

namespace {
// out[j] ← the value of v that index r.v[j] of a topk/argmax result along dim picks.
void gather_top_values(const Tensor& v, const IndexTensor& r, unsigned dim, unsigned num, float* out) {
  const Fibers f = fibers("topk", v.d, dim);
  for (size_t o = 0; o < f.outer; ++o)
    for (size_t k = 0; k < num; ++k)
      for (size_t i = 0; i < f.inner; ++i) {
        const size_t j = (o * num + k) * f.inner + i;
        out[j] = v.v[(o * f.n + size_t(r.v[j])) * f.inner + i];
      }
}
}  // namespace

std::pair<Tensor, IndexTensor> TensorTools::topk(const Tensor& v, unsigned dim, unsigned num) {
  IndexTensor r = top_indices("topk", v, dim, num);
  r.topk_values = std::make_shared<std::vector<float>>(r.v.size());
  gather_top_values(v, r, dim, num, r.topk_values->data());
  const Tensor values(r.d, r.topk_values->data(), v.device, DeviceMempool::NONE);
  return {values, std::move(r)};
}

IndexTensor TensorTools::topk(const Tensor& v, Tensor& values, unsigned dim, unsigned num) {
  IndexTensor r = top_indices("topk", v, dim, num);
  if (values.d.size() != r.v.size())
    fail("topk", "values " + values.d.str() + " must have " + std::to_string(r.v.size()) + " elements (result " +
                     r.d.str() + ")");
  gather_top_values(v, r, dim, num, values.v);
  return r;
}

// Gumbel-max: argmax_k (v_k + G_k), G_k = -ln(-ln U_k), is distributed as softmax(v).
IndexTensor TensorTools::categorical_sample_log_prob(const Tensor& v, unsigned dim, unsigned num) {
  const char* fn = "categorical_sample_log_prob";
  const Fibers f = fibers(fn, v.d, dim);
  IndexTensor r = index_result(fn, v, dim, num, f);
  // (0, 1): U = 0 would give an infinite perturbation
  std::uniform_real_distribution<double> uniform(std::numeric_limits<double>::min(), 1.0);
  auto& rng = random_engine();
  for (size_t o = 0; o < f.outer; ++o)
    for (size_t s = 0; s < num; ++s)
      for (size_t i = 0; i < f.inner; ++i) {
        const float* x = v.v + o * f.n * f.inner + i;
        double best = -std::numeric_limits<double>::infinity();
        std::ptrdiff_t arg = 0;
        for (size_t k = 0; k < f.n; ++k) {
          const double perturbed = double(x[k * f.inner]) - std::log(-std::log(uniform(rng)));
          if (perturbed > best) {
            best = perturbed;
            arg = std::ptrdiff_t(k);
          }
        }
        r.v[(o * num + s) * f.inner + i] = arg;
      }
  return r;
}

int draw_random_seed() {
  std::random_device rd;
  return static_cast<int>(rd() & 0x7fffffff);
}

float rand01() {
  std::uniform_real_distribution<float> u(0.f, 1.f);
  return u(random_engine());
}

int rand0n(int n) {
  if (n <= 0) throw std::invalid_argument("rand0n: n must be positive, got " + std::to_string(n));
  std::uniform_int_distribution<int> u(0, n - 1);
  return u(random_engine());
}

float rand_normal() {
  std::normal_distribution<float> g(0.f, 1.f);
  return g(random_engine());
}

}  // namespace dynet
