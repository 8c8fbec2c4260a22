#include "exec/profile.h"

#include "core/device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

namespace dynet::profile {

namespace detail {
std::atomic<uint32_t> g_on{0};
}

namespace {

constexpr uint32_t kTracingBit = 1, kPerCollector = 2;

struct Totals {
  uint64_t forward_ns = 0, backward_ns = 0;
  uint64_t nodes = 0, groups = 0, batched_nodes = 0;
  uint64_t gathered_bytes = 0;
};

// Totals are kept per (op, member dim): the table sums them per op, stats() returns them as they are.
struct Key {
  OpId op;
  Dim dim;
  bool operator<(const Key& o) const {
    if (op != o.op) return op < o.op;
    if (dim.nd != o.dim.nd) return dim.nd < o.dim.nd;
    if (dim.bd != o.dim.bd) return dim.bd < o.dim.bd;
    return std::lexicographical_compare(dim.d, dim.d + dim.nd, o.dim.d, o.dim.d + o.dim.nd);
  }
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

uint32_t thread_number() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t n = next++;
  return n;
}

std::string json_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// What one consumer (the exit-time report, or a Collector) has seen.
struct Collected {
  std::map<Key, Totals> totals;
  std::vector<TraceEvent> events;
  uint64_t schedule_ns = 0, schedule_nodes = 0, origin = 0;
  bool truncated = false;

  void add(Phase phase, OpId op, unsigned members, uint64_t b, uint64_t e, size_t gathered, const Dim* dim,
           uint32_t thread, size_t max_events) {
    if (origin == 0 || b < origin) origin = b;
    Totals& t = totals[Key{op, dim ? *dim : Dim()}];
    (phase == Phase::kForward ? t.forward_ns : t.backward_ns) += e - b;
    if (phase == Phase::kForward) {
      t.nodes += members;
      t.groups += 1;
      if (members > 1) t.batched_nodes += members;
      t.gathered_bytes += gathered;
    }
    keep({b, e, op, phase, members, gathered, dim ? *dim : Dim(), thread}, max_events);
  }
  void add_pass(size_t nodes, uint64_t b, uint64_t e, uint64_t ns, uint32_t thread, size_t max_events) {
    if (origin == 0 || b < origin) origin = b;
    schedule_ns += ns;
    schedule_nodes += nodes;
    keep({b, e, 0, Phase::kSchedule, static_cast<unsigned>(nodes), ns, Dim(), thread}, max_events);
  }
  void keep(const TraceEvent& ev, size_t max_events) {
    if (events.size() < max_events)
      events.push_back(ev);
    else if (max_events)
      truncated = true;
  }
  bool empty() const { return totals.empty() && !schedule_nodes; }
  void clear() { *this = Collected(); }

  std::vector<OpStats> stats() const {
    std::vector<OpStats> out;
    for (const auto& [k, t] : totals)
      out.push_back({op_def(k.op).name, k.dim, t.forward_ns, t.backward_ns, t.nodes, t.groups, t.batched_nodes,
                     t.gathered_bytes});
    std::stable_sort(out.begin(), out.end(), [](const OpStats& a, const OpStats& b) {
      return a.forward_ns + a.backward_ns > b.forward_ns + b.backward_ns;
    });
    if (schedule_nodes) {
      OpStats s;
      s.op = "(scheduling)";
      s.forward_ns = schedule_ns;
      s.nodes = schedule_nodes;
      out.push_back(s);
    }
    return out;
  }

