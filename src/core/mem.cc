#include "mem.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

namespace dynet {

namespace {
std::atomic<size_t> g_system_bytes{0};

char* aligned_block(size_t bytes) {
  void* p = std::aligned_alloc(MemPool::kAlign, bytes);
  if (!p) throw std::bad_alloc();
  g_system_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return static_cast<char*>(p);
}
}  // namespace

size_t MemPool::system_bytes() { return g_system_bytes.load(std::memory_order_relaxed); }

MemPool::~MemPool() {
  for (Block& b : blocks_) std::free(b.data);
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
  blocks_.push_back(Block{aligned_block(size), size, bytes});
  cur_ = blocks_.size() - 1;
  return blocks_.back().data;
}

void MemPool::free_all() {
  if (blocks_.size() > 1) {
    // The pool grew: replace the chain by one block of the total size so the next graph of
    // the same size needs no growth. Without the memory for it, keep the chain.
    const size_t total = capacity();
    if (void* merged = std::aligned_alloc(kAlign, total)) {
      for (Block& b : blocks_) std::free(b.data);
      blocks_.clear();
      blocks_.push_back(Block{static_cast<char*>(merged), total, 0});
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
