// Shared helpers for op definitions.
#pragma once

#include <string>

#include "core/op.h"
#include "kernels/cpu/eigen.h"

namespace dynet::ops {

// Output shape = the single argument's shape.
inline Dim same_shape(const ArgDims& xs, AttrView) { return xs[0]; }

// Batch count of a broadcasting op: equal, or one side 1.
inline unsigned broadcast_bd(const char* op, const Dim& a, const Dim& b) {
  if (a.bd == b.bd || b.bd == 1) return a.bd;
  if (a.bd == 1) return b.bd;
  op_error(op, "batch sizes differ: " + a.str() + " vs " + b.str());
}

// A tensor seen as [inner, n, outer] around dim `axis`; outer includes the batch when `with_batch`.
struct Fibers {
  unsigned inner = 1, n = 1, outer = 1;
};
inline Fibers fibers(const Dim& d, unsigned axis, bool with_batch = true) {
  Fibers f;
  for (unsigned k = 0; k < d.nd; ++k) {
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

// "{2,3}, {3}" for error messages.
inline std::string join(const ArgDims& xs) {
  std::string s;
  for (unsigned i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + xs[i].str();
  return s;
}

// Batch count of several arguments that are each unbatched or of one common count.
inline unsigned common_bd(const char* op, const ArgDims& xs) {
  unsigned bd = 1;
  for (unsigned i = 0; i < xs.size(); ++i) {
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

}  // namespace dynet::ops
