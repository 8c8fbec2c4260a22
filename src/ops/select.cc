// Selection and shape ops: pick, pick_range, concatenate, reshape, transpose, select_rows/cols.
#include "kernels/device/prims.h"
#include "kernels/device/strided.h"

#ifndef DYNET_CUDA_PASS
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {

// ---- device kernels: gathers from host-validated indices (kept in aux for backward) ----
// The indices these ops read at forward time, validated, into ids (defined in their ops' sections below;
// the CUDA pass links to the host pass's definitions): one per output batch element (pick), per selected
// row or column (select_rows/cols: kAxis 0 or 1), per output batch element (pick_batch_elems).
void pick_indices(AttrView a, const Dim& x, unsigned B, unsigned* ids);
void select_indices(AttrView a, unsigned axis, const Dim& x, unsigned* ids);
void pick_batch_indices(AttrView a, const Dim& x, unsigned* ids);
// strided_select's axes (the dims, then the batch), validated: the first index, step and count of each;
// returns their number.
unsigned strided_select_axes(const Dim& x, AttrView a, unsigned* first, unsigned* step, unsigned* count);

#ifndef DYNET_CUDA_PASS
namespace {
using ops::Xs;
using ops::ArrayMap;
using ops::CArrayMap;

using ops::arg_batch;

using ops::Fibers;
using ops::fibers;

inline void copy_floats(float* dst, const float* src, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }
inline void add_floats(float* dst, const float* src, size_t n) { ArrayMap(dst, n) += CArrayMap(src, n); }

std::string idx_str(unsigned v) { return std::to_string(v); }
}  // namespace
#endif

// ---------------------------------------------------------------------------------------------
// pick(x, v, d): x[v] along dim d, which is removed. Vector forms pick one index per batch element.
namespace {
struct PickAttr {
  const unsigned* pv = nullptr;                 // single index read at forward time
  const std::vector<unsigned>* pvec = nullptr;  // one index per batch element, read at forward time
  uint32_t n = 0;                               // number of indices (inline ones follow in the tail)
  uint32_t per_batch = 0;                       // 1: the vector forms
  uint32_t axis = 0;
  uint32_t unused = 0;  // keeps the struct free of padding (attributes are hashed bytewise)
};
// y(b, o, i) = x(b', o, ids[b], i) for pick along an axis [inner, n, outer] of each batch element.
template <class P>
void pick_dev_fwd(const ForwardArgs& a) {
  const Tensor& x = a.xs[0];
  const dev::Fibers f = dev::fibers(x.d, a.attr.as<PickAttr>().axis, false);
  const size_t B = a.fx.d.bd, bs = x.d.batch_size(), xs = x.d.bd == 1 ? 0 : bs, ys = a.fx.d.batch_size();
  std::vector<unsigned> host(B);
  pick_indices(a.attr, x.d, unsigned(B), host.data());
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux);
  a.fx.device->copy_from_host(ids, host.data(), B * sizeof(unsigned));
  const size_t inner = f.inner, n = f.n;
  const float* xv = x.v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) {
    const size_t b = j / ys, r = j % ys;
    y[j] = xv[b * xs + ((r / inner) * n + ids[b]) * inner + r % inner];
  });
}
template <class P>
void pick_dev_bwd(const BackwardArgs& a) {
  const Tensor& x = a.xs[0];
  const dev::Fibers f = dev::fibers(x.d, a.attr.as<PickAttr>().axis, false);
  const size_t bs = x.d.batch_size(), xs = x.d.bd == 1 ? 0 : bs, ys = a.fx.d.batch_size();
  const size_t inner = f.inner, n = f.n;
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux);
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) {  // a shared x sums over the batch
    const size_t b = j / ys, r = j % ys;
    dev::atomic_add(dx + b * xs + ((r / inner) * n + ids[b]) * inner + r % inner, g[j]);
  });
}
DYNET_DEVICE_KERNELS("pick", pick_dev_fwd, pick_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim pick_shape(const ArgDims& xs, AttrView a) {
  const Dim& x = xs[0];
  const PickAttr& p = a.as<PickAttr>();
  if (p.axis >= x.nd) op_error("pick", "dim " + idx_str(p.axis) + " out of range for input " + x.str());
  if (p.per_batch && x.bd != 1 && x.bd != p.n)
    op_error("pick", idx_str(p.n) + " indices given for input " + x.str() + " with " + idx_str(x.bd) +
                         " batch elements");
  if (!p.pv && !p.pvec) {
    const unsigned* ids = a.tail<unsigned, PickAttr>();
    for (size_t k = 0; k < p.n; ++k)
      if (ids[k] >= x.d[p.axis])
        op_error("pick", "index " + idx_str(ids[k]) + " out of range for dim " + idx_str(p.axis) + " (size " +
                             idx_str(x.d[p.axis]) + ") of input " + x.str());
  }
  Dim out = x;
  out.delete_dim(p.axis);
  out.bd = p.per_batch ? p.n : x.bd;
  return out;
}
size_t pick_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.bd; }
// CPU kernel kept: op_perf generic/CPU 1.43 single, 1.42 x64 fwd+bwd (it copies whole fibers; the generic
// kernel divides indices per element).
void pick_fwd(const ForwardArgs& a) {
  const PickAttr& p = a.attr.as<PickAttr>();
  const Tensor& x = a.xs[0];
  const Fibers f = fibers(x.d, p.axis, false);
  const size_t B = a.fx.d.bd, bs = x.d.batch_size();
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux);
  pick_indices(a.attr, x.d, unsigned(B), ids);
  for (size_t b = 0; b < B; ++b) {
    const unsigned v = ids[b];
    const float* xb = x.v + size_t(arg_batch(x.d, b, B)) * bs;
    float* y = a.fx.batch_ptr(b);
    for (size_t o = 0; o < f.outer; ++o)
      copy_floats(y + size_t(o) * f.inner, xb + (size_t(o) * f.n + v) * f.inner, f.inner);
  }
}
void pick_bwd(const BackwardArgs& a) {
  const PickAttr& p = a.attr.as<PickAttr>();
  const Tensor& x = a.xs[0];
  const Fibers f = fibers(x.d, p.axis, false);
  const size_t B = a.fx.d.bd, bs = x.d.batch_size();
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux);
  for (size_t b = 0; b < B; ++b) {
    float* dx = a.dEdxi.v + size_t(arg_batch(x.d, b, B)) * bs;
    const float* g = a.dEdf.batch_ptr(b);
    for (size_t o = 0; o < f.outer; ++o)
      add_floats(dx + (size_t(o) * f.n + ids[b]) * f.inner, g + size_t(o) * f.inner, f.inner);
  }
}
std::vector<OpSample> pick_samples() {
  static const unsigned index = 2;
  static const std::vector<unsigned> indices = {1, 0, 3};
  static const unsigned bad_index = 7;
  auto one = [](unsigned v, unsigned d) { return [v, d](ComputationGraph&, Xs x) { return pick(x[0], v, d); }; };
  auto many = [](std::vector<unsigned> v, unsigned d) {
    return [v, d](ComputationGraph&, Xs x) { return pick(x[0], v, d); };
  };
  auto ptr = [](const unsigned* pv, unsigned d) { return [pv, d](ComputationGraph&, Xs x) { return pick(x[0], pv, d); }; };
  auto vptr = [](const std::vector<unsigned>* pv, unsigned d) {
    return [pv, d](ComputationGraph&, Xs x) { return pick(x[0], pv, d); };
  };
  static const unsigned per_index[3] = {2, 0, 1};
  static const std::vector<unsigned> per_indices[3] = {{1, 0}, {3, 3}, {0, 2}};
  auto inst = [](Dim d, OpSample::Instance f) {
    return OpSample{.name = "instances", .inputs = {d}, .build = [f](ComputationGraph& g, Xs x) { return f(g, x, 0); },
                    .instance = f};
  };
  OpSample vectors = inst(Dim({4, 3}, 2), [](ComputationGraph&, Xs x, unsigned k) { return pick(x[0], per_indices[k % 3], 0); });
  vectors.name = "vector_instances";
  OpSample pointers = inst(Dim({4, 2}), [](ComputationGraph&, Xs x, unsigned k) { return pick(x[0], &per_index[k % 3], 0); });
  pointers.name = "pointer_instances";
  return {inst(Dim({4, 2}), [](ComputationGraph&, Xs x, unsigned k) { return pick(x[0], k % 4, 0); }),
          vectors,
          pointers,
          {"vector", {Dim({5})}, one(3, 0)},
          {"matrix_row", {Dim({3, 4})}, one(1, 0)},
          {"matrix_col", {Dim({3, 4})}, one(2, 1)},
          {"tensor_middle", {Dim({2, 3, 4})}, one(1, 1)},
          {"batched", {Dim({3, 2}, 2)}, one(1, 0)},
          {"per_batch", {Dim({3, 2}, 3)}, many({0, 2, 1}, 0)},
          {"per_batch_dim1", {Dim({3, 2}, 2)}, many({1, 0}, 1)},
          {"broadcast", {Dim({3})}, many({2, 0}, 0)},
          {"pointer", {Dim({4}, 2)}, ptr(&index, 0)},
          {"pointer_vector", {Dim({4, 2}, 3)}, vptr(&indices, 0)},
          {"out_of_range", {Dim({3, 4})}, one(3, 0), -1, 1, true},
          {"bad_dim", {Dim({3, 4})}, one(0, 2), -1, 1, true},
          {"wrong_count", {Dim({3}, 3)}, many({0, 1}, 0), -1, 1, true},
          {"pointer_out_of_range", {Dim({4})}, ptr(&bad_index, 0), -1, 1, true}};
}
// Picks along one dim batch; the batched node picks every member's indices.
void pick_merge(const AttrView* m, unsigned k, const Dim& d, std::vector<uint64_t>& out) {
  ops::merge_index_lists<PickAttr>("pick", m, k, d, out);
}
const OpId k_pick = register_op({.name = "pick",
                                 .doc = "y = x[v] along dim d (removed); vector forms: y[b] = x[b][v[b]]",
                                 .shape = pick_shape,
                                 .forward = pick_fwd,
                                 .backward = pick_bwd,
                                 .aux_floats = pick_aux,
                                 .batch = {.batchable = true,
                                           .key = ops::key_bytes<PickAttr, offsetof(PickAttr, axis), sizeof(uint32_t)>,
                                           .merge = pick_merge},
                                 .samples = pick_samples});

