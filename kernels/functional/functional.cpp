#include "kernels/functional/functional.hpp"

#include <algorithm>
#include <random>

#include "kernels/spec/registry.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

int64_t NdArray::offset(const Dims& at) const {
  int64_t o = 0;
  for (size_t i = 0; i < shape.size(); ++i) o = o * shape[i] + at[i];
  return o;
}

NdArray random_array(const Dims& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  NdArray a{shape, Eigen::ArrayXd(product(shape))};
  for (Eigen::Index i = 0; i < a.data.size(); ++i) a.data[i] = u(rng);
  return a;
}

NdArray zero_array(const Dims& shape) {
  return NdArray{shape, Eigen::ArrayXd::Zero(product(shape))};
}

NdArray reshaped(NdArray a, const Dims& shape) {
  if (product(shape) != a.data.size()) throw InternalError("reshape: element counts differ");
  a.shape = shape;
  return a;
}

TilesResult execute_independent_tiles(const KernelSpec& spec, const std::vector<NdArray>& inputs) {
  const KernelOp* op = find_op(spec.op);
  if (!op || !op->value) throw InternalError(spec.op + " has no elementwise value");
  const size_t operands = op->record && op->record->n_ary
                              ? static_cast<size_t>(param_int(spec, "operands"))
                              : static_cast<size_t>(op->inputs);
  if (inputs.size() != operands) throw InternalError(spec.op + ": wrong number of inputs");
  TilesResult r{zero_array(spec.shape), zero_array(spec.shape)};
  // A broadcast second operand (params.broadcast) is read at index 0 of its size-1 dims.
  auto y = [&](Dims at) {
    for (size_t d = 0; d < at.size(); ++d)
      if (inputs[1].shape[d] == 1) at[d] = 0;
    return inputs[1][at];
  };
  auto tile = [&](const Dims& origin, const Dims& extent) {
    for_each_position(Block{origin, extent}, [&](const Dims& at) {
      double v = op->value(inputs[0][at], op->inputs > 1 ? y(at) : 0.0);
      for (size_t i = 2; i < operands; ++i) v = op->value(v, inputs[i][at]);  // n-ary: left fold
      r.out[at] = v;
      r.covered[at] += 1;
    });
  };
  if (spec.partition == PartitionStyle::kSpmd) {
    // Block by block, each walking its run of regions sub-tile by sub-tile.
    const BlockTiling cut(spec.shape, spec.block, spec.tile);
    for (int64_t b = 0; b < spec.grid; ++b) {
      const BlockRange br = block_range(cut.regions(), spec.grid, b);
      for (int64_t i = br.begin; i < br.end; ++i)
        cut.for_each_subtile(i, [&](const Block& t) { tile(t.origin, t.extent); });
    }
    return r;
  }
  for_each_loop_tile(
      spec, [&](const Dims& origin, const Dims& extent, int32_t) { tile(origin, extent); });
  return r;
}

}  // namespace tilesim
