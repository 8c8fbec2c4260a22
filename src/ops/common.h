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

// Samples for a unary elementwise op with inputs drawn from [lo, hi].
inline std::vector<OpSample> unary_samples(Expression (*f)(const Expression&), float lo, float hi) {
  auto build = [f](ComputationGraph&, const std::vector<Expression>& x) { return f(x[0]); };
  return {{"vector", {Dim({5})}, build, lo, hi},
          {"matrix", {Dim({3, 4})}, build, lo, hi},
          {"batched", {Dim({3, 2}, 3)}, build, lo, hi}};
}

}  // namespace dynet::ops
