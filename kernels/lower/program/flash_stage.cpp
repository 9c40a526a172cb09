// A flash stage (plan_stages' fuse_online): per query block, per key block, S = Q K^T on the AIC,
// the online statistic and P on the AIVs (a task per row piece), P V on the AIC and O's rescale
// on the AIVs, through GM workspaces of lead + 1 slots (the AIC runs `lead` key blocks ahead:
// partition.preload, at least 1). pypto: tasks the AICPU runtime dispatches; spmd: one mixed
// launch, partition.grid blocks of an AIC and its two AIVs, whose cores overlap their consecutive
// tasks as deep as the kernel preloads (KernelSpec::overlap_depth, TaskKind::overlap).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "kernels/lower/program/lowering_context.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

// fp32 work on n elements (the running statistics and O).
VecOp fp32(VecClass cls, int64_t n) {
  return VecOp{cls, DType::kFp32, 1, 1, n};
}

class FlashLowering {
 public:
  FlashLowering(LoweringContext& cx, StageRun& run) : cx_(cx), run_(run) {}

  void lower() {
    const int64_t chains = run_.grid.count() / keys_;
    const int64_t used = cx_.spmd() ? std::min(cx_.spec().grid, chains) : chains;
    for (int64_t blk = 0; blk < used; ++blk) {
      const BlockRange range =
          cx_.spmd() ? block_range(chains, used, blk) : BlockRange{blk, blk + 1};
      block_first_ = -1;
      blk_ = blk;
      for (int64_t c = range.begin; c < range.end; ++c) {
        const int32_t root = run_.base + run_.grid.root(c * keys_);
        // The AIC runs `lead` key blocks ahead (catlass's preload, Triton-Ascend's CV
        // pipelining, pto-isa's qkPreload): S of key block `step` before P V of block
        // step - lead, so with lead + 1 slots both cores keep busy. Under spmd each core runs
        // its tasks in this order.
        for (int64_t step = 0; step < keys_ + lead_; ++step) {
          if (step < keys_) qk_and_statistic(c, step, root);
          if (step >= lead_) pv_and_rescale(c, step - lead_, root);
        }
      }
    }
    if (cx_.spmd()) cx_.end_mixed_launch();
    for (size_t i = 0; i < s_.stores.size(); ++i)
      run_.stores[i] = s_.stores[i] == mm2_.out ? o_pr_ : l_pr_;
  }

