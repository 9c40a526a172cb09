// Elementwise ops: z = x op y (add, sub, mul, div) or z = f(x) (relu, exp), tile by tile.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/families.hpp"
#include "kernels/lowering_support.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

LoweredKernel lower_elementwise(const KernelSpec& spec, const Hardware& hw) {
  const KernelOp& op = *find_op(spec.op);
  if (!spec.dims.empty()) throw Error(spec.op + ": dim: an elementwise op takes no reduction dim");
  const int64_t tile_bytes = product(spec.tile) * dtype_bytes(spec.dtype);
  return lower_independent_tiles(
      spec, hw, spec.op,
      [&](const Dims& origin, const Dims& extent, TaskKind& k, std::vector<Access>& acc) {
        k.label = spec.op + format_dims(extent);
        TileStep st;
        const DmaOp read = block_dma(DmaDir::kRead, spec.shape, origin, extent, spec.dtype,
                                     hw.dma.gm_granule_bytes);
        for (int i = 0; i < op.inputs; ++i) {
          st.loads.push_back(read);
          acc.push_back({block_key(static_cast<uint32_t>(i), origin), read.bytes(), false});
          k.buffers.push_back(
              {fmt::format("x{}", i), tile_bytes, BufferRole::kInput, MemSpace::kUb});
        }
        st.vec.push_back(VecOp{op.cls, spec.dtype, 1, 1,
                               product(compute_extent(spec.shape, spec.tile, extent))});
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
  f.ops = {
      KernelOp{"add", "z = x + y", 2, VecClass::kSimple, [](double x, double y) { return x + y; }},
      KernelOp{"sub", "z = x - y", 2, VecClass::kSimple, [](double x, double y) { return x - y; }},
      KernelOp{"mul", "z = x * y", 2, VecClass::kSimple, [](double x, double y) { return x * y; }},
      KernelOp{"div", "z = x / y", 2, VecClass::kComplex, [](double x, double y) { return x / y; }},
      KernelOp{"relu", "z = max(x, 0)", 1, VecClass::kSimple,
               [](double x, double) { return std::max(x, 0.0); }},
      KernelOp{"exp", "z = exp(x)", 1, VecClass::kComplex,
               [](double x, double) { return std::exp(x); }},
  };
  f.lower = lower_elementwise;
  return f;
}

}  // namespace tilesim
