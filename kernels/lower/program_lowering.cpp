// A tile program to a task graph. Each stage (kernels/program/program.hpp plan_stages) is one task
// per tile of its iteration space: a fused vector stage loads the tensors it reads from GM, runs
// every op's vector instructions on the tile in UB and stores what leaves the stage; transpose and
// gather are vector stages of their own; a matmul stage is one AIC task per C tile walking k.
// Under pypto the tiles of one loop chunk form a root function and a tile depends on the tasks
// that wrote the GM blocks it reads; under spmd each stage is one launch whose tiles are shared
// in contiguous runs over min(grid, tiles) blocks (kernels/tiling/block_regions.hpp's cut).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "kernels/lower/program_lowering.hpp"

#include "kernels/cube/cube_task.hpp"
#include "kernels/lower/diagnostics.hpp"
#include "kernels/lower/reduce_family.hpp"
#include "kernels/program/program.hpp"
#include "kernels/tiling/kind_cache.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "kernels/tiling/vector_work.hpp"
#include "model/dma_cost.hpp"
#include "model/error.hpp"
#include "model/ub_budget.hpp"

namespace tilesim {

namespace {

// Which tasks wrote which block of a tensor: the producing stage's pieces per tensor axis.
struct Producer {
  std::vector<std::vector<Piece>> pieces;
  std::vector<std::vector<int32_t>> tasks;  // row-major over pieces: the tasks that complete it
};

void overlapping(const Producer& pr, const Block& r, std::vector<int32_t>& out) {
  std::vector<std::pair<size_t, size_t>> range;  // per axis: [first, last) piece
  for (size_t a = 0; a < pr.pieces.size(); ++a) {
    const auto& ps = pr.pieces[a];
    const int64_t lo = r.origin[a], hi = r.origin[a] + r.extent[a];
    auto first = std::upper_bound(ps.begin(), ps.end(), lo,
                                  [](int64_t v, const Piece& p) { return v < p.offset + p.size; });
    auto last = std::lower_bound(ps.begin(), ps.end(), hi,
                                 [](const Piece& p, int64_t v) { return p.offset < v; });
    if (first >= last) return;
    range.emplace_back(first - ps.begin(), last - ps.begin());
  }
  std::vector<size_t> at(range.size());
  for (size_t a = 0; a < range.size(); ++a) at[a] = range[a].first;
  while (true) {
    int64_t flat = 0;
    for (size_t a = 0; a < at.size(); ++a)
      flat = flat * static_cast<int64_t>(pr.pieces[a].size()) + static_cast<int64_t>(at[a]);
    const auto& done = pr.tasks[static_cast<size_t>(flat)];
    out.insert(out.end(), done.begin(), done.end());
    size_t a = at.size();
    while (a-- > 0) {
      if (++at[a] < range[a].second) break;
      at[a] = range[a].first;
    }
    if (a == static_cast<size_t>(-1)) break;
  }
}

// The order a stage's tiles become tasks: row-major, except a matmul's C tiles, which PyPTO's
// cube lowering walks n outer, m inner (cube_operation_impl.cpp ConstructTileGraph), as the
// matmul family does.
std::vector<int64_t> task_order(const ProgStage& s, const StageGrid& g) {
  std::vector<int64_t> order(static_cast<size_t>(g.count()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  if (s.kind != OpKind::kMatmul) return order;
  const size_t r = g.pieces.size();
  const auto m = static_cast<int64_t>(g.pieces[r - 3].size()),
             n = static_cast<int64_t>(g.pieces[r - 1].size());
  // Row-major index = ((batch * m + mi) * 1 + 0) * n + ni (k is one piece).
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const auto key = [&](int64_t i) { return std::tuple{i / (m * n), i % n, i / n % m}; };
    return key(a) < key(b);
  });
  return order;
}

// Appends `part`'s steps to `block` (the first part gives the block its kind: buffers, core).
void append_kind(TaskKind& block, TaskKind&& part) {
  if (block.steps.empty()) {
    block = std::move(part);
    return;
  }
  for (const TileStep& st : part.steps) append_step(block, st);
}

// What one op of a fused stage adds to a tile's UB beside its output: scratch tiles the size of
// the output, other scratch bytes, and each column operand Brcb spreads over UB blocks (tensor,
// bytes; alive for the op only).
struct OpVectorWork {
  int scratch = 0;
  int64_t scratch_bytes = 0;
  std::vector<std::pair<int, int64_t>> columns;
};

class ProgramLowering {
 public:
  ProgramLowering(const Program& p, const KernelSpec& spec, const Hardware& hw)
      : p_(p), spec_(spec), hw_(hw), spmd_(spec.partition == PartitionStyle::kSpmd) {}

  LoweredKernel run();

 private:
  const ProgOp& op(int i) const { return p_.ops[static_cast<size_t>(i)]; }
  const ProgTensor& tensor(int t) const { return p_.tensors[static_cast<size_t>(t)]; }
  std::string where(const ProgOp& o) const {
    return (p_.origin.empty() ? "" : p_.origin + ": ") + o.where();
  }
  // A copy of the region r of a [shape] GM tensor (or workspace) of dtype dt, its L2 block keyed
  // by `key` (an spmd block copies with DataCopyPad).
  DmaOp gm_dma(DmaDir dir, const Dims& shape, const Block& r, DType dt, uint64_t key,
               std::vector<Access>& acc) const {
    DmaOp d = block_dma(dir, shape, r.origin, r.extent, dt, hw_.dma.gm_granule_bytes);
    if (spmd_) d = data_copy_pad(d);
    acc.push_back({key, d.bytes(), dir == DmaDir::kWrite});
    return d;
  }
  DmaOp dma(DmaDir dir, int t, const Block& r, std::vector<Access>& acc) const {
    return gm_dma(dir, tensor(t).shape, r, tensor(t).dtype,
                  block_key(static_cast<uint32_t>(t), r.origin), acc);
  }
  int64_t ub_bytes(int t, const Block& r) const {
    return ub_tile_bytes(r.extent, tensor(t).dtype, hw_);
  }
  // The op of the stage that reads (or writes) tensor t first.
  const ProgOp& reader(const ProgStage& s, int t) const {
    const auto it = s.reader_op.find(t);
    if (it == s.reader_op.end())
      throw InternalError("program: a stage loads a tensor none of its ops reads");
    return op(it->second);
  }
  const ProgOp& writer(const ProgStage& s, int t) const {
    const auto it = s.writer_op.find(t);
    if (it == s.writer_op.end())
      throw InternalError("program: a stage stores a tensor none of its ops writes");
    return op(it->second);
  }
  void check_alignment(const ProgStage& s) const;
  // skip_store: a tensor of s.stores whose store the caller places (a split reduction's output).
  // The vector instructions op `x` issues on a tile computing `ce` (n elements; `full` the whole
  // tile, both in the op's own iteration space), and the UB it needs beside its output.
  OpVectorWork op_vector_work(const ProgOp& x, const Dims& ce, int64_t n, const Block& full,
                              std::vector<VecOp>& vec) const;
  TaskKind vector_kind(const ProgStage& s, const Block& b, std::vector<Access>& acc,
                       int skip_store = -1) const;
  // A cube task for matmul `x` on the iteration block b [batch..., m, k, n] (its k range) under
  // the L1 tile [tm, tk, tn] and L0 tile `l0` (empty: the L1 tile), C written as `out`.
  TaskKind cube_task(const ProgOp& x, const Dims& tile, const Dims& l0, const Block& b, DType out,
                     std::string label, std::vector<Access>& acc) const;
  TaskKind matmul_kind(const ProgStage& s, const Block& b, std::vector<Access>& acc) const;
  int kind_id(const ProgStage& s, const TaskKind& k);
  Producer producer_of(const ProgStage& s, const StageGrid& g, int t) const;
  std::vector<int32_t> load_deps(const ProgStage& s, const Block& b,
                                 const std::map<int, Producer>& produced) const;
  // A split reduction's partial of output block `out` in a GM workspace (tree merges and second
  // launches): slot `slot` of the block.
  DmaOp partial_dma(DmaDir dir, const ProgOp& red, const Block& out, int64_t slot,
                    std::vector<Access>& acc) const;
  // Folding one partial of `out_elems` into another: one vector instruction of the reduction's
  // kind (Add, Max, Min, Mul).
  void combine(const ProgOp& red, int64_t out_elems, std::vector<VecOp>& v) const {
    if (red.reduce == ReduceKind::kLogSumExp) {
      // log(exp(a) + exp(b)) = m + ln(exp(a - m) + exp(b - m)), m = max(a, b): Max, two Subs,
      // two Exps, Add, Ln, Add (online softmax's rescale of the running sum).
      const DType dt = tensor(red.out).dtype;
      for (const VecClass c :
           {VecClass::kSimple, VecClass::kSimple, VecClass::kSimple, VecClass::kComplex,
            VecClass::kComplex, VecClass::kSimple, VecClass::kComplex, VecClass::kSimple})
        v.push_back(VecOp{c, dt, 1, 1, out_elems});
      return;
    }
    if (!reduces_to_index(red.reduce)) {
      v.push_back(VecOp{VecClass::kSimple, tensor(red.out).dtype, 1, 1, out_elems});
      return;
    }
    // (value, index) pairs: Compare, then Select of the values and of the indices.
    for (int i = 0; i < 3; ++i)
      v.push_back(VecOp{VecClass::kSimple, tensor(red.in[0]).dtype, 1, 1, out_elems});
  }
  // The tasks of a split stage: per chain, its segments' tasks and the merge the op names.
  void lower_split(const ProgStage& s, const StageGrid& grid, int psg, int32_t base,
                   const std::map<int, Producer>& produced, std::vector<Producer>& stores);
  void lower_split_spmd(const ProgStage& s, const StageGrid& grid, int psg);
  // A flash stage (plan_stages fuse_online): per query block, per key block, S on the AIC, the
  // statistic and P on the AIVs (one task per row piece), P V on the AIC and O's rescale on the
  // AIVs, through GM workspaces of two slots. pypto: tasks the AICPU runtime dispatches; spmd:
  // one mixed launch, partition.grid blocks of an AIC and its two AIVs.
  void lower_flash(const ProgStage& s, int psg, int32_t base,
                   const std::map<int, Producer>& produced, std::vector<Producer>& stores);
  // The GM workspace block of tensor-like `t` (slot `slot`) of one query block `q`: equal keys
  // for the same slot, so a ring of slots stays in L2.
  uint64_t ring_key(uint32_t t, const Block& q, int64_t slot) const {
    Dims key(q.origin.begin(), q.origin.end() - 1);
    key.push_back(slot);
    return block_key(static_cast<uint32_t>(2 * p_.tensors.size()) + t, key);
  }
  void lower_split_scan(const ProgStage& s, const StageGrid& grid, int psg, int32_t base,
                        const std::map<int, Producer>& produced, std::vector<Producer>& stores);
  int32_t add_task(const ProgStage& s, TaskKind k, int psg, int32_t root,
                   const std::vector<Access>& acc, const std::vector<int32_t>& deps);
  // spmd: block `blk` of the current launch, one task of kind `k` with its GM accesses.
  void add_block(const ProgStage& s, TaskKind k, int psg, int64_t blk,
                 const std::vector<Access>& acc);

