// Execution profiling: --dynet-profiling 1 prints a per-op time table at exit ("Timing Info", as
// DyNet); 2 also prints the batch composition of every forward pass; DYNET_TRACE=<file> writes a
// Chrome-trace JSON of every node group run (open it in Perfetto or chrome://tracing) at exit.
// Everything here costs one branch per node group when off.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "core/op.h"

namespace dynet::profile {

namespace detail {
extern std::atomic<bool> g_tracing;  // DYNET_TRACE or set_trace_file()
}
// Whether timing is on (--dynet-profiling >= 1 or tracing).
inline bool active() { return profiling_flag > 0 || detail::g_tracing.load(std::memory_order_relaxed); }
// Whether forward passes print their batch composition (--dynet-profiling >= 2).
inline bool composition() { return profiling_flag >= 2; }

inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

enum class Phase : uint8_t { kForward, kBackward, kSchedule };

// One node group run (members > 1: batched): accumulated per op; traced when DYNET_TRACE is set.
void record(Phase phase, OpId op, unsigned members, uint64_t begin_ns, uint64_t end_ns, size_t gathered_bytes = 0,
            const Dim* member_dim = nullptr);
// A forward pass of the autobatching executor over `nodes` nodes, of which schedule_ns went to
// scheduling (signatures, agenda) rather than to running ops; traced as a slice around its groups.
void record_pass(size_t nodes, uint64_t begin_ns, uint64_t end_ns, uint64_t schedule_ns);

// Times one group when profiling is active.
class Scope {
 public:
  // `spent` (when given) accumulates the time measured, so a caller can subtract it from its own.
  Scope(Phase phase, OpId op, unsigned members = 1, uint64_t* spent = nullptr)
      : phase_(phase), op_(op), members_(members), spent_(spent) {
    if (active()) begin_ = now_ns();
  }
  void set_gathered(size_t bytes, const Dim* member_dim) {
    gathered_ = bytes;
    dim_ = member_dim;
  }
  ~Scope() {
    if (!begin_) return;
    const uint64_t end = now_ns();
    record(phase_, op_, members_, begin_, end, gathered_, dim_);
    if (spent_) *spent_ += end - begin_;
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Phase phase_;
  OpId op_;
  unsigned members_;
  uint64_t* spent_;
  uint64_t begin_ = 0;
  size_t gathered_ = 0;
  const Dim* dim_ = nullptr;
};

// The per-op table so far (what is printed at exit), for tests and programs that want it earlier.
std::string timing_table();
// Clears the table and the trace.
void reset();
// Traces to `path` from now on (empty: stop tracing), as DYNET_TRACE does from the start.
void set_trace_file(const std::string& path);
// Writes the trace now (it is written at exit anyway).
void write_trace();

}  // namespace dynet::profile
