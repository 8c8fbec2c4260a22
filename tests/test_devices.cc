// Devices: the device manager and flags, nodes and parameters on devices, to_device, and the device op
// harness (every op's samples on every device other than the CPU, compared with the CPU). The emulated
// device (kernels/device/emulated.h) runs the device kernels on the host, so all of this runs without a
// GPU; CUDA GPUs join when the build has the CUDA backend and the machine has a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <thread>

#include "core/device.h"
#include "device_test_util.h"
#include "dynet/dynet.h"
#include "dynet/expr.h"
#include "dynet/init.h"
#include "dynet/training.h"
#include "exec/fusion.h"
#include "exec/profile.h"
#include "kernels/device/emulated.h"
#include "tagger_model.h"
#include "tree_lstm_model.h"

namespace dynet {
namespace {

using test::Case;
using test::DefaultDevice;
using test::random_values;
using test::gpus;
using test::sample_on;
using test::test_devices;

TEST(Devices, TheManagerListsTheCpuFirstAndNamesUnknownDevices) {
  DeviceManager& m = *get_device_manager();
  ASSERT_GE(m.num_devices(), 1u);
  EXPECT_EQ(m.get(0), cpu_device());
  EXPECT_EQ(cpu_device()->type, DeviceType::CPU);
  EXPECT_EQ(m.get_global_device("CPU"), cpu_device());
  EXPECT_EQ(m.get_global_device("cpu"), cpu_device());
  EXPECT_THROW(m.get(m.num_devices()), std::out_of_range);
  try {
    m.get_global_device("GPU:7");
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("GPU:7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CPU"), std::string::npos) << e.what();
  }
  Device* emu = emulated_device();
  EXPECT_EQ(m.get_global_device("EMU:0"), emu);
  EXPECT_EQ(m.get(emu->index), emu);
}

// Device kernels name their op: each op file's kernels, and the CUDA pass's, register in whatever order the
// static initialisers run, so both orders must reach the op.
Dim first_dim(const ArgDims& xs, AttrView) { return xs[0]; }
void copy_forward(const ForwardArgs& a) { a.fx.v = a.xs[0].v; }
TEST(Devices, KernelsReachTheirOpWhicheverRegistersFirst) {
  const DeviceKernels k{copy_forward, nullptr};
  register_device_kernels("harness_kernels_first", kEmulatedBackend, k);
  const OpDef def{.name = "harness_kernels_first", .shape = first_dim, .forward = copy_forward,
                  .batch = {.why_not = "test op"}, .flags = kAliasOutput};
  const OpId early = register_op(def);
  OpDef late_def = def;
  late_def.name = "harness_kernels_last";
  const OpId late = register_op(late_def);
  register_device_kernels("harness_kernels_last", kEmulatedBackend, k);
  for (OpId op : {early, late}) {
    ASSERT_NE(device_kernels(op, kEmulatedBackend), nullptr) << op_def(op).name;
    EXPECT_EQ(device_kernels(op, kEmulatedBackend)->forward, copy_forward);
    EXPECT_EQ(device_kernels(op, kCudaBackend), nullptr);
  }
  EXPECT_TRUE(detail::unclaimed_device_kernels().empty())
      << "device kernels of an op that never registered: " << detail::unclaimed_device_kernels()[0];
}

DynetParams parse(std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  char** p = argv.data();
  return extract_dynet_params(argc, p);
}

TEST(Devices, GpuFlagsAreParsedAsDyNetDoes) {
  DynetParams p = parse({"--dynet-gpus", "2"});
  EXPECT_TRUE(p.ngpus_requested);
  EXPECT_EQ(p.requested_gpus, 2);
  p = parse({"--dynet-devices", "CPU,GPU:1,GPU:0"});
  EXPECT_TRUE(p.cpu_requested);
  EXPECT_EQ(p.requested_gpus, 2);
  EXPECT_EQ(p.device_list, (std::vector<std::string>{"CPU", "GPU:1", "GPU:0"}));
  ASSERT_EQ(p.gpu_mask.size(), 2u);
  EXPECT_EQ(p.gpu_mask[0], 1);
  EXPECT_EQ(p.gpu_mask[1], 1);
  p = parse({"--dynet_gpu_ids=0,3"});
  EXPECT_TRUE(p.ids_requested);
  EXPECT_EQ(p.requested_gpus, 2);
  ASSERT_EQ(p.gpu_mask.size(), 4u);
  EXPECT_EQ(p.gpu_mask[3], 1);
  EXPECT_THROW(parse({"--dynet-devices", "CPU:1"}), std::invalid_argument);
  EXPECT_THROW(parse({"--dynet-devices", "GPU:0,GPU:0"}), std::invalid_argument);
  EXPECT_THROW(parse({"--dynet-devices", "TPU:0"}), std::invalid_argument);
  EXPECT_THROW(parse({"--dynet-gpus", "-1"}), std::invalid_argument);
  EXPECT_THROW(parse({"--dynet-gpus", "1", "--dynet-devices", "GPU:0"}), std::invalid_argument);
  EXPECT_THROW(parse({"--dynet-gpus", "1", "--dynet-gpu-ids", "0"}), std::invalid_argument);
}

TEST(Devices, AskingForAGpuThatIsNotThereThrowsTheReason) {
  std::string why;
  const int n = gpu_count(&why);
  const std::string name = "GPU:" + std::to_string(n);
  try {
    gpu_device(n);
    ADD_FAILURE() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    if (n == 0) EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
  if (n == 0) {  // initialize() asking for that GPU by name fails the same way and leaves the CPU the default
    DynetParams p;
    p.random_seed = 1;
    p.device_list = {"GPU:0"};
    p.gpu_mask = {1};
    p.requested_gpus = 1;
    EXPECT_THROW(initialize(p), std::runtime_error);
    EXPECT_EQ(default_device, cpu_device());
    // A GPU count fails too where CUDA is built in; without it, the count is ignored as DyNet's CPU builds do.
    DynetParams count;
    count.random_seed = 1;
    count.requested_gpus = 1;
    if (gpu_runtime()) {
      EXPECT_THROW(initialize(count), std::runtime_error);
    } else {
      EXPECT_NO_THROW(initialize(count));
    }
    EXPECT_EQ(default_device, cpu_device());
  }
}

TEST(Devices, NodesRunOnTheirArgumentsDevice) {
  Device* emu = emulated_device();
  ComputationGraph g;
  Expression x = input(g, Dim({3}), std::vector<float>{1, -2, 3});
  Expression xe = to_device(x, emu);
  EXPECT_EQ(x.get_device_name(), "CPU");
  EXPECT_EQ(xe.get_device_name(), "EMU:0");
  Expression y = tanh(xe);
  EXPECT_EQ(y.get_device_name(), "EMU:0");
  EXPECT_EQ(y.value().device, emu);
  const std::vector<float> v = as_vector(y.value());  // read back to the host
  ASSERT_EQ(v.size(), 3u);
  EXPECT_NEAR(v[1], std::tanh(-2.f), 1e-6);
  EXPECT_NEAR(as_scalar(sum_elems(tanh(x)).value()), std::tanh(1.f) + std::tanh(-2.f) + std::tanh(3.f), 1e-5);
  // Arguments on different devices: a clear error, and the graph stays usable.
  try {
    cmult(x, xe);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cmult"), std::string::npos) << m;
    EXPECT_NE(m.find("EMU:0"), std::string::npos) << m;
    EXPECT_NE(m.find("to_device"), std::string::npos) << m;
  }
  EXPECT_EQ(to_device(xe, emu).i, xe.i);  // already there
  Device unknown(9, DeviceType::GPU, "GPU:9");
  EXPECT_THROW(to_device(x, &unknown), std::invalid_argument);
  EXPECT_NEAR(as_scalar(sum_elems(to_device(y, cpu_device())).value()), v[0] + v[1] + v[2], 1e-5);
}

TEST(Devices, ParametersLiveOnTheirDeviceAndTrainThere) {
  Device* emu = emulated_device();
  ParameterCollection pc;
  Parameter w = pc.add_parameters({2, 3}, ParameterInitConst(0.5f), "", emu);
  LookupParameter e = pc.add_lookup_parameters(4, {3}, ParameterInitConst(0.25f), "", emu);
  EXPECT_EQ(w.values()->device, emu);
  EXPECT_EQ(as_vector(*w.values()), std::vector<float>(6, 0.5f));
  w.set_value({1, 2, 3, 4, 5, 6});
  e.initialize(2, {1, 2, 3});
  SimpleSGDTrainer trainer(pc, 0.5f);
  // loss = Σ W + Σ E[2] ⊙ (1, 0, -1): the node values stay on the device, the sums run on the CPU.
  ComputationGraph g;
  Expression x = lookup(g, e, 2u);
  Expression p = parameter(g, w);
  EXPECT_EQ(x.get_device_name(), "EMU:0");
  EXPECT_EQ(p.get_device_name(), "EMU:0");
  Expression loss = sum_elems(to_device(p, cpu_device())) +
                    dot_product(to_device(x, cpu_device()), input(g, Dim({3}), std::vector<float>{1, 0, -1}));
  EXPECT_NEAR(as_scalar(loss.value()), 21 + (1 - 3), 1e-5);
  g.backward(loss);
  trainer.update();
  EXPECT_EQ(as_vector(*w.values()), (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
  EXPECT_EQ(as_vector(e.get_storage().values[2]), (std::vector<float>{0.5f, 2.f, 3.5f}));
  EXPECT_EQ(as_vector(e.get_storage().values[1]), (std::vector<float>{0.25f, 0.25f, 0.25f}));
  Device unknown(9, DeviceType::GPU, "GPU:9");
  EXPECT_THROW(pc.add_parameters({2}, ParameterInitConst(0.f), "", &unknown), std::invalid_argument);
}

// Host-side checks of device kernels that read their results back: a singular matrix is an error naming
// the op and the batch element, on a device as on the CPU, and the graph stays usable.
TEST(Devices, InverseOfASingularMatrixThrowsOnTheDevice) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 2}, 2), std::vector<float>{2, 0, 0, 2, 1, 2, 2, 4}, emulated_device());
  try {
    inverse(x).value();
    ADD_FAILURE() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("inverse"), std::string::npos) << m;
    EXPECT_NE(m.find("singular"), std::string::npos) << m;
    EXPECT_NE(m.find("batch element 1"), std::string::npos) << m;
  }
  Expression ld = logdet(pick_batch_elem(x, 0u));
  EXPECT_NEAR(as_scalar(ld.value()), std::log(4.f), 1e-6);
}