  const Program& p_;
  const KernelSpec& spec_;
  const Hardware& hw_;
  bool spmd_;
  LoweredKernel out_;
  KindCache kinds_;
  int32_t launch_ = 0;    // spmd: the next launch
  int64_t segments_ = 1;  // the most tiles of a split reduction's row (diagnostics)
};

void ProgramLowering::check_alignment(const ProgStage& s) const {
  if (spmd_) return;  // padded copies (DataCopyPad) take any row
  const Block full{Dims(s.shape.size(), 0), [&] {
                     Dims e = s.tile;
                     for (size_t d = 0; d < e.size(); ++d) e[d] = std::min(e[d], s.shape[d]);
                     return e;
                   }()};
  for (int o = s.first; o <= s.last; ++o) {
    const ProgOp& x = op(o);
    if (x.info->kind == OpKind::kMatmul || x.info->kind == OpKind::kGather) continue;
    std::vector<std::pair<int, Block>> touched;
    for (int t : x.in) touched.emplace_back(t, operand_region(p_, x, t, full));
    touched.emplace_back(x.out, output_region(p_, x, full));
    for (const auto& [t, r] : touched) {
      // Rows of one element (a broadcast column, a reduced last dim) are one UB block each.
      if (r.extent.back() == 1 && tensor(t).shape.back() == 1) continue;
      const int64_t bytes = dtype_bytes(tensor(t).dtype);
      const int64_t tile_last =
          s.tile[s.tile.size() - 1 - (x.info->kind == OpKind::kTranspose && t == x.in[0] ? 1 : 0)];
      if (tile_last * bytes % hw_.ub.align_bytes != 0)
        throw Error(fmt::format("{}: tile {} of '{}' is misaligned: last dim {} x {} B = {} B is "
                                "not a multiple of {} B (use a multiple of {} elements)",
                                where(x), format_dims(s.tile), tensor(t).name, tile_last, bytes,
                                tile_last * bytes, hw_.ub.align_bytes,
                                std::max<int64_t>(1, hw_.ub.align_bytes / bytes)),
                    ErrorKind::kAlignment);
    }
  }
}

OpVectorWork ProgramLowering::op_vector_work(const ProgOp& x, const Dims& ce, int64_t n,
                                             const Block& full, std::vector<VecOp>& vec) const {
  const DType dt = tensor(x.out).dtype;
  const DType in_dt = tensor(x.in[0]).dtype;
  OpVectorWork w;
  w.scratch = x.info->scratch_tiles;
  switch (x.info->kind) {
    case OpKind::kUnary:
      for (VecClass c : x.info->instrs) vec.push_back(VecOp{c, dt, 1, 1, n});
      break;
    case OpKind::kBinary:
    case OpKind::kWhere: {
      // Against the op's own iteration space (a column op's is the stage's column).
      const Dims is = iteration_shape(p_, x);
      bool broadcast = false;
      for (int t : x.in) broadcast = broadcast || tensor(t).shape != is;
      for (int t : x.in) {
        // A column operand: Brcb spreads each row's scalar over one UB block, as the
        // elementwise family does.
        const Dims& sh = tensor(t).shape;
        if (sh.size() == is.size() && sh.back() == 1 && is.back() != 1) {
          const int64_t scalars = product(operand_region(p_, x, t, full).extent);
          vec.push_back(
              VecOp{VecClass::kSimple, dt, 1, 1, scalars * hw_.ub.align_bytes / dtype_bytes(dt)});
          w.columns.emplace_back(t, scalars * hw_.ub.align_bytes);
        }
      }
      // An n-ary add (mul, maximum, minimum) folds its operands left to right: n - 1 ops.
      const size_t folds = x.info->kind == OpKind::kBinary && x.in.size() > 2 ? x.in.size() - 1 : 1;
      for (size_t f = 0; f < folds; ++f)
        add_binary_vec(x.info->instrs.front(), dt, ce, broadcast, hw_, vec);
      break;
    }
    case OpKind::kCast:
      vec.push_back(
          VecOp{VecClass::kSimple, dtype_bytes(dt) > dtype_bytes(in_dt) ? dt : in_dt, 1, 1, n});
      break;
    case OpKind::kScan: {
      // Ascend C CumSum (asc-devkit impl/adv_api/detail/math/cumsum/cumsum_common_impl.h):
      // along the first axis one Add per row after the first; along the last axis the tile
      // is transposed (TransDataTo5HD), summed row by row over the rows rounded up to 16,
      // transposed back and copied out, fp16 through fp32 casts, two temporary tiles.
      const size_t d = static_cast<size_t>(x.dims[0]);
      int64_t before = 1, after = 1;
      for (size_t a = 0; a < d; ++a) before *= ce[a];
      for (size_t a = d + 1; a < ce.size(); ++a) after *= ce[a];
      if (d + 1 == ce.size()) {
        const bool half = dt != DType::kFp32;
        const auto pass = [&](DType t) { vec.push_back(VecOp{VecClass::kSimple, t, 1, 1, n}); };
        pass(dt);  // transpose in
        if (half) pass(DType::kFp32);
        vec.push_back(
            VecOp{VecClass::kScan, DType::kFp32, 1, ce[d] - 1, ceil_div(before, 16) * 16});
        if (half) pass(DType::kFp32);
        pass(dt);  // transpose back
        pass(dt);  // copy out
        w.scratch += 2;
      } else {
        vec.push_back(VecOp{VecClass::kScan, dt, before, ce[d] - 1, after});
      }
      break;
    }
    case OpKind::kReduce: {
      const TileReduceGeometry g = reduce_geometry(ce, x.dims);
      if (x.reduce == ReduceKind::kAny || x.reduce == ReduceKind::kAll) {
        // Compare with 0 and Select 1 / 0, then a max (any) or min (all) reduction.
        vec.push_back(VecOp{VecClass::kSimple, in_dt, 1, 1, n});
        vec.push_back(VecOp{VecClass::kSimple, in_dt, 1, 1, n});
        add_reduce_ops(g, in_dt, vec);
      } else if (x.reduce == ReduceKind::kLogSumExp) {
        // Online softmax's statistic of the tile: its max (ReduceMax), x - max, Exp, the sum
        // (ReduceSum), then ln(sum) + max on the row values.
        add_reduce_ops(g, in_dt, vec);
        vec.push_back(VecOp{VecClass::kSimple, in_dt, 1, 1, n});
        vec.push_back(VecOp{VecClass::kComplex, in_dt, 1, 1, n});
        add_reduce_ops(g, in_dt, vec);
        vec.push_back(VecOp{VecClass::kComplex, dt, 1, 1, g.out_elems});
        vec.push_back(VecOp{VecClass::kSimple, dt, 1, 1, g.out_elems});
        w.scratch_bytes += ub_bytes(x.in[0], operand_region(p_, x, x.in[0], full));  // exp(x - m)
      } else if (reduces_to_index(x.reduce)) {
        // ReduceMax / ReduceMin with calIndex: the value reduction, plus one pass that keeps
        // each repeat's index beside its value (ORDER_VALUE_INDEX), so twice the output.
        add_reduce_ops(g, in_dt, vec);
        vec.push_back(VecOp{VecClass::kSimple, in_dt, 1, 1, n});
      } else if (x.reduce == ReduceKind::kProd && g.last_reduced) {
        // No in-row product instruction: rows of one element combined pairwise.
        vec.push_back(VecOp{VecClass::kReduceRows, in_dt, g.out_elems, g.rows, 1});
      } else {
        add_reduce_ops(g, in_dt, vec);
      }
      if (x.reduce == ReduceKind::kMean)
        add_elementwise(VecClass::kSimple, dt, g.out_elems, 1, vec);
      break;
    }
    case OpKind::kRotateHalf:
      vec.push_back(VecOp{VecClass::kSimple, dt, 1, 1, n});
      break;
    case OpKind::kTranspose:
      vec.push_back(VecOp{VecClass::kSimple, dt, 1, 1, n});  // Ascend C Transpose
      break;
    case OpKind::kGather:
    case OpKind::kMatmul:
      break;
  }
  return w;
}

TaskKind ProgramLowering::vector_kind(const ProgStage& s, const Block& b, std::vector<Access>& acc,
                                      int skip_store) const {
  TaskKind k;
  k.buffer_count = spec_.buffer_count;
  k.label = fmt::format("{}{}", s.psg, format_dims(b.extent));
  TileStep st;
  // The tile's buffers are sized for the full tile (the ragged tail reuses them).
  Block full{Dims(s.shape.size(), 0), s.tile};
  for (size_t d = 0; d < full.extent.size(); ++d)
    full.extent[d] = std::min(full.extent[d], s.shape[d]);
  // Vector ops run on the static tile where it exceeds the tensor (compute_extent), except over
  // a dim of size 1 (a kept reduced dim, a column of statistics), which is computed as 1.
  Dims ce = compute_extent(s.shape, s.tile, b.extent);
  for (size_t d = 0; d < ce.size(); ++d)
    if (s.shape[d] == 1) ce[d] = 1;
  // PyPTO (pooled): every tensor of an iteration shares one UB pool by lifetime, loaded inputs
  // from the start, stored outputs to the end (its BufferPool, passes/block_graph_pass/
  // schedule_ooo/common/buffer_pool.h); the spmd compilers' placement is not modelled, so
  // there only temporaries share by lifetime.
  const bool pooled = !spmd_;
  // The tensors in UB now (a key -1 - t: t's column spread by Brcb, for one op), their bytes'
  // sum kept as they come and go, and the op at whose end each one dies, so a stage of n ops
  // costs n log n however many of its tensors stay live.
  std::map<int, int64_t> live;
  int64_t live_bytes = 0;
  std::map<int, std::vector<int>> dies_after;  // op -> tensors that die at its end
  const auto hold = [&](int t, int64_t bytes) {
    const auto [it, fresh] = live.emplace(t, bytes);
    live_bytes += fresh ? bytes : bytes - it->second;
    it->second = bytes;
  };
  const auto drop = [&](int t) {
    if (const auto it = live.find(t); it != live.end()) {
      live_bytes -= it->second;
      live.erase(it);
    }
  };
  std::map<int, size_t> holds_input;  // tensors whose data sits in a loaded input's buffer (its
                                      // index in k.buffers)
  for (int t : s.loads) {
    const ProgOp& r = reader(s, t);
    const Block region = operand_region(p_, r, t, b);
    if (r.info->kind == OpKind::kGather && t == r.in[0]) {
      // One copy per gathered row (its address comes from the index): rows x 1 burst.
      Block row = region;
      row.extent[0] = 1;
      for (int64_t i = 0; i < b.extent[0]; ++i) st.loads.push_back(dma(DmaDir::kRead, t, row, acc));
      Block rows = operand_region(p_, r, t, full);
      rows.extent[0] = full.extent[0];
      k.buffers.push_back({tensor(t).name, ub_bytes(t, rows), BufferRole::kInput, MemSpace::kUb});
      if (pooled) hold(t, ub_bytes(t, rows));
      continue;
    }
    st.loads.push_back(dma(DmaDir::kRead, t, region, acc));
    const int64_t bytes = ub_bytes(t, operand_region(p_, r, t, full));
    k.buffers.push_back({tensor(t).name, bytes, BufferRole::kInput, MemSpace::kUb});
    holds_input[t] = k.buffers.size() - 1;
    if (pooled) hold(t, bytes);
  }
  // Temporaries: tensors made and used inside the stage, plus each op's scratch, at their peak.
  std::map<int, int> last_use;
  for (int o = s.first; o <= s.last; ++o)
    for (int t : op(o).in) last_use[t] = o;
  int64_t peak = 0;
  std::set<int> stored_in_place;  // stored outputs written over a loaded input's buffer
  const std::set<int> stores(s.stores.begin(), s.stores.end());
  const auto is_stored = [&](int t) { return stores.count(t) > 0; };
  // A tensor in UB dies at the end of the first op from `from` on that is its last use (or at
  // `from` when no later op uses it), unless it is pooled and stored: then it stays to the end.
  const auto schedule_death = [&](int t, int from) {
    if (t >= 0 && pooled && is_stored(t)) return;
    const auto lu = t >= 0 ? last_use.find(t) : last_use.end();
    dies_after[std::max(from, lu == last_use.end() ? from : lu->second)].push_back(t);
  };
  for (int t : s.loads)
    if (live.count(t)) schedule_death(t, s.first);
  // The source of op `x` (index o) whose buffer its result of `bytes` may take: one that dies at
  // it with the same size; -1 if none.
  const auto in_place_donor = [&](const ProgOp& x, int o, int64_t bytes) {
    for (int t : x.in) {
      const auto held = live.find(t);
      if (last_use[t] == o && !is_stored(t) && held != live.end() && held->second == bytes)
        return t;
    }
    return -1;
  };
  for (int o = s.first; o <= s.last; ++o) {
    const ProgOp& x = op(o);
    // A column op (a statistic's epilogue) computes on the tile's column only.
    const Block ofull = op_block(p_, x, full);
    Dims oce = ce;
    for (size_t d = 0; d < oce.size() && d < ofull.extent.size(); ++d)
      if (ofull.extent[d] == 1) oce[d] = 1;
    const OpVectorWork w = op_vector_work(x, oce, product(oce), ofull, st.vec);
    const int scratch = w.scratch;                  // temporaries the size of the op's output
    const int64_t scratch_bytes = w.scratch_bytes;  // and others
    for (const auto& [t, bytes] : w.columns) {
      hold(-1 - t, bytes);
      schedule_death(-1 - t, o);
    }
    const bool stored = is_stored(x.out);
    const int64_t out_bytes = ub_bytes(x.out, output_region(p_, x, full));
    const bool gather = x.info->kind == OpKind::kGather;
    if (pooled) {
      // PyPTO's compiler writes an op's result over a source that dies at it when the sizes
      // agree (hicann/pypto passes/block_graph_pass/memory_reuse/merge_src_dst_buffer.h,
      // in-place reuse); a loaded input's buffer passes to the result.
      const int donor = gather ? -1 : in_place_donor(x, o, out_bytes);
      if (donor >= 0) {
        drop(donor);
        if (const auto held = holds_input.find(donor); held != holds_input.end()) {
          const size_t buffer = held->second;
          holds_input.erase(held);
          holds_input[x.out] = buffer;
          // Named for every stored tensor it holds: "x+y" is x's buffer, where y is written.
          if (stored) {
            stored_in_place.insert(x.out);
            k.buffers[buffer].name += "+" + tensor(x.out).name;
          }
        }
      }
      if (!gather) hold(x.out, out_bytes);
    } else if (!stored && !gather) {
      hold(x.out, out_bytes);
    }
    // The result outlives the op that makes it: it dies at its last use, or one op later.
    if (live.count(x.out)) schedule_death(x.out, o + 1);
    peak = std::max(peak, scratch * out_bytes + scratch_bytes + live_bytes);
    if (const auto ending = dies_after.find(o); ending != dies_after.end()) {
      for (int t : ending->second) drop(t);
      dies_after.erase(ending);
    }
  }
  for (int t : s.stores) {
    const ProgOp& w = writer(s, t);
    if (t != skip_store) st.stores.push_back(dma(DmaDir::kWrite, t, output_region(p_, w, b), acc));
    if (w.info->kind != OpKind::kGather && !stored_in_place.count(t))
      k.buffers.push_back({tensor(t).name, ub_bytes(t, output_region(p_, w, full)),
                           BufferRole::kOutput, MemSpace::kUb});
  }
  // Pooled, the peak holds the iteration's own inputs and outputs too: what it needs beyond
  // their buffers (which multi-buffering copies for the iterations in flight) is temporary.
  if (pooled) {
    int64_t fixed = 0;
    for (const Buffer& buf : k.buffers) fixed += buf.bytes;
    peak = std::max<int64_t>(0, peak - fixed);
  }
  if (peak > 0) k.buffers.push_back({"temporaries", peak, BufferRole::kTemp, MemSpace::kUb});
  k.steps.push_back(st);
  return k;
}

TaskKind ProgramLowering::cube_task(const ProgOp& x, const Dims& tile, const Dims& l0,
                                    const Block& b, DType out, std::string label,
                                    std::vector<Access>& acc) const {
  // The matmul family's pypto cube task (kernels/cube/cube_task.hpp) on this C tile over the
  // block's k range: L1 k step = the tile's k, L0 tile = the given one (the cube tile itself unless
  // PyPTO's two-level form set one), the fixpipe writing C as `out`.
  const size_t r = b.origin.size();
  const Dims& a = tensor(x.in[0]).shape;
  const int64_t tm = tile[0], tk = tile[1], tn = tile[2];
  MatmulTensors mt(a[a.size() - 2], a.back(), tensor(x.out).shape.back(), tensor(x.in[0]).dtype,
                   x.transpose_b ? BLayout::kColumnMajor : BLayout::kRowMajor);
  mt.a_id = static_cast<uint32_t>(x.in[0]);
  mt.b_id = static_cast<uint32_t>(x.in[1]);
  mt.batch = Dims(b.origin.begin(), b.origin.end() - 3);
  const Dims l = l0.empty() ? Dims{tm, tk, tn} : l0;
  const CubeTiling t{tm, tn, tk, l[0], l[2], l[1], out, L1Resident::kNone, spec_.buffer_count};
  TaskKind k = cube_kind(-1, std::move(label), mt, t, tk);
  const MatmulWork w{b.origin[r - 3], b.extent[r - 3], b.origin[r - 1],
                     b.extent[r - 1], b.origin[r - 2], b.extent[r - 2]};
  add_cube_tile(k, mt, t, w, true, true, false, static_cast<uint32_t>(x.out), hw_, acc);
  return k;
}

TaskKind ProgramLowering::matmul_kind(const ProgStage& s, const Block& b,
                                      std::vector<Access>& acc) const {
  const ProgOp& x = op(s.first);
  const size_t r = s.shape.size();
  Block whole_k = b;
  whole_k.origin[r - 2] = 0;
  whole_k.extent[r - 2] = s.shape[r - 2];
  return cube_task(x, Dims(s.tile.end() - 3, s.tile.end()), s.l0, whole_k, tensor(x.out).dtype,
                   fmt::format("{}{}", s.psg, format_dims(b.extent)), acc);
}

int ProgramLowering::kind_id(const ProgStage& s, const TaskKind& k) {
  const size_t before = out_.graph.kinds.size();
  const int id = kinds_.get(out_.graph, k);
  if (out_.graph.kinds.size() > before) {
    try {
      plan_buffers(k, hw_);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: stage '{}' tile {}: {}", where(op(s.first)), s.psg,
                              format_dims(s.tile), e.what()),
                  e.kind());
    }
  }
  return id;
}

