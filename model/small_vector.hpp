#pragma once
// A vector that keeps its first N elements inline (Boost's small_vector): for the short lists the
// hot paths make per copy, per step or per task, where a heap allocation each costs more than the
// work (bench/README.md).

#include <cstddef>

// g++ 12 warns (-Wstringop-overread) inside Boost's inline-buffer copy once it is inlined into a
// move: a false positive on a copy its size check guards, an error under -Werror.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
#include <boost/container/small_vector.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace tilesim {

template <class T, std::size_t N>
using SmallVector = boost::container::small_vector<T, N>;

}  // namespace tilesim
