// A tile program to a task graph. Each stage (kernels/program.hpp plan_stages) is one task per
// tile of its iteration space: a fused vector stage loads the tensors it reads from GM, runs every
// op's vector instructions on the tile in UB and stores what leaves the stage; transpose and
// gather are vector stages of their own; a matmul stage is one AIC task per C tile walking k.
// Under pypto the tiles of one loop chunk form a root function and a tile depends on the tasks
// that wrote the GM blocks it reads; under spmd each stage is one launch whose tiles are shared
// in contiguous runs over min(grid, tiles) blocks (kernels/block_regions.hpp's cut).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "kernels/lowering_support.hpp"
#include "kernels/program.hpp"
#include "kernels/reduce_family.hpp"
#include "model/dma_cost.hpp"
#include "model/error.hpp"
#include "model/ub_budget.hpp"

namespace tilesim {

namespace {

// Which tasks wrote which block of a tensor: the producing stage's pieces per tensor axis.
struct Producer {
  std::vector<std::vector<Piece>> pieces;
  std::vector<int32_t> tasks;  // row-major over pieces
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
    out.push_back(pr.tasks[static_cast<size_t>(flat)]);
    size_t a = at.size();
    while (a-- > 0) {
      if (++at[a] < range[a].second) break;
      at[a] = range[a].first;
    }
    if (a == static_cast<size_t>(-1)) break;
  }
}

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
  DmaOp dma(DmaDir dir, int t, const Block& r, std::vector<Access>& acc) const {
    DmaOp d = block_dma(dir, tensor(t).shape, r.origin, r.extent, tensor(t).dtype,
                        hw_.dma.gm_granule_bytes);
    if (spmd_) d = data_copy_pad(d);
    acc.push_back(
        {block_key(static_cast<uint32_t>(t), r.origin), d.bytes(), dir == DmaDir::kWrite});
    return d;
  }
  int64_t ub_bytes(int t, const Block& r) const {
    return ub_tile_bytes(r.extent, tensor(t).dtype, hw_);
  }
  // The op of the stage that reads (or writes) tensor t first.
  const ProgOp& reader(const ProgStage& s, int t) const {
    for (int o = s.first; o <= s.last; ++o)
      if (std::find(op(o).in.begin(), op(o).in.end(), t) != op(o).in.end()) return op(o);
    throw InternalError("program: a stage loads a tensor none of its ops reads");
  }
  const ProgOp& writer(const ProgStage& s, int t) const {
    for (int o = s.first; o <= s.last; ++o)
      if (op(o).out == t) return op(o);
    throw InternalError("program: a stage stores a tensor none of its ops writes");
  }
  void check_alignment(const ProgStage& s) const;
  TaskKind vector_kind(const ProgStage& s, const Block& b, std::vector<Access>& acc) const;
  TaskKind matmul_kind(const ProgStage& s, const Block& b, std::vector<Access>& acc) const;
  int kind_id(const ProgStage& s, const TaskKind& k);
  Producer producer_of(const ProgStage& s, const StageGrid& g, int t) const;