Producer ProgramLowering::producer_of(const ProgStage& s, const StageGrid& g, int t) const {
  const ProgOp& w = writer(s, t);
  Producer pr;
  const size_t r = g.pieces.size();
  for (size_t a = 0; a < r; ++a) {
    if (w.info->kind == OpKind::kMatmul && a == r - 2) continue;  // k
    const bool reduced =
        w.info->kind == OpKind::kReduce &&
        std::find(w.dims.begin(), w.dims.end(), static_cast<int>(a)) != w.dims.end();
    if (reduced && !w.keepdim) continue;
    // A column op's output: 1 where the stage's iteration space is wider.
    const Dims& ts = tensor(t).shape;
    const bool column =
        w.info->kind != OpKind::kReduce && ts.size() == r && ts[a] == 1 && s.shape[a] != 1;
    pr.pieces.push_back(reduced || column ? std::vector<Piece>{{0, 1}} : g.pieces[a]);
  }
  return pr;
}

int32_t ProgramLowering::add_task(const ProgStage& s, TaskKind k, int psg, int32_t root,
                                  const std::vector<Access>& acc,
                                  const std::vector<int32_t>& deps) {
  k.psg = psg;
  TaskGraph& g = out_.graph;
  const int32_t task = g.add_task(kind_id(s, k), root);
  for (const Access& a : acc) g.add_access(task, a);
  std::vector<int32_t> d = deps;
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  for (int32_t x : d) g.add_edge(x, task);
  return task;
}

