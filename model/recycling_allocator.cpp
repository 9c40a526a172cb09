#include "model/recycling_allocator.hpp"

#include <algorithm>
#include <bit>

namespace tilesim::recycled_blocks {

namespace {

// Set once this thread's Kept is destroyed: a vector freed later (another thread_local's) goes
// straight to operator delete. A bool needs no destruction, so it outlives every object.
thread_local bool kept_gone = false;

// This thread's kept blocks, by size class; freed with the thread.
struct Kept {
  struct Block {
    void* p;
    size_t bytes;
  };
  std::vector<Block> blocks;
  size_t held = 0;
  Kept() = default;
  Kept(const Kept&) = delete;
  Kept& operator=(const Kept&) = delete;
  ~Kept() {
    kept_gone = true;
    for (const Block& b : blocks) ::operator delete(b.p, b.bytes);
  }
};

Kept& kept() {
  thread_local Kept k;
  return k;
}

}  // namespace

size_t size_class(size_t bytes) {
  return std::bit_ceil(std::max(bytes, kMinBytes));
}

void* take(size_t bytes) {
  if (kept_gone) return ::operator new(bytes);
  Kept& k = kept();
  const auto it = std::find_if(k.blocks.begin(), k.blocks.end(),
                               [&](const Kept::Block& b) { return b.bytes == bytes; });
  if (it == k.blocks.end()) return ::operator new(bytes);
  void* p = it->p;
  k.held -= bytes;
  k.blocks.erase(it);
  return p;
}

void give(void* block, size_t bytes) noexcept {
  if (kept_gone) {
    ::operator delete(block, bytes);
    return;
  }
  Kept& k = kept();
  if (k.held + bytes > kMaxHeldBytes) {
    ::operator delete(block, bytes);
    return;
  }
  try {
    k.blocks.push_back({block, bytes});
  } catch (const std::bad_alloc&) {
    ::operator delete(block, bytes);
    return;
  }
  k.held += bytes;
}

}  // namespace tilesim::recycled_blocks
