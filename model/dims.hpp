#pragma once
// A tensor's or a tile's extents, or an origin: a few dims, kept inline. The lowering makes one
// for every block, region and copy it places; a heap allocation each was a tenth of a sweep's
// time (bench/README.md).

#include <cstdint>

#include "model/small_vector.hpp"

namespace tilesim {

using Dims = SmallVector<int64_t, 6>;

}  // namespace tilesim