 private:
  // The statistic's ops on a row piece of an S block, S read from its workspace (the first load).
  ProgStage statistic_stage() const {
    ProgStage vs;
    vs.first = s_.first + 1;
    vs.last = s_.online;
    vs.shape = s_.shape;
    vs.tile = vec_;
    vs.psg = s_.psg + ":online_softmax";
    vs.loads.push_back(mm1_.out);
    std::set<int> made{mm1_.out};
    for (int o = vs.first; o <= vs.last; ++o) {
      const ProgOp& x = cx_.op(o);
      vs.writer_op.emplace(x.out, o);
      for (int t : x.in) {
        vs.reader_op.emplace(t, o);
        if (!made.count(t) && std::find(vs.loads.begin(), vs.loads.end(), t) == vs.loads.end())
          vs.loads.push_back(t);
      }
      made.insert(x.out);
    }
    return vs;
  }
  // The producer of O or of the statistic (`last`: its last dim's extent): one piece per row
  // piece.
  Producer row_producer(int64_t last) const {
    const StageGrid& grid = run_.grid;
    Producer pr;
    pr.pieces.assign(grid.pieces.begin(), grid.pieces.begin() + static_cast<ptrdiff_t>(r_ - 2));
    std::vector<Piece>& qp = pr.pieces.emplace_back();
    for (const Piece& q : grid.pieces[r_ - 2])
      for (int64_t o = 0; o < q.size; o += rows_)
        qp.push_back({q.offset + o, std::min(rows_, q.size - o)});
    pr.pieces.push_back({{0, last}});
    return pr;
  }
  // The row pieces of a query block.
  std::vector<Block> pieces_of(const Block& b) const {
    std::vector<Block> ps;
    for (int64_t o = 0; o < b.extent[r_ - 2]; o += rows_) {
      Block x = b;
      x.origin[r_ - 2] += o;
      x.extent[r_ - 2] = std::min(rows_, b.extent[r_ - 2] - o);
      ps.push_back(x);
    }
    return ps;
  }
  // A cube access of a whole block as its row pieces' workspace slots (an AIV task reads or
  // writes one piece): the accesses `keys` (one per column part, when S drains an L0 tile at a
  // time) replaced by one per piece, bytes by rows.
  void by_pieces(const std::vector<uint64_t>& keys, const Block& b, uint32_t id, int64_t slot) {
    Access whole{0, 0, false};
    for (const uint64_t key : keys) {
      const auto it =
          std::find_if(acc_.begin(), acc_.end(), [&](const Access& x) { return x.block == key; });
      if (it == acc_.end()) throw InternalError("lower_flash: a cube access to replace is missing");
      whole.bytes += it->bytes;
      whole.write = it->write;
      acc_.erase(it);
    }
    for (const Block& pc : pieces_of(b))
      acc_.push_back(
          {ring(id, pc, slot), whole.bytes * pc.extent[r_ - 2] / b.extent[r_ - 2], whole.write});
  }
  // Slot `slot` of the GM workspace ring of tensor-like `t` that row piece pc passes through.
  // Under spmd a ring per block (one core), which the block's query blocks take in turn:
  // pto-isa's kernel addresses its FIFOs by the physical core's comm slot once there are more
  // query blocks than cores (include/pto/npu/a2a3/custom/TSyncCVID.hpp, kCvMaxCores), and a
  // Triton-Ascend mix kernel's workspace is per program. Under pypto a ring per query block, as
  // any core may run the next task.
  uint64_t ring(uint32_t t, const Block& pc, int64_t slot) const {
    if (!cx_.spmd()) return cx_.ring_key(t, Dims(pc.origin.begin(), pc.origin.end() - 1), slot);
    return cx_.ring_key(t, Dims{blk_, pc.origin[r_ - 2] - q_row_}, slot);
  }
  void deps_on(int t, const Block& region, std::vector<int32_t>& deps) const {
    if (const auto it = run_.produced.find(t); it != run_.produced.end())
      overlapping(it->second, region, deps);
  }
  DmaOp stat_dma(DmaDir dir, const Block& pc, int64_t slot) {
    return cx_.gm_dma(dir, cx_.tensor(lse_.out).shape, output_region(cx_.program(), lse_, pc),
                      DType::kFp32, ring(static_cast<uint32_t>(lse_.out), pc, slot), acc_);
  }
  // The AIV of a mixed block that takes row piece q: the first half of the rows on the first.
  static int lane_of(size_t q, const std::vector<Block>& pieces) {
    return 1 + static_cast<int>(2 * q / pieces.size());
  }
  // Every task carries the running state to the next of its chain. Under spmd a run of query
  // blocks is one mixed block's work (a Triton-Ascend mix kernel: a block per AIC, its rows split
  // over the cluster's two AIVs); the block's edges stay inside it (earlier stages are earlier
  // launches).
  int32_t emit(const ProgStage& st, TaskKind k, int ps, int32_t root, std::vector<int32_t> deps,
               int lane) {
    k.carries_state = true;
    if (!cx_.spmd()) return cx_.add_task(st, std::move(k), ps, root, acc_, deps);
    k.psg = ps;
    k.overlap = cx_.spec().overlap_depth();
    TaskGraph& g = cx_.graph();
    const int32_t task = g.add_task(cx_.kind_id(st, k), 0, -1, cx_.launch(), block_first_ >= 0);
    if (block_first_ < 0) block_first_ = task;
    g.tasks[static_cast<size_t>(task)].mix_lane = static_cast<int8_t>(lane);
    for (const Access& x : acc_) g.add_access(task, x);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (const int32_t d : deps)
      if (d >= block_first_) g.add_edge(d, task);
    return task;
  }

