// Observability from Python: dy.profiler() (the --dynet-profiling table and the Chrome trace of a stretch
// of a program, at run time), and the module's text output (graphviz, graph dumps, trainer status)
// through sys.stdout / sys.stderr, so that a notebook shows it: C++ streams bypass Python's, and
// Jupyter only displays what goes through Python's.
//   with dy.profiler() as p:
//       train_step()
//   print(p.table()); p.export_chrome_trace("trace.json"); p.stats()
#include <nanobind/stl/string.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "dynet/training.h"
#include "exec/profile.h"
#include "ext.h"

namespace dynet::py {
using namespace nb::literals;

namespace {

void write_to(const char* stream, const std::string& text) {
  nb::object s = nb::module_::import_("sys").attr(stream);
  if (s.is_none()) return;  // pythonw and some embedders: no console to write to
  s.attr("write")(nb::str(text.data(), text.size()));
}

}  // namespace

void write_stdout(const std::string& text) { write_to("stdout", text); }
void write_stderr(const std::string& text) { write_to("stderr", text); }

std::string graphviz_text(const ComputationGraph& g) {
  std::ostringstream os;
  g.print_graphviz(os);
  return os.str();
}

void dump_graph(ComputationGraph& g, const std::string& filename, bool show_values, bool show_gradients,
                bool nan_check_only) {
  if (!filename.empty()) {
    g.dump(filename, show_values, show_gradients, nan_check_only);
    return;
  }
  // Without a file ComputationGraph::dump writes to std::cerr; a private temporary file lets its text
  // reach sys.stderr instead (redirecting std::cerr would also catch other threads' output).
  std::string path = (std::filesystem::temp_directory_path() / "dynet_dump_XXXXXX").string();
  const int fd = mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("dump: cannot create a temporary file in " + path);
  close(fd);
  std::string text;
  try {
    g.dump(path, show_values, show_gradients, nan_check_only);
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (...) {
    std::remove(path.c_str());
    throw;
  }
  std::remove(path.c_str());
  write_stderr(text);
}

void trainer_status(Trainer& t) {
  // Trainer::status()'s line, written here rather than to std::cerr.
  std::ostringstream os;
  os << "[lr=" << t.learning_rate << " clips=" << t.clips_since_status << " updates=" << t.updates_since_status
     << "] ";
  t.clips_since_status = 0;
  t.updates_since_status = 0;
  write_stderr(os.str());
}

void init_profiler(nb::module_& m) {
  using profile::Collector;
  nb::class_<Collector>(m, "Profiler",
                        "Op timings and a Chrome trace of what runs between start() and stop(), or inside `with`.\n\n"
                        "Made by dy.profiler(). It collects whatever --dynet-profiling and DYNET_TRACE say, and\n"
                        "leaves what they print at exit as it was. Collection is process-wide: with\n"
                        "all_threads=True it sees the graphs of every thread (the trace's \"tid\" tells them\n"
                        "apart), otherwise only the thread that started it. Several profilers may run at once.\n\n"
                        "Args:\n"
                        "    all_threads (bool): Collect what every thread runs, else only the thread that calls start().\n"
                        "        Defaults to True.\n"
                        "    max_trace_events (int): Trace events kept (about 80 bytes each); the table counts past it.\n"
                        "        Defaults to 1048576.")
      .def(nb::init<bool, size_t>(), "all_threads"_a = true, "max_trace_events"_a = size_t(1) << 20,
           "Args:\n"
           "    all_threads: collect what every thread runs (else only the thread that calls start()).\n"
           "    max_trace_events: trace events kept (about 80 bytes each); the table counts past it.")
      .def("__enter__", [](Collector& c) { c.start(); return &c; }, nb::rv_policy::reference)
      .def("__exit__", [](Collector& c, nb::args) { c.stop(); })
      .def("start", &Collector::start, "Starts collecting (adds to what was collected before; a no-op when running).\n\nReturns:\n    None")
      .def("stop", &Collector::stop, "Stops collecting; what was collected stays until reset().\n\nReturns:\n    None")
      .def_prop_ro("running", &Collector::running, "Whether it is collecting now.")
      .def("reset", &Collector::reset, "Forgets what was collected (the table, the statistics and the trace).\n\nReturns:\n    None")
      .def("table", &Collector::table,
           "The timing table of what ran while collecting, as --dynet-profiling 1 prints it at exit.\n\n"
           "Returns:\n"
           "    str: one line per op (forward and backward ms, % of the total, nodes, groups, batched\n"
           "    nodes, KB gathered by autobatching), then the autobatching scheduling time and the total.")
      .def("__str__", &Collector::table)
      .def("stats", [](const Collector& c) {
        nb::list out;
        for (const profile::OpStats& s : c.stats()) {
          nb::list shape;
          for (unsigned k = 0; k < s.dim.nd; ++k) shape.append(s.dim.d[k]);
          nb::dict d;
          d["op"] = s.op;
          d["dim"] = s.op == "(scheduling)" ? std::string() : s.dim.str();
          d["shape"] = nb::steal<nb::tuple>(PySequence_Tuple(shape.ptr()));
          d["batch"] = s.dim.bd;
          d["nodes"] = s.nodes;
          d["groups"] = s.groups;
          d["batched_nodes"] = s.batched_nodes;
          d["forward_ms"] = s.forward_ns * 1e-6;
          d["backward_ms"] = s.backward_ns * 1e-6;
          d["total_ms"] = (s.forward_ns + s.backward_ns) * 1e-6;
          d["gathered_bytes"] = s.gathered_bytes;
          out.append(d);
        }
        return out;
      }, "The table's figures per op and output dim, for programs.\n\n"
         "Returns:\n"
         "    list[dict]: by total time, most first; keys: op (its name), dim (one member's output dim\n"
         "    as in the trace, e.g. \"{8,2}\"), shape (its dims, a tuple), batch (its batch size), nodes\n"
         "    (run forward), groups (forward kernel runs: an autobatched group counts once),\n"
         "    batched_nodes, forward_ms, backward_ms, total_ms, gathered_bytes. Autobatching's own time\n"
         "    comes last, as op \"(scheduling)\" with dim \"\".")
      .def("chrome_trace", [](const Collector& c) {
        std::ostringstream os;
        c.write_chrome_trace(os);
        return os.str();
      }, "The Chrome trace JSON of what ran while collecting.\n\n"
         "Returns:\n"
         "    str: {\"traceEvents\": [...]}: one complete event per node group run forward or backward\n"
         "    (name: the op, \" xN\" when N nodes ran batched; args: op, dim of one member, members) and,\n"
         "    with autobatching, one per forward pass (args: nodes, scheduling_us).")
      .def("export_chrome_trace", [](const Collector& c, nb::object path) {
        std::ostringstream os;
        c.write_chrome_trace(os);
        const std::string text = os.str();
        nb::object f = nb::module_::import_("builtins").attr("open")(path, "w");
        try {
          f.attr("write")(nb::str(text.data(), text.size()));
        } catch (...) {
          f.attr("close")();
          throw;
        }
        f.attr("close")();
      }, "path"_a,
         "Writes chrome_trace() to a file, for chrome://tracing or https://ui.perfetto.dev.\n\n"
         "Args:\n"
         "    path: the file to write (str or os.PathLike); an existing file is replaced.");
  m.def("profiler", [](truthy all_threads, int_arg<size_t> max_trace_events) {
    return new Collector(all_threads, max_trace_events);
  }, "all_threads"_a = true, "max_trace_events"_a = size_t(1) << 20, nb::rv_policy::take_ownership,
     "A Profiler, not yet collecting: `with dy.profiler() as p:` collects what runs in the block.\n\n"
     "Args:\n"
     "    all_threads: collect what every thread runs (else only the thread that enters the block).\n"
     "    max_trace_events: trace events kept (about 80 bytes each); the table counts past it.\n\n"
     "Returns:\n"
     "    Profiler: p.table() (the --dynet-profiling table), p.stats() (the same per op and dim, as\n"
     "    dicts), p.export_chrome_trace(path) (a Chrome trace JSON).");
}

}  // namespace dynet::py
