// A fused vector stage: a task per tile that loads the tensors it reads from GM, runs every op's
// vector instructions on the tile in UB and stores what leaves the stage (transpose and gather are
// vector stages of their own). The UB a tile needs is its tensors' by lifetime: under pypto every
// tensor of an iteration shares one pool (PyPTO's BufferPool), under spmd only temporaries do.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "kernels/lower/program/lowering_context.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "kernels/tiling/vector_work.hpp"
#include "model/error.hpp"
#include "model/ub_budget.hpp"

namespace tilesim {

namespace {

// Whether the Triton-Ascend compiler reads operand `sh` of op `x` (iteration space `is`) in
// place rather than materialising its broadcast: AscendNPU-IR's InlineOTFBroadcast
// (bishengir/lib/Dialect/HIVM/Transforms/InlineOTFBroadcast.cpp) folds a vbrc along one axis,
// wherever it stands, into its binary users (BroadcastableOTF), not into a select (tl.where) nor
// along two axes; a last-axis one keeps a per-row block the column's Brcb prices
// (GetExtraBuffers.cpp).
bool broadcast_inlined(const ProgOp& x, const Dims& sh, const Dims& is) {
  if (x.info->kind != OpKind::kBinary) return false;
  int axes = 0;
  for (size_t d = 0; d < is.size(); ++d) {
    const int64_t own = d < sh.size() ? sh[sh.size() - 1 - d] : 1;  // numpy: from the last dim
    axes += own == 1 && is[is.size() - 1 - d] != 1;
  }
  return axes == 1;
}

// A binary op with an operand broadcast along the rows, as the Triton-Ascend compiler's vector
// library issues it (AscendNPU-IR bishengir/lib/Template/lib/Vector/Elementwise/EltWise2D.cpp,
// vector_eltwise_2d): the larger of the rows and the row's repeats is the repeat axis (the
// broadcast operand's repeat stride 0), so one instruction per repeat-wide column chunk when
// there are more rows than chunks; else one instruction.
void add_compiled_binary_vec(VecClass cls, DType dt, const Dims& ce, bool broadcast,
                             const Hardware& hw, std::vector<VecOp>& vec) {
  const int64_t cols = ce.back(), rows = product(ce) / cols;
  const int64_t chunks = ceil_div(cols * dtype_bytes(dt), hw.vector.bytes_per_repeat);
  const int64_t loops = broadcast && chunks > 1 ? std::min(rows, chunks) : 1;
  for (int64_t i = 0; i < loops; ++i) {
    vec.push_back(VecOp{cls, dt, 1, 1, product(ce) / loops});
    vec.back().same_op = i > 0;  // one operation
  }
}

// A binary, n-ary or where op: one instruction per fold, a column operand spread by Brcb first.
void binary_work(const LoweringContext& cx, const ProgOp& x, const Dims& ce, const Block& full,
                 std::vector<VecOp>& vec, OpVectorWork& w) {
  const DType dt = cx.tensor(x.out).dtype;
  // Against the op's own iteration space (a column op's is the stage's column).
  const Dims is = iteration_shape(cx.program(), x);
  bool broadcast = false;
  int tiles = 0;  // operands read as tiles (more than one value)
  for (int t : x.in) {
    // One value per tile (a one-row tile's statistic) is a vector-scalar instruction's operand
    // (Ascend C Adds / Muls with a scalar read from UB): no Brcb, no per-row split.
    const Dims& sh = cx.tensor(t).shape;
    const int64_t values = product(operand_region(cx.program(), x, t, full).extent);
    broadcast = broadcast || (sh != is && values > 1);
    tiles += values > 1;
    // A column operand of several rows: Brcb spreads each row's scalar over one UB block, as the
    // elementwise family does.
    if (sh.size() == is.size() && sh.back() == 1 && is.back() != 1 && values > 1) {
      const int64_t align = cx.hw().ub.align_bytes;
      vec.push_back(VecOp{VecClass::kSimple, dt, 1, 1, values * align / dtype_bytes(dt)});
      w.columns.emplace_back(t, values * align);
    }
  }
  // The Triton-Ascend compiler materialises a broadcast of more than one value per tile
  // (tl.broadcast_to) as a copy into a tile of its own, unless it reads it in place
  // (broadcast_inlined).
  if (cx.spec().triton)
    for (int t : x.in)
      if (cx.tensor(t).shape != is &&
          product(operand_region(cx.program(), x, t, full).extent) > 1 &&
          !broadcast_inlined(x, cx.tensor(t).shape, is)) {
        vec.push_back(VecOp{VecClass::kSimple, dt, 1, 1, product(ce)});
        ++w.broadcast_tiles;
      }
  // An n-ary add (mul, maximum, minimum) folds its operands left to right: n - 1 ops.
  const size_t first = vec.size();
  const size_t folds = x.info->kind == OpKind::kBinary && x.in.size() > 2 ? x.in.size() - 1 : 1;
  for (size_t f = 0; f < folds; ++f)
    if (cx.spec().triton)
      add_compiled_binary_vec(x.info->instrs.front(), dt, ce, broadcast, cx.hw(), vec);
    else
      add_binary_vec(x.info->instrs.front(), dt, ce, broadcast, cx.hw(), vec);
  // Sources that share a UB bank group conflict only in pairs: an op reading one tile (the other
  // operand a scalar, or one value per tile) cannot (Ascend C best practices, 'Avoiding Bank
  // Conflicts in the Unified Buffer': a read/read conflict is two reads of one bank group at once).
  if (x.bank_conflict_free || tiles < 2)
    for (size_t v = first; v < vec.size(); ++v) vec[v].bank_conflict = false;
}

// Ascend C CumSum (asc-devkit impl/adv_api/detail/math/cumsum/cumsum_common_impl.h): along the
// first axis one Add per row after the first; along the last axis the tile is transposed
// (TransDataTo5HD), summed row by row over the rows rounded up to 16, transposed back and copied
// out, fp16 through fp32 casts, two temporary tiles.
void scan_work(DType dt, const ProgOp& x, const Dims& ce, int64_t n, std::vector<VecOp>& vec,
               OpVectorWork& w) {
  const size_t d = static_cast<size_t>(x.dims[0]);
  int64_t before = 1, after = 1;
  for (size_t a = 0; a < d; ++a) before *= ce[a];
  for (size_t a = d + 1; a < ce.size(); ++a) after *= ce[a];
  if (d + 1 != ce.size()) {
    vec.push_back(VecOp{VecClass::kScan, dt, before, ce[d] - 1, after});
    return;
  }
  const bool half = dt != DType::kFp32;
  const auto pass = [&](DType t) { vec.push_back(VecOp{VecClass::kSimple, t, 1, 1, n}); };
  pass(dt);  // transpose in
  if (half) pass(DType::kFp32);
  vec.push_back(VecOp{VecClass::kScan, DType::kFp32, 1, ce[d] - 1, ceil_div(before, 16) * 16});
  if (half) pass(DType::kFp32);
  pass(dt);  // transpose back
  pass(dt);  // copy out
  w.scratch += 2;
}

// A reduction of the tile: its statistic's passes (kernels/ops/op_table.cpp cites each
// instruction), then its finalize (a mean's scale). A sumexp whose running max an earlier amax of
// the stage computed starts past the max (X10).
void reduce_work(const LoweringContext& cx, const ProgOp& x, const Dims& ce, const Block& full,
                 std::vector<VecOp>& vec, OpVectorWork& w, const ProgStage* stage) {
  const ReduceRecord& rec = *x.info->reduction;
  const DType dt = cx.tensor(x.out).dtype;
  const DType in_dt = cx.tensor(x.in[0]).dtype;
  const TileReduceGeometry g = reduce_geometry(ce, x.dims);
  const size_t first = vec.size();
  reduce_tile_work(rec, g, in_dt, dt, vec,
                   stage && reused_max(cx.program(), *stage, x) >= 0 ? 1 : 0);
  if (x.block_reduce)
    for (size_t v = first; v < vec.size(); ++v)
      vec[v].block_reduce = vec[v].cls == VecClass::kReduceLast;
  reduce_finalize_work(rec, g.out_elems, in_dt, dt, vec);
  if (rec.input_scratch > 0)  // online softmax's exp(x - m), the size of the input tile
    w.scratch_bytes +=
        rec.input_scratch * cx.ub_bytes(x.in[0], operand_region(cx.program(), x, x.in[0], full));
}

}  // namespace

OpVectorWork LoweringContext::op_vector_work(const ProgOp& x, const Dims& ce, int64_t n,
                                             const Block& full, std::vector<VecOp>& vec,
                                             const ProgStage* stage) const {
  const DType dt = tensor(x.out).dtype;
  const DType in_dt = tensor(x.in[0]).dtype;
  OpVectorWork w;
  w.scratch = x.info->scratch_tiles;
  // One source: no two reads to meet in a bank group (binary_work).
  const auto one_source = [&](VecClass c, DType t) {
    vec.push_back(VecOp{c, t, 1, 1, n});
    vec.back().bank_conflict = false;
  };
  switch (x.info->kind) {
    case OpKind::kUnary:
      for (VecClass c : x.info->instrs) one_source(c, dt);
      // The NZ scatter: a repeat's C0 blocks land c0_stride blocks apart, the compact layout's
      // stride the tile's rows (each C0 column holds one block per row).
      if (x.info->name == std::string_view(kNd2nzOp))
        vec.back().dst_block_stride =
            x.c0_stride > 0 ? x.c0_stride : n / std::max<int64_t>(1, ce.back());
      break;
    case OpKind::kBinary:
    case OpKind::kWhere:
      binary_work(*this, x, ce, full, vec, w);
      break;
    case OpKind::kCast:
      one_source(VecClass::kSimple, dtype_bytes(dt) > dtype_bytes(in_dt) ? dt : in_dt);
      break;
    case OpKind::kScan:
      scan_work(dt, x, ce, n, vec, w);
      break;
    case OpKind::kReduce:
      reduce_work(*this, x, ce, full, vec, w, stage);
      break;
    case OpKind::kRotateHalf:
    case OpKind::kTranspose:  // Ascend C Transpose: one pass over the tile
      one_source(VecClass::kSimple, dt);
      break;
    case OpKind::kGather:
    case OpKind::kMatmul:
    case OpKind::kLoad:  // a stage of its own (copy_stage.cpp)
      break;
  }
  return w;
}

// A GM copy of a vector tile as a recipe: which region of which tensor, and where its DmaOp sits
// in the kind, so another tile of the same extent takes the kind and recomputes only its copies
// (what the tile's origin changes: alignment, L2 blocks).
struct VectorTileCopy {
  enum class Region { kOperand, kOutput, kGatherRow };
  DmaDir dir = DmaDir::kRead;
  int t = 0;
  int op = 0;
  Region region = Region::kOperand;
  size_t step = 0, index = 0;

