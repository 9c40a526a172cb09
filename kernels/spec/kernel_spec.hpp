#pragma once
// What the user asks to run: op, shape, dtype, reduction dim(s), tile, loop count and partition.
// Parsed from a run config with JsonReader; every rejection is one line naming the file, the key
// and what is allowed, and the op's params are checked against its registry declaration.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/dtype.hpp"
#include "model/enum_names.hpp"
#include "model/tile_geometry.hpp"

namespace tilesim {

enum class PartitionStyle {
  kPypto,    // PyPTO tile graph: one task per tile subgraph, loop chunks are root functions
  kAscendC,  // hand-written Ascend C: tiles split evenly over `cores`, one looping task per core
  kSpmd,     // SPMD launch (Ascend C blockDim / Triton grid): `grid` blocks, each owning a
             // contiguous run of the work (tiles, or whole output rows of a reduction; with more
             // blocks than rows or params.spmd_rows "split", sub-tiles whose split rows add up
             // atomically or in a second launch) that it walks
             // through UB in `tile`-sized sub-tiles with `buffer_count`-deep buffering; the
             // hardware places each block on the first free core (waves when grid > cores)
};
inline constexpr std::array<EnumName<PartitionStyle>, 3> kPartitionNames = {
    {{PartitionStyle::kPypto, "pypto"},
     {PartitionStyle::kAscendC, "ascendc"},
     {PartitionStyle::kSpmd, "spmd"}}};
const char* partition_name(PartitionStyle p);  // "pypto", "ascendc", "spmd"

// Block `b` of `grid` blocks over `units` units of work: the contiguous run [begin, end) it owns,
// split evenly (units * b / grid), so block sizes differ by at most one unit; with more blocks
// than units, blocks 0..units-1 own one each and the rest nothing.
struct BlockRange {
  int64_t begin = 0;
  int64_t end = 0;
};
BlockRange block_range(int64_t units, int64_t grid, int64_t b);

// Block regions of `shape` cut by `block` (ceil-div per dim): prod(ceil(shape / block)).
int64_t region_count(const Dims& shape, const Dims& block);

struct Program;  // kernels/program/program.hpp

// Tiles of a tile program by name, each set to a shape (kernels/program/program.hpp).
using NamedTiles = std::vector<std::pair<std::string, Dims>>;

struct KernelSpec {
  std::string op;
  Dims shape;
  DType dtype = DType::kFp32;
  std::vector<int> dims;  // reduction dims (normalised to 0..rank-1), empty for elementwise
  Dims tile;
  int64_t loop_count = 1;
  int loop_axis = -1;  // -1: the outermost non-reduction axis
  PartitionStyle partition = PartitionStyle::kPypto;
  int64_t cores = 0;  // kAscendC: cores used (0: every core of the op's type)
  int64_t grid = 0;   // kSpmd: blocks launched (>= 1)
  Dims block;  // kSpmd: the region one block owns (rank of shape), walked in `tile` sub-tiles;
               // empty: a block's region is its run of whole tiles
  int64_t max_tasks_per_psg = -1;  // kPypto: tasks per PSG per root function (-1: one per core
                                   // of its type, 0: one task per tile chain)
  int buffer_count = 2;            // requested multi-buffering depth
  int preload = 0;                 // kSpmd: > 0, the kernel pipelines across its tasks: each core's
                    // consecutive tasks overlap overlap_depth() deep (TaskKind::overlap: a flash
                    // stage's, a matmul block's), and a flash stage's cube runs this many key
                    // blocks ahead of its vector cores (pto-isa's qkPreload). 0: neither
  // The tasks a core of a preloading kernel holds at once: the iterations it runs ahead, at
  // least its buffers' ping-pong (catlass's preload of 1 with 2 buffers: 2). 1: serial.
  int overlap_depth() const { return preload > 0 ? std::max(buffer_count, preload) : 1; }
  bool triton = false;  // kSpmd: partition.source "triton": the Triton-Ascend compiler
                        // plans UB (TaskKind::compiler_multibuffer)
  nlohmann::json params = nlohmann::json::object();  // op-specific settings ("groups", ...)
  // op "program": a user's tile program (kernels/program/program.hpp). shape and dtype are those of
  // the iteration space of its tile named `program_tile`, which `tile` sets; `loop_count` sets its
  // loop named `program_loop` ("" when it has none).
  std::shared_ptr<const Program> program;
  std::string program_tile;
  std::string program_loop;
  // Other named tiles of the program set to other shapes (a sweep over several tiles at once).
  NamedTiles program_tiles;
};

// Refuses, before anything is allocated, a kernel whose tensor or tile is larger than any device
// (kMaxTensorBytes) or whose work cuts into more sub-tiles than max_tasks() (lowering takes
// memory per sub-tile, about 350 B: the default 2^24 keeps a run within a 24 GB machine, and
// the CLI's --max-tasks raises it). Sizes are computed so they cannot overflow. Throws
// tilesim::Error (kind limits) naming the key and the figures.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;
inline constexpr int64_t kDefaultMaxTasks = int64_t{1} << 24;
int64_t max_tasks();
void set_max_tasks(int64_t limit);  // process-wide: the CLI sets it once, before any work
// The sub-tiles (tile tasks before packing) the spec's work cuts into, saturated at 2^62 (so it
// never wraps).
int64_t implied_subtiles(const KernelSpec& spec);
// a * b for a, b >= 0, saturated at `cap` + 1 (no overflow for any int64 inputs).
int64_t capped_mul(int64_t a, int64_t b, int64_t cap);

// A config's "partition": "pypto", "ascendc" or {"style": ..., "cores": N, "max_tasks_per_psg": N,
// "grid": G, "block": [...], "source": ...} into `s` (after its shape: block's rank).
class JsonReader;
void read_partition(const JsonReader& p, KernelSpec& s);

// Splits "a,b,c" into dims; throws naming `what` on bad input.
Dims parse_dims(const std::string& text, const std::string& what);
std::string format_dims(const Dims& d);

}  // namespace tilesim
