// Matmul C[m, n] = A[m, k] @ B[k, n] on the cube cores. shape = [m, k, n], tile = the cube tile
// [tm, tk, tn]. The m axis is looped with BASIC_BATCH = ceil_div(m, loop_count); each loop body
// computes its rows' C blocks, one AIC task per (tm x tn) block walking the k tiles
// (MTE2 -> L1 -> L0A/L0B -> cube -> L0C), then writes C through the fixpipe, or, with
// params.vector_epilogue, as fp32 to a workspace that an AIV task casts and writes.
// Under the spmd partition it is catlass's basic matmul (families.hpp SpmdMatmulPlan): `grid`
// blocks on the AIC cores share the C tiles in swizzle order, one task per C tile, the tiles of
// a block run back to back on its core (Task::continues_block) so that each tile's GM accesses
// reach the L2 model when the tile starts.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/families.hpp"
#include "kernels/lowering_support.hpp"
#include "kernels/reduction_program.hpp"
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

}  // namespace

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
  p.basic_batch = ceil_div(p.m, spec.loop_count);
  p.chunks = loop_chunks(spec, 0);
  for (size_t r = 0; r < p.chunks.size(); ++r)
    for (int64_t m0 = p.chunks[r].offset; m0 < p.chunks[r].offset + p.chunks[r].size; m0 += p.tm)
      for (int64_t n0 = 0; n0 < p.n; n0 += p.tn)
        p.blocks.push_back({static_cast<int32_t>(r), m0,
                            std::min(p.tm, p.chunks[r].offset + p.chunks[r].size - m0), n0,
                            std::min(p.tn, p.n - n0)});
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
  return p;
}

MatmulTile spmd_matmul_tile(const SpmdMatmulPlan& p, int64_t idx) {
  // Bands of `offset` tile rows (direction 0) or columns (1); a band is walked across, one
  // column (row) of at most `offset` tiles at a time, odd bands in reverse, so consecutive
  // indices share A row panels (B column panels).
  const bool rows = p.swizzle_direction == 0;
  const int64_t along = rows ? p.tiles_m : p.tiles_n;
  const int64_t across = rows ? p.tiles_n : p.tiles_m;
  const int64_t band = idx / (p.swizzle_offset * across);
  const int64_t in = idx % (p.swizzle_offset * across);
  const int64_t width = std::min(p.swizzle_offset, along - band * p.swizzle_offset);
  const int64_t a = band * p.swizzle_offset + in % width;
  int64_t c = in / width;
  if (band % 2 == 1) c = across - 1 - c;
  const int64_t tm = rows ? a : c, tn = rows ? c : a;
  return {tm * p.m1, std::min(p.m1, p.m - tm * p.m1), tn * p.n1, std::min(p.n1, p.n - tn * p.n1)};
}