  // S = Q K^T of key block j on the AIC into S's slot j % 2, then the statistic and P on the
  // AIVs, a task per row piece.
  void qk_and_statistic(int64_t c, int64_t j, int32_t root) {
    const auto ju = static_cast<size_t>(j);
    const Block b = run_.grid.block(c * keys_ + j);
    q_row_ = b.origin[r_ - 2];
    acc_.clear();
    Block mb = b;  // [batch..., q, d_k, key]
    mb.origin.insert(mb.origin.end() - 1, 0);
    mb.extent.insert(mb.extent.end() - 1, dk_);
    const ProgTile& t1 = cx_.program().tiles[static_cast<size_t>(mm1_.tile)];
    // A preloading kernel's AIC keeps its query block in L1 across the key blocks (pto-isa's
    // compute_qk loads Q at the first key block only).
    // S leaves L0C an L0 tile's key columns at a time when its L0 tile is narrower than the key
    // block (pto-isa's CUBE_S1 sub-tiles of a TILE_S1 key block).
    TaskKind k = cx_.cube_task(mm1_, t1.dims, t1.l0, mb, cx_.tensor(mm1_.out).dtype,
                               fmt::format("{}:qk{}", s_.psg, format_dims(b.extent)), acc_,
                               !(resident_ && cx_.spec().preload > 0 && j > 0), true);
    const int64_t n0 = t1.l0.empty() ? b.extent[r_ - 1] : t1.l0[2];
    std::vector<uint64_t> parts;
    for (int64_t n = 0; n < b.extent[r_ - 1]; n += n0) {
      Dims c_origin = b.origin;
      c_origin.back() += n;
      parts.push_back(block_key(static_cast<uint32_t>(mm1_.out), c_origin));
    }
    by_pieces(parts, b, static_cast<uint32_t>(mm1_.out), j % slots_);
    std::vector<int32_t> deps;
    for (int t : mm1_.in) deps_on(t, operand_region(cx_.program(), mm1_, t, mb), deps);
    if (j >= slots_) deps.insert(deps.end(), v1_[ju - sl_].begin(), v1_[ju - sl_].end());
    c1_[ju] = emit(s_, std::move(k), run_.psg, root, deps, 0);
    v1_[ju].clear();
    const std::vector<Block> pieces = pieces_of(b);
    for (size_t q = 0; q < pieces.size(); ++q)
      v1_[ju].push_back(statistic_task(j, pieces[q], root, lane_of(q, pieces), q));
  }

  // The statistic and P of row piece pc of key block j.
  int32_t statistic_task(int64_t j, const Block& pc, int32_t root, int lane, size_t q) {
    const auto ju = static_cast<size_t>(j);
    acc_.clear();
    TaskKind vk = cx_.vector_kind(vs_, pc, acc_);
    acc_.front().block = ring(static_cast<uint32_t>(mm1_.out), pc, j % slots_);
    TileStep& st = vk.steps.back();
    // The running update on the rows: Max with the running max, alpha = exp(m_old - m) (Sub,
    // Exp), l = l * alpha + the tile's sum (Mul, Add).
    const int64_t prow = pc.extent[r_ - 2];
    for (VecClass cl : {VecClass::kSimple, VecClass::kSimple, VecClass::kExpLn, VecClass::kSimple,
                        VecClass::kSimple})
      st.vec.push_back(fp32(cl, prow));
    // P is the statistic's own exp(x - m); its casts are priced as they are written.
    Block full{Dims(r_, 0), vec_};
    for (size_t d = 0; d < r_; ++d) full.extent[d] = std::min(vec_[d], s_.shape[d]);
    const Dims ce = compute_extent(s_.shape, vec_, pc.extent);
    for (int o = s_.online + 3; o < s_.last; ++o)
      cx_.op_vector_work(cx_.op(o), ce, product(ce), full, st.vec);
    // pypto: m, l and alpha pass through GM, as any core may run the next task (resident_).
    if (j > 0 && !resident_)
      for (int64_t slot : {0, 1}) st.loads.push_back(stat_dma(DmaDir::kRead, pc, slot));
    if (!resident_)
      for (int64_t slot : {0, 1, 2}) st.stores.push_back(stat_dma(DmaDir::kWrite, pc, slot));
    const ProgTensor& p = cx_.tensor(pt_);
    st.stores.push_back(cx_.gm_dma(DmaDir::kWrite, p.shape, pc, p.dtype,
                                   ring(static_cast<uint32_t>(pt_), pc, j % slots_), acc_));
    vk.label = fmt::format("{}{}", vs_.psg, format_dims(pc.extent));
    vk.buffers.push_back({p.name, cx_.ub_bytes(pt_, full), BufferRole::kOutput, MemSpace::kUb});
    vk.buffers.push_back({"m_l_alpha", 3 * rows_ * align_, BufferRole::kTemp, MemSpace::kUb});
    if (resident_) vk.buffers.push_back({"o_acc", o_tile_, BufferRole::kTemp, MemSpace::kUb});
    std::vector<int32_t> vdeps = cx_.load_deps(vs_, pc, run_.produced);
    vdeps.push_back(c1_[ju]);
    if (j > 0) vdeps.push_back(v1_[ju - 1][q]);
    if (j >= slots_) vdeps.push_back(c2_[ju - sl_]);  // P's slot read by P V slots_ blocks back
    return emit(vs_, std::move(vk), psg_v_, root, vdeps, lane);
  }

