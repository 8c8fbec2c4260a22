// DyNet-style node code: user-defined Node subclasses (raw float loops, and DyNet 2.1's
// DYNET_NODE_DEFINE_DEV_IMPL / DYNET_NODE_INST_DEV_IMPL with Eigen tensor expressions), added with
// ComputationGraph::add_function, and DyNet's built-in node names used the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/dynet.h"
#include "dynet/expr.h"
#include "dynet/nodes.h"
#include "dynet/tensor-eigen.h"
#include "dynet/training.h"

using namespace dynet;

// ---- a node in DyNet 2.1's own style: y = s · tanh(x) ----
struct ScaledTanh : public Node {
  explicit ScaledTanh(const std::initializer_list<VariableIndex>& a, float s) : Node(a), s(s) {}
  bool supports_multibatch() const override { return true; }
  DYNET_NODE_DEFINE_DEV_IMPL()
  float s;
};

std::string ScaledTanh::as_string(const std::vector<std::string>& arg_names) const {
  std::ostringstream os;
  os << s << " * tanh(" << arg_names[0] << ')';
  return os.str();
}

Dim ScaledTanh::dim_forward(const std::vector<Dim>& xs) const {
  DYNET_ARG_CHECK(xs.size() == 1, "Failed input count check in ScaledTanh");
  return xs[0];
}

template <class MyDevice>
void ScaledTanh::forward_dev_impl(const MyDevice& dev, const std::vector<const Tensor*>& xs, Tensor& fx) const {
  tvec(fx).device(*dev.edevice) = tvec(*xs[0]).tanh() * s;
}

template <class MyDevice>
void ScaledTanh::backward_dev_impl(const MyDevice& dev, const std::vector<const Tensor*>& xs, const Tensor& fx,
                                   const Tensor& dEdf, unsigned i, Tensor& dEdxi) const {
  // d/dx s·tanh(x) = s - y²/s
  tvec(dEdxi).device(*dev.edevice) += tvec(dEdf) * (tvec(fx).square() * (-1.f / s) + s);
}
DYNET_NODE_INST_DEV_IMPL(ScaledTanh)

Expression scaled_tanh(const Expression& x, float s) { return Expression(x.pg, x.pg->add_function<ScaledTanh>({x.i}, s)); }

namespace {

// ---- a node written with raw float loops: y = x1 ⊙ x2 + c, one batch element at a time,
// with DyNet's broadcasting of an unbatched argument ----
struct AffineProduct : public Node {
  AffineProduct(const std::initializer_list<VariableIndex>& a, float c) : Node(a), c(c) {}
  Dim dim_forward(const std::vector<Dim>& xs) const override {
    if (xs.size() != 2 || xs[0].single_batch() != xs[1].single_batch())
      throw std::invalid_argument("AffineProduct: two arguments of the same shape");
    Dim d = xs[0];
    d.bd = std::max(xs[0].bd, xs[1].bd);
    return d;
  }
  std::string as_string(const std::vector<std::string>& a) const override { return a[0] + " * " + a[1] + " + c"; }
  size_t aux_storage_size() const override { return sizeof(float); }
  void forward_impl(const std::vector<const Tensor*>& xs, Tensor& fx) const override {
    ++forward_calls;
    *static_cast<float*>(aux_mem) = c;  // aux memory is there from forward to backward
    for (unsigned k = 0; k < fx.d.size(); ++k) fx.v[k] = xs[0]->v[k] * xs[1]->v[k] + c;
  }
  void backward_impl(const std::vector<const Tensor*>& xs, const Tensor&, const Tensor& dEdf, unsigned i,
                     Tensor& dEdxi) const override {
    EXPECT_EQ(*static_cast<const float*>(aux_mem), c);
    for (unsigned k = 0; k < dEdxi.d.size(); ++k) dEdxi.v[k] += xs[1 - i]->v[k] * dEdf.v[k];
  }
  float c;
  mutable int forward_calls = 0;
};

std::vector<float> vals(const Expression& e) { return as_vector(e.value()); }
std::vector<float> grads(const Expression& e) { return as_vector(e.gradient()); }

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol = 1e-5f) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], tol) << "element " << k;
}