Expression pick_node(const Expression& x, PickAttr p, const unsigned* ids) {
  return make_node_with_ids(k_pick, x, p, ids, p.n);
}
}  // namespace
void pick_indices(AttrView a, const Dim& x, unsigned B, unsigned* ids) {
  const PickAttr& p = a.as<PickAttr>();
  const ops::IndexList src = ops::index_list<PickAttr>("pick", a);
  for (size_t b = 0; b < B; ++b) {
    const unsigned v = src.ids[b % src.n];
    if (v >= x[p.axis])
      op_error("pick", "index " + idx_str(v) + " out of range for dim " + idx_str(p.axis) + " (size " +
                           idx_str(x[p.axis]) + ") of input " + x.str());
    ids[b] = v;
  }
}
Expression pick(const Expression& x, unsigned v, unsigned d) { return pick_node(x, PickAttr{nullptr, nullptr, 1, 0, d}, &v); }
DYNET_API(pick, "pick", "pick(x, v: payload, d = 0)", nullptr, Expression(const Expression&, unsigned, unsigned));
Expression pick(const Expression& x, const unsigned* pv, unsigned d) {
  if (!pv) throw std::invalid_argument("pick: null index pointer");
  return pick_node(x, PickAttr{pv, nullptr, 1, 0, d}, nullptr);
}
DYNET_API(pick, "pick", "pick(x, pv: payload, d = 0)", "pick(e, index=0, dim=0)", Expression(const Expression&, const unsigned*, unsigned));
Expression pick(const Expression& x, const std::vector<unsigned>& v, unsigned d) {
  if (v.empty()) throw std::invalid_argument("pick: empty index vector");
  return pick_node(x, PickAttr{nullptr, nullptr, static_cast<uint32_t>(v.size()), 1, d}, v.data());
}
DYNET_API(pick, "pick", "pick(x, v: payload, d = 0)", nullptr, Expression(const Expression&, const std::vector<unsigned>&, unsigned));
Expression pick(const Expression& x, const std::vector<unsigned>* pv, unsigned d) {
  if (!pv) throw std::invalid_argument("pick: null index pointer");
  if (pv->empty()) throw std::invalid_argument("pick: empty index vector");
  return pick_node(x, PickAttr{nullptr, pv, static_cast<uint32_t>(pv->size()), 1, d}, nullptr);
}
DYNET_API(pick, "pick", "pick(x, pv: payload, d = 0)", "pick_batch(e, indices, dim=0)", Expression(const Expression&, const std::vector<unsigned>*, unsigned));
#endif

// ---------------------------------------------------------------------------------------------
// pick_range(x, s, e, d): x[s:e) along dim d.
namespace {
struct RangeAttr {
  uint32_t s, e, axis;
};
// pick_range: contiguous slices of each fiber.
template <class P>
void pick_range_dev_fwd(const ForwardArgs& a) {
  const RangeAttr& r = a.attr.as<RangeAttr>();
  const dev::Fibers f = dev::fibers(a.xs[0].d, r.axis, true);
  const size_t len = size_t(r.e - r.s) * f.inner, n = f.n, inner = f.inner, s = r.s;
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(),
              [=] DYNET_LAMBDA(size_t j) { y[j] = x[((j / len) * n + s) * inner + j % len]; });
}
template <class P>
void pick_range_dev_bwd(const BackwardArgs& a) {
  const RangeAttr& r = a.attr.as<RangeAttr>();
  const dev::Fibers f = dev::fibers(a.xs[0].d, r.axis, true);
  const size_t len = size_t(r.e - r.s) * f.inner, n = f.n, inner = f.inner, s = r.s;
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.fx.d.size(),
              [=] DYNET_LAMBDA(size_t j) { dx[((j / len) * n + s) * inner + j % len] += g[j]; });
}
DYNET_DEVICE_KERNELS("pick_range", pick_range_dev_fwd, pick_range_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim pick_range_shape(const ArgDims& xs, AttrView a) {
  const RangeAttr& r = a.as<RangeAttr>();
  const Dim& x = xs[0];
  if (r.axis >= x.nd) op_error("pick_range", "dim " + idx_str(r.axis) + " out of range for input " + x.str());
  if (r.s >= r.e || r.e > x.d[r.axis])
    op_error("pick_range", "range [" + idx_str(r.s) + ", " + idx_str(r.e) + ") is empty or exceeds dim " +
                               idx_str(r.axis) + " (size " + idx_str(x.d[r.axis]) + ") of input " + x.str());
  Dim out = x;
  out.d[r.axis] = r.e - r.s;
  return out;
}
// CPU kernel kept: op_perf generic/CPU 1.37 single, 2.51 x64 fwd+bwd (memcpy of each slice; the generic
// kernel divides indices per element).
void pick_range_fwd(const ForwardArgs& a) {
  const RangeAttr& r = a.attr.as<RangeAttr>();
  const Fibers f = fibers(a.xs[0].d, r.axis, true);
  const size_t len = size_t(r.e - r.s) * f.inner;
  for (size_t o = 0; o < f.outer; ++o)
    copy_floats(a.fx.v + o * len, a.xs[0].v + (size_t(o) * f.n + r.s) * f.inner, len);
}
void pick_range_bwd(const BackwardArgs& a) {
  const RangeAttr& r = a.attr.as<RangeAttr>();
  const Fibers f = fibers(a.xs[0].d, r.axis, true);
  const size_t len = size_t(r.e - r.s) * f.inner;
  for (size_t o = 0; o < f.outer; ++o)
    add_floats(a.dEdxi.v + (size_t(o) * f.n + r.s) * f.inner, a.dEdf.v + o * len, len);
}
std::vector<OpSample> pick_range_samples() {
  // x[s:e) along dim d; a good sample's reference copies those values from fibers [inner, n, outer·batch].
  auto range = [](const char* name, Dim x, unsigned s, unsigned e, unsigned d, bool bad = false) {
    OpSample sample{name, {x}, [s, e, d](ComputationGraph&, Xs xs) { return pick_range(xs[0], s, e, d); }, -1, 1, bad};
    if (!bad)
      sample.reference = [x, s, e, d](const std::vector<std::vector<double>>& xs) {
        const Fibers f = fibers(x, d);
        std::vector<double> y(f.inner * (e - s) * f.outer);
        for (size_t o = 0; o < f.outer; ++o)
          for (size_t k = s; k < e; ++k)
            for (size_t i = 0; i < f.inner; ++i) y[(o * (e - s) + k - s) * f.inner + i] = xs[0][(o * f.n + k) * f.inner + i];
        return y;
      };
    return sample;
  };
  return {range("vector", Dim({5}), 1, 4, 0),
          range("matrix_cols", Dim({4, 3}), 1, 3, 1),
          range("tensor_middle", Dim({2, 4, 3}), 2, 4, 1),
          range("batched", Dim({4, 2}, 2), 0, 2, 0),
          range("empty", Dim({5}), 2, 2, 0, true),
          range("past_end", Dim({5}), 3, 6, 0, true),
          range("bad_dim", Dim({5}), 0, 1, 1, true)};
}
const OpId k_pick_range = register_op({.name = "pick_range",
                                       .doc = "y = x[s:e) along dim d",
                                       .shape = pick_range_shape,
                                       .forward = pick_range_fwd,
                                       .backward = pick_range_bwd,
                                       .batch = {.batchable = true},
                                       .samples = pick_range_samples});
}  // namespace
Expression pick_range(const Expression& x, unsigned s, unsigned e, unsigned d) {
  return make_node(k_pick_range, x, RangeAttr{s, e, d});
}
DYNET_API(pick_range, "pick_range", "pick_range(x, s, e, d = 0)", "pick_range(x, s, e, d=0)", Expression(const Expression&, unsigned, unsigned, unsigned));
Expression pickrange(const Expression& x, unsigned s, unsigned e) { return pick_range(x, s, e, 0); }
DYNET_API(pickrange, "pick_range", "pickrange(x, s, e)", "pickrange(x, s, e)", Expression(const Expression&, unsigned, unsigned));
#endif

