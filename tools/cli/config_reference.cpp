#include "tools/cli/config_reference.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "kernels/spec/kernel_spec.hpp"
#include "model/dtype.hpp"
#include "tools/calibration/validation_dataset.hpp"
#include "tools/formats/sweep_config.hpp"
#include "tools/formats/sweep_objective.hpp"
#include "tools/formats/zone_options.hpp"

namespace tilesim {

namespace {

// A default read from a struct the reader fills.
template <class T>
std::string value(T v) {
  return fmt::format("`{}`", v);
}

std::vector<ConfigKey> kernel_keys() {
  const KernelSpec s;
  return {
      {"op", "string", "required",
       "the built-in kernel: an elementwise op, `copy_in`, a reduction, `softmax`, `logsoftmax`, a "
       "norm, a loss or `matmul` (every op: [ops.md](../ops.md))"},
      {"shape", "array of 1-5 integers >= 1", "required",
       "the tensor's shape (a matmul's `[m, k, n]`)"},
      {"tile", "array of integers >= 1, the shape's rank", "required in a run config",
       "the tile (the spmd sub-tile; a matmul's `[m, k, n]` tile); `tile[-1] * dtype bytes` a "
       "multiple of 32 B under pypto; a sweep's candidates or `run --tile` may supply it"},
      {"dtype", "string", value(dtype_name(s.dtype)),
       "`fp32`, `fp16`, `bf16`; `int8` for matmul: the dtypes the op's record takes"},
      {"dim", "integer or array of integers", "-", "the reduction dim(s), for reducing ops"},
      {"loop_count", "integer >= 1", value(s.loop_count),
       "`loop + view/assemble` chunks (root functions), pypto only"},
      {"loop_axis", "integer in [0, rank)", "the outermost non-reduction axis",
       "the axis the loop cuts"},
      {"buffer_count", "integer in [1, 8]", value(s.buffer_count),
       "the requested multi-buffering depth (the model uses less when UB is short)"},
      {"partition", "string or object", "`\"pypto\"`",
       "`\"pypto\"`, `\"ascendc\"`, or an object (below): how the work is launched"},
      {"params", "object", "the family's defaults",
       "the op's params, declared by its family: name, type, default, allowed values "
       "([ops.md](../ops.md)); checked when the config loads"},
  };
}

// The keys a run config adds to the kernel's (tools/formats/run_config.cpp).
std::vector<ConfigKey> run_keys() {
  return {
      {"hardware", "string", "`ascend910b1`",
       "a hardware file (a path relative to the config) or a shipped name"},
      {"description", "string", "`\"\"`", "free text"},
      {"measured", "object", "-", "measured figures the config reproduces (free form)"},
      {"runtime", "object", "-", "runtime policies and PyPTO's runtime_options (below)"},
  };
}

std::vector<ConfigKey> program_run_keys() {
  const KernelSpec s;
  return {
      {"program", "string or object", "required",
       "the tile program: a file relative to the config, or the program inline"},
      {"tile", "array of integers >= 1", "the program's",
       "the shape of the tile named `program_tile`"},
      {"program_tile", "string", "the first tile an op uses",
       "which of the program's named tiles `tile` (and a sweep's tile space) sets"},
      {"program_tiles", "object: name -> shape", "-",
       "other named tiles set to other shapes (one shape per name)"},
      {"program_loop", "string", "the first loop",
       "which of the program's loops `loop_count` sets"},
      {"loop_count", "integer >= 1", "the program's", "the loop count of `program_loop`"},
      {"partition", "string or object", "`\"pypto\"`", "as for a built-in op (below)"},
      {"buffer_count", "integer in [1, 8]", value(s.buffer_count),
       "the requested multi-buffering depth"},
  };
}

// The keys a sweep config adds to the kernel's (tools/formats/sweep_config.cpp kSweepKeys).
std::vector<ConfigKey> sweep_keys() {
  return {
      {"hardware", "string", "`ascend910b1`", "a hardware file or a shipped name"},
      {"description", "string", "`\"\"`", "free text"},
      {"candidates", "object", "required", "the candidate space (below)"},
      {"zones", "object", "-", "the zone thresholds (below)"},
      {"runtime", "object", "-", "as in a run config"},
      {"objective", "string", value(objective_names().front()),
       fmt::format("what ranks the candidates: {} (`--objective` overrides it)",
                   fmt::join(objective_names(), ", "))},
  };
}

std::vector<ConfigKey> with(std::vector<ConfigKey> a, const std::vector<ConfigKey>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<ConfigObject> make_objects() {
  const KernelSpec spec;
  const ZoneOptions zones;
  const SweepConstraints constraints;
  const LoopSpaceSpec scale;
  const ValidationSweep vsweep;
  const std::vector<ConfigKey> partition = {
      {"style", "string", "required", "`pypto`, `ascendc` or `spmd`"},
      {"cores", "integer >= 1", "every core of the op's type",
       "ascendc: cores used, one looping task each"},
      {"max_tasks_per_psg", "integer >= 0", "one task per core of its type",
       "pypto: tasks per PSG per root function (0: one task per tile chain)"},
      {"grid", "integer >= 1", "the number of block regions, when `block` is given",
       "spmd: blocks launched ([spmd.md](../spmd.md))"},
      {"block", "array of integers >= 1, the shape's rank", "-",
       "spmd: the region one block (Triton program) owns, walked in `tile` sub-tiles"},
      {"source", "string", "`\"ascendc\"`",
       "spmd: `ascendc` (buffers as written) or `triton` (the Triton-Ascend compiler's UB plan)"},
      {"preload", "integer in [0, 16]", "0",
       "spmd: the kernel pipelines across its tasks: > 0 overlaps each core's consecutive tasks "
       "this many deep, at least `buffer_count` (a flash stage's and a matmul block's); a flash "
       "stage's cube also runs this many key blocks ahead of the vector cores (pto-isa's "
       "qkPreload)"},
  };
  const std::vector<ConfigKey> runtime = {
      {"ready_order", "string", "`oldest_root_first`",
       "the ready queue's order: `oldest_root_first` or `fifo` (and any registered policy)"},
      {"l2", "string", "`cold`",
       "what L2 holds at launch: `cold` (nothing), `warm` (the inputs), `flushed` (dirty lines)"},
      {"stitch_function_max_num", "integer in [1, 1024]", "the hardware file's",
       "PyPTO runtime_options: root functions per device task"},
      {"launch_sched_aicpu_num", "integer in [1, 7]", "the hardware file's",
       "PyPTO runtime_options: caps the scheduler AICPU threads"},
  };
  const std::vector<ConfigKey> dim_space = {
      {"fixed", "object: dim -> integer", "-", "dims held at a value (`{\"0\": 1}`)"},
      {"max", "array of integers, the shape's rank", "the shape", "per-dim bounds"},
  };
  return {
      {"run", "", "A run config for a built-in op: the kernel's keys and the run's.",
       with(kernel_keys(), run_keys())},
      {"run", "partition", "`partition` as an object: the launch style and its knobs.", partition},
      {"run", "runtime", "`runtime`: runtime policies and PyPTO's runtime_options.", runtime},
      {"run-program", "",
       "A run config for a tile program (it has `program`); a program file runs as itself too.",
       with(program_run_keys(), run_keys())},
      {"sweep", "",
       "A sweep config: a run config's kernel keys (`tile` and `loop_count` optional; a tile "
       "program's keys when it has `program`) and the sweep's.",
       with(kernel_keys(), sweep_keys())},
      {"sweep-program", "",
       "A sweep config over a tile program: the program run config's keys and the sweep's (the "
       "objects below are the same).",
       with(program_run_keys(), sweep_keys())},
      {"sweep",
       "candidates",
       "`candidates`: the space; every combination is a candidate.",
       {
           {"tiles", "array of tiles", "-", "explicit tiles (sub-tiles under spmd)"},
           {"generate_tiles", "object", "-",
            "per dim powers of two up to the dim (and the dim); the last dim every aligned "
            "multiple (below)"},
           {"loop_counts", "array of integers >= 1", "-", "explicit loop counts (pypto)"},
           {"generate_loop_counts", "object", "-", "a log scale of loop counts (below)"},
           {"grids", "array of integers >= 1", "-", "explicit grids (spmd)"},
           {"generate_grids", "object", "-", "a log scale of grids (below)"},
           {"blocks", "array of block regions", "-", "explicit `partition.block` values (spmd)"},
           {"generate_blocks", "object", "-", "per dim powers of two up to `max` (below)"},
           {"program_tiles", "object: tile name -> array of shapes", "-",
            "a tile program's other named tiles, swept with it"},
           {"params", "object: param -> array of values", "-",
            "values of the op's params, each checked as the kernel's `params` entry is"},
           {"constraints", "object", "-", "the pre-check's rules (below)"},
           {"axis", "string", "`auto`",
            "`auto`, `loop_count`, `grid` or `tile:N`: what the zones and the plot go along"},
       }},
      {"sweep", "candidates.generate_tiles", "`candidates.generate_tiles`.",
       with(dim_space, {{"last_dim", "string", "`aligned`",
                         "`aligned` (every multiple of the 32 B alignment) or `pow2`"}})},
      {"sweep", "candidates.generate_blocks", "`candidates.generate_blocks`.", dim_space},
      {"sweep",
       "candidates.generate_loop_counts",
       "`candidates.generate_loop_counts`.",
       {{"from", "integer >= 1", value(scale.from), "the first loop count"},
        {"to", "integer >= 1", "required", "the last"},
        {"factor", "integer >= 2", value(scale.factor), "the step"}}},
      {"sweep",
       "candidates.generate_grids",
       "`candidates.generate_grids`.",
       {{"from", "integer >= 1", value(scale.from), "the first grid"},
        {"to", "integer >= 1", "required", "the last"},
        {"factor", "integer >= 2", value(scale.factor), "the step"},
        {"include_cores", "boolean", "`false`",
         "add every multiple m of the op's core count in range, and m + 1 (a one-block tail "
         "wave)"}}},
      {"sweep",
       "candidates.constraints",
       "`candidates.constraints`: the pre-check.",
       {{"prune_over_limits", "boolean", value(constraints.prune_over_limits),
         "reject candidates over the rulebook's limits (else flag them)"},
        {"allow_tile_over_shape", "boolean", value(constraints.allow_tile_over_shape),
         "allow (and flag) a tile dim over the shape's"},
        {"min_contiguous_bytes", "integer >= 0", value(constraints.min_contiguous_bytes),
         "reject copies with fewer contiguous bytes"},
        {"flag_contiguous_bytes", "integer >= 0", value(constraints.flag_contiguous_bytes),
         "the `under_1kb` flag's threshold"},
        {"max_candidates", "integer >= 1", value(constraints.max_candidates),
         "the largest space (and generated axis) accepted"}}},
      {"sweep",
       "zones",
       "`zones`: how points along the axis are zoned ([sweeps.md](../sweeps.md)).",
       {{"tolerance", "number in [0, 1]", value(zones.tolerance),
         "sweet spot: within this fraction of the best (a tie)"},
        {"evidence_rise", "number in [0, 1]", value(zones.evidence_rise),
         "a metric rises when it exceeds the best's by this fraction"},
        {"min_abs_rise_us", "number >= 0", value(zones.min_abs_rise_us),
         "... and by at least this many us"},
        {"min_wait_share", "number in [0, 1]", value(zones.min_wait_share),
         "a wait rise must cover this share of the time lost"},
        {"min_tail_occupancy", "number in [0, 1]", value(zones.min_tail_occupancy),
         "spmd: a last wave filling fewer cores than this share is unbalanced"},
        {"max_block_overhead_share", "number in [0, 1]", value(zones.max_block_overhead_share),
         "spmd: block starts over this share of core time are fragmentation"}}},
      {"program",
       "",
       "A tile program file ([programs.md](../programs.md)).",
       {{"program", "string", "`program`", "its name"},
        {"description", "string", "`\"\"`", "free text"},
        {"inputs", "array of objects", "required", "the input tensors (below)"},
        {"outputs", "array of names or objects", "required",
         "the tensors stored to GM at the end (a name, or {name, shape, dtype} checked)"},
        {"body", "array", "required", "ops, tile shapes and loops, in order (below)"},
        {"ub_plan", "string", "`pooled`",
         "`pooled` (PyPTO's BufferPool) or `buffers` (one per loaded and stored tensor)"}}},
      {"program",
       "inputs[]",
       "An element of `inputs`.",
       {{"name", "string", "required", "the tensor's name"},
        {"shape", "array of 1-5 integers >= 1", "required", "its shape"},
        {"dtype", "string", "required", "`fp32`, `fp16`, `bf16`, `int8`, `int32`"},
        {"l2_bypass", "boolean", "`false`", "read without allocating in L2"},
        {"resident", "boolean", "`false`",
         "read once by each spmd block or Ascend C core before it walks its sub-tiles and held "
         "in UB, one copy (a weight row loaded before a kernel's loop); the same region for "
         "every sub-tile of a block"}}},
      {"program",
       "outputs[]",
       "An element of `outputs` given as an object.",
       {{"name", "string", "required", "a tensor an op writes"},
        {"shape", "array of integers", "-", "checked against what the op computes"},
        {"dtype", "string", "-", "checked against what the op computes"}}},
      {"program",
       "body[] (op)",
       "An op of `body` (a loop's body too).",
       {{"op", "string", "required", "the op's name ([ops.md](../ops.md))"},
        {"inputs", "array of tensor names", "required", "what it reads"},
        {"out", "string", "required", "the tensor it writes (a new name)"},
        {"scalar", "number", "-", "binary ops: the second operand as a scalar"},
        {"dim", "integer or array", "-", "reductions and cumsum: the dim(s)"},
        {"keepdim", "boolean", "`false`", "reductions: keep the reduced dims as 1"},
        {"merge", "string", "`in_task`",
         "reductions over a split dim: `in_task`, `chain`, `tree`, `atomic`, `auto`; `online` "
         "for logsumexp"},
        {"dtype", "string", "-", "cast: the dtype cast to"},
        {"out_dtype", "string", "`same`", "matmul: C's dtype in GM"},
        {"transpose_b", "boolean", "`false`", "matmul: B stored `[..., n, k]`"},
        {"b_layout", "string", "`nd`", "matmul: `nd`, or `nz` (B in the cube's zN fractal layout)"},
        {"l1_resident", "string", "`none`",
         "matmul: `a` (`b`) keeps A's rows (B's columns) over their K in L1 across the C tiles "
         "sharing them"},
        {"l1_reuse", "integer in [1, 2^20]", "`1`",
         "matmul, pypto: C tiles sharing the resident operand merged into one task"},
        {"split_k", "integer in [1, 2^16]", "`1`", "matmul: K cut into this many slices"},
        {"split_k_merge", "string", "`atomic`",
         "matmul: split-K partials added atomically in C, or `vector`: summed by AIV tasks"},
        {"vector_epilogue", "boolean", "`false`",
         "matmul, pypto: C written fp32 to a workspace an AIV task casts"},
        {"swizzle", "array of 2 integers", "row-major",
         "matmul, spmd: catlass's block swizzle `[offset, direction]` (bands of offset tile rows "
         "(0) or columns (1))"},
        {"assignment", "string", "`contiguous`",
         "matmul, spmd: block b takes a contiguous run of the C tiles, or `strided` b, b + grid, "
         "..."},
        {"shuffle_k", "boolean", "`false`",
         "matmul, spmd: block b starts its K loop at k tile b mod (k tiles) (catlass "
         "ENABLE_SHUFFLE_K)"},
        {"l2_block", "array of 2 integers >= 1", "-",
         "matmul: `[tiles_m, tiles_n]`, C tiles walked L2 block by L2 block (pypto: a root "
         "function per view)"},
        {"bank_conflict_free", "boolean", "`false`",
         "the binary op's sources sit in different UB bank groups"},
        {"c0_stride", "integer in [1, 2^20]", "the tile's rows",
         "nd2nz: 32 B blocks between two C0 columns of the NZ tile in UB (a repeat's blocks land "
         "this far apart: a multiple of 16 puts all 8 in one bank group)"},
        {"psg", "string", "the stage's ops", "names the stage this op opens"},
        {"dest", "string", "`ub`", "load: `ub`, or `l1` (the cube cores' L1)"},
        {"spmd_rows", "string", "`auto`",
         "reductions under spmd: `whole` rows per block, `split` (row, sub-tile) units, `auto`: "
         "whole while rows >= grid; `tiles` / `slots`: (row, sub-tile) units whose partials "
         "each sub-tile merges in GM, added atomically (`tiles`: tl.atomic_add in the loop) or "
         "read, added and written back in the block's slot (`slots`: a per-program accumulator "
         "row, the slots folded by a second launch); `parts`: as `split`, each block's part "
         "written once to its slot (a per-program partial row stored after the loop), folded by "
         "a second launch"},
        {"apply_in_task", "boolean", "`false`",
         "reductions over a split dim: the next stage (on its tiles, using its result) runs in "
         "the task that finishes the row (merge `in_task`, or an spmd block's whole rows); "
         "column ops between them on the statistic run once per row where the row completes"},
        {"row_reduce", "string", "`whole`",
         "reductions: how a row is reduced in UB, `whole`: halving adds then a WholeReduce per "
         "row (Ascend C ReduceSum), or `block`: passes of block reduces (vcgadd / vcgmax, "
         "pto-isa TROWSUM / TROWMAX)"}}},
      {"program",
       "body[] (loop)",
       "A loop of `body`: `pypto.loop` with view / assemble.",
       {{"loop", "string", "required", "its name"},
        {"axis", "integer in [0, 4]", "required", "the axis its chunks cut"},
        {"loop_count", "integer in [1, 2^24]", "required", "the chunks (root functions)"},
        {"body", "array", "required", "ops, tile shapes and nested loops (at most 3 deep)"}}},
      {"program",
       "body[] (vector tile)",
       "A vector tile shape of `body`, in force until the next.",
       {{"set_vec_tile_shapes", "array of integers >= 1", "required", "the tile"},
        {"name", "string", "`vecN`", "its name (sweeps and `program_tile` name it)"}}},
      {"program",
       "body[] (cube tile)",
       "A cube tile shape of `body`, in force until the next.",
       {{"set_cube_tile_shapes", "`[tm, tk, tn]` or `[[mL0, mL1], [kL0, kL1], [nL0, nL1]]`",
         "required", "the cube tile (an L1 tile over L0 tiles in PyPTO's form)"},
        {"name", "string", "`cubeN`", "its name"}}},
      {"validation",
       "",
       "A validation dataset ([validation.md](../validation.md)): measured times in sweeps.",
       {{"description", "string", "`\"\"`", "free text"},
        {"source", "string", "`\"\"`", "where the measurements come from"},
        {"hardware", "string", "`ascend910b1`", "a hardware file or a shipped name"},
        {"tolerances", "object", "none (nothing is held)", "what validate holds it to (below)"},
        {"known_outside", "string", "-",
         "why the model misses it, with the numbers: scored, printed OUTSIDE (known), never a "
         "failure"},
        {"sweeps", "array", "required", "the sweeps (below)"}}},
      {"validation",
       "tolerances",
       "`tolerances`: each given bound is held; validate exits 1 outside.",
       {{"max_mape_pct", "number >= 0", "-", "the largest normalised MAPE"},
        {"max_abs_mape_pct", "number >= 0", "-", "the largest absolute MAPE"},
        {"max_abs_err_pct", "number >= 0", "-", "the largest absolute error of one point"},
        {"min_rank_corr", "number in [-1, 1]", "-", "the lowest Spearman rank correlation"},
        {"argmin", "boolean", "`false`", "the modeled fastest point must be measured fastest"}}},
      {"validation",
       "sweeps[]",
       "A sweep of a dataset.",
       {{"name", "string", "required", "its name"},
        {"axis", "string", value(vsweep.axis), "what its points vary"},
        {"metric", "string", value(vsweep.metric), "a calibrate metric (below)"},
        {"known_miss", "object", "-", "a lower rank floor for this sweep alone (below)"},
        {"points", "array", "required", "its points (below)"}}},
      {"validation",
       "sweeps[].known_miss",
       "`known_miss`.",
       {{"min_rank_corr", "number in [-1, 1]", "required", "below the dataset's floor"},
        {"why", "string", "required", "why the model misses the rank order"}}},
      {"validation",
       "sweeps[].points[]",
       "A point of a sweep.",
       {{"x", "number or string", "required", "the point on the sweep's axis"},
        {"measured", "number > 0", "required (null when board_rejected)", "the measured time"},
        {"board_rejected", "string", "-",
         "what the board reported when it refused the point (the model must refuse it too)"},
        {"mapping", "string", "required unless not_expressible",
         "how the measured kernel is expressed and why"},
        {"config", "object", "one of config / config_file", "an inline run config"},
        {"config_file", "string", "one of config / config_file",
         "a run config relative to the dataset"},
        {"not_expressible", "string", "-", "why the model cannot express it (never scored)"}}},
      {"measurements",
       "",
       "A measurements file for `tilesim calibrate` ([calibration.md](../calibration.md)).",
       {{"description", "string", "`\"\"`", "free text"},
        {"hardware", "string", "`ascend910b1`", "the hardware being calibrated"},
        {"free", "array of keys or objects", "the hardware file's `fitted` parameters",
         "the parameters the fit moves (`--free` replaces it)"},
        {"measurements", "array", "required", "the measured figures (below)"}}},
      {"measurements",
       "free[]",
       "An element of `free` given as an object.",
       {{"key", "string", "required", "a hardware parameter ([hardware.md](../hardware.md))"},
        {"min", "number", "the parameter's bound", "may only narrow it"},
        {"max", "number", "the parameter's bound", "may only narrow it"}}},
      {"measurements",
       "measurements[]",
       "A measurement.",
       {{"id", "string", "required", "unique in the file"},
        {"source", "string", "`\"\"`", "where the figure comes from"},
        {"config", "object", "one of config / config_file", "an inline run config"},
        {"config_file", "string", "one of config / config_file",
         "a run config relative to the file"},
        {"metric", "string", "required",
         "`task_duration_us`, `kernel_time_us`, `time_ms`, `gen_time_us`, `mte2_time_us`, "
         "`vec_time_us`, `cube_time_us`, `mte3_time_us`, or a swimlane's per-core figure"},
        {"measured", "number > 0", "required", "the measured figure"},
        {"weight", "number >= 0", "`1`", "multiplies the log residual; 0 reports without fitting"},
        {"note", "string", "`\"\"`", "free text"}}},
      {"msprof-map",
       "",
       "An msprof mapping file: which run config each kernel of an op_summary is "
       "([board-profiles.md](../board-profiles.md)).",
       {{"description", "string", "`\"\"`", "free text"},
        {"hardware", "string", "`ascend910b1`", "the hardware the kernels ran on"},
        {"kernels", "array", "required", "the kernels (below)"}}},
      {"msprof-map",
       "kernels[]",
       "A kernel of the mapping.",
       {{"id", "string", "required", "unique in the file"},
        {"match", "object: column -> text", "required", "the rows it is (`Op Name` at least)"},
        {"csv", "string", "any file", "restricts it to one CSV"},
        {"skip_first", "integer >= 0", "`0`", "warm-up launches dropped"},
        {"mapping", "string", "required", "why this run config is the measured kernel"},
        {"config", "object", "one of config / config_file", "an inline run config"},
        {"config_file", "string", "one of config / config_file",
         "a run config relative to the mapping"},
        {"sweep", "string", "its id", "`--as validate`: the sweep it joins"},
        {"x", "number or string", "-", "`--as validate`: its point on the sweep's axis"}}},
      {"hardware",
       "",
       "A hardware file (every parameter: [hardware.md](../hardware.md)).",
       {{"name", "string", "required", "its name, shown in every output"},
        {"description", "string", "`\"\"`", "free text"},
        {"base", "string", "-",
         "a shipped name or a file relative to this one; this file lists only what differs"},
        {"parameters", "object: key -> entry", "required without `base`",
         "the parameters it states (below)"}}},
      {"hardware",
       "parameters.*",
       "A parameter's entry.",
       {{"value", "number", "required", "within the parameter's bounds"},
        {"source", "string", "required", "where the value comes from"},
        {"fitted", "boolean", "`false`", "calibrate's default free list"}}},
  };
}

const char* kind_title(const std::string& kind) {
  if (kind == "run") return "Run config (a built-in op)";
  if (kind == "run-program") return "Run config (a tile program)";
  if (kind == "sweep") return "Sweep config";
  if (kind == "sweep-program") return "Sweep config (a tile program)";
  if (kind == "program") return "Tile program";
  if (kind == "validation") return "Validation dataset";
  if (kind == "measurements") return "Measurements file";
  if (kind == "msprof-map") return "msprof mapping file";
  return "Hardware file";
}

}  // namespace

const std::vector<ConfigObject>& config_objects() {
  static const std::vector<ConfigObject> objects = make_objects();
  return objects;
}

std::string config_reference_markdown() {
  std::string out =
      "# Config reference\n\n"
      "<!-- Generated from tools/cli/config_reference.cpp (defaults read from the structs the "
      "readers fill)\n     by build/tools/reference_doc configs > docs/reference/configs.md; the "
      "reference_docs test fails when it is\n     stale or when a reader accepts other keys. "
      "-->\n\n"
      "Every key of every JSON file tilesim reads. An unknown key is an error naming the file, the "
      "key path and the keys allowed there. Paths: `a.b` is the member `b` of `a`, `a[]` an "
      "element of the array `a`, `a.*` any member of the object `a`.\n\n"
      "Every file may also carry, at its top level, `\"$schema\"`: the path or URL of its JSON "
      "Schema (`schemas/KIND.schema.json` here, generated from these tables; the shipped configs "
      "name theirs by a relative path), which editors follow for completion and checking and "
      "tilesim ignores.\n";
  std::string kind;
  for (const ConfigObject& o : config_objects()) {
    if (o.kind != kind) {
      kind = o.kind;
      out += fmt::format("\n## {}\n", kind_title(kind));
    }
    out += fmt::format(
        "\n### {}\n\n{}\n\n| key | type | default | what it is |\n"
        "| --- | --- | --- | --- |\n",
        o.path.empty() ? "top level" : "`" + o.path + "`", o.what);
    for (const ConfigKey& k : o.keys)
      out += fmt::format("| `{}` | {} | {} | {} |\n", k.name, k.type, k.fallback, k.doc);
  }
  return out;
}

namespace {

// The JSON types a table type names: its alternatives' first words ("string or object",
// "integer in [1, 8]", "array of tiles", "object: name -> shape"); a PyPTO-style "`[...]`" is an
// array.
nlohmann::json json_types(const std::string& type) {
  static const std::vector<std::string> kTypes = {"string", "object",  "integer",
                                                  "number", "boolean", "array"};
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= type.size()) {
    const size_t next = type.find(" or ", at);
    std::string word = type.substr(at, type.find_first_of(" :", at) - at);
    if (word.rfind("`[", 0) == 0) word = "array";
    if (std::find(kTypes.begin(), kTypes.end(), word) != kTypes.end() &&
        std::find(out.begin(), out.end(), word) == out.end())
      out.push_back(word);
    if (next == std::string::npos) break;
    at = next + 4;
  }
  if (out.size() == 1) return out.front();
  return out;
}

nlohmann::json object_schema(const ConfigObject& o) {
  nlohmann::json s = {{"type", "object"},
                      {"description", o.what},
                      {"properties", nlohmann::json::object()},
                      {"additionalProperties", false}};
  std::vector<std::string> required;
  for (const ConfigKey& k : o.keys) {
    s["properties"][k.name] = {{"type", json_types(k.type)}, {"description", k.doc}};
    if (k.fallback == "required") required.push_back(k.name);
  }
  if (!required.empty()) s["required"] = required;
  return s;
}

// Where the object at `path` goes under its kind's top-level schema: the schema it is attached to
// (a property's, an array's items, an object's members).
void attach(nlohmann::json& top, const std::string& path, nlohmann::json object) {
  nlohmann::json* at = &top;
  size_t pos = 0;
  while (pos < path.size()) {
    const size_t dot = path.find('.', pos);
    std::string seg = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    pos = dot == std::string::npos ? path.size() : dot + 1;
    const bool last = pos >= path.size();
    if (const size_t label = seg.find(" ("); label != std::string::npos) seg.resize(label);
    if (seg == "*") {
      nlohmann::json& members = (*at)["additionalProperties"];
      if (last) members = std::move(object);
      at = &members;
      continue;
    }
    const bool items = seg.size() > 2 && seg.compare(seg.size() - 2, 2, "[]") == 0;
    if (items) seg.resize(seg.size() - 2);
    nlohmann::json& prop = (*at)["properties"][seg];
    if (!items) {
      if (last) {  // the object's keys on the property (which keeps its own types)
        prop["properties"] = object["properties"];
        prop["additionalProperties"] = false;
        if (object.contains("required")) prop["required"] = object["required"];
      }
      at = &prop;
      continue;
    }
    nlohmann::json& its = prop["items"];
    if (last) {
      // Elements given as a name or as an object (a program's outputs, a measurements file's
      // free parameters): the object's keys apply to the objects.
      if (seg == "outputs" || seg == "free") object["type"] = {"string", "object"};
      if (its.is_null()) {
        its = std::move(object);
      } else {  // several kinds of element (a program's body): any one of them
        if (!its.contains("anyOf")) its = {{"anyOf", nlohmann::json::array({its})}};
        its["anyOf"].push_back(std::move(object));
      }
    }
    at = its.contains("anyOf") ? &its["anyOf"][0] : &its;
  }
}

// One kind's schema: its top level, and the nested objects of `nested` (a program run config
// shares the op run config's partition and runtime; a program sweep the sweep's candidates).
nlohmann::json kind_schema(const std::string& kind, const std::string& nested) {
  nlohmann::json top;
  for (const ConfigObject& o : config_objects())
    if (o.kind == kind && o.path.empty()) top = object_schema(o);
  for (const ConfigObject& o : config_objects())
    if (o.kind == nested && !o.path.empty()) attach(top, o.path, object_schema(o));
  top["properties"]["$schema"] = {
      {"type", "string"},
      {"description", "this file's JSON Schema (editors follow it; tilesim ignores it)"}};
  return top;
}

}  // namespace

std::vector<std::string> schema_kinds() {
  return {"run", "sweep", "program", "validation", "measurements", "msprof-map", "hardware"};
}

nlohmann::json config_schema(const std::string& kind) {
  nlohmann::json s;
  if (kind == "run" || kind == "sweep")
    s = {{"anyOf", {kind_schema(kind, kind), kind_schema(kind + "-program", kind)}}};
  else
    s = kind_schema(kind, kind);
  nlohmann::json out = {{"$schema", "http://json-schema.org/draft-07/schema#"},
                        {"$id", "tilesim/" + kind + ".schema.json"},
                        {"title", kind == "run"     ? std::string("tilesim run config")
                                  : kind == "sweep" ? std::string("tilesim sweep config")
                                                    : std::string("tilesim ") + kind_title(kind)}};
  out.update(s);
  return out;
}

nlohmann::json config_objects_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const ConfigObject& o : config_objects()) {
    nlohmann::json keys = nlohmann::json::array();
    for (const ConfigKey& k : o.keys) keys.push_back(k.name);
    out.push_back({{"kind", o.kind}, {"path", o.path}, {"keys", keys}});
  }
  return out;
}

}  // namespace tilesim
