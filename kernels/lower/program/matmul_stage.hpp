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
  const ProgOp& x;
  const MatmulOptions& o;
  size_t r;   // rank of the iteration space [batch..., m, k, n]
  int64_t k;  // K
  CubeTiling t;
  DType out;                 // C's dtype in GM
  bool vector_merge;         // a split K summed by AIV tasks from a workspace
  bool workspace;            // the cube tasks write fp32 C tiles (or partials) to a workspace
  int64_t kslice;            // the largest K slice (what a resident panel holds)
  uint32_t workspace_id;     // the workspace's id for the L2 model
  int64_t tiles_m, tiles_n;  // C tiles per batch

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
  // The PSG of the AIV tasks (registered at first use).
  int aiv_psg();
  // The AIV task that sums C tile w's K slices from the workspace and writes C.
  TaskKind merge_kind(const MatmulWork& w, const MatmulTensors& mt, std::vector<Access>& acc);
  // The AIV task that casts C tile w's fp32 workspace tile and writes C (vector_epilogue).
  TaskKind cast_kind(const MatmulWork& w, const MatmulTensors& mt, std::vector<Access>& acc);

 private:
  int aiv_psg_ = -1;
};

// The matmul's option checks, then the catlass capacity check at a fixed depth.
void check_matmul_stage(const MatmulStage& m);
// PyPTO's cube lowering: a task per C tile (or K slice of it), n outer and m inner within each
// root function, runs sharing a resident operand merged up to l1_reuse.
void lower_pypto_matmul(MatmulStage& m);
// catlass's basic matmul: grid blocks each walking their C tiles back to back, a split K's merge
// a second launch.
void lower_spmd_matmul(MatmulStage& m);

}  // namespace tilesim
