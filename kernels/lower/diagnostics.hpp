#pragma once
// The rulebook's figures of a candidate (contiguous bytes, prod(tile), auto tiles, PyPTO's limits)
// and the UB use every lowering reports.

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/spec/kernel_spec.hpp"
#include "kernels/spec/lowered.hpp"
#include "model/hardware.hpp"

namespace tilesim {

// The rulebook's figures of a candidate tile, from its geometry alone (no lowering).
struct RuleFigures {
  int64_t contiguous_bytes = 0;
  int64_t prod_tile = 0;  // elements the prod(tile) limit counts (a cube tile: its operands)
  int64_t auto_tiles = 0;
  std::vector<int> tile_exceeds_shape;
  std::vector<std::string> limit_violations;
};
RuleFigures rule_figures(const KernelSpec& spec, const Hardware& hw);

// Fills the figures common to every kernel (contiguous bytes, auto_tiles, limits, UB use).
void fill_common_diagnostics(const KernelSpec& spec, const Hardware& hw, LoweredKernel& out);
// UB use and buffer depth from the kinds' buffer plans; throws on an overflow.
void fill_buffer_diagnostics(const Hardware& hw, LoweredKernel& out);

}  // namespace tilesim
