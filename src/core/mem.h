// Bump allocation from a chain of blocks that grows on demand. Pointers stay valid until
// free_all()/revert(); growth never moves existing allocations, so it is safe under
// checkpoints and batched execution.
#pragma once

#include <cstddef>
#include <vector>

namespace dynet {

struct Device;

class MemPool {
 public:
  struct Mark {
    size_t block = 0, used = 0;
  };
  static constexpr size_t kAlign = 64;

  // Blocks come from `device` (device memory, e.g. a GPU's), or from the host when it is null.
  explicit MemPool(size_t initial_bytes = 1 << 20, Device* device = nullptr) : initial_(initial_bytes), device_(device) {}
  ~MemPool();
  MemPool(const MemPool&) = delete;
  MemPool& operator=(const MemPool&) = delete;

  // 64-byte aligned storage for n floats (n may be 0).
  float* allocate_floats(size_t n) { return static_cast<float*>(allocate(n * sizeof(float))); }
  void* allocate(size_t bytes) {
    bytes = (bytes + kAlign - 1) & ~(kAlign - 1);
    if (cur_ < blocks_.size() && blocks_[cur_].used + bytes <= blocks_[cur_].size) {
      Block& b = blocks_[cur_];
      void* p = b.data + b.used;
      b.used += bytes;
      return p;
    }
    return allocate_slow(bytes);
  }
  // Forget every allocation; blocks are kept (and merged into one when the pool grew).
  void free_all();
  Mark mark() const;
  void revert(const Mark& m);
  size_t capacity() const;
  size_t used() const;
  size_t num_blocks() const { return blocks_.size(); }
  // Bytes all pools of the process have taken from the system so far (tests check that a steady-state
  // training loop takes none).
  static size_t system_bytes();

 private:
  struct Block {
    char* data = nullptr;
    size_t size = 0, used = 0;
  };
  void* allocate_slow(size_t bytes);
  char* new_block(size_t bytes) const;
  void free_block(char* p, size_t bytes) const;
  std::vector<Block> blocks_;
  size_t cur_ = 0;
  size_t initial_;
  Device* device_;
};

// Reverts a pool to where it was when the scope began, also when the scope is left by an exception
// (a failed op must not leave its scratch memory allocated for the rest of the graph's life).
class PoolScope {
 public:
  explicit PoolScope(MemPool& pool) : pool_(pool), mark_(pool.mark()) {}
  ~PoolScope() { pool_.revert(mark_); }
  PoolScope(const PoolScope&) = delete;
  PoolScope& operator=(const PoolScope&) = delete;

 private:
  MemPool& pool_;
  MemPool::Mark mark_;
};

}  // namespace dynet
