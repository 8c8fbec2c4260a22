// Losses and distances: hinge (one correct index per vector) and hinge_dim (one per column or
// row), l2_norm, l1_distance, huber_distance, binary_log_loss, pairwise_rank_loss, poisson_loss.
// Everything works per batch element; an unbatched argument broadcasts against a batched one.
#include "kernels/device/prims.h"

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <vector>

#ifndef DYNET_CUDA_PASS
#include <algorithm>

#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {
namespace {

// ---------------------------------------------------------------------------------------------
#ifndef DYNET_CUDA_PASS
using ops::Xs;

using ops::arg_batch;

std::string num(unsigned v) { return std::to_string(v); }

// Test helper: x + offsets (offsets shaped like one batch element of x). Samples of ops with kinks
// add well separated offsets to small random inputs, so every finite-difference probe stays on
// one side of each kink.
Expression plus_offsets(const Expression& x, const std::vector<float>& offsets) {
  return x + input(*x.pg, x.dim().single_batch(), offsets);
}
#endif

// ---------------------------------------------------------------------------------------------
// hinge(x, c, m): Σ_{i≠c} max(0, m - x[c] + x[i]) for a column vector x, per batch element; one
// index for every batch element, or (vector forms) one index per batch element.
// hinge_dim(x, c, d, m): the hinge loss along dim d of a matrix x, one correct index per fiber:
// y[j] = Σ_{i≠c_j} max(0, m - x[c_j, j] + x[i, j]) for d = 0 (columns), transposed for d = 1 (rows).
// One index vector for every batch element, or one per batch element.
struct HingeAttr {
  const unsigned* pv = nullptr;                 // single index read at forward time
  const std::vector<unsigned>* pvec = nullptr;  // one index per batch element, read at forward time
  uint32_t n = 0;                               // number of indices (inline ones follow in the tail)
  uint32_t per_batch = 0;                       // 1: the vector forms
  float margin = 1.f;
  uint32_t unused = 0;  // keeps the struct free of padding (attributes are hashed bytewise)
};
struct HingeDimAttr {
  const std::vector<unsigned>* pvec = nullptr;                // shared index vector, read at forward time
  const std::vector<std::vector<unsigned>>* pvecs = nullptr;  // one per batch element, read at forward time
  uint32_t count = 0;                                         // number of index vectors
  uint32_t len = 0;         // indices per vector (inline ones follow in the tail, vector after vector)
  uint32_t per_batch = 0;   // 1: one index vector per batch element
  uint32_t axis = 0;
  float margin = 1.f;
  uint32_t unused = 0;
};
}  // namespace

// The indices hinge and hinge_dim read at forward time, validated, into ids (defined with the CPU kernels
// below; the CUDA pass links to the host pass's definitions): one per output batch element (hinge), one per
// fiber of each output batch element (hinge_dim).
void hinge_indices(AttrView a, const Dim& x, unsigned B, unsigned* ids);
void hinge_dim_indices(AttrView a, const Dim& x, unsigned B, unsigned* ids);

namespace {
// ---- device kernels ----
// Hinge losses along the fibers of a [rows, cols] matrix (a column vector: one fiber): output o = b·fibers + j
// sums max(0, m - z[c_o] + z[i]) over the positions i ≠ c_o of fiber j of batch element b.
struct HingeFibers {
  size_t rows, fibers, len;  // len: positions per fiber
  unsigned axis;             // 0: fibers are columns, 1: rows
  DYNET_HD size_t at(size_t j, size_t i) const { return axis == 0 ? j * rows + i : i * rows + j; }
  DYNET_HD size_t fiber(size_t e) const { return axis == 0 ? e / rows : e % rows; }
  DYNET_HD size_t position(size_t e) const { return axis == 0 ? e % rows : e / rows; }
};
HingeFibers hinge_fibers(const Dim& x, unsigned axis) {
  const size_t rows = x.rows(), cols = x.batch_size() / rows;
  return {rows, axis == 0 ? cols : rows, axis == 0 ? rows : cols, axis};
}
// ids: the host's indices, one per output; kept in aux for backward.
template <class P>
void hinge_fibers_fwd(const ForwardArgs& a, HingeFibers h, float m, const unsigned* host_ids) {
  const Tensor& x = a.xs[0];
  const size_t outputs = a.fx.d.size(), bs = x.d.batch_size(), xs = x.d.bd == 1 ? 0 : bs, fibers = h.fibers;
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux);
  a.fx.device->copy_from_host(ids, host_ids, outputs * sizeof(unsigned));
  const float* xv = x.v;
  float* y = a.fx.v;
  P::reduce(
      a.fx.device, outputs, h.len, 0.f,
      [=] DYNET_LAMBDA(size_t o, size_t i) {
        const float* z = xv + (o / fibers) * xs;
        const size_t j = o % fibers;
        return i == ids[o] ? 0.f : fn::max(0.f, (m - z[h.at(j, ids[o])]) + z[h.at(j, i)]);
      },
      dev::Sum(), [=] DYNET_LAMBDA(size_t o, float v) { y[o] = v; });
}
// +g on each active term's i, -g · (the number of active terms) on c.
template <class P>
void hinge_fibers_bwd(const BackwardArgs& a, HingeFibers h, float m) {
  const Tensor& x = a.xs[0];
  const size_t B = a.fx.d.bd, outputs = a.fx.d.size(), bs = x.d.batch_size(), xs = x.d.bd == 1 ? 0 : bs;
  const size_t fibers = h.fibers;
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux);
  const float *xv = x.v, *g = a.dEdf.v;
  float* active = a.scratch.allocate_floats(outputs);
  auto is_active = [=] DYNET_LAMBDA(size_t o, size_t i) {
    const float* z = xv + (o / fibers) * xs;
    const size_t j = o % fibers;
    return i != ids[o] && (m - z[h.at(j, ids[o])]) + z[h.at(j, i)] > 0.f;
  };
  P::reduce(
      a.fx.device, outputs, h.len, 0.f, [=] DYNET_LAMBDA(size_t o, size_t i) { return is_active(o, i) ? 1.f : 0.f; },
      dev::Sum(), [=] DYNET_LAMBDA(size_t o, float v) { active[o] = v; });
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, x.d.bd != 1, B, bs, [=] DYNET_LAMBDA(size_t b, size_t e) {
    const size_t o = b * fibers + h.fiber(e), i = h.position(e);
    return i == ids[o] ? -g[o] * active[o] : is_active(o, i) ? g[o] : 0.f;
  });
}
template <class P>
void hinge_dev_fwd(const ForwardArgs& a) {
  std::vector<unsigned> ids(a.fx.d.bd);
  hinge_indices(a.attr, a.xs[0].d, a.fx.d.bd, ids.data());
  hinge_fibers_fwd<P>(a, hinge_fibers(a.xs[0].d, 0), a.attr.as<HingeAttr>().margin, ids.data());
}
template <class P>
void hinge_dev_bwd(const BackwardArgs& a) {
  hinge_fibers_bwd<P>(a, hinge_fibers(a.xs[0].d, 0), a.attr.as<HingeAttr>().margin);
}
DYNET_DEVICE_KERNELS("hinge", hinge_dev_fwd, hinge_dev_bwd);
template <class P>
void hinge_dim_dev_fwd(const ForwardArgs& a) {
  const HingeDimAttr& h = a.attr.as<HingeDimAttr>();
  std::vector<unsigned> ids(a.fx.d.size());
  hinge_dim_indices(a.attr, a.xs[0].d, a.fx.d.bd, ids.data());
  hinge_fibers_fwd<P>(a, hinge_fibers(a.xs[0].d, h.axis), h.margin, ids.data());
}
template <class P>
void hinge_dim_dev_bwd(const BackwardArgs& a) {
  const HingeDimAttr& h = a.attr.as<HingeDimAttr>();
  hinge_fibers_bwd<P>(a, hinge_fibers(a.xs[0].d, h.axis), h.margin);
}
DYNET_DEVICE_KERNELS("hinge_dim", hinge_dim_dev_fwd, hinge_dim_dev_bwd);