  // P V of key block j on the AIC (A = P from its slot, C in fp32 into P V's slot), then O's
  // rescale on the AIVs.
  void pv_and_rescale(int64_t c, int64_t j, int32_t root) {
    const auto ju = static_cast<size_t>(j);
    const Block b = run_.grid.block(c * keys_ + j);
    q_row_ = b.origin[r_ - 2];
    acc_.clear();
    Block pb = b;
    pb.origin.push_back(0);
    pb.extent.push_back(dv_);
    const ProgTile& t2 = cx_.program().tiles[static_cast<size_t>(mm2_.tile)];
    TaskKind ck = cx_.cube_task(mm2_, t2.dims, t2.l0, pb, DType::kFp32,
                                fmt::format("{}:pv{}", s_.psg, format_dims(b.extent)), acc_);
    by_pieces({block_key(static_cast<uint32_t>(pt_), b.origin)}, b, static_cast<uint32_t>(pt_),
              j % slots_);
    Dims o_origin = b.origin;
    o_origin.back() = 0;
    by_pieces({block_key(static_cast<uint32_t>(mm2_.out), o_origin)}, b, pv_ws_, j % slots_);
    std::vector<int32_t> deps = v1_[ju];
    if (j >= slots_) deps.insert(deps.end(), v2_[ju - sl_].begin(), v2_[ju - sl_].end());
    deps_on(mm2_.in[1], operand_region(cx_.program(), mm2_, mm2_.in[1], pb), deps);
    c2_[ju] = emit(s_, std::move(ck), psg_pv_, root, deps, 0);
    v2_[ju].clear();
    const std::vector<Block> pieces = pieces_of(b);
    for (size_t q = 0; q < pieces.size(); ++q)
      v2_[ju].push_back(rescale_task(j, pieces[q], root, lane_of(q, pieces), q));
    if (j + 1 < keys_) return;
    for (const int32_t t : v2_[ju]) {
      o_pr_.tasks.push_back({t});
      l_pr_.tasks.push_back({t});
    }
  }

  // O = O * alpha + P V on row piece pc; after the last key block O / l written (cast when O is
  // not fp32), and lse = m + ln l when the stage stores it.
  int32_t rescale_task(int64_t j, const Block& pc, int32_t root, int lane, size_t q) {
    const auto ju = static_cast<size_t>(j);
    const int64_t prow = pc.extent[r_ - 2];
    const Dims& o_shape = cx_.tensor(mm2_.out).shape;
    Block ob = pc;
    ob.origin.back() = 0;
    ob.extent.back() = dv_;
    const int64_t on = prow * dv_;
    acc_.clear();
    TaskKind ok;
    ok.buffer_count = cx_.spec().buffer_count;
    ok.label = fmt::format("{}:rescale_o{}", s_.psg, format_dims(ob.extent));
    TileStep st;
    st.loads.push_back(
        cx_.gm_dma(DmaDir::kRead, o_shape, ob, DType::kFp32, ring(pv_ws_, pc, j % slots_), acc_));
    const auto column = [&](VecClass then) {  // Brcb a row statistic, then one op over O
      st.vec.push_back(fp32(VecClass::kSimple, prow * align_ / dtype_bytes(DType::kFp32)));
      st.vec.push_back(fp32(then, on));
    };
    const uint64_t o_key = ring(static_cast<uint32_t>(mm2_.out), pc, 0);
    if (j > 0) {
      if (!resident_) {
        st.loads.push_back(cx_.gm_dma(DmaDir::kRead, o_shape, ob, DType::kFp32, o_key, acc_));
        st.loads.push_back(stat_dma(DmaDir::kRead, pc, 2));
      }
      column(VecClass::kSimple);                      // O * alpha
      st.vec.push_back(fp32(VecClass::kSimple, on));  // + P V
    }
    if (j + 1 < keys_) {
      if (!resident_)
        st.stores.push_back(cx_.gm_dma(DmaDir::kWrite, o_shape, ob, DType::kFp32, o_key, acc_));
    } else {
      if (!resident_) st.loads.push_back(stat_dma(DmaDir::kRead, pc, 1));
      column(VecClass::kDiv);  // O / l
      if (cx_.tensor(mm2_.out).dtype != DType::kFp32) st.vec.push_back(fp32(VecClass::kSimple, on));
      st.stores.push_back(cx_.dma(DmaDir::kWrite, mm2_.out, ob, acc_));
      if (std::find(s_.stores.begin(), s_.stores.end(), lse_.out) != s_.stores.end()) {
        if (!resident_) st.loads.push_back(stat_dma(DmaDir::kRead, pc, 0));
        st.vec.push_back(fp32(VecClass::kExpLn, prow));   // ln l
        st.vec.push_back(fp32(VecClass::kSimple, prow));  // + m
        st.stores.push_back(
            cx_.dma(DmaDir::kWrite, lse_.out, output_region(cx_.program(), lse_, pc), acc_));
      }
    }
    ok.steps.push_back(st);
    ok.buffers = {{"pv", o_tile_, BufferRole::kInput, MemSpace::kUb},
                  {"o_acc", o_tile_, BufferRole::kTemp, MemSpace::kUb},
                  {"m_l_alpha", 3 * rows_ * align_, BufferRole::kTemp, MemSpace::kUb}};
    std::vector<int32_t> odeps{c2_[ju], v1_[ju][q]};
    if (j > 0) odeps.push_back(v2_[ju - 1][q]);
    return emit(s_, std::move(ok), psg_o_, root, odeps, lane);
  }

