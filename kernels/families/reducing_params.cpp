#include "kernels/families/reducing_params.hpp"

#include <fmt/format.h>

#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

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

MergeMode merge_mode_of(const KernelSpec& spec, MergeMode pypto_auto) {
  const MergeMode asked = parse_merge_mode(param_string(spec, "merge"));
  if (asked != MergeMode::kAuto) return asked;
  return spec.partition == PartitionStyle::kSpmd ? MergeMode::kInTask : pypto_auto;
}

KernelSpec reducing_view(const KernelSpec& spec, Dims shape, Dims tile, std::vector<int> dims) {
  KernelSpec view = spec;
  view.shape = std::move(shape);
  view.tile = std::move(tile);
  view.dims = std::move(dims);
  if (view.loop_axis < 0) view.loop_axis = default_loop_axis(view, view.dims);
  return view;
}

}  // namespace tilesim
