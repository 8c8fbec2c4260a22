// Execution profiling: --dynet-profiling 1 prints a per-op time table at exit ("Timing Info", as
// DyNet); 2 also prints the batch composition of every forward pass; DYNET_TRACE=<file> writes a
// Chrome-trace JSON of every node group run (open it in Perfetto or chrome://tracing) at exit.
// A Collector gathers the same table and trace at run time, for a stretch of a program (Python's
// `with dy.profiler() as p:`), whatever the flags say and without changing what they print at exit.
// Everything here costs one branch per node group when nothing collects.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "core/op.h"

namespace dynet::profile {

namespace detail {
// Why timing is on besides --dynet-profiling: bit 0 while tracing to a file (DYNET_TRACE or
// set_trace_file()), plus 2 per running Collector; one word, so that active() stays one load.
extern std::atomic<uint32_t> g_on;
}
// Whether timing is on (--dynet-profiling >= 1, tracing, or a Collector running).
inline bool active() { return profiling_flag > 0 || detail::g_on.load(std::memory_order_relaxed) != 0; }
// Whether forward passes print their batch composition (--dynet-profiling >= 2).
inline bool composition() { return profiling_flag >= 2; }

inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

enum class Phase : uint8_t { kForward, kBackward, kSchedule };

// One node group run (members > 1: batched), whose members' output dim is *member_dim: accumulated per
// op; traced when tracing or collecting.
void record(Phase phase, OpId op, unsigned members, uint64_t begin_ns, uint64_t end_ns, size_t gathered_bytes = 0,
            const Dim* member_dim = nullptr);
// A forward pass of the autobatching executor over `nodes` nodes, of which schedule_ns went to
// scheduling (signatures, agenda) rather than to running ops; traced as a slice around its groups.
void record_pass(size_t nodes, uint64_t begin_ns, uint64_t end_ns, uint64_t schedule_ns);

// Times one group when profiling is active.
class Scope {
 public:
  // `spent` (when given) accumulates the time measured, so a caller can subtract it from its own.
  // `dim`: one member's output dim (must outlive the scope).
  Scope(Phase phase, OpId op, unsigned members = 1, uint64_t* spent = nullptr, const Dim* dim = nullptr)
      : phase_(phase), op_(op), members_(members), spent_(spent), dim_(dim) {
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
  const Dim* dim_;
  uint64_t begin_ = 0;
  size_t gathered_ = 0;
};

// The per-op table so far (what is printed at exit), for tests and programs that want it earlier.
std::string timing_table();
// Clears the table and the trace.
void reset();
// Traces to `path` from now on (empty: stop tracing), as DYNET_TRACE does from the start.
void set_trace_file(const std::string& path);
// Writes the trace now (it is written at exit anyway).
void write_trace();

// The totals of one op at one output dim, as Collector::stats() returns them.
struct OpStats {
  std::string op;  // the op's name; "(scheduling)": the autobatching executor's own time (dim empty)
  Dim dim;         // one member's output dim
  uint64_t forward_ns = 0, backward_ns = 0;
  uint64_t nodes = 0;          // nodes run forward
  uint64_t groups = 0;         // forward kernel launches (a batched group counts once)
  uint64_t batched_nodes = 0;  // nodes run forward as members of a group of several
  uint64_t gathered_bytes = 0;  // bytes the autobatching executor copied together for them
};

// Collects the timing table and the trace of what runs while it is started: start() .. stop(), any
// number of times (the data adds up until reset()). Independent of the flags and of other Collectors
// (several may run at once, nested or not). Collection is process-wide: with all_threads, a Collector
// sees every graph run in every thread (each trace event carries its thread's number as "tid");
// otherwise only what runs in the thread that called start(). Its methods may be called from any
// thread, also while others run graphs.
class Collector {
 public:
  // max_trace_events: events kept for the trace (each ~80 bytes); past it the trace says it was
  // truncated while the table keeps counting; 0 keeps none.
  explicit Collector(bool all_threads = true, size_t max_trace_events = size_t(1) << 20);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  void start();  // no-op when running
  void stop();   // no-op when stopped
  bool running() const;
  void reset();
  // The table --dynet-profiling prints at exit, of what this Collector saw.
  std::string table() const;
  // One entry per op and dim, by time spent (forward + backward), then the scheduling time if any.
  std::vector<OpStats> stats() const;
  // A Chrome trace (JSON: {"traceEvents": [...]}) of what this Collector saw.
  void write_chrome_trace(std::ostream& os) const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace dynet::profile
