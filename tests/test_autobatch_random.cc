// Autobatching against the simple executor on random per-example programs: several families of examples,
// each family one random program of vector ops (elementwise ops, products with shared weights,
// concatenations, slices, reshapes and row selections, LSTM cells with further consumers of their gates,
// normalizations, batch-element ops, dot products, softmaxes, picks and hinges) over its own inputs, with
// values used several times, values taken from the previous example, minibatched examples and values read
// mid-graph. The loss, every parameter gradient and every node's gradient must agree under strategies 1
// and 2, with elementwise fusion and gradient recycling each on and off, and with equal nodes merged (loss
// and parameters only: merged nodes have no gradient of their own), through two backward passes over the
// same memory and a third after a checkpoint, a revert and more examples; and on the emulated device and
// any GPU under every strategy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "dynet/expr.h"
#include "exec/batched.h"

namespace dynet {
namespace {

enum Step : unsigned {
  kTanh,
  kLogistic,
  kRectify,
  kSquare,
  kScale,
  kCmult,
  kAdd,
  kSubtract,
  kMax,
  kSum3,
  kAverage,
  kProduct,
  kAffine,
  kSlices,
  kConcatProduct,
  kLstm,
  kGatesSlice,
  kSecondH,
  kSoftmax,
  kLogSoftmax,
  kElu,
  kSilu,
  kLayerNorm,
  kColumns,
  kPermute,
  kSelectRows,
  kMaxDim,
  kNoBackprop,
  kFirstElement,
  kSumBatches,
  kToBatch,
  kConstParameter,
  kDivide,
  kDotTerm,
  kPickTerm,
  kHingeTerm,
  kLogSumExpTerm,
  kDistanceTerm,
  kFromPrevious,
  kStepCount
};

struct Op {
  Step step;
  unsigned a, b, c;  // operands: indices into the example's values (taken modulo their count)
  unsigned weight;   // which shared weight
  bool read;         // read the result's value mid-graph
};

// One family's program; its examples differ in their inputs, lookups and labels.
struct Program {
  unsigned bd;  // batch elements per example
  std::vector<Op> ops;
};

struct Weights {
  static constexpr unsigned kCount = 2, kClasses = 5, kWords = 30;
  unsigned dim;
  std::vector<Parameter> square, bias, wide, gates_x, gates_h, gates_b, gain;
  Parameter out;
  LookupParameter embed;
  Weights(ParameterCollection& pc, unsigned d) : dim(d) {
    for (unsigned k = 0; k < kCount; ++k) {
      square.push_back(pc.add_parameters({d, d}));
      bias.push_back(pc.add_parameters({d}));
      wide.push_back(pc.add_parameters({d, 2 * d}));
      gates_x.push_back(pc.add_parameters({4 * d, d}));
      gates_h.push_back(pc.add_parameters({4 * d, d}));
      gates_b.push_back(pc.add_parameters({4 * d}));
      gain.push_back(pc.add_parameters({d}));
    }
    out = pc.add_parameters({kClasses, d});
    embed = pc.add_lookup_parameters(kWords, {d});
  }
};

Program random_program(std::mt19937& rng, unsigned length) {
  Program p;
  p.bd = rng() % 4 == 0 ? 2 : 1;
  for (unsigned k = 0; k < length; ++k) {
    Op op{};
    // Cells and their further consumers more often than the rest.
    constexpr Step kMore[] = {kLstm, kLstm, kLstm, kGatesSlice, kSecondH, kSecondH};
    constexpr unsigned kMoreCount = sizeof kMore / sizeof kMore[0];
    const unsigned pick = rng() % (kStepCount + kMoreCount);
    op.step = pick < kStepCount ? Step(pick) : kMore[pick - kStepCount];
    op.a = rng(), op.b = rng(), op.c = rng();
    op.weight = rng() % Weights::kCount;
    op.read = rng() % 16 == 0;
    p.ops.push_back(op);
  }
  return p;
}

// Builds one example's program, appending its nodes to `all` (its last value, then its scores and its
// loss, last). Returns its loss (summed over its batch elements).
Expression build_example(ComputationGraph& g, const Weights& w, const Program& p, std::mt19937& rng,
                         const Expression* previous, std::vector<Expression>& all) {
  const unsigned d = w.dim, bd = p.bd;
  const Dim vec({d}, bd), half({d / 2, 2}, bd);
  std::vector<Expression> values;
  auto keep = [&](const Expression& e) {
    values.push_back(e);
    all.push_back(e);
  };
  std::vector<float> x(size_t(d) * bd);
  for (float& v : x) v = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
  keep(input(g, vec, x));
  std::vector<unsigned> ids(bd), labels(bd);
  for (unsigned& i : ids) i = rng() % Weights::kWords;
  for (unsigned& l : labels) l = rng() % Weights::kClasses;
  keep(bd == 1 ? lookup(g, w.embed, ids[0]) : lookup(g, w.embed, ids));
  Expression h = zeros(g, vec), c = zeros(g, vec), gates;
  std::vector<Expression> terms;
  for (const Op& op : p.ops) {
    const Expression &a = values[op.a % values.size()], &b = values[op.b % values.size()],
                     &e3 = values[op.c % values.size()];
    const unsigned k = op.weight;
    switch (op.step) {
      case kTanh: keep(tanh(a)); break;
      case kLogistic: keep(logistic(a)); break;
      case kRectify: keep(rectify(a)); break;
      case kSquare: keep(square(tanh(a))); break;
      case kScale: keep(a * 0.5f); break;
      case kCmult: keep(cmult(a, b)); break;
      case kAdd: keep(a + b); break;
      case kSubtract: keep(a - b); break;
      case kMax: keep(max(a, b)); break;
      case kSum3: keep(sum({a, b, e3})); break;
      case kAverage: keep(average({a, b})); break;
      case kProduct: keep(tanh(parameter(g, w.square[k]) * a)); break;
      case kAffine: keep(tanh(affine_transform({parameter(g, w.bias[k]), parameter(g, w.square[k]), a}))); break;
      case kSlices: keep(concatenate({pick_range(a, 0, d / 2), pick_range(b, d / 2, d)})); break;
      case kConcatProduct: keep(tanh(parameter(g, w.wide[k]) * concatenate({a, b}))); break;
      case kLstm: {
        gates = vanilla_lstm_gates(a, h, parameter(g, w.gates_x[k]), parameter(g, w.gates_h[k]),
                                   parameter(g, w.gates_b[k]));
        all.push_back(gates);
        c = vanilla_lstm_c(c, gates);
        all.push_back(c);
        h = vanilla_lstm_h(c, gates);
        keep(h);
        break;
      }
      // Further consumers of a cell's gates, beside its c and h (whose gradients write its blocks alone).
      case kGatesSlice:
        if (gates.pg) keep(tanh(pick_range(gates, d, 2 * d)));
        break;
      case kSecondH:
        if (gates.pg) keep(vanilla_lstm_h(c * 0.5f, gates));
        break;
      case kSoftmax: keep(softmax(a)); break;
      case kLogSoftmax: keep(log_softmax(a) * 0.25f); break;
      case kElu: keep(elu(a)); break;
      case kSilu: keep(silu(a)); break;
      // Plus the example's random input, over 4 elements or more: the normalization of a constant vector
      // (a - a), or of 2 elements (whose output is ±1 whatever they are: its gradient is rounding error over
      // their spread), is ill-conditioned.
      case kLayerNorm:
        if (d >= 4) keep(layer_norm(a + values[0], parameter(g, w.gain[k]), parameter(g, w.bias[k])));
        break;
      case kColumns: keep(sum_cols(tanh(parameter(g, w.square[k]) * concatenate_cols({a, b})))); break;
      case kPermute: keep(reshape(transpose(reshape(a, half)), vec)); break;
      case kSelectRows: {
        std::vector<unsigned> rows(d);
        for (unsigned r = 0; r < d; ++r) rows[r] = (r + op.c) % d;
        keep(select_rows(a, rows));
        break;
      }
      case kMaxDim: keep(concatenate({max_dim(reshape(a, half), 1), pick_range(b, d / 2, d)})); break;
      case kNoBackprop: keep(nobackprop(a) + b); break;
      case kFirstElement: keep(cmult(pick_batch_elem(a, 0u), b)); break;
      case kPickTerm: terms.push_back(pick(a, op.c % d)); break;
      case kHingeTerm: terms.push_back(hinge(a, op.c % d) * 0.1f); break;
      case kLogSumExpTerm: terms.push_back(logsumexp({pick(a, 0u), pick(b, 1u), pick(e3, 2u % d)})); break;
      case kDotTerm: terms.push_back(dot_product(a, b)); break;
      case kDistanceTerm: terms.push_back(squared_distance(a, b) * 0.1f); break;
      case kFromPrevious:
        if (previous && previous->dim() == vec) keep(cmult(*previous, a));
        break;
      case kStepCount: break;
    }
    if (op.read) values.back().value();
  }
  const Expression scores = parameter(g, w.out) * values.back();
  all.push_back(scores);
  terms.push_back(bd == 1 ? pickneglogsoftmax(scores, labels[0]) : pickneglogsoftmax(scores, labels));
  Expression loss = sum(terms);
  all.push_back(loss);
  return bd == 1 ? loss : sum_batches(loss);
}

struct Config {
  int strategy;
  bool fusion, recycling, merge;
  std::string name() const {
    return "strategy " + std::to_string(strategy) + (fusion ? ", fusion" : "") + (recycling ? ", recycling" : "") +
           (merge ? ", merged" : "");
  }
};

struct Result {
  float loss = 0;
  std::vector<std::vector<float>> params, nodes;
  size_t batched = 0, recycled = 0;
};

// One seed's programs: `families` programs of `length` steps over vectors of `dim`, `examples` examples
// of them in turn; the seed draws the programs, the examples' inputs and (reset_rng) the weights made next.
struct Programs {
  unsigned seed, dim, examples;
  std::vector<Program> programs;
  Programs(unsigned s, unsigned d, unsigned families, unsigned length, unsigned n) : seed(s), dim(d), examples(n) {
    reset_rng(seed);
    std::mt19937 rng(seed);
    for (unsigned f = 0; f < families; ++f) programs.push_back(random_program(rng, length));
  }
  // Vectors of 2 to 8, 1 to 4 families of 5 to 20 steps, 4 to 23 examples.
  static Programs small(unsigned seed) {
    return Programs(seed, 2 + 2 * (seed % 4), 1 + seed % 4, 5 + seed % 16, 4 + seed % 20);
  }
};

// The examples of `drawn` in a graph set up as `config` says.
Result run(ParameterCollection& pc, const Weights& w, const Programs& drawn, const Config& config) {
  const std::vector<Program>& programs = drawn.programs;
  const unsigned examples = drawn.examples;
  pc.reset_gradient();
  const int saved = autobatch_flag;
  autobatch_flag = config.strategy;
  auto g = std::make_unique<ComputationGraph>();
  autobatch_flag = saved;
  g->set_merge_equal_nodes(config.merge);
  auto* e = dynamic_cast<BatchedExecutor*>(const_cast<Executor*>(&g->executor()));
  if (e) {
    e->set_fusion(config.fusion);
    e->set_gradient_recycling(config.recycling);
  }
  std::mt19937 rng(drawn.seed);
  std::vector<Expression> all, losses;
  Expression previous;  // the previous example's last value (all ends with it, its scores and its loss)
  for (unsigned j = 0; j < examples; ++j) {
    losses.push_back(build_example(*g, w, programs[j % programs.size()], rng, j ? &previous : nullptr, all));
    previous = all[all.size() - 3];
  }
  Result r;
  auto backward = [&](const Expression& loss) {
    pc.reset_gradient();
    g->backward(loss, /*full=*/true);
    for (auto& p : pc.parameters_list()) r.params.push_back(as_vector(p->g));
    for (auto& p : pc.lookup_parameters_list()) r.params.push_back(as_vector(p->all_grads));
    if (!config.merge)
      for (const Expression& x : all) r.nodes.push_back(as_vector(x.gradient()));
  };
  const Expression loss = sum(losses);
  r.loss = as_scalar(loss.value());
  // Twice: the second pass's gradient memory holds the first's gradients, which must not leak into it.
  backward(loss);
  backward(loss);
  // More examples on the same graph: some built, computed and dropped again (checkpoint, revert), then
  // others, whose loss with the first ones' goes through a third backward pass.
  const size_t kept = all.size();
  g->checkpoint();
  for (unsigned j = 0; j < examples / 2; ++j)
    build_example(*g, w, programs[j % programs.size()], rng, &previous, all).value();
  g->revert();
  all.resize(kept);
  for (unsigned j = 0; j < examples / 2; ++j)
    losses.push_back(build_example(*g, w, programs[(j + 1) % programs.size()], rng, &previous, all));
  const Expression more = sum(losses);
  r.loss += as_scalar(more.value());
  backward(more);
  if (e) {
    for (const auto& b : e->batches()) r.batched += e->nodes_computed(b);
    r.recycled = e->recycled_batches();
  }
  pc.reset_gradient();
  return r;
}

// Where each list first differs beyond tolerance; empty when none does.
std::string first_difference(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                             const char* what, float tol) {
  if (got.size() != want.size()) return std::string(what) + ": counts differ";
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].size() != want[i].size()) return std::string(what) + " " + std::to_string(i) + ": sizes differ";
    for (size_t k = 0; k < want[i].size(); ++k)
      if (!(std::fabs(got[i][k] - want[i][k]) <= tol * (1 + std::fabs(want[i][k]))))
        return std::string(what) + " " + std::to_string(i) + " element " + std::to_string(k) + ": " +
               std::to_string(got[i][k]) + " against " + std::to_string(want[i][k]);
  }
  return "";
}

