#include "kernels/lower/reduction_program.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/lower/diagnostics.hpp"
#include "kernels/tiling/kind_cache.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

ReductionProgram describe_reduction_program(const KernelSpec& spec) {
  const KernelFamily* f = find_family(spec.op);
  if (!f || !f->describe) throw InternalError("'" + spec.op + "' is not a reducing op");
  ReductionProgram prog = f->describe(spec);
  if (spec.partition == PartitionStyle::kSpmd) share_over_blocks(prog, spec);
  return prog;
}

void build_program(const ReductionProgram& prog, const KernelSpec& spec, const Hardware& hw,
                   LoweredKernel& out) {
  TaskGraph& g = out.graph;
  g.runtime = !prog.phases.empty() && prog.phases[0].plan.grid > 0 ? RuntimeStyle::kSpmd
                                                                   : RuntimeStyle::kMpmd;
  KindCache kinds;
  ReductionBuilder builder(g, kinds, hw, spec.dtype, spec.buffer_count);
  int32_t root_offset = 0;
  ReductionTasks prev;
  const ReductionPlan* prev_plan = nullptr;
  for (size_t i = 0; i < prog.phases.size(); ++i) {
    const Phase& ph = prog.phases[i];
    if (ph.plan.merge == MergeMode::kAtomic && !ph.fam.atomic_merge)
      throw Error(spec.op +
                      ": params.merge: \"atomic\" needs statistics that merge by sum, max "
                      "or min; " +
                      ph.fam.psg + " does not (use auto, tree, chain or in_task)",
                  ErrorKind::kParams);
    const Phase* folded =
        i + 1 < prog.phases.size() && prog.phases[i + 1].link == Phase::Link::kInBlocks
            ? &prog.phases[i + 1]
            : nullptr;
    if (ph.plan.grid > 0 && (ph.plan.second_launch || folded)) {
      prev = builder.add_blocks(ph.plan, ph.fam, folded ? &folded->fam : nullptr, root_offset);
      if (folded) ++i;  // done by these blocks
      continue;
    }
    SegmentDeps deps;
    if (ph.link == Phase::Link::kByOrigin) deps = deps_by_origin(*prev_plan, prev);
    if (ph.link == Phase::Link::kByRows) deps = deps_by_rows(*prev_plan, prev);
    prev = builder.add(ph.plan, ph.fam, root_offset, deps);
    prev_plan = &ph.plan;
    root_offset += static_cast<int32_t>(ph.plan.chunks.size());
  }
  g.finalize();
}

void fill_reduction_diagnostics(const KernelSpec& spec, const Hardware& hw,
                                const ReductionProgram& prog, LoweredKernel& out) {
  fill_common_diagnostics(spec, hw, out);
  if (!prog.phases.empty()) out.diag.reduction_segments = prog.phases[0].plan.segments_per_chain();
}

Phase make_phase(ReductionPlan plan, ReduceFamily fam, Phase::Link link) {
  if (plan.merge == MergeMode::kAuto)
    plan.merge = fam.atomic_merge ? MergeMode::kAtomic : MergeMode::kTree;
  return Phase{std::move(plan), std::move(fam), link, ""};
}

namespace {

// A later phase tiles its own tensor (a per-sample vector, say): its last tile dim obeys the same
// UB alignment as the spec's tile, which validate_tile checked.
void validate_phase_tiles(const ReductionProgram& prog, const KernelSpec& spec,
                          const Hardware& hw) {
  for (const Phase& ph : prog.phases) {
    if (ph.tile_key.empty()) continue;
    check_row_alignment(fmt::format("{}: {} {}", spec.op, ph.tile_key, format_dims(ph.plan.tile)),
                        ph.plan.tile.back(),
                        dtype_bytes(ph.fam.fp32_inputs ? DType::kFp32 : spec.dtype), hw);
  }
}

// A loss's batch mean under spmd: one output (the scalar), one segment per block that finishes
// rows: the rows it finishes, folded and added atomically (kInBlocks). A split row belongs to the
// block holding its first part (with linear_finalize the blocks holding its other parts add
// their scaled shares of it: the same sum, regrouped).
void fold_into_blocks(Phase& batch, const ReductionPlan& rows) {
  ReductionPlan& p = batch.plan;
  p.merge = MergeMode::kAtomic;
  p.chains = {ReduceChain{0, Block{{0}, {1}}, {}}};
  for (const auto& parts : block_row_parts(rows)) {
    std::vector<int64_t> done;
    for (const RowPart& part : parts)
      if (part.index == 0) done.push_back(part.chain);
    if (done.empty()) continue;
    const Block& first = rows.chains[static_cast<size_t>(done.front())].out;
    const Block& last = rows.chains[static_cast<size_t>(done.back())].out;
    p.chains[0].segments.push_back(
        Block{{first.origin[0]}, {last.origin[0] + last.extent[0] - first.origin[0]}});
  }
  batch.link = Phase::Link::kInBlocks;
}

}  // namespace

