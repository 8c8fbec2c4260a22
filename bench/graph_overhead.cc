// Graph-construction, forward and backward cost per node (prints `name=value unit` lines), and the
// autobatching executor's own cost: the same graphs run by the simple executor and by the agenda one.
//   build/bench/graph_overhead [--steps N] [--reps R] [--chains C]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dynet/expr.h"

using namespace dynet;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// h_{t+1} = tanh(W h_t + b): 3 nodes per step (matmul, add, tanh).
Expression mlp_chain(ComputationGraph& g, Parameter& W, Parameter& b, const std::vector<float>& x0, int steps) {
  Expression w = parameter(g, W), bias = parameter(g, b);
  Expression h = input(g, Dim({64}), &x0);
  for (int t = 0; t < steps; ++t) h = tanh(w * h + bias);
  return h;
}

// `chains` independent chains of `steps` steps each (the autobatching case: step t of every chain batches).
Expression wide(ComputationGraph& g, Parameter& W, Parameter& b, const std::vector<std::vector<float>>& x0, int steps) {
  Expression w = parameter(g, W), bias = parameter(g, b);
  std::vector<Expression> ends;
  for (const auto& x : x0) {
    Expression h = input(g, Dim({64}), &x);
    for (int t = 0; t < steps; ++t) h = tanh(w * h + bias);
    ends.push_back(sum_elems(h));
  }
  return sum(ends);
}

struct Timing {
  std::vector<double> build, fwd, bwd;
  void report(const char* name) const {
    std::printf("%s_build_ns_per_node=%.1f ns\n", name, median(build));
    std::printf("%s_forward_ns_per_node=%.1f ns\n", name, median(fwd));
    std::printf("%s_backward_ns_per_node=%.1f ns\n", name, median(bwd));
  }
};

// Builds with `make` in g, then forward and backward; per-node times after `warmup` rounds.
template <class Make>
void time_graph(ComputationGraph& g, ParameterCollection& pc, Make make, Timing& t, bool keep) {
  g.clear();
  auto t0 = Clock::now();
  Expression loss = make(g);
  auto t1 = Clock::now();
  g.forward(loss);
  auto t2 = Clock::now();
  g.backward(loss);
  auto t3 = Clock::now();
  pc.reset_gradient();
  if (!keep) return;
  const double nodes = double(g.size());
  t.build.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / nodes);
  t.fwd.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count() / nodes);
  t.bwd.push_back(std::chrono::duration<double, std::nano>(t3 - t2).count() / nodes);
}

// Cheap elementwise ops only: tanh/exp alternating.
Expression elementwise_chain(ComputationGraph& g, const std::vector<float>& x0, int steps) {
  Expression h = input(g, Dim({64}), &x0);
  for (int t = 0; t < steps; ++t) h = (t & 1) ? tanh(h) : h * 0.5f;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  initialize(argc, argv);
  int steps = 1000, reps = 50, chains = 50;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--chains")) chains = std::max(1, std::atoi(argv[i + 1]));
  }
  ParameterCollection pc;
  // W = I and b = 0, in the Python peers too (py/graph_overhead.py): with random weights the gradient of
  // the 1000-step chain shrinks geometrically for many draws and goes subnormal, and Intel cores take a
  // microcode assist per subnormal result, so backward measured those (0.13 to 2.3 us per node, by seed)
  // instead of the graph's own cost. Here h = tanh(h) decays slowly from 0.1 and each step scales the
  // gradient by 1 - h^2 >= 0.99. The kernels' cost does not depend on the values otherwise.
  Parameter W = pc.add_parameters({64, 64}, ParameterInitIdentity()),
            b = pc.add_parameters({64}, ParameterInitConst(0.f));
  std::vector<float> x0(64, 0.1f);
  ComputationGraph g;

  std::vector<double> build, fwd, bwd, build_ew;
  for (int r = 0; r < reps + 3; ++r) {
    g.clear();
    auto t0 = Clock::now();
    Expression h = mlp_chain(g, W, b, x0, steps);
    auto t1 = Clock::now();
    Expression loss = sum_elems(h);
    g.forward(loss);
    auto t2 = Clock::now();
    g.backward(loss);
    auto t3 = Clock::now();
    const double nodes = double(g.size());
    if (r >= 3) {  // warm-up rounds grow the pools and vectors
      build.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / nodes);
      fwd.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count() / nodes);
      bwd.push_back(std::chrono::duration<double, std::nano>(t3 - t2).count() / nodes);
    }
    pc.reset_gradient();

    g.clear();
    auto e0 = Clock::now();
    Expression e = elementwise_chain(g, x0, steps * 3);
    auto e1 = Clock::now();
    (void)e;
    if (r >= 3) build_ew.push_back(std::chrono::duration<double, std::nano>(e1 - e0).count() / double(g.size()));
  }
  std::printf("build_ns_per_node=%.1f ns\n", median(build));
  std::printf("forward_ns_per_node=%.1f ns\n", median(fwd));
  std::printf("backward_ns_per_node=%.1f ns\n", median(bwd));
  std::printf("backward_over_forward=%.2f x\n", median(bwd) / median(fwd));
  std::printf("build_ns_per_node_elementwise=%.1f ns\n", median(build_ew));

  // The autobatching executor on the chain (nothing batches: its cost over the simple executor is
  // all scheduling) and on `chains` independent chains (everything batches), alternating with the
  // simple executor in the same run.
  std::vector<std::vector<float>> starts(chains, std::vector<float>(64));
  for (int c = 0; c < chains; ++c)
    for (int k = 0; k < 64; ++k) starts[c][k] = 0.01f * float((c * 7 + k) % 19);
  const int wide_steps = std::max(1, steps / chains);
  ComputationGraph simple(false), batched(true);
  Timing chain0, chain1, wide0, wide1;
  for (int r = 0; r < reps + 3; ++r) {
    const bool keep = r >= 3;
    auto chain = [&](ComputationGraph& cg) { return sum_elems(mlp_chain(cg, W, b, x0, steps)); };
    auto many = [&](ComputationGraph& cg) { return wide(cg, W, b, starts, wide_steps); };
    time_graph(simple, pc, chain, chain0, keep);
    time_graph(batched, pc, chain, chain1, keep);
    time_graph(simple, pc, many, wide0, keep);
    time_graph(batched, pc, many, wide1, keep);
  }
  chain0.report("chain_simple");
  chain1.report("chain_autobatch");
  std::printf("chain_schedule_ns_per_node=%.1f ns (autobatch forward - simple forward, nothing batches)\n",
              median(chain1.fwd) - median(chain0.fwd));
  wide0.report("wide_simple");
  wide1.report("wide_autobatch");
  std::printf("wide_chains=%d steps=%d\n", chains, wide_steps);
  std::printf("wide_speedup_forward_backward=%.2f x\n",
              (median(wide0.fwd) + median(wide0.bwd)) / (median(wide1.fwd) + median(wide1.bwd)));
  return 0;
}
