// copy_in: GM reads only, one DMA instruction per tile. The calibration kernel for MTE2: into UB
// on the vector cores (DataCopy / DataCopyPad), or with params.dest "l1" into L1 on the cube cores
// as the ND2NZ DataCopy a matmul's operand load is (hicann/catlass
// include/catlass/gemm/tile/copy_gm_to_l1.hpp: nValue = rows, dValue = the row's elements).
#include <fmt/format.h>

#include "kernels/families/families.hpp"
#include "kernels/lower/independent_tiles.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

LoweredKernel lower_copy_in(const KernelSpec& spec, const Hardware& hw) {
  const bool l1 = param_string(spec, "dest") == "l1";
  if (l1) {
    if (spec.partition == PartitionStyle::kPypto)
      throw Error(
          "copy_in: params.dest \"l1\" runs on the cube cores as an Ascend C kernel: use the "
          "ascendc or spmd partition",
          ErrorKind::kParams);
    if (spec.partition == PartitionStyle::kAscendC && spec.cores > hw.cores.aic)
      throw Error(fmt::format("copy_in: partition.cores {} exceeds the {} AIC cores of {} "
                              "(params.dest \"l1\" reads into the cube cores' L1)",
                              spec.cores, hw.cores.aic, hw.name),
                  ErrorKind::kLimits);
  }
  const int64_t tile_bytes = ub_tile_bytes(spec.tile, spec.dtype, hw);
  KernelSpec s = spec;
  if (l1 && s.partition == PartitionStyle::kAscendC && s.cores == 0) s.cores = hw.cores.aic;
  return lower_independent_tiles(
      s, hw, "copy_in",
      [&](const Dims& origin, const Dims& extent, TaskKind& k, std::vector<Access>& acc) {
        k.label = "copy_in" + format_dims(extent);
        TileStep st;
        DmaOp op =
            l1 ? row_dma(DmaDir::kRead, s.shape, origin, extent, s.dtype, hw.dma.gm_granule_bytes)
               : tile_dma(s, DmaDir::kRead, s.shape, origin, extent, hw);
        if (l1) op.path = DmaPath::kL1Nd2nz;
        st.loads.push_back(op);
        acc.push_back({block_key(0, origin), st.loads.back().bytes(), false});
        k.steps.push_back(st);
        if (l1) k.core = CoreType::kAic;
        k.buffers.push_back(
            {"in", tile_bytes, BufferRole::kInput, l1 ? MemSpace::kL1 : MemSpace::kUb});
      });
}

}  // namespace

KernelFamily copy_in_kernels() {
  KernelFamily f;
  f.name = "copy_in";
  // Its value is the identity: the functional proof is that its tiles read every element once.
  f.spmd = true;
  f.ops = {KernelOp{"copy_in", "GM -> UB (or L1) reads, one DMA per tile (calibrates MTE2)", 1,
                    [](double x, double) { return x; }}};
  ParamDecl dest;
  dest.name = "dest";
  dest.type = ParamType::kString;
  dest.allowed = {"ub", "l1"};
  dest.fallback = "ub";
  dest.doc =
      "where the tiles land: \"ub\" (vector cores, DataCopy) or \"l1\" (cube cores, ND2NZ "
      "DataCopy into L1)";
  f.params = {dest};
  f.lower = lower_copy_in;
  return f;
}

}  // namespace tilesim
