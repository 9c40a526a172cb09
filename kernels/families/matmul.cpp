// Matmul C[m, n] = A[m, k] @ B[k, n] on the cube cores, shape = [m, k, n].
//
// One cube task computes one C tile over its K range (the whole K, or a split-K slice): each L1
// k step copies A [m1, k1] and B [k1, n1] GM -> L1 (MTE2, ND2NZ for ND operands), then for each
// L0 tile loads L0A / L0B from L1 (MTE1) and runs the mmad into the L0C accumulator; the last
// step sends C out of L0C through the fixpipe (cast or quantised to the output dtype, or added
// atomically for a split K). An operand kept resident in L1 (params.l1_resident) is loaded by
// the first C tile of a run that shares it and skipped by the rest.
//
//  - pypto (PyPTO's cube lowering, hicann/pypto framework/src/interface/operation/
//    cube_operation_impl.cpp ConstructTileGraph): tile = [mL0, kL0, nL0] (set_cube_tile_shapes'
//    L0 shapes; mL1 = mL0, nL1 = nL0, which that lowering requires), params.k_l1 the L1 k step.
//    Tiles are walked n outer, m inner, within the root functions of `loop_count` chunks of m
//    (BASIC_BATCH = ceil_div(m, loop_count)) or of params.l2_block views (a 2-D loop / view:
//    the matmul guide's L2 blocking). params.l1_reuse merges runs of tiles that share the
//    resident operand into one task (PyPTO's L1CopyInReuseMerge, cube_l1_reuse_setting).
//  - spmd (catlass's basic matmul, families.hpp SpmdMatmulPlan): `grid` blocks on the AIC cores
//    share the work; a block's pieces run back to back on its core (Task::continues_block), each
//    recording its GM blocks so blocks reading the same panel close in time hit L2.
//
// A split K combines its partial C tiles atomically in GM (fp32 / int32 output) or through a
// workspace that AIV tasks sum and cast (split_k_merge "vector": PyPTO's Add of the partial
// sums; catlass's split-K matmul reduces on the AIV, a second launch).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/cube/cube_task.hpp"
#include "kernels/families/families.hpp"
#include "kernels/lower/diagnostics.hpp"
#include "kernels/lower/reduction_program.hpp"
#include "kernels/tiling/kind_cache.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"
#include "model/ub_budget.hpp"

