// A matmul stage: its pre-check and what both partitions share (matmul_stage.hpp). A cube task
// (kernels/cube/cube_task.hpp) computes one C tile over its K range (the whole K, or a split-K
// slice). A split K's partials in a workspace are summed and cast by AIV tasks (PyPTO's Add of the
// partial sums; catlass's split-K matmul reduces on the AIV, a second launch);
// params.vector_epilogue's fp32 C tile is cast by an AIV task after its cube task.
#include "kernels/lower/program/matmul_stage.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"
#include "model/ub_budget.hpp"

namespace tilesim {

namespace {

// The operands of matmul x (A [m, k], B as stored, C [m, n]) in the batch at `batch`.
MatmulTensors operands(const LoweringContext& cx, const ProgOp& x, Dims batch) {
  const Dims& a = cx.tensor(x.in[0]).shape;
  MatmulTensors mt(a[a.size() - 2], a.back(), cx.tensor(x.out).shape.back(),
                   cx.tensor(x.in[0]).dtype,
                   x.transpose_b ? BLayout::kColumnMajor
                   : x.mm.b_nz   ? BLayout::kNz
                                 : BLayout::kRowMajor);
  mt.a_id = static_cast<uint32_t>(x.in[0]);
  mt.b_id = static_cast<uint32_t>(x.in[1]);
  if (x.in.size() > 2) {
    mt.bias_id = static_cast<uint32_t>(x.in[2]);
    mt.bias_b = dtype_bytes(cx.tensor(x.in[2]).dtype);
  }
  // an operand's batch dim of 1 broadcasts: each batch reads its one matrix there
  const auto own = [&](int t) {
    const Dims& shape = cx.tensor(t).shape;
    Dims at = batch;
    for (size_t d = 0; d < at.size(); ++d)
      if (shape[d] == 1) at[d] = 0;
    return at;
  };
  mt.a_batch = own(x.in[0]);
  mt.b_batch = own(x.in[1]);
  mt.batch = std::move(batch);
  return mt;
}

// Under the L1 tile [tm, tk, tn] and the L0 tile `l0` [m0, k0, n0] (empty: the L1 tile). With
// the matmul's [m, k, n] (`mkn`), each extent is at most that dim rounded up to the fractal: a
// tile larger than its matmul holds (and PyPTO allocates, its L1 / L0 views taking the valid
// size, padded in the NZ layout) only what the matmul has.
CubeTiling tiling(const Dims& tile, const Dims& l0, DType out, L1Resident resident, int depth,
                  const Dims& mkn = {}, int64_t fractal = 1) {
  const Dims l = l0.empty() ? tile : l0;
  const auto at = [&](const Dims& d, size_t i) {
    return mkn.empty() ? d[i] : std::min(d[i], round_up(mkn[i], fractal));
  };
  return {at(tile, 0), at(tile, 2), at(tile, 1), at(l, 0), at(l, 2),
          at(l, 1),    out,         resident,    depth};
}

// How a message names one of the matmul's options: the family's param, or the program op's field.
std::string option(const LoweringContext& cx, const ProgOp& x, const char* name) {
  return cx.program().built_in ? fmt::format("matmul: params.{}", name)
                               : fmt::format("{}: {}", cx.where(x), name);
}

// catlass checks its tiles against L1/L0 at its pipeline depth (STAGES) at compile time; the
// same check at buffer_count, one line per overflowing memory.
void check_block_buffers(const MatmulStage& m, const TaskKind& kind) {
  const KernelSpec& spec = m.cx.spec();
  const Hardware& hw = m.cx.hw();
  for (const MemSpace s : {MemSpace::kL1, MemSpace::kL0a, MemSpace::kL0b, MemSpace::kL0c}) {
    const int64_t used = footprint(kind, s, spec.buffer_count, hw), has = mem_capacity(s, hw);
    if (used <= has) continue;
    std::string list;
    for (const auto& b : kind.buffers)
      if (b.space == s)
        list +=
            fmt::format("{}{} {} B{}", list.empty() ? "" : ", ", b.name, b.bytes,
                        b.role == BufferRole::kTemp ? "" : fmt::format(" x {}", spec.buffer_count));
    throw Error(
        fmt::format(
            "matmul: {} overflow with tile {}{} at buffer_count {}: needs {} B, "
            "has {} B (buffers: {})",
            mem_space_name(s), format_dims(spec.tile),
            m.cx.spmd() ? fmt::format(", params.l0_tile [{}, {}, {}]", m.t.m0, m.t.n0, m.t.k0) : "",
            spec.buffer_count, used, has, list),
        ErrorKind::kCapacity);
  }
}

}  // namespace

MatmulStage::MatmulStage(LoweringContext& c, StageRun& rn)
    : cx(c),
      run(rn),
      t(tiling(Dims(rn.s.tile.end() - 3, rn.s.tile.end()), rn.s.l0, workspace ? DType::kFp32 : out,
               o.l1_resident, c.spec().buffer_count, Dims(rn.s.shape.end() - 3, rn.s.shape.end()),
               c.hw().cube.fractal)) {}

MatmulTensors MatmulStage::tensors(const Block& b) const {
  return operands(cx, x, Dims(b.origin.begin(), b.origin.end() - 3));
}

MatmulWork MatmulStage::work(const Block& b, int64_t slice) const {
  const auto [k0, kext] = split_k_range(k, t.k1, o.split_k, slice);
  return {b.origin[r - 3], b.extent[r - 3], b.origin[r - 1], b.extent[r - 1], k0, kext, slice};
}

TaskKind MatmulStage::cube_kind(std::string label) const {
  return tilesim::cube_kind(run.psg, std::move(label), operands(cx, x, {}), t, kslice);
}

TaskKind MatmulStage::aiv_kind(const char* what, const MatmulWork& w) {
  if (aiv_psg_ < 0)
    aiv_psg_ = cx.graph().add_psg(
        !o.aiv_psg.empty() ? o.aiv_psg
                           : run.s.psg + (vector_merge ? ":split_k_merge" : ":epilogue"));
  TaskKind e;
  e.psg = aiv_psg_;
  e.label = fmt::format("matmul_{}[{}x{}]", what, w.mext, w.next);
  e.buffer_count = cx.spec().buffer_count;
  return e;
}

TaskKind MatmulStage::merge_kind(const MatmulWork& w, const MatmulTensors& mt,
                                 std::vector<Access>& acc) {
  // Row chunks sized so the partial, the running sum and the output fit UB double-buffered.
  const Hardware& hw = cx.hw();
  const int depth = cx.spec().buffer_count;
  TaskKind e = aiv_kind("merge", w);
  const int64_t row32 = round_up(w.next * 4, hw.ub.align_bytes);
  const int64_t row_out = round_up(w.next * dtype_bytes(out), hw.ub.align_bytes);
  int64_t rows = w.mext;
  while (rows > 1 && rows * (row32 * (depth + 1) + row_out * depth) > hw.ub.bytes) rows /= 2;
  const int64_t gran = hw.dma.gm_granule_bytes;
  for (int64_t r0 = 0; r0 < w.mext; r0 += rows) {
    const int64_t re = std::min(rows, w.mext - r0);
    for (int64_t s = 0; s < o.split_k; ++s) {
      TileStep st;
      st.loads.push_back(block_dma(DmaDir::kRead, mt.c_shape, {w.m0 + r0, w.n0}, {re, w.next},
                                   DType::kFp32, gran));
      if (s > 0) st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, re * w.next});
      if (s + 1 == o.split_k) {
        if (out != DType::kFp32)
          st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, re * w.next});
        st.stores.push_back(
            block_dma(DmaDir::kWrite, mt.c_shape, {w.m0 + r0, w.n0}, {re, w.next}, out, gran));
      }
      append_step(e, st);
    }
  }
  for (int64_t s = 0; s < o.split_k; ++s)
    acc.push_back({block_key(workspace_id, mt.key({w.m0, w.n0, s})), w.mext * w.next * 4, false});
  acc.push_back({block_key(static_cast<uint32_t>(x.out), mt.key({w.m0, w.n0})),
                 w.mext * w.next * dtype_bytes(out), true});
  e.buffers = {{"partial", rows * row32, BufferRole::kInput, MemSpace::kUb},
               {"sum", rows * row32, BufferRole::kTemp, MemSpace::kUb},
               {"c", rows * row_out, BufferRole::kOutput, MemSpace::kUb}};
  return e;
}