void ProgramLowering::add_block(const ProgStage& s, TaskKind k, int psg, int64_t blk,
                                const std::vector<Access>& acc) {
  k.label = fmt::format("{}_block{}", s.psg, blk);
  k.psg = psg;
  const int32_t task = out_.graph.add_task(kind_id(s, k), 0, -1, launch_);
  for (const Access& a : acc) out_.graph.add_access(task, a);
}

std::vector<int32_t> ProgramLowering::load_deps(const ProgStage& s, const Block& b,
                                                const std::map<int, Producer>& produced) const {
  std::vector<int32_t> deps;
  for (int t : s.loads) {
    const auto it = produced.find(t);
    if (it != produced.end()) overlapping(it->second, operand_region(p_, reader(s, t), t, b), deps);
  }
  return deps;
}

DmaOp ProgramLowering::partial_dma(DmaDir dir, const ProgOp& red, const Block& out, int64_t slot,
                                   std::vector<Access>& acc) const {
  const ProgTensor& t = tensor(red.out);
  Dims key = out.origin;
  key.push_back(slot);  // a workspace block per slot, apart from the output's own blocks
  return gm_dma(
      dir, t.shape, out, t.dtype,
      block_key(static_cast<uint32_t>(p_.tensors.size() + static_cast<size_t>(red.out)), key), acc);
}

