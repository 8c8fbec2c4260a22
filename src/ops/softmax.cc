// Softmax family and the log-softmax loss: softmax along any dim, log_softmax of columns,
// elementwise logsumexp over a list, pickneglogsoftmax (one index, or one per batch element).
#include <cmath>

#include "core/mem.h"
#include "ops/common.h"

namespace dynet {
namespace {

using Xs = const std::vector<Expression>&;
using ArrayMap = Eigen::Map<Eigen::ArrayXf, Eigen::Unaligned>;
using CArrayMap = Eigen::Map<const Eigen::ArrayXf, Eigen::Unaligned>;
using Array2Map = Eigen::Map<Eigen::ArrayXXf, Eigen::Unaligned>;
using CArray2Map = Eigen::Map<const Eigen::ArrayXXf, Eigen::Unaligned>;

// Batch element of argument x that output batch element b reads, for an output with B batch
// elements: an unbatched argument is shared; when several same-signature nodes run as one, an
// argument with fewer batch elements than the output is repeated in equal blocks.
inline unsigned arg_batch(const Dim& x, unsigned b, unsigned B) { return x.bd == 1 ? 0 : b / (B / x.bd); }

// A tensor seen as [inner, n, outer] around axis `axis` (batch folded into outer).
struct Fibers {
  unsigned inner = 1, n = 1, outer = 1;
};
Fibers fibers(const Dim& d, unsigned axis) {
  Fibers f;
  for (unsigned k = 0; k < d.nd; ++k) {
    if (k < axis)
      f.inner *= d.d[k];
    else if (k == axis)
      f.n = d.d[k];
    else
      f.outer *= d.d[k];
  }
  f.outer *= d.bd;
  return f;
}

// ---------------------------------------------------------------------------------------------
// softmax(x, d): exp(x) / Σ exp(x) along dim d.
Dim softmax_shape(const ArgDims& xs, AttrView a) {
  const unsigned d = a.as<unsigned>();
  if (d >= DYNET_MAX_TENSOR_DIM)
    op_error("softmax", "dim " + std::to_string(d) + " out of range for input " + xs[0].str());
  return xs[0];
}
void softmax_fwd(const ForwardArgs& a) {
  const Fibers f = fibers(a.fx.d, a.attr.as<unsigned>());
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  if (f.inner == 1) {
    for (unsigned o = 0; o < f.outer; ++o) {
      CArrayMap xc(x + size_t(o) * f.n, f.n);
      ArrayMap yc(y + size_t(o) * f.n, f.n);
      yc = (xc - xc.maxCoeff()).exp();
      yc /= yc.sum();
    }
    return;
  }
  ArrayMap m(a.scratch.allocate_floats(f.inner), f.inner);
  ArrayMap s(a.scratch.allocate_floats(f.inner), f.inner);
  const size_t block = size_t(f.inner) * f.n;
  for (unsigned o = 0; o < f.outer; ++o) {
    CArray2Map xb(x + o * block, f.inner, f.n);
    Array2Map yb(y + o * block, f.inner, f.n);
    m = xb.rowwise().maxCoeff();
    yb = (xb.colwise() - m).exp();
    s = yb.rowwise().sum();
    yb.colwise() /= s;
  }
}
// dx += y ⊙ (g - Σ g ⊙ y) along each fiber
void softmax_bwd(const BackwardArgs& a) {
  const Fibers f = fibers(a.fx.d, a.attr.as<unsigned>());
  const float* y = a.fx.v;
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  if (f.inner == 1) {
    for (unsigned o = 0; o < f.outer; ++o) {
      const size_t off = size_t(o) * f.n;
      CArrayMap yc(y + off, f.n), gc(g + off, f.n);
      const float dot = (yc * gc).sum();
      ArrayMap(dx + off, f.n) += yc * (gc - dot);
    }
    return;
  }
  ArrayMap dot(a.scratch.allocate_floats(f.inner), f.inner);
  const size_t block = size_t(f.inner) * f.n;
  for (unsigned o = 0; o < f.outer; ++o) {
    CArray2Map yb(y + o * block, f.inner, f.n), gb(g + o * block, f.inner, f.n);
    dot = (yb * gb).rowwise().sum();
    Array2Map(dx + o * block, f.inner, f.n) += yb * (gb.colwise() - dot);
  }
}
std::vector<OpSample> softmax_samples() {
  auto along = [](unsigned d) {
    return [d](ComputationGraph&, Xs x) { return softmax(x[0], d); };
  };
  return {{"vector", {Dim({5})}, along(0), -2, 2},
          {"matrix", {Dim({4, 3})}, along(0), -2, 2},
          {"matrix_dim1", {Dim({3, 4})}, along(1), -2, 2},
          {"tensor_dim1", {Dim({2, 3, 4})}, along(1), -2, 2},
          {"batched", {Dim({3, 2}, 3)}, along(0), -2, 2},
          {"batched_dim1", {Dim({3, 2}, 2)}, along(1), -2, 2},
          {"bad_dim", {Dim({3})}, along(DYNET_MAX_TENSOR_DIM), -1, 1, true}};
}
const OpId k_softmax = register_op({.name = "softmax",
                                    .shape = softmax_shape,
                                    .forward = softmax_fwd,
                                    .backward = softmax_bwd,
                                    .batch = {.batchable = true},
                                    .samples = softmax_samples});

// ---------------------------------------------------------------------------------------------
// log_softmax(x): x - log Σ exp(x) for each column.
void log_softmax_fwd(const ForwardArgs& a) {
  const Fibers f = fibers(a.fx.d, 0);
  for (unsigned o = 0; o < f.outer; ++o) {
    const size_t off = size_t(o) * f.n;
    CArrayMap xc(a.xs[0].v + off, f.n);
    ArrayMap yc(a.fx.v + off, f.n);
    const float m = xc.maxCoeff();
    yc = xc - m;
    yc -= std::log(yc.exp().sum());
  }
}
// dx += g - softmax(x) Σ g
void log_softmax_bwd(const BackwardArgs& a) {
  const Fibers f = fibers(a.fx.d, 0);
  for (unsigned o = 0; o < f.outer; ++o) {
    const size_t off = size_t(o) * f.n;
    CArrayMap yc(a.fx.v + off, f.n), gc(a.dEdf.v + off, f.n);
    ArrayMap(a.dEdxi.v + off, f.n) += gc - yc.exp() * gc.sum();
  }
}
std::vector<OpSample> log_softmax_samples() {
  auto build = [](ComputationGraph&, Xs x) { return log_softmax(x[0]); };
  return {{"vector", {Dim({5})}, build, -2, 2},
          {"matrix", {Dim({4, 3})}, build, -2, 2},
          {"batched", {Dim({4}, 3)}, build, -2, 2}};
}
const OpId k_log_softmax = register_op({.name = "log_softmax",
                                        .shape = ops::same_shape,
                                        .forward = log_softmax_fwd,
                                        .backward = log_softmax_bwd,
                                        .batch = {.batchable = true},
                                        .samples = log_softmax_samples});

// ---------------------------------------------------------------------------------------------
// logsumexp({x_1..x_k}): log Σ_i exp(x_i), elementwise; the batch broadcasts.
Dim logsumexp_shape(const ArgDims& xs, AttrView) {
  Dim out = xs[0];
  for (unsigned i = 1; i < xs.size(); ++i) {
    if (xs[i].single_batch() != xs[0].single_batch())
      op_error("logsumexp", "arguments must have the same shape, got " + xs[0].str() + " and " + xs[i].str());
    out.bd = ops::broadcast_bd("logsumexp", out, xs[i]);
  }
  return out;
}
void logsumexp_fwd(const ForwardArgs& a) {
  const unsigned B = a.fx.d.bd, bs = a.fx.d.batch_size();
  ArrayMap s(a.scratch.allocate_floats(bs), bs);
  for (unsigned b = 0; b < B; ++b) {
    ArrayMap y(a.fx.batch_ptr(b), bs);
    auto arg = [&](unsigned i) { return CArrayMap(a.xs[i].v + size_t(arg_batch(a.xs[i].d, b, B)) * bs, bs); };
    if (a.n == 1) {
      y = arg(0);
      continue;
    }
    y = arg(0);  // running max, then the result
    for (unsigned i = 1; i < a.n; ++i) y = y.max(arg(i));
    s.setZero();
    for (unsigned i = 0; i < a.n; ++i) s += (arg(i) - y).exp();
    y += s.log();
  }
}
// dx_i += g ⊙ exp(x_i - y)
void logsumexp_bwd(const BackwardArgs& a) {
  const unsigned B = a.fx.d.bd, bs = a.fx.d.batch_size();
  const Tensor& x = a.xs[a.i];
  for (unsigned b = 0; b < B; ++b) {
    const size_t xoff = size_t(arg_batch(x.d, b, B)) * bs;
    CArrayMap xb(x.v + xoff, bs), y(a.fx.batch_ptr(b), bs), g(a.dEdf.batch_ptr(b), bs);
    ArrayMap(a.dEdxi.v + xoff, bs) += g * (xb - y).exp();
  }
}
std::vector<OpSample> logsumexp_samples() {
  auto build = [](ComputationGraph&, Xs x) { return logsumexp(x); };
  return {{"single", {Dim({4})}, build, -2, 2},
          {"two", {Dim({3, 2}), Dim({3, 2})}, build, -2, 2},
          {"three", {Dim({4}), Dim({4}), Dim({4})}, build, -2, 2},
          {"batched", {Dim({3}, 2), Dim({3}, 2)}, build, -2, 2},
          {"broadcast", {Dim({3}, 2), Dim({3})}, build, -2, 2},
          {"bad_shape", {Dim({3}), Dim({4})}, build, -1, 1, true},
          {"bad_batch", {Dim({3}, 2), Dim({3}, 3)}, build, -1, 1, true}};
}
const OpId k_logsumexp = register_op({.name = "logsumexp",
                                      .shape = logsumexp_shape,
                                      .forward = logsumexp_fwd,
                                      .backward = logsumexp_bwd,
                                      .batch = {.batchable = true},
                                      .samples = logsumexp_samples});

// ---------------------------------------------------------------------------------------------
// pickneglogsoftmax(x, v): -log softmax(x)[v] = logZ - x[v], per batch element.
struct PickAttr {
  const unsigned* pv = nullptr;                 // single index read at forward time
  const std::vector<unsigned>* pvec = nullptr;  // one index per batch element, read at forward time
  uint32_t n = 0;                               // number of indices (inline ones follow in the tail)
  uint32_t per_batch = 0;                       // 1: the vector forms (one index per batch element)
};

// Fills ids[0..B) with the index for each output batch element, validated against `rows`.
void read_indices(const char* op, AttrView a, unsigned rows, unsigned B, unsigned* ids) {
  const PickAttr& p = a.as<PickAttr>();
  const unsigned* src;
  size_t n;
  if (p.pv) {
    src = p.pv;
    n = 1;
  } else if (p.pvec) {
    src = p.pvec->data();
    n = p.pvec->size();
    if (n != p.n)
      op_error(op, "the index vector changed size after the node was created (" + std::to_string(p.n) + " -> " +
                       std::to_string(n) + ")");
  } else {
    src = a.tail<unsigned, PickAttr>();
    n = p.n;
  }
  for (unsigned b = 0; b < B; ++b) {
    const unsigned v = src[b % n];
    if (v >= rows)
      op_error(op, "index " + std::to_string(v) + " out of range for dim " + std::to_string(rows) + " of the input");
    ids[b] = v;
  }
}

Dim pnls_shape(const ArgDims& xs, AttrView a) {
  const Dim& x = xs[0];
  const PickAttr& p = a.as<PickAttr>();
  if (x.batch_size() != x.rows() || x.rows() == 0)
    op_error("pickneglogsoftmax", "input must be a column vector, got " + x.str());
  if (p.per_batch && p.n != x.bd)
    op_error("pickneglogsoftmax", std::to_string(p.n) + " indices given for input " + x.str() + " with " +
                                      std::to_string(x.bd) + " batch elements");
  if (!p.pv && !p.pvec) {
    const unsigned* ids = a.tail<unsigned, PickAttr>();
    for (unsigned k = 0; k < p.n; ++k)
      if (ids[k] >= x.rows())
        op_error("pickneglogsoftmax",
                 "index " + std::to_string(ids[k]) + " out of range for input " + x.str() + " (dim " +
                     std::to_string(x.rows()) + ")");
  }
  return Dim({1}, x.bd);
}
// aux: logZ per batch element, then the picked index per batch element.
size_t pnls_aux(const Dim& fx, const ArgDims&, AttrView) { return 2 * size_t(fx.bd); }
void pnls_fwd(const ForwardArgs& a) {
  const Tensor& x = a.xs[0];
  const unsigned B = a.fx.d.bd, n = x.d.rows();
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux + B);
  read_indices("pickneglogsoftmax", a.attr, n, B, ids);
  for (unsigned b = 0; b < B; ++b) {
    CArrayMap xc(x.v + size_t(arg_batch(x.d, b, B)) * n, n);
    const float m = xc.maxCoeff();
    const float logz = m + std::log((xc - m).exp().sum());
    a.aux[b] = logz;
    a.fx.v[b] = logz - xc[ids[b]];
  }
}
// dx += g (softmax(x) - onehot(v))
void pnls_bwd(const BackwardArgs& a) {
  const Tensor& x = a.xs[0];
  const unsigned B = a.fx.d.bd, n = x.d.rows();
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux + B);
  for (unsigned b = 0; b < B; ++b) {
    const size_t off = size_t(arg_batch(x.d, b, B)) * n;
    const float g = a.dEdf.v[b];
    CArrayMap xc(x.v + off, n);
    ArrayMap dx(a.dEdxi.v + off, n);
    dx += g * (xc - a.aux[b]).exp();
    dx[ids[b]] -= g;
  }
}
std::vector<OpSample> pnls_samples() {
  static const unsigned index = 3;
  static const std::vector<unsigned> indices = {1, 0};
  static const unsigned bad_index = 9;
  static const std::vector<unsigned> bad_indices = {0, 4};
  auto one = [](unsigned v) { return [v](ComputationGraph&, Xs x) { return pickneglogsoftmax(x[0], v); }; };
  auto many = [](std::vector<unsigned> v) {
    return [v](ComputationGraph&, Xs x) { return pickneglogsoftmax(x[0], v); };
  };
  auto ptr = [](const unsigned* p) { return [p](ComputationGraph&, Xs x) { return pickneglogsoftmax(x[0], p); }; };
  auto vptr = [](const std::vector<unsigned>* p) {
    return [p](ComputationGraph&, Xs x) { return pickneglogsoftmax(x[0], p); };
  };
  return {{"index", {Dim({5})}, one(2), -2, 2},
          {"column", {Dim({4, 1})}, one(0), -2, 2},
          {"batched_one_index", {Dim({4}, 3)}, one(1), -2, 2},
          {"batched_indices", {Dim({4}, 3)}, many({0, 3, 1}), -2, 2},
          {"pointer", {Dim({4}, 2)}, ptr(&index), -2, 2},
          {"pointer_vector", {Dim({3}, 2)}, vptr(&indices), -2, 2},
          {"out_of_range", {Dim({5})}, one(5), -1, 1, true},
          {"vector_out_of_range", {Dim({3}, 2)}, many({0, 3}), -1, 1, true},
          {"wrong_count", {Dim({4}, 3)}, many({0, 1}), -1, 1, true},
          {"matrix", {Dim({3, 2})}, one(0), -1, 1, true},
          {"pointer_out_of_range", {Dim({4})}, ptr(&bad_index), -1, 1, true},
          {"pointer_vector_out_of_range", {Dim({4}, 2)}, vptr(&bad_indices), -1, 1, true}};
}
const OpId k_pnls = register_op({.name = "pickneglogsoftmax",
                                 .shape = pnls_shape,
                                 .forward = pnls_fwd,
                                 .backward = pnls_bwd,
                                 .aux_floats = pnls_aux,
                                 .batch = {.batchable = true},
                                 .samples = pnls_samples});

