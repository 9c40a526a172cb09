#pragma once
// What every stage kind's lowering shares (internal to kernels/lower/): the program, spec and
// hardware, the graph being built, and the helpers that turn tiles into tasks (GM copies keyed
// for the L2 model, kinds de-duplicated and their UB planned, dependencies on the tasks that
// wrote the blocks a tile reads). Each stage kind is one file here: its pre-check
// (stage_checks.cpp) and its lowering.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/program/program.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "kernels/spec/lowered.hpp"
#include "kernels/tiling/kind_cache.hpp"
#include "model/hardware.hpp"

namespace tilesim {

// Which tasks wrote which block of a tensor: the producing stage's pieces per tensor axis.
struct Producer {
  std::vector<std::vector<Piece>> pieces;
  std::vector<std::vector<int32_t>> tasks;  // row-major over pieces: the tasks that complete it
};
// Appends to `out` the tasks that wrote any block of `pr` overlapping the region `r`.
void overlapping(const Producer& pr, const Block& r, std::vector<int32_t>& out);

// Appends `part`'s steps to `block` (the first part gives the block its kind: buffers, core).
void append_kind(TaskKind& block, TaskKind&& part);
// The same for a tile of a walk whose steps all merge with the step before where alike
// (append_step): the first tile's last step too.
void append_tile(TaskKind& walk, TaskKind&& tile);
// Adds the buffers of more work run later in the same task (lowering_context.cpp).
void merge_buffers(TaskKind& kind, const std::vector<Buffer>& buffers);

// What one op of a fused stage adds to a tile's UB beside its output.
struct OpVectorWork {
  int scratch = 0;          // scratch tiles the size of the output
  int broadcast_tiles = 0;  // Triton: broadcasts materialised as tiles of the output's size
  int64_t scratch_bytes = 0;
  std::vector<std::pair<int, int64_t>> columns;  // (tensor, bytes) Brcb spreads, for the op only
};

// The tensors a stage leaves in GM, by tensor: who wrote each block (later stages wait on them).
using Produced = std::map<int, Producer>;

// One stage on its way to tasks: its grid of tiles, its PSG, its loop chunks' first root, the
// producers of the tensors earlier stages wrote, and (filled by the lowering) those of s.stores.
struct StageRun {
  const ProgStage& s;
  StageGrid grid;
  int psg = -1;
  int32_t base = 0;
  const Produced& produced;
  std::vector<Producer> stores;
  // A split stage's second pass (second_pass_of, program_lowering.cpp): the vector stage after it
  // on the same tiles, using its statistics, which the task that finishes a row runs over the
  // row's tiles once they are whole, as the reducing families' chains and blocks do.
  StageRun* second = nullptr;
  // A split stage's epilogue (epilogue_of): the column ops after it on its statistics, run once
  // per output block by the task that completes the block.
  StageRun* epilogue = nullptr;
  // spmd (X13, fold_of): the reduction of every dim of this stage's per-row result, folded into
  // the stage's blocks (fold_stage.cpp), as the loss family's blocks add their samples' share of
  // the batch mean.
  StageRun* fold = nullptr;
  std::vector<int> dropped = {};  // statistics (and a fold's input) not stored: read in UB only
};

struct VectorKindTemplates;  // vector_stage.cpp

class LoweringContext {
 public:
  LoweringContext(const Program& p, const KernelSpec& spec, const Hardware& hw)
      : p_(p),
        spec_(spec),
        hw_(hw),
        spmd_(spec.partition == PartitionStyle::kSpmd),
        pooled_(p.ub_plan == UbPlan::kPooled ||
                (p.ub_plan == UbPlan::kAuto && spec.partition == PartitionStyle::kPypto)) {}

  const Program& program() const { return p_; }
  const KernelSpec& spec() const { return spec_; }
  const Hardware& hw() const { return hw_; }
  bool spmd() const { return spmd_; }
  // Ascend C's own partition: a task per core, pinned, walking its run of tiles.
  bool ascendc() const { return spec_.partition == PartitionStyle::kAscendC; }
  // A fused stage's tensors share one UB pool (UbPlan).
  bool pooled() const { return pooled_; }
  TaskGraph& graph() { return out_.graph; }
  LoweredKernel& out() { return out_; }

