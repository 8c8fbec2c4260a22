#include "mem.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

// AddressSanitizer builds keep heap blocks, whose ends it guards (an op writing past its output at the end of
// a block is caught); mappings have no redzones.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DYNET_POOL_ASAN 1
#endif
#endif
#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__) && !defined(DYNET_POOL_ASAN)
#define DYNET_POOL_MAPPINGS 1
#include <sys/mman.h>
#endif

#include "dynet/devices.h"

namespace dynet {

namespace {
std::atomic<size_t> g_system_bytes{0};

#ifdef DYNET_POOL_MAPPINGS
// Blocks are mappings of their own, so that merging a grown chain can extend one of them with mremap:
// the kernel moves its page tables, and the pages the graph already touched stay resident. A new
// aligned_alloc'd block of the total size (and freeing the chain) faulted every page in again, about
// 10k faults per growth on the parser and rnnlm bench tasks. Blocks of 2 MB and more ask for
// transparent huge pages where the system grants them on request ("madvise" mode): a first touch
// then maps 2 MB instead of 4 KB.
// Huge pages back only 2 MB ranges on a 2 MB boundary, where the kernel puts only mappings whose length
// is a multiple of 2 MB (and mremap puts a moved block anywhere): placed there by hand, the autobatched
// bilstm bench task has all of its pools in huge pages instead of 63 of 240 MB (fewer TLB misses).
constexpr size_t kHugePage = size_t(2) << 20;
constexpr int kCollapse = 25;  // MADV_COLLAPSE, which glibc's headers may lack

// `bytes` of addresses from a 2 MB boundary: 2 MB more mapped, the slack on either side unmapped.
char* map_aligned(size_t bytes, int prot) {
  bytes = (bytes + 4095) & ~size_t(4095);
  void* p = mmap(nullptr, bytes + kHugePage, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p), at = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (at > start) munmap(p, at - start);
  munmap(reinterpret_cast<void*>(at + bytes), start + kHugePage - at);
  return reinterpret_cast<char*>(at);
}

char* map_block(size_t bytes) {
  void* p = bytes >= kHugePage ? map_aligned(bytes, PROT_READ | PROT_WRITE)
                               : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!p || p == MAP_FAILED) throw std::bad_alloc();
  if (bytes >= kHugePage) madvise(p, bytes, MADV_HUGEPAGE);
  return static_cast<char*>(p);
}
void unmap_block(char* p, size_t bytes) { munmap(p, bytes); }
// p's mapping grown to `bytes`, or nullptr: in place where it starts on a 2 MB boundary and the addresses
// after it are free, else moved onto one. Pages touched before such a move stay 4 KB pages unless
// collapsed into huge ones (once here, rather than missing the TLB in every later pass).
char* grow_block(char* p, size_t old_bytes, size_t bytes) {
  const bool aligned = reinterpret_cast<uintptr_t>(p) % kHugePage == 0;
  void* q = bytes < kHugePage ? mremap(p, old_bytes, bytes, MREMAP_MAYMOVE)
            : aligned         ? mremap(p, old_bytes, bytes, 0)
                              : MAP_FAILED;
  if (q == MAP_FAILED && bytes >= kHugePage) {
    char* at = map_aligned(bytes, PROT_NONE);
    q = at ? mremap(p, old_bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, at) : MAP_FAILED;
    if (q == MAP_FAILED && at) munmap(at, bytes);
    if (q != MAP_FAILED && !aligned) madvise(q, old_bytes, kCollapse);
  }
  if (q == MAP_FAILED) return nullptr;
  if (bytes >= kHugePage) madvise(q, bytes, MADV_HUGEPAGE);
  return static_cast<char*>(q);
}
#else
char* map_block(size_t bytes) {
  void* p = std::aligned_alloc(MemPool::kAlign, bytes);
  if (!p) throw std::bad_alloc();
  return static_cast<char*>(p);
}
void unmap_block(char* p, size_t) { std::free(p); }
char* grow_block(char*, size_t, size_t) { return nullptr; }
#endif

char* system_block(size_t bytes) {
  char* p = map_block(bytes);
  g_system_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return p;
}
}  // namespace

size_t MemPool::system_bytes() { return g_system_bytes.load(std::memory_order_relaxed); }

char* MemPool::new_block(size_t bytes) const {
  if (!device_) return system_block(bytes);
  char* p = static_cast<char*>(device_->allocate(bytes));
  g_system_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return p;
}
void MemPool::free_block(char* p, size_t bytes) const {
  if (device_)
    device_->deallocate(p);
  else
    unmap_block(p, bytes);
}

MemPool::~MemPool() {
  for (Block& b : blocks_) free_block(b.data, b.size);
}

void* MemPool::allocate_slow(size_t bytes) {
  // Move on to a later block that fits, else append one at least twice the current capacity.
  while (cur_ + 1 < blocks_.size()) {
    ++cur_;
    Block& b = blocks_[cur_];
    b.used = 0;
    if (bytes <= b.size) {
      b.used = bytes;
      return b.data;
    }
  }
  size_t size = std::max({bytes, initial_, capacity()});
  size = (size + kAlign - 1) & ~(kAlign - 1);
  blocks_.push_back(Block{new_block(size), size, bytes});
  cur_ = blocks_.size() - 1;
  return blocks_.back().data;
}

void MemPool::free_all() {
  if (blocks_.size() > 1) {
    // The pool grew: replace the chain by one block of the total size so the next graph of the same
    // size needs no growth. The last block is the largest (each new one is at least the capacity
    // before it) and the one touched last, so it is the one extended. Without the memory for it,
    // keep the chain.
    const size_t total = capacity();
    Block& last = blocks_.back();
    char* merged = device_ ? nullptr : grow_block(last.data, last.size, total);
    if (merged) {
      g_system_bytes.fetch_add(total - last.size, std::memory_order_relaxed);
      last.data = nullptr;
    } else {
      try {
        merged = new_block(total);
      } catch (const std::bad_alloc&) {
      }
    }
    if (merged) {
      for (Block& b : blocks_)
        if (b.data) free_block(b.data, b.size);
      blocks_.clear();
      blocks_.push_back(Block{merged, total, 0});
    }
    for (Block& b : blocks_) b.used = 0;
  }
  if (!blocks_.empty()) blocks_[0].used = 0;
  cur_ = 0;
}

MemPool::Mark MemPool::mark() const {
  if (blocks_.empty()) return {};
  return {cur_, blocks_[cur_].used};
}

void MemPool::revert(const Mark& m) {
  if (blocks_.empty()) return;
  cur_ = m.block;
  blocks_[cur_].used = m.used;
}

size_t MemPool::capacity() const {
  size_t c = 0;
  for (const Block& b : blocks_) c += b.size;
  return c;
}

size_t MemPool::used() const {
  size_t u = 0;
  for (size_t i = 0; i <= cur_ && i < blocks_.size(); ++i) u += blocks_[i].used;
  return u;
}

}  // namespace dynet
