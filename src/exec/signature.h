// Autobatching signatures: nodes with equal signatures may run as one batched node (see BatchRule in
// core/op.h). A signature is a word sequence derived from the op's batch rule, compared exactly; the
// hash only picks the bucket.
#pragma once

#include <cstdint>
#include <vector>

#include "core/op.h"

namespace dynet {

// Writes node i's signature words into `out`: op and argument count, the node's dim, for each argument
// its dim (concatenated) or its node id (shared), then the op's key attribute words. Returns false
// when the node runs alone: the op is not batchable, aliases memory, its key says so, or a shared
// argument is itself batched (its batch elements would be matched against the wrong members).
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
    uint32_t begin, len;  // the key in words_
    uint32_t slot;
  };
  int intern(const uint64_t* w, uint32_t n);
  void rehash(size_t slots);
  std::vector<uint64_t> key_;    // one node's key
  std::vector<uint64_t> words_;  // interned keys, one after another
  std::vector<Entry> entries_;   // by id
  std::vector<int32_t> slots_;   // open addressing: id or -1
};

}  // namespace dynet
