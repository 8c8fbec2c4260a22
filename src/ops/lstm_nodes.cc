// Fused LSTM nodes (DyNet's CompactVanillaLSTMBuilder building blocks):
//   vanilla_lstm_gates[_dropout][_concat](x_t, h_tm1, Wx, Wh, b[, mask_x, mask_h], weightnoise_std)
//     pre = Wx·(x ⊙ mask_x) + Wh·(h ⊙ mask_h) + b, gates = [σ(pre_i); σ(pre_f + 1); σ(pre_o); tanh(pre_g)]
//   vanilla_lstm_c(c_tm1, gates) = i ⊙ g + f ⊙ c_tm1
//   vanilla_lstm_h(c_t, gates)   = o ⊙ tanh(c_t)
// Gate blocks are stacked i, f, o, g (each H rows); the +1 on the forget gate is DyNet's fixed forget
// bias inside this node. With weightnoise_std > 0, Gaussian noise is added to Wx, Wh and b for this
// step; only the seed is kept (in aux), and backward regenerates the same noise.
//
// The gates node keeps its pre-activation gradient in aux (written by each backward call), so the
// weight gradients of a single-column step can be deferred into the executor's rank-1 batching.
#include "kernels/cpu/low_rank.h"  // (both passes: the device backward defers weight gradients too)
#include "kernels/device/philox.h"
#include "kernels/device/prims.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#ifndef DYNET_CUDA_PASS
#include "core/mem.h"
#include "dynet/globals.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/lstm.h"
#include "ops/api.h"
#include "ops/common.h"
#endif

