// Values of the convolution, contraction, linear algebra, normalization and fused LSTM ops, checked
// against naive loops, hand-computed numbers and the same math composed from simpler ops (the generic
// harness in test_ops.cc checks shapes and gradients; these check the numbers themselves).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "dynet/expr.h"
#include "dynet/init.h"
#include "dynet/lstm.h"
#include "kernels/cpu/parallel.h"
#include "op_test_util.h"

namespace dynet {
namespace {

using test::expect_values;

void expect_close(const Tensor& a, const Tensor& b, float tol, const std::string& what) {
  ASSERT_EQ(a.d, b.d) << what;
  const std::vector<float> va = as_vector(a), vb = as_vector(b);
  for (size_t k = 0; k < va.size(); ++k) EXPECT_NEAR(va[k], vb[k], tol) << what << " element " << k;
}

std::vector<float> random_vector(size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// ---- conv2d against a direct loop ----
struct ConvCase {
  unsigned H, W, C, KH, KW, CO, bd, sh, sw;
  bool valid, bias;
};

// y[i,j,o] = b[o] + Σ x[i·sh+p-pad_t, j·sw+q-pad_l, c] f[p,q,c,o], TensorFlow's output sizes and padding.
std::vector<float> naive_conv2d(const ConvCase& k, const std::vector<float>& x, const std::vector<float>& f,
                                const std::vector<float>& bias, unsigned& OH, unsigned& OW) {
  auto out_size = [&](unsigned in, unsigned kk, unsigned s) {
    return k.valid ? unsigned(std::ceil(float(in - kk + 1) / float(s))) : unsigned(std::ceil(float(in) / float(s)));
  };
  OH = out_size(k.H, k.KH, k.sh);
  OW = out_size(k.W, k.KW, k.sw);
  const int pad_t = k.valid ? 0 : std::max(int((OH - 1) * k.sh + k.KH) - int(k.H), 0) / 2;
  const int pad_l = k.valid ? 0 : std::max(int((OW - 1) * k.sw + k.KW) - int(k.W), 0) / 2;
  std::vector<float> y(size_t(OH) * OW * k.CO * k.bd, 0.f);
  for (unsigned b = 0; b < k.bd; ++b)
    for (unsigned o = 0; o < k.CO; ++o)
      for (unsigned j = 0; j < OW; ++j)
        for (unsigned i = 0; i < OH; ++i) {
          double s = k.bias ? bias[o] : 0.0;
          for (unsigned c = 0; c < k.C; ++c)
            for (unsigned q = 0; q < k.KW; ++q)
              for (unsigned p = 0; p < k.KH; ++p) {
                const int r = int(i * k.sh + p) - pad_t, col = int(j * k.sw + q) - pad_l;
                if (r < 0 || r >= int(k.H) || col < 0 || col >= int(k.W)) continue;
                s += double(x[r + k.H * (col + k.W * (c + k.C * b))]) * f[p + k.KH * (q + k.KW * (c + k.C * o))];
              }
          y[i + OH * (j + OW * (o + k.CO * b))] = float(s);
        }
  return y;
}

TEST(Conv2dValues, MatchesDirectLoop) {
  const std::vector<ConvCase> cases = {
      {5, 4, 2, 3, 2, 3, 1, 1, 1, true, false},
      {5, 4, 2, 3, 2, 3, 1, 1, 1, false, false},
      {7, 6, 2, 3, 2, 2, 2, 2, 3, true, true},
      {6, 5, 1, 3, 4, 2, 1, 2, 2, false, true},
      {9, 8, 3, 4, 3, 4, 3, 3, 2, false, false},
      {8, 8, 3, 1, 1, 5, 2, 1, 1, true, true},
      {4, 3, 2, 5, 5, 2, 1, 1, 1, false, true},
      {10, 7, 1, 2, 3, 1, 1, 4, 3, true, false},
      // 4 or more input channels: oneDNN's primitives
      {9, 8, 4, 3, 3, 4, 1, 1, 1, true, false},
      {6, 7, 5, 3, 3, 4, 2, 2, 2, false, true},
      {12, 10, 8, 5, 3, 6, 3, 3, 2, true, true},
      {5, 5, 4, 5, 5, 3, 1, 1, 1, false, false},
      {16, 16, 16, 3, 3, 32, 4, 1, 1, false, true},
  };
  std::mt19937 rng(7);
  for (const ConvCase& k : cases) {
    SCOPED_TRACE("image " + std::to_string(k.H) + "x" + std::to_string(k.W) + "x" + std::to_string(k.C) + " filter " +
                 std::to_string(k.KH) + "x" + std::to_string(k.KW) + " stride " + std::to_string(k.sh) + "," +
                 std::to_string(k.sw) + (k.valid ? " valid" : " same"));
    const std::vector<float> x = random_vector(size_t(k.H) * k.W * k.C * k.bd, rng);
    const std::vector<float> f = random_vector(size_t(k.KH) * k.KW * k.C * k.CO, rng);
    const std::vector<float> bias = random_vector(k.CO, rng);
    unsigned OH, OW;
    const std::vector<float> want = naive_conv2d(k, x, f, bias, OH, OW);
    ComputationGraph g;
    Expression ex = input(g, Dim({k.H, k.W, k.C}, k.bd), x);
    Expression ef = input(g, Dim({k.KH, k.KW, k.C, k.CO}), f);
    Expression y = k.bias ? conv2d(ex, ef, input(g, Dim({k.CO}), bias), {k.sh, k.sw}, k.valid)
                          : conv2d(ex, ef, {k.sh, k.sw}, k.valid);
    EXPECT_EQ(y.dim(), Dim({OH, OW, k.CO}, k.bd));
    expect_values(y.value(), want, 1e-4f);
  }
}

TEST(Conv2dValues, HandComputedSums) {
  // x = [1 4 7; 2 5 8; 3 6 9] (3x3, column-major 1..9), f = ones(2x2): each output sums a 2x2 window.
  ComputationGraph g;
  Expression x = input(g, Dim({3, 3, 1}), {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Expression f = input(g, Dim({2, 2, 1, 1}), {1, 1, 1, 1});
  expect_values(conv2d(x, f, {1, 1}).value(), {12, 16, 24, 28});
  // 'same' with stride 1 pads one row/column after (total padding 1, none before).
  expect_values(conv2d(x, f, {1, 1}, false).value(), {12, 16, 9, 24, 28, 15, 15, 17, 9});
  // stride 2, valid: only the top-left window.
  expect_values(conv2d(x, f, {2, 2}).value(), {12});
  // a bias per output channel; two output channels (ones and the corner picker)
  Expression f2 = input(g, Dim({2, 2, 1, 2}), {1, 1, 1, 1, 1, 0, 0, 0});
  Expression b = input(g, Dim({2}), {10, -1});
  expect_values(conv2d(x, f2, b, {1, 1}).value(), {22, 26, 34, 38, 0, 1, 3, 4});
}

// The threads of this process (Linux: one entry each in /proc/self/task).
size_t live_threads() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& t : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(Conv2dValues, SmallConvolutionsStartNoThreadTeam) {
  // A text CNN's convolution (26k multiply-adds, on the oneDNN path: 32 input channels) with OpenMP
  // allowed 4 threads: forward and backward run on the calling thread alone. An OpenMP team's barrier
  // waits a whole time slice for a worker that a busy neighbour process keeps off its core.
  const cpu::OmpThreads four(4);
  ParameterCollection pc;
  ComputationGraph g;
  Expression x = parameter(g, pc.add_parameters({1, 20, 32}));  // parameters: backward computes both gradients
  Expression f = parameter(g, pc.add_parameters({1, 3, 32, 15}));
  const size_t before = live_threads();
  Expression loss = sum_elems(rectify(conv2d(x, f, {1, 1})));
  loss.value();
  g.backward(loss);
  EXPECT_EQ(live_threads(), before);
}

TEST(Conv2dValues, LargeBatchesRunInImageChunksWithTheSameValues) {
  // 10 images of 1.3M multiply-adds each: the batch (12.8M) runs in 8 chunks of 1-2 images on the helper
  // threads, each image alone in one call. Values and gradients agree up to the order of float sums.
  constexpr unsigned N = 10;
  std::mt19937 rng(11);
  const std::vector<float> image = random_vector(24 * 24 * 8 * N, rng);
  ParameterCollection pc;
  Parameter F = pc.add_parameters({5, 5, 8, 16}, ParameterInitUniform(-0.3f, 0.3f));
  auto run = [&](bool batched) {
    pc.reset_gradient();
    ComputationGraph g;
    std::vector<float> values, dx;
    std::vector<Expression> xs, losses;
    if (batched) {
      xs.push_back(input(g, Dim({24, 24, 8}, N), image));
    } else {
      for (unsigned b = 0; b < N; ++b)
        xs.push_back(input(g, Dim({24, 24, 8}), std::vector<float>(image.begin() + b * 4608, image.begin() + (b + 1) * 4608)));
    }
    for (Expression& x : xs) {
      Expression y = conv2d(x, parameter(g, F), {1, 1}, true);
      const std::vector<float> v = as_vector(y.value());
      values.insert(values.end(), v.begin(), v.end());
      losses.push_back(sum_batches(sum_elems(square(y))));
    }
    Expression loss = sum(losses);
    g.backward(loss, true);
    for (Expression& x : xs) {
      const std::vector<float> d = as_vector(x.gradient());
      dx.insert(dx.end(), d.begin(), d.end());
    }
    return std::make_tuple(values, dx, as_vector(*F.gradients()));
  };
  const auto [v1, dx1, df1] = run(true);
  const auto [v2, dx2, df2] = run(false);
  ASSERT_EQ(v1.size(), v2.size());
  for (size_t k = 0; k < v1.size(); ++k) ASSERT_NEAR(v1[k], v2[k], 1e-4f * (1 + std::abs(v2[k]))) << "value " << k;
  for (size_t k = 0; k < dx1.size(); ++k) ASSERT_NEAR(dx1[k], dx2[k], 1e-3f * (1 + std::abs(dx2[k]))) << "dx " << k;
  for (size_t k = 0; k < df1.size(); ++k) ASSERT_NEAR(df1[k], df2[k], 1e-3f * (1 + std::abs(df2[k]))) << "dF " << k;
}

TEST(Conv2dValues, ALargeImageRunsInPartsOfOutputChannels) {
  // One 40x40x16 image to 64 channels (13M multiply-adds): 4 parts of 16 output channels, the input
  // gradient summed over them. The same image twice in a batch runs as 2 parts of one image each, with
  // every channel at once: the values and the input gradient match, the filter gradient is twice.
  std::mt19937 rng(13);
  const std::vector<float> image = random_vector(40 * 40 * 16, rng);
  std::vector<float> twice = image;
  twice.insert(twice.end(), image.begin(), image.end());
  ParameterCollection pc;
  Parameter F = pc.add_parameters({3, 3, 16, 64}, ParameterInitUniform(-0.2f, 0.2f));
  auto run = [&](unsigned N) {
    pc.reset_gradient();
    ComputationGraph g;
    Expression x = input(g, Dim({40, 40, 16}, N), N == 1 ? image : twice);
    Expression y = conv2d(x, parameter(g, F), {1, 1}, true);
    std::vector<float> values = as_vector(y.value());
    g.backward(sum_batches(sum_elems(square(y))), true);
    std::vector<float> dx = as_vector(x.gradient());
    values.resize(values.size() / N);  // the first image's
    dx.resize(dx.size() / N);
    return std::make_tuple(values, dx, as_vector(*F.gradients()));
  };
  const auto [v1, dx1, df1] = run(1);
  const auto [v2, dx2, df2] = run(2);
  for (size_t k = 0; k < v1.size(); ++k) ASSERT_NEAR(v1[k], v2[k], 1e-4f * (1 + std::abs(v2[k]))) << "value " << k;
  for (size_t k = 0; k < dx1.size(); ++k) ASSERT_NEAR(dx1[k], dx2[k], 1e-3f * (1 + std::abs(dx2[k]))) << "dx " << k;
  for (size_t k = 0; k < df1.size(); ++k) ASSERT_NEAR(2 * df1[k], df2[k], 1e-3f * (1 + std::abs(df2[k]))) << "dF " << k;
}

TEST(Conv2dValues, BadArgumentsThrow) {
  ComputationGraph g;
  Expression x = input(g, Dim({4, 4, 2}), std::vector<float>(32, 1.f));
  Expression f = input(g, Dim({2, 2, 3, 1}), std::vector<float>(12, 1.f));
  EXPECT_THROW(conv2d(x, f, {1, 1}), std::invalid_argument);
  Expression f_ok = input(g, Dim({5, 2, 2, 1}), std::vector<float>(20, 1.f));
  EXPECT_THROW(conv2d(x, f_ok, {1, 1}, true), std::invalid_argument);  // filter taller than the image
  EXPECT_NO_THROW(conv2d(x, f_ok, {1, 1}, false));                     // fine with padding
  EXPECT_THROW(conv2d(x, f_ok, {1}, false), std::invalid_argument);
  EXPECT_THROW(conv2d(x, f_ok, {}, false), std::invalid_argument);
  EXPECT_THROW(conv2d(x, f_ok, {0, 1}, false), std::invalid_argument);
  EXPECT_THROW(maxpooling2d(x, {2}, {1, 1}), std::invalid_argument);
  // Entries after the first two are ignored, as in DyNet (TensorFlow-style strides {1, 1, 1, 1}).
  expect_values(conv2d(x, f_ok, {2, 1, 1, 1}, false).value(), as_vector(conv2d(x, f_ok, {2, 1}, false).value()));
  expect_values(maxpooling2d(x, {2, 2, 9}, {1, 2, 0}).value(), as_vector(maxpooling2d(x, {2, 2}, {1, 2}).value()));
}

// ---- maxpooling2d ----
TEST(MaxPooling2dValues, HandComputed) {
  // x (4x4, column-major): column j holds 4j+1 .. 4j+4, except a 100 at (2,1).
  std::vector<float> v(16);
  for (unsigned k = 0; k < 16; ++k) v[k] = float(k + 1);
  v[2 + 4 * 1] = 100.f;
  ComputationGraph g;
  Expression x = input(g, Dim({4, 4, 1}), v);
  // 2x2 windows, stride 2: maxima at (1,1)=6, (3,1)=8 -> 100 is at (2,1) in the lower-left window.
  Expression y = maxpooling2d(x, {2, 2}, {2, 2});
  EXPECT_EQ(y.dim(), Dim({2, 2, 1}));
  expect_values(y.value(), {6, 100, 14, 16});
  // 'same', 3x3 windows, stride 2: output 2x2, total padding 1 per axis, after the image.
  expect_values(maxpooling2d(x, {3, 3}, {2, 2}, false).value(), {100, 100, 15, 16});
  // The gradient goes to each window's maximum (100 collects from both windows containing it).
  Expression loss = sum_elems(maxpooling2d(x, {3, 3}, {2, 2}, false));
  g.backward(loss, true);
  std::vector<float> want(16, 0.f);
  want[2 + 4 * 1] = 2.f;
  want[2 + 4 * 3] = 1.f;  // 15
  want[3 + 4 * 3] = 1.f;  // 16
  expect_values(x.gradient(), want);
}

TEST(MaxPooling2dValues, BatchedAndMultiChannel) {
  // two channels, two batch elements; channel values are negated in batch element 1
  std::vector<float> v(2 * 2 * 2 * 2);
  for (unsigned k = 0; k < 8; ++k) {
    v[k] = float(k);
    v[8 + k] = -float(k);
  }
  ComputationGraph g;
  Expression x = input(g, Dim({2, 2, 2}, 2), v);
  expect_values(maxpooling2d(x, {2, 2}, {1, 1}).value(), {3, 7, 0, -4});
  // a 2-d image gives a 2-d result
  EXPECT_EQ(maxpooling2d(input(g, Dim({4, 6}), std::vector<float>(24, 1.f)), {2, 2}, {2, 3}).dim(), Dim({2, 2}));
}

// ---- filter1d_narrow and kmh_ngram ----
TEST(Filter1dValues, HandComputed) {
  // x = [1 2 3; 4 5 6] (2x3), f = [1 0; 0 1] (2x2): y[j] = x[0,j] + x[1,j+1].
  ComputationGraph g;
  Expression x = input(g, Dim({2, 3}), {1, 4, 2, 5, 3, 6});
  Expression f = input(g, Dim({2, 2}), {1, 0, 0, 1});
  expect_values(filter1d_narrow(x, f).value(), {6, 8});
  // two filters: the first as above, the second sums everything in the window
  Expression f2 = input(g, Dim({2, 2, 2}), {1, 0, 0, 1, 1, 1, 1, 1});
  Expression y = filter1d_narrow(x, f2);
  EXPECT_EQ(y.dim(), Dim({2, 2}));
  expect_values(y.value(), {6, 12, 8, 16});
}

TEST(KmhNgramValues, HandComputed) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 4}), {1, 10, 2, 20, 3, 30, 4, 40});
  expect_values(kmh_ngram(x, 2).value(), {3, 30, 5, 50, 7, 70});
  expect_values(kmh_ngram(x, 4).value(), {10, 100});
}

// ---- contractions ----
TEST(ContractValues, MatchDirectSums) {
  std::mt19937 rng(3);
  const unsigned I = 3, J = 4, K = 2;
  const std::vector<float> xv = random_vector(I * J * K, rng), yv = random_vector(K, rng), zv = random_vector(J, rng);
  const std::vector<float> bij = random_vector(I * J, rng), bi = random_vector(I, rng);
  std::vector<float> want31(I * J), want311(I);
  for (unsigned i = 0; i < I; ++i) {
    double t = bi[i];
    for (unsigned j = 0; j < J; ++j) {
      double s = bij[i + I * j];
      for (unsigned k = 0; k < K; ++k) {
        s += double(xv[i + I * (j + J * k)]) * yv[k];
        t += double(xv[i + I * (j + J * k)]) * yv[k] * zv[j];
      }
      want31[i + I * j] = float(s);
    }
    want311[i] = float(t);
  }
  ComputationGraph g;
  Expression x = input(g, Dim({I, J, K}), xv), y = input(g, Dim({K}), yv), z = input(g, Dim({J}), zv);
  Expression b2 = input(g, Dim({I, J}), bij), b1 = input(g, Dim({I}), bi);
  expect_values(contract3d_1d(x, y, b2).value(), want31);
  expect_values(contract3d_1d_1d(x, y, z, b1).value(), want311);
  // without the bias: subtract it back out
  std::vector<float> no_bias(I);
  for (unsigned i = 0; i < I; ++i) no_bias[i] = want311[i] - bi[i];
  expect_values(contract3d_1d_1d(x, y, z).value(), no_bias);
  // a batch of y's against the shared tensor equals each y alone
  std::vector<float> y2 = yv;
  y2.push_back(0.5f);
  y2.push_back(-2.f);
  Expression yb = input(g, Dim({K}, 2), y2);
  Expression zb = contract3d_1d(x, yb, b2);
  Expression y_second = input(g, Dim({K}), {0.5f, -2.f});
  std::vector<float> both = want31;
  const std::vector<float> second = as_vector(contract3d_1d(x, y_second, b2).value());
  both.insert(both.end(), second.begin(), second.end());
  expect_values(zb.value(), both);
}

// ---- linear algebra ----
TEST(LinalgValues, InverseTimesMatrixIsIdentity) {
  std::mt19937 rng(11);
  const unsigned n = 5;
  std::vector<float> a = random_vector(n * n, rng);
  for (unsigned k = 0; k < n; ++k) a[k * n + k] += 3.f;
  ComputationGraph g;
  Expression x = input(g, Dim({n, n}), a);
  const Tensor& p = (inverse(x) * x).value();
  std::vector<float> eye(n * n, 0.f);
  for (unsigned k = 0; k < n; ++k) eye[k * n + k] = 1.f;
  expect_values(p, eye, 1e-5f);
  expect_values((x * inverse(x)).value(), eye, 1e-5f);
  // batched: each element inverted on its own ([[2,0],[0,4]] and [[0,1],[1,0]])
  Expression xb = input(g, Dim({2, 2}, 2), {2, 0, 0, 4, 0, 1, 1, 0});
  expect_values(inverse(xb).value(), {0.5f, 0, 0, 0.25f, 0, 1, 1, 0});
}

TEST(LinalgValues, InverseOfSingularMatrixThrows) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 2}), {1, 2, 2, 4});
  Expression y = inverse(x);
  EXPECT_THROW(y.value(), std::runtime_error);
}