  Block region_of(const Program& p, const Block& b) const {
    const ProgOp& x = p.ops[static_cast<size_t>(op)];
    if (region == Region::kOutput) return output_region(p, x, b);
    Block r = operand_region(p, x, t, b);
    if (region == Region::kGatherRow) r.extent[0] = 1;
    return r;
  }
  std::vector<DmaOp>& slot(TaskKind& k) const {
    TileStep& st = k.steps[step];
    return dir == DmaDir::kRead ? st.loads : st.stores;
  }
};

// A tile's kind and its GM copies, in the order they were made (their accesses' order).
struct VectorKindTemplate {
  TaskKind kind;
  std::vector<VectorTileCopy> calls;
};

namespace {

// One tile of a fused vector stage on its way to a task kind: its loads, each op's instructions
// with the UB its tensors hold as they come and go, its stores. The tensors in UB (a key -1 - t:
// t's column spread by Brcb, for one op) keep their bytes' sum and the op at whose end each dies,
// so a stage of n ops costs n log n however many of them stay live.
class VectorTile {
 public:
  // share_inputs: own buffers shared by inputs whose lives do not overlap (place_inputs).
  VectorTile(const LoweringContext& cx, const ProgStage& s, const Block& b,
             std::vector<Access>& acc, bool share_inputs)
      : cx_(cx), s_(s), b_(b), acc_(acc), pooled_(cx.pooled()), share_(share_inputs && !pooled_) {
    k_.buffer_count = cx.spec().buffer_count;
    full_ = s.full_tile();
    // A tile cut short (a loop chunk's or the tensor's edge) keeps the full tile's buffers: its
    // label names both, so a UB message names the tile whose bytes it reports.
    k_.label = b.extent == full_.extent
                   ? fmt::format("{}{}", s.psg, format_dims(b.extent))
                   : fmt::format("{}{} of tile {}", s.psg, format_dims(b.extent),
                                 format_dims(full_.extent));
    // Vector ops run on the static tile where it exceeds the tensor (compute_extent), except
    // over a dim of size 1 (a kept reduced dim, a column of statistics), computed as 1.
    ce_ = compute_extent(s.shape, s.tile, b.extent);
    for (size_t d = 0; d < ce_.size(); ++d)
      if (s.shape[d] == 1) ce_[d] = 1;
    stores_.insert(s.stores.begin(), s.stores.end());
    for (int o = s.first; o <= s.last; ++o)
      for (int t : cx.op(o).in) last_use_[t] = o;
  }