namespace tilesim {

namespace {

// Both partitions: shape [m, k, n], a tile of rank 3 (named `tile_dims`) and no dim.
void check_matmul_spec(const KernelSpec& spec, const char* tile_dims) {
  if (spec.shape.size() != 3 || spec.tile.size() != 3)
    throw Error(fmt::format("matmul: shape and tile must be [m, k, n] and {} (got {} and {})",
                            tile_dims, format_dims(spec.shape), format_dims(spec.tile)));
  if (!spec.dims.empty()) throw Error("matmul: dim: matmul reduces k by definition; leave dim out");
}

// The params one partition does not take, refused by name.
void refuse_params(const KernelSpec& spec, std::initializer_list<const char*> names,
                   const char* why) {
  for (const char* n : names)
    if (has_param(spec, n))
      throw Error(fmt::format("matmul: params.{} {}", n, why), ErrorKind::kParams);
}

// split_k slices hold whole k steps: at most as many slices as steps. Returns the largest
// slice's K extent (what a resident panel holds).
int64_t check_split_k(int64_t k, int64_t step, int64_t slices, const char* step_name) {
  const int64_t steps = ceil_div(k, step);
  if (slices > steps)
    throw Error(fmt::format("matmul: params.split_k {} exceeds the {} k steps of {} ({} = {}): a "
                            "slice holds whole k steps (use a split_k of at most {})",
                            slices, steps, k, step_name, step, steps),
                ErrorKind::kParams);
  return std::min(k, ceil_div(steps, slices) * step);
}

std::pair<int64_t, int64_t> l2_block_param(const KernelSpec& spec) {
  if (!has_param(spec, "l2_block")) return {0, 0};
  const auto b = param_ints(spec, "l2_block");
  return {b[0], b[1]};
}

}  // namespace

std::pair<int64_t, int64_t> split_k_range(int64_t k, int64_t step, int64_t slices, int64_t s) {
  const int64_t steps = ceil_div(k, step);
  const int64_t first = steps * s / slices, last = steps * (s + 1) / slices;
  const int64_t k0 = first * step;
  return {k0, std::min(k, last * step) - k0};
}

MatmulPlan plan_matmul(const KernelSpec& spec) {
  check_matmul_spec(spec, "[tm, tk, tn]");
  MatmulPlan p;
  p.m = spec.shape[0];
  p.k = spec.shape[1];
  p.n = spec.shape[2];
  p.tm = spec.tile[0];
  p.tk = spec.tile[1];
  p.tn = spec.tile[2];
  p.vector_epilogue = param_bool(spec, "vector_epilogue");
  const auto [bm, bn] = l2_block_param(spec);
  const int64_t slices = param_int(spec, "split_k");
  const int64_t kl1 = has_param(spec, "k_l1") ? param_int(spec, "k_l1") : p.tk;
  // A root's tiles, n outer and m inner (ConstructTileGraph), each split into its K slices.
  auto add_tiles = [&](int32_t root, int64_t mb, int64_t me, int64_t nb, int64_t ne) {
    for (int64_t n0 = nb; n0 < ne; n0 += p.tn)
      for (int64_t m0 = mb; m0 < me; m0 += p.tm)
        for (int64_t s = 0; s < slices; ++s) {
          const auto [k0, kext] = split_k_range(p.k, kl1, slices, s);
          p.blocks.push_back(
              {root, m0, std::min(p.tm, me - m0), n0, std::min(p.tn, ne - n0), k0, kext, s});
        }
  };
  if (bm > 0) {
    // pypto.loop over m views, then over n views: a root function per view.
    p.basic_batch = bm * p.tm;
    int32_t root = 0;
    for (int64_t m0 = 0; m0 < p.m; m0 += bm * p.tm)
      for (int64_t n0 = 0; n0 < p.n; n0 += bn * p.tn)
        add_tiles(root++, m0, std::min(p.m, m0 + bm * p.tm), n0, std::min(p.n, n0 + bn * p.tn));
    return p;
  }
  p.basic_batch = ceil_div(p.m, spec.loop_count);
  p.chunks = loop_chunks(spec, 0);
  for (size_t r = 0; r < p.chunks.size(); ++r)
    add_tiles(static_cast<int32_t>(r), p.chunks[r].offset, p.chunks[r].offset + p.chunks[r].size, 0,
              p.n);
  return p;
}

SpmdMatmulPlan plan_spmd_matmul(const KernelSpec& spec) {
  check_matmul_spec(spec, "[m1, k1, n1]");
  SpmdMatmulPlan p{.m = spec.shape[0],
                   .k = spec.shape[1],
                   .n = spec.shape[2],
                   .m1 = spec.tile[0],
                   .n1 = spec.tile[2],
                   .k1 = spec.tile[1]};
  // l1_tile restates the tile in catlass's [m, n, k] order; given, it must agree.
  if (has_param(spec, "l1_tile")) {
    const auto l1 = param_ints(spec, "l1_tile");
    if (l1 != std::vector<int64_t>{p.m1, p.n1, p.k1})
      throw Error(fmt::format("matmul: params.l1_tile [{}, {}, {}] disagrees with tile {}: under "
                              "the spmd partition tile is the L1 tile [m1, k1, n1], so l1_tile "
                              "must be [{}, {}, {}] (or left out)",
                              l1[0], l1[1], l1[2], format_dims(spec.tile), p.m1, p.n1, p.k1),
                  ErrorKind::kParams);
  }
  const auto l0 = param_ints(spec, "l0_tile");
  p.m0 = l0[0];
  p.n0 = l0[1];
  p.k0 = l0[2];
  const auto sw = param_ints(spec, "swizzle");
  p.swizzle_offset = sw[0];
  p.swizzle_direction = sw[1];
  if (p.swizzle_offset < 1 || p.swizzle_direction > 1)
    throw Error(fmt::format("matmul: params.swizzle [{}, {}]: the offset must be >= 1 and the "
                            "direction 0 (bands of tile rows) or 1 (bands of tile columns)",
                            sw[0], sw[1]),
                ErrorKind::kParams);
  p.tiles_m = ceil_div(p.m, p.m1);
  p.tiles_n = ceil_div(p.n, p.n1);
  p.grid = spec.grid;
  std::tie(p.l2_block_m, p.l2_block_n) = l2_block_param(spec);
  p.split_k = param_int(spec, "split_k");
  p.contiguous = param_string(spec, "assignment") == "contiguous";
  return p;
}

namespace {

// The swizzle over a grid of `tm` x `tn` tiles: bands of `offset` tile rows (direction 0) or
// columns (1); a band is walked across, one column (row) of at most `offset` tiles at a time,
// odd bands in reverse, so consecutive indices share A row panels (B column panels).
std::pair<int64_t, int64_t> swizzle_at(int64_t idx, int64_t tm_count, int64_t tn_count,
                                       int64_t offset, int64_t direction) {
  const bool rows = direction == 0;
  const int64_t along = rows ? tm_count : tn_count;
  const int64_t across = rows ? tn_count : tm_count;
  const int64_t band = idx / (offset * across);
  const int64_t in = idx % (offset * across);
  const int64_t width = std::min(offset, along - band * offset);
  const int64_t a = band * offset + in % width;
  int64_t c = in / width;
  if (band % 2 == 1) c = across - 1 - c;
  return rows ? std::pair{a, c} : std::pair{c, a};
}

}  // namespace

MatmulTile spmd_matmul_tile(const SpmdMatmulPlan& p, int64_t idx) {
  int64_t tm = 0, tn = 0;
  if (p.l2_block_m > 0) {
    // L2 blocks of l2_block_m x l2_block_n tiles in row-major order; the last row and column of
    // blocks may be smaller. Block rows before this one hold full-height blocks.
    const int64_t rows_full = p.l2_block_m * p.tiles_n;  // tiles in one row of blocks
    const int64_t brow = idx / rows_full;
    const int64_t in_row = idx % rows_full;
    const int64_t h = std::min(p.l2_block_m, p.tiles_m - brow * p.l2_block_m);
    const int64_t per_block = h * p.l2_block_n;  // tiles in a full-width block of this row
    const int64_t bcol = in_row / per_block;
    const int64_t w = std::min(p.l2_block_n, p.tiles_n - bcol * p.l2_block_n);
    const auto [a, c] = swizzle_at(in_row % per_block, h, w, p.swizzle_offset, p.swizzle_direction);
    tm = brow * p.l2_block_m + a;
    tn = bcol * p.l2_block_n + c;
  } else {
    std::tie(tm, tn) = swizzle_at(idx, p.tiles_m, p.tiles_n, p.swizzle_offset, p.swizzle_direction);
  }
  return {tm * p.m1, std::min(p.m1, p.m - tm * p.m1), tn * p.n1, std::min(p.n1, p.n - tn * p.n1)};
}

std::vector<std::vector<MatmulWork>> spmd_matmul_work(const SpmdMatmulPlan& p) {
  const int64_t items = p.tiles() * p.split_k;
  std::vector<std::vector<MatmulWork>> out(static_cast<size_t>(p.grid));
  auto work = [&](int64_t w) {
    const MatmulTile t = spmd_matmul_tile(p, w / p.split_k);
    const int64_t s = w % p.split_k;
    const auto [k0, kext] = split_k_range(p.k, p.k1, p.split_k, s);
    return MatmulWork{t.m0, t.mext, t.n0, t.next, k0, kext, s};
  };
  for (int64_t b = 0; b < p.grid; ++b) {
    auto& list = out[static_cast<size_t>(b)];
    if (p.contiguous) {
      const BlockRange r = block_range(items, p.grid, b);
      for (int64_t w = r.begin; w < r.end; ++w) list.push_back(work(w));
    } else {
      for (int64_t w = b; w < items; w += p.grid) list.push_back(work(w));
    }
  }
  return out;
}

namespace {

// catlass checks its tiles against L1/L0 at its pipeline depth (STAGES) at compile time; the
// same check at buffer_count, one line per overflowing memory.
void check_block_buffers(const KernelSpec& spec, const TaskKind& kind, const Hardware& hw) {
  for (const MemSpace s : {MemSpace::kL1, MemSpace::kL0a, MemSpace::kL0b, MemSpace::kL0c}) {
    const int64_t used = footprint(kind, s, spec.buffer_count, hw), has = mem_capacity(s, hw);
    if (used <= has) continue;
    std::string list;
    for (const auto& b : kind.buffers)
      if (b.space == s)
        list +=
            fmt::format("{}{} {} B{}", list.empty() ? "" : ", ", b.name, b.bytes,
                        b.role == BufferRole::kTemp ? "" : fmt::format(" x {}", spec.buffer_count));
    throw Error(fmt::format("matmul: {} overflow with tile {}{} at buffer_count {}: needs {} B, "
                            "has {} B (buffers: {})",
                            mem_space_name(s), format_dims(spec.tile),
                            spec.partition == PartitionStyle::kSpmd
                                ? fmt::format(", params.l0_tile [{}]",
                                              fmt::join(param_ints(spec, "l0_tile"), ", "))
                                : "",
                            spec.buffer_count, used, has, list),
                ErrorKind::kCapacity);
  }
}

BLayout b_layout(const KernelSpec& spec) {
  const std::string s = param_string(spec, "b_layout");
  return s == "column_major" ? BLayout::kColumnMajor
         : s == "nz"         ? BLayout::kNz
                             : BLayout::kRowMajor;
}

L1Resident l1_resident(const KernelSpec& spec) {
  const std::string s = param_string(spec, "l1_resident");
  return s == "a" ? L1Resident::kA : s == "b" ? L1Resident::kB : L1Resident::kNone;
}

// C's dtype in GM: params.out_dtype, or the operands' (int32 for int8 operands).
DType out_dtype(const KernelSpec& spec) {
  const std::string s = param_string(spec, "out_dtype");
  if (s == "same") return spec.dtype == DType::kInt8 ? DType::kInt32 : spec.dtype;
  return parse_program_dtype(s);
}

// The split-K combine, checked against the output dtype: atomics add fp32 / int32 partials.
bool split_atomic(const KernelSpec& spec, int64_t slices, DType out) {
  if (slices == 1) return false;
  const bool atomic = param_string(spec, "split_k_merge") == "atomic";
  if (atomic && out != DType::kFp32 && out != DType::kInt32)
    throw Error(fmt::format("matmul: params.split_k {} with split_k_merge \"atomic\" adds partial "
                            "C tiles in GM, which needs an fp32 or int32 output (out_dtype is {}); "
                            "set out_dtype \"fp32\" or split_k_merge \"vector\"",
                            slices, dtype_name(out)),
                ErrorKind::kParams);
  return atomic;
}

// The AIV task that sums a C tile's `slices` fp32 partials from the workspace and writes C in
// `out`: row chunks sized so the partial, the running sum and the output fit UB double-buffered.
TaskKind merge_kind(int psg, const MatmulWork& w, int64_t slices, DType out, int depth,
                    const Hardware& hw, const Dims& c_shape, std::vector<Access>& acc) {
  TaskKind e;
  e.psg = psg;
  e.label = fmt::format("matmul_merge[{}x{}]", w.mext, w.next);
  e.buffer_count = depth;
  const int64_t row32 = round_up(w.next * 4, hw.ub.align_bytes);
  const int64_t row_out = round_up(w.next * dtype_bytes(out), hw.ub.align_bytes);
  int64_t rows = w.mext;
  while (rows > 1 && rows * (row32 * (depth + 1) + row_out * depth) > hw.ub.bytes) rows /= 2;
  const int64_t gran = hw.dma.gm_granule_bytes;
  for (int64_t r0 = 0; r0 < w.mext; r0 += rows) {
    const int64_t re = std::min(rows, w.mext - r0);
    for (int64_t s = 0; s < slices; ++s) {
      TileStep st;
      st.loads.push_back(
          block_dma(DmaDir::kRead, c_shape, {w.m0 + r0, w.n0}, {re, w.next}, DType::kFp32, gran));
      if (s > 0) st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, re * w.next});
      if (s + 1 == slices) {
        if (out != DType::kFp32)
          st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, re * w.next});
        st.stores.push_back(
            block_dma(DmaDir::kWrite, c_shape, {w.m0 + r0, w.n0}, {re, w.next}, out, gran));
      }
      append_step(e, st);
    }
  }
  for (int64_t s = 0; s < slices; ++s)
    acc.push_back({block_key(kWorkspaceTensor, {w.m0, w.n0, s}), w.mext * w.next * 4, false});
  acc.push_back({block_key(kOutputTensor, {w.m0, w.n0}), w.mext * w.next * dtype_bytes(out), true});
  e.buffers = {{"partial", rows * row32, BufferRole::kInput, MemSpace::kUb},
               {"sum", rows * row32, BufferRole::kTemp, MemSpace::kUb},
               {"c", rows * row_out, BufferRole::kOutput, MemSpace::kUb}};
  return e;
}

