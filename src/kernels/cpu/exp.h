// e^x, σ and tanh for the kernels that loop over many of them (LSTM gates, softmax columns, the logistic
// and tanh ops), written so that GCC vectorizes those loops: libm's expf is a call it cannot vectorize
// without -ffast-math.
#pragma once

// With GCC's default trapping math the clamps and selects below stay branches that only AVX-512's masked
// instructions if-convert: AVX2 and baseline loops over these functions ran scalar, 3-5x slower (the fused
// elementwise regions of a Tree-LSTM step: a third of its time on Zen 3 until exec/fusion.cc got the
// flag). A file that loops over them is compiled with -fno-trapping-math (CMakeLists.txt); one that only
// calls them one value at a time (tests) says so with DYNET_EXP_SCALAR_CALLS.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__NO_TRAPPING_MATH__) && !defined(DYNET_EXP_SCALAR_CALLS)
#error "kernels/cpu/exp.h: compile this file with -fno-trapping-math (see CMakeLists.txt)"
#endif

#include <bit>
#include <cstdint>

namespace dynet::cpu {

// e^x for x <= 88 (clamped above; 0 below -87, where e^x is under 1.7e-38, so that masked-out
// scores of -inf get exactly zero probability): x = n·ln 2 + r with |r| <= ln 2 / 2 (ln 2 split in two
// so that n·ln2_hi is exact), e^r by its Taylor series to r^7 (truncation below 1e-8 relative), 2^n
// from the exponent bits. Within 2 ulp of the exact value.
inline float exp_clamped(float x) {
  const bool tiny = x < -87.f;
  x = x < -87.f ? -87.f : (x > 88.f ? 88.f : x);  // NaN stays NaN (and so does the result)
  const float round = 12582912.f;  // 1.5 · 2^23: adding and subtracting it rounds to an integer
  float n = (x * 1.44269504088896341f + round) - round;
  const float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
  n = n == n ? n : 0.f;  // the integer conversion below needs a number
  float p = 1.f / 5040.f;
  p = p * r + 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  return tiny ? 0.f : p * std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23);
}

// σ(x) = 1 / (1 + e^-x) through exp_clamped.
inline float logistic_clamped(float x) { return 1.f / (1.f + exp_clamped(-x)); }

// tanh(x) = 1 - 2 / (e^{2x} + 1) loses relative precision near 0, where the odd Taylor series to x^9
// is used instead (|x| < 0.25: truncation below 1e-8 relative).
inline float tanh_clamped(float x) {
  const float a = x < 0.f ? -x : x;
  const float big = 1.f - 2.f / (exp_clamped(2.f * a) + 1.f);
  const float x2 = x * x;
  float s = 62.f / 2835.f;
  s = s * x2 - 17.f / 315.f;
  s = s * x2 + 2.f / 15.f;
  s = s * x2 - 1.f / 3.f;
  const float small = a + a * x2 * s;
  const float t = a < 0.25f ? small : big;
  return x < 0.f ? -t : t;
}

}  // namespace dynet::cpu