  VectorKindTemplate build(const std::vector<int>& skip_stores,
                           const std::vector<int>& skip_loads) {
    load_inputs(skip_loads);
    for (int o = s_.first; o <= s_.last; ++o) run_op(o);
    store_outputs(skip_stores);
    // Pooled, the peak holds the iteration's own inputs and outputs too: what it needs beyond
    // their buffers (which multi-buffering copies for the iterations in flight) is temporary.
    if (pooled_) {
      int64_t fixed = 0;
      for (const Buffer& buf : k_.buffers) fixed += buf.bytes;
      peak_ = std::max<int64_t>(0, peak_ - fixed);
    }
    if (peak_ > 0) k_.buffers.push_back({"temporaries", peak_, BufferRole::kTemp, MemSpace::kUb});
    // The Triton-Ascend compiler's materialised broadcasts (a select's operand, two axes): a
    // vbrc result no copy fills or drains, held once (MarkMultiBuffer marks copies only).
    if (broadcasts_ > 0)
      k_.buffers.push_back({"broadcasts", broadcasts_, BufferRole::kTemp, MemSpace::kUb});
    k_.steps.push_back(st_);
    std::vector<DmaOp>& first = k_.steps.front().loads;  // the copies moved to later steps
    for (auto at = moved_.rbegin(); at != moved_.rend(); ++at)
      first.erase(first.begin() + static_cast<std::ptrdiff_t>(*at));
    for (VectorTileCopy& c : calls_)
      if (c.step == 0 && c.dir == DmaDir::kRead)
        c.index -= static_cast<size_t>(std::distance(moved_.begin(), moved_.lower_bound(c.index)));
    return {std::move(k_), std::move(calls_)};
  }

