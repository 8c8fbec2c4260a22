// DyNet programs' use of names and semantics: what DyNet's headers made visible, the engine names of
// dynet/exec.h, TensorTools as DyNet declared them, gradients after backward, index errors at
// value(), the loss values DyNet 2.x computes, and the smaller public headers.
//
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

#include "dynet/aligned-mem-pool.h"
#include "dynet/c2w.h"
#include "dynet/devices.h"
#include "dynet/dict.h"
#include "dynet/exec.h"
#include "dynet/expr.h"
#include "dynet/functors.h"
#include "dynet/graph.h"
#include "dynet/index-tensor.h"
#include "dynet/io.h"
#include "dynet/op-helper.h"
#include "dynet/rand.h"
#include "dynet/saxe-init.h"
#include "dynet/str-util.h"
#include "dynet/timing.h"
#include "dynet/tensor.h"
#include "dynet/training.h"

using namespace std;
using namespace dynet;

namespace {

vector<float> vals(const Expression& e) { return as_vector(e.value()); }

void expect_near(const vector<float>& a, const vector<float>& b, float tol = 1e-5f) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], tol) << "element " << k;
}

// (compile/visible_names.cc checks that the names compile with the dynet headers alone.)
TEST(VisibleNames, RealDenseIndexAndScalarConstants) {
  real r = 0.5f;  // dynet::real from tensor.h / model.h
  static_assert(sizeof(real) == sizeof(float), "real is float");
  Eigen::DenseIndex i = 3;  // without including Eigen
  vector<Eigen::DenseIndex> idx = {i};
  EXPECT_EQ(idx[0] + r, 3.5f);
  EXPECT_EQ(*kSCALAR_ONE, 1.f);
  EXPECT_EQ(*kSCALAR_MINUSONE, -1.f);
  EXPECT_EQ(*kSCALAR_ZERO, 0.f);
  timer.start("compat");  // DyNet's global NamedTimer (globals.h)
  timer.stop("compat");
  EXPECT_EQ(timer.cumtimes.count("compat"), 1u);
  timer.cumtimes.clear();  // nothing to print at exit
}

// DyNet 2.0's Parameter and LookupParameter were raw pointers, so programs wrote `Parameter p = nullptr;` for
// "not made yet"; such a handle is empty until assigned.
TEST(VisibleNames, ParameterHandlesStartAsNullptr) {
  Parameter p = nullptr;
  LookupParameter lp = nullptr;
  EXPECT_EQ(p.p, nullptr);
  EXPECT_EQ(lp.p, nullptr);
  ParameterCollection pc;
  p = pc.add_parameters({2});
  lp = pc.add_lookup_parameters(3, {2});
  EXPECT_EQ(p.dim(), Dim({2}));
  EXPECT_EQ(lp.dim(), Dim({2}));
  struct Members {  // the form DyNet 2.0 programs used in their model structs
    Parameter W = nullptr;
  } m;
  EXPECT_EQ(m.W.p, nullptr);
}

TEST(ExecutionEngines, MapOntoTheGraphsExecutor) {
  ComputationGraph cg;
  Expression x = input(cg, Dim({2}), {1.f, -2.f});
  Expression y = sum_elems(square(x));
  SimpleExecutionEngine simple(cg);
  EXPECT_EQ(cg.execution_strategy(), 0);
  EXPECT_FLOAT_EQ(as_scalar(simple.forward()), 5.f);
  EXPECT_FLOAT_EQ(as_scalar(simple.incremental_forward(y.i)), 5.f);
  const vector<const Tensor*> both = simple.forward({x.i, y.i});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_FLOAT_EQ(both[0]->v[1], -2.f);
  simple.backward(true);
  expect_near(as_vector(simple.get_gradient(x.i)), {2.f, -4.f});

  BatchedExecutionEngine batched(cg);
  EXPECT_EQ(cg.execution_strategy(), 1);
  EXPECT_FLOAT_EQ(as_scalar(batched.get_value(y.i)), 5.f);
  BatchedExecutionEngine depth(cg, ExecutionStrategy::Depth);
  EXPECT_EQ(cg.execution_strategy(), 2);
  EXPECT_FLOAT_EQ(as_scalar(y.value()), 5.f);
  cg.checkpoint();
  EXPECT_THROW(SimpleExecutionEngine{cg}, std::runtime_error);  // not while a checkpoint is set
  EXPECT_THROW(cg.set_execution_strategy(7), std::invalid_argument);
}

