// What one pass over an LSTM cell's backward would save: the five kernels the executors run today per cell
// batch (vanilla_lstm_h's two gradients, vanilla_lstm_c's two, then the gates node's σ'/tanh' pass with the
// bias's column sums) against one fused pass computing the same dpre, dc_prev and bias sums, over a step's
// worth of cell batches whose forward values are out of the caches (the bilstm bench task: 4 recurrences x
// 40 steps, hidden 200, 64 columns). The fused pass is a prototype for AVX-512 only (skipped elsewhere).
// Prints `lstm_cell_backward_{five_kernels,fused}=<ms> ms` per step (thread CPU time, medians of 7) and the
// largest relative difference between the two results.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "cpu_timer.h"
#include "kernels/cpu/lstm.h"

namespace {

constexpr long kH = 200, kB = 64, kBatches = 160;

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx2,fma")
// One column: dc = dc_in + dh ⊙ o ⊙ (1 - tanh_c²), dc_prev = dc ⊙ f, dpre = [dc ⊙ g ⊙ σ'(i); dc ⊙ c_prev ⊙ σ'(f);
// dh ⊙ tanh_c ⊙ σ'(o); dc ⊙ i ⊙ tanh'(g)] with σ' = y(1 - y), tanh' = 1 - y² of the activated gates y; bias (+)= dpre.
// One pointer per gate block: indexed as y[3 * H + k] with a runtime H (as in the library), GCC 12 left the loop
// scalar ("complicated access pattern").
struct Blocks {
  float *i, *f, *o, *g;
};
Blocks blocks(float* p, long H) { return {p, p + H, p + 2 * H, p + 3 * H}; }
template <bool kFirst>
inline void fused_column(const float* __restrict yi, const float* __restrict yf, const float* __restrict yo,
                         const float* __restrict yg, const float* __restrict c_prev, const float* __restrict tanh_c,
                         const float* __restrict dh, const float* __restrict dc_in, float* __restrict pi,
                         float* __restrict pf, float* __restrict po, float* __restrict pg, float* __restrict dc_prev,
                         float* __restrict bi, float* __restrict bf, float* __restrict bo, float* __restrict bg,
                         long H) {
  for (long k = 0; k < H; ++k) {
    const float i = yi[k], f = yf[k], o = yo[k], g = yg[k], t = tanh_c[k];
    const float dc = dc_in[k] + dh[k] * o * (1.f - t * t);
    dc_prev[k] = dc * f;
    const float di = dc * g * i * (1.f - i), df = dc * c_prev[k] * f * (1.f - f), d_o = dh[k] * t * o * (1.f - o),
                dg = dc * i * (1.f - g * g);
    pi[k] = di, pf[k] = df, po[k] = d_o, pg[k] = dg;
    if constexpr (kFirst)
      bi[k] = di, bf[k] = df, bo[k] = d_o, bg[k] = dg;
    else
      bi[k] += di, bf[k] += df, bo[k] += d_o, bg[k] += dg;
  }
}
void fused(const float* y, const float* c_prev, const float* tanh_c, const float* dh, const float* dc_in, float* dpre,
           float* dc_prev, float* bias, long H, long B) {
  const Blocks s = blocks(bias, H);
  for (long b = 0; b < B; ++b) {
    const float* yb = y + b * 4 * H;
    const Blocks p = blocks(dpre + b * 4 * H, H);
    const long o = b * H;
    if (b == 0)
      fused_column<true>(yb, yb + H, yb + 2 * H, yb + 3 * H, c_prev, tanh_c, dh, dc_in, p.i, p.f, p.o, p.g, dc_prev,
                         s.i, s.f, s.o, s.g, H);
    else
      fused_column<false>(yb, yb + H, yb + 2 * H, yb + 3 * H, c_prev + o, tanh_c + o, dh + o, dc_in + o, p.i, p.f, p.o,
                          p.g, dc_prev + o, s.i, s.f, s.o, s.g, H);
  }
}
#pragma GCC pop_options
#endif

struct Step {
  std::vector<float> gates, c_prev, tanh_c, dh, dc, dgates, dc_prev, dpre, bias;
  Step()
      : gates(kBatches * 4 * kH * kB), c_prev(kBatches * kH * kB), tanh_c(c_prev.size()), dh(c_prev.size()),
        dc(c_prev.size()), dgates(gates.size()), dc_prev(c_prev.size()), dpre(4 * kH * kB), bias(4 * kH) {
    for (size_t j = 0; j < gates.size(); ++j) gates[j] = 0.5f + 0.45f * std::sin(0.01f * float(j));
    for (size_t j = 0; j < c_prev.size(); ++j) {
      c_prev[j] = std::sin(0.3f * float(j));
      tanh_c[j] = std::tanh(std::cos(0.2f * float(j)));
      dh[j] = 0.01f * std::cos(0.7f * float(j));
      dc[j] = 0.02f * std::sin(0.11f * float(j));
    }
  }
  // The cell batches in backward order; dpre and the bias sums of the last one (the first cell) are kept.
  void five_kernels() {
    using namespace dynet::cpu;
    const long G = 4 * kH * kB, S = kH * kB;
    for (long n = kBatches; n-- > 0;) {
      const float* y = &gates[n * G];
      float* dg = &dgates[n * G];
      lstm_h_backward_c(y, 4 * kH, &tanh_c[n * S], &dh[n * S], &dc[n * S], kH, kH, kB, false);
      // Each writes its own blocks of the gate gradients (OpDef::partial_gradient), as the executors have them.
      lstm_h_backward_gates(&tanh_c[n * S], &dh[n * S], dg, 4 * kH, kH, kB, true, true);
      lstm_c_backward_c(y, 4 * kH, &dc[n * S], &dc_prev[n * S], kH, kH, kB, true);
      lstm_c_backward_gates(y, 4 * kH, &c_prev[n * S], kH, &dc[n * S], dg, 4 * kH, kH, kB, true, true);
      lstm_gates_grad(y, dg, dpre.data(), kH, kB, bias.data());
    }
  }
  void fused_pass() {
#if defined(__x86_64__)
    const long G = 4 * kH * kB, S = kH * kB;
    for (long n = kBatches; n-- > 0;)
      fused(&gates[n * G], &c_prev[n * S], &tanh_c[n * S], &dh[n * S], &dc[n * S], dpre.data(), &dc_prev[n * S],
            bias.data(), kH, kB);
#endif
  }
};

// CPU milliseconds of f, median of 7, each run after 64 MB of other reads (the forward values are cold).
template <class F>
double cold_ms(F f) {
  static std::vector<float> flush(size_t(16) << 20, 1.f);
  std::vector<double> t;
  volatile float sink = 0;
  for (int r = 0; r < 7; ++r) {
    float s = 0;
    for (size_t j = 0; j < flush.size(); j += 16) s += flush[j];
    sink = sink + s;
    const double a = bench::cpu_ns();
    f();
    t.push_back((bench::cpu_ns() - a) / 1e6);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("lstm_cell_backward: skipped (the fused prototype needs AVX-512)\n");
    return 0;
  }
  // The same results first (one pass each from the same inputs; the five kernels add to dc in place).
  Step a, b;
  a.five_kernels();
  b.fused_pass();
  double worst = 0;
  auto compare = [&worst](const std::vector<float>& x, const std::vector<float>& y) {
    for (size_t j = 0; j < x.size(); ++j)
      worst = std::max(worst, double(std::abs(x[j] - y[j])) / (std::abs(double(x[j])) + 1e-6));
  };
  compare(a.dpre, b.dpre);
  compare(a.dc_prev, b.dc_prev);
  compare(a.bias, b.bias);
  const double five = cold_ms([&] { a.five_kernels(); }), one = cold_ms([&] { a.fused_pass(); });
  std::printf("lstm_cell_backward_five_kernels=%.2f ms\nlstm_cell_backward_fused=%.2f ms\n", five, one);
  std::printf("lstm_cell_backward_max_relative_difference=%.2g\n", worst);
  std::printf("(per step of %ld cell batches, hidden %ld, %ld columns)\n", kBatches, kH, kB);
  return worst < 1e-4 ? 0 : 1;
#else
  std::printf("lstm_cell_backward: skipped (x86-64 only)\n");
  return 0;
#endif
}
