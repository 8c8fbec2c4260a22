// The generic op harness: walks the registry and checks every sample of every op.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "core/op.h"
#include "device_test_util.h"
#include "dynet/expr.h"
#include "exec/batched.h"
#include "exec/signature.h"
#include "op_harness_util.h"

namespace dynet {
namespace {

using test::build_instance;
using test::Case;
using test::Instances;
using test::kSeed;
using test::SampleInputs;

void check_bad(const Case& c) {
  const OpDef& def = op_def(c.op);
  std::mt19937 rng(kSeed);
  ComputationGraph g;
  const SampleInputs in(g, c.sample, rng);
  const std::vector<Expression>& xs = in.xs;
  try {
    Expression y = c.sample.build(g, xs);
    y.value();
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(def.name), std::string::npos)
        << "the error message should name the op: " << e.what();
  }
}

// One value we can perturb for finite differences, and where its analytic gradient is.
struct Probe {
  float* value;
  float analytic;
  std::string what;
};

// Checks the value's shape, then finite-difference gradients of every input and parameter of the
// sample's `instances` copies in graph g (the executor g was made with).
void check_gradients(const Case& c, ComputationGraph& g, unsigned instances) {
  const OpDef& def = op_def(c.op);
  const OpSample& s = c.sample;
  std::mt19937 rng(kSeed);
  Instances built(g, s, c.op, instances, rng);
  bool uses = false;
  for (VariableIndex i = 0; i < g.size(); ++i) uses |= g.node(i).op == c.op;
  ASSERT_TRUE(uses) << "the sample does not use the op";

  // Shape rule vs computed value. From arguments with elements, a value with elements unless the op declares
  // otherwise: the graph looks for values without elements only at leaves and such ops (OpDef::makes_empty).
  bool inputs_have_elements = !s.inputs.empty() && !def.makes_empty;
  for (const Dim& d : s.inputs) inputs_have_elements = inputs_have_elements && d.size() > 0;
  reset_rng(kSeed);
  for (const Expression& y : built.ys) {
    const Tensor& v = y.value();
    ASSERT_EQ(v.d, y.dim());
    if (inputs_have_elements) EXPECT_GT(v.d.size(), 0u) << "a value without elements from inputs with elements";
    for (unsigned k = 0; k < v.d.size(); ++k) ASSERT_TRUE(std::isfinite(v.v[k])) << "value " << k << " = " << v.v[k];
  }
  const Expression loss = built.loss;
  if (s.params) s.params->reset_gradient();
  reset_rng(kSeed);
  g.forward(loss);
  g.backward(loss, true);

  std::vector<Probe> probes;
  for (unsigned inst = 0; inst < instances; ++inst)
    for (size_t k = 0; k < built.in[inst].xs.size(); ++k) {
      if ((k < s.no_grad.size() && s.no_grad[k]) || !built.in[inst].own[k]) continue;
      const Tensor& gx = built.in[inst].xs[k].gradient();
      std::vector<float>& data = built.in[inst].data[k];
      for (size_t j = 0; j < data.size(); ++j)
        probes.push_back({&data[j], gx.v[j] - built.q[inst][k][j],
                          "instance " + std::to_string(inst) + " input " + std::to_string(k) + "[" + std::to_string(j) + "]"});
    }
  // Parameters reached only through const nodes must get no gradient.
  bool trains_params = false;
  for (VariableIndex i = 0; i < g.size(); ++i) trains_params |= (g.node(i).flags & kParameterNode) != 0;
  const size_t first_param_probe = probes.size();
  if (s.params) {
    for (auto& p : s.params->parameters_list())
      for (unsigned j = 0; j < p->dim.size(); ++j)
        probes.push_back({p->values.v + j, p->nonzero_grad ? p->g.v[j] : 0.f, p->name + "[" + std::to_string(j) + "]"});
    for (auto& p : s.params->lookup_parameters_list())
      for (unsigned j = 0; j < p->all_dim.size(); ++j)
        probes.push_back({p->all_values.v + j, p->nonzero_grad ? p->all_grads.v[j] : 0.f,
                          p->name + "[" + std::to_string(j) + "]"});
  }
  if (!trains_params) {
    for (size_t k = first_param_probe; k < probes.size(); ++k) EXPECT_EQ(probes[k].analytic, 0.f) << probes[k].what;
    probes.resize(first_param_probe);
  }
  if (def.flags & kNoGradient) {
    for (const Probe& p : probes) EXPECT_EQ(p.analytic, 0.f) << p.what;
    return;
  }
  auto eval = [&]() {
    reset_rng(kSeed);
    return double(as_scalar(g.forward(loss)));
  };
  const float h = 1e-3f;
  for (const Probe& p : probes) {
    const float x0 = *p.value;
    *p.value = x0 + h;
    const double up = eval();
    *p.value = x0 - h;
    const double down = eval();
    *p.value = x0;
    // Remove the linear q term from the numeric gradient too (the analytic one already excludes it).
    double expect = (up - down) / (2.0 * h);
    for (unsigned inst = 0; inst < instances; ++inst)
      for (size_t k = 0; k < built.in[inst].xs.size(); ++k) {
        if (!built.in[inst].own[k]) continue;
        const std::vector<float>& data = built.in[inst].data[k];
        if (p.value >= data.data() && p.value < data.data() + data.size()) expect -= built.q[inst][k][p.value - data.data()];
      }
    EXPECT_NEAR(p.analytic, expect, 2e-2 * (1.0 + std::fabs(expect))) << "gradient of " << p.what;
  }
  if (s.params) s.params->reset_gradient();
}

void check_good(const Case& c) {
  ComputationGraph g(false);
  check_gradients(c, g, 1);
}

// ---- Batching mode (JAX's vmap-vs-loop test): kInstances copies of a sample in one graph, each with
// its own input values (and, with OpSample::instance, its own per-instance attributes), computed by
// the autobatching executors and by the simple one: the values and gradients must agree.
constexpr unsigned kInstances = 3;

// A graph whose executor follows `strategy` (0 simple, 1 agenda, 2 depth).
struct StrategyGraph {
  explicit StrategyGraph(int strategy) : saved(autobatch_flag) {
    autobatch_flag = strategy;
    g = std::make_unique<ComputationGraph>();
    autobatch_flag = saved;
  }
  int saved;
  std::unique_ptr<ComputationGraph> g;
};

struct InstanceResults {
  std::vector<std::vector<float>> values, grads;  // outputs; gradients of inputs, then of parameters
  unsigned batched_members = 0;                   // nodes of the op that ran in a group of several
};

// With `dev`, the instances run there (s: the sample with its parameters on dev, see sample_on).
InstanceResults run_instances(const Case& c, int strategy, Device* dev = nullptr, const OpSample* on_dev = nullptr) {
  const OpSample& s = on_dev ? *on_dev : c.sample;
  test::DefaultDevice on(dev ? dev : default_device);
  StrategyGraph sg(strategy);
  ComputationGraph& g = *sg.g;
  g.set_merge_equal_nodes(false);  // instances without inputs of their own are equal: they must still batch
  std::mt19937 rng(kSeed);
  Instances built(g, s, c.op, kInstances, rng, dev != nullptr);
  if (s.params) s.params->reset_gradient();
  reset_rng(kSeed);
  g.forward(built.loss);
  g.backward(built.loss, true);
  InstanceResults out;
  for (const Expression& y : built.ys) out.values.push_back(as_vector(y.value()));
  for (auto& in : built.in)
    for (size_t k = 0; k < in.xs.size(); ++k)
      if ((k >= s.no_grad.size() || !s.no_grad[k]) && in.own[k]) out.grads.push_back(as_vector(in.xs[k].gradient()));
  if (s.params) {
    for (auto& p : s.params->parameters_list()) out.grads.push_back(p->nonzero_grad ? as_vector(p->g) : std::vector<float>());
    for (auto& p : s.params->lookup_parameters_list())
      out.grads.push_back(p->nonzero_grad ? as_vector(p->all_grads) : std::vector<float>());
    s.params->reset_gradient();
  }
  if (const auto* e = dynamic_cast<const BatchedExecutor*>(&g.executor()))
    for (const auto& b : e->batches())
      if (g.node(e->members(b)[0]).op == c.op) out.batched_members += b.size;
  return out;
}

void expect_same(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                 const std::string& what, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << what << " " << i;
    for (size_t j = 0; j < want[i].size(); ++j)
      ASSERT_NEAR(got[i][j], want[i][j], tol * (1.0 + std::fabs(want[i][j]))) << what << " " << i << "[" << j << "]";
  }
}

