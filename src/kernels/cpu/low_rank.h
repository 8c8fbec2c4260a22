// Deferred weight-gradient updates: the executors gather the rank-few updates of one gradient and run them
// as one GEMM (BackwardArgs::low_rank).
#pragma once

#include <vector>

namespace dynet {

// Defers `dEdxi += G · Xᵀ` (dEdxi m x k, unbatched; G m x cols and X k x cols, contiguous) for the
// executor to run all such updates of one gradient as a single GEMM once every consumer has
// contributed: a weight used by T matrix-vector (or matrix-minibatch) products then costs one
// m x k x (Σ cols) GEMM instead of T skinny ones, each of which reads and writes all of dEdxi.
struct LowRankUpdate {
  const float* g;
  const float* x;
  long m, k, cols;
  int next;  // previous update into the same gradient, -1 at the end
};
struct LowRankSink {
  // Deferral pays for skinny products only: from 32 columns on, a GEMM applied at once (its gradient
  // stays in cache between steps) beats gathering the columns into the deferred GEMM (measured for
  // 800x200 and 10000x256 weights: at 16 columns gathering wins, at 32-64 direct GEMMs win by 5-10%).
  static constexpr long kMaxColumns = 31;
  bool takes(long cols) const { return cols <= max_columns; }
  std::vector<LowRankUpdate>* updates;
  int* head;  // the destination node's list head
  // On a device every width is deferred: there the launches cost, and the flush is one gather and one GEMM.
  long max_columns = kMaxColumns;
  void add(const float* g, const float* x, long m, long k, long cols = 1) const {
    updates->push_back({g, x, m, k, cols, *head});
    *head = static_cast<int>(updates->size()) - 1;
  }
};

}  // namespace dynet