// A rule that runs on the host (DyNet's extension interface), also for parameters on a device (their memory
// is readable there after the trainer synchronises): sparse lookup rows are then updated one by one.
struct HostRuleSGD : Trainer {
  HostRuleSGD(ParameterCollection& m, real lr) : Trainer(m, lr) {}
  void update_rule(real gscale, const std::vector<Tensor*>& values) override {
    Tensor& x = *values[0];
    const Tensor& g = *values[1];
    for (size_t i = 0; i < x.d.size(); ++i) x.v[i] -= learning_rate * gscale * g.v[i];
  }
};

// A few steps of a small model (embedding lookup, LSTM-free MLP, softmax loss) on the CPU and on `dev`, from
// the same initial values: every built-in trainer's device rule, and a rule on the host, must take the CPU's
// steps (two sparse rows of the lookup table per step: on a device, one kernel or the host rule per row).
std::vector<std::vector<float>> train_steps(Device* dev, int trainer, unsigned steps) {
  ParameterCollection pc;
  Parameter W = pc.add_parameters({4, 3}, ParameterInitUniform(0.5f), "", dev);
  Parameter b = pc.add_parameters({4}, ParameterInitConst(0.1f), "", dev);
  LookupParameter E = pc.add_lookup_parameters(5, {3}, ParameterInitUniform(0.5f), "", dev);
  std::mt19937 rng(7);  // the same initial values on every device
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (Parameter p : {W, b}) {
    std::vector<float> v(p.dim().size());
    for (float& x : v) x = u(rng);
    p.set_value(v);
  }
  for (unsigned r = 0; r < 5; ++r) E.initialize(r, {u(rng), u(rng), u(rng)});
  std::unique_ptr<Trainer> t;
  switch (trainer) {
    case 0: t = std::make_unique<SimpleSGDTrainer>(pc, 0.3f); break;
    case 1: t = std::make_unique<MomentumSGDTrainer>(pc, 0.2f, 0.9f); break;
    case 2: t = std::make_unique<AdagradTrainer>(pc, 0.2f); break;
    case 3: t = std::make_unique<AdadeltaTrainer>(pc); break;
    case 4: t = std::make_unique<RMSPropTrainer>(pc, 0.05f); break;
    case 5: t = std::make_unique<AdamTrainer>(pc, 0.05f); break;
    case 6: t = std::make_unique<AmsgradTrainer>(pc, 0.05f); break;
    default: t = std::make_unique<HostRuleSGD>(pc, 0.3f); break;
  }
  t->clip_threshold = 0.5f;  // clipping on: the gradient norm is taken on the device
  for (unsigned step = 0; step < steps; ++step) {
    ComputationGraph g;
    Expression x = lookup(g, E, std::vector<unsigned>{step % 5, 2});
    Expression h = tanh(parameter(g, W) * x + parameter(g, b));
    Expression loss = sum_batches(pickneglogsoftmax(h, std::vector<unsigned>{1, step % 4}));
    as_scalar(to_device(loss, cpu_device()).value());
    g.backward(loss);
    t->update();
    for (Parameter p : {W, b})  // (a device rule clears it in its own kernel)
      EXPECT_EQ(as_vector(p.get_storage().g), std::vector<float>(p.dim().size(), 0.f)) << "the update clears the gradient";
    EXPECT_EQ(as_vector(E.get_storage().all_grads), std::vector<float>(15, 0.f)) << "the update clears the gradient";
    EXPECT_TRUE(E.get_storage().non_zero_grads.empty());
  }
  t->status();  // (counts the clip of an update whose norm is still to be read)
  return {as_vector(*W.values()), as_vector(*b.values()), as_vector(E.get_storage().all_values),
          {float(t->clips), float(t->updates)}};
}