  LoweringContext& cx_;
  StageRun& run_;
  const ProgStage& s_ = run_.s;
  const ProgOp &mm1_ = cx_.op(s_.first), &lse_ = cx_.op(s_.online), &mm2_ = cx_.op(s_.last);
  const int pt_ = mm2_.in[0];  // P
  const size_t r_ = s_.shape.size();
  const int64_t keys_ = static_cast<int64_t>(run_.grid.pieces[r_ - 1].size());
  const int64_t dk_ = cx_.tensor(mm1_.in[0]).shape.back();
  const int64_t dv_ = cx_.tensor(mm2_.out).shape.back();
  // the statistic's tile [1..., rows, key block]
  const Dims& vec_ = cx_.program().tiles[static_cast<size_t>(lse_.tile)].dims;
  const int64_t rows_ = vec_[r_ - 2];
  const uint32_t pv_ws_ =
      static_cast<uint32_t>(cx_.program().tensors.size() + static_cast<size_t>(mm2_.out));
  const int64_t align_ = cx_.hw().ub.align_bytes;
  // Under spmd a block's AIV runs every task of its row pieces, so the running m, l, alpha and O
  // stay in its UB (Triton-Ascend keeps a loop's accumulators on chip); under pypto they go
  // through GM, as PyPTO's running tensors do.
  const bool resident_ = cx_.spmd();
  const int64_t lead_ = std::max(1, cx_.spec().preload);  // key blocks the AIC runs ahead
  const int64_t slots_ = lead_ + 1;                       // workspace slots
  const size_t sl_ = static_cast<size_t>(slots_);
  const int64_t o_tile_ = ub_tile_bytes(Dims{rows_, dv_}, DType::kFp32, cx_.hw());
  const ProgStage vs_ = statistic_stage();
  const int psg_v_ = cx_.graph().add_psg(vs_.psg);
  const int psg_pv_ = cx_.graph().add_psg(s_.psg + ":pv");
  const int psg_o_ = cx_.graph().add_psg(s_.psg + ":rescale_o");
  Producer o_pr_ = row_producer(dv_), l_pr_ = row_producer(1);
  std::vector<Access> acc_;
  // Per key block: the cube tasks (S, P V) and the AIV tasks (statistic, rescale) per row piece.
  std::vector<int32_t> c1_ = std::vector<int32_t>(static_cast<size_t>(keys_));
  std::vector<int32_t> c2_ = c1_;
  std::vector<std::vector<int32_t>> v1_ = std::vector<std::vector<int32_t>>(c1_.size());
  std::vector<std::vector<int32_t>> v2_ = v1_;
  int32_t block_first_ = -1;
  int64_t blk_ = 0;    // the spmd block being lowered
  int64_t q_row_ = 0;  // the first row of the query block being lowered
};

}  // namespace

void lower_flash_stage(LoweringContext& cx, StageRun& run) {
  FlashLowering(cx, run).lower();
}

}  // namespace tilesim