void check_fractal_alignment(const KernelSpec& spec, const Dims& l1, const Dims& l0,
                             const char* l0_name, const Hardware& hw) {
  const int64_t f = hw.cube.fractal;
  for (const auto& [what, dims] :
       {std::pair<std::string, Dims>{fmt::format("tile {}", format_dims(spec.tile)), l1},
        {fmt::format("{} [{}]", l0_name, fmt::join(l0, ", ")), l0}})
    for (const int64_t d : dims)
      if (d % f != 0)
        throw Error(fmt::format("matmul: {} is misaligned: {} is not a multiple of the cube "
                                "fractal {} (cube.fractal)",
                                what, d, f),
                    ErrorKind::kAlignment);
}

LoweredKernel lower_spmd_matmul(const KernelSpec& spec, const Hardware& hw) {
  validate_tile(spec, hw);
  const SpmdMatmulPlan p = plan_spmd_matmul(spec);
  refuse_params(spec, {"vector_epilogue", "k_l1", "l1_reuse"},
                "applies to the pypto partition (catlass's basic matmul writes C from L0C "
                "through the fixpipe, with the L1 tile as its k step)");
  if (spec.loop_count != 1)
    throw Error(fmt::format("matmul: loop_count {} applies to the pypto partition; the spmd "
                            "partition shares the C tiles over partition.grid blocks",
                            spec.loop_count),
                ErrorKind::kLimits);
  check_fractal_alignment(spec, spec.tile, {p.m0, p.n0, p.k0}, "params.l0_tile", hw);
  check_grid(spec, p.tiles() * p.split_k,
             p.split_k > 1 ? fmt::format("[{}, {}] C tiles x {} K slices", p.m1, p.n1, p.split_k)
                           : fmt::format("[{}, {}] C tiles", p.m1, p.n1),
             "");
  const MatmulTensors x(p.m, p.k, p.n, spec.dtype, b_layout(spec));
  const DType out = out_dtype(spec);
  const bool atomic = split_atomic(spec, p.split_k, out);
  const bool vector_merge = p.split_k > 1 && !atomic;
  const CubeTiling t{p.m1,
                     p.n1,
                     p.k1,
                     p.m0,
                     p.n0,
                     p.k0,
                     vector_merge ? DType::kFp32 : out,
                     l1_resident(spec),
                     spec.buffer_count};
  LoweredKernel out_k;
  TaskGraph& g = out_k.graph;
  g.runtime = RuntimeStyle::kSpmd;
  KindCache kinds;
  const int psg = g.add_psg("matmul:block_tile");
  const int64_t kslice = check_split_k(p.k, p.k1, p.split_k, "k1");
  {
    const TaskKind probe = cube_kind(psg, "matmul_tile", x, t, kslice);
    check_block_buffers(spec, probe, hw);
  }
  const auto work = spmd_matmul_work(p);
  for (const auto& list : work) {
    if (list.empty()) {  // a block past the C tiles: it starts, finds nothing and returns
      TaskKind idle;
      idle.core = CoreType::kAic;
      idle.psg = psg;
      idle.label = "matmul_idle_block";
      g.add_task(kinds.get(g, idle), 0);
      continue;
    }
    const MatmulWork* prev = nullptr;
    for (const MatmulWork& w : list) {
      // A resident panel stays while the block's next piece shares it (same rows of A or
      // columns of B, same K slice).
      const bool same_k = prev && prev->k0 == w.k0 && prev->kext == w.kext;
      const bool keep_a = t.resident == L1Resident::kA && same_k && prev->m0 == w.m0;
      const bool keep_b = t.resident == L1Resident::kB && same_k && prev->n0 == w.n0;
      TaskKind k = cube_kind(psg, fmt::format("matmul_tile[{}x{}]", w.mext, w.next), x, t, kslice);
      std::vector<Access> acc;
      add_cube_tile(k, x, t, w, !keep_a, !keep_b, atomic,
                    vector_merge ? kWorkspaceTensor : kOutputTensor, hw, acc);
      const int32_t task = g.add_task(kinds.get(g, k), 0, -1, 0, prev != nullptr);
      for (const Access& a : acc) g.add_access(task, a);
      prev = &w;
    }
  }
  if (vector_merge) {
    // The second launch: one AIV block per C tile sums its partials and writes C.
    const int psg_merge = g.add_psg("matmul:split_k_merge");
    for (int64_t idx = 0; idx < p.tiles(); ++idx) {
      const MatmulTile c = spmd_matmul_tile(p, idx);
      std::vector<Access> acc;
      const TaskKind e = merge_kind(psg_merge, {c.m0, c.mext, c.n0, c.next, 0, p.k, 0}, p.split_k,
                                    out, spec.buffer_count, hw, x.c_shape, acc);
      const int32_t task = g.add_task(kinds.get(g, e), 0, -1, 1);
      for (const Access& a : acc) g.add_access(task, a);
    }
  }
  g.finalize();
  fill_common_diagnostics(spec, hw, out_k);
  out_k.diag.reduction_segments = ceil_div(p.k, p.k1);
  return out_k;
}

