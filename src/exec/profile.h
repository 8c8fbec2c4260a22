// Execution profiling: --dynet-profiling 1 prints a per-op time table at exit ("Timing Info", as
// DyNet); 2 also prints the batch composition of every forward pass; DYNET_TRACE=<file> writes a
// Chrome-trace JSON of every node group run (open it in Perfetto or chrome://tracing) at exit.
// Everything here costs one branch per node group when off.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/op.h"

namespace dynet::profile {

// Whether timing is on (--dynet-profiling >= 1 or DYNET_TRACE set).
bool active();
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
// Scheduling work that belongs to no op (signatures, agenda).
void record_schedule(size_t nodes, uint64_t begin_ns, uint64_t end_ns);

// Times one group when profiling is active.
class Scope {
 public:
  Scope(Phase phase, OpId op, unsigned members = 1) : phase_(phase), op_(op), members_(members) {
    if (active()) begin_ = now_ns();
  }
  void set_gathered(size_t bytes, const Dim* member_dim) {
    gathered_ = bytes;
    dim_ = member_dim;
  }
  ~Scope() {
    if (begin_) record(phase_, op_, members_, begin_, now_ns(), gathered_, dim_);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Phase phase_;
  OpId op_;
  unsigned members_;
  uint64_t begin_ = 0;
  size_t gathered_ = 0;
  const Dim* dim_ = nullptr;
};

// The per-op table so far (what is printed at exit), for tests and programs that want it earlier.
std::string timing_table();
// Clears the table and the trace.
void reset();

}  // namespace dynet::profile