void check_batched(const Case& c) {
  // Random ops too: a batched random node takes its members' keys in member order and gives each member
  // the values it gets alone (kernels/device/philox.h), and the instances are the graph's only random nodes.
  // Except the LSTM gates node's weight noise: one draw per run, which batched members share (the weights
  // are shared), so its batched gradients are checked against finite differences instead.
  if ((op_def(c.op).flags & kRandom) && std::string(op_def(c.op).name) == "vanilla_lstm_gates") {
    StrategyGraph sg(1);
    check_gradients(c, *sg.g, kInstances);
    return;
  }
  const InstanceResults want = run_instances(c, 0);
  for (int strategy : {1, 2}) {
    const InstanceResults got = run_instances(c, strategy);
    expect_same(got.values, want.values, "strategy " + std::to_string(strategy) + " value of instance");
    expect_same(got.grads, want.grads, "strategy " + std::to_string(strategy) + " gradient");
  }
}

// The batching mode on every test device (the emulated one, and GPUs where there are some): the
// instances' nodes on the device, computed there by every strategy. Strategies 1 and 2 must batch as
// on the CPU and agree with the simple executor on the device, which agrees with the CPU's (within the
// device harness's tolerance: the device kernels are not the CPU's). Random ops take their keys in
// schedule order, so a strategy gives the same values on every device: each is compared with the CPU's.
void check_batched_on_devices(const Case& c) {
  const OpDef& def = op_def(c.op);
  const bool random = def.flags & kRandom;
  std::vector<InstanceResults> cpu;
  for (int strategy : {0, 1, 2}) cpu.push_back(run_instances(c, strategy));
  unsigned compared = 0;
  std::string missing;
  for (Device* dev : test::test_devices()) {
    if (!op_supports(c.op, *dev)) continue;
    const OpSample s = test::sample_on(dev, c.op, c.sample);
    std::vector<InstanceResults> got;
    try {
      for (int strategy : {0, 1, 2}) got.push_back(run_instances(c, strategy, dev, &s));
    } catch (const std::invalid_argument& e) {  // the sample also uses an op that is not on devices yet
      if (std::string(e.what()).find("has no kernels for") == std::string::npos) throw;
      missing = e.what();
      continue;
    }
    for (int strategy : {0, 1, 2}) {
      const std::string what = dev->name + " strategy " + std::to_string(strategy);
      EXPECT_EQ(got[strategy].batched_members, cpu[strategy].batched_members) << what << ": batched otherwise";
      const InstanceResults& want = random || strategy == 0 ? cpu[strategy] : got[0];
      const double tol = &want == &got[0] ? 1e-5 : 1e-4;
      expect_same(got[strategy].values, want.values, what + " value of instance", tol);
      expect_same(got[strategy].grads, want.grads, what + " gradient", tol);
    }
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << def.name << (missing.empty() ? " has no device kernels yet" : ": " + missing);
}

// ---- Identical nodes must get identical signatures: every good sample is built twice on the same
// inputs, once after filling the stack with zeros and once with ones, so that uninitialised padding
// in an attribute struct (copied bytewise into the node) would make them differ.
[[gnu::noinline]] void scribble_stack(unsigned char byte) {
  volatile unsigned char buf[32768];
  for (size_t i = 0; i < sizeof buf; ++i) buf[i] = byte;
}

void check_signature(const Case& c) {
  const OpSample& s = c.sample;
  ComputationGraph g(false);
  std::mt19937 rng(kSeed);
  SampleInputs in(g, s, rng);
  VariableIndex nodes[2];
  for (int b = 0; b < 2; ++b) {
    const size_t begin = g.size();
    scribble_stack(b ? 0xFF : 0x00);
    build_instance(s, g, in.xs, 0);
    nodes[b] = ~0u;
    for (size_t i = begin; i < g.size(); ++i)
      if (g.node(static_cast<VariableIndex>(i)).op == c.op) nodes[b] = static_cast<VariableIndex>(i);
    ASSERT_NE(nodes[b], ~0u) << "the sample does not use the op";
  }
  // Shared arguments built by the sample itself are different nodes each time: nothing to compare.
  const BatchRule& rule = op_def(c.op).batch;
  for (unsigned k = 0; k < g.node(nodes[0]).nargs; ++k)
    if (rule.is_shared(k) && g.node_args(nodes[0])[k] != g.node_args(nodes[1])[k]) return;
  std::vector<uint64_t> a, b;
  const bool batchable_a = signature_key(g, nodes[0], a), batchable_b = signature_key(g, nodes[1], b);
  EXPECT_EQ(batchable_a, batchable_b);
  EXPECT_EQ(a, b) << "two identical nodes got different signatures (padding in the attribute struct?)";
  const auto& attr = [&](VariableIndex i) {
    return std::vector<uint64_t>(g.node_attr(i), g.node_attr(i) + g.node(i).attr_words);
  };
  // Pointer forms legitimately store the same pointer; inline forms must store the same bytes. A
  // kObjectAttr op's attribute is its own object (each user Node is a new one), never shared.
  if (op_def(c.op).flags & kObjectAttr) return;
  EXPECT_EQ(attr(nodes[0]), attr(nodes[1])) << "identical nodes stored different attribute bytes";
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const auto& reg = op_registry();
  for (size_t i = 0; i < reg.size(); ++i) {
    std::vector<OpSample> samples = reg[i].samples ? reg[i].samples() : std::vector<OpSample>{};
    for (OpSample& s : samples) cases.push_back({static_cast<OpId>(i), std::move(s)});
  }
  return cases;
}

class OpHarness : public ::testing::TestWithParam<Case> {};

TEST_P(OpHarness, Sample) {
  const Case& c = GetParam();
  if (c.sample.bad)
    check_bad(c);
  else
    check_good(c);
}

// The values against the sample's reference (its math in double), and the gradients of Σ r ⊙ y against
// central differences of the reference taken in double: tolerances float kernels meet (1e-5 and 1e-4
// relative) where the float finite differences of Sample allow 2e-2.
TEST_P(OpHarness, Reference) {
  const Case& c = GetParam();
  const OpSample& s = c.sample;
  if (s.bad || !s.reference || (op_def(c.op).flags & kRandom)) GTEST_SKIP() << "no reference";
  ComputationGraph g(false);
  std::mt19937 rng(kSeed);
  SampleInputs in(g, s, rng);
  const Expression y = s.build(g, in.xs);
  std::vector<std::vector<double>> xs;
  for (const std::vector<float>& d : in.data) xs.emplace_back(d.begin(), d.end());
  const std::vector<double> want = s.reference(xs);
  const std::vector<float> got = as_vector(y.value());
  ASSERT_EQ(got.size(), want.size()) << "the reference's value count";
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-5 * (1 + std::fabs(want[k]))) << "value " << k;
  if (op_def(c.op).flags & kNoGradient) return;
  std::vector<float> r = test::random_values(y.dim(), -1, 1, rng);
  const Expression loss = test::harness_loss({y, input(g, y.dim(), &r)});
  g.forward(loss);
  g.backward(loss, true);
  auto weighted = [&] {
    const std::vector<double> v = s.reference(xs);
    double sum = 0;
    for (size_t k = 0; k < v.size(); ++k) sum += r[k] * v[k];
    return sum;
  };
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i < s.no_grad.size() && s.no_grad[i]) continue;
    const std::vector<float> grad = as_vector(in.xs[i].gradient());
    for (size_t j = 0; j < xs[i].size(); ++j) {
      const double x0 = xs[i][j], h = 1e-6 * std::max(1.0, std::fabs(x0));
      xs[i][j] = x0 + h;
      const double up = weighted();
      xs[i][j] = x0 - h;
      const double down = weighted();
      xs[i][j] = x0;
      const double expect = (up - down) / (2 * h);
      EXPECT_NEAR(grad[j], expect, 1e-4 * (1 + std::fabs(expect))) << "gradient of input " << i << "[" << j << "]";
    }
  }
}

