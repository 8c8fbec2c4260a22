// The op harness's graphs (tests/test_ops.cc, and the perf mode tests/op_perf.cc): a sample's instances
// with their own random inputs, summed into a scalar by a loss op of the harness's own; not a test source.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/op.h"
#include "device_test_util.h"
#include "dynet/expr.h"

namespace dynet::test {

// A test-only loss over argument pairs: Σ_pairs Σ_elements a ⊙ b (a scalar). Keeping it separate
// makes the harness independent of the ops under test.
inline void loss_fwd(const ForwardArgs& a) {
  double s = 0;
  for (unsigned p = 0; p + 1 < a.n; p += 2)
    for (unsigned k = 0; k < a.xs[p].d.size(); ++k) s += double(a.xs[p].v[k]) * a.xs[p + 1].v[k];
  a.fx.v[0] = static_cast<float>(s);
}
inline void loss_bwd(const BackwardArgs& a) {
  const Tensor& other = a.xs[a.i ^ 1u];
  for (unsigned k = 0; k < a.dEdxi.d.size(); ++k) a.dEdxi.v[k] += a.dEdf.v[0] * other.v[k];
}
inline Dim loss_shape(const ArgDims& xs, AttrView) {
  if (xs.size() % 2) op_error("harness_loss", "needs pairs of arguments");
  for (unsigned p = 0; p < xs.size(); p += 2)
    if (xs[p].size() != xs[p + 1].size())
      op_error("harness_loss", "sizes differ: " + xs[p].str() + " vs " + xs[p + 1].str());
  return Dim({1});
}
inline std::vector<OpSample> loss_samples();
inline const OpId k_loss = register_op({.name = "harness_loss", .shape = loss_shape, .forward = loss_fwd,
                                        .backward = loss_bwd, .batch = {.why_not = "the harness's loss runs alone"},
                                        .samples = loss_samples, .takes_empty = true});
inline Expression harness_loss(const std::vector<Expression>& xs) { return make_node_n(k_loss, xs); }
inline std::vector<OpSample> loss_samples() {
  auto build = [](ComputationGraph&, const std::vector<Expression>& x) { return harness_loss(x); };
  return {{"two_pairs", {Dim({3, 2}), Dim({3, 2}), Dim({2}, 2), Dim({2}, 2)}, build},
          {"bad", {Dim({3}), Dim({2})}, build, -1, 1, true}};
}

constexpr unsigned kSeed = 1234;

// The sample's inputs: random values in [lo, hi] behind updatable input nodes of g.
// With `shared`, the inputs marked in `share` are shared's (the same nodes), not new ones.
struct SampleInputs {
  std::vector<std::vector<float>> data;
  std::vector<Expression> xs;
  std::vector<bool> own;  // whether xs[k] is this object's input
  SampleInputs(ComputationGraph& g, const OpSample& s, std::mt19937& rng, const SampleInputs* shared = nullptr,
               const std::vector<bool>& share = {}) {
    for (const Dim& d : s.inputs) data.push_back(random_values(d, s.lo, s.hi, rng));
    for (size_t k = 0; k < data.size(); ++k) {
      own.push_back(!shared || k >= share.size() || !share[k]);
      xs.push_back(own[k] ? input(g, s.inputs[k], &data[k]) : shared->xs[k]);
    }
  }
};

// Builds the sample's op node of instance k (several instances of one sample in one graph batch).
inline Expression build_instance(const OpSample& s, ComputationGraph& g, const std::vector<Expression>& xs, unsigned k) {
  return s.instance ? s.instance(g, xs, k) : s.build(g, xs);
}

// `instances` copies of a sample in graph g, each with its own random inputs, and the harness loss
// = Σ_k (Σ y_k ⊙ r_k + Σ_j Σ x_kj ⊙ q_kj). The x terms come after the op in the graph, so their
// gradient reaches x first: an op whose backward overwrote (instead of accumulating) would lose it.
// With `device`, the sample's inputs and nodes are on default_device (set by the caller) and the loss
// (a CPU op) takes its arguments over to the CPU.
struct Instances {
  std::vector<SampleInputs> in;
  std::vector<Expression> ys;
  std::vector<std::vector<float>> r;
  std::vector<std::vector<std::vector<float>>> q;
  Expression loss;
  Instances(ComputationGraph& g, const OpSample& s, OpId op, unsigned instances, std::mt19937& rng,
            bool device = false) {
    std::vector<bool> share;
    for (unsigned k = 0; k < instances; ++k) {
      const size_t begin = g.size();
      in.emplace_back(g, s, rng, k ? &in[0] : nullptr, share);
      ys.push_back(build_instance(s, g, in.back().xs, k));
      if (k == 0) share = shared_inputs(g, op, begin, in[0].xs);
    }
    std::vector<Expression> pairs;
    for (unsigned k = 0; k < instances; ++k) {
      r.push_back(random_values(ys[k].dim(), -1, 1, rng));
      q.emplace_back();
      for (const Dim& d : s.inputs) q[k].push_back(random_values(d, -1, 1, rng));
    }
    Device* const host = device ? cpu_device() : nullptr;
    auto on_host = [host](const Expression& x) { return host ? to_device(x, host) : x; };
    for (unsigned k = 0; k < instances; ++k) pairs.insert(pairs.end(), {on_host(ys[k]), input(g, ys[k].dim(), &r[k], host)});
    for (unsigned k = 0; k < instances; ++k)
      for (size_t j = 0; j < in[k].xs.size(); ++j)
        if (in[k].own[j]) pairs.insert(pairs.end(), {on_host(in[k].xs[j]), input(g, s.inputs[j], &q[k][j], host)});
    loss = harness_loss(pairs);
  }
  // The inputs that the op of the first instance (built from node `begin` on) takes as shared arguments
  // (the W of W*x): later instances use the same nodes, as they must to batch.
  static std::vector<bool> shared_inputs(const ComputationGraph& g, OpId op, size_t begin, const std::vector<Expression>& xs) {
    std::vector<bool> share(xs.size(), false);
    const BatchRule& rule = op_def(op).batch;
    for (size_t i = begin; i < g.size(); ++i) {
      const NodeRec& r = g.node(static_cast<VariableIndex>(i));
      if (r.op != op) continue;
      for (unsigned a = 0; a < r.nargs; ++a)
        for (size_t j = 0; j < xs.size(); ++j)
          if (rule.is_shared(a) && g.node_args(static_cast<VariableIndex>(i))[a] == xs[j].i && xs[j].dim().bd == 1)
            share[j] = true;
    }
    return share;
  }
};

}  // namespace dynet::test
