// DyNet's autobatching signatures (dynet/sig.h): the types a user Node's autobatch_sig hook receives.
// Our executors derive signatures from each op's batch rule instead (docs/design.md), and never batch
// user-defined nodes, so these exist for DyNet code that mentions them; they work as described.
#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dynet/dim.h"

#define DYNET_MAX_SIG 100

namespace dynet {

namespace nt {
// Node kinds a signature starts from (DyNet's list; the values carry no meaning beyond equality).
enum NodeType {
  tanh = 1, sqrt, abs, erf, square, cube, exp, logsigmoid, loggamma, log, nobackprop, scalegradient, identity,
  negate, rectify, logistic, softsign, silu, round, ceiling, floor, sinh, cosh, asinh, acosh, atanh, sin, cos, tan,
  asin, acos, atan, plus_const, concat, cmult, csum, sum, squared_distance, softmax, pnls, pickrange, scalar_mult,
  dropout, input, scalar_input, lookup, COMPLEX, affine, matmul, transpose, vanilla_lstm_gates, vanilla_lstm_h,
  vanilla_lstm_c, conv2d, flipgradient, block
};
}  // namespace nt

// A running hash of a node's kind, integers, floats, argument ids and dims.
struct SigHash {
  SigHash() = default;
  explicit SigHash(int which) : hash(static_cast<int>(0x9e3779b9u ^ static_cast<unsigned>(which))), which(which) {}
  int hash = static_cast<int>(0x9e3779b9u);
  int which = 0;
  void add_int(int i) { hash = static_cast<int>(static_cast<unsigned>(hash) * 0x01000193u ^ static_cast<unsigned>(i)); }
  void add_float(float f) {
    int bits;
    std::memcpy(&bits, &f, sizeof bits);
    add_int(bits);
  }
  void add_node(unsigned i) { add_int(static_cast<int>(i)); }
  void add_dim(const Dim& d) {
    add_int(-static_cast<int>(d.nd));
    for (unsigned k = 0; k < d.nd; ++k) add_int(static_cast<int>(d.d[k]));
  }
};
inline bool operator<(const SigHash& a, const SigHash& b) { return a.hash < b.hash; }
inline bool operator==(const SigHash& a, const SigHash& b) { return a.hash == b.hash; }
inline bool operator!=(const SigHash& a, const SigHash& b) { return a.hash != b.hash; }
struct SigHasher {
  size_t operator()(const SigHash& k) const { return static_cast<size_t>(static_cast<unsigned>(k.hash)); }
};

// Signature -> small index maps (index 0 is the empty signature, i.e. "unbatchable").
template <class Sig>
struct SigLinearMap {
  SigLinearMap() { add(Sig()); }
  int get_idx(Sig& s) {
    for (size_t i = 0; i < sigs.size(); ++i)
      if (sigs[i] == s) return static_cast<int>(i);
    return add(s);
  }
  int sig2type(int sig) { return whiches[sig]; }
  int size() { return static_cast<int>(sigs.size()); }
  std::vector<Sig> sigs;
  std::vector<int> whiches;

 private:
  int add(const Sig& s) {
    sigs.push_back(s);
    whiches.push_back(s.which);
    return static_cast<int>(sigs.size()) - 1;
  }
};

// A linear scan that sorts itself (then searches by bisection) once it has been hit often.
template <class Sig>
struct SigLinearSortedMap {
  SigLinearSortedMap() { add(Sig()); }
  int get_idx(Sig& s) {
    auto less = [](const std::pair<Sig, int>& a, const std::pair<Sig, int>& b) { return a.first < b.first; };
    if (sorted) {
      auto it = std::lower_bound(sigs.begin(), sigs.end(), std::make_pair(s, 0), less);
      if (it != sigs.end() && it->first == s) return it->second;
    } else {
      for (const auto& entry : sigs)
        if (entry.first == s) {
          if (++found > 50) sort();
          return entry.second;
        }
    }
    return add(s);
  }
  void clear() {
    sigs.clear();
    whiches.clear();
    sorted = false;
    found = 0;
  }
  void sort() {
    if (sorted) return;
    std::sort(sigs.begin(), sigs.end(),
              [](const std::pair<Sig, int>& a, const std::pair<Sig, int>& b) { return a.first < b.first; });
    sorted = true;
  }
  int sig2type(int sig) { return whiches[sig]; }
  int size() { return static_cast<int>(sigs.size()); }
  std::vector<std::pair<Sig, int>> sigs;
  std::vector<int> whiches;
  bool sorted = false;
  int found = 0;

 private:
  int add(const Sig& s) {
    const int idx = static_cast<int>(sigs.size());
    sigs.emplace_back(s, idx);
    whiches.push_back(s.which);
    sorted = false;
    found = 0;
    return idx;
  }
};

template <class Sig>
struct SigTreeMap {
  int get_idx(Sig& s) { return sigs.emplace(s, static_cast<int>(sigs.size())).first->second; }
  int size() { return static_cast<int>(sigs.size()); }
  std::map<Sig, int> sigs;
};

template <class Sig>
struct SigHashMap {
  int get_idx(Sig& s) { return sigs.emplace(s, static_cast<int>(sigs.size())).first->second; }
  int size() { return static_cast<int>(sigs.size()); }
  std::unordered_map<Sig, int, SigHasher> sigs;
};

typedef SigHash Sig;
typedef SigLinearSortedMap<Sig> SigMap;

}  // namespace dynet