TEST_P(OpHarness, Batched) {
  const Case& c = GetParam();
  if (c.sample.bad || !op_def(c.op).batch.batchable) GTEST_SKIP() << "not batchable / bad sample";
  check_batched(c);
}

TEST_P(OpHarness, BatchedOnDevices) {
  const Case& c = GetParam();
  if (c.sample.bad || !op_def(c.op).batch.batchable) GTEST_SKIP() << "not batchable / bad sample";
  if (op_def(c.op).name == std::string("harness_loss")) GTEST_SKIP() << "the harness's loss runs on the CPU";
  check_batched_on_devices(c);
}

TEST_P(OpHarness, Signature) {
  const Case& c = GetParam();
  if (c.sample.bad) GTEST_SKIP() << "bad sample";
  check_signature(c);
}

// ---- Tensors without elements (DyNet programs meet them through parameters of width 0): each good
// sample again with one dim of one input set to 0 is either refused with std::invalid_argument (by the op
// or by the graph, which refuses arguments without elements where the value would have some unless the op
// takes them, OpDef::takes_empty) or computes: the shape rule's dim, finite values, the other inputs'
// gradients against finite differences, and the same values and gradients under autobatching.
std::vector<OpSample> empty_variants(const OpSample& s) {
  std::vector<OpSample> out;
  for (size_t j = 0; j < s.inputs.size(); ++j)
    for (unsigned p = 0; p < s.inputs[j].nd; ++p) {
      OpSample v = s;
      v.inputs[j].d[p] = 0;
      v.name += " with input " + std::to_string(j) + " " + v.inputs[j].str();
      out.push_back(std::move(v));
    }
  return out;
}