  const ProgOp& op(int i) const { return p_.ops[static_cast<size_t>(i)]; }
  const ProgTensor& tensor(int t) const { return p_.tensors[static_cast<size_t>(t)]; }
  std::string where(const ProgOp& o) const {
    return (p_.origin.empty() ? "" : p_.origin + ": ") + o.where();
  }
  // A copy of region r of a [shape] GM tensor (or workspace), its L2 block keyed by `key`.
  DmaOp gm_dma(DmaDir dir, const Dims& shape, const Block& r, DType dt, uint64_t key,
               std::vector<Access>& acc) const;
  DmaOp dma(DmaDir dir, int t, const Block& r, std::vector<Access>& acc) const;
  int64_t ub_bytes(int t, const Block& r) const;
  // The UB a copy of region r of tensor t brings: each of its bursts rounded up to UB blocks (a
  // column's scalars, contiguous in GM, arrive packed).
  int64_t copy_bytes(int t, const Block& r) const;
  // The op of the stage that reads (or writes) tensor t first.
  const ProgOp& reader(const ProgStage& s, int t) const;
  const ProgOp& writer(const ProgStage& s, int t) const;

  // The vector instructions op `x` issues on a tile computing `ce` (n elements; `full` the whole
  // tile, both in the op's own iteration space), and the UB it needs beside its output. `stage`:
  // the stage it runs in (a sumexp may reuse an amax's max there, program.hpp reused_max).
  OpVectorWork op_vector_work(const ProgOp& x, const Dims& ce, int64_t n, const Block& full,
                              std::vector<VecOp>& vec, const ProgStage* stage = nullptr) const;
  // A fused vector stage's task kind on tile b: loads, every op's instructions, stores and the UB
  // its tensors take; without the stores of skip_stores (the caller places them) and the loads
  // of skip_loads (already in UB).
  TaskKind vector_kind(const ProgStage& s, const Block& b, std::vector<Access>& acc,
                       const std::vector<int>& skip_stores = {},
                       const std::vector<int>& skip_loads = {}) {
    TaskKind k;
    vector_kind_into(k, s, b, acc, skip_stores, skip_loads);
    return k;
  }
  // The same into `out`, whose storage it reuses (a lowering's per-task scratch kind).
  void vector_kind_into(TaskKind& out, const ProgStage& s, const Block& b, std::vector<Access>& acc,
                        const std::vector<int>& skip_stores = {},
                        const std::vector<int>& skip_loads = {});
  // A cube task for matmul `x` on the iteration block b [batch..., m, k, n] under the L1 tile
  // [tm, tk, tn] and L0 tile `l0` (empty: the L1 tile), C written as `out` (matmul_stage.cpp);
  // without `load_a`, A is already in L1 (kept by the task before on its core). With
  // `drain_by_l0_n`, C leaves L0C an L0 tile's columns at a time.
  TaskKind cube_task(const ProgOp& x, const Dims& tile, const Dims& l0, const Block& b, DType out,
                     std::string label, std::vector<Access>& acc, bool load_a = true,
                     bool drain_by_l0_n = false) const;
  // Folding one partial of `out_elems` into another: split stage s's statistics' merges.
  void combine(const ProgStage& s, int64_t out_elems, std::vector<VecOp>& v) const;
  // Split stage s's partials of output block `out` in a GM workspace: slot `slot` of the block,
  // or `slots` slots from it in one copy.
  DmaOp partial_dma(DmaDir dir, const ProgStage& s, const Block& out, int64_t slot,
                    std::vector<Access>& acc, int64_t slots = 1) const;
  // The GM workspace block of tensor-like `t`, slot `slot` of the ring at `place` (whose ring it
  // is: a query block's rows, a core): equal keys for the same slot, so a ring stays in L2.
  uint64_t ring_key(uint32_t t, Dims place, int64_t slot) const;

  // The kind's id in the graph (a new kind's UB planned: an overflow names the stage).
  int kind_id(const ProgStage& s, const TaskKind& k);
  Producer producer_of(const ProgStage& s, const StageGrid& g, int t) const;
  std::vector<int32_t> load_deps(const ProgStage& s, const Block& b,
                                 const Produced& produced) const;
  // `k` is left with `psg` set (a caller may reuse it as scratch).
  int32_t add_task(const ProgStage& s, TaskKind& k, int psg, int32_t root,
                   const std::vector<Access>& acc, const std::vector<int32_t>& deps);
  int32_t add_task(const ProgStage& s, TaskKind&& k, int psg, int32_t root,
                   const std::vector<Access>& acc, const std::vector<int32_t>& deps) {
    return add_task(s, k, psg, root, acc, deps);
  }
  // spmd: block `blk` of the current launch, one task of kind `k` with its GM accesses (ascendc:
  // the task of core `blk`, pinned to it).
  void add_block(const ProgStage& s, TaskKind k, int psg, int64_t blk,
                 const std::vector<Access>& acc);
  // spmd: the launch's idle blocks past its `used` ones (of its work units, named `units` in the
  // grid check's message) up to partition.grid, labelled `<name>_block<i>`; then the launch
  // ends, or stays open for the next stage's blocks (launch_join.cpp).
  void end_launch(const ProgStage& s, int psg, int64_t used, const std::string& units,
                  const std::string& name, CoreType core = CoreType::kAiv);
  // A launch whose blocks past the work are not modelled ends (mixed blocks, a split-K merge).
  void end_mixed_launch() {
    close_launch();
    ++launch_;
  }
  // The launch the next task goes to (the open launch's blocks made tasks first).
  int32_t launch() {
    close_launch();
    return launch_;
  }
  // spmd: whether the stage lowered next may run in the open launch's blocks (launch_join.cpp).
  void set_stage_joins(bool joins) { stage_joins_ = joins; }
  // The open launch's blocks become its tasks.
  void close_launch();
  // The most tiles of a split reduction's row (diagnostics).
  void note_segments(int64_t n) { segments_ = std::max(segments_, n); }
  int64_t segments() const { return segments_; }