namespace dynet {

#ifndef DYNET_CUDA_PASS
namespace {
using ops::Xs;

bool is_vector(const Dim& d) { return d.batch_size() == d.rows(); }
}  // namespace
#endif

// ---------------------------------------------------------------------------------------------
// vanilla_lstm_gates[_dropout][_concat]: the gates node (its math is in the header above).
// The weight noise of a gates node's step: weight k (Wx, Wh, b) gets N(0, stddev²) values under the key
// {seed, k}, on the node's device; the seed is one draw from the thread's engine, kept in aux.
template <class P>
void lstm_weight_noise(Device* dev, float* out, size_t n, uint32_t seed, uint32_t k, float stddev) {
  rng::run_fill<P>(dev, nullptr, rng::Key{seed, k}, out, n, 1, rng::Normal{0.f, stddev});
}

namespace {
constexpr const char* kGates = "vanilla_lstm_gates";

// Argument order of the gates node: the shared weights first (so the batch rule is a fixed mask), then
// h_tm1, the optional masks, and the pieces of x_t.
enum GateArg : unsigned { kWx = 0, kWh = 1, kBias = 2, kH = 3, kMaskX = 4, kMaskH = 5 };
struct GatesAttr {
  uint32_t num_x;
  uint32_t dropout;
  float weightnoise_std;
  unsigned first_x() const { return dropout ? 6 : 4; }
};

// Sizes of one gates node, from its argument dims.
struct GatesGeom {
  size_t H, I, B;
  bool gather_x, gather_h;              // x_t (h_tm1) must be copied: concatenated, masked or broadcast over the batch
  size_t dpre_at() const { return 1; }  // aux[0] holds the noise seed
  size_t x_at() const { return dpre_at() + size_t(4) * H * B; }
  size_t h_at() const { return x_at() + (gather_x ? size_t(I) * B : 0); }
  size_t aux_size() const { return h_at() + (gather_h ? size_t(H) * B : 0); }
};
// dim_of(k): the Dim of argument k (from the graph in shape rules, from the tensors in kernels).
template <class DimOf>
GatesGeom gates_geom(DimOf dim_of, const GatesAttr& at, unsigned B) {
  GatesGeom g{dim_of(kH).rows(), dim_of(kWx).cols(), B, false, false};
  g.gather_x = at.num_x > 1 || at.dropout || dim_of(at.first_x()).bd != B;
  g.gather_h = at.dropout || dim_of(kH).bd != B;
  return g;
}
GatesGeom gates_geom(const Tensor* xs, const GatesAttr& at, unsigned B) {
  return gates_geom([xs](unsigned k) -> const Dim& { return xs[k].d; }, at, B);
}

struct Weights {
  const float *Wx, *Wh, *b;
};

// ---- device kernels of the fused nodes ----
// dst {I, B} ← x_t's pieces, masked unless !use_mask (as gather_x).
template <class P>
void gather_x_dev(Device* dev, const Tensor* xs, const GatesAttr& at, const GatesGeom& g, bool use_mask, float* dst) {
  const size_t I = g.I;
  const float* mask = at.dropout && use_mask ? xs[kMaskX].v : nullptr;
  const size_t ms = at.dropout && xs[kMaskX].d.bd != 1 ? I : 0;
  size_t off = 0;
  for (unsigned k = 0; k < at.num_x; ++k) {
    const Tensor& x = xs[at.first_x() + k];
    const size_t rows = x.d.rows(), xs_ = x.d.bd == 1 ? 0 : rows, o = off;
    const float* xv = x.v;
    P::for_each(dev, g.B * rows, [=] DYNET_LAMBDA(size_t j) {
      const size_t b = j / rows, r = j % rows;
      dst[b * I + o + r] = xv[b * xs_ + r] * (mask ? mask[b * ms + o + r] : 1.f);
    });
    off += rows;
  }
}
template <class P>
void gather_h_dev(Device* dev, const Tensor* xs, const GatesAttr& at, const GatesGeom& g, float* dst) {
  const size_t H = g.H, hs = xs[kH].d.bd == 1 ? 0 : H;
  const float* h = xs[kH].v;
  const float* mask = at.dropout ? xs[kMaskH].v : nullptr;
  const size_t ms = at.dropout && xs[kMaskH].d.bd != 1 ? H : 0;
  P::for_each(dev, g.B * H, [=] DYNET_LAMBDA(size_t j) {
    const size_t b = j / H, r = j % H;
    dst[j] = h[b * hs + r] * (mask ? mask[b * ms + r] : 1.f);
  });
}
// Wx, Wh, b as this step uses them: the parameters, or noisy copies in scratch memory.
template <class P>
Weights weights_dev(Device* dev, const Tensor* xs, const GatesAttr& at, uint32_t seed, MemPool& scratch) {
  if (!(at.weightnoise_std > 0.f)) return {xs[kWx].v, xs[kWh].v, xs[kBias].v};
  float* noisy[3];
  for (unsigned k = 0; k < 3; ++k) {
    const size_t n = xs[k].d.size();
    noisy[k] = scratch.allocate_floats(n);
    lstm_weight_noise<P>(dev, noisy[k], n, seed, k, at.weightnoise_std);
    dev->axpy(1.f, xs[k].v, noisy[k], n);
  }
  return {noisy[0], noisy[1], noisy[2]};
}

template <class P>
void gates_dev_fwd(const ForwardArgs& a) {
  const GatesAttr& at = a.attr.as<GatesAttr>();
  const GatesGeom g = gates_geom(a.xs, at, a.fx.d.bd);
  Device* dev = a.fx.device;
  const size_t B = g.B, H = g.H, H4 = 4 * H;
  uint32_t seed = 0;
  if (at.weightnoise_std > 0.f) {  // (kept for the backward, which draws the same noise)
    seed = static_cast<uint32_t>(random_engine()());
    dev->copy_from_host(a.aux, &seed, sizeof seed);
  }
  if (g.gather_x) gather_x_dev<P>(dev, a.xs, at, g, true, a.aux + g.x_at());
  if (g.gather_h) gather_h_dev<P>(dev, a.xs, at, g, a.aux + g.h_at());
  const float* xin = g.gather_x ? a.aux + g.x_at() : a.xs[at.first_x()].v;
  const float* hin = g.gather_h ? a.aux + g.h_at() : a.xs[kH].v;
  const Weights w = weights_dev<P>(dev, a.xs, at, seed, a.scratch);
  float* pre = a.fx.v;
  const float* bias = w.b;
  P::gemm(dev, false, false, long(H4), long(B), long(g.I), 1.f, w.Wx, long(H4), xin, long(g.I), 0.f, pre, long(H4));
  P::gemm(dev, false, false, long(H4), long(B), long(H), 1.f, w.Wh, long(H4), hin, long(H), 1.f, pre, long(H4));
  P::for_each(dev, H4 * B, [=] DYNET_LAMBDA(size_t j) {  // + b, and the forget bias
    const size_t r = j % H4;
    const float p = pre[j] + bias[r] + (r >= H && r < 2 * H ? 1.f : 0.f);
    pre[j] = r < 3 * H ? fn::logistic(p) : fn::tanh(p);
  });
}

template <class P>
void gates_dev_bwd(const BackwardArgs& a) {
  const GatesAttr& at = a.attr.as<GatesAttr>();
  const GatesGeom g = gates_geom(a.xs, at, a.fx.d.bd);
  Device* dev = a.fx.device;
  const size_t B = g.B, H = g.H, H4 = 4 * H;
  float* dpre = a.aux + g.dpre_at();
  if (!a.repeat) {  // dpre = dgates ⊙ σ'(pre) or tanh'(pre), from the gate values
    const float *y = a.fx.v, *dy = a.dEdf.v;
    P::for_each(dev, H4 * B, [=] DYNET_LAMBDA(size_t j) {
      dpre[j] = j % H4 < 3 * H ? dy[j] * y[j] * (1.f - y[j]) : dy[j] * (1.f - y[j] * y[j]);
    });
  }
  const Tensor& dx = a.dEdxi;
  const unsigned i = a.i;
  if (i == kBias) {
    if (a.low_rank && a.low_rank->takes(long(B)))  // with the bias's other updates, in one product
      return a.low_rank->add(dpre, device_ones(dev, B), long(H4), 1, long(B));
    float* db = dx.v;
    const float* dp = dpre;
    P::reduce(
        dev, H4, B, 0.f, [=] DYNET_LAMBDA(size_t r, size_t b) { return dp[b * H4 + r]; }, dev::Sum(),
        [=] DYNET_LAMBDA(size_t r, float v) { db[r] += v; });
    return;
  }
  if (i == kWx || i == kWh) {
    const size_t k = i == kWx ? g.I : H;
    const float* in = i == kWx ? (g.gather_x ? a.aux + g.x_at() : a.xs[at.first_x()].v)
                               : (g.gather_h ? a.aux + g.h_at() : a.xs[kH].v);
    if (a.low_rank && a.low_rank->takes(long(B)))  // with the weight's other updates, in one product
      a.low_rank->add(dpre, in, long(H4), long(k), long(B));
    else
      P::gemm(dev, false, true, long(H4), long(k), long(B), 1.f, dpre, long(H4), in, long(k), 1.f, dx.v, long(H4));
    return;
  }
  uint32_t seed = 0;
  if (at.weightnoise_std > 0.f) dev->copy_to_host(&seed, a.aux, sizeof seed);
  const Weights w = weights_dev<P>(dev, a.xs, at, seed, a.scratch);
  const bool mask_x = at.dropout && i == kMaskX, mask_h = at.dropout && i == kMaskH;
  // t = W[:, off:off+rows]ᵀ · dpre {rows, B}; then d[b] += t ⊙ factor (the other operand of the product).
  size_t off = 0, rows = H;
  const float* W = w.Wh;
  const float* factor = nullptr;  // per batch element (stride fs), offset by `off` for x pieces
  size_t fs = 0;
  if (i == kH || mask_h) {
    if (i == kH && at.dropout) factor = a.xs[kMaskH].v, fs = a.xs[kMaskH].d.bd == 1 ? 0 : H;
    if (mask_h) factor = a.xs[kH].v, fs = a.xs[kH].d.bd == 1 ? 0 : H;
  } else {
    rows = g.I;
    W = w.Wx;
    if (!mask_x) {
      for (size_t k = at.first_x(); k < i; ++k) off += a.xs[k].d.rows();
      rows = a.xs[i].d.rows();
      if (at.dropout) factor = a.xs[kMaskX].v + off, fs = a.xs[kMaskX].d.bd == 1 ? 0 : g.I;
    } else {  // dmask_x = t ⊙ x_t (unmasked)
      float* xcat = a.scratch.allocate_floats(g.I * B);
      gather_x_dev<P>(dev, a.xs, at, g, false, xcat);
      factor = xcat, fs = g.I;
    }
  }
  if (!factor && (dx.d.bd != 1 || B == 1)) {  // d += t: the product adds into it
    P::gemm(dev, true, false, long(rows), long(B), long(H4), 1.f, W + off * H4, long(H4), dpre, long(H4), 1.f, dx.v,
            long(rows));
    return;
  }
  float* t = a.scratch.allocate_floats(rows * B);
  P::gemm(dev, true, false, long(rows), long(B), long(H4), 1.f, W + off * H4, long(H4), dpre, long(H4), 0.f, t,
          long(rows));
  dev::add_over_batch<P>(dev, dx.v, dx.d.bd != 1, B, rows, [=] DYNET_LAMBDA(size_t b, size_t r) {
    return t[b * rows + r] * (factor ? factor[b * fs + r] : 1.f);
  });
}
DYNET_DEVICE_KERNELS("vanilla_lstm_gates", gates_dev_fwd, gates_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
Dim gates_shape(const ArgDims& xs, AttrView a) {
  const GatesAttr& at = a.as<GatesAttr>();
  const unsigned first_x = at.first_x();
  auto dims = [&] {
    std::string s = "x_t {";
    for (size_t k = 0; k < at.num_x; ++k) s += (k ? ", " : "") + xs[first_x + k].str();
    s += "}, h_tm1 " + xs[kH].str() + ", Wx " + xs[kWx].str() + ", Wh " + xs[kWh].str() + ", b " + xs[kBias].str();
    if (at.dropout) s += ", mask_x " + xs[kMaskX].str() + ", mask_h " + xs[kMaskH].str();
    return s;
  };
  const Dim &h = xs[kH], &Wx = xs[kWx], &Wh = xs[kWh], &b = xs[kBias];
  if (!is_vector(h)) op_error(kGates, "h_tm1 must be a vector: " + dims());
  const size_t H = h.rows();
  size_t I = 0, bd = h.bd;
  auto batch = [&](const Dim& d, const char* what) {
    if (d.bd == 1 || d.bd == bd) return;
    if (bd != 1) op_error(kGates, std::string(what) + " has another batch size: " + dims());
    bd = d.bd;
  };
  for (size_t k = 0; k < at.num_x; ++k) {
    const Dim& x = xs[first_x + k];
    if (!is_vector(x)) op_error(kGates, "each x_t must be a vector: " + dims());
    I += x.rows();
    batch(x, "x_t");
  }
  if (Wx.nd != 2 || Wx.rows() != 4 * H || Wx.cols() != I)
    op_error(kGates, "Wx must be {4·H, I} = {" + std::to_string(4 * H) + "," + std::to_string(I) + "}: " + dims());
  if (Wh.nd != 2 || Wh.rows() != 4 * H || Wh.cols() != H)
    op_error(kGates, "Wh must be {4·H, H} = {" + std::to_string(4 * H) + "," + std::to_string(H) + "}: " + dims());
  if (!is_vector(b) || b.rows() != 4 * H)
    op_error(kGates, "b must be a vector of 4·H = " + std::to_string(4 * H) + ": " + dims());
  if (Wx.bd != 1 || Wh.bd != 1 || b.bd != 1) op_error(kGates, "Wx, Wh and b must not be batched: " + dims());
  if (at.dropout) {
    if (!is_vector(xs[kMaskX]) || xs[kMaskX].rows() != I)
      op_error(kGates, "mask_x must be a vector of I = " + std::to_string(I) + ": " + dims());
    if (!is_vector(xs[kMaskH]) || xs[kMaskH].rows() != H)
      op_error(kGates, "mask_h must be a vector of H = " + std::to_string(H) + ": " + dims());
    batch(xs[kMaskX], "mask_x");
    batch(xs[kMaskH], "mask_h");
  }
  return Dim({static_cast<unsigned>(4 * H)}, static_cast<unsigned>(bd));  // = b's rows: fits
}
size_t gates_aux(const Dim& fx, const ArgDims& xs, AttrView a) {
  return gates_geom([&xs](unsigned k) -> const Dim& { return xs[k]; }, a.as<GatesAttr>(), fx.bd).aux_size();
}

// x_t (concatenated, masked) for every batch element into dst {I, B}; `use_mask` false leaves it unmasked.
void gather_x(const Tensor* xs, const GatesAttr& at, const GatesGeom& g, bool use_mask, float* dst) {
  for (size_t b = 0; b < g.B; ++b) {
    float* col = dst + size_t(b) * g.I;
    size_t off = 0;
    for (size_t k = 0; k < at.num_x; ++k) {
      const Tensor& x = xs[at.first_x() + k];
      std::memcpy(col + off, x.batch_ptr(b), sizeof(float) * x.d.rows());
      off += x.d.rows();
    }
    if (use_mask && at.dropout)
      Eigen::Map<Eigen::ArrayXf>(col, g.I) *= Eigen::Map<const Eigen::ArrayXf>(xs[kMaskX].batch_ptr(b), g.I);
  }
}
void gather_h(const Tensor* xs, const GatesAttr& at, const GatesGeom& g, bool use_mask, float* dst) {
  for (size_t b = 0; b < g.B; ++b) {
    Eigen::Map<Eigen::ArrayXf> col(dst + size_t(b) * g.H, g.H);
    col = Eigen::Map<const Eigen::ArrayXf>(xs[kH].batch_ptr(b), g.H);
    if (use_mask && at.dropout) col *= Eigen::Map<const Eigen::ArrayXf>(xs[kMaskH].batch_ptr(b), g.H);
  }
}
// The (masked) inputs as the products see them.
const float* x_in(const Tensor* xs, const float* aux, const GatesAttr& at, const GatesGeom& g) {
  return g.gather_x ? aux + g.x_at() : xs[at.first_x()].v;
}
const float* h_in(const Tensor* xs, const float* aux, const GatesGeom& g) {
  return g.gather_h ? aux + g.h_at() : xs[kH].v;
}

// Wx, Wh, b as used by this step: the parameters, or noisy copies in scratch memory.
Weights weights(const Tensor* xs, const GatesAttr& at, const GatesGeom& g, uint32_t seed, MemPool& scratch) {
  if (!(at.weightnoise_std > 0.f)) return {xs[kWx].v, xs[kWh].v, xs[kBias].v};
  float* noisy[3];
  for (size_t k = 0; k < 3; ++k) {
    const Tensor& w = xs[k];
    const size_t n = w.d.size();
    noisy[k] = scratch.allocate_floats(n);
    lstm_weight_noise<dev::HostPrims>(nullptr, noisy[k], n, seed, uint32_t(k), at.weightnoise_std);
    for (size_t j = 0; j < n; ++j) noisy[k][j] += w.v[j];
  }
  return {noisy[0], noisy[1], noisy[2]};
}
// Whether h_tm1 (as the products see it) is all zero: the first step of a sequence, whose zero state is
// an explicit zero vector. Its products Wh·h and dpre·hᵀ add nothing and are skipped (DyNet's builder
// builds no recurrent term there); a nonzero state returns at its first element.
bool all_zero(const float* v, size_t n) {
  for (size_t k = 0; k < n; ++k)
    if (v[k] != 0.f) return false;
  return true;
}
uint32_t stored_seed(const float* aux) {
  uint32_t s;
  std::memcpy(&s, aux, sizeof s);
  return s;
}

// CPU kernels kept: with the generic ones (gates_dev_*<HostPrims>, no overwrite) the tagger trains at 0.71x
// (0.62x autobatched) and bilstm at 0.54x (0.61x) of these (bench/run --quick --cpu-time, median of 2): they
// share the step's products with the executor's deferred GEMMs (LowRankSink), write first contributions
// (kOverwritesGradient) and skip the recurrent products of a zero first state.
void gates_fwd(const ForwardArgs& a) {
  const GatesAttr& at = a.attr.as<GatesAttr>();
  const GatesGeom g = gates_geom(a.xs, at, a.fx.d.bd);
  const size_t B = g.B, H4 = 4 * g.H;

  uint32_t seed = 0;
  if (at.weightnoise_std > 0.f) seed = static_cast<uint32_t>(random_engine()());
  std::memcpy(a.aux, &seed, sizeof seed);
  if (g.gather_x) gather_x(a.xs, at, g, true, a.aux + g.x_at());
  if (g.gather_h) gather_h(a.xs, at, g, true, a.aux + g.h_at());
  const float* xin = x_in(a.xs, a.aux, at, g);
  const float* hin = h_in(a.xs, a.aux, g);
  const Weights w = weights(a.xs, at, g, seed, a.scratch);

  cpu::gemm(false, false, H4, long(B), long(g.I), 1.f, w.Wx, H4, xin, long(g.I), 0.f, a.fx.v, H4);
  if (!all_zero(hin, g.H * B))
    cpu::gemm(false, false, H4, long(B), long(g.H), 1.f, w.Wh, H4, hin, long(g.H), 1.f, a.fx.v, H4);
  cpu::lstm_activate_gates(a.fx.v, w.b, long(g.H), long(B));  // adds the bias and the forget bias
}

// dpre = dgates ⊙ σ'(pre) (i, f, o) or tanh'(pre) (g), from the gate values: once per node in a backward
// pass, reused by the calls for its other arguments. Where the weight gradients may be deferred
// (LowRankSink::takes: a few columns) they read it at the end of the pass, so it stays in aux. Else it
// goes to a buffer of this thread that the next gates node overwrites: aux would be fresh memory at
// every node and step (a minibatch's dpre is 200 KB here, 33 MB over a BiLSTM's pass), while the buffer
// stays in cache for the four products that read it.
// With it, when the bias gets a gradient in this pass, the column sums of dpre (the bias gradient), summed
// in the same pass (a second one over dpre was 0.2-0.3% of a BiLSTM step).
struct PreGradient {
  std::vector<float> v, bias_sum;
  const float* of = nullptr;  // the gate values both were computed from
  bool has_sum = false;
};
thread_local PreGradient pre_gradient_buffer;
// v's storage for n floats, aligned to 64 bytes.
float* aligned_floats(std::vector<float>& v, size_t n) {
  if (v.size() < n + 16) v.resize(n + 16);
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t(63));
}
float* pre_gradient(const BackwardArgs& a, const GatesGeom& g) {
  const long H = long(g.H), B = long(g.B);
  if (B <= LowRankSink::kMaxColumns) {
    float* dpre = a.aux + g.dpre_at();
    if (!a.repeat) cpu::lstm_gates_grad(a.fx.v, a.dEdf.v, dpre, H, B);
    return dpre;
  }
  // A repeat call follows the node's previous call on this thread, unless the executor lost track: then
  // `of` does not match and dpre is computed again (the same values).
  PreGradient& buf = pre_gradient_buffer;
  float* dpre = aligned_floats(buf.v, size_t(4 * H * B));
  if (a.repeat && buf.of == a.fx.v) return dpre;
  buf.has_sum = (a.reached >> kBias) & 1;
  cpu::lstm_gates_grad(a.fx.v, a.dEdf.v, dpre, H, B, buf.has_sum ? aligned_floats(buf.bias_sum, 4 * H) : nullptr);
  buf.of = a.fx.v;
  return dpre;
}

// The input gradients of x_t and h_tm1 as one product [Wx Wh]ᵀ·dpre {I + H, B}
// (cpu::gemm_tn_stacked_unchanged: oneDNN runs 400x64x800 faster than two 200x64x800), when both get
// one in this pass (BackwardArgs::reached), the node has neither dropout nor weight noise and x_t is
// one batched vector. h_tm1's call (argument kH, before x_t's) computes it into a buffer of this thread
// and takes its rows [I, I + H); x_t's call, the node's next, takes rows [0, I).
struct JointInputGradient {
  std::vector<float> v;
  const float* of = nullptr;  // the gate values of the node whose product v holds
};
thread_local JointInputGradient joint_input_gradient_buffer;
bool joint_input_gradient(const BackwardArgs& a, const GatesAttr& at, const GatesGeom& g) {
  const unsigned x = at.first_x();
  return !at.dropout && at.num_x == 1 && !(at.weightnoise_std > 0.f) && ((a.reached >> kH) & 1) &&
         ((a.reached >> x) & 1) && a.xs[kH].d.bd == g.B && a.xs[x].d.bd == g.B;
}

// The weight gradients dWx += dpre·x_tᵀ and dWh += dpre·h_tm1ᵀ as one product when the two gradients
// lie one after another (a builder's weights are adjacent parameter nodes, so their gradients are
// adjacent in the executors' gradient block, in either order): [dWx dWh] += dpre·[x_t; h_tm1]ᵀ with the
// two inputs copied into one matrix. Wx's call (argument kWx, when Wh's call follows: reached) leaves
// its product to Wh's, the node's next call, which runs both, stacked when the gradients are adjacent
// and written alike (BackwardArgs::overwrite), else one after the other.
struct PendingWeightGradient {
  const float* of = nullptr;  // the gate values of the node whose Wx product waits
  float* dWx;
  bool overwrite;
  std::vector<float> inputs;  // [x_t; h_tm1] or [h_tm1; x_t] {I + H, B}
};
thread_local PendingWeightGradient pending_weight_gradient;

void gates_bwd(const BackwardArgs& a) {
  const GatesAttr& at = a.attr.as<GatesAttr>();
  const GatesGeom g = gates_geom(a.xs, at, a.fx.d.bd);
  const size_t B = g.B, H = g.H, H4 = 4 * H;

  float* dpre = pre_gradient(a, g);
  // A waiting Wx product belongs to the call just before Wh's: any other call finds none (one left by
  // a pass that failed between the two calls is dropped here, never run into memory of that pass).
  if (a.i != kWh) pending_weight_gradient.of = nullptr;
  const Tensor& dx = a.dEdxi;
  const unsigned i = a.i;
  // With a.overwrite the products write dx (beta 0); the paths that add to it zero it first.
  const float beta = a.overwrite ? 0.f : 1.f;
  auto zero_if_fresh = [&] {
    if (a.overwrite) std::memset(dx.v, 0, sizeof(float) * dx.d.size());
  };
  if (i == kBias) {
    PreGradient& buf = pre_gradient_buffer;
    if (B > size_t(LowRankSink::kMaxColumns) && buf.of == a.fx.v && buf.has_sum)
      return cpu::lstm_copy_rows(aligned_floats(buf.bias_sum, H4), long(H4), dx.v, long(H4), 1, a.overwrite);
    return cpu::lstm_bias_grad(dpre, long(H), long(B), dx.v, a.overwrite);
  }
  if (i == kWx || i == kWh) {
    PendingWeightGradient& pending = pending_weight_gradient;
    if (i == kWx && B > size_t(LowRankSink::kMaxColumns) && ((a.reached >> kWh) & 1)) {
      pending.of = a.fx.v, pending.dWx = dx.v, pending.overwrite = a.overwrite;
      return;
    }
    if (i == kWh && a.repeat && pending.of == a.fx.v) {
      pending.of = nullptr;
      const float *x = x_in(a.xs, a.aux, at, g), *h = h_in(a.xs, a.aux, g);
      const size_t I = g.I, IH = I + H;
      const bool x_first = pending.dWx + H4 * I == dx.v, h_first = dx.v + H4 * H == pending.dWx;
      if ((x_first || h_first) && pending.overwrite == a.overwrite && !all_zero(h, H * B)) {
        float* in = aligned_floats(pending.inputs, IH * B);
        for (size_t b = 0; b < B; ++b) {
          float* col = in + b * IH;
          std::memcpy(col + (x_first ? 0 : H), x + b * I, sizeof(float) * I);
          std::memcpy(col + (x_first ? I : 0), h + b * H, sizeof(float) * H);
        }
        cpu::gemm(false, true, H4, long(IH), long(B), 1.f, dpre, H4, in, long(IH), beta, x_first ? pending.dWx : dx.v,
                  H4);
        return;
      }
      cpu::gemm(false, true, H4, long(I), long(B), 1.f, dpre, H4, x, long(I), pending.overwrite ? 0.f : 1.f,
                pending.dWx, H4);
    }
    const size_t k = i == kWx ? g.I : H;
    const float* in = i == kWx ? x_in(a.xs, a.aux, at, g) : h_in(a.xs, a.aux, g);
    if (i == kWh && all_zero(in, H * B)) return zero_if_fresh();
    if (a.low_rank && a.low_rank->takes(long(B))) {
      zero_if_fresh();
      a.low_rank->add(dpre, in, long(H4), long(k), long(B));
    } else {
      cpu::gemm(false, true, H4, long(k), long(B), 1.f, dpre, H4, in, long(k), beta, dx.v, H4);
    }
    return;
  }
  // Without dropout, argument slots kMaskX and kMaskH hold pieces of x_t.
  const bool mask_x = at.dropout && i == kMaskX, mask_h = at.dropout && i == kMaskH;
  const Weights w = weights(a.xs, at, g, stored_seed(a.aux), a.scratch);
  // Wᵀ · dpre: the same weights at every step, unless noisy copies (scratch memory, reused) are used.
  const auto gemm_tn = at.weightnoise_std > 0.f ? [](long M, long N, long K, float alpha, const float* A, long lda,
                                                     const float* B, long ldb, float beta, float* C, long ldc) {
    cpu::gemm(true, false, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } : cpu::gemm_tn_unchanged;
  if (joint_input_gradient(a, at, g)) {
    JointInputGradient& buf = joint_input_gradient_buffer;
    const long IH = long(g.I + H);
    float* t = aligned_floats(buf.v, size_t(IH) * B);
    if (i == kH) {
      cpu::gemm_tn_stacked_unchanged(long(g.I), long(H), long(B), H4, w.Wx, H4, w.Wh, H4, dpre, H4, t, IH);
      buf.of = a.fx.v;
      return cpu::lstm_copy_rows(t + g.I, IH, dx.v, long(H), long(B), a.overwrite);
    }
    if (a.repeat && buf.of == a.fx.v) {  // else (not expected) computed alone below
      buf.of = nullptr;
      return cpu::lstm_copy_rows(t, IH, dx.v, long(g.I), long(B), a.overwrite);
    }
  }
  if (i == kH || mask_h) {
    // t = Whᵀ · dpre {H, B}; dh = t ⊙ mask_h, dmask_h = t ⊙ h.
    if (i == kH && !at.dropout && dx.d.bd == B) {
      gemm_tn(long(H), long(B), H4, 1.f, w.Wh, H4, dpre, H4, beta, dx.v, long(H));
      return;
    }
    zero_if_fresh();
    float* t = a.scratch.allocate_floats(size_t(H) * B);
    gemm_tn(long(H), long(B), H4, 1.f, w.Wh, H4, dpre, H4, 0.f, t, long(H));
    const Tensor& other = i == kH ? a.xs[kMaskH] : a.xs[kH];
    for (size_t b = 0; b < B; ++b) {
      auto tb = Eigen::Map<const Eigen::ArrayXf>(t + size_t(b) * H, H);
      auto d = Eigen::Map<Eigen::ArrayXf>(dx.batch_ptr(b), H);
      if (i == kH && !at.dropout)
        d += tb;
      else
        d += tb * Eigen::Map<const Eigen::ArrayXf>(other.batch_ptr(b), H);
    }
    return;
  }
  // x_t pieces and mask_x: t = Wxᵀ · dpre {I, B} (restricted to the piece's columns of Wx).
  size_t off = 0, rows = g.I;
  if (!mask_x) {
    for (size_t k = at.first_x(); k < i; ++k) off += a.xs[k].d.rows();
    rows = a.xs[i].d.rows();
  }
  if (!at.dropout && dx.d.bd == B) {
    gemm_tn(long(rows), long(B), H4, 1.f, w.Wx + size_t(off) * H4, H4, dpre, H4, beta, dx.v, long(rows));
    return;
  }
  zero_if_fresh();
  float* t = a.scratch.allocate_floats(size_t(rows) * B);
  gemm_tn(long(rows), long(B), H4, 1.f, w.Wx + size_t(off) * H4, H4, dpre, H4, 0.f, t, long(rows));
  if (mask_x) {  // dmask_x = t ⊙ x_t (unmasked)
    float* xcat = a.scratch.allocate_floats(size_t(g.I) * B);
    gather_x(a.xs, at, g, false, xcat);
    for (size_t b = 0; b < B; ++b)
      Eigen::Map<Eigen::ArrayXf>(dx.batch_ptr(b), rows) +=
          Eigen::Map<const Eigen::ArrayXf>(t + size_t(b) * rows, rows) *
          Eigen::Map<const Eigen::ArrayXf>(xcat + size_t(b) * rows, rows);
    return;
  }
  for (size_t b = 0; b < B; ++b) {
    auto tb = Eigen::Map<const Eigen::ArrayXf>(t + size_t(b) * rows, rows);
    auto d = Eigen::Map<Eigen::ArrayXf>(dx.batch_ptr(b), rows);
    if (at.dropout)
      d += tb * Eigen::Map<const Eigen::ArrayXf>(a.xs[kMaskX].batch_ptr(b) + off, rows);
    else
      d += tb;
  }
}

Expression gates_node(const Expression* x_t, size_t nx, const Expression& h_tm1, const Expression& Wx,
                      const Expression& Wh, const Expression& b, const Expression* mask_x, const Expression* mask_h,
                      real weightnoise_std);
std::vector<OpSample> gates_samples();
const OpId k_gates = register_op({.name = kGates,
                                  .doc = "[σ(a_i); σ(a_f + 1); σ(a_o); tanh(a_g)], a = Wx·(x⊙m_x) + Wh·(h⊙m_h) + b",
                                  .shape = gates_shape,
                                  .forward = gates_fwd,
                                  .backward = gates_bwd,
                                  .aux_floats = gates_aux,
                                  .batch = {.batchable = true, .shared = 1 | 2 | 4},
                                  .samples = gates_samples,
                                  .flags = kRandom | kOverwritesGradient});

// Arguments: Wx, Wh, b, h_tm1[, mask_x, mask_h], x_t pieces (on the stack for up to 16 in all).
Expression gates_node(const Expression* x_t, size_t nx, const Expression& h_tm1, const Expression& Wx,
                      const Expression& Wh, const Expression& b, const Expression* mask_x, const Expression* mask_h,
                      real weightnoise_std) {
  if (nx == 0) op_error(kGates, "x_t is an empty list");
  if (!(weightnoise_std >= 0.f))
    op_error(kGates, "weightnoise_std must be >= 0, got " + std::to_string(weightnoise_std));
  const GatesAttr at{static_cast<uint32_t>(nx), mask_x != nullptr, weightnoise_std};
  Expression small[16];
  std::vector<Expression> big;
  const size_t fixed = mask_x ? 6 : 4;
  Expression* args = small;
  if (fixed + nx > 16) {
    big.resize(fixed + nx);
    args = big.data();
  }
  args[0] = Wx, args[1] = Wh, args[2] = b, args[3] = h_tm1;
  if (mask_x) args[4] = *mask_x, args[5] = *mask_h;
  std::copy(x_t, x_t + nx, args + fixed);
  return make_node_n(k_gates, args, fixed + nx, &at, sizeof at);
}

// Sample inputs: x (or x pieces), h, Wx, Wh, b[, mask_x, mask_h].
std::vector<OpSample> gates_samples() {
  auto plain = [](ComputationGraph&, Xs x) { return vanilla_lstm_gates(x[0], x[1], x[2], x[3], x[4]); };
  auto noisy = [](ComputationGraph&, Xs x) { return vanilla_lstm_gates(x[0], x[1], x[2], x[3], x[4], 0.2f); };
  auto concat = [](ComputationGraph&, Xs x) { return vanilla_lstm_gates_concat({x[0], x[1]}, x[2], x[3], x[4], x[5]); };
  auto drop = [](ComputationGraph&, Xs x) {
    return vanilla_lstm_gates_dropout(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
  };
  auto drop_concat = [](ComputationGraph&, Xs x) {
    return vanilla_lstm_gates_dropout_concat({x[0], x[1]}, x[2], x[3], x[4], x[5], x[6], x[7], 0.1f);
  };
  const unsigned H = 2, I = 3;
  const Dim Wx({4 * H, I}), Wh({4 * H, H}), b({4 * H});
  return {{"plain", {Dim({I}), Dim({H}), Wx, Wh, b}, plain},
          {"batched", {Dim({I}, 3), Dim({H}, 3), Wx, Wh, b}, plain},
          {"unbatched_h", {Dim({I}, 2), Dim({H}), Wx, Wh, b}, plain},
          {"unbatched_x", {Dim({I}), Dim({H}, 2), Wx, Wh, b}, plain},
          {"weight_noise", {Dim({I}, 2), Dim({H}, 2), Wx, Wh, b}, noisy},
          {"concat", {Dim({1}), Dim({2}, 2), Dim({H}, 2), Wx, Wh, b}, concat},
          {"dropout", {Dim({I}), Dim({H}), Wx, Wh, b, Dim({I}), Dim({H})}, drop},
          {"dropout_batched_masks", {Dim({I}, 2), Dim({H}, 2), Wx, Wh, b, Dim({I}, 2), Dim({H})}, drop},
          {"dropout_concat_noise", {Dim({2}, 2), Dim({1}), Dim({H}), Wx, Wh, b, Dim({I}), Dim({H}, 2)}, drop_concat},
          {"x_size", {Dim({I + 1}), Dim({H}), Wx, Wh, b}, plain, -1, 1, true},
          {"Wh_shape", {Dim({I}), Dim({H}), Wx, Dim({4 * H, H + 1}), b}, plain, -1, 1, true},
          {"bias_size", {Dim({I}), Dim({H}), Wx, Wh, Dim({H})}, plain, -1, 1, true},
          {"batched_weight", {Dim({I}), Dim({H}), Dim({4 * H, I}, 2), Wh, b}, plain, -1, 1, true},
          {"batch_mismatch", {Dim({I}, 2), Dim({H}, 3), Wx, Wh, b}, plain, -1, 1, true},
          {"mask_size", {Dim({I}), Dim({H}), Wx, Wh, b, Dim({H}), Dim({H})}, drop, -1, 1, true},
          {"x_not_vector", {Dim({I, 2}), Dim({H}), Dim({4 * H, 2 * I}), Wh, b}, plain, -1, 1, true}};
}
}  // namespace
Expression vanilla_lstm_gates(const Expression& x_t, const Expression& h_tm1, const Expression& Wx,
                              const Expression& Wh, const Expression& b, real weightnoise_std) {
  return gates_node(&x_t, 1, h_tm1, Wx, Wh, b, nullptr, nullptr, weightnoise_std);
}
DYNET_API(vanilla_lstm_gates, "vanilla_lstm_gates", "vanilla_lstm_gates(x_t, h_tm1, Wx, Wh, b, weightnoise_std = 0.f)", "vanilla_lstm_gates(x_t, h_tm1, Wx, Wh, b, weightnoise_std=0.0)", Expression(const Expression&, const Expression&, const Expression&, const Expression&, const Expression&, float));
Expression vanilla_lstm_gates_concat(const std::vector<Expression>& x_t, const Expression& h_tm1, const Expression& Wx,
                                     const Expression& Wh, const Expression& b, real weightnoise_std) {
  return gates_node(x_t.data(), x_t.size(), h_tm1, Wx, Wh, b, nullptr, nullptr, weightnoise_std);
}
DYNET_API(vanilla_lstm_gates_concat, "vanilla_lstm_gates", "vanilla_lstm_gates_concat(x_t, h_tm1, Wx, Wh, b, weightnoise_std = 0.f)", "vanilla_lstm_gates_concat(x_t, h_tm1, Wx, Wh, b, weightnoise_std=0.0)", Expression(const std::vector<Expression>&, const Expression&, const Expression&, const Expression&, const Expression&, float));
Expression vanilla_lstm_gates_dropout(const Expression& x_t, const Expression& h_tm1, const Expression& Wx,
                                      const Expression& Wh, const Expression& b, const Expression& dropout_mask_x,
                                      const Expression& dropout_mask_h, real weightnoise_std) {
  return gates_node(&x_t, 1, h_tm1, Wx, Wh, b, &dropout_mask_x, &dropout_mask_h, weightnoise_std);
}
DYNET_API(vanilla_lstm_gates_dropout, "vanilla_lstm_gates", "vanilla_lstm_gates_dropout(x_t, h_tm1, Wx, Wh, b, dropout_mask_x, dropout_mask_h, weightnoise_std = 0.f)", "vanilla_lstm_gates_dropout(x_t, h_tm1, Wx, Wh, b, dropout_mask_x, dropout_mask_h, weightnoise_std=0.0)", Expression(const Expression&, const Expression&, const Expression&, const Expression&, const Expression&, const Expression&, const Expression&, float));
Expression vanilla_lstm_gates_dropout_concat(const std::vector<Expression>& x_t, const Expression& h_tm1,
                                             const Expression& Wx, const Expression& Wh, const Expression& b,
                                             const Expression& dropout_mask_x, const Expression& dropout_mask_h,
                                             real weightnoise_std) {
  return gates_node(x_t.data(), x_t.size(), h_tm1, Wx, Wh, b, &dropout_mask_x, &dropout_mask_h, weightnoise_std);
}
DYNET_API(vanilla_lstm_gates_dropout_concat, "vanilla_lstm_gates", "vanilla_lstm_gates_dropout_concat(x_t, h_tm1, Wx, Wh, b, dropout_mask_x, dropout_mask_h, weightnoise_std = 0.f)", "vanilla_lstm_gates_dropout_concat(x_t, h_tm1, Wx, Wh, b, dropout_mask_x, dropout_mask_h, weightnoise_std=0.0)", Expression(const std::vector<Expression>&, const Expression&, const Expression&, const Expression&, const Expression&, const Expression&, const Expression&, float));
#endif

// ---------------------------------------------------------------------------------------------
// vanilla_lstm_c(c_tm1, gates) = i ⊙ g + f ⊙ c_tm1 and vanilla_lstm_h(c_t, gates) = o ⊙ tanh(c_t).
namespace {
// vanilla_lstm_c / _h: one thread per value; an unbatched state or gates argument is shared.
struct CellIndex {
  size_t H, cs, gs;  // c's and gates' batch strides (0: shared)
};
CellIndex cell_index(const Tensor* xs) {
  const size_t H = xs[0].d.rows();
  return {H, xs[0].d.bd == 1 ? 0 : H, xs[1].d.bd == 1 ? 0 : 4 * H};
}
template <class P>
void lstm_c_dev_fwd(const ForwardArgs& a) {
  const CellIndex x = cell_index(a.xs);
  const float *c = a.xs[0].v, *gates = a.xs[1].v;
  float* y = a.fx.v;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) {
    const size_t b = j / x.H, r = j % x.H;
    const float* gt = gates + b * x.gs;
    y[j] = gt[r] * gt[3 * x.H + r] + gt[x.H + r] * c[b * x.cs + r];
  });
}
template <class P>
void lstm_c_dev_bwd(const BackwardArgs& a) {
  const CellIndex x = cell_index(a.xs);
  const float *c = a.xs[0].v, *gates = a.xs[1].v, *dc = a.dEdf.v;
  const size_t B = a.fx.d.bd, H = x.H;
  if (a.i == 0) {  // dc_tm1 += dc ⊙ f
    dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.dEdxi.d.bd != 1, B, H,
                           [=] DYNET_LAMBDA(size_t b, size_t r) { return dc[b * H + r] * gates[b * x.gs + H + r]; });
    return;
  }
  // di += dc ⊙ g, df += dc ⊙ c_tm1, dg += dc ⊙ i
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.dEdxi.d.bd != 1, B, 4 * H, [=] DYNET_LAMBDA(size_t b, size_t e) {
    const size_t block = e / H, r = e % H;
    const float* gt = gates + b * x.gs;
    const float d = dc[b * H + r];
    return block == 0 ? d * gt[3 * H + r] : block == 1 ? d * c[b * x.cs + r] : block == 3 ? d * gt[r] : 0.f;
  });
}
DYNET_DEVICE_KERNELS("vanilla_lstm_c", lstm_c_dev_fwd, lstm_c_dev_bwd);
template <class P>
void lstm_h_dev_fwd(const ForwardArgs& a) {
  const CellIndex x = cell_index(a.xs);
  const float *c = a.xs[0].v, *gates = a.xs[1].v;
  float *y = a.fx.v, *tanh_c = a.aux;
  P::for_each(a.fx.device, a.fx.d.size(), [=] DYNET_LAMBDA(size_t j) {
    const size_t b = j / x.H, r = j % x.H;
    tanh_c[j] = fn::tanh(c[b * x.cs + r]);
    y[j] = gates[b * x.gs + 2 * x.H + r] * tanh_c[j];
  });
}
template <class P>
void lstm_h_dev_bwd(const BackwardArgs& a) {
  const CellIndex x = cell_index(a.xs);
  const float *gates = a.xs[1].v, *dh = a.dEdf.v, *tanh_c = a.aux;
  const size_t B = a.fx.d.bd, H = x.H;
  if (a.i == 0) {  // dc += dh ⊙ o ⊙ (1 - tanh²(c))
    dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.dEdxi.d.bd != 1, B, H, [=] DYNET_LAMBDA(size_t b, size_t r) {
      const float tc = tanh_c[b * H + r];
      return dh[b * H + r] * gates[b * x.gs + 2 * H + r] * (1.f - tc * tc);
    });
    return;
  }
  // do += dh ⊙ tanh(c)
  dev::add_over_batch<P>(a.fx.device, a.dEdxi.v, a.dEdxi.d.bd != 1, B, 4 * H, [=] DYNET_LAMBDA(size_t b, size_t e) {
    return e / H == 2 ? dh[b * H + e % H] * tanh_c[b * H + e % H] : 0.f;
  });
}
DYNET_DEVICE_KERNELS("vanilla_lstm_h", lstm_h_dev_fwd, lstm_h_dev_bwd);
}  // namespace
#ifndef DYNET_CUDA_PASS
namespace {
template <bool kCell>
Dim cell_shape(const ArgDims& xs, AttrView) {
  const char* op = kCell ? "vanilla_lstm_c" : "vanilla_lstm_h";
  const Dim &c = xs[0], &gates = xs[1];
  if (!is_vector(c) || !is_vector(gates) || gates.rows() != 4 * c.rows())
    op_error(op, std::string(kCell ? "c_tm1 " : "c_t ") + c.str() + " and gates " + gates.str() +
                     " must be vectors of H and 4·H");
  return Dim({c.rows()}, ops::broadcast_bd(op, c, gates));
}
// CPU kernels kept (cpu/lstm.cc: ISA clones, exp.h's vectorised tanh): op_perf x64 generic/CPU 3.8 (c) and
// 3.3 (h) fwd+bwd, the backward 3.7-7.6; and they write fresh gradients in place (BackwardArgs::overwrite,
// own_quarters), which the generic kernels, adding only, cannot.
// A state or gates argument that is not batched is broadcast: its column stride is 0.
long stride(const Tensor& t) { return t.d.bd == 1 ? 0 : long(t.d.batch_size()); }
void lstm_c_fwd(const ForwardArgs& a) {
  cpu::lstm_c_forward(a.xs[1].v, stride(a.xs[1]), a.xs[0].v, stride(a.xs[0]), a.fx.v, long(a.fx.d.rows()),
                      long(a.fx.d.bd));
}
void lstm_c_bwd(const BackwardArgs& a) {
  const long H = long(a.fx.d.rows()), B = long(a.fx.d.bd);
  if (a.i == 0)
    cpu::lstm_c_backward_c(a.xs[1].v, stride(a.xs[1]), a.dEdf.v, a.dEdxi.v, stride(a.dEdxi), H, B, a.overwrite);
  else
    cpu::lstm_c_backward_gates(a.xs[1].v, stride(a.xs[1]), a.xs[0].v, stride(a.xs[0]), a.dEdf.v, a.dEdxi.v,
                               stride(a.dEdxi), H, B, a.overwrite || a.own_quarters, a.own_quarters);
}
// aux keeps tanh(c_t) from forward for both backward calls.
size_t lstm_h_aux(const Dim& fx, const ArgDims&, AttrView) { return fx.size(); }
void lstm_h_fwd(const ForwardArgs& a) {
  cpu::lstm_h_forward(a.xs[1].v, stride(a.xs[1]), a.xs[0].v, stride(a.xs[0]), a.aux, a.fx.v, long(a.fx.d.rows()),
                      long(a.fx.d.bd));
}
void lstm_h_bwd(const BackwardArgs& a) {
  const long H = long(a.fx.d.rows()), B = long(a.fx.d.bd);
  if (a.i == 0)
    cpu::lstm_h_backward_c(a.xs[1].v, stride(a.xs[1]), a.aux, a.dEdf.v, a.dEdxi.v, stride(a.dEdxi), H, B, a.overwrite);
  else
    cpu::lstm_h_backward_gates(a.aux, a.dEdf.v, a.dEdxi.v, stride(a.dEdxi), H, B, a.overwrite || a.own_quarters,
                               a.own_quarters);
}
template <bool kCell>
std::vector<OpSample> cell_samples() {
  auto b = [](ComputationGraph&, Xs x) { return kCell ? vanilla_lstm_c(x[0], x[1]) : vanilla_lstm_h(x[0], x[1]); };
  return {{"plain", {Dim({3}), Dim({12})}, b},
          {"batched", {Dim({2}, 3), Dim({8}, 3)}, b},
          {"unbatched_state", {Dim({2}), Dim({8}, 2)}, b},
          {"unbatched_gates", {Dim({2}, 2), Dim({8})}, b},
          {"gates_size", {Dim({3}), Dim({9})}, b, -1, 1, true},
          {"batch_mismatch", {Dim({2}, 2), Dim({8}, 3)}, b, -1, 1, true}};
}
const OpId k_lstm_c = register_op({.name = "vanilla_lstm_c",
                                   .doc = "c = i ⊙ g + f ⊙ c_tm1 (i, f, g: blocks of gates)",
                                   .shape = cell_shape<true>,
                                   .forward = lstm_c_fwd,
                                   .backward = lstm_c_bwd,
                                   .batch = {.batchable = true},
                                   .samples = cell_samples<true>,
                                   .flags = kOverwritesGradient,
                                   .partial_gradient = {.arg = 1, .quarters = 0b1011}});  // i, f, g
const OpId k_lstm_h = register_op({.name = "vanilla_lstm_h",
                                   .doc = "h = o ⊙ tanh(c_t) (o: block of gates)",
                                   .shape = cell_shape<false>,
                                   .forward = lstm_h_fwd,
                                   .backward = lstm_h_bwd,
                                   .aux_floats = lstm_h_aux,
                                   .batch = {.batchable = true},
                                   .samples = cell_samples<false>,
                                   .flags = kOverwritesGradient,
                                   .partial_gradient = {.arg = 1, .quarters = 0b0100}});  // o
}  // namespace
Expression vanilla_lstm_c(const Expression& c_tm1, const Expression& gates_t) {
  return make_node(k_lstm_c, c_tm1, gates_t);
}
DYNET_API(vanilla_lstm_c, "vanilla_lstm_c", "vanilla_lstm_c(c_tm1, gates_t)", "vanilla_lstm_c(c_tm1, gates_t)", Expression(const Expression&, const Expression&));
Expression vanilla_lstm_h(const Expression& c_t, const Expression& gates_t) {
  return make_node(k_lstm_h, c_t, gates_t);
}
DYNET_API(vanilla_lstm_h, "vanilla_lstm_h", "vanilla_lstm_h(c_t, gates_t)", "vanilla_lstm_h(c_t, gates_t)", Expression(const Expression&, const Expression&));
#endif

}  // namespace dynet
