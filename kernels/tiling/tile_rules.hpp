#pragma once
// The tile rules every lowering applies: a tile's rank and alignment, its UB bytes and GM copies,
// the loop_count rule (loop + view/assemble chunks), the extent vector ops compute over, and the
// spmd grid's bounds. Each rule is written here once, with the message it gives.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/spec/kernel_spec.hpp"
#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// Rank match, positive dims, last tile dim aligned to the UB block; throws tilesim::Error. An
// spmd kernel may use an unaligned sub-tile (Triton masked loads, Ascend C DataCopyPad): its UB
// rows are padded (ub_tile_bytes) and its copies are padded copies (LoweringContext::gm_dma).
void validate_tile(const KernelSpec& spec, const Hardware& hw);
// The 32 B rule, written once: a tile's last dim of `bytes`-byte elements fills whole UB blocks
// (ub.align_bytes). Throws kAlignment: "<subject> is misaligned: last dim L x B B = N B is not a
// multiple of A B (use a multiple of E elements)", `subject` naming the tile ("add: tile (4, 7)").
void check_row_alignment(const std::string& subject, int64_t last, int64_t bytes,
                         const Hardware& hw);
// The loop_count rule, written once: a loop cuts its axis into at most as many chunks as the axis
// has elements. Throws kLimits: "<subject>loop_count C exceeds the loop axis A of size N".
void check_loop_count(const std::string& subject, int64_t count, int axis, int64_t size);
// Loop chunks are root functions of the pypto partition; the others share tiles over blocks or
// cores, so a loop_count other than 1 there is a kLimits error.
void check_partition_loop(const KernelSpec& spec);

// UB bytes of one tile buffer: each row rounded up to ub.align_bytes.
int64_t ub_tile_bytes(const Dims& tile, DType dtype, const Hardware& hw);
// UB bytes a copy brings into its own buffer: each burst rounded up to ub.align_bytes (a
// column's scalars, contiguous in GM, arrive packed).
int64_t ub_copy_bytes(const DmaOp& copy, const Hardware& hw);

struct Chunk {
  int64_t offset = 0;
  int64_t size = 0;
};
// `loop + view/assemble`: cut `axis` into ceil_div(n, loop_count)-sized chunks (the last may be
// shorter). Throws when loop_count exceeds the axis.
std::vector<Chunk> loop_chunks(const KernelSpec& spec, int axis);
// The loop axis: the spec's, or the outermost axis not in `dims` (the spec's reduction dims when
// not given).
int default_loop_axis(const KernelSpec& spec, const std::vector<int>& dims);
int default_loop_axis(const KernelSpec& spec);

// An spmd launch shares `units` of work (named `what` in the message, `note` appended) over
// partition.grid blocks (>= 1); blocks past the units own nothing and cost their start, so a grid
// past both the units and the task limit is a kLimits error.
void check_grid(const KernelSpec& spec, int64_t units, const std::string& what,
                const std::string& note);

// The extent vector ops compute over: PyPTO code is generated for the static tile shape, so in a
// dim where the tile exceeds the tensor the padding is computed too (data moved is only the
// valid part). Ragged tails inside the tensor compute their valid extent.
Dims compute_extent(const Dims& shape, const Dims& tile, const Dims& extent);

// The pypto partition's tiles: every loop chunk's tile grid, in the order tasks are built, with
// the tile's origin in the full tensor and its root function (loop chunk).
using LoopTileVisitor = std::function<void(const Dims& origin, const Dims& extent, int32_t root)>;
void for_each_loop_tile(const KernelSpec& spec, const LoopTileVisitor& visit);

}  // namespace tilesim
