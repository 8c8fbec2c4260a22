#include "kernels/cpu/lstm.h"

#include "kernels/cpu/clones.h"
#include "kernels/cpu/exp.h"

namespace dynet::cpu {

namespace {

inline float logistic(float x) { return logistic_clamped(x); }
inline float tanh_(float x) { return tanh_clamped(x); }

}  // namespace

DYNET_CLONES void lstm_activate_gates(float* gates, const float* bias, long H, long B) {
  for (long b = 0; b < B; ++b) {
    float* col = gates + b * 4 * H;
    for (long k = 0; k < H; ++k) col[k] = logistic(col[k] + bias[k]);
    for (long k = H; k < 2 * H; ++k) col[k] = logistic(col[k] + (bias[k] + 1.f));
    for (long k = 2 * H; k < 3 * H; ++k) col[k] = logistic(col[k] + bias[k]);
    for (long k = 3 * H; k < 4 * H; ++k) col[k] = tanh_(col[k] + bias[k]);
  }
}

DYNET_CLONES void lstm_gates_grad(const float* y, const float* dy, float* d, long H, long B) {
  for (long b = 0; b < B; ++b) {
    const long o = b * 4 * H;
    for (long k = 0; k < 3 * H; ++k) d[o + k] = dy[o + k] * y[o + k] * (1.f - y[o + k]);
    for (int k = 3 * H; k < 4 * H; ++k) d[o + k] = dy[o + k] * (1.f - y[o + k] * y[o + k]);
  }
}

DYNET_CLONES void lstm_c_forward(const float* gates, const float* c_prev, float* c, long H) {
  const float *i = gates, *f = gates + H, *g = gates + 3 * H;
  for (long k = 0; k < H; ++k) c[k] = i[k] * g[k] + f[k] * c_prev[k];
}

// The backward kernels add to their gradient, or write it when `assign` (its first contribution).
DYNET_CLONES void lstm_c_backward_c(const float* gates, const float* dc, float* dc_prev, long H, bool assign) {
  const float* f = gates + H;
  if (assign)
    for (long k = 0; k < H; ++k) dc_prev[k] = dc[k] * f[k];
  else
    for (long k = 0; k < H; ++k) dc_prev[k] += dc[k] * f[k];
}

// __restrict: without it GCC keeps this loop scalar (its three stores might feed its loads).
DYNET_CLONES void lstm_c_backward_gates(const float* __restrict gates, const float* __restrict c_prev,
                                        const float* __restrict dc, float* __restrict dgates, long H, bool assign) {
  const float *__restrict i = gates, *__restrict g = gates + 3 * H;
  float *__restrict di = dgates, *__restrict df = dgates + H, *__restrict dg = dgates + 3 * H;
  if (assign) {
    for (long k = 0; k < H; ++k) {
      di[k] = dc[k] * g[k];
      df[k] = dc[k] * c_prev[k];
      dg[k] = dc[k] * i[k];
    }
    for (long k = 0; k < H; ++k) dgates[2 * H + k] = 0.f;
    return;
  }
  for (long k = 0; k < H; ++k) {
    di[k] += dc[k] * g[k];
    df[k] += dc[k] * c_prev[k];
    dg[k] += dc[k] * i[k];
  }
}

DYNET_CLONES void lstm_h_forward(const float* gates, const float* c, float* tanh_c, float* h, long H) {
  const float* o = gates + 2 * H;
  for (long k = 0; k < H; ++k) {
    tanh_c[k] = tanh_(c[k]);
    h[k] = o[k] * tanh_c[k];
  }
}

DYNET_CLONES void lstm_h_backward_c(const float* gates, const float* tanh_c, const float* dh, float* dc, long H,
                                    bool assign) {
  const float* o = gates + 2 * H;
  if (assign)
    for (long k = 0; k < H; ++k) dc[k] = dh[k] * o[k] * (1.f - tanh_c[k] * tanh_c[k]);
  else
    for (long k = 0; k < H; ++k) dc[k] += dh[k] * o[k] * (1.f - tanh_c[k] * tanh_c[k]);
}

DYNET_CLONES void lstm_h_backward_gates(const float* tanh_c, const float* dh, float* dgates, long H, bool assign) {
  float* dout = dgates + 2 * H;
  if (assign) {
    for (long k = 0; k < 2 * H; ++k) dgates[k] = 0.f;
    for (long k = 0; k < H; ++k) dout[k] = dh[k] * tanh_c[k];
    for (long k = 3 * H; k < 4 * H; ++k) dgates[k] = 0.f;
    return;
  }
  for (long k = 0; k < H; ++k) dout[k] += dh[k] * tanh_c[k];
}

}  // namespace dynet::cpu