void ProgramLowering::lower_split(const ProgStage& s, const StageGrid& grid, int psg, int32_t base,
                                  const std::map<int, Producer>& produced,
                                  std::vector<Producer>& stores) {
  const ProgOp& red = op(s.last);
  const int rt = red.out;
  const auto chains = split_chains(p_, s, grid);
  segments_ = std::max(segments_, static_cast<int64_t>(chains.front().size()));
  std::vector<std::vector<int32_t>> by_tile(static_cast<size_t>(grid.count()));
  std::vector<std::vector<int32_t>> by_chain(chains.size());
  std::vector<Access> acc;
  int merge_psg = -1;
  for (size_t c = 0; c < chains.size(); ++c) {
    const auto& chain = chains[c];
    const int32_t root = base + grid.root(chain.front());
    const Block out = output_region(p_, red, grid.block(chain.front()));
    const int64_t out_elems = product(out.extent);
    const auto n = static_cast<int64_t>(chain.size());
    // A segment's own step: its loads, the fused ops and its partial, without the output store.
    auto segment = [&](int64_t j, TaskKind& k) {
      TaskKind t = vector_kind(s, grid.block(chain[static_cast<size_t>(j)]), acc, rt);
      TileStep st = t.steps.front();
      t.steps.clear();
      k = std::move(t);
      return st;
    };
    if (red.merge == MergeMode::kInTask) {
      // One task walks the row's tiles, folding each partial into the accumulator in UB.
      acc.clear();
      TaskKind k;
      std::vector<int32_t> deps;
      for (int64_t j = 0; j < n; ++j) {
        TaskKind seg;
        TileStep st = segment(j, seg);
        if (j == 0) k = std::move(seg);
        if (j > 0) combine(red, out_elems, st.vec);
        append_step(k, st);
        const auto d = load_deps(s, grid.block(chain[static_cast<size_t>(j)]), produced);
        deps.insert(deps.end(), d.begin(), d.end());
      }
      if (n > 1)
        k.buffers.push_back({"partial", ub_bytes(rt, out), BufferRole::kTemp, MemSpace::kUb});
      TileStep fin;
      fin.stores.push_back(dma(DmaDir::kWrite, rt, out, acc));
      k.steps.push_back(fin);
      const int32_t task = add_task(s, std::move(k), psg, root, acc, deps);
      by_chain[c] = {task};
      for (int64_t i : chain) by_tile[static_cast<size_t>(i)] = {task};
      continue;
    }
    // One task per segment.
    std::vector<int32_t> holder(static_cast<size_t>(n), -1);
    for (int64_t j = 0; j < n; ++j) {
      acc.clear();
      TaskKind k;
      TileStep st = segment(j, k);
      std::vector<int32_t> deps = load_deps(s, grid.block(chain[static_cast<size_t>(j)]), produced);
      switch (red.merge) {
        case MergeMode::kAtomic:  // add (max, min) the partial into the output in GM
          st.stores.push_back(dma(DmaDir::kWrite, rt, out, acc));
          st.accumulates = true;
          combine(red, out_elems, st.fold);
          break;
        case MergeMode::kChain:  // fold into the running result the previous segment wrote
          if (j > 0) {
            st.loads.push_back(dma(DmaDir::kRead, rt, out, acc));
            combine(red, out_elems, st.vec);
            deps.push_back(holder[static_cast<size_t>(j - 1)]);
          }
          st.stores.push_back(dma(DmaDir::kWrite, rt, out, acc));
          break;
        default:  // kTree: the partial to the workspace (a lone segment is the result)
          st.stores.push_back(n == 1 ? dma(DmaDir::kWrite, rt, out, acc)
                                     : partial_dma(DmaDir::kWrite, red, out, j, acc));
          break;
      }
      k.steps.push_back(st);
      holder[static_cast<size_t>(j)] = add_task(s, std::move(k), psg, root, acc, deps);
      by_tile[static_cast<size_t>(chain[static_cast<size_t>(j)])] = {
          holder[static_cast<size_t>(j)]};
    }
    if (red.merge == MergeMode::kTree && n > 1) {
      if (merge_psg < 0) merge_psg = out_.graph.add_psg(s.psg + ":merge");
      const auto levels = merge_levels(static_cast<int>(n), MergeMode::kTree);
      for (size_t l = 0; l < levels.size(); ++l)
        for (const MergeStep& m : levels[l]) {
          acc.clear();
          TaskKind k;
          k.buffer_count = spec_.buffer_count;
          k.label = fmt::format("{}:merge{}", s.psg, format_dims(out.extent));
          TileStep st;
          st.loads.push_back(partial_dma(DmaDir::kRead, red, out, m.a, acc));
          st.loads.push_back(partial_dma(DmaDir::kRead, red, out, m.b, acc));
          combine(red, out_elems, st.vec);
          st.stores.push_back(l + 1 == levels.size()
                                  ? dma(DmaDir::kWrite, rt, out, acc)
                                  : partial_dma(DmaDir::kWrite, red, out, m.a, acc));
          k.steps.push_back(st);
          k.buffers = {{"partials", 2 * ub_bytes(rt, out), BufferRole::kInput, MemSpace::kUb}};
          holder[static_cast<size_t>(m.a)] =
              add_task(s, std::move(k), merge_psg, root, acc,
                       {holder[static_cast<size_t>(m.a)], holder[static_cast<size_t>(m.b)]});
        }
    }
    by_chain[c] = red.merge == MergeMode::kAtomic  ? holder
                  : red.merge == MergeMode::kChain ? std::vector<int32_t>{holder.back()}
                                                   : std::vector<int32_t>{holder.front()};
  }
  for (size_t i = 0; i < s.stores.size(); ++i)
    stores[i].tasks = s.stores[i] == rt ? by_chain : by_tile;
}

void ProgramLowering::lower_split_spmd(const ProgStage& s, const StageGrid& grid, int psg) {
  const ProgOp& red = op(s.last);
  const int rt = red.out;
  TaskGraph& g = out_.graph;
  if (red.merge != MergeMode::kInTask)
    throw Error(fmt::format("{}: merge \"{}\": an spmd block accumulates its rows in UB "
                            "(in_task); merges across tasks need the pypto partition",
                            where(red), merge_mode_name(red.merge)),
                ErrorKind::kInput);
  const auto chains = split_chains(p_, s, grid);
  segments_ = std::max(segments_, static_cast<int64_t>(chains.front().size()));
  const auto rows = static_cast<int64_t>(chains.size());
  const auto segs = static_cast<int64_t>(chains.front().size());
  // Whole rows per block while there are at least as many rows as blocks; past that the blocks
  // share (row, tile) units and a row split over blocks finishes in GM.
  using Part = ReductionPlan::Part;
  std::vector<Part> units;
  if (spec_.grid <= rows) {
    for (int64_t c = 0; c < rows; ++c) units.push_back({c, 0, segs});
  } else {
    for (int64_t u = 0; u < rows * segs; ++u) units.push_back({u / segs, u % segs, u % segs + 1});
  }
  const int64_t used = std::min(spec_.grid, static_cast<int64_t>(units.size()));
  // Products, indices and log-sum-exps do not accumulate atomically: such a row's parts go to a
  // workspace and a second launch folds them.
  const bool atomic = merges_atomically(red.reduce);
  std::vector<int64_t> parts_of(static_cast<size_t>(rows), 0);
  std::vector<Access> acc;
  for (int64_t blk = 0; blk < used; ++blk) {
    const BlockRange range = block_range(static_cast<int64_t>(units.size()), used, blk);
    std::vector<Part> parts;
    for (int64_t u = range.begin; u < range.end; ++u) {
      const Part& x = units[static_cast<size_t>(u)];
      if (!parts.empty() && parts.back().chain == x.chain && parts.back().s1 == x.s0)
        parts.back().s1 = x.s1;
      else
        parts.push_back(x);
    }
    acc.clear();
    TaskKind k;
    for (const Part& part : parts) {
      const auto& chain = chains[static_cast<size_t>(part.chain)];
      const Block out = output_region(p_, red, grid.block(chain.front()));
      const int64_t out_elems = product(out.extent);
      TaskKind pk;
      for (int64_t j = part.s0; j < part.s1; ++j) {
        TaskKind t = vector_kind(s, grid.block(chain[static_cast<size_t>(j)]), acc, rt);
        TileStep st = t.steps.front();
        if (j > part.s0) combine(red, out_elems, st.vec);
        if (j == part.s0) {
          pk = std::move(t);
          pk.steps.clear();
        }
        append_step(pk, st);
      }
      TileStep fin;
      if (part.s0 == 0 && part.s1 == segs) {
        fin.stores.push_back(dma(DmaDir::kWrite, rt, out, acc));
      } else if (atomic) {
        fin.stores.push_back(dma(DmaDir::kWrite, rt, out, acc));
        fin.accumulates = true;
        combine(red, out_elems, fin.fold);
      } else {
        fin.stores.push_back(
            partial_dma(DmaDir::kWrite, red, out, parts_of[static_cast<size_t>(part.chain)], acc));
      }
      ++parts_of[static_cast<size_t>(part.chain)];
      pk.steps.push_back(fin);
      append_kind(k, std::move(pk));
    }
    add_block(s, std::move(k), psg, blk, acc);
  }
  ++launch_;
  if (atomic) return;
  // The second launch: each split row's parts folded and written, rows shared over the blocks.
  std::vector<int64_t> split;
  for (int64_t c = 0; c < rows; ++c)
    if (parts_of[static_cast<size_t>(c)] > 1) split.push_back(c);
  if (split.empty()) return;
  const int merge_psg = g.add_psg(s.psg + ":merge");
  const int64_t blocks = std::min(spec_.grid, static_cast<int64_t>(split.size()));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const BlockRange range = block_range(static_cast<int64_t>(split.size()), blocks, blk);
    acc.clear();
    TaskKind k;
    k.buffer_count = spec_.buffer_count;
    k.label = fmt::format("{}:merge_block{}", s.psg, blk);
    k.psg = merge_psg;
    int64_t most = 0;
    for (int64_t r = range.begin; r < range.end; ++r) {
      const int64_t c = split[static_cast<size_t>(r)];
      const Block out = output_region(p_, red, grid.block(chains[static_cast<size_t>(c)].front()));
      TileStep st;
      const int64_t parts = parts_of[static_cast<size_t>(c)];
      for (int64_t q = 0; q < parts; ++q)
        st.loads.push_back(partial_dma(DmaDir::kRead, red, out, q, acc));
      for (int64_t q = 1; q < parts; ++q) combine(red, product(out.extent), st.vec);
      st.stores.push_back(dma(DmaDir::kWrite, rt, out, acc));
      append_step(k, st);
      most = std::max(most, parts * ub_bytes(rt, out));
    }
    k.buffers = {{"partials", most, BufferRole::kInput, MemSpace::kUb}};
    const int32_t task = g.add_task(kind_id(s, k), 0, -1, launch_);
    for (const Access& a : acc) g.add_access(task, a);
  }
  ++launch_;
}