#ifndef DYNET_CUDA_PASS
// Offsets for a rows x cols matrix whose fibers along `axis` are each a rotation of `base`.
std::vector<float> rotated_offsets(const std::vector<float>& base, unsigned rows, unsigned cols, unsigned axis) {
  std::vector<float> off(size_t(rows) * cols);
  for (size_t c = 0; c < cols; ++c)
    for (size_t r = 0; r < rows; ++r) {
      const size_t along = axis == 0 ? r : c, across = axis == 0 ? c : r;
      off[r + size_t(c) * rows] = base[(along + 2 * across) % base.size()];
    }
  return off;
}

// Offsets for hinge samples: with margin 1 every pairwise term 1 + o_i - o_j is at least 0.4 away
// from the kink at 0, and each index has both active and inactive terms.
const std::vector<float> kHingeOffsets = {0.4f, -1.5f, 2.2f, 0.f, 3.6f};

// Σ_{i≠c} max(0, m - z_c + z_i) over the fiber z[0], z[stride], ... (n elements).
float hinge_of_fiber(const float* z, size_t stride, unsigned n, unsigned c, float m) {
  const float threshold = m - z[c * stride];
  float loss = 0.f;
  for (size_t i = 0; i < n; ++i)
    if (i != c) loss += std::max(0.f, threshold + z[i * stride]);
  return loss;
}
// Its gradient times g: +g on each active i, -g · (number of active terms) on c.
void hinge_fiber_backward(const float* z, float* dz, size_t stride, unsigned n, unsigned c, float m, float g) {
  const float threshold = m - z[c * stride];
  unsigned active = 0;
  for (size_t i = 0; i < n; ++i)
    if (i != c && threshold + z[i * stride] > 0.f) dz[i * stride] += g, ++active;
  dz[c * stride] -= g * static_cast<float>(active);
}

void check_margin(const char* op, float m) {
  if (!(m >= 0.f)) op_error(op, "the margin must be non-negative, got " + std::to_string(m));
}
Dim hinge_shape(const ArgDims& xs, AttrView a) {
  const Dim& x = xs[0];
  const HingeAttr& h = a.as<HingeAttr>();
  if (x.batch_size() != x.rows() || x.rows() == 0) op_error("hinge", "input must be a column vector, got " + x.str());
  check_margin("hinge", h.margin);
  if (h.per_batch && h.n != x.bd)
    op_error("hinge", num(h.n) + " indices given for input " + x.str() + " with " + num(x.bd) + " batch elements");
  if (!h.pv && !h.pvec) {
    const unsigned* ids = a.tail<unsigned, HingeAttr>();
    for (size_t k = 0; k < h.n; ++k)
      if (ids[k] >= x.rows())
        op_error("hinge", "index " + num(ids[k]) + " out of range for input " + x.str());
  }
  return Dim({1}, x.bd);
}
// aux: the index used for each batch element (read from the pointers at forward time)
size_t hinge_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.bd; }
// CPU kernel kept: op_perf x64 generic/CPU 2.6 fwd+bwd, the backward 4.6-6.3 (the generic one tests every term
// twice, to count and to scatter, dividing indices per element; this one walks each fiber once).
void hinge_fwd(const ForwardArgs& a) {
  const HingeAttr& h = a.attr.as<HingeAttr>();
  const Tensor& x = a.xs[0];
  const size_t B = a.fx.d.bd, n = x.d.rows();
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux);
  hinge_indices(a.attr, x.d, unsigned(B), ids);
  for (size_t b = 0; b < B; ++b)
    a.fx.v[b] = hinge_of_fiber(x.v + size_t(arg_batch(x.d, b, B)) * n, 1, n, ids[b], h.margin);
}
void hinge_bwd(const BackwardArgs& a) {
  const HingeAttr& h = a.attr.as<HingeAttr>();
  const Tensor& x = a.xs[0];
  const size_t B = a.fx.d.bd, n = x.d.rows();
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux);
  for (size_t b = 0; b < B; ++b) {
    const size_t off = size_t(arg_batch(x.d, b, B)) * n;
    hinge_fiber_backward(x.v + off, a.dEdxi.v + off, 1, n, ids[b], h.margin, a.dEdf.v[b]);
  }
}
std::vector<OpSample> hinge_samples() {
  static const unsigned index = 2;
  static const std::vector<unsigned> indices = {4, 1, 0};
  static const unsigned bad_index = 5;
  static const std::vector<unsigned> bad_indices = {0, 7};
  // x = u + offsets with |u| ≤ 0.1: every term stays clear of its kink
  auto one = [](unsigned c, float m) {
    return [c, m](ComputationGraph&, Xs x) { return hinge(plus_offsets(x[0], kHingeOffsets), c, m); };
  };
  auto many = [](std::vector<unsigned> c) {
    return [c](ComputationGraph&, Xs x) { return hinge(plus_offsets(x[0], kHingeOffsets), c); };
  };
  auto ptr = [](const unsigned* p) {
    return [p](ComputationGraph&, Xs x) { return hinge(plus_offsets(x[0], kHingeOffsets), p); };
  };
  auto vptr = [](const std::vector<unsigned>* p) {
    return [p](ComputationGraph&, Xs x) { return hinge(plus_offsets(x[0], kHingeOffsets), p); };
  };
  auto plain = [](unsigned c, float m) { return [c, m](ComputationGraph&, Xs x) { return hinge(x[0], c, m); }; };
  auto plain_many = [](std::vector<unsigned> c) { return [c](ComputationGraph&, Xs x) { return hinge(x[0], c); }; };
  static const std::vector<unsigned> per_indices[3] = {{4, 1}, {0, 0}, {2, 3}};
  return {{.name = "instances", .inputs = {Dim({5})}, .build = one(0, 1.f), .lo = -0.1f, .hi = 0.1f,
           .instance = [](ComputationGraph&, Xs x, unsigned k) { return hinge(plus_offsets(x[0], kHingeOffsets), k % 5); }},
          {.name = "vector_instances", .inputs = {Dim({5}, 2)}, .build = many({4, 1}), .lo = -0.1f, .hi = 0.1f,
           .instance = [](ComputationGraph&, Xs x, unsigned k) {
             return hinge(plus_offsets(x[0], kHingeOffsets), per_indices[k % 3]);
           }},
          {"index", {Dim({5})}, one(0, 1.f), -0.1f, 0.1f},
          {"wide_margin", {Dim({5})}, one(3, 10.f), -0.1f, 0.1f},
          {"batched_one_index", {Dim({5}, 2)}, one(2, 1.f), -0.1f, 0.1f},
          {"batched_indices", {Dim({5}, 3)}, many({4, 1, 0}), -0.1f, 0.1f},
          {"pointer", {Dim({5})}, ptr(&index), -0.1f, 0.1f},
          {"pointer_vector", {Dim({5}, 3)}, vptr(&indices), -0.1f, 0.1f},
          {"column_matrix", {Dim({5, 1})}, one(1, 1.f), -0.1f, 0.1f},
          {"out_of_range", {Dim({5})}, plain(5, 1.f), -1, 1, true},
          {"matrix", {Dim({3, 2})}, plain(0, 1.f), -1, 1, true},
          {"negative_margin", {Dim({3})}, plain(0, -1.f), -1, 1, true},
          {"wrong_count", {Dim({3}, 3)}, plain_many({0, 1}), -1, 1, true},
          {"vector_out_of_range", {Dim({3}, 2)}, plain_many({0, 3}), -1, 1, true},
          {"pointer_out_of_range", {Dim({5})}, [](ComputationGraph&, Xs x) { return hinge(x[0], &bad_index); }, -1, 1,
           true},
          {"pointer_vector_out_of_range", {Dim({5}, 2)},
           [](ComputationGraph&, Xs x) { return hinge(x[0], &bad_indices); }, -1, 1, true}};
}
// Hinges with one margin batch; the batched node takes every member's correct indices.
void hinge_merge(const AttrView* m, unsigned k, const Dim& d, std::vector<uint64_t>& out) {
  ops::merge_index_lists<HingeAttr>("hinge", m, k, d, out);
}
const OpId k_hinge = register_op({.name = "hinge",
                                  .doc = "y = Σ_{i≠c} max(0, m - x[c] + x[i]), c the correct index (per batch element)",
                                  .shape = hinge_shape,
                                  .forward = hinge_fwd,
                                  .backward = hinge_bwd,
                                  .aux_floats = hinge_aux,
                                  .batch = {.batchable = true,
                                            .key = ops::key_bytes<HingeAttr, offsetof(HingeAttr, margin), sizeof(float)>,
                                            .merge = hinge_merge},
                                  .samples = hinge_samples});