// ---------------------------------------------------------------------------------------------
// concatenate(xs, d): along dim d; the other dims must match; unbatched arguments broadcast.
namespace {
// Every argument in one launch: argument i of member j at p[i * members + j] (by pointer: member_xs or member_dx;
// else xs[i].v, one member), its batch stride, and where its piece starts in a fiber of the output (at[i], with
// at[n] the fiber's length), in one upload.
struct ConcatTable {
  const float* const* p;
  const size_t *stride, *at;
};
template <class T>
ConcatTable concat_table(const Tensor* xs, unsigned n, unsigned members, const T* const* ptrs, size_t inner,
                         unsigned axis, Device* dev, MemPool& scratch) {
  thread_local std::vector<uintptr_t> words;
  words.assign(size_t(n) * members + 2 * size_t(n) + 1, 0);
  uintptr_t *stride = words.data() + size_t(n) * members, *at = stride + n;
  for (unsigned i = 0; i < n; ++i) {
    for (unsigned j = 0; j < members; ++j)
      words[size_t(i) * members + j] = reinterpret_cast<uintptr_t>(ptrs ? ptrs[size_t(i) * members + j] : xs[i].v);
    stride[i] = xs[i].d.bd == 1 ? 0 : xs[i].d.batch_size();
    at[i + 1] = at[i] + size_t(xs[i].d[axis]) * inner;
  }
  const uintptr_t* up = dev::upload(dev, scratch, words.data(), words.size());
  return {reinterpret_cast<const float* const*>(up), reinterpret_cast<const size_t*>(up + size_t(n) * members),
          reinterpret_cast<const size_t*>(up + size_t(n) * members + n)};
}
// f(e, member j's argument i, its element) for every output element e (members' outputs one after another).
template <class P, class F>
void for_each_piece(const Tensor& fx, unsigned axis, unsigned n, unsigned members, const ConcatTable& t, F f) {
  const dev::Fibers fo = dev::fibers(fx.d, axis, false);
  const size_t obs = fx.d.batch_size(), row = size_t(fo.n) * fo.inner, B = fx.d.bd / members;
  P::for_each(fx.device, fx.d.size(), [=] DYNET_LAMBDA(size_t e) {
    const size_t j = e / (B * obs), b = e / obs % B, q = e % obs % row, o = e % obs / row;
    const size_t i = dev::segment_of(t.at, 0, n, q), len = t.at[i + 1] - t.at[i];
    f(e, t.p[i * members + j], b * t.stride[i] + o * len + q - t.at[i]);
  });
}
template <class P>
void concatenate_dev_fwd(const ForwardArgs& a) {
  const unsigned axis = a.attr.as<unsigned>(), members = a.member_xs ? a.members : 1;
  const ConcatTable t = concat_table(a.xs, a.n, members, a.member_xs, dev::fibers(a.fx.d, axis, false).inner, axis,
                                     a.fx.device, a.scratch);
  float* y = a.fx.v;
  for_each_piece<P>(a.fx, axis, a.n, members, t, [=] DYNET_LAMBDA(size_t e, const float* x, size_t at) { y[e] = x[at]; });
}
template <class P>
void concatenate_dev_bwd(const BackwardArgs& a) {
  const unsigned axis = a.attr.as<unsigned>();
  const dev::Fibers fo = dev::fibers(a.fx.d, axis, false);
  const size_t obs = a.fx.d.batch_size(), row = size_t(fo.n) * fo.inner;
  const float* g = a.dEdf.v;
  if (a.member_dx) {  // kGradientsInOneCall, or by pointer: all arguments at once (atomically: one may repeat)
    const ConcatTable t = concat_table(a.xs, a.n, a.members, a.member_dx, fo.inner, axis, a.fx.device, a.scratch);
    for_each_piece<P>(a.fx, axis, a.n, a.members, t, [=] DYNET_LAMBDA(size_t e, const float* dx, size_t at) {
      if (dx) dev::atomic_add(const_cast<float*>(dx) + at, g[e]);
    });
    return;
  }
  size_t offset = 0;
  for (unsigned i = 0; i < a.i; ++i) offset += size_t(a.xs[i].d[axis]) * fo.inner;
  const Tensor& x = a.xs[a.i];
  const size_t len = size_t(x.d[axis]) * fo.inner, xbs = x.d.batch_size();
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, x.d.bd != 1, a.fx.d.bd, xbs, [=] DYNET_LAMBDA(size_t b, size_t r) {
    return g[b * obs + (r / len) * row + offset + r % len];
  });
}
DYNET_DEVICE_KERNELS("concatenate", concatenate_dev_fwd, concatenate_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim concatenate_shape(const ArgDims& xs, AttrView a) {
  const unsigned axis = a.as<unsigned>();
  if (axis >= DYNET_MAX_TENSOR_DIM)
    op_error("concatenate", "dim " + idx_str(axis) + " out of range (at most " +
                                idx_str(DYNET_MAX_TENSOR_DIM - 1) + ")");
  Dim out = xs[0];
  out.resize(std::max(out.nd, axis + 1));
  size_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Dim& x = xs[i];
    for (size_t k = 0; k < DYNET_MAX_TENSOR_DIM; ++k)
      if (k != axis && x[k] != xs[0][k])
        op_error("concatenate", "along dim " + idx_str(axis) + " the other dims must match, got " + xs[0].str() +
                                    " and " + x.str());
    if (x.bd != 1 && out.bd != 1 && x.bd != out.bd)
      op_error("concatenate", "batch sizes differ: " + xs[0].str() + " and " + x.str());
    out.bd = std::max(out.bd, x.bd);  // the rank is the first argument's (DyNet: [{2}, {2,1}] -> {4})
    total += x[axis];
  }
  out.d[axis] = total;
  return out;
}
// CPU kernel kept: it batches by pointer (member_xs/member_dx, prefetching), which the generic kernel
// lacks; op_perf generic/CPU 1.34 single, 2.37 x64 fwd+bwd.
// Batched by pointer (BatchRule::by_pointer), member j's output is block j of fx and its arguments are
// read from (forward) or added to (backward, all arguments in one call) the members' own memory;
// unbatched, one member whose arguments are xs. The members' pieces lie far apart (a parser's features:
// stack items all over memory), so those of the member kAhead further on are requested early.
constexpr unsigned kConcatAhead = 4;
void prefetch_pieces(const float* p, size_t len, int write) {
  if (!p) return;
  for (size_t t = 0; t < len; t += 16) write ? __builtin_prefetch(p + t, 1) : __builtin_prefetch(p + t, 0);
}
void concatenate_fwd(const ForwardArgs& a) {
  const unsigned axis = a.attr.as<unsigned>();
  const unsigned members = a.member_xs ? a.members : 1;
  const Fibers fo = fibers(a.fx.d, axis, false);
  const size_t B = a.fx.d.bd / members, bs = a.fx.d.batch_size();
  for (unsigned j = 0; j < members; ++j) {
    if (a.member_xs && j + kConcatAhead < members && fo.outer == 1)
      for (size_t i = 0; i < a.n; ++i)
        prefetch_pieces(a.member_xs[i * members + j + kConcatAhead], size_t(a.xs[i].d[axis]) * fo.inner, 0);
    for (size_t b = 0; b < B; ++b) {
      float* y = a.fx.v + (j * B + b) * bs;
      size_t offset = 0;
      for (size_t i = 0; i < a.n; ++i) {
        const Tensor& x = a.xs[i];
        const size_t len = size_t(x.d[axis]) * fo.inner;
        const float* xv = a.member_xs ? a.member_xs[i * members + j] : x.v;
        // An argument has the member's batch or none (by pointer: always the member's).
        const float* xb = xv + (x.d.bd == 1 ? 0 : b * x.d.batch_size());
        for (size_t o = 0; o < fo.outer; ++o) copy_floats(y + o * size_t(fo.n) * fo.inner + offset, xb + o * len, len);
        offset += len;
      }
    }
  }
}
void concatenate_bwd(const BackwardArgs& a) {
  const unsigned axis = a.attr.as<unsigned>();
  const Fibers fo = fibers(a.fx.d, axis, false);
  if (a.member_dx) {
    const unsigned members = a.members;
    const size_t B = a.fx.d.bd / members, bs = a.fx.d.batch_size();
    for (unsigned j = 0; j < members; ++j) {
      if (j + kConcatAhead < members && fo.outer == 1)
        for (size_t i = 0; i < a.n; ++i)
          prefetch_pieces(a.member_dx[i * members + j + kConcatAhead], size_t(a.xs[i].d[axis]) * fo.inner, 1);
      for (size_t b = 0; b < B; ++b) {
        const float* g = a.dEdf.v + (j * B + b) * bs;
        size_t offset = 0;
        for (size_t i = 0; i < a.n; ++i) {
          const size_t len = size_t(a.xs[i].d[axis]) * fo.inner;
          if (float* dx = a.member_dx[i * members + j]) {
            dx += b * a.xs[i].d.batch_size();  // by pointer, arguments have the member's batch
            for (size_t o = 0; o < fo.outer; ++o) add_floats(dx + o * len, g + o * size_t(fo.n) * fo.inner + offset, len);
          }
          offset += len;
        }
      }
    }
    return;
  }
  const size_t B = a.fx.d.bd;
  size_t offset = 0;
  for (size_t i = 0; i < a.i; ++i) offset += size_t(a.xs[i].d[axis]) * fo.inner;
  const Tensor& x = a.xs[a.i];
  const size_t len = size_t(x.d[axis]) * fo.inner;
  for (size_t b = 0; b < B; ++b) {
    const float* g = a.dEdf.batch_ptr(b);
    float* dx = a.dEdxi.v + size_t(arg_batch(x.d, b, B)) * x.d.batch_size();
    for (size_t o = 0; o < fo.outer; ++o) add_floats(dx + o * len, g + o * size_t(fo.n) * fo.inner + offset, len);
  }
}
std::vector<OpSample> concatenate_samples() {
  auto along = [](unsigned d) { return [d](ComputationGraph&, Xs x) { return concatenate(x, d); }; };
  return {{"single", {Dim({3})}, along(0)},
          {"rows", {Dim({2}), Dim({3})}, along(0)},
          {"matrix_rows", {Dim({2, 3}), Dim({1, 3}), Dim({3, 3})}, along(0)},
          {"cols", {Dim({3, 2}), Dim({3})}, along(1)},
          {"vectors_to_matrix", {Dim({3}), Dim({3})}, along(1)},
          {"dim2", {Dim({2, 3}), Dim({2, 3, 2})}, along(2)},
          {"batched", {Dim({2}, 2), Dim({3}, 2)}, along(0)},
          {"broadcast", {Dim({2, 2}, 3), Dim({2, 1})}, along(1)},
          {"vector_then_column", {Dim({2}), Dim({3, 1})}, along(0)},  // {5}: the first argument's rank
          {"column_then_vector", {Dim({2, 1}), Dim({3})}, along(0)},  // {5,1}
          {"mismatch", {Dim({2, 3}), Dim({3, 3})}, along(1), -1, 1, true},
          {"batch_mismatch", {Dim({2}, 2), Dim({2}, 3)}, along(0), -1, 1, true},
          {"bad_dim", {Dim({2})}, along(DYNET_MAX_TENSOR_DIM), -1, 1, true}};
}
const OpId k_concatenate = register_op({.name = "concatenate",
                                        .doc = "y = [xs[0]; xs[1]; ...] along dim d (unbatched arguments broadcast)",
                                        .shape = concatenate_shape,
                                        .forward = concatenate_fwd,
                                        .backward = concatenate_bwd,
                                        .batch = {.batchable = true, .by_pointer = true},
                                        .samples = concatenate_samples,
                                        .flags = kGradientsInOneCall,
                                        .takes_empty = true});
}  // namespace
Expression concatenate(const std::initializer_list<Expression>& xs, unsigned d) {
  return make_node_n(k_concatenate, xs, &d, sizeof(d));
}
DYNET_API(concatenate, "concatenate", "concatenate(xs, d = 0)", nullptr, Expression(const std::initializer_list<Expression>&, unsigned));
Expression concatenate(const std::vector<Expression>& xs, unsigned d) {
  return make_node_n(k_concatenate, xs, &d, sizeof(d));
}
DYNET_API(concatenate, "concatenate", "concatenate(xs, d = 0)", "concatenate(xs, d=0)", Expression(const std::vector<Expression>&, unsigned));
Expression concatenate_cols(const std::initializer_list<Expression>& xs) { return concatenate(xs, 1); }
DYNET_API(concatenate_cols, "concatenate", "concatenate_cols(xs)", nullptr, Expression(const std::initializer_list<Expression>&));
Expression concatenate_cols(const std::vector<Expression>& xs) { return concatenate(xs, 1); }
DYNET_API(concatenate_cols, "concatenate", "concatenate_cols(xs)", "concatenate_cols(xs)", Expression(const std::vector<Expression>&));
#endif

