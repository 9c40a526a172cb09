// Matmul C[m, n] = A[m, k] @ B[k, n] on the cube cores. shape = [m, k, n], tile = the cube tile
// [tm, tk, tn]. The m axis is looped with BASIC_BATCH = ceil_div(m, loop_count); each loop body
// computes its rows' C blocks, one AIC task per (tm x tn) block walking the k tiles
// (MTE2 -> L1 -> L0A/L0B -> cube -> L0C), then writes C through the fixpipe, or, with
// params.vector_epilogue, as fp32 to a workspace that an AIV task casts and writes.
#include <fmt/format.h>

#include "kernels/families.hpp"
#include "kernels/lowering_support.hpp"
#include "kernels/reduction_program.hpp"
#include "model/error.hpp"

namespace tilesim {

MatmulPlan plan_matmul(const KernelSpec& spec) {
  if (spec.shape.size() != 3 || spec.tile.size() != 3)
    throw Error(
        fmt::format("matmul: shape and tile must be [m, k, n] and [tm, tk, tn] (got {} and {})",
                    format_dims(spec.shape), format_dims(spec.tile)));
  if (!spec.dims.empty()) throw Error("matmul: dim: matmul reduces k by definition; leave dim out");
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

namespace {

LoweredKernel lower_matmul(const KernelSpec& spec, const Hardware& hw) {
  validate_tile(spec, hw);
  if (spec.partition != PartitionStyle::kPypto)
    throw Error("matmul: only the pypto partition is modelled", ErrorKind::kLimits);
  const MatmulPlan p = plan_matmul(spec);
  const DType dt = spec.dtype;
  const int64_t b = dtype_bytes(dt);
  LoweredKernel out;
  TaskGraph& g = out.graph;
  g.runtime = RuntimeStyle::kMpmd;
  KindCache kinds;
  const int psg_cube = g.add_psg("matmul:cube");
  const int psg_epi = g.add_psg("matmul:epilogue");
  const Dims a_shape = {p.m, p.k}, b_shape = {p.k, p.n}, c_shape = {p.m, p.n};
  const int64_t gran = hw.dma.gm_granule_bytes;
  for (const auto& blk : p.blocks) {
    TaskKind k;
    k.core = CoreType::kAic;
    k.psg = psg_cube;
    k.label = fmt::format("matmul[{}x{}]", blk.mext, blk.next);
    k.buffer_count = spec.buffer_count;
    k.buffers = {{"A", p.tm * p.tk * b, BufferRole::kInput, MemSpace::kL1},
                 {"B", p.tk * p.tn * b, BufferRole::kInput, MemSpace::kL1},
                 {"A0", p.tm * p.tk * b, BufferRole::kTemp, MemSpace::kL0a},
                 {"B0", p.tk * p.tn * b, BufferRole::kTemp, MemSpace::kL0b},
                 {"C0", p.tm * p.tn * 4, BufferRole::kTemp, MemSpace::kL0c}};
    std::vector<Access> acc;
    for (int64_t k0 = 0; k0 < p.k; k0 += p.tk) {
      const int64_t kext = std::min(p.tk, p.k - k0);
      TileStep st;
      st.loads.push_back(
          block_dma(DmaDir::kRead, a_shape, {blk.m0, k0}, {blk.mext, kext}, dt, gran));
      acc.push_back({block_key(0, {blk.m0, k0}), st.loads.back().bytes(), false});
      st.loads.push_back(
          block_dma(DmaDir::kRead, b_shape, {k0, blk.n0}, {kext, blk.next}, dt, gran));
      acc.push_back({block_key(1, {k0, blk.n0}), st.loads.back().bytes(), false});
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
  f.params = {epi};
  f.lower = lower_matmul;
  f.tile_elements = cube_tile_elements;
  return f;
}

}  // namespace tilesim