TEST_P(OpHarness, EmptyInputs) {
  const Case& c = GetParam();
  if (c.sample.bad) GTEST_SKIP() << "bad sample";
  const OpDef& def = op_def(c.op);
  for (const OpSample& v : empty_variants(c.sample)) {
    SCOPED_TRACE(v.name);
    const Case e{c.op, v};
    try {
      ComputationGraph g(false);
      check_gradients(e, g, 1);
    } catch (const std::invalid_argument&) {
      continue;  // refused
    }
    if (!def.batch.batchable) continue;
    const InstanceResults simple = run_instances(e, 0);
    for (int strategy : {1, 2}) {
      const InstanceResults batched = run_instances(e, strategy);
      expect_same(batched.values, simple.values, "values, strategy " + std::to_string(strategy));
      expect_same(batched.grads, simple.grads, "gradients, strategy " + std::to_string(strategy));
    }
  }
}

// The ops that compute values with elements from arguments without any (OpDef::takes_empty), against
// what they are (a product over nothing is zeros, a sum 0), under every strategy, several instances of
// each in one graph: values, and the gradients of the arguments with elements.
TEST(EmptyTensors, OpsThatTakeThemComputeWhatTheyAre) {
  for (int strategy : {0, 1, 2}) {
    SCOPED_TRACE("strategy " + std::to_string(strategy));
    StrategyGraph sg(strategy);
    ComputationGraph& g = *sg.g;
    std::vector<Expression> terms, biases;
    for (int k = 0; k < 3; ++k) {
      const Expression e = input(g, Dim({0}), std::vector<float>{}), E = input(g, Dim({3, 0}), std::vector<float>{});
      const Expression b = input(g, Dim({3}), {1.f + k, -2.f, 0.5f}), M = input(g, Dim({3, 2}), {1, 2, 3, 4, 5, 6});
      biases.push_back(b);
      EXPECT_EQ(as_vector((E * e).value()), std::vector<float>(3, 0.f));
      EXPECT_EQ(as_vector(affine_transform({b, E, e}).value()), as_vector(b.value()));
      EXPECT_EQ(as_vector(affine_transform({b, E, e, M, input(g, Dim({2}), {1.f, -1.f})}).value()),
                (std::vector<float>{-2.f + k, -5.f, -2.5f}));
      EXPECT_EQ(as_vector(sum_dim(E, {1}).value()), std::vector<float>(3, 0.f));
      EXPECT_EQ(as_vector(concatenate({e, b, e}).value()), as_vector(b.value()));
      EXPECT_EQ(as_vector(concatenate_cols({E, M, E}).value()), as_vector(M.value()));
      EXPECT_EQ(as_vector(concatenate({select_rows(M, std::vector<unsigned>{}), M}).value()), as_vector(M.value()));  // {0,2} from M
      for (const Expression& zero : {dot_product(e, e), squared_norm(E), squared_distance(E, E), l1_distance(e, e),
                                     huber_distance(E, E), binary_log_loss(e, e), trace_of_product(E, E),
                                     sum_elems(E), l2_norm(e)})
        EXPECT_EQ(as_scalar(zero.value()), 0.f);
      EXPECT_EQ(tanh(E).dim(), Dim({3, 0}));
      EXPECT_EQ(transpose(E).dim(), Dim({0, 3}));
      terms.push_back(sum_elems(affine_transform({b, E, e})) + 2.f * sum_elems(concatenate({e, b})) + l2_norm(e));
    }
    const Expression loss = sum(terms);
    EXPECT_FLOAT_EQ(as_scalar(g.forward(loss)), 3.f * (-0.5f * 3 + 3.f));  // Σ_k 3 Σ b_k
    g.backward(loss, true);
    for (const Expression& b : biases) EXPECT_EQ(as_vector(b.gradient()), std::vector<float>(3, 3.f));
  }
}

