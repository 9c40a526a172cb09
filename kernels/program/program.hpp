#pragma once
// A user's tile program ("here is my kernel"): tensors, a sequence of PyPTO-style tensor ops, the
// vec / cube tile shapes in force at each op (set_vec_tile_shapes / set_cube_tile_shapes,
// changeable between ops) and loop regions over an axis (pypto.loop with view/assemble of the
// chunk). The loader (tools/formats/program_file.hpp) builds it and checks its graph (definitions,
// shapes, dtypes); plan_stages checks its tiles and cuts it into stages (PyPTO's fusion: a run of
// vector ops on one tile grid, a reduction whose tile covers its reduced dims and the ops using
// its result included, is one tile program that keeps its intermediates in UB; a reduction that
// splits a reduced dim ends it; transpose, gather and matmul are stages of their own; a tensor
// crossing from one stage to a later one goes through GM). lower_program (task graph) and
// execute_program_tiled (Eigen, kernels/functional/program_functional.cpp) walk the same stages.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/ops/op_table.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "kernels/tiling/block_regions.hpp"
#include "kernels/tiling/merge_modes.hpp"
#include "model/enum_names.hpp"
#include "model/task_graph.hpp"
#include "model/tile_geometry.hpp"

namespace tilesim {

struct ProgTensor {
  std::string name;
  Dims shape;
  DType dtype = DType::kFp32;
  bool input = false;
  bool output = false;
  // Reads do not allocate in L2 (Ascend C SetL2CacheHint(CACHE_MODE_DISABLE) on data read once),
  // so L2 keeps its room for the lines that are read again.
  bool l2_bypass = false;
  // Read once by each spmd block (or Ascend C core) before it walks its sub-tiles and held in UB
  // across them, one copy (a weight row a kernel loads before its loop); the operand's region is
  // the same for every sub-tile of a block. Under pypto every task is its own block.
  bool resident = false;
  // A program's view or reshape op makes no copy: its output is an alias of tensor `alias_of`'s
  // bytes, a view of the part at `view_offset` (same rank; PyPTO's view / slice of a computed
  // tile) or, with `view_offset` empty, a reshape of the same elements (row-major, contiguous).
  int alias_of = -1;
  Dims view_offset = {};
  bool is_view() const { return alias_of >= 0 && !view_offset.empty(); }
};

struct ProgTile {
  std::string name;
  bool cube = false;  // set_cube_tile_shapes: [tm, tk, tn], the C tile and the L1 k step
  Dims dims;
  // cube: the L0 tile [m0, k0, n0] of each mmad when it is smaller than the L1 tile (PyPTO's
  // [[mL0, mL1], [kL0, kL1], [nL0, nL1]]); empty: the L1 tile itself.
  Dims l0;
};

struct ProgLoop {
  std::string name;
  int axis = 0;  // of the iteration space of every op in its body
  int64_t loop_count = 1;
  int parent = -1;  // the loop whose body holds this one (nested loops cut different axes)
};
// How deep loops nest (PyPTO's nested pypto.loop; each innermost chunk is a root function).
inline constexpr int kMaxLoopDepth = 3;

// spmd: how a splitting reduction's output rows are shared over the blocks: whole rows per block
// (each accumulates its rows in UB), or (row, sub-tile) units, a row split over blocks finished
// in GM; auto: whole rows while there are at least as many rows as blocks. Past those, a
// block's part of a row kept in GM rather than UB, sub-tile by sub-tile, as a Triton kernel
// that does its accumulation in GM inside its loop: kTiles, each sub-tile adds its partial into
// the output atomically (tl.atomic_add in the loop); kSlots, each block's part in a slot of its
// own that each sub-tile reads, adds to and writes back (a per-program accumulator row,
// dW[pid] += ...), the slots folded by a second launch (the wrapper's dW.sum(0)). kParts: as
// split, each block folding its part in UB, but writing it once to a slot of its own rather than
// adding it atomically (a per-program partial row stored after the loop), the slots folded by a
// second launch.
enum class SpmdRows { kAuto, kWhole, kSplit, kTiles, kSlots, kParts };
inline constexpr std::array<EnumName<SpmdRows>, 6> kSpmdRowsNames = {{{SpmdRows::kAuto, "auto"},
                                                                      {SpmdRows::kWhole, "whole"},
                                                                      {SpmdRows::kSplit, "split"},
                                                                      {SpmdRows::kTiles, "tiles"},
                                                                      {SpmdRows::kSlots, "slots"},
                                                                      {SpmdRows::kParts, "parts"}}};

// How B is stored in GM: catlass's RowMajor ([k, n] ND), ColumnMajor ([n, k] ND, "B
// transposed") or zN (pre-formatted in the cube's fractal layout).
enum class BLayout { kRowMajor, kColumnMajor, kNz };
// Which operand a kernel keeps in L1 across the C tiles that share it (its whole K panel).
enum class L1Resident { kNone, kA, kB };
inline constexpr std::array<EnumName<L1Resident>, 3> kL1ResidentNames = {
    {{L1Resident::kNone, "none"}, {L1Resident::kA, "a"}, {L1Resident::kB, "b"}}};

// A matmul's cube options (the matmul family's params; a program's matmul op fields, docs/
// programs.md): what stays in L1, the split K and its merge, the AIV cast epilogue, the order
// the C tiles run in (pypto: L2 views, a root function each; spmd: catlass's swizzle and block
// assignment, inside L2 blocks).
struct MatmulOptions {
  bool b_nz = false;  // B stored in the cube's zN fractal layout (column-major: transpose_b)
  L1Resident l1_resident = L1Resident::kNone;
  int64_t l1_reuse = 1;          // pypto: C tiles sharing the resident operand merged into one task
  int64_t split_k = 1;           // K cut into this many slices, each its own cube task
  bool split_k_atomic = true;    // partials added atomically in C; else AIV tasks sum a workspace
  bool vector_epilogue = false;  // pypto: C written fp32 to a workspace an AIV task casts
  Dims swizzle;  // spmd: [offset, direction] (catlass GemmIdentityBlockSwizzle); empty: row-major
  bool strided = false;  // spmd: block b takes the work at b, b + grid, ... (else a contiguous run)
  // spmd: block b walks its K loop from k tile b mod (k tiles), wrapping (catlass's
  // ENABLE_SHUFFLE_K), so blocks sharing an operand panel read different lines at once.
  bool shuffle_k = false;
  Dims l2_block;  // [tiles_m, tiles_n]: C tiles walked L2 block by L2 block; empty: none
  // The PSG of the AIV tasks after the cube (split-K merge or cast); empty: the stage's PSG with
  // ":split_k_merge" or ":epilogue".
  std::string aiv_psg;
  // catlass's compile-time check: the L1 and L0 buffers fit at the spec's buffer_count (its
  // STAGES), where a program's cube task may run at a lower depth.
  bool fixed_depth = false;
};

struct ProgOp {
  std::string name;  // table name
  const OpRecord* info = nullptr;
  std::vector<int> in;  // tensor ids (where: cond, x, y; gather: x, index; matmul: a, b)
  int out = -1;
  std::optional<double> scalar;  // binary op with a scalar second operand
  std::vector<int> dims;         // reduce: normalised, ascending
  bool keepdim = true;
  bool transpose_b = false;  // matmul: B is stored [..., n, k] (A @ B^T, attention's Q K^T)
  MatmulOptions mm;          // matmul: the cube options
  // A reduction whose tile splits a reduced dim: how the partials of one output block merge
  // (kInTask: the task walks its row's tiles accumulating in UB, as Triton and Ascend C loops
  // do; kChain / kTree / kAtomic across tasks, as the reduce family's merge).
  MergeMode merge = MergeMode::kInTask;
  SpmdRows spmd_rows = SpmdRows::kAuto;
  // A splitting reduction whose next stage (the vector ops on its tiles that use its result, a
  // softmax's or a norm's second pass) runs in the task that finishes the row, where the result
  // is whole in one task (merge in_task under pypto; an spmd block's whole rows): the reducing
  // families' kernels, and Ascend C / Triton kernels that loop over a row twice.
  bool apply_in_task = false;
  // A logsumexp with merge "online": its running max and sum are carried into the ops after it,
  // sub(x, lse) -> exp -> matmul(p, v), rescaling their accumulator as the max grows (flash
  // attention); plan_stages fuses the matmul before it through the matmul after it.
  bool online = false;
  // A binary op whose two sources sit in different UB bank groups (addresses 256 B apart modulo
  // 512 B), so a repeat reads both at once rather than one after the other.
  bool bank_conflict_free = false;
  // nd2nz: 32 B blocks between the starts of two C0 columns of the NZ tile in UB (Ascend C
  // CopyRepeatParams dstStride, the example's dstNzC0Stride); 0: the tile's rows, the compact
  // layout.
  int64_t c0_stride = 0;
  // A reduction whose in-row part runs as block reduces (row_reduce "block": pto-isa's TROWSUM /
  // TROWMAX) rather than halving adds and a WholeReduce per row ("whole": Ascend C's ReduceSum).
  bool block_reduce = false;
  // load: where the copy lands (UB on the vector cores, or L1 on the cube cores).
  MemSpace dest = MemSpace::kUb;
  // The name of the stage (PSG) this op opens; empty: "stage<i>:<its ops>".
  std::string psg;
  int tile = -1;              // the vec (or, for matmul, cube) tile in force
  int loop = -1;              // the loop region it belongs to
  std::string where() const;  // "op 3 (exp)"
  int index = 0;
};

// How a fused vector stage's tensors take UB. kPooled: PyPTO's BufferPool, every tensor of an
// iteration in one pool, a result written over a source that dies at it. kBuffers: a buffer per
// loaded and per stored tensor (Ascend C's TQue, Triton-Ascend's allocations) and the peak of the
// temporaries; a broadcast operand's buffer holds what its copy brings (a column's scalars packed).
// kAuto: kPooled under the pypto partition, kBuffers under the others.
enum class UbPlan { kAuto, kPooled, kBuffers };
inline constexpr std::array<EnumName<UbPlan>, 3> kUbPlanNames = {
    {{UbPlan::kAuto, "auto"}, {UbPlan::kPooled, "pooled"}, {UbPlan::kBuffers, "buffers"}}};

struct Program {
  std::string name;
  std::string origin;  // the file it came from, for messages
  std::vector<ProgTensor> tensors;
  std::vector<ProgTile> tiles;
  std::vector<ProgLoop> loops;
  std::vector<ProgOp> ops;
  UbPlan ub_plan = UbPlan::kAuto;
  // Whether a block computes again what each of its tiles uses (spmd and ascendc: a kernel's code
  // runs per block and per sub-tile, as written): a vector op on operands broadcast along the dims
  // the tile walks (a Triton kernel's `w.to(tl.float32)` of a weight [1, N] in its row loop) runs
  // in the stage of the ops that use it, each tile computing it for itself, where PyPTO (false)
  // computes each tensor once, a stage of its own that the users read through GM. plan_stages
  // keeps such an op in a stage of its own when its result must reach GM (an output, or a later
  // stage reads it): each tile would write it again.
  bool recompute_broadcasts = false;
  // Built by a family from a run config (kernels/families/): its messages name the op and tile as
  // the config gives them, not the program's ops and stages.
  bool built_in = false;
  int tensor_id(const std::string& name) const;  // -1 when absent
  int tile_id(const std::string& name) const;
  int loop_id(const std::string& name) const;
};

// The iteration space of an op: its output (elementwise, transpose, gather), its input (reduce),
// or [batch..., m, k, n] for a matmul.
Dims iteration_shape(const Program& p, const ProgOp& op);

// A stage: ops [first, last] run by one task per tile of `shape` under `tile`.
struct ProgStage {
  int first = 0, last = 0;
  OpKind kind = OpKind::kUnary;  // kUnary: a fused vector stage
  Dims shape;
  Dims tile;
  Dims l0;        // a matmul stage's L0 tile [m0, k0, n0] (empty: its tile's last three)
  int loop = -1;  // the innermost loop (-1: none)
  // A matmul's L2 views (MatmulOptions::l2_block) under pypto: a root function per view and loop
  // chunk.
  int64_t views = 1;
  // The loop nest, outermost first: the axis each loop cuts and its loop_count.
  std::vector<int> loop_axes;
  std::vector<int64_t> loop_counts;
  int64_t roots() const { return product(loop_counts); }  // root functions
  std::vector<int> loads;   // tensors read from GM, in order of first use
  std::vector<int> stores;  // tensors written to GM
  // Tensor -> the stage's first op reading it, and the op writing it (op indices).
  std::unordered_map<int, int> reader_op, writer_op;
  // The stage ends in a reduction whose tile splits a reduced dim: its tiles group into chains
  // (one per output block) whose partials merge by the op's merge mode; or in a cumsum over a
  // split dim, whose chains carry each tile's last line into the next.
  bool split = false;
  // A split stage's statistics: ops [reduce_first, last], split reductions over the same dims and
  // tile written one after another, none reading another's result (a norm's sum and sum of
  // squares): one pass over the tiles computes them all and their partials travel as one record.
  // Other stages: last.
  int reduce_first = 0;
  // A flash stage (fuse_online): ops [first, last] run S = matmul, the vector ops on S, the
  // online logsumexp (op `online`), sub, exp and O = matmul(P, V), one chain of tasks per query
  // block walking its key blocks. shape is S [batch..., q, k]; tile [1..., query block, key
  // block] (the first matmul's tm and tn); l0 the first matmul's L0 tile.
  int online = -1;
  std::string psg;  // "stage1:sub+exp+sum" (past 16 ops: the first 15, "...", the last)
  // The tile at the origin clipped to the shape: what a tile's buffers are sized for (a ragged
  // tail reuses them).
  Block full_tile() const;
};

// Each axis of a stage's iteration space cut into pieces (tiles, inside loop chunks on the loop
// axes); the stage's tiles are their cartesian product, row-major, and each combination of loop
// chunks (one per loop of the nest) is a root.
struct StageGrid {
  std::vector<std::vector<Piece>> pieces;
  std::vector<int> chunk_axes;                    // the loop nest's axes, outermost first
  std::vector<int64_t> chunk_counts;              // and its loop counts
  std::vector<std::vector<int32_t>> piece_chunk;  // per loop: the chunk of each piece on its axis
  int64_t count() const;
  Dims piece_index(int64_t index) const;  // the tile's piece on each axis
  Block block(int64_t index) const;
  int32_t root(int64_t index) const;
};
StageGrid stage_grid(const ProgStage& s);

// A split stage's tiles by output block: chains[c] lists the grid indices of chain c's segments
// in reduction order (row-major over the reduced pieces); chains in row-major order of the kept
// pieces, which is the order of the reduced output's blocks.
std::vector<std::vector<int64_t>> split_chains(const Program& p, const ProgStage& s,
                                               const StageGrid& g);

// Checks the tiles against the ops (rank, a reduction's tile covering its reduced dims, the
// loop axis) and cuts the program into stages. Throws tilesim::Error naming the op and tensor.
std::vector<ProgStage> plan_stages(const Program& p);
// Whether stage `s` computes op's result again in each of its tiles: op's iteration space is 1
// along a dim the stage's tiles walk (Program::recompute_broadcasts).
bool recomputed_in(const Program& p, const ProgStage& s, const ProgOp& op);

// The region of tensor `t` that the stage's tile `b` (in iteration coordinates) touches as an
// operand of `op` (broadcast dims collapse to 0..1; a transpose's input swaps its last two dims;
// a gather's table and a matmul's operands span their full reduced extent).
Block operand_region(const Program& p, const ProgOp& op, int t, const Block& b);
// The region of tensor p.tensors[t].alias_of that the block `b` of alias t (a view or reshape)
// names: a view's part shifted by its offset; a reshape's elements as the parent's rows that
// hold them (its first dim from the first element's to the last's, the others whole).
Block alias_region(const Program& p, int t, const Block& b);
// The region of op's output for the tile `b` (a reduction collapses or drops its dims).
Block output_region(const Program& p, const ProgOp& op, const Block& b);
// The block of op's own iteration space inside a stage's tile `b`: b itself, or for a column op
// (its iteration shape 1 where the stage's is not: a statistic's epilogue such as RMSNorm's
// rsqrt of the mean, fused because the tile covers the row) b collapsed to 0..1 there.
Block op_block(const Program& p, const ProgOp& op, const Block& b);

// The amax whose output is the running max of reduction `op` in stage `s` (X10): op's record has
// a running max (sumexp) and an amax of the same input over the same dims (and keepdim) runs
// earlier in the stage (a split stage's statistics, or ops fused on a tile covering the row), so
// op reuses it rather than running the max's passes again. -1: none.
int reused_max(const Program& p, const ProgStage& s, const ProgOp& op);

// The program a spec runs: its tile named spec.program_tile set to spec.tile and its loop named
// spec.program_loop to spec.loop_count (how run --tile/--loop and a sweep's candidates reach it).
Program program_of(const KernelSpec& spec);

}  // namespace tilesim