Expression pnls_node(const Expression& x, PickAttr p, const unsigned* ids) {
  if (!ids) return make_node(k_pnls, x, p);
  const std::vector<uint64_t> blob = attr_with_tail(p, ids, p.n);
  return make_node_n(k_pnls, {x}, blob.data(), blob.size() * sizeof(uint64_t));
}

}  // namespace

Expression softmax(const Expression& x, unsigned d) { return make_node(k_softmax, x, d); }
Expression log_softmax(const Expression& x) { return make_node(k_log_softmax, x); }
Expression logsumexp(const std::initializer_list<Expression>& xs) { return make_node_n(k_logsumexp, xs); }
Expression logsumexp(const std::vector<Expression>& xs) { return make_node_n(k_logsumexp, xs); }

Expression pickneglogsoftmax(const Expression& x, unsigned v) {
  return pnls_node(x, PickAttr{nullptr, nullptr, 1, 0}, &v);
}
Expression pickneglogsoftmax(const Expression& x, const unsigned* pv) {
  if (!pv) throw std::invalid_argument("pickneglogsoftmax: null index pointer");
  return pnls_node(x, PickAttr{pv, nullptr, 1, 0}, nullptr);
}
Expression pickneglogsoftmax(const Expression& x, const std::vector<unsigned>& v) {
  if (v.empty()) throw std::invalid_argument("pickneglogsoftmax: empty index vector");
  return pnls_node(x, PickAttr{nullptr, nullptr, static_cast<uint32_t>(v.size()), 1}, v.data());
}
Expression pickneglogsoftmax(const Expression& x, const std::vector<unsigned>* pv) {
  if (!pv) throw std::invalid_argument("pickneglogsoftmax: null index pointer");
  if (pv->empty()) throw std::invalid_argument("pickneglogsoftmax: empty index vector");
  return pnls_node(x, PickAttr{nullptr, pv, static_cast<uint32_t>(pv->size()), 1}, nullptr);
}

}  // namespace dynet
