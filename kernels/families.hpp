#pragma once
// One entry point per kernel family (each in its own file): lowering for timing, and for the
// reducing families a ReductionProgram that the functional executor can run as well.

#include <string>

#include "kernels/lowering.hpp"
#include "kernels/reduce_family.hpp"
#include "kernels/reduction_program.hpp"

namespace tilesim {

LoweredKernel lower_copy_in(const KernelSpec& spec, const Hardware& hw);
bool is_elementwise_op(const std::string& op);
LoweredKernel lower_elementwise(const KernelSpec& spec, const Hardware& hw);

bool is_reduce_op(const std::string& op);
ReductionProgram describe_reduce(const KernelSpec& spec);
bool is_softmax_op(const std::string& op);
ReductionProgram describe_softmax(const KernelSpec& spec);
bool is_norm_op(const std::string& op);
ReductionProgram describe_norm(const KernelSpec& spec);
bool is_loss_op(const std::string& op);
ReductionProgram describe_loss(const KernelSpec& spec);
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
LoweredKernel lower_matmul(const KernelSpec& spec, const Hardware& hw);

}  // namespace tilesim