LoweredKernel lower_reducing_kernel(const KernelSpec& spec, const Hardware& hw) {
  validate_tile(spec, hw);
  if (spec.partition != PartitionStyle::kSpmd) check_reducing_partition(spec, 1, false, false);
  const ReductionProgram prog = describe_reduction_program(spec);
  validate_phase_tiles(prog, spec, hw);
  LoweredKernel out;
  build_program(prog, spec, hw, out);
  fill_reduction_diagnostics(spec, hw, prog, out);
  return out;
}

void share_over_blocks(ReductionProgram& prog, const KernelSpec& spec) {
  const KernelFamily* family = find_family(spec.op);
  if (!family || !family->spmd) {
    std::vector<std::string> spmd;
    for (const KernelFamily& f : kernel_families())
      if (f.spmd) spmd.push_back(f.name);
    const std::string last = spmd.back();
    spmd.pop_back();
    throw Error(fmt::format("{}: the spmd partition is modelled for {} and {} ops; {} ops take the "
                            "pypto partition",
                            spec.op, fmt::join(spmd, ", "), last, family ? family->name : "these"),
                ErrorKind::kLimits);
  }
  const bool folds_rows = family->spmd_folds_second_phase;
  check_reducing_partition(
      spec, prog.phases.size() - (folds_rows ? 1 : 0),
      prog.phases[0].plan.shape != spec.shape || prog.phases[0].plan.dims.size() != 1, folds_rows);
  ReductionPlan& plan = prog.phases[0].plan;
  ReduceFamily& fam = prog.phases[0].fam;
  using Part = ReductionPlan::Part;
  // Units of work shared in contiguous runs over the blocks, each a list of parts.
  std::vector<std::vector<Part>> units;
  const std::string rows_mode = param_string(spec, "spmd_rows");
  if (!spec.block.empty()) {
    units = cut_block_regions(plan, spec.block);
    check_grid(spec, static_cast<int64_t>(units.size()), "block regions", "");
  } else {
    // Whole rows per block while there are at least as many row tiles as blocks (auto), or
    // always (whole); otherwise, or always (split), blocks share the (row, sub-tile) units.
    const auto rows = static_cast<int64_t>(plan.chains.size());
    const int64_t segs = plan.segments_per_chain();
    if (rows_mode == "split" || (rows_mode == "auto" && spec.grid > rows)) {
      check_grid(spec, rows * segs, "sub-tiles", "");
      for (int64_t u = 0; u < rows * segs; ++u)
        units.push_back({{u / segs, u % segs, u % segs + 1}});
    } else {
      check_grid(spec, rows, "output row tiles",
                 " (params.spmd_rows = \"whole\"; \"split\" shares sub-tiles instead)");
      for (int64_t ci = 0; ci < rows; ++ci) units.push_back({{ci, 0, segs}});
    }
  }
  plan.merge = MergeMode::kInTask;
  plan.grid = spec.grid;
  plan.blocks.assign(static_cast<size_t>(spec.grid), {});
  for (int64_t b = 0; b < spec.grid; ++b)
    plan.blocks[static_cast<size_t>(b)] = block_chain_runs(units, spec.grid, b);
  if (splits_rows(plan)) {
    // Atomic sums, maxima and minima finish a split row in GM, and a loss whose per-row value is
    // a scaled sum (mse) folds its parts directly; a second pass over the input, statistics
    // that do not add (softmax's (max, sum of exp)) or a fold of rows that must be whole first
    // need a second launch.
    plan.second_launch =
        fam.second_pass || !fam.atomic_merge || (folds_rows && !fam.linear_finalize);
  } else {
    // A row that fits one sub-tile is normalised in the pass that reads it.
    fam.fuse_single = fam.second_pass;
  }
  if (folds_rows) fold_into_blocks(prog.phases[1], plan);
}

