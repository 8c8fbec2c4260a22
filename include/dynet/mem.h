// DyNet's raw memory allocators (dynet/mem.h): aligned malloc/free/zero for the CPU. Our graphs and
// parameters allocate through their own pools; these are for code that used DyNet's directly.
#pragma once

#include <cstddef>

namespace dynet {

struct MemAllocator {
  explicit MemAllocator(int align) : align(align) {}
  MemAllocator(const MemAllocator&) = delete;
  MemAllocator& operator=(const MemAllocator&) = delete;
  virtual ~MemAllocator() = default;
  virtual void* malloc(std::size_t n) = 0;
  virtual void free(void* mem) = 0;
  virtual void zero(void* p, std::size_t n) = 0;
  std::size_t round_up_align(std::size_t n) const {
    return align < 2 ? n : (n + static_cast<std::size_t>(align) - 1) / static_cast<std::size_t>(align) * align;
  }
  const int align;
};

// 32-byte aligned CPU memory; malloc throws dynet::out_of_memory (dynet/except.h) when it fails.
struct CPUAllocator : MemAllocator {
  CPUAllocator() : MemAllocator(32) {}
  void* malloc(std::size_t n) override;
  void free(void* mem) override;
  void zero(void* p, std::size_t n) override;
};

// DyNet's allocator for parameters shared across forked processes; here the same as CPUAllocator
// (several threads share parameters instead).
struct SharedAllocator : CPUAllocator {};

}  // namespace dynet
