#include "exec/signature.h"

#include <cstring>

namespace dynet {

namespace {
constexpr uint64_t kSharedArg = 1ull << 63;

// A dim as words: (nd, bd), then the extents two per word. Extents past nd never enter, so Dims that
// compare equal give equal words whatever their unused entries hold.
void pack_dim(const Dim& d, std::vector<uint64_t>& out) {
  out.push_back(uint64_t(d.nd) | (uint64_t(d.bd) << 32));
  for (unsigned k = 0; k < d.nd; k += 2) out.push_back(uint64_t(d.d[k]) | (k + 1 < d.nd ? uint64_t(d.d[k + 1]) << 32 : 0));
}

uint64_t hash_words(const uint64_t* w, uint32_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  for (uint32_t k = 0; k < n; ++k) {
    h ^= w[k];
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
  }
  return h;
}
}  // namespace

bool signature_key(const ComputationGraph& cg, VariableIndex i, std::vector<uint64_t>& out) {
  out.clear();
  const NodeRec& r = cg.node(i);
  const BatchRule& rule = op_def(r.op).batch;
  if (!rule.batchable || (r.flags & kAliasOutput)) return false;
  out.push_back(uint64_t(r.op) | (uint64_t(r.nargs) << 16));
  pack_dim(r.dim, out);
  const VariableIndex* a = cg.node_args(i);
  for (unsigned k = 0; k < r.nargs; ++k) {
    const Dim& d = cg.node(a[k]).dim;
    if (rule.is_shared(k)) {
      if (d.bd != 1) return false;
      out.push_back(kSharedArg | a[k]);
    } else {
      pack_dim(d, out);
    }
  }
  const AttrView attr{cg.node_attr(i), r.attr_words};
  if (!rule.key) {
    out.insert(out.end(), attr.p, attr.p + attr.words);
    return true;
  }
  const size_t at = out.size();
  out.resize(at + attr.words);
  const uint32_t n = rule.key(attr, out.data() + at);
  if (n == BatchRule::kRunsAlone) return false;
  out.resize(at + n);
  return true;
}

void SignatureTable::reset() {
  for (const Entry& e : entries_) slots_[e.slot] = -1;
  entries_.clear();
  words_.clear();
}

void SignatureTable::rehash(size_t slots) {
  slots_.assign(slots, -1);
  for (size_t id = 0; id < entries_.size(); ++id) {
    size_t s = entries_[id].hash & (slots - 1);
    while (slots_[s] >= 0) s = (s + 1) & (slots - 1);
    slots_[s] = static_cast<int32_t>(id);
    entries_[id].slot = static_cast<uint32_t>(s);
  }
}

int SignatureTable::intern(const uint64_t* w, uint32_t n) {
  if (2 * (entries_.size() + 1) > slots_.size()) rehash(slots_.empty() ? 64 : 2 * slots_.size());
  const uint64_t h = hash_words(w, n);
  const size_t mask = slots_.size() - 1;
  size_t s = h & mask;
  for (; slots_[s] >= 0; s = (s + 1) & mask) {
    const Entry& e = entries_[slots_[s]];
    if (e.hash == h && e.len == n && std::memcmp(words_.data() + e.begin, w, n * sizeof(uint64_t)) == 0)
      return slots_[s];
  }
  const int id = static_cast<int>(entries_.size());
  entries_.push_back({h, static_cast<uint32_t>(words_.size()), n, static_cast<uint32_t>(s)});
  words_.insert(words_.end(), w, w + n);
  slots_[s] = id;
  return id;
}

int SignatureTable::of(const ComputationGraph& cg, VariableIndex i) {
  if (!signature_key(cg, i, key_)) return kAlone;
  return intern(key_.data(), static_cast<uint32_t>(key_.size()));
}

}  // namespace dynet