// ---------------------------------------------------------------------------------------------
// reshape(x, d): the same values under a new shape (no copy).
namespace {
// reshape aliases its argument on every device; its gradient adds straight through.
template <class P>
void reshape_fwd(const ForwardArgs& a) {
  a.fx.v = a.xs[0].v;
}
template <class P>
void reshape_bwd(const BackwardArgs& a) {
  a.fx.device->axpy(1.f, a.dEdf.v, a.dEdxi.v, a.dEdxi.d.size());
}
DYNET_DEVICE_KERNELS("reshape", reshape_fwd, reshape_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim reshape_shape(const ArgDims& xs, AttrView a) {
  const Dim& to = a.as<Dim>();
  const Dim& x = xs[0];
  if (to.size() == x.size()) return to;
  // A target without a batch keeps the input's batch when the per-example sizes agree.
  if (to.bd == 1 && to.batch_size() == x.batch_size()) {
    Dim out = to;
    out.bd = x.bd;
    return out;
  }
  op_error("reshape", "cannot reshape " + x.str() + " (" + idx_str(x.size()) + " values) to " + to.str());
}
std::vector<OpSample> reshape_samples() {
  auto to = [](Dim d) { return [d](ComputationGraph&, Xs x) { return reshape(x[0], d); }; };
  std::vector<OpSample> samples = {{"vector_to_matrix", {Dim({6})}, to(Dim({2, 3}))},
                                   {"keeps_batch", {Dim({2, 3}, 2)}, to(Dim({3, 2}))},
                                   {"batch_into_dims", {Dim({2, 3}, 2)}, to(Dim({12}))},
                                   {"dims_into_batch", {Dim({6})}, to(Dim({3}, 2))},
                                   {"wrong_size", {Dim({6})}, to(Dim({4})), -1, 1, true},
                                   {"wrong_batch", {Dim({2}, 3)}, to(Dim({2}, 2)), -1, 1, true}};
  for (OpSample& x : samples) x.reference = elementwise_reference([](double v) { return v; });  // the same values
  return samples;
}
const OpId k_reshape = register_op({.name = "reshape",
                                    .doc = "y = x viewed with dim d (same values, column-major; no copy)",
                                    .shape = reshape_shape,
                                    .forward = reshape_fwd<dev::HostPrims>,
                                    .backward = reshape_bwd<dev::HostPrims>,
                                    .batch = {.why_not = "its value is its argument's memory: there is nothing to compute"},
                                    .samples = reshape_samples,
                                    .flags = kAliasOutput});
}  // namespace
Expression reshape(const Expression& x, const Dim& d) { return make_node(k_reshape, x, d); }
DYNET_API(reshape, "reshape", "reshape(x, d)", "reshape(x, d, batch_size=1)", Expression(const Expression&, const Dim&));
#endif

// ---------------------------------------------------------------------------------------------
// transpose(x, dims): output dim j = input dim dims[j], for each batch element.
namespace {
struct TransposeAttr {
  uint32_t n = 0;
  uint32_t perm[DYNET_MAX_TENSOR_DIM] = {};
};
// transpose: output element j of each batch element reads input offset src(j) (a bijection).
struct Permutation {
  unsigned n = 0;
  size_t odim[DYNET_MAX_TENSOR_DIM], istride[DYNET_MAX_TENSOR_DIM];  // per output dim: size, input stride
  DYNET_HD size_t src(size_t j) const {
    size_t s = 0;
    for (unsigned k = 0; k < n; ++k) {
      s += (j % odim[k]) * istride[k];
      j /= odim[k];
    }
    return s;
  }
};
Permutation permutation(const Dim& x, const TransposeAttr& t) {
  Permutation p;
  size_t stride[DYNET_MAX_TENSOR_DIM], s = 1;
  for (unsigned k = 0; k < t.n; ++k) {
    stride[k] = s;
    s *= x[k];
  }
  p.n = t.n;
  for (unsigned k = 0; k < t.n; ++k) {
    p.odim[k] = x[t.perm[k]];
    p.istride[k] = stride[t.perm[k]];
  }
  return p;
}
template <class P>
void transpose_dev_fwd(const ForwardArgs& a) {
  const Permutation p = permutation(a.xs[0].d, a.attr.as<TransposeAttr>());
  const size_t bs = a.fx.d.batch_size();
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) { y[j] = x[(j / bs) * bs + p.src(j % bs)]; });
}
template <class P>
void transpose_dev_bwd(const BackwardArgs& a) {
  const Permutation p = permutation(a.xs[0].d, a.attr.as<TransposeAttr>());
  const size_t bs = a.fx.d.batch_size();
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) { dx[(j / bs) * bs + p.src(j % bs)] += g[j]; });
}
DYNET_DEVICE_KERNELS("transpose", transpose_dev_fwd, transpose_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim transpose_shape(const ArgDims& xs, AttrView a) {
  const TransposeAttr& t = a.as<TransposeAttr>();
  const Dim& x = xs[0];
  auto perm_str = [&t] {
    std::string s = "{";
    for (size_t j = 0; j < t.n; ++j) {
      if (j) s += ',';
      s += idx_str(t.perm[j]);
    }
    return s + "}";
  };
  bool seen[DYNET_MAX_TENSOR_DIM] = {};
  for (size_t j = 0; j < t.n; ++j) {
    if (t.perm[j] >= t.n || seen[t.perm[j]])
      op_error("transpose", "dims " + perm_str() + " are not a permutation of 0.." + idx_str(t.n - 1));
    seen[t.perm[j]] = true;
  }
  for (size_t k = t.n; k < x.nd; ++k)
    if (x.d[k] != 1)
      op_error("transpose", "dims " + perm_str() + " do not cover every dim of input " + x.str());
  Dim out;
  out.nd = t.n;
  out.bd = x.bd;
  for (size_t j = 0; j < t.n; ++j) out.d[j] = x[t.perm[j]];
  return out;
}
// dst (dim j = sdims[perm[j]]) = or += the permuted src.
template <bool kAccumulate>
void permute(const float* src, const unsigned* sdims, unsigned k, const uint32_t* perm, float* dst) {
  size_t sstride[DYNET_MAX_TENSOR_DIM];
  size_t s = 1;
  for (size_t j = 0; j < k; ++j) {
    sstride[j] = s;
    s *= sdims[j];
  }
  const size_t total = s;
  if (total == 0) return;
  unsigned odims[DYNET_MAX_TENSOR_DIM], idx[DYNET_MAX_TENSOR_DIM] = {};
  size_t ostride[DYNET_MAX_TENSOR_DIM];
  for (size_t j = 0; j < k; ++j) {
    odims[j] = sdims[perm[j]];
    ostride[j] = sstride[perm[j]];
  }
  if (k == 2 && perm[0] == 1) {
    using M = Eigen::Map<Eigen::MatrixXf, Eigen::Unaligned>;
    using CM = Eigen::Map<const Eigen::MatrixXf, Eigen::Unaligned>;
    if constexpr (kAccumulate)
      M(dst, odims[0], odims[1]) += CM(src, sdims[0], sdims[1]).transpose();
    else
      M(dst, odims[0], odims[1]) = CM(src, sdims[0], sdims[1]).transpose();
    return;
  }
  const unsigned n0 = k ? odims[0] : 1;
  const size_t s0 = k ? ostride[0] : 1;
  size_t soff = 0;
  for (size_t t = 0; t < total; t += n0) {
    for (size_t i = 0; i < n0; ++i) {
      if constexpr (kAccumulate)
        dst[t + i] += src[soff + i * s0];
      else
        dst[t + i] = src[soff + i * s0];
    }
    for (size_t j = 1; j < k; ++j) {
      soff += ostride[j];
      if (++idx[j] < odims[j]) break;
      soff -= ostride[j] * odims[j];
      idx[j] = 0;
    }
  }
}
// CPU kernel kept: op_perf generic/CPU 3.15 single, 6.00 x64 fwd+bwd (it walks the input with running
// offsets; the generic kernel divides per element and dimension).
void transpose_fwd(const ForwardArgs& a) {
  const TransposeAttr& t = a.attr.as<TransposeAttr>();
  const Dim& x = a.xs[0].d;
  unsigned sdims[DYNET_MAX_TENSOR_DIM];
  for (size_t j = 0; j < t.n; ++j) sdims[j] = x[j];
  for (size_t b = 0; b < a.fx.d.bd; ++b)
    permute<false>(a.xs[0].batch_ptr(b), sdims, t.n, t.perm, a.fx.batch_ptr(b));
}
void transpose_bwd(const BackwardArgs& a) {
  const TransposeAttr& t = a.attr.as<TransposeAttr>();
  uint32_t inverse[DYNET_MAX_TENSOR_DIM];
  for (size_t j = 0; j < t.n; ++j) inverse[t.perm[j]] = j;
  unsigned gdims[DYNET_MAX_TENSOR_DIM];
  for (size_t j = 0; j < t.n; ++j) gdims[j] = a.fx.d[j];
  for (size_t b = 0; b < a.fx.d.bd; ++b)
    permute<true>(a.dEdf.batch_ptr(b), gdims, t.n, inverse, a.dEdxi.batch_ptr(b));
}
// transpose's math in double: output dim j is input dim p[j], so output element (c_0, c_1, ..., b) is the
// input element whose coordinate p[j] is c_j.
OpSample::Reference transpose_reference(const Dim& d, const std::vector<unsigned>& p) {
  return [d, p](const std::vector<std::vector<double>>& xs) {
    size_t stride[DYNET_MAX_TENSOR_DIM], size[DYNET_MAX_TENSOR_DIM];
    for (size_t k = 0, st = 1; k < p.size(); ++k) {
      stride[k] = st;
      st *= k < d.nd ? d.d[k] : 1;
    }
    for (size_t j = 0; j < p.size(); ++j) size[j] = p[j] < d.nd ? d.d[p[j]] : 1;
    std::vector<double> y(xs[0].size());
    for (size_t i = 0; i < y.size(); ++i) {
      size_t rest = i % d.batch_size(), at = i / d.batch_size() * d.batch_size();
      for (size_t j = 0; j < p.size(); ++j) {
        at += rest % size[j] * stride[p[j]];
        rest /= size[j];
      }
      y[i] = xs[0][at];
    }
    return y;
  };
}
std::vector<OpSample> transpose_samples() {
  auto perm = [](const char* name, Dim x, std::vector<unsigned> p, bool bad = false) {
    OpSample s{name, {x}, [p](ComputationGraph&, Xs xs) { return transpose(xs[0], p); }, -1, 1, bad};
    if (!bad) s.reference = transpose_reference(x, p);
    return s;
  };
  return {perm("matrix", Dim({3, 4}), {1, 0}),
          perm("vector", Dim({3}), {1, 0}),
          perm("identity", Dim({2, 3}), {0, 1}),
          perm("rotate3", Dim({2, 3, 4}), {2, 0, 1}),
          perm("swap_outer", Dim({2, 3, 4}), {0, 2, 1}),
          perm("batched", Dim({3, 2}, 2), {1, 0}),
          perm("batched3", Dim({2, 3, 2}, 2), {1, 2, 0}),
          perm("repeated", Dim({3, 3}), {0, 0}, true),
          perm("out_of_range", Dim({3, 3}), {0, 2}, true),
          perm("too_few", Dim({2, 3, 4}), {1, 0}, true)};
}
const OpId k_transpose = register_op({.name = "transpose",
                                      .doc = "y[i_{dims[0]}, i_{dims[1]}, ...] = x[i_0, i_1, ...] (output dim j = input dim dims[j])",
                                      .shape = transpose_shape,
                                      .forward = transpose_fwd,
                                      .backward = transpose_bwd,
                                      .batch = {.batchable = true},
                                      .samples = transpose_samples});
}  // namespace
Expression transpose(const Expression& x, const std::vector<unsigned>& dims) {
  if (dims.size() > DYNET_MAX_TENSOR_DIM)
    op_error("transpose", idx_str(unsigned(dims.size())) + " dims given; at most " +
                              idx_str(DYNET_MAX_TENSOR_DIM) + " are supported");
  TransposeAttr t;
  t.n = static_cast<uint32_t>(dims.size());
  for (size_t j = 0; j < dims.size(); ++j) t.perm[j] = dims[j];
  return make_node(k_transpose, x, t);
}
DYNET_API(transpose, "transpose", "transpose(x, dims = {1, 0})", "transpose(x, dims=[1, 0])", Expression(const Expression&, const std::vector<unsigned>&));
#endif

