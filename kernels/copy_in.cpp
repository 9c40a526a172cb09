// copy_in: GM -> UB reads only, one DMA instruction per tile. The calibration kernel for MTE2.
#include "kernels/families.hpp"
#include "kernels/lowering_support.hpp"

namespace tilesim {

namespace {

LoweredKernel lower_copy_in(const KernelSpec& spec, const Hardware& hw) {
  const int64_t tile_bytes = ub_tile_bytes(spec.tile, spec.dtype, hw);
  return lower_independent_tiles(
      spec, hw, "copy_in",
      [&](const Dims& origin, const Dims& extent, TaskKind& k, std::vector<Access>& acc) {
        k.label = "copy_in" + format_dims(extent);
        TileStep st;
        st.loads.push_back(tile_dma(spec, DmaDir::kRead, spec.shape, origin, extent, hw));
        acc.push_back({block_key(0, origin), st.loads.back().bytes(), false});
        k.steps.push_back(st);
        k.buffers.push_back({"in", tile_bytes, BufferRole::kInput, MemSpace::kUb});
      });
}

}  // namespace

KernelFamily copy_in_kernels() {
  KernelFamily f;
  f.name = "copy_in";
  // Its value is the identity: the functional proof is that its tiles read every element once.
  f.ops = {KernelOp{"copy_in", "GM -> UB reads, one DMA per tile (calibrates MTE2)", 1,
                    VecClass::kSimple, [](double x, double) { return x; }}};
  f.lower = lower_copy_in;
  return f;
}

}  // namespace tilesim
