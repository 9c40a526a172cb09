// A matmul stage, one file: its pre-check, what both partitions share, and each partition's
// lowering. A cube task (kernels/cube/cube_task.hpp) computes one C tile over its K range (the
// whole K, or a split-K slice); C leaves the cube into C, atomically for a split K, or into an
// fp32 workspace that AIV tasks sum (PyPTO's Add of the partial sums; catlass's split-K matmul
// reduces on the AIV, a second launch) or cast (params.vector_epilogue). Under pypto the C tiles
// are walked as PyPTO's cube lowering does (lower_pypto_matmul), under spmd as catlass's basic
// matmul (lower_spmd_matmul).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cube/cube_task.hpp"
#include "kernels/lower/program/lowering_context.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"
#include "model/ub_budget.hpp"

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

// A matmul stage under pypto, as PyPTO's cube lowering builds it (hicann/pypto framework/src/
// interface/operation/cube_operation_impl.cpp ConstructTileGraph): within each root function
// (a loop chunk, or an L2 view of l2_block tiles: the matmul guide's 2-D loop over m and n views)
// the C tiles become tasks n outer, m inner, each split into its K slices. Runs of consecutive
// tiles sharing the operand kept in L1 merge into one task, up to l1_reuse (PyPTO's
// L1CopyInReuseMerge, cube_l1_reuse_setting).