void expect_same(const Result& got, const Result& ref, const std::string& where) {
  EXPECT_NEAR(got.loss, ref.loss, 1e-4f * (1 + std::fabs(ref.loss))) << where;
  EXPECT_EQ(first_difference(got.params, ref.params, "parameter", 1e-4f), "") << where;
  EXPECT_EQ(first_difference(got.nodes, ref.nodes, "node", 1e-4f), "") << where;
}

void check(const Programs& drawn, size_t& batched, size_t& recycled) {
  ParameterCollection pc;
  const Weights w(pc, drawn.dim);
  const Result want = run(pc, w, drawn, {0, false, false, false});
  const Result want_merged = run(pc, w, drawn, {0, false, false, true});
  for (int strategy : {1, 2})
    for (bool fusion : {true, false})
      for (bool recycling : {true, false})
        for (bool merge : {false, true}) {
          const Config config{strategy, fusion, recycling, merge};
          const Result got = run(pc, w, drawn, config);
          const Result& ref = merge ? want_merged : want;
          expect_same(got, ref,
                      "seed " + std::to_string(drawn.seed) + ", dim " + std::to_string(drawn.dim) + ", " + config.name());
          batched += got.batched;
          recycled += got.recycled;
        }
}

// DYNET_TEST_RANDOM_PROGRAMS=n runs n times as many programs (a longer search for a failing one).
unsigned seeds(unsigned n) {
  const char* times = std::getenv("DYNET_TEST_RANDOM_PROGRAMS");
  return times ? n * unsigned(std::max(1, std::atoi(times))) : n;
}

