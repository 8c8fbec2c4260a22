// e^x for the kernels that loop over many exponentials (LSTM gates, softmax columns), written so that
// GCC vectorizes those loops: libm's expf is a call it cannot vectorize without -ffast-math.
#pragma once

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

}  // namespace dynet::cpu
