#pragma once
// What kernel families share beyond the registry: the reducing families' program for a spec,
// softmax-style (max, sum of exp) statistics, and the matmul plan the functional executor runs.

#include <string>

#include "kernels/lowering.hpp"
#include "kernels/reduce_family.hpp"
#include "kernels/reduction_program.hpp"
#include "kernels/registry.hpp"

namespace tilesim {

// The reducing families' program for `spec` (throws for other ops).
ReductionProgram describe_reduction_program(const KernelSpec& spec);

// Shared by softmax-style families: (max, sum of exp) partials and their rescaling merge.
ReduceFamily max_sum_family(const std::string& psg);
void add_max_sum_partial(const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops);
void add_max_sum_combine(int64_t n, std::vector<VecOp>& ops);

struct MatmulBlock {
  int32_t root;
  int64_t m0, mext, n0, next;
};
struct MatmulPlan {
  int64_t m = 0, k = 0, n = 0, tm = 0, tk = 0, tn = 0, basic_batch = 0;
  bool vector_epilogue = false;
  std::vector<Chunk> chunks;
  std::vector<MatmulBlock> blocks;
};
MatmulPlan plan_matmul(const KernelSpec& spec);

}  // namespace tilesim
