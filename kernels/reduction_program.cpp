#include "kernels/reduction_program.hpp"

#include <fmt/format.h>

#include "kernels/families.hpp"
#include "kernels/lowering_support.hpp"
#include "model/error.hpp"

namespace tilesim {

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
  for (const auto& ph : prog.phases) {
    if (ph.plan.merge == MergeMode::kAtomic && !ph.fam.atomic_merge)
      throw Error(spec.op +
                      ": params.merge: \"atomic\" needs statistics that merge by sum, max "
                      "or min; " +
                      ph.fam.psg + " does not (use auto, tree, chain or in_task)",
                  ErrorKind::kParams);
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
    const int64_t bytes = dtype_bytes(ph.fam.fp32_inputs ? DType::kFp32 : spec.dtype);
    const int64_t last = ph.plan.tile.back();
    if (last * bytes % hw.ub.align_bytes != 0)
      throw Error(
          fmt::format("{}: {}: {} x {} B is not a multiple of {} B (use a multiple of {})", spec.op,
                      ph.tile_key, last, bytes, hw.ub.align_bytes, hw.ub.align_bytes / bytes),
          ErrorKind::kAlignment);
  }
}

}  // namespace

LoweredKernel lower_reducing_kernel(const KernelSpec& spec, const Hardware& hw) {
  validate_tile(spec, hw);
  if (spec.partition == PartitionStyle::kAscendC)
    throw Error(spec.op +
                    ": the ascendc partition is modelled for copy_in and elementwise ops; a "
                    "reducing op takes pypto, or spmd for the reduce and softmax families",
                ErrorKind::kLimits);
  const ReductionProgram prog = describe_reduction_program(spec);
  validate_phase_tiles(prog, spec, hw);
  LoweredKernel out;
  build_program(prog, spec, hw, out);
  fill_reduction_diagnostics(spec, hw, prog, out);
  return out;
}

void share_over_blocks(ReductionProgram& prog, const KernelSpec& spec) {
  const KernelFamily* family = find_family(spec.op);
  if (!family || (family->name != "reduce" && family->name != "softmax"))
    throw Error(fmt::format("{}: the spmd partition is modelled for copy_in, elementwise, reduce "
                            "and softmax ops; {} ops take the pypto partition",
                            spec.op, family ? family->name : "these"),
                ErrorKind::kLimits);
  if (spec.loop_count != 1)
    throw Error(fmt::format("{}: loop_count {} applies to the pypto partition; the spmd "
                            "partition shares output rows over partition.grid blocks",
                            spec.op, spec.loop_count),
                ErrorKind::kLimits);
  if (prog.phases.size() != 1)
    throw Error(fmt::format("{}: a chained reduction runs {} phases, one launch each; an spmd "
                            "launch runs one (use params.multi_dim = \"merged\" or the pypto "
                            "partition)",
                            spec.op, prog.phases.size()),
                ErrorKind::kLimits);
  const std::string merge = param_string(spec, "merge");
  if (merge != "auto" && merge != "in_task")
    throw Error(fmt::format("{}: params.merge: an spmd block accumulates its rows in UB "
                            "(in_task); \"{}\" merges across tasks, which needs the pypto "
                            "partition (allowed under spmd: auto, in_task)",
                            spec.op, merge),
                ErrorKind::kParams);
  ReductionPlan& plan = prog.phases[0].plan;
  const ReduceFamily& fam = prog.phases[0].fam;
  using Part = ReductionPlan::Part;
  // Units of work shared in contiguous runs over the blocks, each a list of parts.
  std::vector<std::vector<Part>> units;
  std::string split_cause;  // why a row would split across blocks, for the message
  if (!spec.block.empty()) {
    if (plan.shape != spec.shape || plan.dims.size() != 1)
      throw Error(fmt::format("{}: partition.block cuts the shape {} as given; it needs a "
                              "reduction over one dim (merged dims reshape the tensor)",
                              spec.op, format_dims(spec.shape)),
                  ErrorKind::kLimits);
    units = cut_block_regions(plan, spec.block);
    check_grid(spec, static_cast<int64_t>(units.size()), "block regions", "");
    const auto rd = static_cast<size_t>(plan.dims[0]);
    if (spec.block[rd] < spec.shape[rd])
      split_cause = fmt::format("partition.block[{}] = {} splits the reduced dim of size {}", rd,
                                spec.block[rd], spec.shape[rd]);
  } else {
    const auto rows = static_cast<int64_t>(plan.chains.size());
    const int64_t segs = plan.segments_per_chain();
    if (spec.grid > rows) {
      // More blocks than row tiles: the (row, sub-tile) units are shared instead.
      split_cause =
          fmt::format("partition.grid {} exceeds the {} output row tiles", spec.grid, rows);
      check_grid(spec, rows * segs, "sub-tiles", "");
      for (int64_t u = 0; u < rows * segs; ++u)
        units.push_back({{u / segs, u % segs, u % segs + 1}});
    } else {
      check_grid(spec, rows, "output row tiles", "");  // a grid below 1
      for (int64_t ci = 0; ci < rows; ++ci) units.push_back({{ci, 0, segs}});
    }
  }
  if (!split_cause.empty() && (!fam.atomic_merge || fam.second_pass))
    throw Error(
        fmt::format("{}: {}, so rows would split across blocks; {} partials need a "
                    "second launch to combine (not modelled; sum, mean, amax and amin "
                    "combine by atomic add): {}",
                    spec.op, split_cause, spec.op,
                    spec.block.empty() ? fmt::format("use a grid of at most {}, or a smaller tile",
                                                     plan.chains.size())
                                       : "use a block covering the reduced dim"),
        ErrorKind::kLimits);
  plan.merge = MergeMode::kInTask;
  plan.grid = spec.grid;
  plan.blocks.assign(static_cast<size_t>(spec.grid), {});
  for (int64_t b = 0; b < spec.grid; ++b) {
    const BlockRange r = block_range(static_cast<int64_t>(units.size()), spec.grid, b);
    auto& parts = plan.blocks[static_cast<size_t>(b)];
    for (int64_t u = r.begin; u < r.end; ++u)
      for (const Part& p : units[static_cast<size_t>(u)]) {
        // Neighbouring segments of one row in one block accumulate in UB together.
        if (!parts.empty() && parts.back().chain == p.chain && parts.back().s1 == p.s0)
          parts.back().s1 = p.s1;
        else
          parts.push_back(p);
      }
  }
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

MergeMode merge_mode_of(const KernelSpec& spec) {
  return parse_merge_mode(param_string(spec, "merge"));
}

int loop_axis_of(const KernelSpec& spec, const std::vector<int>& dims) {
  if (spec.loop_axis >= 0) return spec.loop_axis;
  for (int a = 0; a < static_cast<int>(spec.shape.size()); ++a)
    if (!is_reduced(dims, static_cast<size_t>(a))) return a;
  return 0;
}

}  // namespace tilesim