TEST(LinalgValues, LogDeterminant) {
  ComputationGraph g;
  // [[2,1],[1,3]]: det 5
  expect_values(logdet(input(g, Dim({2, 2}), {2, 1, 1, 3})).value(), {std::log(5.f)});
  // diag(2,3,4): det 24
  expect_values(logdet(input(g, Dim({3, 3}), {2, 0, 0, 0, 3, 0, 0, 0, 4})).value(), {std::log(24.f)});
  // a permutation with det -1 and [[1,2],[3,4]] (det -2): log |det|
  expect_values(logdet(input(g, Dim({2, 2}, 2), {0, 1, 1, 0, 1, 3, 2, 4})).value(), {0.f, std::log(2.f)});
  // d log|det x| / dx = x⁻ᵀ
  Expression x = input(g, Dim({2, 2}), {2, 1, 1, 3});
  g.backward(logdet(x), true);
  expect_values(x.gradient(), {0.6f, -0.2f, -0.2f, 0.4f});
}

TEST(LinalgValues, TraceOfProduct) {
  ComputationGraph g;
  Expression x = input(g, Dim({2, 2}), {1, 2, 3, 4});
  Expression y = input(g, Dim({2, 2}), {5, 6, 7, 8});
  // tr(x yᵀ) = 1·5 + 2·6 + 3·7 + 4·8
  expect_values(trace_of_product(x, y).value(), {70});
  EXPECT_THROW(trace_of_product(x, input(g, Dim({4}), {1, 2, 3, 4})), std::invalid_argument);
}