Expression hinge_node(const Expression& x, HingeAttr h, const unsigned* ids) {
  return make_node_with_ids(k_hinge, x, h, ids, h.n);
}

// {rows, cols} of x and the number of fibers (the size of the other dim).
struct HingeDimGeometry {
  unsigned rows, cols, fibers, fiber_len;
  size_t fiber_start(unsigned j, unsigned axis) const { return axis == 0 ? size_t(j) * rows : j; }
  size_t stride(unsigned axis) const { return axis == 0 ? 1 : rows; }
};
HingeDimGeometry hinge_dim_geometry(const Dim& x, unsigned axis) {
  HingeDimGeometry g{x.rows(), x.cols(), 0, 0};
  g.fibers = axis == 0 ? g.cols : g.rows;
  g.fiber_len = axis == 0 ? g.rows : g.cols;
  return g;
}

Dim hinge_dim_shape(const ArgDims& xs, AttrView a) {
  const Dim& x = xs[0];
  const HingeDimAttr& h = a.as<HingeDimAttr>();
  if (x.nd > 2 || x.size() == 0) op_error("hinge_dim", "input must be a matrix, got " + x.str());
  if (h.axis > 1) op_error("hinge_dim", "dim " + num(h.axis) + " out of range for matrix input " + x.str());
  check_margin("hinge_dim", h.margin);
  const HingeDimGeometry g = hinge_dim_geometry(x, h.axis);
  const char* fiber = h.axis == 0 ? "column" : "row";
  if (h.len != g.fibers)
    op_error("hinge_dim", num(h.len) + " indices given but input " + x.str() + " has " + num(g.fibers) + " " + fiber +
                              "s");
  if (h.per_batch && h.count != x.bd)
    op_error("hinge_dim", num(h.count) + " index vectors given for input " + x.str() + " with " + num(x.bd) +
                              " batch elements");
  if (!h.pvec && !h.pvecs) {
    const unsigned* ids = a.tail<unsigned, HingeDimAttr>();
    for (size_t k = 0; k < size_t(h.count) * h.len; ++k)
      if (ids[k] >= g.fiber_len)
        op_error("hinge_dim", "index " + num(ids[k]) + " for " + fiber + " " + num(static_cast<unsigned>(k % h.len)) +
                                  " out of range for input " + x.str());
  }
  return Dim({g.fibers}, x.bd);
}
// aux: the indices used for each batch element (read from the pointers at forward time)
size_t hinge_dim_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.size(); }
// CPU kernel kept: op_perf x64 generic/CPU 3.5 fwd+bwd, the backward 5.3-6.7 (as hinge's).
void hinge_dim_fwd(const ForwardArgs& a) {
  const HingeDimAttr& h = a.attr.as<HingeDimAttr>();
  const Tensor& x = a.xs[0];
  const HingeDimGeometry g = hinge_dim_geometry(x.d, h.axis);
  const size_t B = a.fx.d.bd, bs = x.d.batch_size();
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux);
  hinge_dim_indices(a.attr, x.d, unsigned(B), ids);
  for (size_t b = 0; b < B; ++b) {
    const float* xb = x.v + size_t(arg_batch(x.d, b, B)) * bs;
    for (size_t j = 0; j < g.fibers; ++j) {
      const size_t k = size_t(b) * g.fibers + j;
      a.fx.v[k] = hinge_of_fiber(xb + g.fiber_start(j, h.axis), g.stride(h.axis), g.fiber_len, ids[k], h.margin);
    }
  }
}
void hinge_dim_bwd(const BackwardArgs& a) {
  const HingeDimAttr& h = a.attr.as<HingeDimAttr>();
  const Tensor& x = a.xs[0];
  const HingeDimGeometry g = hinge_dim_geometry(x.d, h.axis);
  const size_t B = a.fx.d.bd, bs = x.d.batch_size();
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux);
  for (size_t b = 0; b < B; ++b) {
    const size_t off = size_t(arg_batch(x.d, b, B)) * bs;
    for (size_t j = 0; j < g.fibers; ++j) {
      const size_t start = off + g.fiber_start(j, h.axis);
      const size_t k = size_t(b) * g.fibers + j;
      hinge_fiber_backward(x.v + start, a.dEdxi.v + start, g.stride(h.axis), g.fiber_len, ids[k], h.margin,
                           a.dEdf.v[k]);
    }
  }
}
std::vector<OpSample> hinge_dim_samples() {
  using VV = std::vector<std::vector<unsigned>>;
  static const std::vector<unsigned> shared = {1, 4};
  static const VV per_batch = {{0, 3}, {2, 2}};
  static const std::vector<unsigned> wrong_size = {1, 2, 3};
  // x = u + offsets (|u| ≤ 0.1) whose fibers along the hinge dim are rotations of kHingeOffsets
  auto shifted = [](const Expression& x, unsigned axis) {
    const Dim d = x.dim();
    return x + input(*x.pg, Dim({d.rows(), d.cols()}), rotated_offsets(kHingeOffsets, d.rows(), d.cols(), axis));
  };
  auto vec = [shifted](std::vector<unsigned> c, unsigned d) {
    return [c, d, shifted](ComputationGraph&, Xs x) { return hinge_dim(shifted(x[0], d), c, d); };
  };
  auto vecs = [shifted](VV c, unsigned d) {
    return [c, d, shifted](ComputationGraph&, Xs x) { return hinge_dim(shifted(x[0], d), c, d); };
  };
  auto plain = [](std::vector<unsigned> c, unsigned d, float m) {
    return [c, d, m](ComputationGraph&, Xs x) { return hinge_dim(x[0], c, d, m); };
  };
  auto plain_vecs = [](VV c, unsigned d) { return [c, d](ComputationGraph&, Xs x) { return hinge_dim(x[0], c, d); }; };
  return {{"columns", {Dim({5, 3})}, vec({0, 4, 2}, 0), -0.1f, 0.1f},
          {"rows", {Dim({2, 5})}, vec({3, 1}, 1), -0.1f, 0.1f},
          {"batched_shared", {Dim({5, 2}, 2)}, vec({1, 3}, 0), -0.1f, 0.1f},
          {"per_batch", {Dim({5, 2}, 3)}, vecs({{0, 1}, {2, 3}, {4, 4}}, 0), -0.1f, 0.1f},
          {"per_batch_rows", {Dim({2, 5}, 2)}, vecs({{4, 0}, {2, 1}}, 1), -0.1f, 0.1f},
          {"pointer", {Dim({5, 2}, 2)},
           [shifted](ComputationGraph&, Xs x) { return hinge_dim(shifted(x[0], 0), &shared, 0); }, -0.1f, 0.1f},
          {"pointer_per_batch", {Dim({2, 5}, 2)},
           [shifted](ComputationGraph&, Xs x) { return hinge_dim(shifted(x[0], 1), &per_batch, 1); }, -0.1f, 0.1f},
          {"bad_dim", {Dim({3, 2})}, plain({0, 1}, 2, 1.f), -1, 1, true},
          {"wrong_count", {Dim({3, 2})}, plain({0, 1, 2}, 0, 1.f), -1, 1, true},
          {"out_of_range", {Dim({3, 2})}, plain({0, 3}, 0, 1.f), -1, 1, true},
          {"row_out_of_range", {Dim({3, 2})}, plain({0, 1, 2}, 1, 1.f), -1, 1, true},
          {"negative_margin", {Dim({3, 2})}, plain({0, 1}, 0, -0.5f), -1, 1, true},
          {"tensor", {Dim({3, 2, 2})}, plain({0, 1}, 0, 1.f), -1, 1, true},
          {"per_batch_wrong_count", {Dim({3, 2}, 3)}, plain_vecs({{0, 1}, {1, 0}}, 0), -1, 1, true},
          {"ragged", {Dim({3, 2}, 2)}, plain_vecs({{0, 1}, {1}}, 0), -1, 1, true},
          {"pointer_wrong_size", {Dim({3, 2})},
           [](ComputationGraph&, Xs x) { return hinge_dim(x[0], &wrong_size, 0); }, -1, 1, true}};
}
const OpId k_hinge_dim =
    register_op({.name = "hinge_dim",
                 .doc = "y[j] = Σ_{i≠c_j} max(0, m - x[c_j, j] + x[i, j]) along dim d (d = 0 shown; per batch element)",
                 .shape = hinge_dim_shape,
                 .forward = hinge_dim_fwd,
                 .backward = hinge_dim_bwd,
                 .aux_floats = hinge_dim_aux,
                 .batch = {.batchable = true},
                 .samples = hinge_dim_samples});