TaskKind MatmulStage::cast_kind(const MatmulWork& w, const MatmulTensors& mt,
                                std::vector<Access>& acc) {
  const int64_t gran = cx.hw().dma.gm_granule_bytes;
  TaskKind e = aiv_kind("cast", w);
  e.buffers = {{"c32", t.m1 * t.n1 * 4, BufferRole::kInput, MemSpace::kUb},
               {"c", t.m1 * t.n1 * mt.b, BufferRole::kOutput, MemSpace::kUb}};
  TileStep st;
  st.loads.push_back(
      block_dma(DmaDir::kRead, mt.c_shape, {w.m0, w.n0}, {w.mext, w.next}, DType::kFp32, gran));
  st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, w.mext * w.next});
  st.stores.push_back(
      block_dma(DmaDir::kWrite, mt.c_shape, {w.m0, w.n0}, {w.mext, w.next}, out, gran));
  e.steps.push_back(st);
  acc.push_back({block_key(workspace_id, mt.key({w.m0, w.n0, 0})), st.loads.back().bytes(), false});
  acc.push_back({block_key(static_cast<uint32_t>(x.out), mt.key({w.m0, w.n0})),
                 st.stores.back().bytes(), true});
  return e;
}

void check_matmul_stage(const MatmulStage& m) {
  const LoweringContext& cx = m.cx;
  const MatmulOptions& o = m.o;
  if (cx.spmd() && !o.swizzle.empty() && (o.swizzle[0] < 1 || o.swizzle[1] > 1))
    throw Error(fmt::format("{} [{}, {}]: the offset must be >= 1 and the direction 0 (bands of "
                            "tile rows) or 1 (bands of tile columns)",
                            option(cx, m.x, "swizzle"), o.swizzle[0], o.swizzle[1]),
                ErrorKind::kParams);
  if (o.shuffle_k && !cx.spmd())
    throw Error(fmt::format("{}: the K loop's start is shuffled per spmd block (catlass); under "
                            "{} the cube tasks are not blocks of a launch",
                            option(cx, m.x, "shuffle_k"), partition_name(cx.spec().partition)),
                ErrorKind::kParams);
  if (o.split_k > 1 && o.split_k_atomic && m.out != DType::kFp32 && m.out != DType::kInt32)
    throw Error(fmt::format("{} {} with split_k_merge \"atomic\" adds partial C tiles in GM, "
                            "which needs an fp32 or int32 output (out_dtype is {}); set out_dtype "
                            "\"fp32\" or split_k_merge \"vector\"",
                            option(cx, m.x, "split_k"), o.split_k, dtype_name(m.out)),
                ErrorKind::kParams);
  if (o.vector_epilogue && o.split_k > 1 && !cx.spmd())
    throw Error(fmt::format("{} with split_k: the split-K merge already writes C from the AIV "
                            "(split_k_merge \"vector\")",
                            option(cx, m.x, "vector_epilogue")),
                ErrorKind::kParams);
  if (o.l1_reuse > 1 && o.l1_resident == L1Resident::kNone && !cx.spmd())
    throw Error(fmt::format("{} {} merges C tiles that share an operand kept in L1: set {} \"a\" "
                            "or \"b\"",
                            option(cx, m.x, "l1_reuse"), o.l1_reuse,
                            cx.program().built_in ? "params.l1_resident" : "l1_resident"),
                ErrorKind::kParams);
  // split_k slices hold whole k steps: at most as many slices as steps.
  const int64_t steps = ceil_div(m.k, m.t.k1);
  if (o.split_k > steps)
    throw Error(fmt::format("{} {} exceeds the {} k steps of {} ({} = {}): a slice holds whole k "
                            "steps (use a split_k of at most {})",
                            option(cx, m.x, "split_k"), o.split_k, steps, m.k,
                            !cx.program().built_in ? "the cube tile's k"
                            : cx.spmd()            ? "k1"
                                                   : "params.k_l1",
                            m.t.k1, steps),
                ErrorKind::kParams);
  if (o.fixed_depth) check_block_buffers(m, m.cube_kind("matmul"));
}