namespace {

// A [m, k], B [k, n] and C [m, n] of one dtype.
struct MatmulTensors {
  MatmulTensors(int64_t m, int64_t k, int64_t n, DType d)
      : dt(d), b(dtype_bytes(d)), a_shape{m, k}, b_shape{k, n}, c_shape{m, n} {}
  DType dt;
  int64_t b;  // bytes per element
  Dims a_shape, b_shape, c_shape;
};

// One k step of the C block at (m0, n0): the GM -> L1 copies of A[m0.., k0..] and B[k0.., n0..]
// (MTE2) and the GM blocks they read.
TileStep operand_loads(const MatmulTensors& x, int64_t m0, int64_t mext, int64_t n0, int64_t next,
                       int64_t k0, int64_t kext, const Hardware& hw, std::vector<Access>& acc) {
  const int64_t gran = hw.dma.gm_granule_bytes;
  TileStep st;
  st.loads.push_back(block_dma(DmaDir::kRead, x.a_shape, {m0, k0}, {mext, kext}, x.dt, gran));
  acc.push_back({block_key(0, {m0, k0}), st.loads.back().bytes(), false});
  st.loads.push_back(block_dma(DmaDir::kRead, x.b_shape, {k0, n0}, {kext, next}, x.dt, gran));
  acc.push_back({block_key(1, {k0, n0}), st.loads.back().bytes(), false});
  return st;
}

// A cube task's kind: the operand tiles A and B staged in L1 (rotating with the depth), their L0A
// and L0B tiles (one copy, or rotating when ping-ponged) and the fp32 C accumulator in L0C.
struct CubeBuffers {
  int64_t a1, b1, a0, b0, c0;  // bytes
  BufferRole l0_role;
};
TaskKind cube_kind(int psg, std::string label, int buffer_count, const CubeBuffers& c) {
  TaskKind k;
  k.core = CoreType::kAic;
  k.psg = psg;
  k.label = std::move(label);
  k.buffer_count = buffer_count;
  k.buffers = {{"A", c.a1, BufferRole::kInput, MemSpace::kL1},
               {"B", c.b1, BufferRole::kInput, MemSpace::kL1},
               {"A0", c.a0, c.l0_role, MemSpace::kL0a},
               {"B0", c.b0, c.l0_role, MemSpace::kL0b},
               {"C0", c.c0, BufferRole::kTemp, MemSpace::kL0c}};
  return k;
}

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
    throw Error(fmt::format("matmul: {} overflow with tile {}, params.l0_tile [{}] at "
                            "buffer_count {}: needs {} B, has {} B (buffers: {})",
                            mem_space_name(s), format_dims(spec.tile),
                            fmt::join(param_ints(spec, "l0_tile"), ", "), spec.buffer_count, used,
                            has, list),
                ErrorKind::kCapacity);
  }
}

LoweredKernel lower_spmd_matmul(const KernelSpec& spec, const Hardware& hw) {
  validate_tile(spec, hw);
  const SpmdMatmulPlan p = plan_spmd_matmul(spec);
  if (param_bool(spec, "vector_epilogue"))
    throw Error(
        "matmul: params.vector_epilogue applies to the pypto partition (catlass's basic "
        "matmul writes C from L0C through the fixpipe)",
        ErrorKind::kParams);
  if (spec.loop_count != 1)
    throw Error(fmt::format("matmul: loop_count {} applies to the pypto partition; the spmd "
                            "partition shares the C tiles over partition.grid blocks",
                            spec.loop_count),
                ErrorKind::kLimits);
  const int64_t f = hw.cube.fractal;
  for (const auto& [what, dims] :
       {std::pair<std::string, Dims>{fmt::format("tile {}", format_dims(spec.tile)), spec.tile},
        {fmt::format("params.l0_tile [{}, {}, {}]", p.m0, p.n0, p.k0), {p.m0, p.n0, p.k0}}})
    for (const int64_t d : dims)
      if (d % f != 0)
        throw Error(fmt::format("matmul: {} is misaligned: {} is not a multiple of the cube "
                                "fractal {} (cube.fractal)",
                                what, d, f),
                    ErrorKind::kAlignment);
  check_grid(spec, p.tiles(), fmt::format("[{}, {}] C tiles", p.m1, p.n1), "");
  const MatmulTensors x(p.m, p.k, p.n, spec.dtype);
  const DType dt = x.dt;
  const int64_t b = x.b;
  LoweredKernel out;
  TaskGraph& g = out.graph;
  g.runtime = RuntimeStyle::kSpmd;
  KindCache kinds;
  const int psg = g.add_psg("matmul:block_tile");
  for (int64_t blk = 0; blk < p.grid; ++blk)
    for (int64_t idx = blk; idx < p.tiles(); idx += p.grid) {
      const MatmulTile t = spmd_matmul_tile(p, idx);
      // L0A/L0B rotate with the pipeline depth too (catlass's ping-pong STAGES).
      TaskKind k =
          cube_kind(psg, fmt::format("matmul_tile[{}x{}]", t.mext, t.next), spec.buffer_count,
                    {p.m1 * p.k1 * b, p.k1 * p.n1 * b, p.m0 * p.k0 * b, p.k0 * p.n0 * b,
                     p.m1 * p.n1 * 4, BufferRole::kInput});
      if (blk == 0 && idx == 0) check_block_buffers(spec, k, hw);
      std::vector<Access> acc;
      for (int64_t k0 = 0; k0 < p.k; k0 += p.k1) {
        const int64_t kext = std::min(p.k1, p.k - k0);
        TileStep st = operand_loads(x, t.m0, t.mext, t.n0, t.next, k0, kext, hw, acc);
        // catlass's L0 loop: m parts, k parts, n parts; one mmad per L0 tile.
        for (int64_t mi = 0; mi < t.mext; mi += p.m0)
          for (int64_t ki = 0; ki < kext; ki += p.k0)
            for (int64_t ni = 0; ni < t.next; ni += p.n0)
              st.cube.push_back(CubeOp{dt, std::min(p.m0, t.mext - mi), std::min(p.k0, kext - ki),
                                       std::min(p.n0, t.next - ni)});
        append_step(k, st);
      }
      TileStep last = k.steps.back();  // the C tile leaves L0C with the last k step
      if (--k.steps.back().repeat == 0) k.steps.pop_back();
      last.repeat = 1;
      last.stores.push_back(block_dma(DmaDir::kWrite, x.c_shape, {t.m0, t.n0}, {t.mext, t.next}, dt,
                                      hw.dma.gm_granule_bytes));
      acc.push_back({block_key(kOutputTensor, {t.m0, t.n0}), last.stores.back().bytes(), true});
      k.steps.push_back(last);
      const int32_t task = g.add_task(kinds.get(g, k), 0, -1, 0, idx != blk);
      for (const Access& a : acc) g.add_access(task, a);
    }
  g.finalize();
  fill_common_diagnostics(spec, hw, out);
  out.diag.reduction_segments = ceil_div(p.k, p.k1);
  return out;
}

