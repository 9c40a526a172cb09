#pragma once
// What a reducing kernel family is: the work each of its tasks does (vector ops, for timing) and
// the math it computes (for the functional proof), per tile and per merge. The builder in
// kernels/lower/reduction_graph.hpp turns a ReductionPlan plus a family into tasks.

#include <Eigen/Core>
#include <functional>
#include <string>
#include <vector>

#include "kernels/tiling/reduction_plan.hpp"
#include "kernels/tiling/vector_work.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

using Stats = std::vector<double>;

struct ReduceFamily {
  std::string psg;                 // program-subgraph name stem
  int inputs = 1;                  // tensors read per tile
  int live_inputs = 0;             // input tiles live in UB at once (0: all of them); a family that
                                   // consumes one input before loading the next needs fewer
  int side_inputs = 0;             // extra tensors only the math sees (e.g. one-hot targets); their
                                   // traffic is described by extra_loads
  int stats = 1;                   // fp32 statistics kept per output element between tiles
  bool second_pass = false;        // re-read the inputs to write an output of the input's shape
  bool fuse_single = false;        // with a single segment, one pass does everything
  DType out_dtype = DType::kFp32;  // of the reduced output (when there is no second pass)
  bool fp32_inputs = false;        // reads fp32 values of an earlier phase, whatever the op dtype
  bool atomic_merge = false;       // statistics merge by elementwise sum/max/min (atomic DMA)
  bool linear_finalize = false;    // finalize scales a sum: partials may be finalized apart and
                                   // added (an spmd loss folds split rows in one launch)

  // Work, for timing.
  std::function<void(const TileReduceGeometry&, DType, std::vector<VecOp>&)> partial_work;
  std::function<void(int64_t out_elems, std::vector<VecOp>&)> combine_work;
  std::function<void(int64_t out_elems, std::vector<VecOp>&)> finalize_work;
  std::function<void(const TileReduceGeometry&, DType, std::vector<VecOp>&)> second_work;
  // The output's work in a fused task (fuse_single), where the partial's intermediates are still
  // in UB; unset: second_work.
  std::function<void(const TileReduceGeometry&, DType, std::vector<VecOp>&)> fused_second_work;
  std::function<void(const TileReduceGeometry&, std::vector<DmaOp>&)> extra_loads;  // optional

  // Math, for the functional proof: one output element at a time.
  // values[i] = input i's elements (inputs, then side inputs) of one segment that reduce into
  // this output element.
  std::function<Stats(const std::vector<Eigen::ArrayXd>& values)> partial;
  std::function<Stats(const Stats& a, const Stats& b)> combine;
  std::function<Stats(const Stats& s, double count)> finalize;  // [0] is the reduced output
  std::function<double(const std::vector<double>& x, const Stats& fin)> second;
};

}  // namespace tilesim
