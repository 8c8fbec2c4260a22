// Graph-construction, forward and backward cost per node (prints `name=value unit` lines).
//   build/bench/graph_overhead [--steps N] [--reps R]
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

// Cheap elementwise ops only: tanh/exp alternating.
Expression elementwise_chain(ComputationGraph& g, const std::vector<float>& x0, int steps) {
  Expression h = input(g, Dim({64}), &x0);
  for (int t = 0; t < steps; ++t) h = (t & 1) ? tanh(h) : h * 0.5f;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  initialize(argc, argv);
  int steps = 1000, reps = 50;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  ParameterCollection pc;
  Parameter W = pc.add_parameters({64, 64}, 0.1f), b = pc.add_parameters({64}, 0.1f);
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
  return 0;
}