// The pypto matmul's L1 k step: params.k_l1 (a multiple of the tile's k, PyPTO's kL1 % kL0 ==
// 0), or the tile's k. Refuses the spmd partition's params and a second cut of the loop.
int64_t pypto_k_l1(const KernelSpec& spec, const MatmulPlan& p, const Hardware& hw) {
  const int64_t kl1 = has_param(spec, "k_l1") ? param_int(spec, "k_l1") : p.tk;
  if (kl1 % p.tk != 0)
    throw Error(fmt::format("matmul: params.k_l1 {} must be a multiple of the tile's k {} (PyPTO: "
                            "kL1 % kL0 == 0)",
                            kl1, p.tk),
                ErrorKind::kParams);
  check_fractal_alignment(spec, spec.tile, {kl1}, "params.k_l1", hw);
  return kl1;
}

void check_pypto_matmul_params(const KernelSpec& spec) {
  if (spec.partition != PartitionStyle::kPypto)
    throw Error(
        "matmul: the ascendc partition is not modelled (use pypto, or spmd for "
        "catlass's basic matmul)",
        ErrorKind::kLimits);
  refuse_params(spec, {"l1_tile", "l0_tile", "swizzle", "assignment"},
                "applies to the spmd partition (catlass's block tiling); the pypto partition's "
                "tile is the cube tile [tm, tk, tn], params.k_l1 its L1 k step");
  if (has_param(spec, "l2_block") && spec.loop_count != 1)
    throw Error(fmt::format("matmul: loop_count {} and params.l2_block both cut the loop into "
                            "root functions; give one (l2_block is a 2-D loop over m and n views)",
                            spec.loop_count),
                ErrorKind::kParams);
}