  std::string table() const {
    std::map<OpId, Totals> per_op;
    for (const auto& [k, t] : totals) {
      Totals& s = per_op[k.op];
      s.forward_ns += t.forward_ns;
      s.backward_ns += t.backward_ns;
      s.nodes += t.nodes;
      s.groups += t.groups;
      s.batched_nodes += t.batched_nodes;
      s.gathered_bytes += t.gathered_bytes;
    }
    std::vector<std::pair<OpId, Totals>> rows(per_op.begin(), per_op.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.second.forward_ns + a.second.backward_ns > b.second.forward_ns + b.second.backward_ns;
    });
    uint64_t total = schedule_ns;
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
    if (schedule_nodes)
      os << std::left << std::setw(26) << "(scheduling)" << std::right << std::setw(12) << schedule_ns * 1e-6
         << std::setw(12) << 0.0 << std::setw(8) << std::setprecision(1) << pct(schedule_ns) << std::setw(11)
         << schedule_nodes << "\n";
    // Per node run: on a GPU the kernels are queued, so this is the host's own time per node.
    uint64_t nodes = 0;
    for (const auto& r : rows) nodes += r.second.nodes;
    os << "total " << std::setprecision(3) << total * 1e-6 << " ms";
    if (nodes) os << ", " << std::setprecision(0) << double(total) / double(nodes) << " ns per node";
    os << "\n";
    return os.str();
  }

  // Chrome trace event format: complete events ("ph":"X"), times in microseconds from the first event.
  void write_trace(std::ostream& os, size_t max_events) const {
    os << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    bool first = true;
    for (const TraceEvent& e : events) {
      os << (first ? "" : ",\n") << std::fixed << std::setprecision(3);
      first = false;
      const double ts = double(e.begin_ns - origin) * 1e-3, dur = double(e.end_ns - e.begin_ns) * 1e-3;
      if (e.phase == Phase::kSchedule) {  // a whole forward pass; `gathered` holds its scheduling time
        os << "{\"name\":\"forward pass\",\"cat\":\"pass\",\"ph\":\"X\",\"pid\":1,\"tid\":" << e.thread
           << ",\"ts\":" << ts << ",\"dur\":" << dur << ",\"args\":{\"nodes\":" << e.members
           << ",\"scheduling_us\":" << double(e.gathered) * 1e-3 << "}}";
        continue;
      }
      const std::string op = json_escaped(op_def(e.op).name);
      os << "{\"name\":\"" << op << (e.members > 1 ? " x" + std::to_string(e.members) : "")
         << "\",\"cat\":\"" << (e.phase == Phase::kForward ? "forward" : "backward")
         << "\",\"ph\":\"X\",\"pid\":1,\"tid\":" << e.thread << ",\"ts\":" << ts << ",\"dur\":" << dur
         << ",\"args\":{\"op\":\"" << op << "\",\"members\":" << e.members << ",\"dim\":\"" << e.dim.str() << "\"";
      if (e.phase == Phase::kForward) os << ",\"gathered_bytes\":" << e.gathered;
      os << "}}";
    }
    if (truncated)
      os << (first ? "" : ",\n") << "{\"name\":\"trace truncated at " << max_events
         << " events\",\"ph\":\"i\",\"pid\":1,\"tid\":1,\"ts\":0,\"s\":\"g\"}";
    os << "\n]}\n";
  }
};

// Events kept for the DYNET_TRACE trace; beyond this the trace says it was truncated.
constexpr size_t kMaxTraceEvents = 4u << 20;

}  // namespace

struct Collector::State {
  bool all_threads = true;
  size_t max_events = 0;
  uint32_t thread = 0;  // the thread that started it (when !all_threads)
  bool running = false;
  Collected data;
};

namespace {

// Everything recorded goes through here, under one mutex (taken only while something collects).
struct Registry {
  std::mutex mutex;
  Collected global;  // for --dynet-profiling and DYNET_TRACE, reported at exit
  std::string trace_file;
  std::vector<Collector::State*> running;
  DeviceCounters counted_from[256];  // each device's counters at the last reset(), by Device::index
};

// Never destroyed: a Collector (a Python object, say) may be released after static destructors ran.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

bool tracing() { return detail::g_on.load(std::memory_order_relaxed) & kTracingBit; }

void write_trace_locked(Registry& r) {
  std::ofstream os(r.trace_file);
  if (!os) {
    std::cerr << "[dynet] cannot write the trace to " << r.trace_file << "\n";
    return;
  }
  r.global.write_trace(os, kMaxTraceEvents);
}

// Read at static initialisation, so that active() is one load from the start.
const bool g_trace_from_env = [] {
  const char* p = std::getenv("DYNET_TRACE");
  if (p && *p) set_trace_file(p);
  return true;
}();

// The exit-time report of the flags.
struct ExitReport {
  ~ExitReport() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (profiling_flag > 0 && !r.global.empty()) std::cerr << r.global.table();
    if (tracing()) write_trace_locked(r);
  }
} g_exit_report;

}  // namespace