TEST(TensorToolsAsDynet, TopkReturnsValuesAndIndices) {
  ComputationGraph cg;
  Expression x = input(cg, Dim({3}, 2), {1.f, 2.f, 0.5f, 4.f, 3.f, 6.f});
  pair<Tensor, IndexTensor> rets = TensorTools::topk(x.value());
  EXPECT_EQ(as_vector(rets.second), (vector<Eigen::DenseIndex>{1, 2}));
  EXPECT_EQ(as_vector(rets.first), (vector<float>{2.f, 6.f}));
  IndexTensor kept = TensorTools::topk(x.value(), 0, 2).second;  // the values stay valid with it
  EXPECT_EQ(kept.v, (vector<Eigen::DenseIndex>{1, 0, 2, 0}));
  EXPECT_EQ(*kept.topk_values, (vector<float>{2.f, 1.f, 6.f, 4.f}));
}

TEST(TensorToolsAsDynet, BatchElemsViewEachBatchElement) {
  vector<float> buf{1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  const Tensor batched(Dim({3}, 2), buf.data());
  const vector<Tensor> elems = batched.batch_elems();
  ASSERT_EQ(elems.size(), 2u);
  EXPECT_EQ(elems[1].d, Dim({3}));
  EXPECT_EQ(elems[1].v, buf.data() + 3);
  EXPECT_EQ(as_vector(elems[0]), (vector<float>{1.f, 2.f, 3.f}));
  const Tensor single(Dim({2, 3}), buf.data());
  ASSERT_EQ(single.batch_elems().size(), 1u);
  EXPECT_EQ(single.batch_elems()[0].v, buf.data());
}

TEST(TensorToolsAsDynet, DeviceFormsWorkOnTheCpuDevice) {
  vector<float> a{1.f, 5.f, -2.f}, b(3, 0.f);
  Tensor ta(Dim({3}), a.data()), tb(Dim({3}), b.data());
  const Device_CPU& dev = *cpu_device();
  TensorTools::constant_dev(dev, tb, 2.f);
  TensorTools::accumulate_dev(dev, tb, ta);  // b += a
  EXPECT_EQ(b, (vector<float>{3.f, 7.f, 0.f}));
  TensorTools::clip_dev(dev, tb, 0.5f, 4.f);
  EXPECT_EQ(b, (vector<float>{3.f, 4.f, 0.5f}));
  EXPECT_EQ(TensorTools::argmax_dev(dev, ta).v, (vector<Eigen::DenseIndex>{1}));
}

TEST(TensorToolsAsDynet, SetAndCopyElementsCopyWhatDynetCopied) {
  vector<float> buf(4, 0.f), src{1.f, 2.f, 3.f, 4.f, 5.f};
  Tensor t(Dim({4}), buf.data());
  TensorTools::set_elements(t, {9.f, 8.f});  // fewer values: the prefix
  EXPECT_EQ(buf, (vector<float>{9.f, 8.f, 0.f, 0.f}));
  EXPECT_THROW(TensorTools::set_elements(t, src), std::invalid_argument);  // DyNet wrote past the end
  Tensor s(Dim({5}), src.data());
  TensorTools::copy_elements(t, s);  // the destination's size, from a larger source
  EXPECT_EQ(buf, (vector<float>{1.f, 2.f, 3.f, 4.f}));
  EXPECT_THROW(TensorTools::copy_elements(s, t), std::invalid_argument);  // DyNet read past the end
}

TEST(Gradients, AfterAnOrdinaryBackwardAsInDynet) {
  // The same program run on DyNet 2.x gives these (zeros off the parameter path, 1 for the loss).
  ParameterCollection m;
  Parameter W = m.add_parameters({2, 2}, ParameterInitConst(0.5f));
  ComputationGraph cg;
  Expression x = input(cg, Dim({2}), {1.f, 2.f});
  Expression h = tanh(x);
  Expression y = parameter(cg, W) * h;
  Expression side = parameter(cg, W) * x;  // on a parameter path, but not leading to the loss
  Expression loss = sum_elems(y);
  loss.value();
  cg.backward(loss);
  expect_near(as_vector(loss.gradient()), {1.f});
  expect_near(as_vector(x.gradient()), {0.f, 0.f});
  expect_near(as_vector(h.gradient()), {0.f, 0.f});
  expect_near(as_vector(y.gradient()), {1.f, 1.f});
  expect_near(as_vector(side.gradient()), {0.f, 0.f});

  ComputationGraph cg2;
  Expression a = input(cg2, Dim({2}), {1.f, 2.f});
  Expression c = sum_elems(a * 3.f);  // no parameter at all
  c.value();
  cg2.backward(c);
  expect_near(as_vector(c.gradient()), {1.f});
  expect_near(as_vector(a.gradient()), {0.f, 0.f});
  cg2.backward(c, true);
  expect_near(as_vector(a.gradient()), {3.f, 3.f});
}

TEST(IndexErrors, SelectRowsChecksWhenBuiltAndPointerFormsAtValue) {
  ComputationGraph cg;
  Expression x = input(cg, Dim({3, 2}), {1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  EXPECT_THROW(select_rows(x, vector<unsigned>{3}), std::invalid_argument);
  EXPECT_THROW(select_cols(x, vector<unsigned>{2}), std::invalid_argument);

  vector<unsigned> rows{2}, cols{1};
  Expression r = select_rows(x, &rows);
  Expression c = select_cols(x, &cols);
  expect_near(vals(r), {3.f, 6.f});
  rows = {5};  // changed after building: the error comes at value(), as in DyNet
  cols = {9};
  cg.invalidate();
  EXPECT_THROW(r.value(), std::invalid_argument);
  EXPECT_THROW(c.value(), std::invalid_argument);
  EXPECT_THROW(r.value(), std::invalid_argument);  // every time, not once
  rows = {0};  // fixed: the same node computes again
  expect_near(vals(r), {1.f, 4.f});
  vector<unsigned> bad{7};
  Expression late = select_rows(x, &bad);  // bad already when built: the pointer form waits for value()
  EXPECT_THROW(late.value(), std::invalid_argument);
  expect_near(vals(x), {1.f, 2.f, 3.f, 4.f, 5.f, 6.f});  // the graph stays usable
}

TEST(LossValues, AsDynet2Computes) {
  // Values and gradients the original DyNet 2.x gives for these inputs.
  ComputationGraph cg;
  Expression x = input(cg, Dim({2}), {0.5f, 3.f});
  Expression zero = input(cg, Dim({2}), {0.f, 0.f});
  Expression h = huber_distance(x, zero, 1.f);
  EXPECT_FLOAT_EQ(as_scalar(h.value()), 2.625f);  // 0.5²/2 + (3 - 1/2)
  cg.backward(h, true);
  expect_near(as_vector(x.gradient()), {0.5f, 1.f});

  ComputationGraph cg2;
  Expression p = input(cg2, Dim({2}), {0.f, 1.f});
  Expression target = input(cg2, Dim({2}), {0.5f, 0.5f});
  EXPECT_NEAR(as_scalar(binary_log_loss(p, target).value()), 174.673096f, 1e-3f);
}

TEST(SmallHeaders, FunctorsStringsRandomAndDevices) {
  EXPECT_FLOAT_EQ(FHuberForward(1.f)(3.f), 5.f);  // DyNet's functor is unhalved
  EXPECT_FLOAT_EQ(FBinaryLogLoss()(0.f, 0.5f), -std::log(DYNET_DEVICE_MIN));
  EXPECT_FLOAT_EQ(FBinaryLogLossBackward(1.f)(1.f, 0.f), 1.f / (1.f - 0.9999999f));
  EXPECT_FLOAT_EQ(FPairwiseRankLoss(1.f)(0.25f, 0.5f), 1.25f);
  EXPECT_TRUE(startswith("--dynet-mem", "--dynet"));
  EXPECT_TRUE(endswith("model.params", ".params"));
  EXPECT_EQ(str_split("a,,b,c", ','), (vector<string>{"a", "b", "c"}));
  EXPECT_GE(draw_random_seed(), 0);

  DeviceManager* dm = get_device_manager();
  EXPECT_EQ(dm->num_devices(), 1u);
  EXPECT_EQ(dm->get_global_device("CPU"), default_device);
  EXPECT_EQ(dm->get(0)->type, DeviceType::CPU);
  EXPECT_NE(static_cast<Device_CPU*>(dm->get(0))->edevice, nullptr);
  EXPECT_THROW(dm->get_global_device("GPU:0"), std::invalid_argument);
  EXPECT_EQ(DeviceMempoolSizes("8").used[0], 2u);
  EXPECT_EQ(DeviceMempoolSizes("1,2,3,4").used[3], 4u);

  ComputationGraph cg;
  EXPECT_GE(get_number_of_active_graphs(), 1);
  EXPECT_EQ(get_current_graph_id(), cg.get_id());
  graph_optimize(&cg);  // nothing to do
}

TEST(SmallHeaders, AlignedMemoryPoolGrowsAndRollsBack) {
  AlignedMemoryPool pool("test", 64);
  void* a = pool.allocate(40);
  void* b = pool.allocate(100);  // past the first block: a new one; `a` does not move
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.used(), 64u + 128u);
  pool.set_used(64);
  EXPECT_EQ(pool.used(), 64u);
  EXPECT_THROW(pool.set_used(1000), std::invalid_argument);
  pool.free();
  EXPECT_EQ(pool.used(), 0u);
  NodeMemPool node(16, a);
  EXPECT_EQ(node.allocate(12), a);
  EXPECT_THROW(node.allocate(8), std::runtime_error);
}

TEST(SmallHeaders, LayoutHelpersAndOrthonormalRandom) {
  vector<float> in(2 * 3 * 4), out(in.size());
  for (size_t k = 0; k < in.size(); ++k) in[k] = float(k);
  Tensor tin(Dim({2, 3, 4}), in.data()), tout(Dim({4, 2, 3}), out.data());
  HWCNToCHWN<Device_CPU>()(&tin, tout, *cpu_device());  // (h, w, c) -> (c, h, w)
  // element (h=1, w=2, c=3) of the input is element (c=3, h=1, w=2) of the output
  EXPECT_EQ(out[3 + 4 * (1 + 2 * 2)], in[1 + 2 * (2 + 3 * 3)]);
  vector<float> q(9);
  Tensor tq(Dim({3, 3}), q.data());
  orthonormal_random(3, 1.f, tq);
  double dot = 0;
  for (int k = 0; k < 3; ++k) dot += double(q[k]) * q[k];
  EXPECT_NEAR(dot, 1.0, 1e-5);
  EXPECT_THROW(orthonormal_random(2, 1.f, tq), std::invalid_argument);
}

TEST(C2W, ComposesAWordFromItsCharacters) {
  ParameterCollection m;
  C2WBuilder c2w(10, 1, 4, 3, m);
  ComputationGraph cg;
  c2w.new_graph(&cg);
  const VariableIndex v = c2w.add_word(7, {1, 2, 3}, &cg);
  EXPECT_EQ(c2w.add_word(7, {1, 2, 3}, &cg), v);  // once per word type
  EXPECT_EQ(cg.get_dimension(v), Dim({6}));
  EXPECT_EQ(Expression(&cg, v).value().d.size(), 6u);
  EXPECT_GT(c2w.get_parameters().parameter_count(), 0u);
}

TEST(ModelFiles, SaveAndLoadDynetModel) {
  const string path = ::testing::TempDir() + "compat_model_" + to_string(::getpid()) + ".txt";
  ParameterCollection a, b;
  a.add_parameters({2}, ParameterInitFromVector({1.5f, -2.f}));
  Parameter pb = b.add_parameters({2}, ParameterInitConst(0.f));
  save_dynet_model(path, &a);
  load_dynet_model(path, &b);
  std::remove(path.c_str());
  EXPECT_EQ(as_vector(*pb.values()), (vector<float>{1.5f, -2.f}));
}

}  // namespace