// ---- normalization ----
TEST(NormValues, LayerNormHasZeroMeanUnitStd) {
  std::mt19937 rng(5);
  const unsigned n = 6;
  std::vector<float> xv = random_vector(n * 2, rng, -3.f, 5.f);
  ComputationGraph g;
  Expression x = input(g, Dim({n}, 2), xv);
  Expression ones_ = input(g, Dim({n}), std::vector<float>(n, 1.f));
  Expression zeros_ = input(g, Dim({n}), std::vector<float>(n, 0.f));
  const std::vector<float> y = as_vector(layer_norm(x, ones_, zeros_).value());
  for (unsigned b = 0; b < 2; ++b) {
    double mean = 0, sq = 0;
    for (unsigned k = 0; k < n; ++k) mean += y[b * n + k];
    mean /= n;
    for (unsigned k = 0; k < n; ++k) sq += (y[b * n + k] - mean) * (y[b * n + k] - mean);
    EXPECT_NEAR(mean, 0.0, 1e-6);
    EXPECT_NEAR(std::sqrt(sq / n), 1.0, 1e-5);  // σ with 1/n, like DyNet's std_elems
  }
  // x = [1, 2, 3, 4]: μ = 2.5, σ = sqrt(1.25); gain 2 and bias 1 apply elementwise
  Expression x4 = input(g, Dim({4}), {1, 2, 3, 4});
  Expression g4 = input(g, Dim({4}), {2, 2, 2, 2}), b4 = input(g, Dim({4}), {1, 1, 1, 1});
  const float s = std::sqrt(1.25f);
  expect_values(layer_norm(x4, g4, b4).value(), {1 - 3 / s, 1 - 1 / s, 1 + 1 / s, 1 + 3 / s});
  // a constant x has σ = 0: the output is the bias and the gradient stays finite
  Expression c = input(g, Dim({4}), {3, 3, 3, 3});
  Expression y0 = layer_norm(c, g4, b4);
  expect_values(y0.value(), {1, 1, 1, 1});
  g.backward(sum_elems(cmult(y0, input(g, Dim({4}), {1, -2, 3, 0.5f}))), true);
  for (float v : as_vector(c.gradient())) EXPECT_TRUE(std::isfinite(v));
}

