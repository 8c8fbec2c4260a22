// DyNet's bump allocators (dynet/aligned-mem-pool.h). Standalone: our graphs keep their values in
// their executor's pools (src/core/mem.h), not in these. An AlignedMemoryPool grows by adding
// blocks; allocations never move.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "dynet/mem.h"

namespace dynet {

// One fixed block.
class InternalMemoryPool {
 public:
  InternalMemoryPool(const std::string& name, size_t cap, MemAllocator* a);
  ~InternalMemoryPool();
  InternalMemoryPool(const InternalMemoryPool&) = delete;
  InternalMemoryPool& operator=(const InternalMemoryPool&) = delete;
  // n bytes (rounded up to the alignment), or nullptr when the block is full.
  void* allocate(size_t n);
  void free() { used = 0; }
  void zero_allocated_memory();
  size_t used = 0;

 private:
  std::string name;
  size_t capacity;
  MemAllocator* a;
  void* mem;
};

class AlignedMemoryPool {
 public:
  // expanding_unit: the minimum size of a block added when the pool is full.
  explicit AlignedMemoryPool(const std::string& name, size_t initial_cap, MemAllocator* a = nullptr,
                             size_t expanding_unit = 1 << 24);
  ~AlignedMemoryPool();
  AlignedMemoryPool(const AlignedMemoryPool&) = delete;
  AlignedMemoryPool& operator=(const AlignedMemoryPool&) = delete;

  void* allocate(size_t n);
  // Forgets every allocation (keeps the memory).
  void free();
  void zero_allocated_memory();
  size_t used() const;
  // Rolls back to an earlier used() (DyNet's checkpoint revert); throws std::invalid_argument when
  // s is larger than used().
  void set_used(size_t s);
  size_t get_cap() const;
  const std::string& get_name() const { return name; }
  bool is_dynamic() const { return true; }

 private:
  std::string name;
  std::unique_ptr<MemAllocator> own_allocator;  // before pools: the blocks free through it
  std::vector<std::unique_ptr<InternalMemoryPool>> pools;
  size_t cap;
  size_t expanding_unit;
  MemAllocator* a;
};

}  // namespace dynet
