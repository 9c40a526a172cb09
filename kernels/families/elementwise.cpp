// Elementwise ops: z = x op y (add, sub, mul, div) or z = f(x) (relu, exp), tile by tile. A
// binary op's second operand may broadcast (params.broadcast, numpy rules as the op table states
// them, broadcast_shapes): each tile reads it at its broadcast extent.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/families/families.hpp"
#include "kernels/lower/independent_tiles.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "kernels/tiling/vector_work.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

// The second operand's shape at the kernel's rank (numpy's leading 1s added): params.broadcast,
// or the kernel's shape.
Dims operand_shape(const KernelSpec& spec) {
  const KernelOp* op = find_op(spec.op);
  if (!op || op->inputs < 2 || !has_param(spec, "broadcast")) return spec.shape;
  Dims b = param_ints(spec, "broadcast");
  if (b.size() < spec.shape.size()) b.insert(b.begin(), spec.shape.size() - b.size(), 1);
  return b;
}

// The operand broadcasts to the kernel's shape by the op table's rule (broadcast_shapes) without
// enlarging it.
void check_broadcast(const KernelSpec& spec, const JsonReader& params) {
  const KernelOp* op = find_op(spec.op);
  if (!op || op->inputs < 2 || !has_param(spec, "broadcast")) return;
  const Dims b = param_ints(spec, "broadcast");
  if (broadcast_shapes(spec.shape, b) == std::optional<Dims>(spec.shape)) return;
  Dims row(spec.shape.size(), 1), col = spec.shape;
  row.back() = spec.shape.back();
  col.back() = 1;
  params.at("broadcast")
      .fail(fmt::format("{} does not broadcast to shape {} (allowed: numpy rules, right-aligned, "
                        "each dim 1 or the shape's, e.g. {}, {} or {})",
                        format_dims(b), format_dims(spec.shape), format_dims(Dims{row.back()}),
                        format_dims(row), format_dims(col)));
}

LoweredKernel lower_elementwise(const KernelSpec& spec, const Hardware& hw) {
  const KernelOp& op = *find_op(spec.op);
  if (!spec.dims.empty()) throw Error(spec.op + ": dim: an elementwise op takes no reduction dim");
  validate_tile(spec, hw);  // before the operand's tile is derived from it
  const Dims yshape = operand_shape(spec);
  const bool broadcast = yshape != spec.shape;
  const int64_t bytes = dtype_bytes(spec.dtype);
  const int64_t tile_bytes = ub_tile_bytes(spec.tile, spec.dtype, hw);
  // The operand's tile: 1 on its broadcast dims. Its UB buffer holds what one copy brings: a
  // row of the tile's width, or a column's run of scalars (contiguous in GM, so one burst).
  Dims ytile = spec.tile;
  for (size_t d = 0; d < ytile.size(); ++d)
    ytile[d] = yshape[d] == 1 ? 1 : std::min(ytile[d], yshape[d]);
  const DmaOp yfull = block_dma(DmaDir::kRead, yshape, Dims(yshape.size(), 0), ytile, spec.dtype,
                                hw.dma.gm_granule_bytes);
  const int64_t ybytes =
      yfull.bursts * (ceil_div(yfull.burst_bytes, hw.ub.align_bytes) * hw.ub.align_bytes);
  const bool column = broadcast && yshape.back() == 1 && spec.shape.back() != 1;
  const bool bypass = param_bool(spec, "l2_bypass_inputs");
  const int operands = op.record->n_ary ? static_cast<int>(param_int(spec, "operands")) : op.inputs;
  const bool conflict_free = op.inputs == 2 && param_bool(spec, "bank_conflict_free");
  return lower_independent_tiles(
      spec, hw, spec.op,
      [&](const Dims& origin, const Dims& extent, TaskKind& k, std::vector<Access>& acc) {
        k.label = spec.op + format_dims(extent);
        TileStep st;
        const DmaOp read = tile_dma(spec, DmaDir::kRead, spec.shape, origin, extent, hw);
        // Triton-Ascend: a load the mask cuts (a ragged edge) first fills its whole buffer with
        // the load's `other`, then MTE2 copies the valid part (TileStep::load_fill).
        const auto fill_if_masked = [&](const Dims& valid, const Dims& buffer) {
          if (spec.triton && valid != buffer)
            st.load_fill.push_back(VecOp{VecClass::kSimple, spec.dtype, 1, 1, product(buffer)});
        };
        for (int i = 0; i < operands; ++i) {
          if (i == 1 && broadcast) {
            // The operand block this tile uses: its broadcast dims collapse to index 0, extent 1.
            Dims yo = origin, ye = extent;
            for (size_t d = 0; d < yo.size(); ++d)
              if (yshape[d] == 1) yo[d] = 0, ye[d] = 1;
            fill_if_masked(ye, ytile);
            st.loads.push_back(tile_dma(spec, DmaDir::kRead, yshape, yo, ye, hw));
            acc.push_back({block_key(1, yo), st.loads.back().bytes(), false, bypass});
            k.buffers.push_back({"y", ybytes, BufferRole::kInput, MemSpace::kUb});
            continue;
          }
          fill_if_masked(extent, spec.tile);
          st.loads.push_back(read);
          acc.push_back({block_key(static_cast<uint32_t>(i), origin), read.bytes(), false, bypass});
          k.buffers.push_back(
              {fmt::format("x{}", i), tile_bytes, BufferRole::kInput, MemSpace::kUb});
        }
        const Dims ce = compute_extent(spec.shape, spec.tile, extent);
        if (column) {
          // A column operand: Brcb spreads each row's scalar over one UB block (ub.align_bytes),
          // so the binary op can read it with block stride 0 (y_blocks: one block per row).
          const int64_t scalars = product(ytile) / ytile.back();
          st.vec.push_back(
              VecOp{VecClass::kSimple, spec.dtype, 1, 1, scalars * hw.ub.align_bytes / bytes});
          k.buffers.push_back(
              {"y_blocks", scalars * hw.ub.align_bytes, BufferRole::kTemp, MemSpace::kUb});
        }
        if (broadcast && spec.triton && product(ytile) > 1) {
          // The Triton-Ascend compiler materialises a broadcast of more than one value per
          // sub-tile (tl.broadcast_to) as a full-tile tensor before the binary op: a copy into
          // its own UB buffer. One scalar per sub-tile goes to a vector-scalar instruction.
          k.buffers.push_back({"y_broadcast", tile_bytes, BufferRole::kTemp, MemSpace::kUb});
          st.vec.push_back(VecOp{VecClass::kSimple, spec.dtype, 1, 1, product(ce)});
        }
        const size_t first_binary = st.vec.size();
        // An n-ary op (params.operands) folds its operands left to right: n - 1 instructions.
        for (int f = 1; f < std::max(2, operands); ++f)
          for (VecClass c : op.record->instrs)
            add_binary_vec(c, spec.dtype, ce, broadcast, hw, st.vec);
        if (conflict_free)
          for (size_t v = first_binary; v < st.vec.size(); ++v) st.vec[v].bank_conflict = false;
        DmaOp write = read;
        write.dir = DmaDir::kWrite;
        st.stores.push_back(write);
        acc.push_back({block_key(kOutputTensor, origin), write.bytes(), true});
        k.buffers.push_back({"z", tile_bytes, BufferRole::kOutput, MemSpace::kUb});
        k.steps.push_back(st);
      });
}

}  // namespace