TaskKind LoweringContext::cube_task(const ProgOp& x, const Dims& tile, const Dims& l0,
                                    const Block& b, DType out, std::string label,
                                    std::vector<Access>& acc, bool load_a,
                                    bool drain_by_l0_n) const {
  const size_t r = b.origin.size();
  const MatmulTensors mt = operands(*this, x, Dims(b.origin.begin(), b.origin.end() - 3));
  CubeTiling t = tiling(tile, l0, out, L1Resident::kNone, spec_.buffer_count);
  const MatmulWork w{b.origin[r - 3], b.extent[r - 3], b.origin[r - 1],
                     b.extent[r - 1], b.origin[r - 2], b.extent[r - 2]};
  // Drained by L0 columns, each L0 column part of C is its own accumulator in L0C, sent out by
  // the fixpipe as soon as its mmads end while the next part computes (pto-isa's flash
  // compute_qk: a TSTORE per CUBE_S1 sub-tile, two accumulators ping-ponged in L0C by
  // assign_running_acc_tile). A is loaded once when the whole k range is one L1 step (it stays in
  // L1 across the parts).
  const bool drain = drain_by_l0_n && t.n0 < w.next;
  if (drain) t.n1 = t.n0;
  const int64_t part_n = drain ? t.n0 : w.next;
  const bool one_step = w.kext <= t.k1;
  TaskKind k = tilesim::cube_kind(-1, std::move(label), mt, t, tile[1]);
  for (int64_t n = 0; n < w.next; n += part_n) {
    MatmulWork part = w;
    part.n0 = w.n0 + n;
    part.next = std::min(part_n, w.next - n);
    add_cube_tile(k, mt, t, part, load_a && (n == 0 || !one_step), true,
                  {static_cast<uint32_t>(x.out)}, hw_, acc);
  }
  return k;
}

void lower_matmul_stage(LoweringContext& cx, StageRun& run) {
  MatmulStage m(cx, run);
  check_matmul_stage(m);
  for (auto& pr : run.stores) pr.tasks.resize(static_cast<size_t>(run.grid.count()));
  if (cx.spmd())
    lower_spmd_matmul(m);
  else
    lower_pypto_matmul(m);
  // The matmul family's reduction_segments is its L1 k steps (a C tile's walk of K); a program's
  // counts the split chains of its reductions only, as it always has.
  if (cx.program().built_in) cx.note_segments(ceil_div(m.k, m.t.k1));
}

}  // namespace tilesim