TEST(Devices, TrainersUpdateParametersOnTheDeviceAsOnTheCpu) {
  for (int trainer = 0; trainer < 8; ++trainer) {
    const auto want = train_steps(cpu_device(), trainer, 4);
    for (Device* dev : test_devices()) {
      const auto got = train_steps(dev, trainer, 4);
      for (size_t k = 0; k < want.size(); ++k)
        for (size_t j = 0; j < want[k].size(); ++j)
          EXPECT_NEAR(got[k][j], want[k][j], 1e-5) << "trainer " << trainer << " on " << dev->name << ", tensor " << k;
    }
  }
}

// On a device, an update's gradient check is left to its kernels and read by the next update, so that updates
// wait for nothing; a NaN or Inf gradient then changes nothing, and the next update refuses (as the CPU's
// update refuses at once): it names the update, changes nothing either, and clears the gradients.
TEST(Devices, ANonFiniteGradientOnADeviceIsRefusedByTheNextUpdate) {
  for (Device* dev : test_devices()) {
    SCOPED_TRACE(dev->name);
    DefaultDevice on(dev);
    ParameterCollection pc;
    Parameter W = pc.add_parameters({3}, ParameterInitConst(1.f), "W", dev);
    AdamTrainer adam(pc, 0.1f);
    auto step = [&](std::vector<float> x) {
      ComputationGraph g;
      g.backward(sum_elems(cmult(parameter(g, W), input(g, {3}, x))));
      adam.update();
    };
    auto values = [&] { return as_vector(*W.values()); };
    step({1.f, 1.f, 1.f});  // finds that Adam runs on the device
    step({1.f, 1.f, 1.f});
    const std::vector<float> before = values();
    const DeviceCounters counted = dev->counters();
    step({1.f, std::numeric_limits<float>::quiet_NaN(), 1.f});  // no wait: the norm is read later
    EXPECT_EQ((dev->counters() - counted).syncs, 0u);
    EXPECT_EQ(values(), before) << "the kernels saw the NaN and changed nothing";
    EXPECT_EQ(adam.updates, 3);
    try {
      step({1.f, 1.f, 1.f});
      ADD_FAILURE() << "the update after a NaN gradient did not throw";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("Magnitude of gradient is bad"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(dev->name), std::string::npos) << e.what();
    }
    EXPECT_EQ(values(), before);
    EXPECT_EQ(adam.updates, 2) << "the refused update is not counted";
    EXPECT_FALSE(W.get_storage().nonzero_grad);
    EXPECT_EQ(as_vector(*W.gradients()), std::vector<float>(3, 0.f));
    // Training goes on as if the two refused updates had not been: as a CPU trainer that refused one.
    step({1.f, 1.f, 1.f});
    ParameterCollection cpc;
    Parameter C = cpc.add_parameters({3}, ParameterInitConst(1.f), "C", cpu_device());
    AdamTrainer cpu_adam(cpc, 0.1f);
    for (int k = 0; k < 3; ++k) {
      ComputationGraph g;
      g.backward(sum_elems(cmult(parameter(g, C), input(g, {3}, {1.f, 1.f, 1.f}, cpu_device()))));
      cpu_adam.update();
    }
    const std::vector<float> got = values(), want = as_vector(*C.values());
    for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(got[k], want[k], 1e-6);
    EXPECT_EQ(adam.updates, 3);
  }
}

TEST(Devices, AnOpWithoutKernelsForTheDeviceSaysSo) {
  std::vector<std::string> missing;
  for (size_t i = 0; i < op_registry().size(); ++i)
    if (op_registry()[i].name && !op_supports(static_cast<OpId>(i), *emulated_device()))
      missing.push_back(op_registry()[i].name);
  if (missing.empty()) GTEST_SKIP() << "every op runs on the emulated device";
  const OpId op = op_id(missing[0]);
  const OpDef& def = op_def(op);
  ComputationGraph g;
  DefaultDevice on(emulated_device());
  auto samples = def.samples();
  for (const OpSample& s : samples) {
    if (s.bad) continue;
    std::vector<Expression> xs;
    for (const Dim& d : s.inputs) xs.push_back(input(g, d, std::vector<float>(d.size(), 0.5f)));
    try {
      s.build(g, xs);
      // Samples of leaves without arguments or parameters may still land on the CPU.
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("EMU:0"), std::string::npos) << e.what();
      return;
    }
  }
}

// ---- the device harness ----


// What one run of a sample gives: the value and the gradients of the inputs and parameters.
struct Run {
  std::vector<float> value;
  std::vector<std::vector<float>> grads;
};

// Runs sample `s` with inputs and its parameters on `dev`: y = op(inputs), loss = Σ y ⊙ r on the CPU
// (to_device brings y over), gradients read back to the host.
Run run_on(Device* dev, OpId op, const OpSample& s, const std::vector<std::vector<float>>& inputs,
           const std::vector<float>& r) {
  DefaultDevice on(dev);
  ComputationGraph g;
  std::vector<Expression> xs;
  for (size_t k = 0; k < inputs.size(); ++k) xs.push_back(input(g, s.inputs[k], inputs[k], dev));
  Expression y = s.build(g, xs);
  bool on_dev = false;  // the op under test ran on the device, not only the sample's inputs
  for (VariableIndex i = 0; i <= y.i; ++i) on_dev |= g.node(i).op == op && g.node(i).device == dev->index;
  if (!(op_def(op).flags & kToDevice)) EXPECT_TRUE(on_dev) << op_def(op).name << " did not run on " << dev->name;
  Expression yc = to_device(y, cpu_device());
  Expression loss = make_node_n(op_id("harness_loss"), {yc, input(g, y.dim(), r, cpu_device())});
  if (s.params) s.params->reset_gradient();
  Run run;
  reset_rng(1234);  // random ops take their keys from the thread's engine: the same seed, the same values
  run.value = as_vector(y.value());
  g.backward(loss, true);
  for (size_t k = 0; k < xs.size(); ++k) run.grads.push_back(as_vector(xs[k].gradient()));
  if (s.params) {
    for (auto& p : s.params->parameters_list()) run.grads.push_back(p->nonzero_grad ? as_vector(p->g) : std::vector<float>(p->dim.size()));
    for (auto& p : s.params->lookup_parameters_list())
      run.grads.push_back(p->nonzero_grad ? as_vector(p->all_grads) : std::vector<float>(p->all_dim.size()));
  }
  return run;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k)
    EXPECT_NEAR(got[k], want[k], 1e-5 + 1e-4 * std::fabs(want[k])) << what << " [" << k << "]";
}