TEST(NormValues, WeightNormHasNormOfGain) {
  ComputationGraph g;
  Expression w = input(g, Dim({2, 2}), {3, 0, 0, 4});
  Expression gain = input(g, Dim({1}), {10});
  expect_values(weight_norm(w, gain).value(), {6, 0, 0, 8});
  Expression zero = input(g, Dim({3}), {0, 0, 0});
  Expression y = weight_norm(zero, gain);
  EXPECT_THROW(y.value(), std::runtime_error);
}

// ---- fused LSTM nodes against the composed LSTM step ----
struct LstmStep {
  Expression c, h;
};
// The same step from elementary ops: a = b + Wx·(x ⊙ mx) + Wh·(h ⊙ mh), forget bias 1.
LstmStep composed_step(const std::vector<Expression>& xs, const Expression& h, const Expression& c,
                       const Expression& Wx, const Expression& Wh, const Expression& b, const Expression* mx,
                       const Expression* mh, unsigned H) {
  Expression x = xs.size() == 1 ? xs[0] : concatenate(xs);
  Expression xd = mx ? cmult(x, *mx) : x, hd = mh ? cmult(h, *mh) : h;
  Expression a = affine_transform({b, Wx, xd, Wh, hd});
  Expression i = logistic(pick_range(a, 0, H)), f = logistic(pick_range(a, H, 2 * H) + 1.f);
  Expression o = logistic(pick_range(a, 2 * H, 3 * H)), gg = tanh(pick_range(a, 3 * H, 4 * H));
  Expression c_new = cmult(f, c) + cmult(i, gg);
  return {c_new, cmult(o, tanh(c_new))};
}

