#include "exec/signature.h"

#include <cstring>

namespace dynet {

namespace {
constexpr uint64_t kSharedArg = 1ull << 63, kSharedLeaf = 1ull << 62;

// Only picks the bucket (keys are compared exactly), so a rotate-xor per word with one final mix is
// enough: it keeps the dependency chain per word at two cheap instructions.
uint64_t hash_words(const uint64_t* w, uint32_t n) {
  uint64_t h = n;
  for (uint32_t k = 0; k < n; ++k) h = ((h << 7) | (h >> 57)) ^ w[k];
  h ^= h >> 32;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 29);
}
bool same_words(const uint64_t* a, const uint64_t* b, uint32_t n) {
  for (uint32_t k = 0; k < n; ++k)
    if (a[k] != b[k]) return false;
  return true;
}

// Nodes without elements (kHasEmpty) run alone: nothing to batch, and batches divide by their members' sizes.
bool batchable(const NodeRec& r, const BatchRule& rule) { return rule.batchable && !(r.flags & (kAliasOutput | kHasEmpty)); }
}  // namespace

bool signature_key(const ComputationGraph& cg, VariableIndex i, std::vector<uint64_t>& out) {
  SignatureTable t;
  out.clear();
  if (t.of(cg, i) == SignatureTable::kAlone) return false;
  out = t.words(0);
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

int SignatureTable::of(const ComputationGraph& cg, VariableIndex i) {
  const NodeRec& r = cg.node(i);
  const BatchRule& rule = op_def(r.op).batch;
  if (!batchable(r, rule)) return kAlone;
  // The signature's words, on the stack unless the node has many arguments. They are compared with
  // the words kept for each id (a few, hot in cache) rather than with the id's first node, whose
  // record is usually far away in memory.
  constexpr size_t kStackWords = 64;
  uint64_t stack[kStackWords];
  constexpr size_t kDimWords = 1 + (DYNET_MAX_TENSOR_DIM + 1) / 2;
  const size_t most = 1 + kDimWords * (1 + r.nargs) + r.nargs + r.attr_words;
  if (most > kStackWords && long_key_.size() < most) long_key_.resize(most);
  uint64_t* const w = most > kStackWords ? long_key_.data() : stack;
  uint64_t* out = w;
  auto dim = [&out](const Dim& d) {
    *out++ = uint64_t(d.nd) | (uint64_t(d.bd) << 32);
    for (unsigned k = 0; k < d.nd; k += 2) *out++ = uint64_t(d.d[k]) | (k + 1 < d.nd ? uint64_t(d.d[k + 1]) << 32 : 0);
  };
  // The device too: nodes of different devices never run as one.
  *out++ = uint64_t(r.op) | (uint64_t(r.nargs) << 16) | (uint64_t(r.device) << 56);
  dim(r.dim);
  const VariableIndex* a = cg.node_args(i);
  for (unsigned k = 0; k < r.nargs; ++k) {
    const Dim& d = cg.node(a[k]).dim;
    if (!rule.is_shared(k)) {
      if (d.bd > r.dim.bd) return kAlone;  // reduced over its batch (sum_batches): a member would mix (try_batched)
      dim(d);
      continue;
    }
    if (d.bd != 1) return kAlone;
    // A parameter's nodes alias its storage: every node of one parameter is the same shared argument
    // (code that calls parameter(cg, p) per example still batches). Other shared arguments are nodes.
    const NodeRec& x = cg.node(a[k]);
    if (x.nargs == 0 && (x.flags & kAliasOutput) && x.attr_words == 1) {
      *out++ = kSharedLeaf | x.op;
      *out++ = cg.node_attr(a[k])[0];
    } else {
      *out++ = kSharedArg | a[k];
    }
  }
  const AttrView attr{cg.node_attr(i), r.attr_words};
  if (!rule.key) {
    std::memcpy(out, attr.p, attr.words * sizeof(uint64_t));
    out += attr.words;
  } else {
    const uint32_t n = rule.key(attr, out);
    if (n == BatchRule::kRunsAlone) return kAlone;
    out += n;
  }
  const uint32_t n = static_cast<uint32_t>(out - w);
  const uint64_t h = hash_words(w, n);

  if (2 * (entries_.size() + 1) > slots_.size()) rehash(slots_.empty() ? 64 : 2 * slots_.size());
  const size_t mask = slots_.size() - 1;
  size_t s = h & mask;
  for (; slots_[s] >= 0; s = (s + 1) & mask) {
    const Entry& e = entries_[slots_[s]];
    if (e.hash == h && e.len == n && same_words(words_.data() + e.begin, w, n))
      return slots_[s];
  }
  const int id = static_cast<int>(entries_.size());
  entries_.push_back({h, static_cast<uint32_t>(words_.size()), n, static_cast<uint32_t>(s)});
  words_.insert(words_.end(), w, w + n);
  slots_[s] = id;
  return id;
}

}  // namespace dynet