TEST(UserNode, DynetStyleEigenNodeMatchesTheBuiltInExpression) {
  ComputationGraph cg;
  std::vector<float> xv{-1.f, 0.25f, 2.f, -0.5f, 0.f, 1.5f};
  Expression x = input(cg, Dim({3}, 2), xv);
  Expression mine = scaled_tanh(x, 2.5f);
  Expression ref = tanh(x) * 2.5f;
  expect_near(vals(mine), vals(ref));
  EXPECT_EQ(mine.dim(), Dim({3}, 2));

  Expression loss = sum_batches(sum_elems(square(mine)));
  cg.backward(loss, true);
  const std::vector<float> g_mine = grads(x);
  ComputationGraph cg2;
  Expression x2 = input(cg2, Dim({3}, 2), xv);
  Expression loss2 = sum_batches(sum_elems(square(tanh(x2) * 2.5f)));
  cg2.backward(loss2, true);
  expect_near(g_mine, grads(x2), 1e-4f);
}

TEST(UserNode, RawNodeLoopsOverBatchElementsAndBroadcasts) {
  ParameterCollection pc;
  Parameter p = pc.add_parameters({3}, ParameterInitFromVector({1.f, 2.f, 3.f}));
  ComputationGraph cg;
  Expression w = parameter(cg, p);                                         // unbatched
  Expression x = input(cg, Dim({3}, 2), {1.f, 1.f, 1.f, 2.f, 0.f, -1.f});  // two batch elements
  const VariableIndex vi = cg.add_function<AffineProduct>({w.i, x.i}, 0.5f);
  Expression y(&cg, vi);
  expect_near(vals(y), {1.5f, 2.5f, 3.5f, 2.5f, 0.5f, -2.5f});
  Expression loss = sum_batches(sum_elems(y));
  loss.value();
  cg.backward(loss);
  // the unbatched argument's gradient sums both batch elements: x[0] + x[1]
  expect_near(as_vector(*p.gradients()), {3.f, 1.f, 0.f});
  EXPECT_FLOAT_EQ(as_scalar(loss.gradient()), 1.f);
}

TEST(UserNode, TrainsLikeAnyOtherNode) {
  // minimise (s·tanh(w·x) - 1)² over w with the user node in the path.
  ParameterCollection pc;
  Parameter w = pc.add_parameters({1}, ParameterInitConst(0.f));
  SimpleSGDTrainer sgd(pc, 0.1f);
  float first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    ComputationGraph cg;
    Expression y = scaled_tanh(parameter(cg, w) * 2.f, 1.5f);
    Expression loss = square(y - 1.f);
    const float l = as_scalar(cg.forward(loss));
    if (step == 0) first = l;
    last = l;
    cg.backward(loss);
    sgd.update();
  }
  EXPECT_GT(first, 0.5f);
  EXPECT_LT(last, 1e-3f);
  // 1.5·tanh(2w) = 1  ->  w = atanh(2/3) / 2
  EXPECT_NEAR(w.values()->v[0], std::atanh(2.0 / 3.0) / 2.0, 1e-2);
}