Expression hinge_dim_node(const Expression& x, HingeDimAttr h, const unsigned* ids) {
  return make_node_with_ids(k_hinge_dim, x, h, ids, size_t(h.count) * h.len);
}
}  // namespace
void hinge_indices(AttrView a, const Dim& x, unsigned B, unsigned* ids) {
  const ops::IndexList src = ops::index_list<HingeAttr>("hinge", a);
  for (size_t b = 0; b < B; ++b) {
    const unsigned c = src.ids[b % src.n];
    if (c >= x.rows()) op_error("hinge", "index " + num(c) + " out of range for input " + x.str());
    ids[b] = c;
  }
}

void hinge_dim_indices(AttrView a, const Dim& x, unsigned B, unsigned* ids) {
  const HingeDimAttr& h = a.as<HingeDimAttr>();
  const HingeDimGeometry g = hinge_dim_geometry(x, h.axis);
  const unsigned count = h.pvecs ? static_cast<unsigned>(h.pvecs->size()) : h.count;
  if (h.pvecs && count != h.count)
    op_error("hinge_dim", "the list of index vectors changed size after the node was created (" + num(h.count) +
                              " -> " + num(count) + ")");
  for (size_t b = 0; b < B; ++b) {
    const unsigned v = b % count;
    const unsigned* src;
    size_t len;
    if (h.pvec) {
      src = h.pvec->data(), len = h.pvec->size();
    } else if (h.pvecs) {
      src = (*h.pvecs)[v].data(), len = (*h.pvecs)[v].size();
    } else {
      src = a.tail<unsigned, HingeDimAttr>() + size_t(v) * h.len, len = h.len;
    }
    if (len != g.fibers)
      op_error("hinge_dim", "index vector " + num(v) + " has " + num(static_cast<unsigned>(len)) +
                                " indices but input " + x.str() + " has " + num(g.fibers) +
                                (h.axis == 0 ? " columns" : " rows"));
    for (size_t j = 0; j < g.fibers; ++j) {
      const unsigned c = src[j];
      if (c >= g.fiber_len)
        op_error("hinge_dim", "index " + num(c) + " out of range along dim " + num(h.axis) + " of input " + x.str());
      ids[size_t(b) * g.fibers + j] = c;
    }
  }
}
Expression hinge(const Expression& x, unsigned index, float m) {
  return hinge_node(x, HingeAttr{nullptr, nullptr, 1, 0, m, 0}, &index);
}
DYNET_API(hinge, "hinge", "hinge(x, index: payload, m = 1.0f)", "hinge(x, v, m=1.0)", Expression(const Expression&, unsigned, float));
Expression hinge(const Expression& x, const unsigned* pindex, float m) {
  if (!pindex) throw std::invalid_argument("hinge: null index pointer");
  return hinge_node(x, HingeAttr{pindex, nullptr, 1, 0, m, 0}, nullptr);
}
DYNET_API(hinge, "hinge", "hinge(x, pindex: payload, m = 1.0f)", nullptr, Expression(const Expression&, const unsigned*, float));
Expression hinge(const Expression& x, const std::vector<unsigned>& indices, float m) {
  if (indices.empty()) throw std::invalid_argument("hinge: empty index vector");
  return hinge_node(x, HingeAttr{nullptr, nullptr, static_cast<uint32_t>(indices.size()), 1, m, 0}, indices.data());
}
DYNET_API(hinge, "hinge", "hinge(x, indices: payload, m = 1.0f)", "hinge_batch(x, vs, m=1.0)", Expression(const Expression&, const std::vector<unsigned>&, float));
Expression hinge(const Expression& x, const std::vector<unsigned>* pindices, float m) {
  if (!pindices) throw std::invalid_argument("hinge: null index pointer");
  if (pindices->empty()) throw std::invalid_argument("hinge: empty index vector");
  return hinge_node(x, HingeAttr{nullptr, pindices, static_cast<uint32_t>(pindices->size()), 1, m, 0}, nullptr);
}
DYNET_API(hinge, "hinge", "hinge(x, pindices: payload, m = 1.0f)", nullptr, Expression(const Expression&, const std::vector<unsigned>*, float));