void ProgramLowering::lower_split_scan(const ProgStage& s, const StageGrid& grid, int psg,
                                       int32_t base, const std::map<int, Producer>& produced,
                                       std::vector<Producer>& stores) {
  // A cumsum over a split dim: one task (spmd: a block) walks each row's tiles in order and adds
  // the carry, the previous tile's last line along the dim, to every tile after the first (one
  // Add over the tile); the carry line stays in UB.
  const ProgOp& scan = op(s.last);
  const auto chains = split_chains(p_, s, grid);
  segments_ = std::max(segments_, static_cast<int64_t>(chains.front().size()));
  std::vector<std::vector<int32_t>> by_tile(static_cast<size_t>(grid.count()));
  std::vector<Access> acc;
  // Appends chain `c`'s tiles to `k`, their load dependencies to `deps`.
  auto walk = [&](size_t c, TaskKind& k, std::vector<int32_t>& deps) {
    const auto& chain = chains[c];
    for (size_t j = 0; j < chain.size(); ++j) {
      const Block b = grid.block(chain[j]);
      TaskKind t = vector_kind(s, b, acc);
      TileStep st = t.steps.front();
      if (j > 0)
        st.vec.push_back(VecOp{VecClass::kSimple, tensor(scan.out).dtype, 1, 1, product(b.extent)});
      if (k.steps.empty()) {
        t.steps.clear();
        Block line = b;
        line.extent[static_cast<size_t>(scan.dims[0])] = 1;
        t.buffers.push_back({"carry", ub_bytes(scan.out, line), BufferRole::kTemp, MemSpace::kUb});
        k = std::move(t);
      }
      append_step(k, st);
      if (spmd_) continue;  // launches run in order: no edges
      const auto d = load_deps(s, b, produced);
      deps.insert(deps.end(), d.begin(), d.end());
    }
  };
  if (!spmd_) {
    for (size_t c = 0; c < chains.size(); ++c) {
      acc.clear();
      TaskKind k;
      std::vector<int32_t> deps;
      walk(c, k, deps);
      const int32_t task =
          add_task(s, std::move(k), psg, base + grid.root(chains[c].front()), acc, deps);
      for (int64_t i : chains[c]) by_tile[static_cast<size_t>(i)] = {task};
    }
    for (auto& pr : stores) pr.tasks = by_tile;
    return;
  }
  // spmd: whole rows per block (a carry does not cross blocks).
  const auto rows = static_cast<int64_t>(chains.size());
  const int64_t used = std::min(spec_.grid, rows);
  for (int64_t blk = 0; blk < used; ++blk) {
    const BlockRange range = block_range(rows, used, blk);
    acc.clear();
    TaskKind k;
    std::vector<int32_t> unused;
    for (int64_t c = range.begin; c < range.end; ++c) {
      TaskKind part;
      walk(static_cast<size_t>(c), part, unused);
      append_kind(k, std::move(part));
    }
    add_block(s, std::move(k), psg, blk, acc);
  }
  ++launch_;
}