// Where the value would have elements, other ops refuse arguments without any, by name, and the graph stays
// usable; DyNet computes NaN, ±FLT_MAX or garbage there.
TEST(EmptyTensors, OtherOpsRefuseThemByName) {
  ComputationGraph g;
  const Expression e = input(g, Dim({0}), std::vector<float>{}), x = input(g, Dim({2}), {1.f, 2.f});
  for (auto [op, build] : std::vector<std::pair<std::string, std::function<Expression()>>>{
           {"mean_elems", [&] { return mean_elems(e); }},
           {"std_elems", [&] { return std_elems(e); }},
           {"mean_elems", [&] { return mean_elems(select_rows(x, std::vector<unsigned>{})); }},  // made without elements by select_rows
           {"max_dim", [&] { return max_dim(e); }},
           {"logsumexp_dim", [&] { return logsumexp_dim(e, 0); }},
           {"pickneglogsoftmax", [&] { return pickneglogsoftmax(e, 0u); }}}) {
    try {
      build();
      ADD_FAILURE() << op << " took an argument without elements";
    } catch (const std::invalid_argument& ex) {
      EXPECT_NE(std::string(ex.what()).find(op), std::string::npos) << ex.what();
    }
  }
  EXPECT_EQ(as_vector((x + x).value()), (std::vector<float>{2.f, 4.f}));
}

