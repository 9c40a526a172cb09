#pragma once
// Kernels whose tiles are independent (copy, elementwise) in any partition style: pypto's loop
// chunks of tiles, an Ascend C core's or an spmd block's run of tiles.

#include <functional>
#include <string>
#include <vector>

#include "kernels/spec/kernel_spec.hpp"
#include "kernels/spec/lowered.hpp"
#include "model/hardware.hpp"

namespace tilesim {

// Work of one independent tile: its tile step and buffers, and the GM blocks it touches.
using TileWork = std::function<void(const Dims& origin, const Dims& extent, TaskKind& kind,
                                    std::vector<Access>& accesses)>;

LoweredKernel lower_independent_tiles(const KernelSpec& spec, const Hardware& hw,
                                      const std::string& psg, const TileWork& work);

}  // namespace tilesim
