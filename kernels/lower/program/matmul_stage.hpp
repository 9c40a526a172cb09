#pragma once
// What a matmul stage's two lowerings share (matmul_stage.cpp): the op's operands and cube tiling,
// how C leaves the cube (into C, atomically for a split K, or into an fp32 workspace that AIV
// tasks sum or cast), and those AIV tasks. matmul_pypto.cpp walks the C tiles as PyPTO's cube
// lowering does, matmul_spmd.cpp as catlass's basic matmul.

#include <string>
#include <vector>

#include "kernels/cube/cube_task.hpp"
#include "kernels/lower/program/lowering_context.hpp"

namespace tilesim {

struct MatmulStage {
  MatmulStage(LoweringContext& cx, StageRun& run);
  LoweringContext& cx;
  StageRun& run;
  const ProgOp& x = cx.op(run.s.first);
  const MatmulOptions& o = x.mm;
  size_t r = run.s.shape.size();       // rank of the iteration space [batch..., m, k, n]
  int64_t k = run.s.shape[r - 2];      // K
  DType out = cx.tensor(x.out).dtype;  // C's dtype in GM
  // a split K summed by AIV tasks from a workspace
  bool vector_merge = o.split_k > 1 && !o.split_k_atomic;
  // the cube tasks write fp32 C tiles (or partials) to a workspace
  bool workspace = vector_merge || o.vector_epilogue;
  CubeTiling t;  // C written as fp32 into a workspace, else as `out`
  // the largest K slice (what a resident panel holds)
  int64_t kslice = std::min(k, ceil_div(ceil_div(k, t.k1), o.split_k) * t.k1);
  // the workspace's id for the L2 model
  uint32_t workspace_id =
      static_cast<uint32_t>(3 * cx.program().tensors.size()) + static_cast<uint32_t>(x.out);
  // C tiles per batch
  int64_t tiles_m = static_cast<int64_t>(run.grid.pieces[r - 3].size());
  int64_t tiles_n = static_cast<int64_t>(run.grid.pieces[r - 1].size());

  // The operands with the batch origin of the iteration block b.
  MatmulTensors tensors(const Block& b) const;
  // The C tile of grid block b over K slice `slice`.
  MatmulWork work(const Block& b, int64_t slice) const;
  // The grid index of C tile (batch, mi, ni) (the whole-K grid: k is one piece).
  int64_t index(int64_t batch, int64_t mi, int64_t ni) const {
    return (batch * tiles_m + mi) * tiles_n + ni;
  }
  CubeStore c_store() const {
    return {workspace ? workspace_id : static_cast<uint32_t>(x.out), !workspace && o.split_k > 1,
            workspace};
  }
  TaskKind cube_kind(std::string label) const;
  // The AIV task that sums C tile w's K slices from the workspace and writes C.
  TaskKind merge_kind(const MatmulWork& w, const MatmulTensors& mt, std::vector<Access>& acc);
  // The AIV task that casts C tile w's fp32 workspace tile and writes C (vector_epilogue).
  TaskKind cast_kind(const MatmulWork& w, const MatmulTensors& mt, std::vector<Access>& acc);

 private:
  // An AIV task's kind, `what` in its label, in the AIV tasks' PSG (registered at first use).
  TaskKind aiv_kind(const char* what, const MatmulWork& w);
  int aiv_psg_ = -1;
};

// The matmul's option checks, then the catlass capacity check at a fixed depth.
void check_matmul_stage(const MatmulStage& m);
// The two partitions' lowerings (matmul_pypto.cpp, matmul_spmd.cpp).
void lower_pypto_matmul(MatmulStage& m);
void lower_spmd_matmul(MatmulStage& m);

}  // namespace tilesim
