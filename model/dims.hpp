#pragma once
// A tensor's or a tile's extents, or an origin: a few dims, kept inline. The lowering makes one
// for every block, region and copy it places; a heap allocation each was a tenth of a sweep's
// time (bench/README.md).

#include <cstdint>

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

using Dims = boost::container::small_vector<int64_t, 6>;

}  // namespace tilesim