// params.vector_epilogue: an AIV task per C tile casts its fp32 workspace tile and writes C,
// after the cube task that made it.
void add_cast_epilogue(TaskGraph& g, KindCache& kinds, int psg, const MatmulPlan& p,
                       const MatmulBlock& blk, const MatmulTensors& x, DType out,
                       const KernelSpec& spec, const Hardware& hw, int32_t cube_task) {
  const int64_t gran = hw.dma.gm_granule_bytes;
  TaskKind e;
  e.psg = psg;
  e.label = fmt::format("matmul_cast[{}x{}]", blk.mext, blk.next);
  e.buffer_count = spec.buffer_count;
  e.buffers = {{"c32", p.tm * p.tn * 4, BufferRole::kInput, MemSpace::kUb},
               {"c", p.tm * p.tn * x.b, BufferRole::kOutput, MemSpace::kUb}};
  TileStep st;
  st.loads.push_back(block_dma(DmaDir::kRead, x.c_shape, {blk.m0, blk.n0}, {blk.mext, blk.next},
                               DType::kFp32, gran));
  st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, blk.mext * blk.next});
  st.stores.push_back(
      block_dma(DmaDir::kWrite, x.c_shape, {blk.m0, blk.n0}, {blk.mext, blk.next}, out, gran));
  e.steps.push_back(st);
  const int32_t epi = g.add_task(kinds.get(g, e), blk.root);
  g.add_access(epi,
               {block_key(kWorkspaceTensor, {blk.m0, blk.n0, 0}), st.loads.back().bytes(), false});
  g.add_access(epi, {block_key(kOutputTensor, {blk.m0, blk.n0}), st.stores.back().bytes(), true});
  g.add_edge(cube_task, epi);
}