 private:
  const Program& p_;
  const KernelSpec& spec_;
  const Hardware& hw_;
  bool spmd_;
  bool pooled_;
  LoweredKernel out_;
  KindCache kinds_;
  std::shared_ptr<VectorKindTemplates> vector_templates_;  // vector_kind's, by stage and extent
  std::vector<int32_t> deps_scratch_;                      // add_task's sorted dependencies
  int32_t launch_ = 0;                                     // spmd: the next launch
  int64_t segments_ = 1;  // the most tiles of a split reduction's row

  // spmd launches as they form (launch_join.cpp). A block: its kind, its GM accesses and the
  // program tensors' regions it reads and writes.
  struct Region {
    int tensor;
    Block r;
    bool write;
  };
  struct LaunchBlock {
    const ProgStage* s;
    int kind;
    std::vector<Access> acc;
    std::vector<Region> regions;
    bool idle;
  };
  std::vector<LaunchBlock> open_;   // the launch still open: its blocks, in task order
  std::vector<LaunchBlock> stage_;  // the blocks of the stage being lowered
  bool open_joins_ = false;         // open_ holds only stages that may take more passes
  bool stage_joins_ = false;
  mutable std::vector<Region> regions_;  // dma()'s regions since the last block
  mutable bool unlogged_ = false;        // a GM copy of the stage's not through dma()
  mutable bool in_dma_ = false;
  // Whether the stage's blocks may run after the open launch's in the same blocks: none reads or
  // writes a region another block of the launch wrote (or, for a write, read).
  bool row_local() const;
  void settle_stage();
};

// A stage of independent tiles as tasks under the partition (tile_tasks.cpp): `make` gives tile
// b's kind (`first`: the first sub-tile its block or core walks, or a task of its own).
using TileKindMaker = std::function<TaskKind(const Block& b, std::vector<Access>& acc, bool first)>;
void lower_tiles(LoweringContext& cx, StageRun& run, CoreType core, const TileKindMaker& make);

// The pre-check of every stage (stage_checks.cpp); then the stage kinds' lowerings.
void check_stage(const LoweringContext& cx, const ProgStage& s);
// A fused vector stage (vector_stage.cpp): a task per tile, or an spmd block per run of tiles.
void lower_vector_stage(LoweringContext& cx, StageRun& run);
// The resident inputs (ProgTensor::resident) sub-tile b of a block leaves unloaded (`skip`): the
// first sub-tile loads them and records their regions in `held`, which the others must match.
void resident_loads(const LoweringContext& cx, const ProgStage& s, const Block& b, bool first,
                    std::map<int, Block>& held, std::vector<int>& skip);
// A copy stage (copy_stage.cpp): op "load", each tile read into UB or L1 and kept there.
void lower_copy_stage(LoweringContext& cx, StageRun& run);
// A matmul stage (matmul_*.cpp): a cube task per C tile (or K slice) walking k, the split-K
// merge or cast epilogue on the AIV.
void lower_matmul_stage(LoweringContext& cx, StageRun& run);
// A stage ending in a reduction that splits a reduced dim (split_stage.cpp).
void lower_split_stage(LoweringContext& cx, StageRun& run);
// The fold of run.fold into a block that produced `values` of its input (fold_stage.cpp); empty
// when values is 0.
TaskKind fold_kind(LoweringContext& cx, const StageRun& run, int64_t values,
                   std::vector<Access>& acc);
// The values of the fold's input that tile (or output block) b of the stage holds.
int64_t fold_values(const LoweringContext& cx, const StageRun& run, const Block& b);
// A cumsum over a split dim (scan_stage.cpp): a task walks each row's tiles with the carry.
void lower_scan_stage(LoweringContext& cx, StageRun& run);
// A flash stage (flash_stage.cpp): per query block, per key block, S on the AIC, the online
// statistic and P on the AIVs, P V on the AIC and O's rescale on the AIVs.
void lower_flash_stage(LoweringContext& cx, StageRun& run);

}  // namespace tilesim
