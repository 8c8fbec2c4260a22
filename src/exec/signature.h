// Autobatching signatures: nodes with equal signatures may run as one batched node (see BatchRule in
// core/op.h). A signature is the words: op, argument count and device, the node's dim, for each argument its
// dim (concatenated) or identity (shared: the node id, or the parameter for a node that aliases a
// parameter's storage), then the op's key attribute words. Dims enter by their
// extents up to nd, so Dims that compare equal give equal words. Compared exactly; the hash only picks
// the bucket.
#pragma once

#include <cstdint>
#include <vector>

#include "core/op.h"

namespace dynet {

// Node i's signature words (for tests and diagnostics). Returns false when the node runs alone: the op
// is not batchable, aliases memory, its key says so, or a shared argument is itself batched (its batch
// elements would meet the wrong members).
bool signature_key(const ComputationGraph& cg, VariableIndex i, std::vector<uint64_t>& out);

// Interns signatures as small ids (0, 1, ...) for one scheduling pass.
class SignatureTable {
 public:
  static constexpr int kAlone = -1;
  // Forgets every id; costs O(ids handed out since the last reset).
  void reset();
  // Node i's signature id, or kAlone.
  int of(const ComputationGraph& cg, VariableIndex i);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t hash;
    uint32_t begin, len;  // the signature's words in words_
    uint32_t slot;
  };
  friend bool signature_key(const ComputationGraph&, VariableIndex, std::vector<uint64_t>&);
  std::vector<uint64_t> words(int id) const {
    return {words_.begin() + entries_[id].begin, words_.begin() + entries_[id].begin + entries_[id].len};
  }
  void rehash(size_t slots);
  std::vector<uint64_t> long_key_;  // one node's words when they do not fit on the stack
  std::vector<uint64_t> words_;     // the signatures' words, one after another
  std::vector<Entry> entries_;      // by id
  std::vector<int32_t> slots_;      // open addressing: id or -1
};

}  // namespace dynet