LoweredKernel lower_matmul(const KernelSpec& spec, const Hardware& hw) {
  if (spec.partition == PartitionStyle::kSpmd) return lower_spmd_matmul(spec, hw);
  validate_tile(spec, hw);
  if (spec.partition != PartitionStyle::kPypto)
    throw Error(
        "matmul: the ascendc partition is not modelled (use pypto, or spmd for "
        "catlass's basic matmul)",
        ErrorKind::kLimits);
  const MatmulPlan p = plan_matmul(spec);
  const MatmulTensors x(p.m, p.k, p.n, spec.dtype);
  const DType dt = x.dt;
  const int64_t b = x.b;
  const Dims& c_shape = x.c_shape;
  LoweredKernel out;
  TaskGraph& g = out.graph;
  g.runtime = RuntimeStyle::kMpmd;
  KindCache kinds;
  const int psg_cube = g.add_psg("matmul:cube");
  const int psg_epi = g.add_psg("matmul:epilogue");
  const int64_t gran = hw.dma.gm_granule_bytes;
  for (const auto& blk : p.blocks) {
    TaskKind k =
        cube_kind(psg_cube, fmt::format("matmul[{}x{}]", blk.mext, blk.next), spec.buffer_count,
                  {p.tm * p.tk * b, p.tk * p.tn * b, p.tm * p.tk * b, p.tk * p.tn * b,
                   p.tm * p.tn * 4, BufferRole::kTemp});
    std::vector<Access> acc;
    for (int64_t k0 = 0; k0 < p.k; k0 += p.tk) {
      const int64_t kext = std::min(p.tk, p.k - k0);
      TileStep st = operand_loads(x, blk.m0, blk.mext, blk.n0, blk.next, k0, kext, hw, acc);
      st.cube.push_back(CubeOp{dt, blk.mext, kext, blk.next});
      k.steps.push_back(st);
    }
    const DType c_type = p.vector_epilogue ? DType::kFp32 : dt;
    k.steps.back().stores.push_back(
        block_dma(DmaDir::kWrite, c_shape, {blk.m0, blk.n0}, {blk.mext, blk.next}, c_type, gran));
    const uint32_t c_tensor = p.vector_epilogue ? kWorkspaceTensor : kOutputTensor;
    acc.push_back(
        {block_key(c_tensor, {blk.m0, blk.n0}), k.steps.back().stores.back().bytes(), true});
    const int32_t cube_task = g.add_task(kinds.get(g, k), blk.root);
    for (const Access& a : acc) g.add_access(cube_task, a);
    if (!p.vector_epilogue) continue;
    TaskKind e;
    e.psg = psg_epi;
    e.label = fmt::format("matmul_cast[{}x{}]", blk.mext, blk.next);
    e.buffer_count = spec.buffer_count;
    e.buffers = {{"c32", p.tm * p.tn * 4, BufferRole::kInput, MemSpace::kUb},
                 {"c", p.tm * p.tn * b, BufferRole::kOutput, MemSpace::kUb}};
    TileStep st;
    st.loads.push_back(block_dma(DmaDir::kRead, c_shape, {blk.m0, blk.n0}, {blk.mext, blk.next},
                                 DType::kFp32, gran));
    st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, blk.mext * blk.next});
    st.stores.push_back(
        block_dma(DmaDir::kWrite, c_shape, {blk.m0, blk.n0}, {blk.mext, blk.next}, dt, gran));
    e.steps.push_back(st);
    const int32_t epi = g.add_task(kinds.get(g, e), blk.root);
    g.add_access(epi,
                 {block_key(kWorkspaceTensor, {blk.m0, blk.n0}), st.loads.back().bytes(), false});
    g.add_access(epi, {block_key(kOutputTensor, {blk.m0, blk.n0}), st.stores.back().bytes(), true});
    g.add_edge(cube_task, epi);
  }
  g.finalize();
  fill_common_diagnostics(spec, hw, out);
  out.diag.reduction_segments = ceil_div(p.k, p.tk);
  return out;
}