// ---------------------------------------------------------------------------------------------
// select_rows / select_cols: gather rows (dim 0) or columns (dim 1); the same list for every batch element.
namespace {
struct SelectAttr {
  const std::vector<unsigned>* p = nullptr;  // read at forward time
  uint32_t n = 0;                            // number of indices (inline ones follow in the tail)
  uint32_t unused = 0;                       // no padding: attributes are hashed bytewise
};
// select_rows / select_cols: y(o, k, i) = x(o, ids[k], i); the gradient scatters (ids may repeat).
template <unsigned kAxis>
struct SelectDev {
  template <class P>
  static void fwd(const ForwardArgs& a) {
    const dev::Fibers f = dev::fibers(a.xs[0].d, kAxis, true);
    const size_t k = a.fx.d[kAxis], inner = f.inner, n = f.n;
    std::vector<unsigned> host(k);
    select_indices(a.attr, kAxis, a.xs[0].d, host.data());
    unsigned* ids = reinterpret_cast<unsigned*>(a.aux);
    a.fx.device->copy_from_host(ids, host.data(), k * sizeof(unsigned));
    const float* x = a.xs[0].v;
    float* y = a.fx.v;
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) {
      const size_t i = j % inner, t = (j / inner) % k, o = j / (inner * k);
      y[j] = x[(o * n + ids[t]) * inner + i];
    });
  }
  template <class P>
  static void bwd(const BackwardArgs& a) {
    const dev::Fibers f = dev::fibers(a.xs[0].d, kAxis, true);
    const size_t k = a.fx.d[kAxis], inner = f.inner, n = f.n;
    const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux);
    const float* g = a.dEdf.v;
    float* dx = a.dEdxi.v;
    P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) {
      const size_t i = j % inner, t = (j / inner) % k, o = j / (inner * k);
      dev::atomic_add(dx + (o * n + ids[t]) * inner + i, g[j]);
    });
  }
};
DYNET_DEVICE_KERNELS("select_rows", SelectDev<0>::fwd, SelectDev<0>::bwd);
DYNET_DEVICE_KERNELS("select_cols", SelectDev<1>::fwd, SelectDev<1>::bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
template <unsigned kAxis>
constexpr const char* select_name() {
  return kAxis == 0 ? "select_rows" : "select_cols";
}
template <unsigned kAxis>
Dim select_shape(const ArgDims& xs, AttrView a) {
  const SelectAttr& s = a.as<SelectAttr>();
  const Dim& x = xs[0];
  const char* op = select_name<kAxis>();
  if (!s.p) {
    const unsigned* ids = a.tail<unsigned, SelectAttr>();
    for (size_t k = 0; k < s.n; ++k)
      if (ids[k] >= x[kAxis])
        op_error(op, "index " + idx_str(ids[k]) + " out of range for input " + x.str() + " (dim " +
                         idx_str(x[kAxis]) + ")");
  }
  Dim out = x;
  out.set(kAxis, s.n);
  return out;
}
size_t select_aux(const Dim&, const ArgDims&, AttrView a) { return a.as<SelectAttr>().n; }
// CPU kernel kept: op_perf generic/CPU select_rows 1.50 single, 1.70 x64; select_cols 2.07, 3.15 fwd+bwd
// (whole fibers copied; the generic kernel divides indices per element).
template <unsigned kAxis>
void select_fwd(const ForwardArgs& a) {
  const SelectAttr& s = a.attr.as<SelectAttr>();
  const Fibers f = fibers(a.xs[0].d, kAxis, true);
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux);
  select_indices(a.attr, kAxis, a.xs[0].d, ids);
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  for (size_t o = 0; o < f.outer; ++o)
    for (size_t k = 0; k < s.n; ++k) {
      const float* from = x + (size_t(o) * f.n + ids[k]) * f.inner;
      float* to = y + (size_t(o) * s.n + k) * f.inner;
      if (f.inner == 1)
        *to = *from;
      else
        copy_floats(to, from, f.inner);
    }
}
template <unsigned kAxis>
void select_bwd(const BackwardArgs& a) {
  const SelectAttr& s = a.attr.as<SelectAttr>();
  const Fibers f = fibers(a.xs[0].d, kAxis, true);
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux);
  float* dx = a.dEdxi.v;
  const float* g = a.dEdf.v;
  for (size_t o = 0; o < f.outer; ++o)
    for (size_t k = 0; k < s.n; ++k) {
      float* to = dx + (size_t(o) * f.n + ids[k]) * f.inner;
      const float* from = g + (size_t(o) * s.n + k) * f.inner;
      if (f.inner == 1)
        *to += *from;
      else
        add_floats(to, from, f.inner);
    }
}
std::vector<OpSample> select_rows_samples() {
  static const std::vector<unsigned> rows = {2, 0};
  static const std::vector<unsigned> bad_rows = {1, 4};
  auto sel = [](std::vector<unsigned> r) { return [r](ComputationGraph&, Xs x) { return select_rows(x[0], r); }; };
  auto sel_ptr = [](const std::vector<unsigned>* r) {
    return [r](ComputationGraph&, Xs x) { return select_rows(x[0], r); };
  };
  return {{"matrix", {Dim({4, 3})}, sel({3, 0, 3})},
          {"vector", {Dim({5})}, sel({4, 1})},
          {"batched", {Dim({4, 2}, 2)}, sel({1})},
          {"pointer", {Dim({3, 2}, 2)}, sel_ptr(&rows)},
          {"out_of_range", {Dim({4, 3})}, sel({4}), -1, 1, true},
          {"no_rows", {Dim({4, 3})}, sel({})},
          {"pointer_out_of_range", {Dim({4, 3})}, sel_ptr(&bad_rows), -1, 1, true}};
}
std::vector<OpSample> select_cols_samples() {
  static const std::vector<unsigned> cols = {1, 1, 0};
  static const std::vector<unsigned> bad_cols = {2};
  auto sel = [](std::vector<unsigned> c) { return [c](ComputationGraph&, Xs x) { return select_cols(x[0], c); }; };
  auto sel_ptr = [](const std::vector<unsigned>* c) {
    return [c](ComputationGraph&, Xs x) { return select_cols(x[0], c); };
  };
  return {{"matrix", {Dim({3, 4})}, sel({2, 0, 2})},
          {"vector", {Dim({3})}, sel({0, 0})},
          {"batched", {Dim({2, 3}, 2)}, sel({1, 2})},
          {"pointer", {Dim({3, 2})}, sel_ptr(&cols)},
          {"out_of_range", {Dim({3, 4})}, sel({4}), -1, 1, true},
          {"no_columns", {Dim({3, 4})}, sel({})},
          {"pointer_out_of_range", {Dim({3, 2})}, sel_ptr(&bad_cols), -1, 1, true}};
}
const OpId k_select_rows = register_op({.name = "select_rows",
                                        .doc = "y[k, ...] = x[rows[k], ...]",
                                        .shape = select_shape<0>,
                                        .forward = select_fwd<0>,
                                        .backward = select_bwd<0>,
                                        .aux_floats = select_aux,
                                        .batch = {.batchable = true},
                                        .samples = select_rows_samples,
                                        .makes_empty = true});