void check_reducing_partition(const KernelSpec& spec, size_t launches, bool reshaped,
                              bool folds_rows) {
  if (spec.partition == PartitionStyle::kAscendC)
    throw Error(spec.op +
                    ": the ascendc partition is modelled for copy_in and elementwise ops; a "
                    "reducing op takes pypto or spmd",
                ErrorKind::kLimits);
  if (spec.partition != PartitionStyle::kSpmd) {
    if (has_param(spec, "spmd_rows"))
      throw Error(fmt::format("{}: params.spmd_rows applies to the spmd partition (this run is "
                              "{}); leave it out",
                              spec.op, partition_name(spec.partition)),
                  ErrorKind::kParams);
    return;
  }
  if (spec.loop_count != 1)
    throw Error(fmt::format("{}: loop_count {} applies to the pypto partition; the spmd "
                            "partition shares output rows over partition.grid blocks",
                            spec.op, spec.loop_count),
                ErrorKind::kLimits);
  if (launches != 1)
    throw Error(fmt::format("{}: a chained reduction runs {} phases, one launch each; an spmd "
                            "launch runs one (use params.multi_dim = \"merged\" or the pypto "
                            "partition)",
                            spec.op, launches),
                ErrorKind::kLimits);
  const std::string merge = param_string(spec, "merge");
  if (merge != "auto" && merge != "in_task")
    throw Error(fmt::format("{}: params.merge: an spmd block accumulates its rows in UB "
                            "(in_task); \"{}\" merges across tasks, which needs the pypto "
                            "partition (allowed under spmd: auto, in_task)",
                            spec.op, merge),
                ErrorKind::kParams);
  if (folds_rows && has_param(spec, "phase2_tile"))
    throw Error(fmt::format("{}: params.phase2_tile tiles the pypto batch-mean phase; under spmd "
                            "each block folds the rows it finishes (leave it out)",
                            spec.op),
                ErrorKind::kParams);
  if (spec.block.empty()) return;
  if (reshaped)
    throw Error(fmt::format("{}: partition.block cuts the shape {} as given; it needs a "
                            "reduction over one dim (merged dims reshape the tensor)",
                            spec.op, format_dims(spec.shape)),
                ErrorKind::kLimits);
  if (param_string(spec, "spmd_rows") != "auto")
    throw Error(fmt::format("{}: params.spmd_rows \"{}\": with partition.block the block "
                            "regions decide which rows split (leave it out)",
                            spec.op, param_string(spec, "spmd_rows")),
                ErrorKind::kParams);
}

ParamDecl merge_param() {
  ParamDecl p;
  p.name = "merge";
  p.type = ParamType::kString;
  p.fallback = "auto";
  p.allowed = {"auto", "in_task", "chain", "tree", "atomic"};
  p.doc =
      "how partials of a split reduction axis merge (auto: atomic where the statistics allow, "
      "else tree)";
  return p;
}

ParamDecl spmd_rows_param() {
  ParamDecl p;
  p.name = "spmd_rows";
  p.type = ParamType::kString;
  p.fallback = "auto";
  p.allowed = {"auto", "whole", "split"};
  p.doc =
      "spmd: whole rows per block, or rows split over blocks (partials combined atomically or "
      "by a second launch); auto: whole while row tiles >= partition.grid";
  return p;
}

MergeMode merge_mode_of(const KernelSpec& spec) {
  return parse_merge_mode(param_string(spec, "merge"));
}

}  // namespace tilesim
