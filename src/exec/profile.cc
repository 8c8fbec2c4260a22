#include "exec/profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

namespace dynet::profile {

namespace detail {
std::atomic<bool> g_tracing{false};
}

namespace {

struct OpTotals {
  uint64_t forward_ns = 0, backward_ns = 0;
  uint64_t nodes = 0, groups = 0, batched_nodes = 0;
  uint64_t gathered_bytes = 0;
};

struct TraceEvent {
  uint64_t begin_ns, end_ns;
  OpId op;
  Phase phase;
  unsigned members;
  size_t gathered;
  Dim dim;
  uint32_t thread;
};

// Events kept for the trace; beyond this the trace says it was truncated.
constexpr size_t kMaxTraceEvents = 4u << 20;

// The trace file: DYNET_TRACE, or set_trace_file(); empty when not tracing. Read at static
// initialisation, so that active() is one load.
std::string& trace_file() {
  static std::string* path = new std::string;
  return *path;
}
bool tracing() { return detail::g_tracing.load(std::memory_order_relaxed); }
const bool g_trace_from_env = [] {
  const char* p = std::getenv("DYNET_TRACE");
  if (p && *p) {
    trace_file() = p;
    detail::g_tracing = true;
  }
  return true;
}();

uint32_t thread_number() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t n = next++;
  return n;
}

class Profile {
 public:
  ~Profile() {
    if (profiling_flag > 0 && (!ops_.empty() || schedule_nodes_)) std::cerr << table();
    if (tracing()) write_trace();
  }
  void add(Phase phase, OpId op, unsigned members, uint64_t b, uint64_t e, size_t gathered, const Dim* dim) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (origin_ == 0 || b < origin_) origin_ = b;
    OpTotals& t = ops_[op];
    (phase == Phase::kForward ? t.forward_ns : t.backward_ns) += e - b;
    if (phase == Phase::kForward) {
      t.nodes += members;
      t.groups += 1;
      if (members > 1) t.batched_nodes += members;
      t.gathered_bytes += gathered;
    }
    if (tracing()) {
      if (events_.size() < kMaxTraceEvents)
        events_.push_back({b, e, op, phase, members, gathered, dim ? *dim : Dim(), thread_number()});
      else
        truncated_ = true;
    }
  }
  void add_pass(size_t nodes, uint64_t b, uint64_t e, uint64_t schedule_ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (origin_ == 0 || b < origin_) origin_ = b;
    schedule_ns_ += schedule_ns;
    schedule_nodes_ += nodes;
    if (tracing() && events_.size() < kMaxTraceEvents)
      events_.push_back({b, e, 0, Phase::kSchedule, static_cast<unsigned>(nodes), schedule_ns, Dim(), thread_number()});
  }
  std::string table() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<OpId, OpTotals>> rows(ops_.begin(), ops_.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.second.forward_ns + a.second.backward_ns > b.second.forward_ns + b.second.backward_ns;
    });
    uint64_t total = schedule_ns_;
    for (const auto& r : rows) total += r.second.forward_ns + r.second.backward_ns;
    std::ostringstream os;
    os << "Timing Info:\n"
       << std::left << std::setw(26) << "op" << std::right << std::setw(12) << "forward ms" << std::setw(12)
       << "backward ms" << std::setw(8) << "%" << std::setw(11) << "nodes" << std::setw(10) << "groups"
       << std::setw(10) << "batched" << std::setw(13) << "gathered KB" << "\n";
    auto pct = [total](uint64_t ns) { return total ? 100.0 * double(ns) / double(total) : 0.0; };
    os << std::fixed << std::setprecision(3);
    for (const auto& [op, t] : rows)
      os << std::left << std::setw(26) << op_def(op).name << std::right << std::setw(12) << t.forward_ns * 1e-6
         << std::setw(12) << t.backward_ns * 1e-6 << std::setw(8) << std::setprecision(1)
         << pct(t.forward_ns + t.backward_ns) << std::setprecision(3) << std::setw(11) << t.nodes << std::setw(10)
         << t.groups << std::setw(10) << t.batched_nodes << std::setw(13) << t.gathered_bytes / 1024 << "\n";
    if (schedule_nodes_)
      os << std::left << std::setw(26) << "(scheduling)" << std::right << std::setw(12) << schedule_ns_ * 1e-6
         << std::setw(12) << 0.0 << std::setw(8) << std::setprecision(1) << pct(schedule_ns_) << std::setw(11)
         << schedule_nodes_ << "\n";
    os << "total " << std::setprecision(3) << total * 1e-6 << " ms\n";
    return os.str();
  }
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    ops_.clear();
    events_.clear();
    schedule_ns_ = schedule_nodes_ = 0;
    origin_ = 0;
    truncated_ = false;
  }
  void write_trace() {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string& path = trace_file();
    std::ofstream os(path);
    if (!os) {
      std::cerr << "[dynet] cannot write the trace to " << path << "\n";
      return;
    }
    // Chrome trace event format: complete events ("ph":"X"), times in microseconds.
    os << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    bool first = true;
    for (const TraceEvent& e : events_) {
      os << (first ? "" : ",\n") << std::fixed << std::setprecision(3);
      first = false;
      const double ts = double(e.begin_ns - origin_) * 1e-3, dur = double(e.end_ns - e.begin_ns) * 1e-3;
      if (e.phase == Phase::kSchedule) {  // a whole forward pass; `gathered` holds its scheduling time
        os << "{\"name\":\"forward pass\",\"cat\":\"pass\",\"ph\":\"X\",\"pid\":1,\"tid\":" << e.thread
           << ",\"ts\":" << ts << ",\"dur\":" << dur << ",\"args\":{\"nodes\":" << e.members
           << ",\"scheduling_us\":" << double(e.gathered) * 1e-3 << "}}";
        continue;
      }
      os << "{\"name\":\"" << op_def(e.op).name << (e.members > 1 ? " x" + std::to_string(e.members) : "")
         << "\",\"cat\":\"" << (e.phase == Phase::kForward ? "forward" : "backward")
         << "\",\"ph\":\"X\",\"pid\":1,\"tid\":" << e.thread << ",\"ts\":" << ts << ",\"dur\":" << dur
         << ",\"args\":{\"members\":" << e.members;
      if (e.phase == Phase::kForward) os << ",\"dim\":\"" << e.dim.str() << "\",\"gathered_bytes\":" << e.gathered;
      os << "}}";
    }
    if (truncated_)
      os << (first ? "" : ",\n") << "{\"name\":\"trace truncated at " << kMaxTraceEvents
         << " events\",\"ph\":\"i\",\"pid\":1,\"tid\":1,\"ts\":0,\"s\":\"g\"}";
    os << "\n]}\n";
  }

 private:
  std::mutex mutex_;
  std::map<OpId, OpTotals> ops_;
  std::vector<TraceEvent> events_;
  uint64_t schedule_ns_ = 0, schedule_nodes_ = 0, origin_ = 0;
  bool truncated_ = false;
};

Profile& the_profile() {
  static Profile p;
  return p;
}

}  // namespace

void set_trace_file(const std::string& path) {
  trace_file() = path;
  detail::g_tracing = !path.empty();
}
void write_trace() {
  if (tracing()) the_profile().write_trace();
}

void record(Phase phase, OpId op, unsigned members, uint64_t begin_ns, uint64_t end_ns, size_t gathered_bytes,
            const Dim* member_dim) {
  the_profile().add(phase, op, members, begin_ns, end_ns, gathered_bytes, member_dim);
}

void record_pass(size_t nodes, uint64_t begin_ns, uint64_t end_ns, uint64_t schedule_ns) {
  the_profile().add_pass(nodes, begin_ns, end_ns, schedule_ns);
}

std::string timing_table() { return the_profile().table(); }
void reset() { the_profile().reset(); }

}  // namespace dynet::profile
