// Counter-based random numbers (Philox4x32-10, Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011), written once for the CPU kernels and the device kernels: value i of a random node is a function
// of the node's key and i only, so any thread of any device computes it without a shared state, and a seed
// gives the same masks and values on every device.
//
// A random node takes one key per autobatched member from the calling thread's engine when it runs
// (draw_keys), in member order; member m's value i is dist(keys[m], i) wherever it sits in the batched
// tensor, so a batched node gives each member the numbers it would get alone with the same key. Results
// therefore still depend only on the seed and the thread's stream (see "Random numbers" in docs/design.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/device/prims.h"

namespace dynet::rng {

struct Key {
  uint32_t lo, hi;
};
struct Block {
  uint32_t w[4];
};

// The Philox4x32 bijection with 10 rounds: counter c under key k.
DYNET_HD inline Block philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, Key k) {
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c0, p1 = uint64_t(0xCD9E8D57u) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k.lo, n2 = uint32_t(p0 >> 32) ^ c3 ^ k.hi;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k.lo += 0x9E3779B9u;
    k.hi += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// 24 random bits as a float in [0, 1), and as one in (0, 1) (odd multiples of 2^-24) for logarithms.
DYNET_HD inline float uniform01(uint32_t x) { return float(x >> 8) * 0x1p-24f; }
DYNET_HD inline float uniform_open(uint32_t x) { return float(((x >> 9) << 1) | 1u) * 0x1p-24f; }

// Distributions: each turns one Philox block into kPerBlock values (v[0..kPerBlock)); value i of a key
// comes from block i / kPerBlock (counter {block, tag}), so the same i gives the same value however the
// work is split.
struct Bernoulli {  // scale with probability p, else 0 (dropout's keep mask: p = 1 - drop, scale = 1/(1 - drop))
  static constexpr unsigned kPerBlock = 4, kTag = 0;
  float p, scale;
  DYNET_HD void operator()(const Block& b, float* v) const {
    for (unsigned l = 0; l < 4; ++l) v[l] = uniform01(b.w[l]) < p ? scale : 0.f;
  }
};
// x + y·z rounded after the product and after the sum, as the host computes it: nvcc would fuse it into one
// fma, rounded once, and uniform values would differ from the CPU's in the last place (seen on an H100).
DYNET_HD inline float add_product(float x, float y, float z) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(x, __fmul_rn(y, z));
#else
  return x + y * z;
#endif
}
struct Uniform {  // in [a, b)
  static constexpr unsigned kPerBlock = 4, kTag = 0;
  float a, b;
  DYNET_HD void operator()(const Block& r, float* v) const {
    for (unsigned l = 0; l < 4; ++l) v[l] = add_product(a, b - a, uniform01(r.w[l]));
  }
};
struct Normal {  // N(mean, stddev²) by Box-Muller: each pair of words gives the cosine and the sine value
  static constexpr unsigned kPerBlock = 4, kTag = 1;
  float mean, stddev;
  DYNET_HD void operator()(const Block& b, float* v) const {
    for (unsigned l = 0; l < 4; l += 2) {
      const float r = stddev * fn::sqrt(-2.f * fn::log(uniform_open(b.w[l])));
      const float t = 6.2831853071795864f * uniform01(b.w[l + 1]);
      v[l] = mean + r * fn::cos(t);
      v[l + 1] = mean + r * fn::sin(t);
    }
  }
};
struct Gumbel {  // Gumbel(mu, beta): mu - beta·log(-log u)
  static constexpr unsigned kPerBlock = 4, kTag = 0;
  float mu, beta;
  DYNET_HD void operator()(const Block& b, float* v) const {
    for (unsigned l = 0; l < 4; ++l) v[l] = mu - beta * fn::log(-fn::log(uniform_open(b.w[l])));
  }
};

// out[m·per + i] = dist(key of member m, i) for m < members, i < per: one call per (member, block). One
// member's key travels by value, several members' in device memory.
template <class Dist>
struct Fill {
  const Key* keys;  // null: every value under `key`
  Key key;
  float* out;
  size_t per, blocks_per_member;
  Dist dist;
  DYNET_HD void operator()(size_t j) const {
    const size_t m = j / blocks_per_member, blk = j % blocks_per_member;
    const Block b = philox(uint32_t(blk), uint32_t(uint64_t(blk) >> 32), Dist::kTag, 0u, keys ? keys[m] : key);
    float v[Dist::kPerBlock];
    dist(b, v);
    float* o = out + m * per + blk * Dist::kPerBlock;
    const size_t left = per - blk * Dist::kPerBlock;
    for (unsigned l = 0; l < Dist::kPerBlock && l < left; ++l) o[l] = v[l];
  }
};
template <class P, class Dist>
void run_fill(Device* dev, const Key* keys, Key key, float* out, size_t n, unsigned members, Dist dist) {
  const size_t per = n / members, bpm = (per + Dist::kPerBlock - 1) / Dist::kPerBlock;
  const Fill<Dist> f{keys, key, out, per, bpm, dist};
  P::for_each(dev, members * bpm, [=] DYNET_LAMBDA(size_t j) { f(j); });
}

// n keys from the calling thread's engine (random_engine()), two 32-bit draws each; host code only.
void draw_keys(Key* out, size_t n);

// out (n values on dev, `members` members one after another) ← the distribution's values under keys taken
// now from the thread's engine. The CPU's kernels call it with HostPrims.
template <class P, class Dist>
void fill(Device* dev, MemPool& scratch, float* out, size_t n, unsigned members, Dist dist) {
  if (members <= 1) {
    Key k;
    draw_keys(&k, 1);
    return run_fill<P>(dev, nullptr, k, out, n, 1, dist);
  }
  std::vector<Key> host(members);
  draw_keys(host.data(), members);
  const Key* keys = detail::host_addressable(dev) ? host.data() : dev::upload(dev, scratch, host.data(), members);
  run_fill<P>(dev, keys, Key{}, out, n, members, dist);
}

}  // namespace dynet::rng