void check_on_devices(const Case& c) {
  const OpDef& def = op_def(c.op);
  const OpSample& s = c.sample;
  std::mt19937 rng(1234);
  std::vector<std::vector<float>> inputs;
  for (const Dim& d : s.inputs) inputs.push_back(random_values(d, s.lo, s.hi, rng));
  std::vector<float> r;
  Run cpu;
  {
    DefaultDevice on(cpu_device());
    ComputationGraph g;
    std::vector<Expression> xs;
    for (size_t k = 0; k < inputs.size(); ++k) xs.push_back(input(g, s.inputs[k], inputs[k]));
    r = random_values(s.build(g, xs).dim(), -1, 1, rng);
  }
  cpu = run_on(cpu_device(), c.op, s, inputs, r);
  unsigned compared = 0;
  std::string missing;
  for (Device* dev : test_devices()) {
    if (!op_supports(c.op, *dev)) continue;
    const OpSample ds = sample_on(dev, c.op, s);
    Run d;
    try {
      d = run_on(dev, c.op, ds, inputs, r);
    } catch (const std::invalid_argument& e) {  // the sample also uses an op that is not on devices yet
      if (std::string(e.what()).find("has no kernels for") == std::string::npos) throw;
      missing = e.what();
      continue;
    }
    expect_close(d.value, cpu.value, std::string(def.name) + " value on " + dev->name);
    // Random ops run the CPU's generator (kernels/device/philox.h), so their values must be the same bits on
    // every device, except normal and Gumbel values on a GPU: its logf/sqrtf/cosf round apart from the
    // host's in the last place (seen on an H100). The LSTM gates node's products may round apart;
    // tests/test_random.cc compares its noise within 1e-6.
    const std::string name = def.name;
    const bool transcendental = name == "random_normal" || name == "noise" || name == "random_gumbel";
    if ((def.flags & kRandom) && name != "vanilla_lstm_gates" && (dev->backend == kEmulatedBackend || !transcendental))
      EXPECT_EQ(d.value, cpu.value) << def.name << ": random values on " << dev->name << " differ from the CPU's";
    if (!(def.flags & kNoGradient))
      for (size_t k = 0; k < cpu.grads.size(); ++k)
        expect_close(d.grads[k], cpu.grads[k], std::string(def.name) + " gradient " + std::to_string(k) + " on " + dev->name);
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << def.name << (missing.empty() ? " has no device kernels yet" : ": " + missing);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const auto& reg = op_registry();
  for (size_t i = 0; i < reg.size(); ++i) {
    if (!reg[i].name || std::string(reg[i].name).rfind("harness_", 0) == 0) continue;
    std::vector<OpSample> samples = reg[i].samples ? reg[i].samples() : std::vector<OpSample>{};
    for (OpSample& s : samples)
      if (!s.bad) cases.push_back({static_cast<OpId>(i), std::move(s)});
  }
  return cases;
}

class DeviceHarness : public ::testing::TestWithParam<Case> {};
TEST_P(DeviceHarness, SameAsCpu) { check_on_devices(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Registry, DeviceHarness, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = std::string(op_def(info.param.op).name) + "_" + info.param.sample.name;
                           for (char& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// Every op runs on every device unless its registry entry says why it runs on the CPU only (OpDef::cpu_only),
// which a handful of ops at most may do: an op added without device kernels gets them or a waiver.
TEST(DeviceHarness, OpsWithoutDeviceKernelsAreWaivedInTheRegistry) {
  std::string waived;
  unsigned with = 0, n_waived = 0;
  for (size_t i = 0; i < op_registry().size(); ++i) {
    const OpDef& d = op_registry()[i];
    if (!d.name || std::string(d.name).rfind("harness_", 0) == 0) continue;
    const bool has = device_kernels(static_cast<OpId>(i), kEmulatedBackend) != nullptr;
    with += has;
    if (d.cpu_only) {
      ++n_waived;
      waived += std::string(waived.empty() ? "" : "; ") + d.name + ": " + d.cpu_only;
      EXPECT_FALSE(has) << d.name << " has device kernels, but its registry entry says it runs on the CPU only";
      EXPECT_GE(std::string(d.cpu_only).size(), 10u) << d.name << ": a waiver gives its reason";
    } else {
      EXPECT_TRUE(has) << d.name << " has no device kernels and no waiver saying why (OpDef::cpu_only)";
    }
  }
  EXPECT_LE(n_waived, 5u) << "more than a handful of ops run on the CPU only: " << waived;
  std::cout << "[ devices  ] " << with << " ops have device kernels; " << n_waived << " run on the CPU only ("
            << waived << ")\n";
}

// y = 2x, a user Node: user nodes are the waived op, so they stay on the CPU.
struct Twice : Node {
  explicit Twice(const std::initializer_list<VariableIndex>& a) : Node(a) {}
  Dim dim_forward(const std::vector<Dim>& xs) const override { return xs[0]; }
  std::string as_string(const std::vector<std::string>& a) const override { return "2 * " + a[0]; }
  void forward_impl(const std::vector<const Tensor*>& xs, Tensor& fx) const override {
    for (unsigned k = 0; k < fx.d.size(); ++k) fx.v[k] = 2 * xs[0]->v[k];
  }
  void backward_impl(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dEdf, unsigned,
                     Tensor& dEdxi) const override {
    for (unsigned k = 0; k < dEdxi.d.size(); ++k) dEdxi.v[k] += 2 * dEdf.v[k];
  }
};

TEST(Devices, ACpuOnlyOpSaysWhyOnAnotherDevice) {
  ComputationGraph g;
  Expression x = input(g, Dim({2}), std::vector<float>{1, 2}, emulated_device());
  try {
    g.add_function<Twice>({x.i});
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("user_node"), std::string::npos) << m;
    EXPECT_NE(m.find("CPU only"), std::string::npos) << m;
    EXPECT_NE(m.find("EMU:0"), std::string::npos) << m;
  }
  // On the CPU it runs, and the graph is still usable.
  Expression y(&g, g.add_function<Twice>({to_device(x, cpu_device()).i}));
  EXPECT_EQ(as_vector(y.value()), (std::vector<float>{2, 4}));
}

// In CUDA builds the CUDA pass must register kernels for exactly the ops the host pass does: this holds
// without a GPU, so it is checked wherever the CUDA variant is built.
TEST(DeviceHarness, CudaKernelsMatchTheEmulatedOnes) {
  if (!gpu_runtime()) GTEST_SKIP() << "built without the CUDA backend (-DDYNET_CUDA=ON)";
  for (size_t i = 0; i < op_registry().size(); ++i) {
    if (std::string(op_registry()[i].name).rfind("harness_", 0) == 0) continue;  // the tests' own ops
    const OpId op = static_cast<OpId>(i);
    EXPECT_EQ(device_kernels(op, kCudaBackend) != nullptr, device_kernels(op, kEmulatedBackend) != nullptr)
        << op_registry()[i].name;
  }
  // and the fused regions' kernels (exec/fused_kernels.cc), which are not an op's
  EXPECT_NE(fusion::device_fusion(kCudaBackend), nullptr);
  EXPECT_NE(fusion::device_fusion(kEmulatedBackend), nullptr);
}

// Checks that depend on values or on indices read at forward time (bounds, norms, pointer forms) run for
// device nodes too: the CPU's error, naming the op and the value, and the next graph works.
void expect_forward_error(Device* dev, const std::string& want,
                          const std::function<Expression(ComputationGraph&, Device*)>& build) {
  {
    ComputationGraph g;
    try {
      build(g, dev).value();
      ADD_FAILURE() << "expected an error containing '" << want << "' on " << dev->name;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what() << " on " << dev->name;
    }
  }
  ComputationGraph g;
  Expression x = input(g, Dim({2}), std::vector<float>{1.f, -2.f}, dev);
  EXPECT_FLOAT_EQ(as_scalar(l2_norm(x).value()), std::sqrt(5.f)) << dev->name;
}

TEST(Devices, ForwardTimeChecksThrowAsOnTheCpu) {
  static unsigned index;
  static std::vector<unsigned> support;
  for (Device* dev : test_devices()) {
    DefaultDevice on(dev);
    expect_forward_error(dev, "(batch element 0) has norm 0", [](ComputationGraph& g, Device* d) {
      return weight_norm(input(g, Dim({3}), std::vector<float>(3, 0.f), d), input(g, Dim({1}), {2.f}, d));
    });
    expect_forward_error(dev, "constrained_softmax: upper bound u[1] = -0.5", [](ComputationGraph& g, Device* d) {
      return constrained_softmax(input(g, Dim({3}), {1.f, 2.f, 3.f}, d), input(g, Dim({3}), {1.f, -0.5f, 1.f}, d));
    });
    expect_forward_error(dev, "(batch element 1)", [](ComputationGraph& g, Device* d) {
      return constrained_softmax(input(g, Dim({2}), {1.f, 2.f}, d),
                                 input(g, Dim({2}, 2), {0.5f, 0.5f, 0.4f, -0.4f}, d));
    });
    expect_forward_error(dev, "hinge: index 7 out of range", [](ComputationGraph& g, Device* d) {
      index = 1;
      Expression e = hinge(input(g, Dim({3}), {1.f, 2.f, 3.f}, d), &index);
      index = 7;  // read at forward time
      return e;
    });
    expect_forward_error(dev, "sparsemax_loss: target support index 4", [](ComputationGraph& g, Device* d) {
      support = {0};
      Expression e = sparsemax_loss(input(g, Dim({3}), {1.f, 2.f, 3.f}, d), &support);
      support = {1, 4};
      return e;
    });
  }
}

// A weight used by many products on a device gets its gradient from one gather and one product per slab of
// columns (LowRankSink, as on the CPU), not a product each: here 200 products of one column, slabs of 128.
TEST(Devices, AWeightUsedByManyProductsGetsOneGradientProductPerSlab) {
  const unsigned m = 1 << 14, count = 200;  // slab: 2^21 / m = 128 columns
  for (Device* dev : test_devices()) {
    DefaultDevice on(dev);
    ParameterCollection pc;
    Parameter W = pc.add_parameters({m, 2}, ParameterInitConst(0.01f), "", dev);
    ComputationGraph g;
    g.set_execution_strategy(0);  // one node at a time: 200 updates of one column each
    std::vector<Expression> outs;
    std::vector<float> want(2, 0.f);
    const Expression w = parameter(g, W);
    for (unsigned t = 0; t < count; ++t) {
      const std::vector<float> x = {float(t % 7) - 3.f, 0.5f * float(t % 3)};
      want[0] += x[0], want[1] += x[1];
      outs.push_back(sum_elems(w * input(g, {2}, x)));
    }
    Expression loss = sum(outs);
    as_scalar(loss.value());
    const DeviceCounters before = dev->counters();
    g.backward(loss);
    // Per product the sum's gradient; for W two gathers and two products (not 200 products).
    EXPECT_LE((dev->counters() - before).launches, count + 10) << dev->name;
    const std::vector<float> dW = as_vector(W.get_storage().g);  // column-major {m, 2}: every row of column j is want[j]
    for (unsigned j = 0; j < 2; ++j)
      for (unsigned r = 0; r < m; r += 1021) ASSERT_FLOAT_EQ(dW[j * m + r], want[j]) << dev->name << " row " << r;
  }
}

// The autobatching executor's copies on devices: segments gathered from anywhere, and added back to
// targets that may repeat.
TEST(Devices, SegmentGathersAndScatters) {
  for (Device* dev : test_devices()) {
    float* src = static_cast<float*>(dev->allocate(8 * sizeof(float)));
    float* dst = static_cast<float*>(dev->allocate(6 * sizeof(float)));
    const std::vector<float> values = {0, 1, 2, 3, 4, 5, 6, 7};
    dev->copy_from_host(src, values.data(), values.size() * sizeof(float));
    const float* from[] = {src + 4, src, src + 4};
    dev->gather_segments(dst, from, 3, 2);
    std::vector<float> got(6);
    dev->copy_to_host(got.data(), dst, got.size() * sizeof(float));
    EXPECT_EQ(got, (std::vector<float>{4, 5, 0, 1, 4, 5})) << dev->name;
    float* to[] = {src, src + 6, src};
    dev->scatter_add_segments(to, dst, 3, 2);  // src[0..1] += (4, 5) + (4, 5); src[6..7] += (0, 1)
    got.resize(8);
    dev->copy_to_host(got.data(), src, got.size() * sizeof(float));
    EXPECT_EQ(got, (std::vector<float>{8, 11, 2, 3, 4, 5, 6, 8})) << dev->name;
    // Several lists (a batch's arguments), of different sizes, in one launch each way: dst[0..4) gathers two
    // segments of 2, dst[4..6) one of 1 (twice), and the scatter adds them back.
    float* blocks[] = {dst, dst + 4};
    const size_t ns[] = {2, 1}, counts[] = {2, 2};
    float* ptrs[] = {src + 6, src, src + 3, src + 3};  // the first list's, then the second's
    const Device::SegmentLists lists{blocks, ns, counts, 2, ptrs};
    const DeviceCounters before = dev->counters();
    dev->gather_lists(lists);
    got.resize(6);
    dev->copy_to_host(got.data(), dst, got.size() * sizeof(float));
    EXPECT_EQ(got, (std::vector<float>{6, 8, 8, 11, 3, 3})) << dev->name;
    dev->scatter_add_lists(lists);  // src[6..7] += (6, 8); src[0..1] += (8, 11); src[3] += 3 + 3
    got.resize(8);
    dev->copy_to_host(got.data(), src, got.size() * sizeof(float));
    EXPECT_EQ(got, (std::vector<float>{16, 22, 2, 9, 4, 5, 12, 16})) << dev->name;
    if (dev->backend) EXPECT_EQ((dev->counters() - before).launches, 2u) << dev->name;
    dev->deallocate(dst);
    dev->deallocate(src);
  }
}

}  // namespace

// (In namespace dynet, where GoogleTest's printing finds it.)
std::ostream& operator<<(std::ostream& os, const DeviceCounters& c) {
  return os << c.launches << " launches, " << c.syncs << " syncs, " << c.uploads << " uploads (" << c.upload_bytes
            << " bytes), " << c.downloads << " downloads (" << c.download_bytes << " bytes), " << c.wait_ns
            << " ns waiting";
}

namespace {

// Tests of the counts with host data staged (the default): they skip when DYNET_GPU_STAGING=copy.
#define SKIP_WHEN_COPYING() \
  if (!detail::stage_in_place()) GTEST_SKIP() << "DYNET_GPU_STAGING=copy: these counts are the default's"

// Each Device call counts what it queues on a GPU: the emulated device as the CUDA one; the CPU nothing.
TEST(DeviceCounters, EachCallCountsWhatItQueues) {
  SKIP_WHEN_COPYING();
  for (Device* dev : test_devices()) {
    float* p = static_cast<float*>(dev->allocate(8 * sizeof(float)));
    const std::vector<float> values(8, 1.f);
    std::vector<float> back(8);
    const float* from[] = {p, p + 4};
    const std::vector<const float*> many(300, p + 1);  // more than the kernel's parameters hold
    float* q = static_cast<float*>(dev->allocate(many.size() * sizeof(float)));
    const DeviceCounters before = dev->counters();
    dev->copy_from_host(p, values.data(), 32);                              // an upload
    dev->gather_segments(p, from, 2, 2);                                    // a kernel (its pointers in it)
    dev->gather_segments(q, many.data(), many.size(), 1);                   // the pointers staged, a kernel
    dev->scale(p, 8, 2.f);                                                  // a kernel
    EXPECT_DOUBLE_EQ(dev->squared_norm(p, 8), 32.);                        // zeroing, a kernel, a download
    dev->copy_to_host(back.data(), p, 32);                                  // a download
    dev->synchronize();
    dev->copy_from_host(p, values.data(), 0);                               // nothing
    DeviceCounters got = dev->counters() - before;
    EXPECT_EQ(got.wait_ns > 0, dev->backend == kCudaBackend) << dev->name << ": only a GPU's waits take time";
    got.wait_ns = 0;
    // (A list of segments is its pointers, 4 words per list and the total: read where they lie, not uploaded.)
    EXPECT_EQ(got, (DeviceCounters{5, 3, 1, 32 + (many.size() + 5) * sizeof(float*), 2, 32 + sizeof(double)})) << dev->name;
    std::vector<float> gathered(many.size());
    dev->copy_to_host(gathered.data(), q, gathered.size() * sizeof(float));
    EXPECT_EQ(gathered, std::vector<float>(many.size(), 1.f)) << dev->name;
    dev->deallocate(p);
    const uint64_t syncs = dev->counters().syncs;
    dev->deallocate(q);  // freeing waits for the queued work
    EXPECT_EQ(dev->counters().syncs, syncs + 1) << dev->name;
  }
  Device* cpu = cpu_device();
  const DeviceCounters before = cpu->counters();
  std::vector<float> x(4, 1.f);
  cpu->scale(x.data(), 4, 2.f);
  cpu->synchronize();
  EXPECT_EQ(cpu->counters() - before, DeviceCounters{});
}

// Device::stage: host data kernels read where it lies (a GPU's mapped pinned memory), counted in upload_bytes
// but queuing no upload; larger data and the CPU are declined (the caller copies). What a thread staged
// stays as it was while it stages up to kStageBytes more.
TEST(DeviceCounters, StagedDataIsReadInPlace) {
  SKIP_WHEN_COPYING();
  EXPECT_EQ(cpu_device()->stage("x", 1), nullptr);
  for (Device* dev : test_devices()) {
    std::vector<unsigned> first(100), other(Device::kStageBytes / sizeof(unsigned));
    for (size_t k = 0; k < first.size(); ++k) first[k] = unsigned(7 * k + 1);
    const DeviceCounters before = dev->counters();
    const void* at = dev->stage(first.data(), first.size() * sizeof(unsigned));
    ASSERT_NE(at, nullptr) << dev->name;
    const DeviceCounters got = dev->counters() - before;
    EXPECT_EQ(got, (DeviceCounters{0, 0, 0, first.size() * sizeof(unsigned), 0, 0, 0})) << dev->name;
    first.assign(first.size(), 0);  // the caller's buffer is free again
    ASSERT_NE(dev->stage(other.data(), other.size() * sizeof(unsigned)), nullptr) << dev->name;
    EXPECT_EQ(dev->stage(other.data(), other.size() * sizeof(unsigned) + 1), nullptr) << dev->name;
    // Read by a kernel: the staged rows of a table, gathered.
    float* table = static_cast<float*>(dev->allocate(1000 * sizeof(float)));
    std::vector<float> host(1000);
    for (size_t k = 0; k < host.size(); ++k) host[k] = float(k);
    dev->copy_from_host(table, host.data(), host.size() * sizeof(float));
    float* rows = static_cast<float*>(dev->allocate(100 * sizeof(float)));
    std::vector<unsigned> ids(100);
    for (size_t k = 0; k < ids.size(); ++k) ids[k] = unsigned(7 * k + 1);
    dev->gather_rows(rows, table, ids.data(), ids.size(), 1, false);
    std::vector<float> back(100);
    dev->copy_to_host(back.data(), rows, back.size() * sizeof(float));
    for (size_t k = 0; k < back.size(); ++k) EXPECT_EQ(back[k], float(7 * k + 1)) << dev->name << " row " << k;
    dev->deallocate(table);
    dev->deallocate(rows);
  }
}

// Several threads stage and queue kernels on one device at once, each more than its ring holds (on a GPU,
// 16 chunks of 256 KB a thread) before it waits: every kernel reads the lists its own thread staged.
TEST(DeviceCounters, StagedListsFromSeveralThreads) {
  for (Device* dev : test_devices()) {
    constexpr size_t kThreads = 4, kSteps = 2000, kCount = 300;  // a list of 300 segments: 2,440 bytes, staged
    std::vector<std::thread> threads;
    std::vector<size_t> wrong(kThreads, 0);
    for (size_t t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        float* src = static_cast<float*>(dev->allocate(kCount * sizeof(float)));
        float* dst = static_cast<float*>(dev->allocate(kSteps * kCount * sizeof(float)));
        std::vector<float> host(kCount);
        for (size_t k = 0; k < kCount; ++k) host[k] = float(t * 1000 + k);
        dev->copy_from_host(src, host.data(), host.size() * sizeof(float));
        std::vector<const float*> from(kCount);
        for (size_t step = 0; step < kSteps; ++step) {
          for (size_t k = 0; k < kCount; ++k) from[k] = src + (k + step) % kCount;  // a rotation a step
          dev->gather_segments(dst + step * kCount, from.data(), kCount, 1);
        }
        std::vector<float> back(kSteps * kCount);
        dev->copy_to_host(back.data(), dst, back.size() * sizeof(float));
        for (size_t step = 0; step < kSteps; ++step)
          for (size_t k = 0; k < kCount; ++k) wrong[t] += back[step * kCount + k] != float(t * 1000 + (k + step) % kCount);
        dev->deallocate(src);
        dev->deallocate(dst);
      });
    for (std::thread& th : threads) th.join();
    for (size_t t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0u) << dev->name << " thread " << t;
  }
}

// The trainer's gradient norm: every parameter's gradient in one kernel, into a double on the device.
TEST(DeviceCounters, SquaredNormsOfManySegmentsAreOneLaunch) {
  SKIP_WHEN_COPYING();
  for (Device* dev : test_devices()) {
    std::vector<float> host(9);
    for (size_t k = 0; k < host.size(); ++k) host[k] = float(k) - 4.f;
    float* x = static_cast<float*>(dev->allocate(host.size() * sizeof(float)));
    double* sum = static_cast<double*>(dev->allocate(sizeof(double)));
    dev->copy_from_host(x, host.data(), host.size() * sizeof(float));
    const double start = 0.5;
    dev->copy_from_host(sum, &start, sizeof(double));
    const float* xs[] = {x, x + 3, x + 3, x + 9};
    const size_t ns[] = {3, 0, 6, 0};
    const DeviceCounters before = dev->counters();
    dev->add_squared_norms(xs, ns, 4, sum);
    dev->add_squared_norms(xs + 1, ns + 1, 1, sum);  // nothing to add: no launch
    const DeviceCounters got = dev->counters() - before;
    EXPECT_EQ(got.launches, 1u) << dev->name;
    EXPECT_EQ(got.uploads, 0u) << dev->name << ": a short list goes in the kernel's parameters";
    double back = 0;
    dev->copy_to_host(&back, sum, sizeof(double));
    EXPECT_DOUBLE_EQ(back, 0.5 + 16 + 9 + 4 + 1 + 0 + 1 + 4 + 9 + 16) << dev->name;
    const std::vector<const float*> many(300, x);  // over detail::kListBytesByValue: staged
    const std::vector<size_t> ones(many.size(), 1);
    const DeviceCounters before_many = dev->counters();
    dev->add_squared_norms(many.data(), ones.data(), many.size(), sum);
    const DeviceCounters got_many = dev->counters() - before_many;
    EXPECT_EQ(got_many.uploads, 0u) << dev->name;
    EXPECT_EQ(got_many.upload_bytes, (2 * many.size() + 1) * sizeof(uintptr_t)) << dev->name;
    dev->copy_to_host(&back, sum, sizeof(double));
    EXPECT_DOUBLE_EQ(back, 0.5 + 16 + 9 + 4 + 1 + 0 + 1 + 4 + 9 + 16 + 300 * 16) << dev->name;
    dev->deallocate(x);
    dev->deallocate(sum);
  }
}

// The executors' push of parameter gradients: any number of (repeating) destinations, one launch.
// A trainer's update queues as much work for 12 parameters as for 2 (one update kernel for all of them), and
// uploads their list once, not at every update.
TEST(DeviceCounters, AnUpdateIsOneKernelForAllTheParameters) {
  auto update_counts = [](unsigned count) {
    Device* emu = emulated_device();
    DefaultDevice on(emu);
    ParameterCollection pc;
    std::vector<Parameter> ps;
    for (unsigned k = 0; k < count; ++k) ps.push_back(pc.add_parameters({3, 2}, ParameterInitConst(0.5f), "", emu));
    AdamTrainer adam(pc);
    DeviceCounters update;
    for (int step = 0; step < 3; ++step) {
      ComputationGraph g;
      std::vector<Expression> terms;
      for (Parameter p : ps) terms.push_back(sum_elems(parameter(g, p)));
      Expression loss = sum(terms);
      as_scalar(loss.value());  // (the wait that brings the last update's gradient norm)
      g.backward(loss);
      const DeviceCounters before = emu->counters();
      adam.update();
      update = emu->counters() - before;
    }
    for (Parameter p : ps) EXPECT_NEAR(as_vector(*p.values())[0], 0.5f - 3 * 0.001f, 1e-5);  // Adam: lr a step
    return update;
  };
  const DeviceCounters two = update_counts(2), twelve = update_counts(12);
  EXPECT_EQ(twelve.launches, two.launches);
  EXPECT_EQ(twelve.uploads, two.uploads);
  EXPECT_EQ(twelve.syncs, 0u);
}

TEST(DeviceCounters, AddingManySegmentsIsOneLaunch) {
  SKIP_WHEN_COPYING();
  for (Device* dev : test_devices()) {
    const std::vector<float> host = {1, 2, 3, 4, 5, 6, 7, 8};
    float* x = static_cast<float*>(dev->allocate(host.size() * sizeof(float)));
    dev->copy_from_host(x, host.data(), host.size() * sizeof(float));
    // The lists in the kernel's parameters, staged (a list of 40 bytes per segment and 8 more), then uploaded.
    for (size_t count : {3, 100, 2000}) {
      std::vector<float*> dsts(count, x + 6);  // all but the first two into x[6..8)
      std::vector<const float*> srcs(count, x + 4);
      std::vector<size_t> ns(count, 2);
      dsts[0] = x, srcs[0] = x + 2, dsts[1] = x, srcs[1] = x + 4;
      const DeviceCounters before = dev->counters();
      dev->add_segments(dsts.data(), srcs.data(), ns.data(), count);
      const DeviceCounters got = dev->counters() - before;
      EXPECT_EQ(got.launches, 1u) << dev->name;
      EXPECT_EQ(got.uploads, count == 2000 ? 1u : 0u) << dev->name;
      EXPECT_EQ(got.upload_bytes, count == 3 ? 0u : 40 * count + 8) << dev->name;
      std::vector<float> back(host.size());
      dev->copy_to_host(back.data(), x, back.size() * sizeof(float));
      EXPECT_EQ(back[0], 1 + 3 + 5) << dev->name;
      EXPECT_EQ(back[1], 2 + 4 + 6) << dev->name;
      EXPECT_EQ(back[7], 8 + 6 * float(count - 2)) << dev->name;
      dev->copy_from_host(x, host.data(), host.size() * sizeof(float));
    }
    dev->deallocate(x);
  }
}

// What one training step of an autobatched model queues on a device (the third: the first allocates the
// trainer's state and finds that its rules run on the device, the second leaves its gradient check to the
// device, which the third collects). The budgets below pin today's counts so that they only go down (the GPU
// executor's target is <= 1,000 launches and <= 1 sync a step); a GPU queues the same work as the emulated
// device.
using ModelOn = std::function<std::function<Expression(ComputationGraph&)>(ParameterCollection&, Device*)>;
DeviceCounters training_step(Device* dev, const ModelOn& make) {
  DefaultDevice on(dev);  // where builders put their initial states
  ParameterCollection pc;
  const auto model = make(pc, dev);
  SimpleSGDTrainer trainer(pc);
  DeviceCounters step;
  for (int k = 0; k < 3; ++k) {
    const DeviceCounters before = dev->counters();
    ComputationGraph g;
    g.set_execution_strategy(1);
    Expression loss = model(g);
    EXPECT_TRUE(std::isfinite(as_scalar(loss.value())));
    g.backward(loss);
    trainer.update();
    step = dev->counters() - before;
  }
  return step;
}

void expect_within_budget(const char* what, const ModelOn& make, uint64_t launches, uint64_t syncs, uint64_t uploads) {
  const DeviceCounters emu = training_step(emulated_device(), make);
  ::testing::Test::RecordProperty("counters", ::testing::PrintToString(emu));
  std::cout << what << " on EMU:0: " << emu << "\n";
  EXPECT_LE(emu.launches, launches);
  EXPECT_LE(emu.syncs, syncs);  // the loss read (the gradient norm comes with it)
  if (detail::stage_in_place()) EXPECT_LE(emu.uploads, uploads);  // (DYNET_GPU_STAGING=copy uploads what is staged)
  for (Device* g : gpus()) {  // the same work; only the GPU's waits take time
    DeviceCounters gpu = training_step(g, make);
    gpu.wait_ns = 0;
    EXPECT_EQ(gpu, emu) << g->name;
  }
}

// 64 trees per graph, as bench/ trains them.
TEST(DeviceCounters, TreeLstmStepWithinItsLaunchBudget) {
  expect_within_budget("Tree-LSTM step of 64 trees", [](ParameterCollection& pc, Device* dev) {
    return test::tree_lstm(pc, 16, 64, dev);
  }, 91, 1, 1);
}

// 64 sentences per graph.
TEST(DeviceCounters, TaggerStepWithinItsLaunchBudget) {
  expect_within_budget("BiLSTM tagger step of 64 sentences", [](ParameterCollection& pc, Device*) {
    auto tagger = std::make_shared<test::Tagger>(pc);
    return [tagger, data = test::sentences(64, test::Tagger::kWords, 1)](ComputationGraph& g) {
      return tagger->loss(g, data);
    };
  }, 165, 1, 2);
}

// A batch of sums (an example's loss summed over its words, 8 examples) differentiates in one launch
// whatever the number of terms: a step with 30 terms per sum queues what a step with 3 does.
TEST(DeviceCounters, ABatchOfSumsDifferentiatesInOneLaunch) {
  auto launches = [](unsigned terms) {
    return training_step(emulated_device(), [terms](ParameterCollection& pc, Device* dev) {
      LookupParameter table = pc.add_lookup_parameters(8 * terms, {4}, "", dev);
      return [table, terms](ComputationGraph& g) {
        std::vector<Expression> losses;
        for (unsigned m = 0; m < 8; ++m) {
          std::vector<Expression> words;
          for (unsigned k = 0; k < terms; ++k) words.push_back(lookup(g, table, m * terms + k));
          losses.push_back(squared_norm(sum(words)));
        }
        return sum(losses);
      };
    }).launches;
  };
  EXPECT_EQ(launches(30), launches(3));
}

// Concatenations batch by pointer on devices too (a parser's features: pieces from all over memory), in one launch
// each way: a step of 16 concatenations of 9 pieces queues what one of 4 of 3 does.
TEST(DeviceCounters, ConcatenationsBatchByPointerInOneLaunch) {
  auto launches = [](unsigned members, unsigned pieces) {
    return training_step(emulated_device(), [=](ParameterCollection& pc, Device* dev) {
      LookupParameter table = pc.add_lookup_parameters(members * pieces, {64}, "", dev);
      return [=](ComputationGraph& g) {
        std::vector<Expression> losses;
        for (unsigned m = 0; m < members; ++m) {
          std::vector<Expression> pieces_of_m;
          for (unsigned k = 0; k < pieces; ++k) pieces_of_m.push_back(tanh(lookup(g, table, (k * 7 + m * 3) % (members * pieces))));
          losses.push_back(squared_norm(concatenate(pieces_of_m)));
        }
        return sum(losses);
      };
    }).launches;
  };
  EXPECT_EQ(launches(16, 9), launches(4, 3));
}

// --dynet-profiling's table (profile::timing_table) ends with each device's counts since profile::reset().
TEST(DeviceCounters, TheTimingTableReportsThemSinceTheLastReset) {
  Device* emu = emulated_device();
  float* p = static_cast<float*>(emu->allocate(4 * sizeof(float)));
  emu->fill(p, 4, 1.f);
  profile::reset();
  const std::vector<float> values(4, 2.f);
  emu->copy_from_host(p, values.data(), values.size() * sizeof(float));
  emu->scale(p, 4, 2.f);
  emu->scale(p, 4, 2.f);
  const std::string table = profile::timing_table();
  EXPECT_NE(table.find("EMU:0: 2 kernel launches, 0 waits for the device (0.000 ms), 1 uploads (0 KB), 0 downloads"),
            std::string::npos)
      << table;
  emu->deallocate(p);
}

TEST(Gpu, DevicesAreUsable) {
  std::string why;
  if (gpu_count(&why) == 0)
    GTEST_SKIP() << "no GPU: " << why
                 << "; the GPU runs of the device harness, of the op harness's batching mode and of the autobatched models "
                    "were skipped";
  for (Device* g : gpus()) {
    EXPECT_EQ(g->type, DeviceType::GPU);
    std::vector<float> host(1000);
    for (size_t k = 0; k < host.size(); ++k) host[k] = float(k);
    float* p = static_cast<float*>(g->allocate(host.size() * sizeof(float)));
    g->copy_from_host(p, host.data(), host.size() * sizeof(float));
    g->scale(p, host.size(), 2.f);
    EXPECT_DOUBLE_EQ(g->squared_norm(p, 3), 0 + 4 + 16);
    std::vector<float> back(host.size());
    g->copy_to_host(back.data(), p, back.size() * sizeof(float));
    EXPECT_EQ(back[999], 1998.f);
    g->deallocate(p);
  }
}

}  // namespace
}  // namespace dynet
