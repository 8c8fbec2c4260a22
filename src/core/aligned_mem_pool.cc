// DyNet's public allocators (dynet/mem.h, dynet/aligned-mem-pool.h). The engine's own pools are
// core/mem.h's MemPool; these serve code written against DyNet's.
#include "dynet/aligned-mem-pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "dynet/except.h"

namespace dynet {

void* CPUAllocator::malloc(std::size_t n) {
  void* p = std::aligned_alloc(static_cast<std::size_t>(align), round_up_align(n ? n : 1));
  if (!p) throw out_of_memory("CPUAllocator: cannot allocate " + std::to_string(n) + " bytes");
  return p;
}
void CPUAllocator::free(void* mem) { std::free(mem); }
void CPUAllocator::zero(void* p, std::size_t n) { std::memset(p, 0, n); }

InternalMemoryPool::InternalMemoryPool(const std::string& name, size_t cap, MemAllocator* a)
    : name(name), capacity(a->round_up_align(cap)), a(a), mem(a->malloc(capacity)) {
  a->zero(mem, capacity);
}
InternalMemoryPool::~InternalMemoryPool() { a->free(mem); }

void* InternalMemoryPool::allocate(size_t n) {
  const size_t rounded = a->round_up_align(n);
  if (rounded > capacity - used) return nullptr;
  void* p = static_cast<char*>(mem) + used;
  used += rounded;
  return p;
}

void InternalMemoryPool::zero_allocated_memory() {
  if (used) a->zero(mem, used);
}

AlignedMemoryPool::AlignedMemoryPool(const std::string& name, size_t initial_cap, MemAllocator* alloc,
                                     size_t expanding_unit)
    : name(name), cap(initial_cap), expanding_unit(expanding_unit), a(alloc) {
  if (!a) {
    own_allocator = std::make_unique<CPUAllocator>();
    a = own_allocator.get();
  }
  pools.push_back(std::make_unique<InternalMemoryPool>(name, initial_cap, a));
}
AlignedMemoryPool::~AlignedMemoryPool() = default;

void* AlignedMemoryPool::allocate(size_t n) {
  if (void* p = pools.back()->allocate(n)) return p;
  const size_t block = std::max(n, expanding_unit);
  pools.push_back(std::make_unique<InternalMemoryPool>(name, block, a));
  cap += block;
  void* p = pools.back()->allocate(n);
  if (!p) throw out_of_memory("AlignedMemoryPool " + name + ": cannot allocate " + std::to_string(n) + " bytes");
  return p;
}

void AlignedMemoryPool::free() {
  for (auto& p : pools) p->free();
}

void AlignedMemoryPool::zero_allocated_memory() {
  for (auto& p : pools) p->zero_allocated_memory();
}

size_t AlignedMemoryPool::used() const {
  size_t u = 0;
  for (const auto& p : pools) u += p->used;
  return u;
}

void AlignedMemoryPool::set_used(size_t s) {
  if (s > used())
    throw std::invalid_argument("AlignedMemoryPool " + name + "::set_used: " + std::to_string(s) + " is more than the " +
                                std::to_string(used()) + " bytes in use");
  // Later blocks are emptied first: they were filled last.
  size_t excess = used() - s;
  for (size_t k = pools.size(); k-- > 0 && excess > 0;) {
    const size_t take = std::min(excess, pools[k]->used);
    pools[k]->used -= take;
    excess -= take;
  }
}

size_t AlignedMemoryPool::get_cap() const { return cap; }

}  // namespace dynet