// Builds one step fused or composed over the same values, returns its c, h and the gradients of every
// input of loss = Σ r1 ⊙ h + r2 ⊙ c.
struct StepResult {
  std::vector<float> c, h;
  std::vector<std::vector<float>> grads;
};
StepResult run_step(bool fused, bool dropout, unsigned B, bool h_batched) {
  const unsigned H = 3, I1 = 1, I2 = 3, I = I1 + I2;
  std::mt19937 rng(21);
  const std::vector<Dim> dims = {Dim({I1}, B), Dim({I2}, B),    Dim({H}, h_batched ? B : 1),
                                 Dim({H}, B),  Dim({4 * H, I}), Dim({4 * H, H}),
                                 Dim({4 * H}), Dim({I}, B),     Dim({H}),
                                 Dim({H}, B),  Dim({H}, B)};
  std::vector<std::vector<float>> values;
  for (const Dim& d : dims) values.push_back(random_vector(d.size(), rng));
  ComputationGraph g;
  std::vector<Expression> e;
  for (size_t k = 0; k < dims.size(); ++k) e.push_back(input(g, dims[k], values[k]));
  const Expression &x1 = e[0], &x2 = e[1], &h = e[2], &c = e[3], &Wx = e[4], &Wh = e[5], &b = e[6], &mx = e[7],
                   &mh = e[8], &r1 = e[9], &r2 = e[10];
  LstmStep step;
  if (fused) {
    Expression gates = dropout ? vanilla_lstm_gates_dropout_concat({x1, x2}, h, Wx, Wh, b, mx, mh)
                               : vanilla_lstm_gates_concat({x1, x2}, h, Wx, Wh, b);
    step.c = vanilla_lstm_c(c, gates);
    step.h = vanilla_lstm_h(step.c, gates);
  } else {
    step = composed_step({x1, x2}, h, c, Wx, Wh, b, dropout ? &mx : nullptr, dropout ? &mh : nullptr, H);
  }
  Expression loss = sum_batches(sum_elems(cmult(step.h, r1) + cmult(step.c, r2)));
  StepResult r{as_vector(step.c.value()), as_vector(step.h.value()), {}};
  g.backward(loss, true);
  for (size_t k = 0; k < (dropout ? 9u : 7u); ++k) r.grads.push_back(as_vector(e[k].gradient()));
  return r;
}