Expression hinge_dim(const Expression& x, const std::vector<unsigned>& indices, unsigned d, float m) {
  return hinge_dim_node(x, HingeDimAttr{nullptr, nullptr, 1, static_cast<uint32_t>(indices.size()), 0, d, m, 0},
                        indices.data());
}
DYNET_API(hinge_dim, "hinge_dim", "hinge_dim(x, indices: payload, d = 0, m = 1.0f)", "hinge_dim(x, v, d=0, m=1.0)", Expression(const Expression&, const std::vector<unsigned>&, unsigned, float));
Expression hinge_dim(const Expression& x, const std::vector<unsigned>* pindices, unsigned d, float m) {
  if (!pindices)
    throw std::invalid_argument(
        "hinge_dim: null index pointer (a braced {0} selects this overload; write std::vector<unsigned>{0})");
  return hinge_dim_node(x, HingeDimAttr{pindices, nullptr, 1, static_cast<uint32_t>(pindices->size()), 0, d, m, 0},
                        nullptr);
}
DYNET_API(hinge_dim, "hinge_dim", "hinge_dim(x, pindices: payload, d = 0, m = 1.0f)", nullptr, Expression(const Expression&, const std::vector<unsigned>*, unsigned, float));
Expression hinge_dim(const Expression& x, const std::vector<std::vector<unsigned>>& indices, unsigned d, float m) {
  if (indices.empty()) throw std::invalid_argument("hinge_dim: empty list of index vectors");
  const size_t len = indices[0].size();
  std::vector<unsigned> flat;
  flat.reserve(len * indices.size());
  for (size_t v = 0; v < indices.size(); ++v) {
    if (indices[v].size() != len)
      throw std::invalid_argument("hinge_dim: index vector " + std::to_string(v) + " has " +
                                  std::to_string(indices[v].size()) + " indices, vector 0 has " + std::to_string(len));
    flat.insert(flat.end(), indices[v].begin(), indices[v].end());
  }
  return hinge_dim_node(
      x, HingeDimAttr{nullptr, nullptr, static_cast<uint32_t>(indices.size()), static_cast<uint32_t>(len), 1, d, m, 0},
      flat.data());
}
DYNET_API(hinge_dim, "hinge_dim", "hinge_dim(x, indices: payload, d = 0, m = 1.0f)", "hinge_dim(x, v, d=0, m=1.0)", Expression(const Expression&, const std::vector<std::vector<unsigned>>&, unsigned, float));
Expression hinge_dim(const Expression& x, const std::vector<std::vector<unsigned>>* pindices, unsigned d, float m) {
  if (!pindices) throw std::invalid_argument("hinge_dim: null index pointer");
  if (pindices->empty()) throw std::invalid_argument("hinge_dim: empty list of index vectors");
  // The shape rule checks the first vector's length; forward checks every vector as it reads them.
  return hinge_dim_node(x,
                        HingeDimAttr{nullptr, pindices, static_cast<uint32_t>(pindices->size()),
                                     static_cast<uint32_t>((*pindices)[0].size()), 1, d, m, 0},
                        nullptr);
}
DYNET_API(hinge_dim, "hinge_dim", "hinge_dim(x, pindices: payload, d = 0, m = 1.0f)", nullptr, Expression(const Expression&, const std::vector<std::vector<unsigned>>*, unsigned, float));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// l2_norm(x): sqrt(Σ x²) per batch element.
// l2_norm: y_b = sqrt(Σ x²); dx += g x / y (0 where y = 0).
template <class P>
void l2_norm_dev_fwd(const ForwardArgs& a) {
  const size_t bs = a.xs[0].d.batch_size();
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::reduce(
      a.fx.device, a.fx.d.bd, bs, 0.f, [=] DYNET_LAMBDA(size_t b, size_t k) { return x[b * bs + k] * x[b * bs + k]; },
      dev::Sum(), [=] DYNET_LAMBDA(size_t b, float v) { y[b] = fn::sqrt(v); });
}
template <class P>
void l2_norm_dev_bwd(const BackwardArgs& a) {
  const size_t bs = a.xs[0].d.batch_size();
  const float *x = a.xs[0].v, *y = a.fx.v, *g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.xs[0].d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t b = i / bs;
    if (y[b] > 0.f) dx[i] += (g[b] / y[b]) * x[i];
  });
}
DYNET_DEVICE_KERNELS("l2_norm", l2_norm_dev_fwd, l2_norm_dev_bwd);

