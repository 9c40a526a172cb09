// A copy stage (op "load"): each tile read from GM into UB, or into the cube cores' L1 as the ND2NZ
// DataCopy a matmul's operand load is (hicann/catlass include/catlass/gemm/tile/copy_gm_to_l1.hpp:
// nValue = rows, dValue = the row's elements), and kept there: nothing computes on it or stores
// it. The copy_in family (MTE2's calibration kernel) is one.
#include "kernels/lower/program/lowering_context.hpp"

namespace tilesim {

namespace {

TaskKind copy_kind(const LoweringContext& cx, const ProgStage& s, const Block& b,
                   std::vector<Access>& acc) {
  const ProgOp& x = cx.op(s.first);
  const int t = x.in[0];
  const ProgTensor& src = cx.tensor(t);
  TaskKind k;
  k.buffer_count = cx.spec().buffer_count;
  k.label = s.psg + format_dims(b.extent);
  TileStep st;
  if (x.dest == MemSpace::kL1) {
    DmaOp d = row_dma(DmaDir::kRead, src.shape, b.origin, b.extent, src.dtype,
                      cx.hw().dma.gm_granule_bytes);
    d.path = DmaPath::kL1Nd2nz;
    acc.push_back({block_key(static_cast<uint32_t>(t), b.origin), d.bytes(), false, src.l2_bypass});
    st.loads.push_back(d);
    k.core = CoreType::kAic;
  } else {
    st.loads.push_back(cx.dma(DmaDir::kRead, t, b, acc));
  }
  k.steps.push_back(st);
  k.buffers.push_back({src.name, cx.ub_bytes(t, s.full_tile()), BufferRole::kInput, x.dest});
  return k;
}

}  // namespace

void lower_copy_stage(LoweringContext& cx, StageRun& run) {
  const CoreType core = cx.op(run.s.first).dest == MemSpace::kL1 ? CoreType::kAic : CoreType::kAiv;
  lower_tiles(cx, run, core, [&](const Block& b, std::vector<Access>& acc, bool) {
    return copy_kind(cx, run.s, b, acc);
  });
}

}  // namespace tilesim