TEST(FusedLstmValues, MatchComposedStep) {
  const char* names[] = {"x1", "x2", "h_tm1", "c_tm1", "Wx", "Wh", "b", "mask_x", "mask_h"};
  for (bool dropout : {false, true})
    for (unsigned B : {1u, 3u})
      for (bool h_batched : {true, false}) {
        SCOPED_TRACE(std::string(dropout ? "dropout" : "no dropout") + ", batch " + std::to_string(B) +
                     (h_batched ? "" : ", shared h_tm1"));
        const StepResult fused = run_step(true, dropout, B, h_batched);
        const StepResult composed = run_step(false, dropout, B, h_batched);
        ASSERT_EQ(fused.c.size(), composed.c.size());
        for (size_t k = 0; k < fused.c.size(); ++k) {
          EXPECT_NEAR(fused.c[k], composed.c[k], 1e-5f) << "c " << k;
          EXPECT_NEAR(fused.h[k], composed.h[k], 1e-5f) << "h " << k;
        }
        for (size_t a = 0; a < (dropout ? 9u : 7u); ++a)
          for (size_t k = 0; k < fused.grads[a].size(); ++k)
            EXPECT_NEAR(fused.grads[a][k], composed.grads[a][k], 1e-5f)
                << "gradient of " << names[a] << "[" << k << "]";
      }
}