#ifndef DYNET_CUDA_PASS
Dim per_batch_scalar_shape(const ArgDims& xs, AttrView) { return Dim({1}, xs[0].bd); }
// CPU kernel kept: op_perf x64 generic/CPU 1.8 fwd+bwd, the backward 2.0-2.8 (Eigen vectorises the per-batch
// scaling; the generic one divides the index and by the norm per element).
void l2_norm_fwd(const ForwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b) a.fx.v[b] = std::sqrt(cpu::cbarr(a.xs[0], b).square().sum());
}
// dx += g x / ‖x‖ (0 at x = 0, where the norm has no derivative)
void l2_norm_bwd(const BackwardArgs& a) {
  for (size_t b = 0; b < a.fx.d.bd; ++b)
    if (a.fx.v[b] > 0.f) cpu::barr(a.dEdxi, b) += (a.dEdf.v[b] / a.fx.v[b]) * cpu::cbarr(a.xs[0], b);
}
std::vector<OpSample> l2_norm_samples() {
  auto build = [](ComputationGraph&, Xs x) { return l2_norm(x[0]); };
  return {{"vector", {Dim({5})}, build, 0.2f, 1.f},
          {"matrix", {Dim({3, 2})}, build, -1.f, -0.2f},
          {"batched", {Dim({4}, 3)}, build, 0.2f, 1.f}};
}
const OpId k_l2_norm = register_op({.name = "l2_norm",
                                    .doc = "y = sqrt(Σ x²) (per batch element)",
                                    .shape = per_batch_scalar_shape,
                                    .forward = l2_norm_fwd,
                                    .backward = l2_norm_bwd,
                                    .batch = {.batchable = true},
                                    .samples = l2_norm_samples,
                                    .takes_empty = true});
}  // namespace
Expression l2_norm(const Expression& x) { return make_node(k_l2_norm, x); }
DYNET_API(l2_norm, "l2_norm", "l2_norm(x)", "l2_norm(x)", Expression(const Expression&));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// Binary losses over two same-shape arguments (an unbatched one broadcasts), reduced to one value
// per batch element: l1_distance, huber_distance, binary_log_loss.
// Pair losses Σ_k f(x_k, y_k) per batch element; ∂/∂x = dx(x, y), ∂/∂y = dy(x, y). One kernel for every
// backend (on the CPU as fast as the Eigen copies it replaced: op_perf x64 generic/CPU 0.74-0.98).
struct L1Op {
  static L1Op make(AttrView) { return {}; }
  DYNET_HD float f(float x, float y) const { return fn::abs(x - y); }
  DYNET_HD float dx(float x, float y) const { return fn::sign(x - y); }
  DYNET_HD float dy(float x, float y) const { return -fn::sign(x - y); }
};
struct HuberOp {
  float c;
  static HuberOp make(AttrView a) { return {a.as<float>()}; }
  DYNET_HD float f(float x, float y) const {
    const float d = fn::abs(x - y);
    return d < c ? 0.5f * d * d : c * (d - 0.5f * c);
  }
  DYNET_HD float dx(float x, float y) const { return fn::min(fn::max(x - y, -c), c); }
  DYNET_HD float dy(float x, float y) const { return -dx(x, y); }
};
// As DyNet: ln is clamped at ln FLT_MIN, x outside [0, 1] counts as 0 or 1, and the gradient keeps x
// inside [FLT_MIN, 1 - 2^-23] (DyNet's bounds, so its gradients at x = 1 match) and is 0 where x = y.
struct BinaryLogLossOp {
  static BinaryLogLossOp make(AttrView) { return {}; }
  DYNET_HD static float safe_log(float v) { return fn::log(fn::max(v, FLT_MIN)); }
  DYNET_HD static float log_one_minus(float x) { return x < 1.f ? fn::log1p(-fn::max(x, 0.f)) : safe_log(0.f); }
  DYNET_HD float f(float x, float y) const {
    if (y != 0.f && y != 1.f && !(x > 0.f && x < 1.f)) return -safe_log(0.f);
    float loss = 0.f;
    if (y != 0.f) loss -= y * safe_log(x);
    if (y != 1.f) loss -= (1.f - y) * log_one_minus(x);
    return loss;
  }
  DYNET_HD float dx(float x, float y) const {
    if (x == y) return 0.f;
    const float xc = fn::min(fn::max(x, FLT_MIN), 0.9999999f);
    return -y / xc + (1.f - y) / (1.f - xc);
  }
  DYNET_HD float dy(float x, float) const { return log_one_minus(x) - safe_log(x); }
};
template <class Op>
struct PairLoss {
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const Tensor &x = a.xs[0], &y = a.xs[1];
    const size_t n = x.d.batch_size(), xs = x.d.bd == 1 ? 0 : n, ys = y.d.bd == 1 ? 0 : n;
    const Op op = Op::make(a.attr);
    const float *xv = x.v, *yv = y.v;
    float* out = a.fx.v;
    P::reduce(
        a.fx.device, a.fx.d.bd, n, 0.f,
        [=] DYNET_LAMBDA(size_t b, size_t k) { return op.f(xv[b * xs + k], yv[b * ys + k]); }, dev::Sum(),
        [=] DYNET_LAMBDA(size_t b, float v) { out[b] = v; });
  }
  template <class P>
  static void bwd(const BackwardArgs& a) {
    const Tensor &x = a.xs[0], &y = a.xs[1];
    const size_t n = x.d.batch_size(), xs = x.d.bd == 1 ? 0 : n, ys = y.d.bd == 1 ? 0 : n;
    const Op op = Op::make(a.attr);
    const bool first = a.i == 0;
    const float *xv = x.v, *yv = y.v, *g = a.dEdf.v;
    dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.xs[a.i].d.bd != 1, a.fx.d.bd, n,
                           [=] DYNET_LAMBDA(size_t b, size_t k) {
                             const float xk = xv[b * xs + k], yk = yv[b * ys + k];
                             return g[b] * (first ? op.dx(xk, yk) : op.dy(xk, yk));
                           });
  }
};
DYNET_DEVICE_KERNELS("l1_distance", PairLoss<L1Op>::fwd, PairLoss<L1Op>::bwd);
DYNET_DEVICE_KERNELS("huber_distance", PairLoss<HuberOp>::fwd, PairLoss<HuberOp>::bwd);
DYNET_DEVICE_KERNELS("binary_log_loss", PairLoss<BinaryLogLossOp>::fwd, PairLoss<BinaryLogLossOp>::bwd);