void ProgramLowering::lower_flash(const ProgStage& s, int psg, int32_t base,
                                  const std::map<int, Producer>& produced,
                                  std::vector<Producer>& stores) {
  const ProgOp& mm1 = op(s.first);
  const ProgOp& lse = op(s.online);
  const ProgOp& mm2 = op(s.last);
  const int pt = mm2.in[0];  // P
  const size_t r = s.shape.size();
  const StageGrid grid = stage_grid(s);
  const auto keys = static_cast<int64_t>(grid.pieces[r - 1].size());
  const int64_t dk = tensor(mm1.in[0]).shape.back();
  const int64_t dv = tensor(mm2.out).shape.back();
  const Dims& vec = p_.tiles[static_cast<size_t>(lse.tile)].dims;  // [1..., rows, key block]
  const int64_t rows = vec[r - 2];
  const ProgTile& t1 = p_.tiles[static_cast<size_t>(mm1.tile)];
  const ProgTile& t2 = p_.tiles[static_cast<size_t>(mm2.tile)];
  const auto pv_ws = static_cast<uint32_t>(p_.tensors.size() + static_cast<size_t>(mm2.out));
  const Dims& o_shape = tensor(mm2.out).shape;
  const Dims& l_shape = tensor(lse.out).shape;
  const int64_t align = hw_.ub.align_bytes;
  // The statistic's ops on a row piece of an S block, S read from its workspace (the first load).
  ProgStage vs;
  vs.first = s.first + 1;
  vs.last = s.online;
  vs.shape = s.shape;
  vs.tile = vec;
  vs.psg = s.psg + ":online_softmax";
  vs.loads.push_back(mm1.out);
  std::set<int> made{mm1.out};
  for (int o = vs.first; o <= vs.last; ++o) {
    const ProgOp& x = op(o);
    vs.writer_op.emplace(x.out, o);
    for (int t : x.in) {
      vs.reader_op.emplace(t, o);
      if (!made.count(t) && std::find(vs.loads.begin(), vs.loads.end(), t) == vs.loads.end())
        vs.loads.push_back(t);
    }
    made.insert(x.out);
  }
  const int psg_v = out_.graph.add_psg(vs.psg);
  const int psg_pv = out_.graph.add_psg(s.psg + ":pv");
  const int psg_o = out_.graph.add_psg(s.psg + ":rescale_o");
  // The row pieces of a query block.
  const auto pieces_of = [&](const Block& b) {
    std::vector<Block> ps;
    for (int64_t o = 0; o < b.extent[r - 2]; o += rows) {
      Block x = b;
      x.origin[r - 2] += o;
      x.extent[r - 2] = std::min(rows, b.extent[r - 2] - o);
      ps.push_back(x);
    }
    return ps;
  };
  // A cube access of a whole block as its row pieces' workspace slots (an AIV task reads or
  // writes one piece): the access with key `key` replaced by one per piece, bytes by rows.
  const auto by_pieces = [&](std::vector<Access>& a, uint64_t key, const Block& b, uint32_t id,
                             int64_t slot) {
    const auto it =
        std::find_if(a.begin(), a.end(), [&](const Access& x) { return x.block == key; });
    if (it == a.end()) throw InternalError("lower_flash: a cube access to replace is missing");
    const Access whole = *it;
    a.erase(it);
    for (const Block& pc : pieces_of(b))
      a.push_back(
          {ring_key(id, pc, slot), whole.bytes * pc.extent[r - 2] / b.extent[r - 2], whole.write});
  };
  const auto deps_on = [&](int t, const Block& region, std::vector<int32_t>& deps) {
    if (const auto it = produced.find(t); it != produced.end())
      overlapping(it->second, region, deps);
  };
  // Producers of O and of the statistic: one piece per row piece.
  Producer o_pr, l_pr;
  for (size_t a = 0; a + 2 < r; ++a) {
    o_pr.pieces.push_back(grid.pieces[a]);
    l_pr.pieces.push_back(grid.pieces[a]);
  }
  std::vector<Piece> qp;
  for (const Piece& q : grid.pieces[r - 2])
    for (int64_t o = 0; o < q.size; o += rows)
      qp.push_back({q.offset + o, std::min(rows, q.size - o)});
  o_pr.pieces.push_back(qp);
  l_pr.pieces.push_back(qp);
  o_pr.pieces.push_back({{0, dv}});
  l_pr.pieces.push_back({{0, 1}});
  // Under spmd a block's AIV runs every task of its row pieces, so the running m, l, alpha and O
  // stay in its UB (Triton-Ascend keeps a loop's accumulators on chip); under pypto they go
  // through GM, as PyPTO's running tensors do.
  const bool resident = spmd_;
  const int64_t o_tile = ub_tile_bytes(Dims{rows, dv}, DType::kFp32, hw_);
  const auto stat_dma = [&](DmaDir dir, const Block& pc, int64_t slot, std::vector<Access>& a) {
    return gm_dma(dir, l_shape, output_region(p_, lse, pc), DType::kFp32,
                  ring_key(static_cast<uint32_t>(lse.out), pc, slot), a);
  };
  // The AIV of a mixed block that takes row piece q: the first half of the rows on the first.
  const auto lane_of = [](size_t q, const std::vector<Block>& pieces) {
    return 1 + static_cast<int>(2 * q / pieces.size());
  };
  std::vector<Access> acc;
  std::vector<int32_t> c1(static_cast<size_t>(keys)), c2(static_cast<size_t>(keys));
  std::vector<std::vector<int32_t>> v1(static_cast<size_t>(keys)), v2(static_cast<size_t>(keys));
  // Under spmd a run of query blocks is one mixed block's work (a Triton-Ascend mix kernel: a
  // block per AIC, its rows split over the cluster's two AIVs); the block's edges stay inside it
  // (earlier stages are earlier launches).
  int32_t block_first = -1;
  const auto emit = [&](const ProgStage& st, TaskKind k, int ps, int32_t root,
                        const std::vector<Access>& a, std::vector<int32_t> deps, int lane) {
    if (!spmd_) return add_task(st, std::move(k), ps, root, a, deps);
    k.psg = ps;
    TaskGraph& g = out_.graph;
    const int32_t task = g.add_task(kind_id(st, k), 0, -1, launch_, block_first >= 0);
    if (block_first < 0) block_first = task;
    g.tasks[static_cast<size_t>(task)].mix_lane = static_cast<int8_t>(lane);
    for (const Access& x : a) g.add_access(task, x);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (const int32_t d : deps)
      if (d >= block_first) g.add_edge(d, task);
    return task;
  };
  const int64_t chains = grid.count() / keys;
  const int64_t used = spmd_ ? std::min(spec_.grid, chains) : chains;
  for (int64_t blk = 0; blk < used; ++blk) {
    const BlockRange range = spmd_ ? block_range(chains, used, blk) : BlockRange{blk, blk + 1};
    block_first = -1;
    for (int64_t c = range.begin; c < range.end; ++c) {
      const int32_t root = base + grid.root(c * keys);
      // The AIC runs a key block ahead (catlass's preload, Triton-Ascend's CV pipelining): S of
      // key block `step` before P V of block step - 1, so with two slots both cores keep busy.
      // Under spmd each core runs its tasks in this order.
      for (int64_t step = 0; step <= keys; ++step)
        for (const bool back : {false, true}) {
          const int64_t j = back ? step - 1 : step;
          if (j < 0 || j >= keys) continue;
          const auto ju = static_cast<size_t>(j);
          const Block b = grid.block(c * keys + j);
          const std::vector<Block> pieces = pieces_of(b);
          Dims batch_q(b.origin.begin(), b.origin.end() - 1);  // [batch..., q0]
          std::vector<int32_t> deps;
          if (!back) {
            // S = Q K^T on the AIC into S's slot j % 2.
            acc.clear();
            Block mb{batch_q, Dims(b.extent.begin(), b.extent.end() - 1)};
            mb.origin.insert(mb.origin.end(), {0, b.origin[r - 1]});
            mb.extent.insert(mb.extent.end(), {dk, b.extent[r - 1]});
            TaskKind k = cube_task(mm1, t1.dims, t1.l0, mb, tensor(mm1.out).dtype,
                                   fmt::format("{}:qk{}", s.psg, format_dims(b.extent)), acc);
            Dims c_origin(batch_q);
            c_origin.push_back(b.origin[r - 1]);
            by_pieces(acc, block_key(static_cast<uint32_t>(mm1.out), c_origin), b,
                      static_cast<uint32_t>(mm1.out), j % 2);
            for (int t : mm1.in) deps_on(t, operand_region(p_, mm1, t, mb), deps);
            if (j >= 2) deps.insert(deps.end(), v1[ju - 2].begin(), v1[ju - 2].end());
            k.carries_state = true;
            c1[ju] = emit(s, std::move(k), psg, root, acc, deps, 0);
            // The statistic and P on the AIVs, a task per row piece.
            v1[ju].clear();
            for (size_t q = 0; q < pieces.size(); ++q) {
              const Block& pc = pieces[q];
              acc.clear();
              TaskKind vk = vector_kind(vs, pc, acc);
              acc.front().block = ring_key(static_cast<uint32_t>(mm1.out), pc, j % 2);
              TileStep& st = vk.steps.front();
              // The running update on the rows: Max with the running max, alpha = exp(m_old - m)
              // (Sub, Exp), l = l * alpha + the tile's sum (Mul, Add).
              const int64_t prow = pc.extent[r - 2];
              for (VecClass cl : {VecClass::kSimple, VecClass::kSimple, VecClass::kComplex,
                                  VecClass::kSimple, VecClass::kSimple})
                st.vec.push_back(VecOp{cl, DType::kFp32, 1, 1, prow});
              // P is the statistic's own exp(x - m); its casts are priced as they are written.
              Block full{Dims(r, 0), vec};
              for (size_t d = 0; d < r; ++d) full.extent[d] = std::min(vec[d], s.shape[d]);
              const Dims ce = compute_extent(s.shape, vec, pc.extent);
              for (int o = s.online + 3; o < s.last; ++o)
                op_vector_work(op(o), ce, product(ce), full, st.vec);
              // pypto: m, l and alpha pass between tasks through GM (any core may run the next);
              // spmd: the block's AIV keeps them, and O, in its UB across the key blocks.
              if (j > 0 && !resident)
                for (int64_t slot : {0, 1})
                  st.loads.push_back(stat_dma(DmaDir::kRead, pc, slot, acc));
              if (!resident)
                for (int64_t slot : {0, 1, 2})
                  st.stores.push_back(stat_dma(DmaDir::kWrite, pc, slot, acc));
              st.stores.push_back(gm_dma(DmaDir::kWrite, tensor(pt).shape, pc, tensor(pt).dtype,
                                         ring_key(static_cast<uint32_t>(pt), pc, j % 2), acc));
              vk.label = fmt::format("{}{}", vs.psg, format_dims(pc.extent));
              vk.buffers.push_back(
                  {tensor(pt).name, ub_bytes(pt, full), BufferRole::kOutput, MemSpace::kUb});
              vk.buffers.push_back(
                  {"m_l_alpha", 3 * rows * align, BufferRole::kTemp, MemSpace::kUb});
              if (resident)
                vk.buffers.push_back({"o_acc", o_tile, BufferRole::kTemp, MemSpace::kUb});
              std::vector<int32_t> vdeps = load_deps(vs, pc, produced);
              vdeps.push_back(c1[ju]);
              if (j > 0) vdeps.push_back(v1[ju - 1][q]);
              if (j >= 2)
                vdeps.push_back(c2[ju - 2]);  // P's slot j % 2 read by P V two blocks back
              vk.carries_state = true;
              v1[ju].push_back(
                  emit(vs, std::move(vk), psg_v, root, acc, vdeps, lane_of(q, pieces)));
            }
            continue;
          }
          // P V on the AIC: A = P from its slot, C (fp32) into P V's slot.
          acc.clear();
          Block pb = b;
          pb.origin.push_back(0);
          pb.extent.push_back(dv);
          TaskKind ck = cube_task(mm2, t2.dims, t2.l0, pb, DType::kFp32,
                                  fmt::format("{}:pv{}", s.psg, format_dims(b.extent)), acc);
          by_pieces(acc, block_key(static_cast<uint32_t>(pt), b.origin), b,
                    static_cast<uint32_t>(pt), j % 2);
          Dims o_origin(batch_q);
          o_origin.push_back(0);
          by_pieces(acc, block_key(static_cast<uint32_t>(mm2.out), o_origin), b, pv_ws, j % 2);
          ck.carries_state = true;
          deps = v1[ju];
          if (j >= 2) deps.insert(deps.end(), v2[ju - 2].begin(), v2[ju - 2].end());
          deps_on(mm2.in[1], operand_region(p_, mm2, mm2.in[1], pb), deps);
          c2[ju] = emit(s, std::move(ck), psg_pv, root, acc, deps, 0);
          // O = O * alpha + P V on the AIVs; after the last key block O / l (and lse = m + ln l).
          v2[ju].clear();
          const bool last = j + 1 == keys;
          for (size_t q = 0; q < pieces.size(); ++q) {
            const Block& pc = pieces[q];
            const int64_t prow = pc.extent[r - 2];
            Block ob = pc;
            ob.origin.back() = 0;
            ob.extent.back() = dv;
            const int64_t on = prow * dv;
            acc.clear();
            TaskKind ok;
            ok.buffer_count = spec_.buffer_count;
            ok.carries_state = true;
            ok.label = fmt::format("{}:rescale_o{}", s.psg, format_dims(ob.extent));
            TileStep st;
            st.loads.push_back(
                gm_dma(DmaDir::kRead, o_shape, ob, DType::kFp32, ring_key(pv_ws, pc, j % 2), acc));
            const auto column = [&](VecClass then) {  // Brcb a row statistic, then one op over O
              st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1,
                                     prow * align / dtype_bytes(DType::kFp32)});
              st.vec.push_back(VecOp{then, DType::kFp32, 1, 1, on});
            };
            if (j > 0) {
              if (!resident) {
                st.loads.push_back(gm_dma(DmaDir::kRead, o_shape, ob, DType::kFp32,
                                          ring_key(static_cast<uint32_t>(mm2.out), pc, 0), acc));
                st.loads.push_back(stat_dma(DmaDir::kRead, pc, 2, acc));
              }
              column(VecClass::kSimple);                                           // O * alpha
              st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, on});  // + P V
            }
            if (!last) {
              if (!resident)
                st.stores.push_back(gm_dma(DmaDir::kWrite, o_shape, ob, DType::kFp32,
                                           ring_key(static_cast<uint32_t>(mm2.out), pc, 0), acc));
            } else {
              if (!resident) st.loads.push_back(stat_dma(DmaDir::kRead, pc, 1, acc));
              column(VecClass::kComplex);  // O / l
              if (tensor(mm2.out).dtype != DType::kFp32)
                st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, on});
              st.stores.push_back(dma(DmaDir::kWrite, mm2.out, ob, acc));
              if (std::find(s.stores.begin(), s.stores.end(), lse.out) != s.stores.end()) {
                if (!resident) st.loads.push_back(stat_dma(DmaDir::kRead, pc, 0, acc));
                st.vec.push_back(VecOp{VecClass::kComplex, DType::kFp32, 1, 1, prow});  // ln l
                st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, prow});   // + m
                st.stores.push_back(dma(DmaDir::kWrite, lse.out, output_region(p_, lse, pc), acc));
              }
            }
            ok.steps.push_back(st);
            ok.buffers = {{"pv", o_tile, BufferRole::kInput, MemSpace::kUb},
                          {"o_acc", o_tile, BufferRole::kTemp, MemSpace::kUb},
                          {"m_l_alpha", 3 * rows * align, BufferRole::kTemp, MemSpace::kUb}};
            std::vector<int32_t> odeps{c2[ju], v1[ju][q]};
            if (j > 0) odeps.push_back(v2[ju - 1][q]);
            v2[ju].push_back(emit(s, std::move(ok), psg_o, root, acc, odeps, lane_of(q, pieces)));
            if (last) {
              o_pr.tasks.push_back({v2[ju].back()});
              l_pr.tasks.push_back({v2[ju].back()});
            }
          }
        }
    }
  }
  if (spmd_) ++launch_;
  for (size_t i = 0; i < s.stores.size(); ++i) stores[i] = s.stores[i] == mm2.out ? o_pr : l_pr;
}

