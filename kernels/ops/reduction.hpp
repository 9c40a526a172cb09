#pragma once
// What a reduction's record in the op table (op_table.hpp) holds: the vector instructions of one
// tile, of its finalize and of a merge of two partials, as passes (data: how many instructions
// each pass is on a tile is kernels/tiling/vector_work.hpp's reduce_tile_work), its value (the
// functional proof's identity, fold, merge and finalize), and how its partials merge.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/task_graph.hpp"

namespace tilesim {

// What one pass of a reduction's recipe runs over.
enum class ReducePass {
  kReduce,        // the tile along its reduced dims: reduce_rows across rows, then reduce_last
                  // within a row when the last dim is reduced (Ascend C ReduceSum / ReduceMax /
                  // ReduceMin, whose in-row form is WholeReduce* then BlockReduce*)
  kReduceByRows,  // the same with no in-row instruction: with the last dim reduced, every reduced
                  // element a row of one, combined pairwise (a product: Ascend C has no ReduceProd)
  kTile,          // one elementwise instruction over the tile's elements
  kOut,           // one elementwise instruction over the output elements (the partial)
};
// The dtype a pass runs in: the reduction's input's or its output's.
enum class PassDType { kIn, kOut };

struct VecPass {
  ReducePass over = ReducePass::kReduce;
  VecClass cls = VecClass::kSimple;  // kTile / kOut (a reduce pass's classes follow the tile)
  PassDType dtype = PassDType::kIn;
  std::string what;  // the Ascend C instruction, for docs/ops.md
};

// A reduction's running value: its statistic and, for argmax / argmin, the extreme value the
// index (the statistic, -1 before any element) points at.
struct ReduceAcc {
  double stat = 0;
  double extreme = 0;
};

struct ReduceValue {
  ReduceAcc identity;  // the value of no elements
  // One element as a partial: element x at `index` along the (one) reduced dim.
  std::function<ReduceAcc(double x, int64_t index)> element;
  // Two partials as one; b holds the later elements (an index reduction keeps a's on a tie).
  std::function<ReduceAcc(const ReduceAcc& a, const ReduceAcc& b)> merge;
  // The output of a statistic over `count` elements (a mean divides; the rest keep the stat).
  // Linear or the identity, so partials may be finalized apart and then merged.
  std::function<double(double stat, double count)> finalize = [](double stat, double) {
    return stat;
  };

  ReduceAcc fold(const ReduceAcc& acc, double x, int64_t index) const {
    return merge(acc, element(x, index));
  }
};

struct ReduceRecord {
  std::vector<VecPass> tile_passes{};      // one tile to its partial
  std::vector<VecPass> finalize_passes{};  // the partial to the output (over the output elements)
  std::vector<VecPass> merge_passes{};     // two partials to one (over the output elements)
  int input_scratch = 0;                   // UB temporaries the size of the input tile
  bool merges_atomically = false;          // partials merge by an atomic DMA add, max or min
  bool gives_index = false;  // the output is the int32 index of an extreme along one dim
  bool online = false;       // online softmax's statistic (a running max and sum), which merge
                             // "online" carries into the ops after it
  // The first tile pass (ReduceMax) and the first merge pass (Max) are the statistic's running max:
  // where an amax of the same input over the same dims runs earlier in the same pass (a split
  // stage's statistics, or a tile covering the row), that amax's output is the max, and these two
  // passes are not run again (program.hpp reused_max).
  bool running_max = false;
  // A second operand, an int32 index per output element along the (one) reduced dim, picks the
  // one element the statistic keeps (a gather of one value per row; partials of a split row add).
  bool picks = false;
  std::string partial{};  // what a partial holds: "sum", "product", "index", ...
  ReduceValue value{};
};

}  // namespace tilesim