#ifndef DYNET_CUDA_PASS
template <const char* kName>
Dim pair_loss_shape(const ArgDims& xs, AttrView) {
  if (xs[0].single_batch() != xs[1].single_batch())
    op_error(kName, "dims differ: " + xs[0].str() + " vs " + xs[1].str());
  return Dim({1}, ops::broadcast_bd(kName, xs[0], xs[1]));
}

// Samples for a pair loss: the inputs live in [lo, hi]; `build` gets both expressions.
std::vector<OpSample> pair_loss_samples(const OpSample::Build& build, float lo, float hi) {
  return {{"vector", {Dim({4}), Dim({4})}, build, lo, hi},
          {"matrix_batched", {Dim({2, 3}, 2), Dim({2, 3}, 2)}, build, lo, hi},
          {"unbatched_left", {Dim({3}), Dim({3}, 3)}, build, lo, hi},
          {"unbatched_right", {Dim({3}, 2), Dim({3})}, build, lo, hi},
          {"mismatch", {Dim({3}), Dim({4})}, build, lo, hi, true},
          {"batch_mismatch", {Dim({3}, 2), Dim({3}, 3)}, build, lo, hi, true}};
}
// ±1 offsets for the first argument (shaped like one of its batch elements), keeping x - y away
// from the kink at 0 when both inputs are in [-0.3, 0.3].
Expression alternate_offsets(const Expression& x) {
  std::vector<float> off(x.dim().batch_size());
  for (size_t k = 0; k < off.size(); ++k) off[k] = k % 2 ? -1.f : 1.f;
  return plus_offsets(x, off);
}

// l1_distance(x, y): Σ |x - y|
constexpr char kL1[] = "l1_distance";
const OpId k_l1_distance = register_op(
    {.name = kL1,
     .doc = "y = Σ abs(x₁ - x₂) (per batch element)",
     .shape = pair_loss_shape<kL1>,
     .forward = PairLoss<L1Op>::fwd<dev::HostPrims>,
     .backward = PairLoss<L1Op>::bwd<dev::HostPrims>,
     .batch = {.batchable = true},
     .samples = [] {
       return pair_loss_samples([](ComputationGraph&, Xs x) { return l1_distance(alternate_offsets(x[0]), x[1]); },
                                -0.3f, 0.3f);
     },
     .takes_empty = true});

// huber_distance(x, y, c): Σ h(x - y) with the textbook Huber function h(a) = a²/2 for |a| < c,
// c (|a| - c/2) beyond (what DyNet 2.x computes).
constexpr char kHuber[] = "huber_distance";
Dim huber_shape(const ArgDims& xs, AttrView a) {
  const float c = a.as<float>();
  if (!(c > 0.f) || !std::isfinite(c)) op_error(kHuber, "c must be positive and finite, got " + std::to_string(c));
  return pair_loss_shape<kHuber>(xs, a);
}
std::vector<OpSample> huber_samples() {
  std::vector<OpSample> s =
      pair_loss_samples([](ComputationGraph&, Xs x) { return huber_distance(x[0], x[1]); }, -1.5f, 1.5f);
  s.push_back({"small_c", {Dim({6}), Dim({6})},
               [](ComputationGraph&, Xs x) { return huber_distance(x[0], x[1], 0.3f); }});
  s.push_back({"zero_c", {Dim({3}), Dim({3})},
               [](ComputationGraph&, Xs x) { return huber_distance(x[0], x[1], 0.f); }, -1, 1, true});
  return s;
}
const OpId k_huber_distance = register_op(
    {.name = kHuber,
     .doc = "y = Σ h(x₁ - x₂), h(a) = a²/2 if abs(a) < c else c (abs(a) - c/2) (per batch element)",
     .shape = huber_shape,
     .forward = PairLoss<HuberOp>::fwd<dev::HostPrims>,
     .backward = PairLoss<HuberOp>::bwd<dev::HostPrims>,
     .batch = {.batchable = true},
     .samples = huber_samples,
     .takes_empty = true});

// binary_log_loss(x, y): -Σ [y ln x + (1 - y) ln(1 - x)]. As in DyNet, a probability of exactly 0
// (or 1) where the target wants the other side costs -ln(FLT_MIN) ≈ 87.3 instead of infinity, and
// so does x at 0 or 1 with a target strictly between them (the whole term, not y times it: DyNet's
// value); arguments outside [0, 1] count as 0 or 1 rather than producing NaN.
constexpr char kBinaryLogLoss[] = "binary_log_loss";
const OpId k_binary_log_loss = register_op(
    {.name = kBinaryLogLoss,
     .doc = "y = -Σ [x₂ ln x₁ + (1 - x₂) ln(1 - x₁)] (per batch element; ln clamped at ln FLT_MIN)",
     .shape = pair_loss_shape<kBinaryLogLoss>,
     .forward = PairLoss<BinaryLogLossOp>::fwd<dev::HostPrims>,
     .backward = PairLoss<BinaryLogLossOp>::bwd<dev::HostPrims>,
     .batch = {.batchable = true},
     .samples = [] {
       return pair_loss_samples([](ComputationGraph&, Xs x) { return binary_log_loss(x[0], x[1]); }, 0.05f, 0.95f);
     },
     .takes_empty = true});
}  // namespace
Expression l1_distance(const Expression& x, const Expression& y) { return make_node(k_l1_distance, x, y); }
DYNET_API(l1_distance, "l1_distance", "l1_distance(x, y)", "l1_distance(x, y)", Expression(const Expression&, const Expression&));
Expression huber_distance(const Expression& x, const Expression& y, float c) {
  return make_node(k_huber_distance, {&x, &y}, &c);
}
DYNET_API(huber_distance, "huber_distance", "huber_distance(x, y, c = 1.345f)", "huber_distance(x, y, c=1.345)", Expression(const Expression&, const Expression&, float));
Expression binary_log_loss(const Expression& x, const Expression& y) { return make_node(k_binary_log_loss, x, y); }
DYNET_API(binary_log_loss, "binary_log_loss", "binary_log_loss(x, y)", "binary_log_loss(x, y)", Expression(const Expression&, const Expression&));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// pairwise_rank_loss(x, y, m): max(0, m - x + y) elementwise (x should beat y by the margin m).
// DyNet accepted only {1} or {1, n} arguments; any equal shapes work here.
// pairwise_rank_loss: y = max(0, m - x + y) elementwise; where y > 0, dx -= g and dy += g.
template <class P>
void pairwise_rank_loss_fwd(const ForwardArgs& a) {
  const Tensor &x = a.xs[0], &y = a.xs[1];
  const size_t bs = a.fx.d.batch_size(), xs = x.d.bd == 1 ? 0 : bs, ys = y.d.bd == 1 ? 0 : bs;
  const float m = a.attr.as<float>();
  const float *xv = x.v, *yv = y.v;
  float* out = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) {
    const size_t b = i / bs, k = i % bs;
    out[i] = fn::max(m - xv[b * xs + k] + yv[b * ys + k], 0.f);
  });
}
template <class P>
void pairwise_rank_loss_bwd(const BackwardArgs& a) {
  const size_t bs = a.fx.d.batch_size();
  const float sign = a.i == 0 ? -1.f : 1.f;
  const float *f = a.fx.v, *g = a.dEdf.v;
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.xs[a.i].d.bd != 1, a.fx.d.bd, bs,
                         [=] DYNET_LAMBDA(size_t b, size_t k) { return f[b * bs + k] > 0.f ? sign * g[b * bs + k] : 0.f; });
}
DYNET_DEVICE_KERNELS("pairwise_rank_loss", pairwise_rank_loss_fwd, pairwise_rank_loss_bwd);

