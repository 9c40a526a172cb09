#pragma once
// An allocator for the large arrays a sweep builds and drops once per candidate (a task graph's
// accesses, the L2 model's per-block state): a block of 64 KiB or more that a thread frees is kept
// for that thread's next request of its size class (a power of two), up to 64 MiB a thread,
// instead of going back to malloc.
//
// Why: malloc may hand freed memory straight back to the OS. Dask's nanny starts every worker
// with MALLOC_TRIM_THRESHOLD_=65536, which also pins glibc's mmap threshold at 128 KiB, so each
// candidate's arrays were fresh pages, faulted in one by one: ~5,000 faults for half of the
// exhaustive softmax sweep, a fifth of its time on this VM (bench/README.md). Kept blocks are
// reused whatever the process's malloc does; results do not depend on where memory comes from.

#include <cstddef>
#include <new>
#include <vector>

namespace tilesim {

namespace recycled_blocks {
inline constexpr size_t kMinBytes = size_t{1} << 16;      // smaller: plain operator new
inline constexpr size_t kMaxHeldBytes = size_t{1} << 26;  // kept per thread, at most
// A block of `bytes` (a power of two >= kMinBytes): one this thread freed, else a new one.
void* take(size_t bytes);
// Keeps a block take() gave, for this thread's next take() of its size, or frees it.
void give(void* block, size_t bytes) noexcept;
// The size class of `bytes` (>= kMinBytes): the next power of two.
size_t size_class(size_t bytes);
}  // namespace recycled_blocks

template <class T>
struct RecyclingAllocator {
  using value_type = T;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

  RecyclingAllocator() = default;
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>& /*other*/) noexcept {}

  T* allocate(size_t n) {
    if (n > max_size()) throw std::bad_array_new_length();
    const size_t bytes = n * sizeof(T);
    if (bytes < recycled_blocks::kMinBytes) return static_cast<T*>(::operator new(bytes));
    return static_cast<T*>(recycled_blocks::take(recycled_blocks::size_class(bytes)));
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < recycled_blocks::kMinBytes)
      ::operator delete(p, bytes);
    else
      recycled_blocks::give(p, recycled_blocks::size_class(bytes));
  }
  static constexpr size_t max_size() noexcept { return (size_t{1} << 40) / sizeof(T); }

  template <class U>
  bool operator==(const RecyclingAllocator<U>& /*other*/) const noexcept {
    return true;  // any block may be freed through any of them, on any thread
  }
};

// A vector whose large buffers are recycled (above).
template <class T>
using RecycledVector = std::vector<T, RecyclingAllocator<T>>;

}  // namespace tilesim