void set_trace_file(const std::string& path) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.trace_file = path;
  if (path.empty())
    detail::g_on.fetch_and(~kTracingBit);
  else
    detail::g_on.fetch_or(kTracingBit);
}
void write_trace() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (tracing()) write_trace_locked(r);
}

// Calls add(data, thread, max_events) for the process-wide record (while profiling or tracing) and for
// each running Collector that takes this thread.
template <class Add>
void record_into(Add add) {
  Registry& r = registry();
  const uint32_t thread = thread_number();
  std::lock_guard<std::mutex> lock(r.mutex);
  const bool trace = tracing();
  if (profiling_flag > 0 || trace) add(r.global, thread, trace ? kMaxTraceEvents : 0);
  for (Collector::State* s : r.running)
    if (s->all_threads || s->thread == thread) add(s->data, thread, s->max_events);
}

void record(Phase phase, OpId op, unsigned members, uint64_t begin_ns, uint64_t end_ns, size_t gathered_bytes,
            const Dim* member_dim) {
  record_into([&](auto& data, uint32_t thread, size_t max_events) {
    data.add(phase, op, members, begin_ns, end_ns, gathered_bytes, member_dim, thread, max_events);
  });
}

void record_pass(size_t nodes, uint64_t begin_ns, uint64_t end_ns, uint64_t schedule_ns) {
  record_into([&](auto& data, uint32_t thread, size_t max_events) {
    data.add_pass(nodes, begin_ns, end_ns, schedule_ns, thread, max_events);
  });
}

std::string timing_table() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::ostringstream os;
  os << r.global.table();
  for (const Device* d : get_device_manager()->get_devices()) {
    if (d->backend == kCpuBackend) continue;
    const DeviceCounters c = d->counters() - r.counted_from[d->index];
    os << d->name << ": " << c.launches << " kernel launches, " << c.syncs << " waits for the device ("
       << std::fixed << std::setprecision(3) << c.wait_ns * 1e-6 << " ms), " << c.uploads
       << " uploads (" << c.upload_bytes / 1024 << " KB), " << c.downloads << " downloads (" << c.download_bytes / 1024
       << " KB)\n";
  }
  return os.str();
}
void reset() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.global.clear();
  for (const Device* d : get_device_manager()->get_devices()) r.counted_from[d->index] = d->counters();
}

// ---- Collector ----
Collector::Collector(bool all_threads, size_t max_trace_events)
    : state_(std::make_unique<State>()) {
  state_->all_threads = all_threads;
  state_->max_events = max_trace_events;
}

Collector::~Collector() { stop(); }

void Collector::start() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (state_->running) return;
  state_->running = true;
  state_->thread = thread_number();
  r.running.push_back(state_.get());
  detail::g_on.fetch_add(kPerCollector);
}

void Collector::stop() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!state_->running) return;
  state_->running = false;
  r.running.erase(std::find(r.running.begin(), r.running.end(), state_.get()));
  detail::g_on.fetch_sub(kPerCollector);
}

bool Collector::running() const {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return state_->running;
}

void Collector::reset() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  state_->data.clear();
}

std::string Collector::table() const {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return state_->data.table();
}

std::vector<OpStats> Collector::stats() const {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return state_->data.stats();
}

void Collector::write_chrome_trace(std::ostream& os) const {
  std::lock_guard<std::mutex> lock(registry().mutex);
  state_->data.write_trace(os, state_->max_events);
}

}  // namespace dynet::profile