namespace {

// One cube task's share of the work: C tile `index` of the grid over K slice `slice`.
struct CubePiece {
  int32_t root;
  int64_t index;
  Block b;
  MatmulWork w;
};

// The C tiles in task order: root first (a loop chunk's L2 views in turn, m views outer), then
// batch, n, m; each tile's K slices in order.
std::vector<CubePiece> task_order(const MatmulStage& m) {
  const StageGrid& g = m.run.grid;
  const Dims& l2 = m.o.l2_block;
  const int64_t views_n = l2.empty() ? 1 : ceil_div(m.tiles_n, l2[1]);
  const int64_t per_batch = m.tiles_m * m.tiles_n;
  std::vector<std::tuple<int32_t, int64_t, int64_t, int64_t, int64_t>> keys;
  for (int64_t i = 0; i < g.count(); ++i) {
    const int64_t batch = i / per_batch, mi = i / m.tiles_n % m.tiles_m, ni = i % m.tiles_n;
    const int64_t view = l2.empty() ? 0 : mi / l2[0] * views_n + ni / l2[1];
    const auto root = static_cast<int32_t>(m.run.base + g.root(i) * m.run.s.views + view);
    keys.emplace_back(root, batch, ni, mi, i);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<CubePiece> out;
  for (const auto& [root, batch, ni, mi, i] : keys) {
    const Block b = g.block(i);
    for (int64_t s = 0; s < m.o.split_k; ++s) out.push_back({root, i, b, m.work(b, s)});
  }
  return out;
}

// The end of the run of pieces from `i` that one task computes: consecutive tiles of one root
// and K range sharing the resident operand's panel, up to l1_reuse of them.
size_t run_end(const MatmulStage& m, const std::vector<CubePiece>& pieces, size_t i) {
  const CubePiece& first = pieces[i];
  const Dims batch(first.b.origin.begin(), first.b.origin.end() - 3);
  auto shares = [&](const CubePiece& p) {
    if (p.root != first.root || p.w.k0 != first.w.k0 || p.w.kext != first.w.kext ||
        !std::equal(batch.begin(), batch.end(), p.b.origin.begin()))
      return false;
    return m.t.resident == L1Resident::kA ? p.w.m0 == first.w.m0 : p.w.n0 == first.w.n0;
  };
  size_t end = i + 1;
  if (m.t.resident != L1Resident::kNone)
    while (end < pieces.size() && static_cast<int64_t>(end - i) < m.o.l1_reuse &&
           shares(pieces[end]))
      ++end;
  return end;
}

// The AIV task after a cube task: the split-K merge of a C tile's slices or the cast epilogue.
int32_t add_aiv_task(MatmulStage& m, const CubePiece& p, bool merge,
                     const std::vector<int32_t>& deps) {
  std::vector<Access> acc;
  const MatmulTensors mt = m.tensors(p.b);
  const MatmulWork whole{p.w.m0, p.w.mext, p.w.n0, p.w.next, 0, m.k, 0};
  TaskKind e = merge ? m.merge_kind(whole, mt, acc) : m.cast_kind(p.w, mt, acc);
  const int psg = e.psg;
  return m.cx.add_task(m.run.s, std::move(e), psg, p.root, acc, deps);
}

void set_producer(MatmulStage& m, int64_t index, std::vector<int32_t> tasks) {
  for (auto& pr : m.run.stores) pr.tasks[static_cast<size_t>(index)] = tasks;
}

}  // namespace

void lower_pypto_matmul(MatmulStage& m) {
  LoweringContext& cx = m.cx;
  const ProgStage& s = m.run.s;
  const std::vector<CubePiece> pieces = task_order(m);
  std::vector<int32_t> slice_tasks;  // the cube tasks of the current C tile (split K)
  for (size_t i = 0, end = 0; i < pieces.size(); i = end) {
    end = run_end(m, pieces, i);
    const CubePiece& first = pieces[i];
    TaskKind k = m.cube_kind(fmt::format("matmul[{}x{}]{}", first.w.mext, first.w.next,
                                         end - i > 1 ? fmt::format("x{}", end - i) : ""));
    std::vector<Access> acc;
    std::vector<int32_t> deps;
    for (size_t j = i; j < end; ++j) {
      const CubePiece& p = pieces[j];
      add_cube_tile(k, m.tensors(p.b), m.t, p.w, j == i || m.t.resident != L1Resident::kA,
                    j == i || m.t.resident != L1Resident::kB, m.c_store(), cx.hw(), acc);
      const std::vector<int32_t> d = cx.load_deps(s, p.b, m.run.produced);
      deps.insert(deps.end(), d.begin(), d.end());
    }
    const int32_t cube = cx.add_task(s, std::move(k), m.run.psg, first.root, acc, deps);
    if (m.vector_merge) {
      slice_tasks.push_back(cube);
      if (first.w.k0 + first.w.kext == m.k) {  // the C tile's last slice: its merge
        set_producer(m, first.index, {add_aiv_task(m, first, true, slice_tasks)});
        slice_tasks.clear();
      }
      continue;
    }
    for (size_t j = i; j < end; ++j) {
      const CubePiece& p = pieces[j];
      if (m.o.vector_epilogue) {
        set_producer(m, p.index, {add_aiv_task(m, p, false, {cube})});
        continue;
      }
      // An atomic split K: C is done when every slice's task is.
      if (p.w.slice == 0) slice_tasks.clear();
      slice_tasks.push_back(cube);
      set_producer(m, p.index, slice_tasks);
    }
  }
}

// A matmul stage under spmd, catlass's basic matmul (hicann/catlass include/catlass/gemm/kernel/
// basic_matmul.hpp): partition.grid blocks on the AIC cores share the C tiles (each batch's in
// swizzle order, inside L2 blocks when given; strided or in contiguous runs); a block's pieces run
// back to back on its core (Task::continues_block), each recording its GM blocks so blocks reading
// the same panel close in time hit L2. A resident panel stays while the block's next piece shares
// it. A split K merged on the AIV is a second launch, a block per C tile.

namespace {

SpmdMatmulPlan spmd_plan(const MatmulStage& m) {
  const Dims& shape = m.run.s.shape;
  const MatmulOptions& o = m.o;
  return {.m = shape[m.r - 3],
          .k = m.k,
          .n = shape[m.r - 1],
          .m1 = m.t.m1,
          .n1 = m.t.n1,
          .k1 = m.t.k1,
          .swizzle_offset = o.swizzle.empty() ? 0 : o.swizzle[0],
          .swizzle_direction = o.swizzle.empty() ? 0 : o.swizzle[1],
          .tiles_m = m.tiles_m,
          .tiles_n = m.tiles_n,
          .grid = m.cx.spec().grid,
          .l2_block_m = o.l2_block.empty() ? 0 : o.l2_block[0],
          .l2_block_n = o.l2_block.empty() ? 0 : o.l2_block[1],
          .split_k = o.split_k,
          .batches = m.run.grid.count() / (m.tiles_m * m.tiles_n),
          .contiguous = !o.strided};
}

// The grid index of the C tile a piece of work computes.
int64_t index_of(const MatmulStage& m, const MatmulWork& w) {
  return m.index(w.batch, w.m0 / m.t.m1, w.n0 / m.t.n1);
}

// The second launch: one AIV block per C tile sums its partials and writes C.
void merge_launch(MatmulStage& m, const SpmdMatmulPlan& p) {
  TaskGraph& g = m.cx.graph();
  for (int64_t idx = 0; idx < p.tiles(); ++idx) {
    const MatmulTile c = spmd_matmul_tile(p, idx);
    const MatmulWork w{c.m0, c.mext, c.n0, c.next, 0, p.k, 0, c.batch};
    const int64_t i = index_of(m, w);
    std::vector<Access> acc;
    const TaskKind e = m.merge_kind(w, m.tensors(m.run.grid.block(i)), acc);
    const int32_t task = g.add_task(m.cx.kind_id(m.run.s, e), 0, -1, m.cx.launch());
    for (const Access& a : acc) g.add_access(task, a);
    for (auto& pr : m.run.stores) pr.tasks[static_cast<size_t>(i)] = {task};
  }
  m.cx.end_mixed_launch();
}

}  // namespace

void lower_spmd_matmul(MatmulStage& m) {
  LoweringContext& cx = m.cx;
  TaskGraph& g = cx.graph();
  const SpmdMatmulPlan p = spmd_plan(m);
  const int64_t items = p.tiles() * p.split_k;
  const std::vector<std::vector<MatmulWork>> blocks = spmd_matmul_work(p);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const MatmulWork* prev = nullptr;
    for (const MatmulWork& piece : blocks[b]) {
      MatmulWork w = piece;
      if (m.o.shuffle_k) w.k_first = static_cast<int64_t>(b) % ceil_div(w.kext, m.t.k1);
      const bool same_k =
          prev && prev->k0 == w.k0 && prev->kext == w.kext && prev->batch == w.batch;
      const bool keep_a = m.t.resident == L1Resident::kA && same_k && prev->m0 == w.m0;
      const bool keep_b = m.t.resident == L1Resident::kB && same_k && prev->n0 == w.n0;
      const int64_t i = index_of(m, w);
      TaskKind k = m.cube_kind(fmt::format("matmul_tile[{}x{}]", w.mext, w.next));
      // A kernel that preloads (catlass's block_mmad_preload.hpp) loads the next C tile's operands
      // while this one computes: the block's tasks overlap (KernelSpec::overlap_depth).
      k.overlap = cx.spec().overlap_depth();
      std::vector<Access> acc;
      add_cube_tile(k, m.tensors(m.run.grid.block(i)), m.t, w, !keep_a, !keep_b, m.c_store(),
                    cx.hw(), acc);
      const int32_t task = g.add_task(cx.kind_id(m.run.s, k), 0, -1, cx.launch(), prev != nullptr);
      for (const Access& a : acc) g.add_access(task, a);
      for (auto& pr : m.run.stores) pr.tasks[static_cast<size_t>(i)].push_back(task);
      prev = &piece;
    }
  }
  // The blocks past the work start on an AIC, find nothing and return.
  const std::string units =
      p.split_k > 1 ? fmt::format("[{}, {}] C tiles x {} K slices", p.m1, p.n1, p.split_k)
                    : fmt::format("[{}, {}] C tiles", p.m1, p.n1);
  cx.end_launch(m.run.s, m.run.psg, std::min(p.grid, items), units, m.run.s.psg, CoreType::kAic);
  if (m.vector_merge) merge_launch(m, p);
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
