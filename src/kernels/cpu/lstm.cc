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

// One column of lstm_gates_grad; with kSum also s (+)= d (= for the first column).
template <bool kSum, bool kFirst>
inline void gates_grad_column(const float* __restrict y, const float* __restrict dy, float* __restrict d,
                              float* __restrict s, long H) {
  for (long k = 0; k < 3 * H; ++k) {
    const float v = dy[k] * y[k] * (1.f - y[k]);
    d[k] = v;
    if constexpr (kSum) s[k] = kFirst ? v : s[k] + v;
  }
  for (long k = 3 * H; k < 4 * H; ++k) {
    const float v = dy[k] * (1.f - y[k] * y[k]);
    d[k] = v;
    if constexpr (kSum) s[k] = kFirst ? v : s[k] + v;
  }
}

DYNET_CLONES void lstm_gates_grad(const float* y, const float* dy, float* d, long H, long B, float* col_sum) {
  for (long b = 0; b < B; ++b) {
    const long o = b * 4 * H;
    if (!col_sum)
      gates_grad_column<false, false>(y + o, dy + o, d + o, nullptr, H);
    else if (b == 0)
      gates_grad_column<true, true>(y + o, dy + o, d + o, col_sum, H);
    else
      gates_grad_column<true, false>(y + o, dy + o, d + o, col_sum, H);
  }
}

DYNET_CLONES void lstm_bias_grad(const float* d, long H, long B, float* db, bool assign) {
  const long H4 = 4 * H;
  if (assign)
    for (long k = 0; k < H4; ++k) db[k] = 0.f;
  for (long b = 0; b < B; ++b, d += H4)
    for (long k = 0; k < H4; ++k) db[k] += d[k];
}

DYNET_CLONES void lstm_copy_rows(const float* src, long ls, float* dst, long rows, long B, bool assign) {
  for (long b = 0; b < B; ++b, src += ls, dst += rows)
    if (assign)
      for (long k = 0; k < rows; ++k) dst[k] = src[k];
    else
      for (long k = 0; k < rows; ++k) dst[k] += src[k];
}

DYNET_CLONES void lstm_c_forward(const float* gates, long gs, const float* c_prev, long cs, float* c, long H, long B) {
  for (long b = 0; b < B; ++b, gates += gs, c_prev += cs, c += H) {
    const float *i = gates, *f = gates + H, *g = gates + 3 * H;
    for (long k = 0; k < H; ++k) c[k] = i[k] * g[k] + f[k] * c_prev[k];
  }
}

// The backward kernels add to their gradient, or write it when `assign` (its first contribution); an
// unbatched gradient (stride 0) is written by column 0 and added to by the others.
inline bool writes_column(bool assign, long b, long stride) { return assign && (b == 0 || stride); }

DYNET_CLONES void lstm_c_backward_c(const float* gates, long gs, const float* dc, float* dc_prev, long ps, long H,
                                    long B, bool assign) {
  for (long b = 0; b < B; ++b, gates += gs, dc += H, dc_prev += ps) {
    const float* f = gates + H;
    if (writes_column(assign, b, ps))
      for (long k = 0; k < H; ++k) dc_prev[k] = dc[k] * f[k];
    else
      for (long k = 0; k < H; ++k) dc_prev[k] += dc[k] * f[k];
  }
}

// __restrict: without it GCC keeps these loops scalar (their three stores might feed their loads).
template <bool kAssign>
inline void c_backward_gates_column(const float* __restrict i, const float* __restrict g, const float* __restrict cp,
                                    const float* __restrict d, float* __restrict di, float* __restrict df,
                                    float* __restrict dg, long H) {
  for (long k = 0; k < H; ++k) {
    if constexpr (kAssign) {
      di[k] = d[k] * g[k];
      df[k] = d[k] * cp[k];
      dg[k] = d[k] * i[k];
    } else {
      di[k] += d[k] * g[k];
      df[k] += d[k] * cp[k];
      dg[k] += d[k] * i[k];
    }
  }
}

DYNET_CLONES void lstm_c_backward_gates(const float* gates, long gs, const float* c_prev, long cs, const float* dc,
                                        float* dgates, long ds, long H, long B, bool assign, bool own_blocks) {
  for (long b = 0; b < B; ++b, gates += gs, c_prev += cs, dc += H, dgates += ds) {
    if (writes_column(assign, b, ds)) {
      c_backward_gates_column<true>(gates, gates + 3 * H, c_prev, dc, dgates, dgates + H, dgates + 3 * H, H);
      if (!own_blocks)
        for (long k = 0; k < H; ++k) dgates[2 * H + k] = 0.f;
    } else {
      c_backward_gates_column<false>(gates, gates + 3 * H, c_prev, dc, dgates, dgates + H, dgates + 3 * H, H);
    }
  }
}

DYNET_CLONES void lstm_h_forward(const float* gates, long gs, const float* c, long cs, float* tanh_c, float* h, long H,
                                 long B) {
  for (long b = 0; b < B; ++b, gates += gs, c += cs, tanh_c += H, h += H) {
    const float* o = gates + 2 * H;
    for (long k = 0; k < H; ++k) {
      tanh_c[k] = tanh_(c[k]);
      h[k] = o[k] * tanh_c[k];
    }
  }
}

DYNET_CLONES void lstm_h_backward_c(const float* gates, long gs, const float* tanh_c, const float* dh, float* dc,
                                    long ds, long H, long B, bool assign) {
  for (long b = 0; b < B; ++b, gates += gs, tanh_c += H, dh += H, dc += ds) {
    const float* o = gates + 2 * H;
    if (writes_column(assign, b, ds))
      for (long k = 0; k < H; ++k) dc[k] = dh[k] * o[k] * (1.f - tanh_c[k] * tanh_c[k]);
    else
      for (long k = 0; k < H; ++k) dc[k] += dh[k] * o[k] * (1.f - tanh_c[k] * tanh_c[k]);
  }
}

DYNET_CLONES void lstm_h_backward_gates(const float* tanh_c, const float* dh, float* dgates, long ds, long H, long B,
                                        bool assign, bool own_blocks) {
  for (long b = 0; b < B; ++b, tanh_c += H, dh += H, dgates += ds) {
    float* dout = dgates + 2 * H;
    if (writes_column(assign, b, ds)) {
      for (long k = 0; k < H; ++k) dout[k] = dh[k] * tanh_c[k];
      if (own_blocks) continue;
      for (long k = 0; k < 2 * H; ++k) dgates[k] = 0.f;
      for (long k = 3 * H; k < 4 * H; ++k) dgates[k] = 0.f;
    } else {
      for (long k = 0; k < H; ++k) dout[k] += dh[k] * tanh_c[k];
    }
  }
}

}  // namespace dynet::cpu
