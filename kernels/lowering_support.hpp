#pragma once
// Helpers shared by kernel families: validation, loop chunks, kind de-duplication, the two
// partition styles for kernels whose tiles are independent, and the diagnostics every family
// reports.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/lowering.hpp"

namespace tilesim {

// Rank match, positive dims, last tile dim aligned to the UB block; throws tilesim::Error. An
// spmd kernel may use an unaligned sub-tile (Triton masked loads, Ascend C DataCopyPad): its UB
// rows are padded (ub_tile_bytes) and its copies are padded copies (tile_dma).
void validate_tile(const KernelSpec& spec, const Hardware& hw);

// UB bytes of one tile buffer: each row rounded up to ub.align_bytes.
int64_t ub_tile_bytes(const Dims& tile, DType dtype, const Hardware& hw);
// The DMA instruction moving the block `extent` at `origin` of tensor `shape` (block_dma); under
// the spmd partition it is a DataCopyPad, whose unaligned rows pay their padding.
DmaOp tile_dma(const KernelSpec& spec, DmaDir dir, const Dims& shape, const Dims& origin,
               const Dims& extent, const Hardware& hw);

struct Chunk {
  int64_t offset = 0;
  int64_t size = 0;
};
// `loop + view/assemble`: cut `axis` into ceil_div(n, loop_count)-sized chunks (the last may be
// shorter). Throws when loop_count exceeds the axis.
std::vector<Chunk> loop_chunks(const KernelSpec& spec, int axis);

// Task kinds keyed by the exact work they contain, so identical tiles share one kind.
class KindCache {
 public:
  int get(TaskGraph& graph, const TaskKind& kind);

 private:
  std::map<std::vector<int64_t>, int> ids_;
  std::vector<int64_t> sig_;  // reused: a lowering asks once per task
};
// A kind's or a step's work as numbers (a step's without its repeat), appended to `out`.
void append_kind_signature(const TaskKind& kind, std::vector<int64_t>& out);
void append_step_signature(const TileStep& step, std::vector<int64_t>& out);
// Appends `step` to a looping task: onto the last step's repeat when their work is identical.
void append_step(TaskKind& kind, const TileStep& step);
// An spmd launch shares `units` of work (named `what` in the message, `note` appended) over
// partition.grid blocks (>= 1); blocks past the units own nothing and cost their start, so a grid
// past both the units and the task limit is a kLimits error.
void check_grid(const KernelSpec& spec, int64_t units, const std::string& what,
                const std::string& note);

// Work of one independent tile: its tile step and buffers, and the GM blocks it touches.
using TileWork = std::function<void(const Dims& origin, const Dims& extent, TaskKind& kind,
                                    std::vector<Access>& accesses)>;

// Tensor ids for Access keys: kernel inputs are 0, 1, ...; these name the rest.
constexpr uint32_t kOutputTensor = 100;     // the kernel's output
constexpr uint32_t kWorkspaceTensor = 200;  // intermediates between phases (+ phase index)
constexpr uint32_t kStatsTensor = 300;      // partial statistics (+ phase index)

// The extent vector ops compute over: PyPTO code is generated for the static tile shape, so in a
// dim where the tile exceeds the tensor the padding is computed too (data moved is only the
// valid part). Ragged tails inside the tensor compute their valid extent.
Dims compute_extent(const Dims& shape, const Dims& tile, const Dims& extent);

// A binary vector op over the compute extent `ce`. With a broadcast operand and rows longer than
// one repeat: one instruction per row, the operand's row (or block) reused through repeat stride
// 0, as Ascend C's Sub(z[r * n], x[r * n], y, n) does; otherwise one instruction over the tile (a
// broadcast operand read through its repeat and block strides, rows that fit one repeat packed).
void add_binary_vec(VecClass cls, DType dt, const Dims& ce, bool broadcast, const Hardware& hw,
                    std::vector<VecOp>& vec);

// The pypto partition's tiles: every loop chunk's tile grid, in the order tasks are built, with
// the tile's origin in the full tensor and its root function (loop chunk).
using LoopTileVisitor = std::function<void(const Dims& origin, const Dims& extent, int32_t root)>;
void for_each_loop_tile(const KernelSpec& spec, const LoopTileVisitor& visit);

// Lowers a kernel whose tiles are independent (copy, elementwise) in any partition style.
LoweredKernel lower_independent_tiles(const KernelSpec& spec, const Hardware& hw,
                                      const std::string& psg, const TileWork& work);

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
