// The op harness's perf mode (as ggml's test-backend-ops perf): every sample of every op with device
// kernels, run with the op's CPU kernels (OpDef::forward/backward) and with its generic device kernels
// run on the host (the emulated device's HostPrims instantiation), the op's own forward and backward
// time read from a profile::Collector. Once per graph, and `--batch` instances autobatched into one node,
// which is what real workloads run: the measurement that decides whether an op keeps a CPU-specific
// kernel. Not a test (no timing assertions there); bench/README.md ("Op kernels") says how to read it.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device.h"
#include "device_test_util.h"
#include "exec/profile.h"
#include "op_harness_util.h"

namespace dynet {
namespace {

struct Options {
  std::string op;  // a substring of the op names to run
  unsigned repeats = 5, batch = 64;
  double min_ms = 5;  // per repeat of one graph
  bool markdown = false;
};

// Per graph pass: µs in the op's own forward and backward rows, and its kernel launches.
struct Times {
  double fwd = 0, bwd = 0, launches = 0;
};

// One graph of a sample's instances on one device, and the passes that make one repeat.
struct Run {
  OpSample sample;  // holds the parameters, on the run's device
  std::unique_ptr<ComputationGraph> g = std::make_unique<ComputationGraph>();
  std::unique_ptr<test::Instances> built;
  unsigned passes = 1;
  void pass() {
    g->forward(built->loss);
    g->backward(built->loss, true);  // full: the inputs are not parameters
  }
};

std::string first_line(const std::string& s) {
  std::string l = s.substr(0, s.find('\n'));
  return l.size() > 140 ? l.substr(0, 137) + "..." : l;
}

// Rows of other nodes would mix into the op's: those of the harness's own (inputs, to_device, the loss)
// when they are of the op, and those of the op's nodes placed elsewhere than on `dev`.
void check_nodes(const ComputationGraph& g, const test::Instances& b, OpId op, const Device* dev) {
  std::set<OpId> harness = {g.node(b.loss.i).op};
  for (const test::SampleInputs& in : b.in)
    for (size_t j = 0; j < in.xs.size(); ++j)
      if (in.own[j]) harness.insert(g.node(in.xs[j].i).op);
  for (unsigned a = 0; a < g.node(b.loss.i).nargs; ++a) {
    const VariableIndex x = g.node_args(b.loss.i)[a];
    if (std::none_of(b.ys.begin(), b.ys.end(), [x](const Expression& y) { return y.i == x; }))
      harness.insert(g.node(x).op);
  }
  if (harness.count(op)) throw std::runtime_error("the harness's own nodes use the op");
  unsigned nodes = 0;
  for (VariableIndex i = 0; i < g.size(); ++i) {
    if (g.node(i).op != op) continue;
    ++nodes;
    if (g.node(i).device != dev->index) throw std::runtime_error("the op's nodes do not run on " + dev->name);
  }
  if (!nodes) throw std::runtime_error("the sample does not use the op");
}

std::unique_ptr<Run> make_run(OpId op, const OpSample& s, Device* dev, unsigned instances, double min_ms) try {
  auto run = std::make_unique<Run>();
  test::DefaultDevice on(dev);
  run->sample = dev == cpu_device() ? s : test::sample_on(dev, op, s);
  run->g->set_execution_strategy(instances > 1 ? 1 : 0);
  run->g->set_merge_equal_nodes(false);  // instances without inputs of their own are equal: they must still batch
  std::mt19937 rng(test::kSeed);
  run->built = std::make_unique<test::Instances>(*run->g, run->sample, op, instances, rng, dev != cpu_device());
  check_nodes(*run->g, *run->built, op, dev);
  run->pass();  // the pools grown, oneDNN's primitives made
  for (;; run->passes *= 2) {
    const auto t0 = std::chrono::steady_clock::now();
    for (unsigned i = 0; i < run->passes; ++i) run->pass();
    if (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() >= min_ms) break;
  }
  return run;
} catch (const std::exception& e) {
  throw std::runtime_error(dev->name + ": " + first_line(e.what()));
}

Times repeat(Run& r, const char* op) {
  profile::Collector c(false, 0);
  c.start();
  for (unsigned i = 0; i < r.passes; ++i) r.pass();
  c.stop();
  if (r.sample.params) r.sample.params->reset_gradient();  // lookup gradients would list ever more rows
  Times t;
  for (const profile::OpStats& s : c.stats())
    if (s.op == op) t = {t.fwd + s.forward_ns * 1e-3, t.bwd + s.backward_ns * 1e-3, t.launches + double(s.groups)};
  return {t.fwd / r.passes, t.bwd / r.passes, t.launches / r.passes};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Measured {
  Times cpu, gen;  // medians over the repeats
  Dim out;
};

Measured measure(const test::Case& c, unsigned instances, const Options& o) {
  const std::unique_ptr<Run> cpu = make_run(c.op, c.sample, cpu_device(), instances, o.min_ms);
  const std::unique_ptr<Run> gen = make_run(c.op, c.sample, emulated_device(), instances, o.min_ms);
  std::vector<double> t[2][3];
  for (unsigned r = 0; r < o.repeats; ++r)  // alternated, so that a change in the machine's load hits both
    for (int k = 0; k < 2; ++k) {
      const Times x = repeat(k ? *gen : *cpu, op_def(c.op).name);
      t[k][0].push_back(x.fwd);
      t[k][1].push_back(x.bwd);
      t[k][2].push_back(x.launches);
    }
  auto med = [&](int k) { return Times{median(t[k][0]), median(t[k][1]), median(t[k][2])}; };
  return {med(0), med(1), cpu->built->ys[0].dim()};
}

std::string num(double x, const char* f = nullptr) {
  char b[32];
  std::snprintf(b, sizeof b, f ? f : x < 10 ? "%.2f" : x < 1000 ? "%.1f" : "%.0f", x);
  return b;
}

// Plain text: columns as wide as their heads (op, sample and shape left-aligned); Markdown: a pipe table.
void print_row(const std::vector<std::string>& cells, const std::vector<std::string>& head, bool markdown) {
  for (size_t k = 0; k < cells.size(); ++k)
    if (markdown)
      std::printf("| %s ", cells[k].c_str());
    else
      std::printf("%*s ", k < 3 ? -int(std::max<size_t>(head[k].size(), k == 2 ? 26 : 16)) : int(head[k].size()),
                  cells[k].c_str());
  std::printf(markdown ? "|\n" : "\n");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 == argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--op") o.op = value();
    else if (a == "--repeats") o.repeats = std::max(1, std::atoi(value()));
    else if (a == "--min-ms") o.min_ms = std::atof(value());
    else if (a == "--batch") o.batch = std::max(2, std::atoi(value()));
    else if (a == "--markdown") o.markdown = true;
    else throw std::invalid_argument("usage: op_perf [--op SUBSTRING] [--repeats N] [--min-ms MS] [--batch N] [--markdown]");
  }
  return o;
}

int run(const Options& o) {
  const std::string b = "x" + std::to_string(o.batch) + " ", us = o.markdown ? " µs" : " us";
  std::vector<std::string> head = {"op", "sample", "shape"};
  for (const std::string& m : {std::string(), b})
    for (const char* phase : {"fwd ", "bwd "})
      head.insert(head.end(), {m + phase + "CPU" + us, m + phase + "gen" + us, "ratio"});
  head.push_back(b + "launches");
  print_row(head, head, o.markdown);
  if (o.markdown) print_row(std::vector<std::string>(head.size(), "---"), head, true);

  std::map<std::string, std::vector<std::string>> skipped;  // reason -> ops or samples
  std::map<std::string, std::array<double, 4>> sums;      // op -> fwd+bwd µs: CPU, gen; batched CPU, gen
  unsigned samples = 0;
  for (size_t i = 0; i < op_registry().size(); ++i) {
    const OpDef& def = op_registry()[i];
    if (!def.name || !def.samples || std::string(def.name).rfind("harness_", 0) == 0) continue;
    if (std::string(def.name).find(o.op) == std::string::npos) continue;
    const DeviceKernels* kern = device_kernels(static_cast<OpId>(i), kEmulatedBackend);
    if (!kern || (def.flags & kRandom)) {
      skipped[kern ? "random (kRandom)" : "no device kernels"].push_back(def.name);
      continue;
    }
    const bool bwd = def.backward && kern->backward && !(def.flags & kNoGradient);
    for (OpSample& s : def.samples()) {
      const std::string what = std::string(def.name) + "/" + s.name;
      if (s.bad) {
        skipped["bad sample"].push_back(what);
        continue;
      }
      const test::Case c{static_cast<OpId>(i), std::move(s)};
      Measured one, many;
      try {
        one = measure(c, 1, o);
        many = measure(c, o.batch, o);
      } catch (const std::exception& e) {
        skipped[e.what()].push_back(what);
        continue;
      }
      std::string shape;
      for (const Dim& d : c.sample.inputs) shape += d.str() + " ";
      std::vector<std::string> row = {def.name, c.sample.name, shape + "-> " + one.out.str()};
      for (const Measured* m : {&one, &many})
        for (auto part : {&Times::fwd, &Times::bwd}) {
          if (part == &Times::bwd && !bwd) {
            row.insert(row.end(), {"-", "-", "-"});
            continue;
          }
          row.insert(row.end(), {num(m->cpu.*part), num(m->gen.*part), num(m->gen.*part / m->cpu.*part, "%.2f")});
        }
      row.push_back(num(many.cpu.launches, "%.0f") +
                    (many.gen.launches != many.cpu.launches ? "/" + num(many.gen.launches, "%.0f") : ""));
      print_row(row, head, o.markdown);
      std::fflush(stdout);
      const Times* t[] = {&one.cpu, &one.gen, &many.cpu, &many.gen};
      for (int k = 0; k < 4; ++k) sums[def.name][k] += t[k]->fwd + (bwd ? t[k]->bwd : 0);
      ++samples;
    }
  }

  if (!skipped.empty()) std::printf("\nSkipped:\n");
  for (const auto& [why, what] : skipped) {
    std::string list;
    for (const std::string& w : what) list += (list.empty() ? "" : ", ") + w;
    std::printf("- %s (%zu): %s\n", why.c_str(), what.size(), list.c_str());
  }
  unsigned within[2] = {0, 0};
  std::vector<std::pair<double, std::string>> slower;
  for (const auto& [op, sum] : sums) {
    within[0] += sum[1] <= 1.25 * sum[0];
    within[1] += sum[3] <= 1.25 * sum[2];
    if (sum[3] > 1.25 * sum[2]) slower.emplace_back(sum[3] / sum[2], op);
  }
  std::sort(slower.rbegin(), slower.rend());
  std::printf("\nGeneric kernels over 1.25x the CPU ones, x%u (generic / CPU, fwd+bwd over the op's samples):", o.batch);
  for (size_t k = 0; k < slower.size(); ++k) std::printf("%s %s %.2f", k ? "," : "", slower[k].second.c_str(), slower[k].first);
  if (slower.empty()) std::printf(" none");
  std::printf("\n\n%zu ops with both kernels measured (%u samples); generic within 1.25x of the CPU kernels (fwd+bwd "
              "over the op's samples): %u single, %u x%u\n",
              sums.size(), samples, within[0], within[1], o.batch);
  return 0;
}

}  // namespace
}  // namespace dynet

int main(int argc, char** argv) {
  try {
    return dynet::run(dynet::parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "op_perf: %s\n", e.what());
    return 2;
  }
}
