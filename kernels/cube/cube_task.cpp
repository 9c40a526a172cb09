#include "kernels/cube/cube_task.hpp"

#include <algorithm>

#include "kernels/tiling/kind_cache.hpp"
#include "kernels/tiling/tile_rules.hpp"

namespace tilesim {

namespace {

// GM -> L1 copies of an ND block: one ND2NZ DataCopy, or one per row when the source row stride
// does not fit the instruction's 16-bit srcDValue (catlass copy_gm_to_l1.hpp: a stride of
// STRIDE_LIMIT 65536 elements or more falls back to a DataCopy per row). Returns their bytes.
int64_t nd2nz_loads(const Dims& shape, const Dims& origin, const Dims& extent, DType dt,
                    const Hardware& hw, std::vector<DmaOp>& out) {
  DmaOp op = row_dma(DmaDir::kRead, shape, origin, extent, dt, hw.dma.gm_granule_bytes);
  op.path = DmaPath::kL1Nd2nz;
  constexpr int64_t kStrideLimit = 65536;  // catlass copy_gm_to_l1.hpp STRIDE_LIMIT
  if (shape.back() < kStrideLimit || op.bursts == 1) {
    out.push_back(op);
    return op.bytes();
  }
  for (int64_t r = 0; r < op.bursts; ++r) {
    DmaOp row = op;
    row.bursts = 1;
    row.extra_granules = op.extra_granules / op.bursts + (r < op.extra_granules % op.bursts);
    out.push_back(row);
  }
  return op.bytes();
}

// A GM -> L1 copy in `bursts` contiguous bursts (no layout conversion).
DmaOp l1_copy(int64_t bursts, int64_t burst_bytes) {
  return DmaOp{
      .dir = DmaDir::kRead, .bursts = bursts, .burst_bytes = burst_bytes, .path = DmaPath::kL1};
}

// The GM -> L1 copy of B [k0.., n0..] of extent (kext, next), as B is stored, and its GM block.
void b_loads(const MatmulTensors& x, int64_t k0, int64_t kext, int64_t n0, int64_t next,
             const Hardware& hw, std::vector<DmaOp>& out, std::vector<Access>& acc) {
  int64_t bytes = 0;
  switch (x.layout) {
    case BLayout::kRowMajor:
      bytes = nd2nz_loads(x.b_shape, {k0, n0}, {kext, next}, x.dt, hw, out);
      break;
    case BLayout::kColumnMajor:
      bytes = nd2nz_loads(x.b_shape, {n0, k0}, {next, kext}, x.dt, hw, out);
      break;
    case BLayout::kNz:
      // zN: column blocks of C0 = 32 B of n, each k rows x 32 B contiguous (catlass
      // CopyGmToL1<zN>: blockCount = ceil(cols / C0), blockLen = roundup16(rows) x 32 B).
      out.push_back(l1_copy(ceil_div(next, hw.l1.align_bytes / x.b),
                            round_up(kext, hw.cube.fractal) * hw.l1.align_bytes));
      bytes = out.back().bytes();
      break;
  }
  acc.push_back({block_key(x.b_id, x.key_b({k0, n0})), bytes, false});
}

}  // namespace

void add_cube_tile(TaskKind& kind, const MatmulTensors& x, const CubeTiling& t, const MatmulWork& w,
                   bool load_a, bool load_b, const CubeStore& cs, const Hardware& hw,
                   std::vector<Access>& acc) {
  const int64_t steps = ceil_div(w.kext, t.k1);
  for (int64_t j = 0; j < steps; ++j) {
    const int64_t k0 = w.k0 + (w.k_first + j) % steps * t.k1;
    const int64_t kext = std::min(t.k1, w.k0 + w.kext - k0);
    TileStep st;
    if (load_a) {
      const int64_t bytes = nd2nz_loads(x.a_shape, {w.m0, k0}, {w.mext, kext}, x.dt, hw, st.loads);
      acc.push_back({block_key(x.a_id, x.key_a({w.m0, k0})), bytes, false});
    }
    if (load_b) b_loads(x, k0, kext, w.n0, w.next, hw, st.loads, acc);
    const bool bias = x.bias_b > 0 && k0 == w.k0 && w.k0 == 0;
    if (bias) {  // the bias row of the tile's n range, GM -> L1 (ND2ND: one burst)
      st.loads.push_back(l1_copy(1, w.next * x.bias_b));
      acc.push_back({block_key(x.bias_id, x.key({0, w.n0})), st.loads.back().bytes(), false});
    }
    // catlass's L0 loop: m parts, k parts, then n parts; L0A is loaded once per (m, k) part and
    // L0B once per n part (block_mmad_pingpong.hpp).
    for (int64_t mi = 0; mi < w.mext; mi += t.m0)
      for (int64_t ki = 0; ki < kext; ki += t.k0)
        for (int64_t ni = 0; ni < w.next; ni += t.n0) {
          const int64_t me = std::min(t.m0, w.mext - mi), ke = std::min(t.k0, kext - ki),
                        ne = std::min(t.n0, w.next - ni);
          st.cube.push_back(CubeOp{x.dt, me, ke, ne, ni == 0 ? me * ke * x.b : 0, ke * ne * x.b,
                                   // the bias table holds fp32 (int32 for int8): the n part's
                                   // row, before the part's first mmad
                                   bias && ki == 0 ? ne * 4 : 0});
        }
    append_step(kind, st);
  }
  // C leaves L0C with the last k step: the fp32 / int32 accumulator, converted by the fixpipe.
  TileStep last = kind.steps.back();
  if (--kind.steps.back().repeat == 0) kind.steps.pop_back();
  last.repeat = 1;
  DmaOp c = row_dma(DmaDir::kWrite, x.c_shape, {w.m0, w.n0}, {w.mext, w.next}, t.out,
                    hw.dma.gm_granule_bytes);
  c.path = DmaPath::kFixpipe;
  c.src_bytes = w.mext * w.next * 4;
  c.atomic = cs.atomic;
  last.stores.push_back(c);
  acc.push_back(
      {block_key(cs.id, cs.workspace ? x.key({w.m0, w.n0, w.slice}) : x.key({w.m0, w.n0})),
       c.bytes(), true});
  kind.steps.push_back(last);
}

TaskKind cube_kind(int psg, std::string label, const MatmulTensors& x, const CubeTiling& t,
                   int64_t kslice) {
  TaskKind k;
  k.core = CoreType::kAic;
  k.psg = psg;
  k.label = std::move(label);
  k.buffer_count = t.depth;
  k.l0_depth = t.depth;
  const bool ra = t.resident == L1Resident::kA, rb = t.resident == L1Resident::kB;
  k.buffers = {{ra ? "A_panel" : "A", t.m1 * (ra ? kslice : t.k1) * x.b,
                ra ? BufferRole::kTemp : BufferRole::kInput, MemSpace::kL1},
               {rb ? "B_panel" : "B", t.n1 * (rb ? kslice : t.k1) * x.b,
                rb ? BufferRole::kTemp : BufferRole::kInput, MemSpace::kL1},
               {"A0", t.m0 * t.k0 * x.b, BufferRole::kInput, MemSpace::kL0a},
               {"B0", t.k0 * t.n0 * x.b, BufferRole::kInput, MemSpace::kL0b},
               {"C0", t.m1 * t.n1 * 4, BufferRole::kTemp, MemSpace::kL0c}};
  if (x.bias_b > 0)
    k.buffers.push_back({"bias", t.n1 * x.bias_b, BufferRole::kInput, MemSpace::kL1});
  return k;
}

int64_t cube_tile_elements(const Dims& tile) {
  if (tile.size() != 3) return product(tile);
  return std::max(tile[0] * tile[1], tile[1] * tile[2]);
}

}  // namespace tilesim