const OpId k_select_cols = register_op({.name = "select_cols",
                                        .doc = "y[:, k, ...] = x[:, cols[k], ...]",
                                        .shape = select_shape<1>,
                                        .forward = select_fwd<1>,
                                        .backward = select_bwd<1>,
                                        .aux_floats = select_aux,
                                        .batch = {.batchable = true},
                                        .samples = select_cols_samples,
                                        .makes_empty = true});

Expression select_node(OpId op, const Expression& x, const std::vector<unsigned>* p, const std::vector<unsigned>* ids) {
  SelectAttr s{p, static_cast<uint32_t>(p ? p->size() : ids->size()), 0};
  if (!ids) return make_node(op, x, s);
  const auto blob = attr_with_tail(s, ids->data(), ids->size());
  return make_node_n(op, &x, 1, blob.data(), blob.bytes());
}
}  // namespace
void select_indices(AttrView a, unsigned axis, const Dim& x, unsigned* ids) {
  const SelectAttr& s = a.as<SelectAttr>();
  const char* op = axis == 0 ? select_name<0>() : select_name<1>();
  const unsigned* src = s.p ? s.p->data() : a.tail<unsigned, SelectAttr>();
  if (s.p && s.p->size() != s.n)
    op_error(op, "the index vector changed size after the node was created (" + idx_str(s.n) + " -> " +
                     std::to_string(s.p->size()) + ")");
  for (size_t k = 0; k < s.n; ++k) {
    if (src[k] >= x[axis])
      op_error(op, "index " + idx_str(src[k]) + " out of range for input " + x.str() + " (dim " + idx_str(x[axis]) + ")");
    ids[k] = src[k];
  }
}
Expression select_rows(const Expression& x, const std::vector<unsigned>& rows) {
  return select_node(k_select_rows, x, nullptr, &rows);
}
DYNET_API(select_rows, "select_rows", "select_rows(x, rows)", "select_rows(x, rs)", Expression(const Expression&, const std::vector<unsigned>&));
Expression select_rows(const Expression& x, const std::vector<unsigned>* prows) {
  if (!prows) throw std::invalid_argument("select_rows: null index pointer");
  return select_node(k_select_rows, x, prows, nullptr);
}
DYNET_API(select_rows, "select_rows", "select_rows(x, prows)", nullptr, Expression(const Expression&, const std::vector<unsigned>*));
Expression select_cols(const Expression& x, const std::vector<unsigned>& cols) {
  return select_node(k_select_cols, x, nullptr, &cols);
}
DYNET_API(select_cols, "select_cols", "select_cols(x, cols)", "select_cols(x, cs)", Expression(const Expression&, const std::vector<unsigned>&));
Expression select_cols(const Expression& x, const std::vector<unsigned>* pcols) {
  if (!pcols) throw std::invalid_argument("select_cols: null index pointer");
  return select_node(k_select_cols, x, pcols, nullptr);
}
DYNET_API(select_cols, "select_cols", "select_cols(x, pcols)", nullptr, Expression(const Expression&, const std::vector<unsigned>*));
#endif