 private:
  bool is_stored(int t) const { return stores_.count(t) > 0; }
  void hold(int t, int64_t bytes) {
    const auto [it, fresh] = live_.emplace(t, bytes);
    live_bytes_ += fresh ? bytes : bytes - it->second;
    it->second = bytes;
  }
  void drop(int t) {
    if (const auto it = live_.find(t); it != live_.end()) {
      live_bytes_ -= it->second;
      live_.erase(it);
    }
  }
  // A tensor in UB dies at the end of the first op from `from` on that is its last use (or at
  // `from` when no later op uses it), unless it is pooled and stored: then it stays to the end.
  void schedule_death(int t, int from) {
    if (t >= 0 && pooled_ && is_stored(t)) return;
    const auto lu = t >= 0 ? last_use_.find(t) : last_use_.end();
    dies_after_[std::max(from, lu == last_use_.end() ? from : lu->second)].push_back(t);
  }
  // The source of op `x` (index o) that dies at it with the result's size (its buffer the
  // result may take); -1 if none.
  int in_place_donor(const ProgOp& x, int o, int64_t bytes) {
    for (int t : x.in) {
      // A resident input stays for the block's later sub-tiles: nothing is written over it.
      if (last_use_[t] != o || is_stored(t) || cx_.tensor(t).resident) continue;
      const auto held = live_.find(t);
      if (held != live_.end() && held->second == bytes) return t;
      // Own buffers: a loaded input's buffer of the same size.
      const auto input = holds_input_.find(t);
      if (!pooled_ && input != holds_input_.end() && k_.buffers[input->second].bytes == bytes)
        return t;
    }
    return -1;
  }