  const Program& p_;
  const KernelSpec& spec_;
  const Hardware& hw_;
  bool spmd_;
  LoweredKernel out_;
  KindCache kinds_;
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
    if (x.info->kind == ProgOpKind::kMatmul || x.info->kind == ProgOpKind::kGather) continue;
    std::vector<std::pair<int, Block>> touched;
    for (int t : x.in) touched.emplace_back(t, operand_region(p_, x, t, full));
    touched.emplace_back(x.out, output_region(p_, x, full));
    for (const auto& [t, r] : touched) {
      // Rows of one element (a broadcast column, a reduced last dim) are one UB block each.
      if (r.extent.back() == 1 && tensor(t).shape.back() == 1) continue;
      const int64_t bytes = dtype_bytes(tensor(t).dtype);
      const int64_t tile_last =
          s.tile[s.tile.size() - 1 -
                 (x.info->kind == ProgOpKind::kTranspose && t == x.in[0] ? 1 : 0)];
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

TaskKind ProgramLowering::vector_kind(const ProgStage& s, const Block& b,
                                      std::vector<Access>& acc) const {
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
  const int64_t n = product(ce);
  // PyPTO (pooled): every tensor of an iteration shares one UB pool by lifetime, loaded inputs
  // from the start, stored outputs to the end (its BufferPool, passes/block_graph_pass/
  // schedule_ooo/common/buffer_pool.h); the spmd compilers' placement is not modelled, so
  // there only temporaries share by lifetime.
  const bool pooled = !spmd_;
  std::map<int, int64_t> live;
  std::map<int, size_t> holds_input;  // tensors whose data sits in a loaded input's buffer (its
                                      // index in k.buffers)
  for (int t : s.loads) {
    const ProgOp& r = reader(s, t);
    const Block region = operand_region(p_, r, t, b);
    if (r.info->kind == ProgOpKind::kGather && t == r.in[0]) {
      // One copy per gathered row (its address comes from the index): rows x 1 burst.
      Block row = region;
      row.extent[0] = 1;
      for (int64_t i = 0; i < b.extent[0]; ++i) st.loads.push_back(dma(DmaDir::kRead, t, row, acc));
      Block rows = operand_region(p_, r, t, full);
      rows.extent[0] = full.extent[0];
      k.buffers.push_back({tensor(t).name, ub_bytes(t, rows), BufferRole::kInput, MemSpace::kUb});
      if (pooled) live[t] = ub_bytes(t, rows);
      continue;
    }
    st.loads.push_back(dma(DmaDir::kRead, t, region, acc));
    const int64_t bytes = ub_bytes(t, operand_region(p_, r, t, full));
    k.buffers.push_back({tensor(t).name, bytes, BufferRole::kInput, MemSpace::kUb});
    holds_input[t] = k.buffers.size() - 1;
    if (pooled) live[t] = bytes;
  }
  // Temporaries: tensors made and used inside the stage, plus each op's scratch, at their peak.
  std::map<int, int> last_use;
  for (int o = s.first; o <= s.last; ++o)
    for (int t : op(o).in) last_use[t] = o;
  int64_t peak = 0;
  std::set<int> stored_in_place;  // stored outputs written over a loaded input's buffer
  const auto is_stored = [&](int t) {
    return std::find(s.stores.begin(), s.stores.end(), t) != s.stores.end();
  };
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
    const DType dt = tensor(x.out).dtype;
    const DType in_dt = tensor(x.in[0]).dtype;
    switch (x.info->kind) {
      case ProgOpKind::kUnary:
        for (VecClass c : x.info->instrs) st.vec.push_back(VecOp{c, dt, 1, 1, n});
        break;
      case ProgOpKind::kBinary:
      case ProgOpKind::kWhere: {
        bool broadcast = false;
        for (int t : x.in) broadcast = broadcast || tensor(t).shape != s.shape;
        for (int t : x.in) {
          // A column operand: Brcb spreads each row's scalar over one UB block, as the
          // elementwise family does.
          const Dims& sh = tensor(t).shape;
          if (sh.size() == s.shape.size() && sh.back() == 1 && s.shape.back() != 1) {
            const int64_t scalars = product(operand_region(p_, x, t, full).extent);
            st.vec.push_back(
                VecOp{VecClass::kSimple, dt, 1, 1, scalars * hw_.ub.align_bytes / dtype_bytes(dt)});
            live[-1 - t] = scalars * hw_.ub.align_bytes;
          }
        }
        add_binary_vec(x.info->instrs.front(), dt, ce, broadcast, hw_, st.vec);
        break;
      }
      case ProgOpKind::kCast:
        st.vec.push_back(
            VecOp{VecClass::kSimple, dtype_bytes(dt) > dtype_bytes(in_dt) ? dt : in_dt, 1, 1, n});
        break;
      case ProgOpKind::kReduce: {
        const TileReduceGeometry g = reduce_geometry(ce, x.dims);
        if (x.reduce == ReduceKind::kProd && g.last_reduced) {
          // No in-row product instruction: rows of one element combined pairwise.
          st.vec.push_back(VecOp{VecClass::kReduceRows, in_dt, g.out_elems, g.rows, 1});
        } else {
          add_reduce_ops(g, in_dt, st.vec);
        }
        if (x.reduce == ReduceKind::kMean)
          add_elementwise(VecClass::kSimple, dt, g.out_elems, 1, st.vec);
        break;
      }
      case ProgOpKind::kRotateHalf:
        st.vec.push_back(VecOp{VecClass::kSimple, dt, 1, 1, n});
        break;
      case ProgOpKind::kTranspose:
        st.vec.push_back(VecOp{VecClass::kSimple, dt, 1, 1, n});  // Ascend C Transpose
        break;
      case ProgOpKind::kGather:
      case ProgOpKind::kMatmul:
        break;
    }
    const bool stored = is_stored(x.out);
    const int64_t out_bytes = ub_bytes(x.out, output_region(p_, x, full));
    const bool gather = x.info->kind == ProgOpKind::kGather;
    if (pooled) {
      // PyPTO's compiler writes an op's result over a source that dies at it when the sizes
      // agree (hicann/pypto passes/block_graph_pass/memory_reuse/merge_src_dst_buffer.h,
      // in-place reuse); a loaded input's buffer passes to the result.
      const int donor = gather ? -1 : in_place_donor(x, o, out_bytes);
      if (donor >= 0) {
        live.erase(donor);
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
      if (!gather) live[x.out] = out_bytes;
    } else if (!stored && !gather) {
      live[x.out] = out_bytes;
    }
    int64_t now = x.info->scratch_tiles * out_bytes;
    for (const auto& [t, bytes] : live) now += bytes;
    peak = std::max(peak, now);
    for (auto it = live.begin(); it != live.end();) {
      const bool dead =
          it->first < 0 || (last_use[it->first] <= o && !(pooled && is_stored(it->first)));
      it = dead && it->first != x.out ? live.erase(it) : std::next(it);
    }
  }
  for (int t : s.stores) {
    const ProgOp& w = writer(s, t);
    st.stores.push_back(dma(DmaDir::kWrite, t, output_region(p_, w, b), acc));
    if (w.info->kind != ProgOpKind::kGather && !stored_in_place.count(t))
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

TaskKind ProgramLowering::matmul_kind(const ProgStage& s, const Block& b,
                                      std::vector<Access>& acc) const {
  const ProgOp& x = op(s.first);
  const size_t r = s.shape.size();
  const int64_t tm = s.tile[r - 3], tk = s.tile[r - 2], tn = s.tile[r - 1];
  const DType dt = tensor(x.in[0]).dtype;
  const int64_t eb = dtype_bytes(dt);
  TaskKind k;
  k.core = CoreType::kAic;
  k.buffer_count = spec_.buffer_count;
  k.label = fmt::format("{}{}", s.psg, format_dims(b.extent));
  // A and B staged in L1 (rotating), their L0A/L0B tiles and the fp32 accumulator in L0C, as the
  // matmul family's pypto task.
  k.buffers = {{"A", tm * tk * eb, BufferRole::kInput, MemSpace::kL1},
               {"B", tk * tn * eb, BufferRole::kInput, MemSpace::kL1},
               {"A0", tm * tk * eb, BufferRole::kTemp, MemSpace::kL0a},
               {"B0", tk * tn * eb, BufferRole::kTemp, MemSpace::kL0b},
               {"C0", tm * tn * 4, BufferRole::kTemp, MemSpace::kL0c}};
  const int64_t kk = s.shape[r - 2];
  for (int64_t k0 = 0; k0 < kk; k0 += tk) {
    Block step = b;
    step.origin[r - 2] = k0;
    step.extent[r - 2] = std::min(tk, kk - k0);
    TileStep st;
    // A [.., m, k] and B [.., k, n]: this k step's slice of the tile's rows and columns.
    for (size_t i = 0; i < 2; ++i) {
      Block reg = operand_region(p_, x, x.in[i], b);
      const size_t kd = reg.origin.size() - (i == 0 ? 1 : 2);
      reg.origin[kd] = k0;
      reg.extent[kd] = step.extent[r - 2];
      st.loads.push_back(dma(DmaDir::kRead, x.in[i], reg, acc));
    }
    const int64_t batch = product(Dims(b.extent.begin(), b.extent.end() - 3));
    for (int64_t i = 0; i < batch; ++i)
      st.cube.push_back(CubeOp{dt, b.extent[r - 3], step.extent[r - 2], b.extent[r - 1]});
    append_step(k, st);
  }
  TileStep last = k.steps.back();  // C leaves L0C through the fixpipe with the last k step
  if (--k.steps.back().repeat == 0) k.steps.pop_back();
  last.repeat = 1;
  last.stores.push_back(dma(DmaDir::kWrite, x.out, output_region(p_, x, b), acc));
  k.steps.push_back(last);
  return k;
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
    if (w.info->kind == ProgOpKind::kMatmul && a == r - 2) continue;  // k
    const bool reduced =
        w.info->kind == ProgOpKind::kReduce &&
        std::find(w.dims.begin(), w.dims.end(), static_cast<int>(a)) != w.dims.end();
    if (reduced && !w.keepdim) continue;
    pr.pieces.push_back(reduced ? std::vector<Piece>{{0, 1}} : g.pieces[a]);
  }
  return pr;
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
    if (spmd_ && s.loop_count > 1)
      throw Error(
          fmt::format("{}: loop '{}' loop_count {} applies to the pypto partition; an spmd "
                      "launch shares each stage's tiles over partition.grid blocks",
                      where(op(s.first)), p_.loops[static_cast<size_t>(s.loop)].name, s.loop_count),
          ErrorKind::kLimits);
    check_alignment(s);
    // Root functions: one per loop chunk, shared by the consecutive stages of one loop; the
    // stages outside any loop form one root function between them.
    if (si == 0 || s.loop != stages[si - 1].loop) {
      base = next_root;
      next_root += static_cast<int32_t>(s.loop_count);
    }
    ProgStage grid_stage = s;
    if (s.kind == ProgOpKind::kMatmul)
      grid_stage.tile[s.tile.size() - 2] = s.shape[s.shape.size() - 2];
    const StageGrid grid = stage_grid(grid_stage);
    const int psg = g.add_psg(s.psg);
    std::vector<Producer> stores;
    for (int t : s.stores) stores.push_back(producer_of(s, grid, t));
    std::vector<Access> acc;
    auto make = [&](int64_t i) {
      TaskKind k = s.kind == ProgOpKind::kMatmul ? matmul_kind(s, grid.block(i), acc)
                                                 : vector_kind(s, grid.block(i), acc);
      k.psg = psg;
      return k;
    };
    const int64_t tiles = grid.count();
    if (!spmd_) {
      std::vector<int32_t> deps;
      for (int64_t i = 0; i < tiles; ++i) {
        acc.clear();
        const TaskKind k = make(i);
        const int32_t task = g.add_task(kind_id(s, k), base + grid.root(i));
        for (const Access& a : acc) g.add_access(task, a);
        deps.clear();
        const Block b = grid.block(i);
        for (int t : s.loads) {
          const auto it = produced.find(t);
          if (it != produced.end())
            overlapping(it->second, operand_region(p_, reader(s, t), t, b), deps);
        }
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        for (int32_t d : deps) g.add_edge(d, task);
        for (auto& pr : stores) pr.tasks.push_back(task);
      }
    } else {
      const int64_t used = std::min(spec_.grid, tiles);
      if (used < 1)
        throw Error(
            fmt::format("program: partition.grid {}: an spmd launch starts at least 1 block",
                        spec_.grid),
            ErrorKind::kLimits);
      for (int64_t blk = 0; blk < used; ++blk) {
        const BlockRange range = block_range(tiles, used, blk);
        acc.clear();
        TaskKind k;
        for (int64_t i = range.begin; i < range.end; ++i) {
          TaskKind t = make(i);
          if (k.steps.empty())
            k = std::move(t);
          else
            for (const TileStep& st : t.steps) append_step(k, st);
        }
        k.label = fmt::format("{}_block{}", s.psg, blk);
        const int32_t task = g.add_task(kind_id(s, k), 0, -1, static_cast<int32_t>(si));
        for (const Access& a : acc) g.add_access(task, a);
      }
    }
    for (size_t i = 0; i < s.stores.size(); ++i) produced[s.stores[i]] = std::move(stores[i]);
  }
  g.finalize();
  fill_common_diagnostics(spec_, hw_, out_);
  return std::move(out_);
}

}  // namespace

LoweredKernel lower_program(const Program& p, const KernelSpec& spec, const Hardware& hw) {
  return ProgramLowering(p, spec, hw).run();
}

}  // namespace tilesim
