// Work sharing for large kernels without OpenMP's spinning: the calling thread runs chunks itself and
// helper threads, asleep while idle, take chunks once they wake. On a busy machine a helper that is not
// scheduled simply takes no chunks: the caller never waits for work that has not started.
#pragma once

#include <functional>

namespace dynet::cpu {

// Runs chunk(0) ... chunk(n - 1), each exactly once, on the calling thread and up to threads - 1
// helpers; returns when all are done. Chunks must be independent. An exception thrown by a chunk is
// rethrown here after every started chunk has finished (the remaining chunks are skipped).
void parallel_chunks(int n, int threads, const std::function<void(int)>& chunk);

}  // namespace dynet::cpu