  // Makes copy `c` of this tile into the current step, recording it.
  void copy(VectorTileCopy c) {
    std::vector<DmaOp>& ops = c.dir == DmaDir::kRead ? st_.loads : st_.stores;
    c.step = k_.steps.size();
    c.index = ops.size();
    ops.push_back(cx_.dma(c.dir, c.t, c.region_of(cx_.program(), b_), acc_));
    calls_.push_back(c);
  }

  void load_inputs(const std::vector<int>& skip_loads) {
    for (int t : s_.loads) {
      if (std::find(skip_loads.begin(), skip_loads.end(), t) != skip_loads.end())
        continue;  // in UB already: no copy, its buffer is the caller's
      const ProgOp& r = cx_.reader(s_, t);
      const Block region = operand_region(cx_.program(), r, t, b_);
      const std::string& name = cx_.tensor(t).name;
      if (r.info->kind == OpKind::kGather && t == r.in[0]) {
        // One copy per gathered row (its address comes from the index).
        for (int64_t i = 0; i < b_.extent[0]; ++i)
          copy({DmaDir::kRead, t, r.index, VectorTileCopy::Region::kGatherRow});
        Block rows = operand_region(cx_.program(), r, t, full_);
        rows.extent[0] = full_.extent[0];
        k_.buffers.push_back({name, cx_.ub_bytes(t, rows), BufferRole::kInput, MemSpace::kUb});
        if (pooled_) hold(t, cx_.ub_bytes(t, rows));
        continue;
      }
      load_pos_[t] = st_.loads.size();
      copy({DmaDir::kRead, t, r.index, VectorTileCopy::Region::kOperand});
      const Block buffer = operand_region(cx_.program(), r, t, full_);
      // Triton-Ascend: a load the mask cuts (a ragged edge, or a tile past the tensor) first
      // fills its buffer with the load's `other` (AscendNPU-IR LoadOp::decomposeOperation: a
      // VBrc of the pad value, which reads nothing from UB), then MTE2 copies the valid part.
      const Block tile = operand_region(cx_.program(), r, t, Block{full_.origin, s_.tile});
      const bool filled = cx_.spec().triton && region.extent != tile.extent;
      if (filled) {
        st_.load_fill.push_back(
            VecOp{VecClass::kSimple, cx_.tensor(t).dtype, 1, 1, product(tile.extent)});
        st_.load_fill.back().bank_conflict = false;
      }
      // Own buffers hold what the copy brings (a broadcast column's scalars packed); a pool holds
      // tiles (every row a whole number of UB blocks).
      const bool broadcast = cx_.tensor(t).shape != iteration_shape(cx_.program(), r);
      const int64_t bytes =
          !pooled_ && broadcast ? cx_.copy_bytes(t, buffer) : cx_.ub_bytes(t, buffer);
      const bool resident = cx_.tensor(t).resident;
      if (share_ && !filled && !resident) {  // a filled load keeps its fill beside it
        unplaced_[t] = bytes;                // its buffer is chosen at its first reader
        continue;
      }
      k_.buffers.push_back(
          {name, bytes, resident ? BufferRole::kResident : BufferRole::kInput, MemSpace::kUb});
      holds_input_[t] = k_.buffers.size() - 1;
      if (pooled_) hold(t, bytes);
    }
    for (int t : s_.loads)
      if (live_.count(t)) schedule_death(t, s_.first);
  }

