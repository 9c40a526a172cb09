#pragma once
// Numeric execution of a kernel's own tiling with Eigen: the same plan (tile boundaries, ragged
// tails, loop chunks, merge order) that the task graph is built from, evaluated on real numbers.
// Tests compare it against an untiled reference to prove each graph computes what it claims.

#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "kernels/cube/matmul_plan.hpp"
#include "kernels/spec/kernel_spec.hpp"

namespace tilesim {

struct NdArray {
  Dims shape;
  Eigen::ArrayXd data;
  int64_t offset(const Dims& at) const;
  double& operator[](const Dims& at) { return data[offset(at)]; }
  double operator[](const Dims& at) const { return data[offset(at)]; }
};

NdArray random_array(const Dims& shape, unsigned seed);
NdArray zero_array(const Dims& shape);

// Calls f(position) for every position of the block, row-major.
template <typename F>
void for_each_position(const Block& b, F&& f) {
  Dims at = b.origin;
  const int64_t n = product(b.extent);
  for (int64_t i = 0; i < n; ++i) {
    f(at);
    for (size_t d = at.size(); d-- > 0;) {
      if (++at[d] < b.origin[d] + b.extent[d]) break;
      at[d] = b.origin[d];
    }
  }
}
NdArray reshaped(NdArray a, const Dims& shape);

// Kernels of independent tiles (copy_in, elementwise) over the partition's own tiles (pypto's
// loop chunks, or the spmd blocks' runs of tiles):
// z = value(x, y) tile by tile (y in its broadcast shape, params.broadcast), and how many tiles
// computed each element (1 everywhere when the tiles cover the tensor exactly once).
struct TilesResult {
  NdArray out;
  NdArray covered;
};
TilesResult execute_independent_tiles(const KernelSpec& spec, const std::vector<NdArray>& inputs);

// A tile program (kernels/program/program.hpp), inputs in the order of its input tensors: random
// values, a gather's index as rows of its table, a where's condition as 0 or 1.
struct Program;
std::vector<NdArray> program_inputs(const Program& p, unsigned seed);
// Op by op over whole tensors: every tensor of the program, by id.
std::vector<NdArray> execute_program_untiled(const Program& p, const std::vector<NdArray>& inputs);
// Stage by stage, tile by tile, as lowered: every tensor as GM holds it after the run (a tensor
// kept in UB stays zero) and how many tiles wrote each element.
struct ProgramTiledResult {
  std::vector<NdArray> tensors;
  std::vector<NdArray> writes;
};
ProgramTiledResult execute_program_tiled(const Program& p, const std::vector<NdArray>& inputs);

}  // namespace tilesim