INSTANTIATE_TEST_SUITE_P(Registry, OpHarness, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = std::string(op_def(info.param.op).name) + "_" + info.param.sample.name;
                           for (char& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(OpRegistry, EveryOpHasGoodSamples) {
  const auto& reg = op_registry();
  for (const OpDef& d : reg) {
    if (std::string(d.name).rfind("harness_", 0) == 0) continue;  // the tests' own ops (test_devices.cc registers some)
    std::vector<OpSample> samples = d.samples ? d.samples() : std::vector<OpSample>{};
    size_t good = 0;
    for (const OpSample& s : samples) good += !s.bad;
    EXPECT_GT(good, 0u) << "op " << d.name << " has no test samples";
  }
}

// Every batchable op must have a sample whose instances actually run batched, and an op with
// per-instance attributes (a merge hook) one whose instances differ in them.
TEST(OpRegistry, EveryBatchableOpBatches) {
  const auto& reg = op_registry();
  for (size_t i = 0; i < reg.size(); ++i) {
    const OpDef& d = reg[i];
    if (!d.batch.batchable) {
      EXPECT_TRUE(d.batch.why_not && *d.batch.why_not) << d.name << ": not batchable without a reason";
      continue;
    }
    std::vector<OpSample> samples = d.samples ? d.samples() : std::vector<OpSample>{};
    bool batches = false, varies = false;
    for (OpSample& s : samples) {
      if (s.bad) continue;
      varies |= s.instance != nullptr;
      batches |= run_instances(Case{static_cast<OpId>(i), s}, 1).batched_members > 0;
    }
    EXPECT_TRUE(batches) << d.name << " is batchable but none of its samples runs batched";
    if (d.batch.merge) EXPECT_TRUE(varies) << d.name << " merges per-instance attributes but no sample varies them";
  }
}

}  // namespace
}  // namespace dynet