LoweredKernel lower_matmul(const KernelSpec& spec, const Hardware& hw) {
  if (spec.partition == PartitionStyle::kSpmd) return lower_spmd_matmul(spec, hw);
  validate_tile(spec, hw);
  check_pypto_matmul_params(spec);
  const MatmulPlan p = plan_matmul(spec);
  const int64_t kl1 = pypto_k_l1(spec, p, hw);
  const int64_t slices = param_int(spec, "split_k");
  const MatmulTensors x(p.m, p.k, p.n, spec.dtype, b_layout(spec));
  const DType out = out_dtype(spec);
  const bool atomic = split_atomic(spec, slices, out);
  const bool vector_merge = slices > 1 && !atomic;
  if (p.vector_epilogue && slices > 1)
    throw Error(
        "matmul: params.vector_epilogue with split_k: the split-K merge already writes C "
        "from the AIV (split_k_merge \"vector\")",
        ErrorKind::kParams);
  const bool workspace = p.vector_epilogue || vector_merge;
  const CubeTiling t{p.tm,
                     p.tn,
                     kl1,
                     p.tm,
                     p.tn,
                     p.tk,
                     workspace ? DType::kFp32 : out,
                     l1_resident(spec),
                     spec.buffer_count};
  const int64_t reuse = param_int(spec, "l1_reuse");
  if (reuse > 1 && t.resident == L1Resident::kNone)
    throw Error(fmt::format("matmul: params.l1_reuse {} merges C tiles that share an operand kept "
                            "in L1: set params.l1_resident \"a\" or \"b\"",
                            reuse),
                ErrorKind::kParams);
  LoweredKernel out_k;
  TaskGraph& g = out_k.graph;
  g.runtime = RuntimeStyle::kMpmd;
  KindCache kinds;
  const int psg_cube = g.add_psg("matmul:cube");
  const int psg_epi = g.add_psg(vector_merge ? "matmul:split_k_merge" : "matmul:epilogue");
  const int64_t kslice = check_split_k(p.k, kl1, slices, "params.k_l1");
  check_block_buffers(spec, cube_kind(psg_cube, "matmul", x, t, kslice), hw);
  // Runs of consecutive tiles sharing the resident panel merge into one task, up to l1_reuse.
  std::vector<int32_t> slice_tasks;  // the cube tasks of the current C tile (split K)
  size_t i = 0;
  while (i < p.blocks.size()) {
    const MatmulBlock& first = p.blocks[i];
    auto shares = [&](const MatmulBlock& b) {
      if (b.root != first.root || b.k0 != first.k0 || b.kext != first.kext) return false;
      return t.resident == L1Resident::kA ? b.m0 == first.m0 : b.n0 == first.n0;
    };
    size_t end = i + 1;
    if (t.resident != L1Resident::kNone)
      while (end < p.blocks.size() && static_cast<int64_t>(end - i) < reuse &&
             shares(p.blocks[end]))
        ++end;
    TaskKind k = cube_kind(psg_cube,
                           fmt::format("matmul[{}x{}]{}", first.mext, first.next,
                                       end - i > 1 ? fmt::format("x{}", end - i) : ""),
                           x, t, kslice);
    std::vector<Access> acc;
    for (size_t j = i; j < end; ++j) {
      const MatmulBlock& b = p.blocks[j];
      const MatmulWork w{b.m0, b.mext, b.n0, b.next, b.k0, b.kext, b.slice};
      add_cube_tile(k, x, t, w, j == i || t.resident != L1Resident::kA,
                    j == i || t.resident != L1Resident::kB, atomic,
                    workspace ? kWorkspaceTensor : kOutputTensor, hw, acc);
    }
    const int32_t cube_task = g.add_task(kinds.get(g, k), first.root);
    for (const Access& a : acc) g.add_access(cube_task, a);
    const bool last_slice = first.k0 + first.kext == p.k;
    const size_t begin = i;
    i = end;
    if (vector_merge) {
      slice_tasks.push_back(cube_task);
      if (!last_slice) continue;
      std::vector<Access> macc;
      const TaskKind e =
          merge_kind(psg_epi, {first.m0, first.mext, first.n0, first.next, 0, p.k, 0}, slices, out,
                     spec.buffer_count, hw, x.c_shape, macc);
      const int32_t merge = g.add_task(kinds.get(g, e), first.root);
      for (const Access& a : macc) g.add_access(merge, a);
      for (const int32_t s : slice_tasks) g.add_edge(s, merge);
      slice_tasks.clear();
      continue;
    }
    if (!p.vector_epilogue) continue;
    for (size_t j = begin; j < end; ++j)
      add_cast_epilogue(g, kinds, psg_epi, p, p.blocks[j], x, out, spec, hw, cube_task);
  }
  g.finalize();
  fill_common_diagnostics(spec, hw, out_k);
  out_k.diag.reduction_segments = ceil_div(p.k, kl1);
  return out_k;
}

