#pragma once
// One C tile's cube task, as a tile program's matmul stage builds it:
// each L1 k step copies A [m1, k1] and B [k1, n1] GM -> L1 (MTE2, ND2NZ), then for each L0 tile
// loads L0A / L0B (MTE1) and runs the mmad into L0C; the last step sends C out through the
// fixpipe. The sources are cited at each function (catlass block mmad, copy_gm_to_l1).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cube/matmul_plan.hpp"
#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// A [m, k], B [k, n] (as stored: [n, k] when column-major) and C [m, n].
struct MatmulTensors {
  MatmulTensors(int64_t m, int64_t k, int64_t n, DType d, BLayout bl)
      : dt(d), b(dtype_bytes(d)), layout(bl), a_shape{m, k}, b_shape{k, n}, c_shape{m, n} {
    if (bl == BLayout::kColumnMajor) b_shape = {n, k};
  }
  DType dt;
  int64_t b;  // bytes per element
  BLayout layout;
  Dims a_shape, b_shape, c_shape;
  // What the L2 model keys their GM blocks by: tensor ids and the batch origin a program's
  // batched matmul prepends (C's), and A's and B's own (0 on a batch dim of 1 that broadcasts,
  // as PyPTO's matmul reads an operand of batch 1 for every batch).
  uint32_t a_id = 0, b_id = 1;
  Dims batch, a_batch, b_batch;
  // A bias row [1, n] (PyPTO's extend_params bias_tensor): its bytes per element (0: none) and id.
  int64_t bias_b = 0;
  uint32_t bias_id = 2;
  Dims key(Dims origin) const { return key(std::move(origin), batch); }
  Dims key_a(Dims origin) const { return key(std::move(origin), a_batch); }
  Dims key_b(Dims origin) const { return key(std::move(origin), b_batch); }
  static Dims key(Dims origin, const Dims& at) {
    origin.insert(origin.begin(), at.begin(), at.end());
    return origin;
  }
};

// The shape of one C tile's cube task: L1 and L0 tiles, dtypes, layout, what is resident.
struct CubeTiling {
  int64_t m1, n1, k1;  // L1 tile (m1 x n1 the C tile; k1 the L1 k step)
  int64_t m0, n0, k0;  // L0 tile of one mmad
  DType out;           // C's dtype in GM
  L1Resident resident = L1Resident::kNone;
  int depth = 2;
};

// Where a cube task's fixpipe writes C: its id for the L2 model, atomically (a split K's partials
// added in C), and whether it is a workspace of fp32 partials (a block per K slice).
struct CubeStore {
  uint32_t id;
  bool atomic = false;
  bool workspace = false;
};
// One task's C tile: its k steps (loads, then the L0 mmads), then the fixpipe store of C. With a
// bias, the first k step also copies the tile's bias row GM -> L1 and L1 -> the bias table before
// the first mmad, which starts the accumulator from it (PyPTO cube_operation_impl.cpp LinkBias).
// With `load_a` / `load_b` false the operand is resident in L1 from an earlier tile. The GM blocks
// touched go to `acc`.
void add_cube_tile(TaskKind& kind, const MatmulTensors& x, const CubeTiling& t, const MatmulWork& w,
                   bool load_a, bool load_b, const CubeStore& c, const Hardware& hw,
                   std::vector<Access>& acc);

// A cube task's kind: A and B staged in L1 (rotating with the depth; a resident operand's whole
// K panel of `kslice` once), their L0A and L0B tiles (ping-ponged) and the accumulator in L0C.
TaskKind cube_kind(int psg, std::string label, const MatmulTensors& x, const CubeTiling& t,
                   int64_t kslice);

// The rulebook's prod(tile) <= 16384 bounds the elements of one tile that one instruction works
// on and one DMA moves into a buffer (a vector tile is a single UB buffer of prod(tile)
// elements). A cube tile [tm, tk, tn] is not one buffer: m * k * n elements never exist
// anywhere. Its GM-fed buffers are the operand tiles A[tm, tk] and B[tk, tn], so those are what
// the limit counts. The C tile [tm, tn] is an fp32 accumulator in L0C whose bound is L0C's
// capacity (the buffer plan rejects an overflow as kCapacity); the vendor's own cube tile
// (128, 64, 256) has a 32768-element C tile, so counting C against 16384 would flag it.
int64_t cube_tile_elements(const Dims& tile);

}  // namespace tilesim
