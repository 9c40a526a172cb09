#pragma once
// The matmul's plans: how B is stored, what stays in L1, the C tiles each task or block computes
// (PyPTO's cube lowering under pypto, catlass's basic matmul under spmd). The matmul family lowers
// them and the functional executor runs them.

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/spec/kernel_spec.hpp"
#include "kernels/tiling/tile_rules.hpp"

namespace tilesim {

// How B is stored in GM: catlass's RowMajor ([k, n] ND), ColumnMajor ([n, k] ND, "B
// transposed") or zN (pre-formatted in the cube's fractal layout).
enum class BLayout { kRowMajor, kColumnMajor, kNz };
// Which operand a kernel keeps in L1 across the C tiles that share it (its whole K panel).
enum class L1Resident { kNone, kA, kB };

// One piece of cube work: the C tile at (m0, n0) of extent (mext, next) over k in [k0, k0+kext)
// (the whole K, or one slice of a split K).
struct MatmulWork {
  int64_t m0, mext, n0, next, k0, kext;
  int64_t slice = 0;  // split-K slice index
};
struct MatmulBlock {
  int32_t root;
  int64_t m0, mext, n0, next;
  int64_t k0 = 0, kext = 0;  // the K range (0, k) unless split
  int64_t slice = 0;         // its split-K slice
};
// The pypto matmul (PyPTO's cube lowering): a task per C tile (or per split-K slice of it).
struct MatmulPlan {
  int64_t m = 0, k = 0, n = 0, tm = 0, tk = 0, tn = 0, basic_batch = 0;
  bool vector_epilogue = false;
  std::vector<Chunk> chunks;
  std::vector<MatmulBlock> blocks;
};
MatmulPlan plan_matmul(const KernelSpec& spec);

// The spmd matmul, catlass's basic matmul (hicann/catlass include/catlass/gemm/kernel/
// basic_matmul.hpp): the C tile grid [ceil(m/m1), ceil(n/n1)] is handed out in swizzle order
// (inside each L2 block of params.l2_block tiles, when given) and block b takes the work at loop
// indices b, b + grid, b + 2 grid, ... (assignment "strided") or a contiguous run of them
// ("contiguous"); each tile walks k in k1 steps staged in L1 and each step in [m0, n0, k0] L0
// tiles. With params.split_k S each tile is S pieces of work over K slices.
struct SpmdMatmulPlan {
  int64_t m = 0, k = 0, n = 0;
  int64_t m1 = 0, n1 = 0, k1 = 0;  // params.l1_tile (= tile [m1, k1, n1])
  int64_t m0 = 0, n0 = 0, k0 = 0;  // params.l0_tile
  int64_t swizzle_offset = 1, swizzle_direction = 0;
  int64_t tiles_m = 0, tiles_n = 0, grid = 0;
  int64_t l2_block_m = 0, l2_block_n = 0;  // 0: no L2 blocking
  int64_t split_k = 1;
  bool contiguous = false;
  int64_t tiles() const { return tiles_m * tiles_n; }
};
struct MatmulTile {
  int64_t m0, mext, n0, next;  // the C tile's origin and valid extent
};
SpmdMatmulPlan plan_spmd_matmul(const KernelSpec& spec);
// The C tile at loop index `idx` (catlass GemmIdentityBlockSwizzle<offset, direction>, inside
// the L2 block that index falls in).
MatmulTile spmd_matmul_tile(const SpmdMatmulPlan& p, int64_t idx);
// Each block's work, in the order it runs it.
std::vector<std::vector<MatmulWork>> spmd_matmul_work(const SpmdMatmulPlan& p);
// The k range of split-K slice `s` of `slices` over k in steps of `step` (slices hold whole
// steps; sizes differ by at most one step).
std::pair<int64_t, int64_t> split_k_range(int64_t k, int64_t step, int64_t slices, int64_t s);

}  // namespace tilesim