  // PyPTO's compiler writes an op's result over a source that dies at it when the sizes agree
  // (hicann/pypto passes/block_graph_pass/memory_reuse/merge_src_dst_buffer.h); a loaded input's
  // buffer passes to the result. With own buffers a temporary does the same (Ascend C's vector
  // instructions take dst == src; Triton-Ascend's PlanMemory writes results in place).
  void reuse_in_place(const ProgOp& x, int o, int64_t out_bytes, bool stored) {
    const int donor = in_place_donor(x, o, out_bytes);
    if (donor < 0) return;
    drop(donor);
    const auto held = holds_input_.find(donor);
    if (held == holds_input_.end()) return;
    const size_t buffer = held->second;
    holds_input_.erase(held);
    holds_input_[x.out] = buffer;
    // Named for every stored tensor it holds: "x+y" is x's buffer, where y is written.
    if (stored) {
      stored_in_place_.insert(x.out);
      k_.buffers[buffer].name += "+" + cx_.tensor(x.out).name;
    }
  }

  // A loaded input, at its first reader, takes the buffer of the same size of an earlier input
  // whose data died before: its copy then waits for the ops before it, a step of its own (an
  // Ascend C queue freed and allocated again; Triton-Ascend's PlanMemory shares buffers whose
  // lifetimes do not overlap). Else a buffer of its own, its copy with the tile's first.
  void place_inputs(const ProgOp& x) {
    for (int t : x.in) {
      const auto it = unplaced_.find(t);
      if (it == unplaced_.end()) continue;
      const auto reuse = std::find_if(freed_.begin(), freed_.end(), [&](size_t buf) {
        return k_.buffers[buf].bytes == it->second;
      });
      if (reuse == freed_.end()) {
        k_.buffers.push_back({cx_.tensor(t).name, it->second, BufferRole::kInput, MemSpace::kUb});
        holds_input_[t] = k_.buffers.size() - 1;
      } else {
        holds_input_[t] = *reuse;
        k_.buffers[*reuse].name += "/" + cx_.tensor(t).name;
        freed_.erase(reuse);
        TileStep& first = k_.steps.empty() ? st_ : k_.steps.front();
        const DmaOp load = first.loads[load_pos_.at(t)];
        moved_.insert(load_pos_.at(t));
        k_.steps.push_back(std::move(st_));
        st_ = TileStep{};
        st_.loads.push_back(load);
        for (VectorTileCopy& c : calls_)
          if (c.step == 0 && c.dir == DmaDir::kRead && c.index == load_pos_.at(t))
            c = VectorTileCopy{c.dir, c.t, c.op, c.region, k_.steps.size(), 0};
      }
      unplaced_.erase(it);
    }
  }
  // The loaded inputs' buffers whose data dies at op o are free for later inputs.
  void free_inputs(int o) {
    for (auto it = holds_input_.begin(); it != holds_input_.end();) {
      const auto lu = last_use_.find(it->first);
      if (lu != last_use_.end() && lu->second == o && !is_stored(it->first) &&
          !cx_.tensor(it->first).resident) {
        freed_.push_back(it->second);
        it = holds_input_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void run_op(int o) {
    const ProgOp& x = cx_.op(o);
    if (share_) place_inputs(x);
    // A column op (a statistic's epilogue) computes on the tile's column only.
    const Block ofull = op_block(cx_.program(), x, full_);
    Dims oce = ce_;
    for (size_t d = 0; d < oce.size() && d < ofull.extent.size(); ++d)
      if (ofull.extent[d] == 1) oce[d] = 1;
    const OpVectorWork w = cx_.op_vector_work(x, oce, product(oce), ofull, st_.vec, &s_);
    for (const auto& [t, bytes] : w.columns) {
      hold(-1 - t, bytes);
      schedule_death(-1 - t, o);
    }
    const bool stored = is_stored(x.out);
    const int64_t out_bytes = cx_.ub_bytes(x.out, output_region(cx_.program(), x, full_));
    const bool gather = x.info->kind == OpKind::kGather;
    if (pooled_ && !gather) {
      reuse_in_place(x, o, out_bytes, stored);
      hold(x.out, out_bytes);
    } else if (!gather) {
      // A temporary: in a dying loaded input's buffer, or in a dying temporary's place. The
      // Triton-Ascend compiler writes it over the temporary as the op runs (AscendNPU-IR
      // PlanMemory's in-place reuse: the result's life starts where the source's ends,
      // docs/developer_guide/features/PlanMemory); as written, the two are held for the op. A
      // stored result it writes over a loaded input that dies at it: the store drains that buffer.
      const int donor = in_place_donor(x, o, out_bytes);
      const bool into_input = donor >= 0 && holds_input_.count(donor) > 0;
      const bool triton = cx_.spec().triton;
      if (stored ? into_input && triton : into_input || (donor >= 0 && triton))
        reuse_in_place(x, o, out_bytes, stored);
      if (!stored && !into_input) hold(x.out, out_bytes);
    }
    // The result outlives the op that makes it: it dies at its last use, or one op later.
    if (live_.count(x.out)) schedule_death(x.out, o + 1);
    // Temporaries the size of the op's output, others, and what is live.
    peak_ = std::max(peak_, w.scratch * out_bytes + w.scratch_bytes + live_bytes_);
    broadcasts_ = std::max(broadcasts_, w.broadcast_tiles * out_bytes);
    if (const auto ending = dies_after_.find(o); ending != dies_after_.end()) {
      for (int t : ending->second) drop(t);
      dies_after_.erase(ending);
    }
    if (share_) free_inputs(o);
  }

  void store_outputs(const std::vector<int>& skip_stores) {
    for (int t : s_.stores) {
      const ProgOp& w = cx_.writer(s_, t);
      if (std::find(skip_stores.begin(), skip_stores.end(), t) == skip_stores.end())
        copy({DmaDir::kWrite, t, w.index, VectorTileCopy::Region::kOutput});
      if (w.info->kind != OpKind::kGather && !stored_in_place_.count(t))
        k_.buffers.push_back({cx_.tensor(t).name,
                              cx_.ub_bytes(t, output_region(cx_.program(), w, full_)),
                              BufferRole::kOutput, MemSpace::kUb});
    }
  }

  const LoweringContext& cx_;
  const ProgStage& s_;
  const Block& b_;
  std::vector<Access>& acc_;
  const bool pooled_;
  const bool share_;
  TaskKind k_;
  TileStep st_;
  Block full_;
  Dims ce_;
  std::set<int> stores_;
  std::map<int, int> last_use_;
  std::map<int, int64_t> live_;
  int64_t live_bytes_ = 0;
  std::map<int, std::vector<int>> dies_after_;  // op -> tensors that die at its end
  std::map<int, size_t> holds_input_;  // tensors whose data sits in a loaded input's buffer (its
                                       // index in k_.buffers)
  std::set<int> stored_in_place_;      // stored outputs written over a loaded input's buffer
  std::map<int, int64_t> unplaced_;    // share_: loaded inputs before their first reader
  std::vector<size_t> freed_;          // share_: input buffers whose data is dead
  std::map<int, size_t> load_pos_;     // a loaded input's copy among the first step's loads
  std::set<size_t> moved_;             // copies moved to a later step (a shared buffer)
  std::vector<VectorTileCopy> calls_;
  int64_t peak_ = 0;
  int64_t broadcasts_ = 0;  // Triton: the largest op's materialised broadcasts
};

// What decides a tile's kind besides its origin (VectorKindTemplates), into `key`.
void template_key(std::vector<int64_t>& key, const ProgStage& s, const Block& b,
                  const std::vector<int>& skip_stores, const std::vector<int>& skip_loads) {
  key.assign({s.first, s.last, s.reduce_first});
  const auto add = [&key](const auto& v) {
    key.push_back(static_cast<int64_t>(v.size()));
    key.insert(key.end(), v.begin(), v.end());
  };
  add(s.shape);
  add(s.tile);
  add(s.loads);
  add(s.stores);
  add(b.extent);
  add(skip_stores);
  add(skip_loads);
}

}  // namespace

// A stage's tile kinds by the stage's PSG, then by what else decides them (template_key).
struct VectorKindTemplates {
  std::map<std::string, std::map<std::vector<int64_t>, VectorKindTemplate>, std::less<>> by_stage;
  std::vector<int64_t> key;  // the key being looked up (its storage reused)
};

void LoweringContext::vector_kind_into(TaskKind& out, const ProgStage& s, const Block& b,
                                       std::vector<Access>& acc,
                                       const std::vector<int>& skip_stores,
                                       const std::vector<int>& skip_loads) {
  if (!vector_templates_) vector_templates_ = std::make_shared<VectorKindTemplates>();
  template_key(vector_templates_->key, s, b, skip_stores, skip_loads);
  auto& by_key = vector_templates_->by_stage[s.psg];
  const auto found = by_key.find(vector_templates_->key);
  if (found != by_key.end()) {
    out = found->second.kind;
    for (const VectorTileCopy& c : found->second.calls)
      c.slot(out)[c.index] = dma(c.dir, c.t, c.region_of(p_, b), acc);
    return;
  }
  std::vector<int64_t> key = vector_templates_->key;  // building may look up other kinds
  // Own buffers that do not fit: the inputs read late share the buffers of inputs dead by then
  // (what an author short of UB writes); if that does not fit either, the kernel as written is
  // the one refused.
  const auto fits = [&](const TaskKind& k) {
    try {
      plan_buffers(k, hw_);
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  const size_t before = acc.size();
  VectorKindTemplate t = VectorTile(*this, s, b, acc, false).build(skip_stores, skip_loads);
  if (!pooled_ && !fits(t.kind)) {
    std::vector<Access> shared_acc;
    VectorKindTemplate shared =
        VectorTile(*this, s, b, shared_acc, true).build(skip_stores, skip_loads);
    if (fits(shared.kind)) {
      acc.resize(before);
      acc.insert(acc.end(), shared_acc.begin(), shared_acc.end());
      t = std::move(shared);
    }
  }
  out = by_key.emplace(std::move(key), std::move(t)).first->second.kind;
}

void resident_loads(const LoweringContext& cx, const ProgStage& s, const Block& b, bool first,
                    std::map<int, Block>& held, std::vector<int>& skip) {
  if (first) held.clear();
  skip.clear();
  for (int t : s.loads) {
    if (!cx.tensor(t).resident) continue;
    const Block r = operand_region(cx.program(), cx.reader(s, t), t, b);
    if (first) {
      held[t] = r;
    } else if (held.at(t).origin != r.origin || held.at(t).extent != r.extent) {
      throw Error(fmt::format("{}: input '{}' is resident, but its region changes between the "
                              "sub-tiles of a block ({} then {}): a resident input is the "
                              "same for every sub-tile its block walks (a weight row)",
                              s.psg, cx.tensor(t).name, format_dims(held.at(t).origin),
                              format_dims(r.origin)),
                  ErrorKind::kInput);
    } else {
      skip.push_back(t);
    }
  }
}

void lower_vector_stage(LoweringContext& cx, StageRun& run) {
  // Resident inputs: the block's first sub-tile loads them; the others read them in UB.
  std::map<int, Block> held;
  std::vector<int> skip;
  lower_tiles(cx, run, CoreType::kAiv, [&](const Block& b, std::vector<Access>& acc, bool first) {
    resident_loads(cx, run.s, b, first, held, skip);
    return cx.vector_kind(run.s, b, acc, run.dropped, skip);
  });
}

}  // namespace tilesim