TEST(UserNode, BadArgumentsThrowNamingTheNodeAndTheGraphStaysUsable) {
  ComputationGraph cg;
  Expression a = input(cg, Dim({3}), {1.f, 2.f, 3.f});
  Expression b = input(cg, Dim({4}), {1.f, 2.f, 3.f, 4.f});
  const size_t before = cg.size();
  try {
    cg.add_function<AffineProduct>({a.i, b.i}, 1.f);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("AffineProduct"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cg.add_function<ScaledTanh>({a.i, b.i}, 1.f), std::invalid_argument);
  EXPECT_THROW(cg.add_function<ScaledTanh>({VariableIndex(99)}, 1.f), std::invalid_argument);  // no node 99
  EXPECT_EQ(cg.size(), before);
  expect_near(vals(scaled_tanh(a, 1.f)), {std::tanh(1.f), std::tanh(2.f), std::tanh(3.f)});
}

TEST(UserNode, CheckpointRevertAndClearDropUserNodes) {
  ComputationGraph cg;
  Expression a = input(cg, Dim({2}), {0.5f, -0.5f});
  cg.checkpoint();
  Expression t = scaled_tanh(a, 3.f);
  EXPECT_NEAR(vals(t)[0], 3 * std::tanh(0.5f), 1e-6);
  cg.revert();
  EXPECT_EQ(cg.size(), 1u);
  EXPECT_THROW(t.value(), std::exception);  // reverted away
  Expression u = scaled_tanh(a, 2.f);
  EXPECT_NEAR(vals(u)[1], 2 * std::tanh(-0.5f), 1e-6);
  cg.clear();
  Expression v = scaled_tanh(input(cg, 1.f), 1.f);
  EXPECT_NEAR(as_scalar(v.value()), std::tanh(1.f), 1e-6);
}

TEST(UserNode, AddFunctionNodeTakesANodeObject) {
  ComputationGraph cg;
  Expression a = input(cg, Dim({2}), {2.f, 3.f});
  Expression b = input(cg, Dim({2}), {4.f, 5.f});
  AffineProduct* n = new AffineProduct({a.i, b.i}, 1.f);
  Expression y(&cg, cg.add_function_node(n));
  expect_near(vals(y), {9.f, 16.f});
  EXPECT_EQ(n->get_cg(), &cg);
  EXPECT_EQ(n->dim, Dim({2}));
  EXPECT_EQ(n->arity(), 2u);
  EXPECT_EQ(n->device, default_device);
  EXPECT_EQ(n->as_dummy_string(), "a * a + c");
  EXPECT_EQ(n->forward_calls, 1);
  y.value();
  EXPECT_EQ(n->forward_calls, 1);  // computed once
}

// ---- DyNet's built-in node names with add_function ----

TEST(BuiltinNodeNames, BuildTheMatchingOps) {
  ComputationGraph cg;
  Expression x = input(cg, Dim({3}), {-1.f, 0.5f, 2.f});
  Expression y = input(cg, Dim({3}), {2.f, -1.f, 0.25f});
  Expression W = input(cg, Dim({2, 3}), {1.f, 0.f, 0.f, 1.f, 1.f, 1.f});
  auto E = [&](VariableIndex i) { return Expression(&cg, i); };
  expect_near(vals(E(cg.add_function<Tanh>({x.i}))), vals(tanh(x)));
  expect_near(vals(E(cg.add_function<LogisticSigmoid>({x.i}))), vals(logistic(x)));
  expect_near(vals(E(cg.add_function<CwiseMultiply>({x.i, y.i}))), vals(cmult(x, y)));
  expect_near(vals(E(cg.add_function<MatrixMultiply>({W.i, x.i}))), vals(W * x));
  expect_near(vals(E(cg.add_function<ConstantMinusX>({x.i}, 1.f))), vals(1.f - x));
  expect_near(vals(E(cg.add_function<ConstScalarMultiply>({x.i}, 3.f))), vals(x * 3.f));
  expect_near(vals(E(cg.add_function<Sum>(std::vector<VariableIndex>{x.i, y.i, x.i}))), vals(x + y + x));
  expect_near(vals(E(cg.add_function<Concatenate>({x.i, y.i}, 0u))), vals(concatenate({x, y})));
  expect_near(vals(E(cg.add_function<PickElement>({x.i}, 2u, 0u))), {2.f});
  expect_near(vals(E(cg.add_function<PickNegLogSoftmax>({x.i}, 1u))), vals(pickneglogsoftmax(x, 1)));
  expect_near(vals(E(cg.add_function<Softmax>({x.i}))), vals(softmax(x)));
  expect_near(vals(E(cg.add_function<HuberDistance>({x.i, y.i}, 1.f))), vals(huber_distance(x, y, 1.f)));
  expect_near(vals(E(cg.add_function<Round>({x.i}, true))), vals(round(x, straight_through_gradient)));
  expect_near(vals(E(cg.add_function<ExponentialLinearUnit>({x.i}, 1.0507f, 1.6733f))), vals(selu(x)), 1e-4f);
  expect_near(vals(E(cg.add_function<Reshape>({W.i}, Dim({3, 2})))), vals(reshape(W, Dim({3, 2}))));
  expect_near(vals(E(cg.add_function<SelectRows>({W.i}, std::vector<unsigned>{1}))), {0.f, 1.f, 1.f});
  expect_near(vals(E(cg.add_function<Constant>(Dim({2}), 7.f))), {7.f, 7.f});
  expect_near(vals(E(cg.add_function<Constant>(Dim({2})))), {0.f, 0.f});  // DyNet's default value
  EXPECT_EQ(cg.add_function<Identity>({x.i}), x.i);
  EXPECT_EQ(E(cg.add_function<InputNode>(Dim({2}), std::vector<float>{1.f, 2.f})).dim(), Dim({2}));
}

template <class Node>
Expression built(ComputationGraph& cg, std::vector<VariableIndex> args) {
  return Expression(&cg, cg.add_function<Node>(args));
}

// The names that DYNET_BUILTIN_NODE declares in one line, with their arguments alone.
TEST(BuiltinNodeNames, OneLineNamesBuildTheirFunctions) {
  ComputationGraph cg;
  Expression x = input(cg, Dim({3}), {0.2f, 0.5f, 0.7f});
  Expression y = input(cg, Dim({3}), {1.5f, 2.f, 3.f});
  struct Row {
    const char* name;
    Expression node, function;
  };
#define UNARY(N, F, X) {#N, built<N>(cg, {X.i}), F(X)}
#define BINARY(N, F) {#N, built<N>(cg, {x.i, y.i}), F(x, y)}
#define LIST(N, F) {#N, built<N>(cg, {x.i, y.i}), F({x, y})}
  const std::vector<Row> rows = {
      UNARY(Tanh, tanh, x), UNARY(Sin, sin, x), UNARY(Cos, cos, x), UNARY(Tan, tan, x), UNARY(Asin, asin, x),
      UNARY(Acos, acos, x), UNARY(Atan, atan, x), UNARY(Sinh, sinh, x), UNARY(Cosh, cosh, x), UNARY(Asinh, asinh, x),
      UNARY(Acosh, acosh, y), UNARY(Atanh, atanh, x), UNARY(Rectify, rectify, x), UNARY(LogisticSigmoid, logistic, x),
      UNARY(SoftSign, softsign, x), UNARY(Erf, erf, x), UNARY(SigmoidLinearUnit, silu, x), UNARY(Negate, -, x),
      UNARY(Sqrt, sqrt, x), UNARY(Abs, abs, x), UNARY(Exp, exp, x), UNARY(Square, square, x), UNARY(Cube, cube, x),
      UNARY(Log, log, x), UNARY(LogGamma, lgamma, x), UNARY(LogSigmoid, log_sigmoid, x),
      UNARY(SumElements, sum_elems, x), UNARY(SumBatches, sum_batches, x), UNARY(SumColumns, sum_cols, x),
      UNARY(AverageColumns, average_cols, x), UNARY(Transpose, transpose, x),
      UNARY(Softmax, softmax, x), UNARY(LogSoftmax, log_softmax, x), UNARY(Sparsemax, sparsemax, x),
      UNARY(SquaredNorm, squared_norm, x), UNARY(L2Norm, l2_norm, x), BINARY(CwiseSum, operator+),
      BINARY(CwiseMultiply, cmult), BINARY(CwiseQuotient, cdiv), BINARY(Pow, pow), BINARY(Min, min),
      BINARY(DotProduct, dot_product), BINARY(SquaredEuclideanDistance, squared_distance),
      BINARY(L1Distance, l1_distance), BINARY(CircularConvolution, circ_conv), BINARY(CircularCorrelation, circ_corr),
      BINARY(BinaryLogLoss, binary_log_loss), LIST(Sum, sum), LIST(Average, average), LIST(Max, max),
      LIST(LogSumExp, logsumexp), LIST(Concatenate, concatenate), LIST(ConcatenateColumns, concatenate_cols),
      {"CumulativeSum", Expression(&cg, cg.add_function<CumulativeSum>({x.i}, 0u)), cumsum(x, 0)},
  };
#undef UNARY
#undef BINARY
#undef LIST
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_NE(r.node.i, r.function.i);
    EXPECT_EQ(r.node.dim(), r.function.dim());
    expect_near(vals(r.node), vals(r.function));
  }
}