// The operand tiles the rulebook limit counts (cube_task.hpp).
int64_t operand_tile_elements(const KernelSpec& spec) {
  return cube_tile_elements(spec.tile);
}

}  // namespace

KernelFamily matmul_kernels() {
  KernelFamily f;
  f.name = "matmul";
  f.spmd = true;
  f.ops = {KernelOp("matmul")};  // the op table's record, as a program's matmul stage
  const ParamDecl epi = flag_param(
      "vector_epilogue", "pypto: write C as fp32 to a workspace that an AIV task casts and writes");
  // The spmd partition's catlass tiling; defaults from catlass's basic matmul example
  // (hicann/catlass examples/00_basic_matmul/basic_matmul.cpp: L1TileShape <128, 256, 256>,
  // L0TileShape <128, 256, 64>, GemmIdentityBlockSwizzle<3, 0>).
  auto ints = [](const char* name, size_t size, int64_t min, nlohmann::json fallback,
                 const char* doc) {
    ParamDecl p;
    p.name = name;
    p.type = ParamType::kIntList;
    p.list_size = size;
    p.min = min;
    p.max = int64_t{1} << 24;  // far past any L1 or L0 extent; products of three cannot wrap
    p.fallback = std::move(fallback);
    p.doc = doc;
    return p;
  };
  auto one_of = [](const char* name, std::vector<std::string> allowed, const char* doc) {
    ParamDecl p;
    p.name = name;
    p.type = ParamType::kString;
    p.fallback = allowed.front();
    p.allowed = std::move(allowed);
    p.doc = doc;
    return p;
  };
  auto count = [](const char* name, int64_t max, nlohmann::json fallback, const char* doc) {
    ParamDecl p;
    p.name = name;
    p.type = ParamType::kInt;
    p.min = 1;
    p.max = max;
    p.fallback = std::move(fallback);
    p.doc = doc;
    return p;
  };
  f.params = {
      epi,
      ints("l1_tile", 3, 1, nullptr,
           "spmd: the block's L1 tile [m1, n1, k1] (default: the config's tile [m1, k1, n1])"),
      ints("l0_tile", 3, 1, {128, 256, 64},
           "spmd: the L0A/L0B/L0C tile [m0, n0, k0] one cube mmad works on"),
      ints("swizzle", 2, 0, {3, 0},
           "spmd: [offset, direction] of the order C tiles are handed to blocks (catlass "
           "GemmIdentityBlockSwizzle: bands of offset tile rows (0) or columns (1))"),
      one_of("assignment", {"strided", "contiguous"},
             "spmd: block b takes the work at b, b + grid, ... (catlass's basic matmul) or a "
             "contiguous run of it (catlass's L1 full-load and split-K swizzles)"),
      ints("l2_block", 2, 1, nullptr,
           "[tiles_m, tiles_n]: C tiles walked L2 block by L2 block (spmd: the swizzle runs "
           "inside each block; pypto: a 2-D loop / view, one root function per view)"),
      count("k_l1", int64_t{1} << 24, nullptr,
            "pypto: the L1 k step (set_cube_tile_shapes' kL1; default the tile's k, kL0)"),
      one_of("b_layout", {"row_major", "column_major", "nz"},
             "how B is stored: [k, n] ND, [n, k] ND (transposed) or the cube's zN fractal "
             "layout (catlass RowMajor / ColumnMajor / zN)"),
      one_of("l1_resident", {"none", "a", "b"},
             "keep A's rows (or B's columns) over their whole K in L1 across the C tiles that "
             "share them (catlass full-load A; PyPTO L1 reuse)"),
      count("l1_reuse", 1 << 20, 1,
            "pypto: C tiles sharing the resident operand merged into one task (PyPTO "
            "cube_l1_reuse_setting)"),
      count("split_k", 1 << 16, 1, "cut K into this many slices, each its own cube task"),
      one_of("split_k_merge", {"atomic", "vector"},
             "combine split-K partials: atomic adds into C, or AIV tasks summing a workspace"),
      one_of("out_dtype", {"same", "fp16", "bf16", "fp32", "int32"},
             "C's dtype in GM, cast or quantised by the fixpipe (same: the operands', int32 "
             "for int8)"),
  };
  f.lower = lower_matmul;
  f.tile_elements = operand_tile_elements;
  f.tensors_of = [](const Dims& s) {
    return s.size() == 3 ? std::vector<Dims>{{s[0], s[1]}, {s[1], s[2]}, {s[0], s[2]}}
                         : std::vector<Dims>{s};
  };
  return f;
}

}  // namespace tilesim