KernelFamily elementwise_kernels() {
  KernelFamily f;
  f.name = "elementwise";
  f.spmd = true;
  // Records of the one op table (kernels/ops/op_table.cpp): instructions, arity and value.
  for (const char* name : {"add", "sub", "mul", "div", "relu", "exp"}) f.ops.emplace_back(name);
  ParamDecl broadcast;
  broadcast.name = "broadcast";
  broadcast.type = ParamType::kIntList;
  broadcast.min = 1;
  for (const auto& op : f.ops)
    if (op.inputs == 2) broadcast.ops.push_back(op.name);
  broadcast.doc =
      "the second operand's shape when it broadcasts (numpy rules: each dim 1 or the shape's, "
      "e.g. [1, n] a row, [m, 1] a column); default: the kernel's shape";
  const ParamDecl bypass = flag_param(
      "l2_bypass_inputs",
      "the inputs are read without allocating in L2 (Ascend C SetL2CacheHint(CACHE_MODE_DISABLE) "
      "on data read once), so L2 keeps room for the output's lines");
  const ParamDecl banks = flag_param(
      "bank_conflict_free",
      "the kernel places the two sources in different UB bank groups (addresses 256 B apart "
      "modulo 512 B, as the add study's case 6 does); default: buffers laid out one after another "
      "in multiples of 512 B share a group and each repeat reads them one after the other",
      broadcast.ops);
  ParamDecl operands;
  operands.name = "operands";
  operands.type = ParamType::kInt;
  operands.fallback = 2;
  operands.min = 2;
  operands.max = 8;
  for (const auto& op : f.ops)
    if (op.record->n_ary) operands.ops.push_back(op.name);
  operands.doc =
      "inputs of one fused n-ary op, folded left to right in one tile (((x1 + x2) + x3) + x4: "
      "n loads, n - 1 vector ops); the second may broadcast, the others have the kernel's shape";
  f.params = {broadcast, bypass, banks, operands};
  f.check_params = check_broadcast;
  f.lower = lower_elementwise;
  return f;
}

}  // namespace tilesim