#ifndef DYNET_CUDA_PASS
constexpr char kRank[] = "pairwise_rank_loss";
Dim pairwise_rank_loss_shape(const ArgDims& xs, AttrView) {
  if (xs[0].single_batch() != xs[1].single_batch())
    op_error(kRank, "dims differ: " + xs[0].str() + " vs " + xs[1].str());
  Dim out = xs[0];
  out.bd = ops::broadcast_bd(kRank, xs[0], xs[1]);
  return out;
}
std::vector<OpSample> pairwise_rank_loss_samples() {
  // x offsets keep m - x + y at least 0.4 away from 0 (inputs in [-0.3, 0.3]); some terms active
  auto shifted = [](const Expression& x) {
    std::vector<float> off(x.dim().batch_size());
    static const float pattern[] = {2.5f, -1.f, 0.f, 3.f, -0.5f};
    for (size_t k = 0; k < off.size(); ++k) off[k] = pattern[k % 5];
    return plus_offsets(x, off);
  };
  std::vector<OpSample> s = pair_loss_samples(
      [shifted](ComputationGraph&, Xs x) { return pairwise_rank_loss(shifted(x[0]), x[1]); }, -0.3f, 0.3f);
  s.push_back({"scalar", {Dim({1}), Dim({1})},
               [](ComputationGraph&, Xs x) { return pairwise_rank_loss(x[0], x[1], 2.f); }, -0.3f, 0.3f});
  s.push_back({"row_margin_half", {Dim({1, 5}), Dim({1, 5})},
               [shifted](ComputationGraph&, Xs x) { return pairwise_rank_loss(shifted(x[0]), x[1], 0.5f); }, -0.2f,
               0.2f});
  return s;
}
const OpId k_pairwise_rank_loss = register_op({.name = kRank,
                                               .doc = "y = max(0, m - x₁ + x₂) (elementwise)",
                                               .shape = pairwise_rank_loss_shape,
                                               .forward = pairwise_rank_loss_fwd<dev::HostPrims>,
                                               .backward = pairwise_rank_loss_bwd<dev::HostPrims>,
                                               .batch = {.batchable = true},
                                               .samples = pairwise_rank_loss_samples});
}  // namespace
Expression pairwise_rank_loss(const Expression& x, const Expression& y, real m) {
  return make_node(k_pairwise_rank_loss, {&x, &y}, &m);
}
DYNET_API(pairwise_rank_loss, "pairwise_rank_loss", "pairwise_rank_loss(x, y, m = 1.0f)", "pairwise_rank_loss(x, y, m=1.0)", Expression(const Expression&, const Expression&, float));
namespace {
#endif

// ---------------------------------------------------------------------------------------------
// poisson_loss(x, y): -ln Poisson(y; λ = e^x) = e^x - y x + ln y! for a single value x per batch
// element (every batch element has the same target y).
struct PoissonAttr {
  const unsigned* py = nullptr;  // read at forward time
  uint32_t y = 0;
  uint32_t unused = 0;
};
inline float poisson_target(AttrView a) {
  const PoissonAttr& p = a.as<PoissonAttr>();
  return static_cast<float>(p.py ? *p.py : p.y);
}
// poisson_loss: y = e^x - t x + ln t!; dx += g (e^x - t).
template <class P>
void poisson_loss_fwd(const ForwardArgs& a) {
  const float t = poisson_target(a.attr), log_t_factorial = std::lgamma(t + 1.f);
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(),
              [=] DYNET_LAMBDA(size_t i) { y[i] = fn::exp(x[i]) - t * x[i] + log_t_factorial; });
}
template <class P>
void poisson_loss_bwd(const BackwardArgs& a) {
  const float t = poisson_target(a.attr);
  const float *x = a.xs[0].v, *g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t i) { dx[i] += g[i] * (fn::exp(x[i]) - t); });
}
DYNET_DEVICE_KERNELS("poisson_loss", poisson_loss_fwd, poisson_loss_bwd);

#ifndef DYNET_CUDA_PASS
Dim poisson_loss_shape(const ArgDims& xs, AttrView) {
  if (xs[0].batch_size() != 1) op_error("poisson_loss", "input must be a single value, got " + xs[0].str());
  return xs[0];
}
std::vector<OpSample> poisson_loss_samples() {
  static const unsigned target = 4;
  auto build = [](unsigned y) { return [y](ComputationGraph&, Xs x) { return poisson_loss(x[0], y); }; };
  return {{"scalar", {Dim({1})}, build(3)},
          {"zero_count", {Dim({1})}, build(0)},
          {"batched", {Dim({1}, 3)}, build(2)},
          {"pointer", {Dim({1, 1}, 2)}, [](ComputationGraph&, Xs x) { return poisson_loss(x[0], &target); }},
          {"vector", {Dim({3})}, build(1), -1, 1, true}};
}
const OpId k_poisson_loss = register_op({.name = "poisson_loss",
                                         .doc = "y = e^x - t x + ln t! (t the target count)",
                                         .shape = poisson_loss_shape,
                                         .forward = poisson_loss_fwd<dev::HostPrims>,
                                         .backward = poisson_loss_bwd<dev::HostPrims>,
                                         .batch = {.batchable = true},
                                         .samples = poisson_loss_samples});
}  // namespace
Expression poisson_loss(const Expression& x, unsigned y) { return make_node(k_poisson_loss, x, PoissonAttr{nullptr, y, 0}); }
DYNET_API(poisson_loss, "poisson_loss", "poisson_loss(x, y: payload)", "poisson_loss(log_lambda, x)", Expression(const Expression&, unsigned));
Expression poisson_loss(const Expression& x, const unsigned* py) {
  if (!py) throw std::invalid_argument("poisson_loss: null target pointer");
  return make_node(k_poisson_loss, x, PoissonAttr{py, 0, 0});
}
DYNET_API(poisson_loss, "poisson_loss", "poisson_loss(x, py: payload)", nullptr, Expression(const Expression&, const unsigned*));
namespace {
#endif

}  // namespace
}  // namespace dynet