// The rulebook's prod(tile) <= 16384 bounds the elements of one tile that one instruction works
// on and one DMA moves into a buffer (a vector tile is a single UB buffer of prod(tile)
// elements). A cube tile [tm, tk, tn] is not one buffer: m * k * n elements never exist
// anywhere. Its GM-fed buffers are the operand tiles A[tm, tk] and B[tk, tn], so those are what
// the limit counts. The C tile [tm, tn] is an fp32 accumulator in L0C whose bound is L0C's
// capacity (the buffer plan rejects an overflow as kCapacity); the vendor's own cube tile
// (128, 64, 256) has a 32768-element C tile, so counting C against 16384 would flag it.
int64_t cube_tile_elements(const KernelSpec& spec) {
  if (spec.tile.size() != 3) return product(spec.tile);
  const int64_t tm = spec.tile[0], tk = spec.tile[1], tn = spec.tile[2];
  return std::max(tm * tk, tk * tn);
}

}  // namespace

KernelFamily matmul_kernels() {
  KernelFamily f;
  f.name = "matmul";
  f.ops = {{"matmul", "C[m, n] = A[m, k] @ B[k, n] on the cube cores; shape and tile [m, k, n]"}};
  ParamDecl epi;
  epi.name = "vector_epilogue";
  epi.type = ParamType::kBool;
  epi.fallback = false;
  epi.doc = "write C as fp32 to a workspace that an AIV task casts and writes";
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
  const ParamDecl l1 = ints("l1_tile", 3, 1, nullptr,
                            "spmd: the block's L1 tile [m1, n1, k1] (default: the config's tile "
                            "[m1, k1, n1])");
  const ParamDecl l0 = ints("l0_tile", 3, 1, {128, 256, 64},
                            "spmd: the L0A/L0B/L0C tile [m0, n0, k0] one cube mmad works on");
  const ParamDecl sw = ints("swizzle", 2, 0, {3, 0},
                            "spmd: [offset, direction] of the order C tiles are handed to blocks "
                            "(catlass GemmIdentityBlockSwizzle: bands of offset tile rows (0) or "
                            "columns (1))");
  f.params = {epi, l1, l0, sw};
  f.lower = lower_matmul;
  f.tile_elements = cube_tile_elements;
  f.tensors_of = [](const Dims& s) {
    return s.size() == 3 ? std::vector<Dims>{{s[0], s[1]}, {s[1], s[2]}, {s[0], s[2]}}
                         : std::vector<Dims>{s};
  };
  return f;
}

}  // namespace tilesim