LoweredKernel ProgramLowering::run() {
  if (spec_.partition == PartitionStyle::kAscendC)
    throw Error(
        "program: the ascendc partition is not modelled for programs (use pypto, or spmd "
        "with a grid)",
        ErrorKind::kLimits);
  const std::vector<ProgStage> stages = plan_stages(p_);
  TaskGraph& g = out_.graph;
  g.runtime = spmd_ ? RuntimeStyle::kSpmd : RuntimeStyle::kMpmd;
  std::map<int, Producer> produced;
  int32_t next_root = 0, base = 0;
  for (size_t si = 0; si < stages.size(); ++si) {
    const ProgStage& s = stages[si];
    if (spmd_ && s.roots() > 1)
      throw Error(
          fmt::format("{}: loop '{}' loop_count {} applies to the pypto partition; an spmd "
                      "launch shares each stage's tiles over partition.grid blocks",
                      where(op(s.first)), p_.loops[static_cast<size_t>(s.loop)].name, s.roots()),
          ErrorKind::kLimits);
    if (spmd_ && spec_.grid < 1)
      throw Error(fmt::format("program: partition.grid {}: an spmd launch starts at least 1 block",
                              spec_.grid),
                  ErrorKind::kLimits);
    check_alignment(s);
    // Root functions: one per loop chunk, shared by the consecutive stages of one loop; the
    // stages outside any loop form one root function between them.
    if (si == 0 || s.loop != stages[si - 1].loop) {
      base = next_root;
      next_root += static_cast<int32_t>(s.roots());
    }
    if (s.online >= 0) {
      std::vector<Producer> stores(s.stores.size());
      lower_flash(s, g.add_psg(s.psg + ":qk"), base, produced, stores);
      for (size_t i = 0; i < s.stores.size(); ++i) produced[s.stores[i]] = std::move(stores[i]);
      continue;
    }
    ProgStage grid_stage = s;
    if (s.kind == OpKind::kMatmul) grid_stage.tile[s.tile.size() - 2] = s.shape[s.shape.size() - 2];
    const StageGrid grid = stage_grid(grid_stage);
    const int psg = g.add_psg(s.psg);
    std::vector<Producer> stores;
    for (int t : s.stores) stores.push_back(producer_of(s, grid, t));
    std::vector<Access> acc;
    auto make = [&](int64_t i) {
      TaskKind k = s.kind == OpKind::kMatmul ? matmul_kind(s, grid.block(i), acc)
                                             : vector_kind(s, grid.block(i), acc);
      k.psg = psg;
      return k;
    };
    const int64_t tiles = grid.count();
    if (s.split && op(s.last).info->kind == OpKind::kScan) {
      lower_split_scan(s, grid, psg, base, produced, stores);
    } else if (s.split && !spmd_) {
      lower_split(s, grid, psg, base, produced, stores);
    } else if (s.split) {
      lower_split_spmd(s, grid, psg);
    } else if (!spmd_) {
      for (auto& pr : stores) pr.tasks.resize(static_cast<size_t>(tiles));
      for (const int64_t i : task_order(s, grid)) {
        acc.clear();
        const int32_t task = add_task(s, make(i), psg, base + grid.root(i), acc,
                                      load_deps(s, grid.block(i), produced));
        for (auto& pr : stores) pr.tasks[static_cast<size_t>(i)] = {task};
      }
    } else {
      const int64_t used = std::min(spec_.grid, tiles);
      for (int64_t blk = 0; blk < used; ++blk) {
        const BlockRange range = block_range(tiles, used, blk);
        if (s.kind == OpKind::kMatmul) {
          // A cube block is a run of C-tile tasks (Task::continues_block), each with its own GM
          // accesses, as the matmul family's blocks: blocks reading one panel close in time hit
          // L2.
          for (int64_t i = range.begin; i < range.end; ++i) {
            acc.clear();
            TaskKind t = make(i);
            const int32_t task = g.add_task(kind_id(s, t), 0, -1, launch_, i > range.begin);
            for (const Access& a : acc) g.add_access(task, a);
          }
          continue;
        }
        acc.clear();
        TaskKind k;
        for (int64_t i = range.begin; i < range.end; ++i) append_kind(k, make(i));
        add_block(s, std::move(k), psg, blk, acc);
      }
      ++launch_;
    }
    for (size_t i = 0; i < s.stores.size(); ++i) produced[s.stores[i]] = std::move(stores[i]);
  }
  g.finalize();
  fill_common_diagnostics(spec_, hw_, out_);
  out_.diag.reduction_segments = segments_;
  return std::move(out_);
}

}  // namespace

LoweredKernel lower_program(const Program& p, const KernelSpec& spec, const Hardware& hw) {
  return ProgramLowering(p, spec, hw).run();
}

}  // namespace tilesim
