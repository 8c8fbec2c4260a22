// DyNet's elementwise functors (dynet/functors.h): small function objects over floats, each
// computing what DyNet's did (e.g. FHuberForward is DyNet's unhalved a² / c(2|a| - c), which its
// huber_distance op does not use). Our ops do not use them; they are here for code that does.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#define DYNET_DEVICE_FUNC
#define DYNET_DEVICE_MIN std::numeric_limits<float>::min()

namespace dynet {

struct FHuberForward {
  explicit FHuberForward(float c) : c(c) {}
  float operator()(float x) const { return std::fabs(x) < c ? x * x : c * (2 * std::fabs(x) - c); }
  const float c;
};
struct FHuberBackward {
  FHuberBackward(float c, float dEdf) : c(c), d(dEdf) {}
  float operator()(float x) const { return 2 * d * (std::fabs(x) < c ? x : c * ((0.f < x) - (x < 0.f))); }
  const float c, d;
};
struct FL1Backward {
  explicit FL1Backward(float d) : d(d) {}
  float operator()(float x) const { return ((0.f < x) - (x < 0.f)) * d; }
  const float d;
};
struct FProduct {
  float operator()(float a, float b) const { return a * b; }
};
struct FQuotient {
  float operator()(float a, float b) const { return a / b; }
};
struct FConstantPlus {
  explicit FConstantPlus(float c) : c(c) {}
  float operator()(float x) const { return c + x; }
  float c;
};
struct FConstantMinus {
  explicit FConstantMinus(float c) : c(c) {}
  float operator()(float x) const { return c - x; }
  float c;
};
struct FNegate {
  float operator()(float x) const { return -x; }
};
struct FErf {
  float operator()(float x) const { return std::erf(x); }
};
struct FTanh {
  float operator()(float x) const { return std::tanh(x); }
};
struct FLog {
  float operator()(float x) const { return std::log(x); }
};
struct FMaxBackwardInv {
  float operator()(float u, float d) const { return (1.f - u) * d; }
};
struct FSqrtBackward {
  float operator()(float t, float d) const { return d / (2.f * t); }
};
struct FErfBackward {
  float operator()(float x, float d) const { return 2.f / std::sqrt(3.14159265358979f) * std::exp(-x * x) * d; }
};
struct FTanhBackward {
  float operator()(float t, float d) const { return (1.f - t * t) * d; }
};
struct FLogBackward {
  float operator()(float t, float d) const { return d / t; }
};
struct FPairwiseRankLoss {
  explicit FPairwiseRankLoss(float m) : margin(m) {}
  float operator()(float a, float b) const { return std::max(0.f, margin - a + b); }
  float margin;
};
struct FRectifyBackward {
  float operator()(float t, float d) const { return t != 0.f ? d : 0.f; }
};
struct FRectifyNegateBackward {
  float operator()(float t, float d) const { return t != 0.f ? -d : 0.f; }
};
struct FSoftmaxNormalize {
  explicit FSoftmaxNormalize(float logz) : logz(logz) {}
  float operator()(float x) const { return std::exp(x - logz); }
  float logz;
};
struct FSoftmaxBackward {
  explicit FSoftmaxBackward(float off_diag_sum) : off_diag_sum(off_diag_sum) {}
  float operator()(float t, float d) const { return (off_diag_sum + d) * t; }
  float off_diag_sum;
};
struct FNegLogSoftmaxBackward {
  FNegLogSoftmaxBackward(float lz, float err) : logz(lz), d(err) {}
  float operator()(float t) const { return std::exp(t - logz) * d; }
  float logz, d;
};
struct FPtrNegLogSoftmaxBackward {
  FPtrNegLogSoftmaxBackward(const float* lz, const float* err) : logz(lz), d(err) {}
  float operator()(float t) const { return std::exp(t - *logz) * *d; }
  const float* logz;
  const float* d;
};
struct FLogSoftmaxNormalize {
  explicit FLogSoftmaxNormalize(float logz) : logz(logz) {}
  float operator()(float x) const { return x - logz; }
  float logz;
};
struct FWeightedError {
  float operator()(float t, float d) const { return std::exp(t) * d / std::exp(t); }
};
struct FLogSoftmaxBackward {
  explicit FLogSoftmaxBackward(float off_diag_sum) : off_diag_sum(off_diag_sum) {}
  float operator()(float t, float d) const { return off_diag_sum * std::exp(t) + d; }
  float off_diag_sum;
};
struct FRectify {
  float operator()(float x) const { return x > 0.f ? x : 0.f; }
};
struct FSoftSign {
  float operator()(float x) const { return x / (1.f + std::fabs(x)); }
};
struct FSoftSignBackward {
  float operator()(float t, float d) const { return (1.f - std::fabs(t)) * (1.f - std::fabs(t)) * d; }
};
struct FLogisticSigmoid {
  float operator()(float x) const { return 1.f / (1.f + std::exp(-x)); }
};
struct FLogisticSigmoidBackward {
  float operator()(float t, float d) const { return (1.f - t) * t * d; }
};
struct FSqDist {
  float operator()(float a, float b) const { return (a - b) * (a - b); }
};
struct FEuclideanBackward {
  FEuclideanBackward(int i, const float* s) : i(i), scalar(s) {}
  float operator()(float a, float b) const { return (i == 0 ? 2.f : -2.f) * *scalar * (a - b); }
  int i;
  const float* scalar;
};
struct FL2SGDUpdate {
  FL2SGDUpdate(float l, float s) : lambda(l), scale(-s) {}
  float operator()(float x, float g) const { return scale * g - x * lambda; }
  float lambda, scale;
};
// -[y ln x + (1-y) ln(1-x)], with x at 0 (or 1) where the target wants the other side costing
// -ln(FLT_MIN) (DyNet's values).
struct FBinaryLogLoss {
  float operator()(float x, float x_true) const {
    const float big = -std::log(DYNET_DEVICE_MIN);
    if (x_true == 1.f) return x == 0.f ? big : -std::log(x);
    if (x_true == 0.f) return x == 1.f ? big : -std::log1p(-x);
    if (x == 0.f || x == 1.f) return big;
    return -(x_true * std::log(x) + (1.f - x_true) * std::log1p(-x));
  }
};
struct FBinaryLogLossBackward {
  explicit FBinaryLogLossBackward(float d) : d(d) {}
  float operator()(float x, float x_true) const {
    if (x == x_true) return 0.f;
    const float xc = x == 0.f ? DYNET_DEVICE_MIN : (x == 1.f ? 0.9999999f : x);
    if (x_true == 1.f) return d * -1.f / xc;
    if (x_true == 0.f) return d / (1.f - xc);
    return d * ((1.f - x_true) / (1.f - xc) - x_true / xc);
  }
  float d;
};

}  // namespace dynet