// ---------------------------------------------------------------------------------------------
// pick_batch_elem(s)(x, v): batch elements v[0], v[1], ... of x as a new batch (bd = |v|).
namespace {
struct BatchPickAttr {
  const unsigned* pv = nullptr;                 // single index read at forward time
  const std::vector<unsigned>* pvec = nullptr;  // indices read at forward time
  uint32_t n = 0;                               // number of indices (inline ones follow in the tail)
  uint32_t unused = 0;                          // no padding: attributes are hashed bytewise
};
// pick_batch_elems: y[b] = x[ids[b]]; the gradient scatters (ids may repeat).
template <class P>
void pick_batch_dev_fwd(const ForwardArgs& a) {
  const size_t B = a.fx.d.bd, bs = a.xs[0].d.batch_size();
  std::vector<unsigned> host(B);
  pick_batch_indices(a.attr, a.xs[0].d, host.data());
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux);
  a.fx.device->copy_from_host(ids, host.data(), B * sizeof(unsigned));
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) { y[j] = x[ids[j / bs] * bs + j % bs]; });
}
template <class P>
void pick_batch_dev_bwd(const BackwardArgs& a) {
  const size_t bs = a.xs[0].d.batch_size();
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux);
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.fx.d.size(),
              [=] DYNET_LAMBDA(size_t j) { dev::atomic_add(dx + ids[j / bs] * bs + j % bs, g[j]); });
}
DYNET_DEVICE_KERNELS("pick_batch_elems", pick_batch_dev_fwd, pick_batch_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
constexpr const char* kPickBatch = "pick_batch_elems";
void check_batch_index(unsigned v, const Dim& x) {
  if (v >= x.bd)
    op_error(kPickBatch, "batch index " + idx_str(v) + " out of range for input " + x.str() + " with " +
                             idx_str(x.bd) + " batch elements");
}
Dim pick_batch_shape(const ArgDims& xs, AttrView a) {
  const BatchPickAttr& p = a.as<BatchPickAttr>();
  const Dim& x = xs[0];
  if (!p.pv && !p.pvec) {
    const unsigned* ids = a.tail<unsigned, BatchPickAttr>();
    for (size_t k = 0; k < p.n; ++k) check_batch_index(ids[k], x);
  }
  Dim out = x;
  out.bd = p.n;
  return out;
}
size_t pick_batch_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.bd; }
// CPU kernel kept: op_perf generic/CPU 1.43 single, 1.23 x64 fwd+bwd (memcpy of whole batch elements).
void pick_batch_fwd(const ForwardArgs& a) {
  const BatchPickAttr& p = a.attr.as<BatchPickAttr>();
  const Tensor& x = a.xs[0];
  unsigned* ids = reinterpret_cast<unsigned*>(a.aux);
  pick_batch_indices(a.attr, x.d, ids);
  const size_t bs = x.d.batch_size();
  for (size_t b = 0; b < p.n; ++b) {
    copy_floats(a.fx.v + b * bs, x.v + ids[b] * bs, bs);
  }
}
void pick_batch_bwd(const BackwardArgs& a) {
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.aux);
  const size_t bs = a.xs[0].d.batch_size();
  for (size_t b = 0; b < a.fx.d.bd; ++b) add_floats(a.dEdxi.v + ids[b] * bs, a.dEdf.v + b * bs, bs);
}
std::vector<OpSample> pick_batch_samples() {
  static const unsigned index = 1;
  static const std::vector<unsigned> indices = {2, 0};
  static const unsigned bad_index = 3;
  auto one = [](unsigned v) { return [v](ComputationGraph&, Xs x) { return pick_batch_elem(x[0], v); }; };
  auto many = [](std::vector<unsigned> v) {
    return [v](ComputationGraph&, Xs x) { return pick_batch_elems(x[0], v); };
  };
  return {{"one", {Dim({3, 2}, 3)}, one(2)},
          {"many", {Dim({3}, 4)}, many({3, 0, 3})},
          {"unbatched", {Dim({2, 2})}, many({0, 0})},
          {"pointer", {Dim({2}, 3)}, [](ComputationGraph&, Xs x) { return pick_batch_elem(x[0], &index); }},
          {"pointer_vector", {Dim({2}, 3)}, [](ComputationGraph&, Xs x) { return pick_batch_elems(x[0], &indices); }},
          {"out_of_range", {Dim({3}, 2)}, one(2), -1, 1, true},
          {"empty", {Dim({3}, 2)}, many({}), -1, 1, true},
          {"pointer_out_of_range", {Dim({3}, 3)},
           [](ComputationGraph&, Xs x) { return pick_batch_elem(x[0], &bad_index); }, -1, 1, true}};
}
const OpId k_pick_batch = register_op({.name = kPickBatch,
                                       .doc = "y[b] = x[v[b]] (batch elements; pick_batch_elem gives one)",
                                       .shape = pick_batch_shape,
                                       .forward = pick_batch_fwd,
                                       .backward = pick_batch_bwd,
                                       .aux_floats = pick_batch_aux,
                                       .batch = {.why_not = "its indices address the batch elements of its argument"},
                                       .samples = pick_batch_samples});

Expression pick_batch_node(const Expression& x, BatchPickAttr p, const unsigned* ids) {
  if (p.n == 0) op_error(kPickBatch, "empty index list");
  return make_node_with_ids(k_pick_batch, x, p, ids, p.n);
}
}  // namespace
void pick_batch_indices(AttrView a, const Dim& x, unsigned* ids) {
  const BatchPickAttr& p = a.as<BatchPickAttr>();
  const unsigned* src = ops::index_list<BatchPickAttr>(kPickBatch, a).ids;
  for (size_t b = 0; b < p.n; ++b) {
    check_batch_index(src[b], x);
    ids[b] = src[b];
  }
}
Expression pick_batch_elem(const Expression& x, unsigned v) {
  return pick_batch_node(x, BatchPickAttr{nullptr, nullptr, 1, 0}, &v);
}
DYNET_API(pick_batch_elem, "pick_batch_elems", "pick_batch_elem(x, v: payload)", "pick_batch_elem(x, v)", Expression(const Expression&, unsigned));
Expression pick_batch_elem(const Expression& x, const unsigned* pv) {
  if (!pv) op_error(kPickBatch, "null index pointer");
  return pick_batch_node(x, BatchPickAttr{pv, nullptr, 1, 0}, nullptr);
}
DYNET_API(pick_batch_elem, "pick_batch_elems", "pick_batch_elem(x, pv: payload)", nullptr, Expression(const Expression&, const unsigned*));
Expression pick_batch_elems(const Expression& x, const std::vector<unsigned>& v) {
  return pick_batch_node(x, BatchPickAttr{nullptr, nullptr, static_cast<uint32_t>(v.size()), 0}, v.data());
}
DYNET_API(pick_batch_elems, "pick_batch_elems", "pick_batch_elems(x, v: payload)", "pick_batch_elems(x, vs)", Expression(const Expression&, const std::vector<unsigned>&));
Expression pick_batch_elems(const Expression& x, const std::vector<unsigned>* pv) {
  if (!pv) op_error(kPickBatch, "null index pointer");
  return pick_batch_node(x, BatchPickAttr{nullptr, pv, static_cast<uint32_t>(pv->size()), 0}, nullptr);
}
DYNET_API(pick_batch_elems, "pick_batch_elems", "pick_batch_elems(x, pv: payload)", nullptr, Expression(const Expression&, const std::vector<unsigned>*));
#endif

// ---------------------------------------------------------------------------------------------
// concatenate_to_batch(xs): the batch elements of xs[0], then of xs[1], ... (same per-element dims).
namespace {
// concatenate_to_batch: the arguments one after another.
template <class P>
void concatenate_to_batch_fwd(const ForwardArgs& a) {
  size_t offset = 0;
  for (unsigned i = 0; i < a.n; ++i) {
    a.fx.device->copy(a.fx.v + offset, a.xs[i].v, a.xs[i].d.size() * sizeof(float));
    offset += a.xs[i].d.size();
  }
}
template <class P>
void concatenate_to_batch_bwd(const BackwardArgs& a) {
  size_t offset = 0;
  for (unsigned i = 0; i < a.i; ++i) offset += a.xs[i].d.size();
  a.fx.device->axpy(1.f, a.dEdf.v + offset, a.dEdxi.v, a.dEdxi.d.size());
}
DYNET_DEVICE_KERNELS("concatenate_to_batch", concatenate_to_batch_fwd, concatenate_to_batch_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim concatenate_to_batch_shape(const ArgDims& xs, AttrView) {
  Dim out = xs[0];
  out.bd = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].single_batch() != xs[0].single_batch())
      op_error("concatenate_to_batch", "per-element dims differ: " + xs[0].str() + " and " + xs[i].str());
    out.bd += xs[i].bd;
  }
  return out;
}

std::vector<OpSample> concatenate_to_batch_samples() {
  auto build = [](ComputationGraph&, Xs x) { return concatenate_to_batch(x); };
  return {{"single", {Dim({3})}, build},
          {"unbatched", {Dim({2, 2}), Dim({2, 2})}, build},
          {"mixed", {Dim({3}, 2), Dim({3}), Dim({3}, 3)}, build},
          {"mismatch", {Dim({3}), Dim({2})}, build, -1, 1, true},
          {"transposed", {Dim({2, 3}), Dim({3, 2})}, build, -1, 1, true}};
}
const OpId k_concatenate_to_batch = register_op({.name = "concatenate_to_batch",
                                                 .doc = "y = [xs[0][0..B0), xs[1][0..B1), ...] along the batch",
                                                 .shape = concatenate_to_batch_shape,
                                                 .forward = concatenate_to_batch_fwd<dev::HostPrims>,
                                                 .backward = concatenate_to_batch_bwd<dev::HostPrims>,
                                                 .batch = {.why_not = "its output lays whole arguments one after another along the batch"},
                                                 .samples = concatenate_to_batch_samples});
}  // namespace
Expression concatenate_to_batch(const std::initializer_list<Expression>& xs) {
  return make_node_n(k_concatenate_to_batch, xs);
}
DYNET_API(concatenate_to_batch, "concatenate_to_batch", "concatenate_to_batch(xs)", nullptr, Expression(const std::initializer_list<Expression>&));
Expression concatenate_to_batch(const std::vector<Expression>& xs) { return make_node_n(k_concatenate_to_batch, xs); }
DYNET_API(concatenate_to_batch, "concatenate_to_batch", "concatenate_to_batch(xs)", "concatenate_to_batch(xs)", Expression(const std::vector<Expression>&));
#endif