TEST(FusedLstmValues, MatchVanillaLSTMBuilder) {
  const unsigned I = 4, H = 3;
  ParameterCollection model;
  VanillaLSTMBuilder builder(1, I, H, model);
  std::mt19937 rng(9);
  const std::vector<float> x1 = random_vector(I, rng), x2 = random_vector(I, rng);
  // non-zero bias, so that a wrong gate order would show
  for (auto& p : model.parameters_list())
    for (unsigned k = 0; k < p->dim.size(); ++k) p->values.v[k] = std::uniform_real_distribution<float>(-1, 1)(rng);
  ComputationGraph g;
  builder.new_graph(g);
  builder.start_new_sequence();
  Expression ex1 = input(g, Dim({I}), x1), ex2 = input(g, Dim({I}), x2);
  builder.add_input(ex1);
  Expression want = builder.add_input(ex2);
  const std::vector<Parameter> p = builder.get_parameters()[0];
  Expression Wx = parameter(g, p[0]), Wh = parameter(g, p[1]), b = parameter(g, p[2]);
  Expression h = zeros(g, Dim({H})), c = zeros(g, Dim({H}));
  for (const Expression& x : {ex1, ex2}) {
    Expression gates = vanilla_lstm_gates(x, h, Wx, Wh, b);
    c = vanilla_lstm_c(c, gates);
    h = vanilla_lstm_h(c, gates);
  }
  expect_close(h.value(), want.value(), 1e-5f, "h after two steps");
}