TEST(BuiltinNodeNames, WrongArgumentsAndMissingCounterpartsThrow) {
  ComputationGraph cg;
  Expression x = input(cg, Dim({3}), {1.f, 2.f, 3.f});
  try {
    cg.add_function<Tanh>({x.i, x.i});
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Tanh"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cg.add_function<Tanh>({VariableIndex(7)}), std::invalid_argument);
  try {
    cg.add_function<MaxPooling1D>({x.i});
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("MaxPooling1D"), std::string::npos) << e.what();
  }
}

// DyNet 2.0's Conv1DNarrow and Conv1DWide build conv1d_narrow and conv1d_wide.
TEST(BuiltinNodeNames, Conv1DNodesBuildTheConv1DOps) {
  ComputationGraph cg;
  Expression x = input(cg, Dim({1, 3}), {1.f, 2.f, 3.f});
  Expression f = input(cg, Dim({1, 2}), {1.f, 10.f});
  auto E = [&](VariableIndex i) { return Expression(&cg, i); };
  expect_near(vals(E(cg.add_function<Conv1DNarrow>({x.i, f.i}))), {21.f, 32.f});
  expect_near(vals(E(cg.add_function<Conv1DWide>({x.i, f.i}))), {1.f, 12.f, 23.f, 30.f});
}

}  // namespace
