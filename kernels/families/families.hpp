#pragma once
// What kernel families share beyond the registry: softmax-style (max, sum of exp) statistics.

#include <string>

#include "kernels/lower/reduce_family.hpp"
#include "kernels/lower/reduction_program.hpp"
#include "kernels/spec/registry.hpp"

namespace tilesim {

// Shared by softmax-style families: (max, sum of exp) partials and their rescaling merge.
ReduceFamily max_sum_family(const std::string& psg);
void add_max_sum_partial(const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops);
void add_max_sum_combine(int64_t n, std::vector<VecOp>& ops);

}  // namespace tilesim
