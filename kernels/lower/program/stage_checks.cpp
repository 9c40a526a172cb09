// The pre-check every stage passes before it is lowered (Timeloop's PreEvaluationCheck before
// Evaluate): the partition's loop and grid rules, the stage's tile alignment, and a split
// reduction's merge under the partition. The UB budget is checked as each new task kind is
// planned (LoweringContext::kind_id), where the kind's buffers are known.
#include <fmt/format.h>

#include "kernels/lower/program/lowering_context.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

// Every tensor an op of the stage touches has a last dim of a whole number of UB blocks (spmd's
// padded copies, DataCopyPad, take any row).
void check_alignment(const LoweringContext& cx, const ProgStage& s) {
  if (cx.spmd()) return;
  const Block full = s.full_tile();
  for (int o = s.first; o <= s.last; ++o) {
    const ProgOp& x = cx.op(o);
    if (x.info->kind == OpKind::kMatmul || x.info->kind == OpKind::kGather) continue;
    std::vector<std::pair<int, Block>> touched;
    for (int t : x.in) touched.emplace_back(t, operand_region(cx.program(), x, t, full));
    touched.emplace_back(x.out, output_region(cx.program(), x, full));
    for (const auto& [t, r] : touched) {
      // A whole row shorter than one UB block (a broadcast column, a reduced last dim, PyPTO's
      // [.., 4] fp32 gate weights) takes one block, padded: nothing to misalign.
      const ProgTensor& tensor = cx.tensor(t);
      if (r.extent.back() == tensor.shape.back() &&
          tensor.shape.back() * dtype_bytes(tensor.dtype) < cx.hw().ub.align_bytes)
        continue;
      const int64_t tile_last =
          s.tile[s.tile.size() - 1 - (x.info->kind == OpKind::kTranspose && t == x.in[0] ? 1 : 0)];
      check_row_alignment(
          fmt::format("{}: tile {} of '{}'", cx.where(x), format_dims(s.tile), tensor.name),
          tile_last, dtype_bytes(tensor.dtype), cx.hw());
    }
  }
}

// partition.block has the rank of the stage it cuts, and a split reduction cut into regions
// reduces one dim (its regions' rows are runs along it).
void check_block(const LoweringContext& cx, const ProgStage& s, const ProgOp& last) {
  const Dims& block = cx.spec().block;
  if (!cx.spmd() || block.empty() || s.online >= 0 || s.kind == OpKind::kMatmul) return;
  if (block.size() != s.shape.size())
    throw Error(fmt::format("{}: partition.block {} has rank {}, but stage '{}' iterates over {} "
                            "(a block region has the rank of the stage it cuts)",
                            cx.where(cx.op(s.first)), format_dims(block), block.size(), s.psg,
                            format_dims(s.shape)),
                ErrorKind::kInput);
  if (s.split && last.info->kind == OpKind::kReduce && last.dims.size() != 1)
    throw Error(fmt::format("{}: partition.block cuts stage '{}' into regions whose rows are runs "
                            "along one reduced dim; {} reduces {} dims (reduce one, or leave "
                            "partition.block out)",
                            cx.where(last), s.psg, last.name, last.dims.size()),
                ErrorKind::kLimits);
}

}  // namespace

void check_stage(const LoweringContext& cx, const ProgStage& s) {
  const Program& p = cx.program();
  if (cx.ascendc() && (s.split || s.online >= 0 || s.kind == OpKind::kMatmul)) {
    const char* what = s.online >= 0               ? "a flash stage"
                       : s.kind == OpKind::kMatmul ? "a matmul"
                       : cx.op(s.last).info->kind == OpKind::kScan
                           ? "a cumsum over a split dim"
                           : "a reduction that splits its rows";
    throw Error(fmt::format("{}: the ascendc partition is modelled for stages of independent "
                            "tiles (a task per core walking its run of tiles); stage '{}' is {} "
                            "(use pypto, or spmd with a grid)",
                            cx.where(cx.op(s.first)), s.psg, what),
                ErrorKind::kLimits);
  }
  if (s.kind == OpKind::kLoad && cx.op(s.first).dest == MemSpace::kL1 && !cx.spmd() &&
      !cx.ascendc())
    throw Error(fmt::format("{}: a load into L1 runs on the cube cores as an Ascend C kernel: use "
                            "the ascendc or spmd partition",
                            cx.where(cx.op(s.first))),
                ErrorKind::kLimits);
  if ((cx.spmd() || cx.ascendc()) && s.roots() > 1)
    throw Error(
        fmt::format("{}: loop '{}' loop_count {} applies to the pypto partition; the {} partition "
                    "splits each stage's tiles over {}",
                    cx.where(cx.op(s.first)), p.loops[static_cast<size_t>(s.loop)].name, s.roots(),
                    partition_name(cx.spec().partition),
                    cx.spmd() ? "partition.grid blocks" : "partition.cores"),
        ErrorKind::kLimits);
  if (cx.spmd() && cx.spec().grid < 1)
    throw Error(fmt::format("{}: partition.grid {}: an spmd launch starts at least 1 block",
                            p.built_in ? cx.spec().op : "program", cx.spec().grid),
                ErrorKind::kLimits);
  check_alignment(cx, s);
  const ProgOp& last = cx.op(s.last);
  check_block(cx, s, last);
  if (cx.spmd() && s.online < 0 && s.split && last.info->kind != OpKind::kScan &&
      last.merge != MergeMode::kInTask)
    throw Error(fmt::format("{}: merge \"{}\": an spmd block accumulates its rows in UB "
                            "(in_task); merges across tasks need the pypto partition",
                            cx.where(last), merge_mode_name(last.merge)),
                ErrorKind::kInput);
}

}  // namespace tilesim
