// Shared helpers for op definitions.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "core/op.h"
#include "dynet/expr.h"
#include "kernels/cpu/eigen.h"
#include "kernels/device/strided.h"
#include "ops/sample.h"

namespace dynet::ops {

using Xs = const std::vector<Expression>&;  // the inputs an OpSample's build receives
using ArrayMap = cpu::ArrMap;
using CArrayMap = cpu::CArrMap;

// Batch element of argument x that output batch element b reads, for an output with B batch
// elements: an unbatched argument is shared; when several same-signature nodes run as one, an
// argument with fewer batch elements than the output is repeated in equal blocks.
inline size_t arg_batch(const Dim& x, size_t b, size_t B) { return x.bd == 1 ? 0 : b / (B / x.bd); }

// Output shape = the single argument's shape.
inline Dim same_shape(const ArgDims& xs, AttrView) { return xs[0]; }

// Batch count of a broadcasting op: equal, or one side 1.
inline unsigned broadcast_bd(const char* op, const Dim& a, const Dim& b) {
  if (a.bd == b.bd || b.bd == 1) return a.bd;
  if (a.bd == 1) return b.bd;
  op_error(op, "batch sizes differ: " + a.str() + " vs " + b.str());
}

// A tensor seen as [inner, n, outer] around dim `axis` (kernels/device/strided.h).
using dev::Fibers;
using dev::fibers;

// "{2,3}, {3}" for error messages.
inline std::string join(const ArgDims& xs) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + xs[i].str();
  return s;
}

// Batch count of several arguments that are each unbatched or of one common count.
inline unsigned common_bd(const char* op, const ArgDims& xs) {
  unsigned bd = 1;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].bd == 1 || xs[i].bd == bd) continue;
    if (bd != 1) op_error(op, "batch sizes differ: " + join(xs));
    bd = xs[i].bd;
  }
  return bd;
}

// Samples for a unary elementwise op with inputs drawn from [lo, hi].
inline std::vector<OpSample> unary_samples(Expression (*f)(const Expression&), float lo, float hi) {
  auto build = [f](ComputationGraph&, const std::vector<Expression>& x) { return f(x[0]); };
  return {{"vector", {Dim({5})}, build, lo, hi},
          {"matrix", {Dim({3, 4})}, build, lo, hi},
          {"batched", {Dim({3, 2}, 3)}, build, lo, hi}};
}

// The indices of a node whose attribute struct H has `pv` (one index, read at forward time), `pvec`
// (an index vector, read at forward time) and `n` (the number of indices, inline after H when both
// pointers are null). Throws if *pvec changed size after the node was created.
struct IndexList {
  const unsigned* ids;
  size_t n;
};
template <class H>
IndexList index_list(const char* op, AttrView a) {
  const H& h = a.as<H>();
  if (h.pv) return {h.pv, 1};
  if (!h.pvec) return {a.tail<unsigned, H>(), h.n};
  if (h.pvec->size() != h.n)
    op_error(op, "the index vector changed size after the node was created (" + std::to_string(h.n) + " -> " +
                     std::to_string(h.pvec->size()) + ")");
  return {h.pvec->data(), h.pvec->size()};
}

// BatchRule::merge for ops whose attribute H lists indices as index_list<H> reads them (one index for
// every batch element or one per element): the batched node gets one inline index per batch element
// of every member (pointer forms read now); H's other fields come from member 0 (they are in the key).
template <class H>
void merge_index_lists(const char* op, const AttrView* m, unsigned k, const Dim& d, std::vector<uint64_t>& out) {
  H h = m[0].as<H>();
  h.pv = nullptr;
  h.pvec = nullptr;
  h.n = d.bd * k;
  h.per_batch = 1;
  unsigned* ids = append_attr<unsigned>(out, h, size_t(d.bd) * k);
  for (unsigned j = 0; j < k; ++j) {
    const IndexList src = index_list<H>(op, m[j]);
    for (unsigned b = 0; b < d.bd; ++b) *ids++ = src.ids[b % src.n];
  }
}
// A BatchRule::key made of the bytes [kOffset, kOffset + kBytes) of attribute struct H (the fields
// that must agree; the others are per-instance payload).
template <class H, size_t kOffset, size_t kBytes>
uint32_t key_bytes(AttrView a, uint64_t* out) {
  static_assert(kOffset + kBytes <= sizeof(H));
  constexpr uint32_t words = (kBytes + 7) / 8;
  for (uint32_t w = 0; w < words; ++w) out[w] = 0;
  std::memcpy(out, reinterpret_cast<const char*>(a.p) + kOffset, kBytes);
  return words;
}

}  // namespace dynet::ops
