#pragma once
// A tile program file (configs/programs/*.json), PyPTO's vocabulary in JSON:
//
//   {
//     "program": "gelu", "description": "...",
//     "ub_plan": "pooled",                    how fused stages take UB: pooled (PyPTO's
//                                             BufferPool), buffers (a buffer per loaded and
//                                             stored tensor) or auto (pooled under pypto)
//     "inputs":  [{"name": "x", "shape": [16, 16384], "dtype": "fp16"}],
//                                             "l2_bypass": true: reads do not allocate in L2
//     "outputs": ["y"],                       names, or {"name", "shape", "dtype"} to check
//     "body": [
//       {"set_vec_tile_shapes": [1, 4096], "name": "row"},        in force until the next one
//       {"set_cube_tile_shapes": [128, 64, 256], "name": "mm"},   [tm, tk, tn]
//       {"op": "gelu", "inputs": ["x"], "out": "y"},
//       {"op": "mul", "inputs": ["x"], "scalar": 0.125, "out": "s"},     a scalar operand
//       {"op": "add", "inputs": ["a", "b", "c"], "out": "s"},  add mul maximum minimum: n-ary
//       {"op": "add", ..., "bank_conflict_free": true},  its two sources in different UB banks
//       {"op": "exp", ..., "psg": "softmax_exp"},  names the stage it opens (default stage<i>:ops)
//       {"op": "sum", "inputs": ["x"], "dim": -1, "keepdim": true, "out": "r"},
//       {"op": "sum", ..., "merge": "in_task"},   a split reduced dim: in_task chain tree atomic
//                                                 or auto (the reduce families' pypto merge:
//                                                 atomic where partials add, max or min; tree)
//       {"op": "sum", ..., "spmd_rows": "split"},  spmd: whole rows per block, or (row, sub-tile)
//                                                 units shared (auto: whole while rows >= grid);
//                                                 tiles / slots: each sub-tile merges in GM,
//                                                 atomically / in the block's slot (folded by
//                                                 a second launch); parts: split, each block's
//                                                 part written to its slot once
//       {"op": "logsumexp", ..., "apply_in_task": true},  the next stage (on its tiles, using
//                                                 it) runs in the task that finishes the row;
//                                                 column ops on it between: once per row there
//       {"op": "argmax", "inputs": ["x"], "dim": -1, "out": "i"},        int32, one dim
//       {"op": "cumsum", "inputs": ["x"], "dim": -1, "out": "c"},        a split dim carries
//       {"op": "cast", "inputs": ["x"], "dtype": "fp32", "out": "xf"},
//       {"op": "matmul", "inputs": ["a", "b"], "out_dtype": "fp32", "out": "c"},
//       {"op": "matmul", ..., "transpose_b": true},                      B stored [..., n, k]
//       {"op": "gather", "inputs": ["table", "index"], "out": "rows"},   rows of table, dim 0
//       {"op": "load", "inputs": ["x"], "out": "t", "dest": "l1"},  a copy kept on chip (ub or
//                                                 l1): nothing reads t, it is no output
//       {"loop": "b", "axis": 0, "loop_count": 4, "body": [...]}         pypto.loop +
//       view/assemble;
//                                                                        nests 3 deep, one axis
//                                                                        each
//     ]
//   }
//
// Every tensor is written once; an op's inputs are program inputs or earlier outputs. The loader
// infers each output's shape (numpy broadcasting) and dtype and rejects, with one line naming the
// file, the op and the tensor: unknown ops and tensors, use before definition, cycles, a tensor
// written twice, shapes that do not broadcast, mixed dtypes, loops nested too deep or twice on
// one axis. Tile checks (rank, a split reduction's merge, a split rotate_half,
// alignment, UB) come with the stage plan and the lowering (kernels/program/program.hpp).
//
// In a run or sweep config, "program" names such a file (relative to the config) or holds one
// inline; "program_tile" names the tile that "tile" (--tile, a sweep's tiles) sets and
// "program_loop" the loop that "loop_count" (--loop, a sweep's loop counts) sets (defaults: the
// first tile and the first loop of the program). A sweep's candidates.program_tiles sets the
// program's other named tiles too (tools/formats/sweep_config.hpp).

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "kernels/program/program.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "model/json_reader.hpp"

namespace tilesim {

Program program_from_json(const JsonReader& doc);
Program load_program(const std::filesystem::path& file);
// The index of p's tile `name`; `at` fails naming the program's tiles when it has none so named.
int named_tile(const Program& p, const std::string& name, const JsonReader& at);

// The kernel spec of a config holding "program" (plus `caller_keys`): the program, the knobs
// it names, "tile", "loop_count", "partition" and "buffer_count". "tile" may be left out (the
// program's own tile is used).
KernelSpec program_spec_from_json(const JsonReader& doc, const std::set<std::string>& caller_keys);

}  // namespace tilesim