TEST(FusedLstmValues, WeightNoiseIsReproducibleAndCentred) {
  const unsigned I = 3, H = 2;
  std::mt19937 rng(4);
  const std::vector<float> xv = random_vector(I, rng), hv = random_vector(H, rng);
  const std::vector<float> Wxv = random_vector(4 * H * I, rng), Whv = random_vector(4 * H * H, rng);
  const std::vector<float> bv = random_vector(4 * H, rng);
  auto run = [&](float stddev) {
    ComputationGraph g;
    Expression y = vanilla_lstm_gates(input(g, Dim({I}), xv), input(g, Dim({H}), hv), input(g, Dim({4 * H, I}), Wxv),
                                      input(g, Dim({4 * H, H}), Whv), input(g, Dim({4 * H}), bv), stddev);
    return as_vector(y.value());
  };
  const std::vector<float> clean = run(0.f);
  reset_rng(17);
  const std::vector<float> noisy = run(0.5f);
  reset_rng(17);
  EXPECT_EQ(run(0.5f), noisy);
  float diff = 0.f;
  for (size_t k = 0; k < clean.size(); ++k) diff += std::fabs(noisy[k] - clean[k]);
  EXPECT_GT(diff, 1e-3f);
  // Averaged over many draws the pre-activations are unbiased; the gates move little in total.
  std::vector<double> mean(clean.size(), 0.0);
  const int draws = 400;
  for (int t = 0; t < draws; ++t) {
    const std::vector<float> v = run(0.05f);
    for (size_t k = 0; k < v.size(); ++k) mean[k] += v[k] / draws;
  }
  for (size_t k = 0; k < clean.size(); ++k) EXPECT_NEAR(mean[k], clean[k], 0.01) << "gate " << k;
}

TEST(FusedLstmValues, BadArgumentsNameTheOp) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), {1, 2, 3}), h = input(g, Dim({2}), {1, 2});
  Expression Wx = input(g, Dim({8, 3}), std::vector<float>(24, 0.f));
  Expression Wh = input(g, Dim({8, 2}), std::vector<float>(16, 0.f));
  Expression b = input(g, Dim({8}), std::vector<float>(8, 0.f));
  try {
    vanilla_lstm_gates(h, h, Wx, Wh, b);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("vanilla_lstm_gates"), std::string::npos) << e.what();
  }
  EXPECT_THROW(vanilla_lstm_gates_concat({}, h, Wx, Wh, b), std::invalid_argument);
  EXPECT_THROW(vanilla_lstm_gates(x, h, Wx, Wh, b, -1.f), std::invalid_argument);
  EXPECT_THROW(vanilla_lstm_c(h, x), std::invalid_argument);
}

}  // namespace
}  // namespace dynet
