#pragma once
// The matmul's work plans: the K slices of a split K, and the spmd partition's order of C tiles
// and their share over the blocks (catlass's basic matmul). The matmul stage lowers them
// (kernels/lower/program/matmul_stage.cpp, lower_spmd_matmul) and the tests check them against
// catlass's swizzle.

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/program/program.hpp"

namespace tilesim {

// One piece of cube work: the C tile at (m0, n0) of extent (mext, next) over k in [k0, k0+kext)
// (the whole K, or one slice of a split K), in batch `batch` (row-major over the batch dims).
struct MatmulWork {
  int64_t m0, mext, n0, next, k0, kext;
  int64_t slice = 0;  // split-K slice index
  int64_t batch = 0;
  int64_t k_first = 0;  // the k tile (of k1 steps from k0) the K loop starts at, wrapping
};

// The spmd matmul, catlass's basic matmul (hicann/catlass include/catlass/gemm/kernel/
// basic_matmul.hpp): each batch's C tile grid [ceil(m/m1), ceil(n/n1)] is handed out in swizzle
// order (inside each L2 block of l2_block tiles, when given; row-major without a swizzle) and
// block b takes the work at loop indices b, b + grid, b + 2 grid, ... (strided) or a contiguous
// run of them; each tile walks k in k1 steps. With split_k S each tile is S pieces of work over K
// slices.
struct SpmdMatmulPlan {
  int64_t m = 0, k = 0, n = 0;
  int64_t m1 = 0, n1 = 0, k1 = 0;                     // the L1 tile
  int64_t swizzle_offset = 0, swizzle_direction = 0;  // offset 0: row-major
  int64_t tiles_m = 0, tiles_n = 0, grid = 0;
  int64_t l2_block_m = 0, l2_block_n = 0;  // 0: no L2 blocking
  int64_t split_k = 1;
  int64_t batches = 1;
  bool contiguous = true;
  int64_t tiles() const { return batches * tiles_m * tiles_n; }
};
struct MatmulTile {
  int64_t m0, mext, n0, next;  // the C tile's origin and valid extent
  int64_t batch = 0;
};
// The C tile at loop index `idx` (catlass GemmIdentityBlockSwizzle<offset, direction>, inside
// the L2 block that index falls in; batch by batch).
MatmulTile spmd_matmul_tile(const SpmdMatmulPlan& p, int64_t idx);
// Each block's work, in the order it runs it.
std::vector<std::vector<MatmulWork>> spmd_matmul_work(const SpmdMatmulPlan& p);
// The k range of split-K slice `s` of `slices` over k in steps of `step` (slices hold whole
// steps; sizes differ by at most one step).
std::pair<int64_t, int64_t> split_k_range(int64_t k, int64_t step, int64_t slices, int64_t s);

}  // namespace tilesim