// ---------------------------------------------------------------------------------------------
// strided_select(x, strides, from, to): x[from_k : to_k : strides_k] on every axis k, numpy-style.
// Axis k < x.nd is dim k; axis x.nd is the batch. Missing entries mean stride 1, from 0, to size.
namespace {
constexpr unsigned kMaxAxes = DYNET_MAX_TENSOR_DIM + 1;
struct StridedAttr {
  uint32_t n_strides = 0, n_from = 0, n_to = 0;
  int32_t strides[kMaxAxes] = {}, from[kMaxAxes] = {}, to[kMaxAxes] = {};
};
// strided_select: output element j reads input element in(j) (distinct j read distinct elements).
struct StridedPlan {
  unsigned rank = 0;
  size_t base = 0, count[dev::kAxes], step[dev::kAxes];  // step: along the axis, in input elements
  DYNET_HD size_t in(size_t j) const {
    size_t off = base;
    for (unsigned k = 0; k < rank; ++k) {
      off += (j % count[k]) * step[k];
      j /= count[k];
    }
    return off;
  }
};
StridedPlan strided_plan(const Dim& x, AttrView a) {
  unsigned first[dev::kAxes], step[dev::kAxes], count[dev::kAxes];
  StridedPlan p;
  p.rank = strided_select_axes(x, a, first, step, count);
  size_t stride = 1;
  for (unsigned k = 0; k < p.rank; ++k) {
    p.base += first[k] * stride;
    p.count[k] = count[k];
    p.step[k] = step[k] * stride;
    stride *= k < x.nd ? x.d[k] : x.bd;
  }
  return p;
}
template <class P>
void strided_select_dev_fwd(const ForwardArgs& a) {
  const StridedPlan p = strided_plan(a.xs[0].d, a.attr);
  const float* x = a.xs[0].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) { y[j] = x[p.in(j)]; });
}
template <class P>
void strided_select_dev_bwd(const BackwardArgs& a) {
  const StridedPlan p = strided_plan(a.xs[0].d, a.attr);
  const float* g = a.dEdf.v;
  float* dx = a.dEdxi.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) { dx[p.in(j)] += g[j]; });
}
DYNET_DEVICE_KERNELS("strided_select", strided_select_dev_fwd, strided_select_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
// Every axis of the input resolved to (size, first, step, count).
struct StridedAxes {
  unsigned rank = 0;
  unsigned in_size[kMaxAxes] = {}, first[kMaxAxes] = {}, step[kMaxAxes] = {}, count[kMaxAxes] = {};
};
StridedAxes resolve_strides(const Dim& x, const StridedAttr& s) {
  StridedAxes r;
  r.rank = x.nd + 1;
  const char* op = "strided_select";
  auto list = [](const int32_t* v, unsigned n) {
    std::string t = "{";
    for (size_t k = 0; k < n; ++k) {
      if (k) t += ',';
      t += std::to_string(v[k]);
    }
    return t + "}";
  };
  if (s.n_strides > r.rank || s.n_from > r.rank || s.n_to > r.rank)
    op_error(op, "strides " + list(s.strides, s.n_strides) + ", from " + list(s.from, s.n_from) + ", to " +
                     list(s.to, s.n_to) + " have more entries than the " + idx_str(r.rank) +
                     " axes (dims, then the batch) of input " + x.str());
  for (size_t k = 0; k < r.rank; ++k) {
    const long size = k < x.nd ? x.d[k] : x.bd;
    const long stride = k < s.n_strides ? s.strides[k] : 1;
    const long from = k < s.n_from ? s.from[k] : 0;
    const long to = k < s.n_to ? s.to[k] : size;
    const std::string axis = k < x.nd ? "dim " + idx_str(k) : std::string("the batch");
    if (stride < 1) op_error(op, "stride " + std::to_string(stride) + " on " + axis + " must be >= 1");
    if (from < 0 || to > size || from >= to)
      op_error(op, "range [" + std::to_string(from) + ", " + std::to_string(to) + ") on " + axis + " (size " +
                       std::to_string(size) + ") of input " + x.str() + " must satisfy 0 <= from < to <= size");
    r.in_size[k] = unsigned(size);
    r.first[k] = unsigned(from);
    r.step[k] = unsigned(stride);
    r.count[k] = unsigned((to - from + stride - 1) / stride);
  }
  return r;
}
Dim strided_shape(const ArgDims& xs, AttrView a) {
  const StridedAxes r = resolve_strides(xs[0], a.as<StridedAttr>());
  Dim out = xs[0];
  for (size_t k = 0; k < out.nd; ++k) out.d[k] = r.count[k];
  out.bd = r.count[out.nd];
  return out;
}
// Visits every output value y[j] with its input offset; kScatter adds dy back into dx instead.
// CPU kernel kept: op_perf generic/CPU 1.90-2.09 fwd+bwd single and x64 (running offsets along runs; the
// generic kernel divides per element and axis).
template <bool kScatter>
void strided_copy(const Dim& xd, const StridedAttr& s, const float* src, float* dst) {
  const StridedAxes r = resolve_strides(xd, s);
  size_t in_stride[kMaxAxes] = {};
  size_t stride = 1;
  for (size_t k = 0; k < r.rank; ++k) {
    in_stride[k] = stride;
    stride *= r.in_size[k];
  }
  size_t total = 1;
  for (size_t k = 0; k < r.rank; ++k) total *= r.count[k];
  size_t base = 0;
  for (size_t k = 0; k < r.rank; ++k) base += r.first[k] * in_stride[k];
  unsigned idx[kMaxAxes] = {};
  size_t in = base;
  const unsigned n0 = r.count[0];
  const size_t step0 = r.step[0] * in_stride[0];
  for (size_t j = 0; j < total; j += n0) {
    for (size_t i = 0; i < n0; ++i) {
      if constexpr (kScatter)
        dst[in + i * step0] += src[j + i];
      else
        dst[j + i] = src[in + i * step0];
    }
    for (size_t k = 1; k < r.rank; ++k) {
      in += r.step[k] * in_stride[k];
      if (++idx[k] < r.count[k]) break;
      in -= size_t(r.step[k]) * in_stride[k] * r.count[k];
      idx[k] = 0;
    }
  }
}
void strided_fwd(const ForwardArgs& a) {
  strided_copy<false>(a.xs[0].d, a.attr.as<StridedAttr>(), a.xs[0].v, a.fx.v);
}
void strided_bwd(const BackwardArgs& a) {
  strided_copy<true>(a.xs[0].d, a.attr.as<StridedAttr>(), a.dEdf.v, a.dEdxi.v);
}
std::vector<OpSample> strided_samples() {
  auto sel = [](std::vector<int> s, std::vector<int> f, std::vector<int> t) {
    return [=](ComputationGraph&, Xs x) { return strided_select(x[0], s, f, t); };
  };
  return {{"every_other_row", {Dim({5, 3})}, sel({2}, {}, {})},
          {"range_and_stride", {Dim({6, 4})}, sel({2, 3}, {1, 0}, {6, 4})},
          {"tensor", {Dim({3, 4, 5})}, sel({1, 2, 2}, {1, 1, 0}, {3, 4, 5})},
          {"batched_dims_only", {Dim({4, 2}, 3)}, sel({3}, {1}, {})},
          {"batch_entry", {Dim({2, 2}, 5)}, sel({1, 1, 2}, {0, 1, 1}, {2, 2, 5})},
          {"defaults", {Dim({3}, 2)}, sel({}, {}, {})},
          {"zero_stride", {Dim({4})}, sel({0}, {}, {}), -1, 1, true},
          {"empty_range", {Dim({4})}, sel({1}, {2}, {2}), -1, 1, true},
          {"past_end", {Dim({4})}, sel({1}, {0}, {5}), -1, 1, true},
          {"too_many", {Dim({4})}, sel({1, 1, 1}, {}, {}), -1, 1, true}};
}
const OpId k_strided_select = register_op({.name = "strided_select",
                                           .doc = "y = x[from_k : to_k : strides_k] on each dim k, then the batch",
                                           .shape = strided_shape,
                                           .forward = strided_fwd,
                                           .backward = strided_bwd,
                                           .batch = {.why_not = "its last entry may select from the batch"},
                                           .samples = strided_samples});
}  // namespace
unsigned strided_select_axes(const Dim& x, AttrView a, unsigned* first, unsigned* step, unsigned* count) {
  const StridedAxes r = resolve_strides(x, a.as<StridedAttr>());
  for (unsigned k = 0; k < r.rank; ++k) first[k] = r.first[k], step[k] = r.step[k], count[k] = r.count[k];
  return r.rank;
}
Expression strided_select(const Expression& x, const std::vector<int>& strides, const std::vector<int>& from,
                          const std::vector<int>& to) {
  if (strides.size() > kMaxAxes || from.size() > kMaxAxes || to.size() > kMaxAxes)
    op_error("strided_select", "at most " + idx_str(kMaxAxes) + " entries (dims, then the batch) per list");
  StridedAttr s;
  s.n_strides = static_cast<uint32_t>(strides.size());
  s.n_from = static_cast<uint32_t>(from.size());
  s.n_to = static_cast<uint32_t>(to.size());
  std::copy(strides.begin(), strides.end(), s.strides);
  std::copy(from.begin(), from.end(), s.from);
  std::copy(to.begin(), to.end(), s.to);
  return make_node(k_strided_select, x, s);
}
DYNET_API(strided_select, "strided_select", "strided_select(x, strides, from = {}, to = {})", "strided_select(x, strides, range_from, range_to)", Expression(const Expression&, const std::vector<int>&, const std::vector<int>&, const std::vector<int>&));
#endif

}  // namespace dynet