// Small vectors: many small batches, gathered and scattered arguments.
TEST(AutobatchRandomPrograms, SmallVectors) {
  size_t batched = 0, recycled = 0;
  for (unsigned seed = 1; seed <= seeds(24); ++seed) check(Programs::small(seed), batched, recycled);
  EXPECT_GT(batched, 0u);
}

// Vectors large enough that batch gradients are recycled (4096 floats and more).
TEST(AutobatchRandomPrograms, RecycledGradients) {
  size_t batched = 0, recycled = 0;
  for (unsigned seed = 101; seed <= 100 + seeds(6); ++seed) check(Programs(seed, 128, 2, 12, 64), batched, recycled);
  EXPECT_GT(batched, 0u);
  EXPECT_GT(recycled, 0u);
}

// The programs with their weights and inputs on each device other than the CPU (the emulated one and
// any GPU): strategies 0, 1 and 2 there give the CPU's simple executor's loss and gradients.
TEST(AutobatchRandomPrograms, OnDevices) {
  for (Device* dev : test::test_devices())
    for (unsigned seed = 201; seed <= 200 + seeds(8); ++seed) {
      const Programs drawn = Programs::small(seed);
      ParameterCollection cpu_pc;
      const Weights cpu_w(cpu_pc, drawn.dim);
      const Result want = run(cpu_pc, cpu_w, drawn, {0, false, false, false});
      test::DefaultDevice on(dev);
      ParameterCollection pc;
      const Weights w(pc, drawn.dim);
      test::copy_parameter_values(pc, cpu_pc);
      for (int strategy : {0, 1, 2})
        expect_same(run(pc, w, drawn, {strategy, true, true, false}), want,
                    "seed " + std::to_string(seed) + " on " + dev->name + ", strategy " + std::to_string(strategy));
    }
}

}  // namespace
}  // namespace dynet
