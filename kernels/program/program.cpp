// The tile program IR: shape inference, the stage plan and the regions each tile
// touches. Lowering is in program_lowering.cpp, the Eigen execution in program_functional.cpp.
#include "kernels/program/program.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

std::string ProgOp::where() const {
  return fmt::format("op {} ({})", index, name);
}

namespace {

template <class T>
int index_named(const std::vector<T>& v, const std::string& n) {
  const auto it = std::find_if(v.begin(), v.end(), [&](const T& x) { return x.name == n; });
  return it == v.end() ? -1 : static_cast<int>(it - v.begin());
}

}  // namespace

int Program::tensor_id(const std::string& n) const {
  return index_named(tensors, n);
}

int Program::tile_id(const std::string& n) const {
  return index_named(tiles, n);
}

int Program::loop_id(const std::string& n) const {
  return index_named(loops, n);
}

Dims iteration_shape(const Program& p, const ProgOp& op) {
  if (op.info->kind == OpKind::kReduce) return p.tensors[static_cast<size_t>(op.in[0])].shape;
  if (op.info->kind == OpKind::kMatmul) {
    Dims s = p.tensors[static_cast<size_t>(op.out)].shape;
    s.insert(s.end() - 1, p.tensors[static_cast<size_t>(op.in[0])].shape.back());
    return s;  // [batch..., m, k, n]
  }
  return p.tensors[static_cast<size_t>(op.out)].shape;
}

int64_t StageGrid::count() const {
  int64_t n = 1;
  for (const auto& a : pieces) n *= static_cast<int64_t>(a.size());
  return n;
}

Dims StageGrid::piece_index(int64_t index) const {
  Dims at(pieces.size());
  for (size_t a = pieces.size(); a-- > 0;) {
    const auto n = static_cast<int64_t>(pieces[a].size());
    at[a] = index % n;
    index /= n;
  }
  return at;
}

Block StageGrid::block(int64_t index) const {
  const Dims at = piece_index(index);
  Block b{Dims(pieces.size()), Dims(pieces.size())};
  for (size_t a = 0; a < pieces.size(); ++a) {
    const Piece& p = pieces[a][static_cast<size_t>(at[a])];
    b.origin[a] = p.offset;
    b.extent[a] = p.size;
  }
  return b;
}

int32_t StageGrid::root(int64_t index) const {
  // The chunks of the loop axes' pieces, mixed radix.
  const Dims at = piece_index(index);
  int64_t root = 0;
  for (size_t l = 0; l < chunk_axes.size(); ++l)
    root = root * chunk_counts[l] +
           piece_chunk[l][static_cast<size_t>(at[static_cast<size_t>(chunk_axes[l])])];
  return static_cast<int32_t>(root);
}

Block ProgStage::full_tile() const {
  Block b{Dims(shape.size(), 0), tile};
  for (size_t d = 0; d < b.extent.size(); ++d) b.extent[d] = std::min(b.extent[d], shape[d]);
  return b;
}

StageGrid stage_grid(const ProgStage& s) {
  StageGrid g;
  g.chunk_axes = s.loop_axes;
  g.chunk_counts = s.loop_counts;
  g.piece_chunk.resize(s.loop_axes.size());
  for (size_t a = 0; a < s.shape.size(); ++a) {
    std::vector<Piece> ps;
    std::vector<Chunk> chunks = {{0, s.shape[a]}};
    const auto l = std::find(s.loop_axes.begin(), s.loop_axes.end(), static_cast<int>(a));
    const bool looped = l != s.loop_axes.end();
    const size_t li = static_cast<size_t>(l - s.loop_axes.begin());
    if (looped) {
      KernelSpec cut;
      cut.shape = {s.shape[a]};
      cut.loop_count = s.loop_counts[li];
      chunks = loop_chunks(cut, 0);
    }
    for (size_t c = 0; c < chunks.size(); ++c)
      for (int64_t o = 0; o < chunks[c].size; o += s.tile[a]) {
        ps.push_back({chunks[c].offset + o, std::min(s.tile[a], chunks[c].size - o)});
        if (looped) g.piece_chunk[li].push_back(static_cast<int32_t>(c));
      }
    g.pieces.push_back(std::move(ps));
  }
  return g;
}

std::vector<std::vector<int64_t>> split_chains(const Program& p, const ProgStage& s,
                                               const StageGrid& g) {
  const ProgOp& red = p.ops[static_cast<size_t>(s.last)];
  // Chain of a tile: its piece index on every kept axis, row-major; segment: on the reduced ones.
  std::vector<std::vector<int64_t>> chains;
  for (int64_t i = 0; i < g.count(); ++i) {
    const Dims idx = g.piece_index(i);
    int64_t chain = 0;
    for (size_t a = 0; a < idx.size(); ++a)
      if (std::find(red.dims.begin(), red.dims.end(), static_cast<int>(a)) == red.dims.end())
        chain = chain * static_cast<int64_t>(g.pieces[a].size()) + idx[a];
    if (chain >= static_cast<int64_t>(chains.size())) chains.resize(static_cast<size_t>(chain) + 1);
    chains[static_cast<size_t>(chain)].push_back(i);
  }
  return chains;
}

namespace {

std::string op_where(const Program& p, const ProgOp& op) {
  return (p.origin.empty() ? "" : p.origin + ": ") + op.where();
}

std::string tensor_text(const ProgTensor& t) {
  return fmt::format("'{}' {} {}", t.name, format_dims(t.shape), dtype_name(t.dtype));
}

// An op whose output element is a function of its operands' at the same position.
bool elementwise(OpKind k) {
  return k == OpKind::kUnary || k == OpKind::kBinary || k == OpKind::kWhere || k == OpKind::kCast;
}

bool fusable(OpKind k) {
  return elementwise(k) || k == OpKind::kReduce || k == OpKind::kRotateHalf || k == OpKind::kScan;
}

// Flash attention as one stage. A logsumexp with merge "online" fuses the matmul before its
// stage (S), its stage (the vector ops on S and the statistic), the stage after it (sub(x, lse),
// exp, casts: P) and the matmul after that (O = P V) into one stage whose S and P never leave
// the chip, one task chain per query block walking its key blocks
// (kernels/lower/program/flash_stage.cpp). Each condition the rescaling needs is checked here,
// with its error.
class OnlineFusion {
 public:
  OnlineFusion(const Program& p, std::vector<ProgStage>& stages)
      : p_(p), stages_(stages), last_reader_(p.tensors.size(), -1) {
    for (const ProgOp& x : p_.ops)
      for (int t : x.in) last_reader_[static_cast<size_t>(t)] = x.index;
  }

  void run() {
    for (size_t b = 0; b < stages_.size(); ++b) {
      if (!op(stages_[b].last).online) continue;
      fuse(b);
      b -= 1;  // the flash stage took stage b - 1's place
    }
  }

 private:
  const ProgOp& op(int i) const { return p_.ops[static_cast<size_t>(i)]; }
  const ProgTensor& tensor(int t) const { return p_.tensors[static_cast<size_t>(t)]; }
  [[noreturn]] void fail(const ProgOp& lse, const std::string& why,
                         ErrorKind kind = ErrorKind::kInput) const {
    throw Error(fmt::format("{}: merge \"online\" {}", op_where(p_, lse), why), kind);
  }
  static constexpr const char* kChain = "sub(x, lse) -> exp -> matmul(p, v) after it";

  // The statistic of stage b reduces S's key axis, right after S = Q K^T, and its stage reads S.
  void check_statistic(size_t b, const ProgOp& lse, int r) const {
    if (lse.dims != std::vector<int>{r - 1} || !lse.keepdim)
      fail(lse,
           fmt::format("reduces the last dim of S [..., q, k] (the key axis) with keepdim true; "
                       "this one reduces dims [{}] keepdim {}",
                       fmt::join(lse.dims, ", "), lse.keepdim));
    if (b == 0 || stages_[b - 1].kind != OpKind::kMatmul || stages_[b - 1].online >= 0)
      fail(lse,
           "needs S from a matmul right before its stage (S = Q K^T, then the vector ops on S)");
    const ProgOp& mm1 = op(stages_[b - 1].first);
    if (mm1.in.size() > 2)
      fail(lse, fmt::format("needs S from a matmul without a bias; {} has one", mm1.where()));
    bool reads_s = false;
    for (int o = stages_[b].first; o <= stages_[b].last; ++o)
      for (int t : op(o).in) reads_s = reads_s || t == mm1.out;
    if (!reads_s)
      fail(lse, fmt::format("needs its stage to read S ('{}', the output of {})",
                            tensor(mm1.out).name, mm1.where()));
    if (b + 2 >= stages_.size())
      fail(lse, std::string("needs ") + kChain + "; the program ends first");
  }

  // The stage after it is sub(x, lse) (x S or made from it in the statistic's stage), exp and
  // casts of P; the one after that a matmul with P as A. Returns that matmul.
  const ProgOp& check_chain(size_t b, const ProgOp& lse, const ProgOp& mm1) const {
    const ProgStage& c = stages_[b + 1];
    const ProgStage& d = stages_[b + 2];
    const ProgOp& sub = op(c.first);
    const bool made_here =
        sub.in.size() == 2 && sub.in[0] != lse.out && (sub.in[0] == mm1.out || [&] {
          for (int o = stages_[b].first; o < stages_[b].last; ++o)
            if (op(o).out == sub.in[0]) return true;
          return false;
        }());
    if (c.kind != OpKind::kUnary || sub.name != "sub" || sub.scalar || !made_here ||
        sub.in[1] != lse.out)
      fail(lse, fmt::format("needs {}, the first with x S or a tensor made from it in the "
                            "statistic's stage; found {}",
                            kChain, sub.where()));
    int last = sub.out;
    for (int o = c.first + 1; o <= c.last; ++o) {
      const ProgOp& x = op(o);
      const bool ok = x.in.size() == 1 && x.in[0] == last &&
                      (o == c.first + 1 ? x.name == "exp" : x.info->kind == OpKind::kCast);
      if (!ok)
        fail(lse, fmt::format("needs {} (casts of p allowed); found {} after {}", kChain, x.where(),
                              op(o - 1).where()));
      last = x.out;
    }
    if (c.first == c.last)
      fail(lse, fmt::format("needs {}; the stage after it ends at {}", kChain, sub.where()));
    const ProgOp& mm2 = op(d.first);
    if (d.kind != OpKind::kMatmul || mm2.in[0] != last || mm2.in.size() > 2)
      fail(lse, fmt::format("needs {} with p as A (and no bias); found {}", kChain, mm2.where()));
    return mm2;
  }

  // S, P and O in one loop region, whose loops cut batch axes only.
  void check_loops(size_t b, const ProgOp& lse, int r) const {
    for (size_t k = b - 1; k <= b + 2; ++k) {
      if (stages_[k].loop != stages_[b].loop)
        fail(lse, fmt::format("needs S, P and O in one loop region ({} is in another)",
                              op(stages_[k].first).where()));
      for (int axis : stages_[k].loop_axes)
        if (axis >= r - 2)
          fail(lse,
               fmt::format("cuts query and key blocks itself; its loop cuts axis {} (loop over a "
                           "batch axis)",
                           axis),
               ErrorKind::kLimits);
    }
  }

  // The blocks: the query block is S's tm, the key block its tn; the vector tile is a row piece
  // of one S block; P V takes the whole key block and the whole head dim.
  void check_tiles(size_t b, const ProgOp& lse, const ProgOp& mm1, const ProgOp& mm2, int r) const {
    const Dims& t1 = p_.tiles[static_cast<size_t>(mm1.tile)].dims;
    const Dims& t2 = p_.tiles[static_cast<size_t>(mm2.tile)].dims;
    const Dims& vec = stages_[b].tile;
    const int64_t bq = t1[0], bk = t1[2];
    const int64_t dv = tensor(mm2.out).shape.back();
    if (stages_[b + 1].tile != vec)
      fail(lse, fmt::format("needs one vec tile for the statistic and for p ({} and {})",
                            format_dims(vec), format_dims(stages_[b + 1].tile)));
    bool batch_ones = true;
    for (int a = 0; a < r - 2; ++a) batch_ones = batch_ones && vec[static_cast<size_t>(a)] == 1;
    if (!batch_ones || vec.back() != bk || bq % vec[static_cast<size_t>(r - 2)] != 0)
      fail(lse,
           fmt::format("needs the vec tile [1..., rows, {}] (the key block, S's cube tile tn {}; "
                       "rows dividing the query block {}); it is {}",
                       bk, bk, bq, format_dims(vec)),
           ErrorKind::kLimits);
    if (t2[0] != bq || t2[1] != bk || t2[2] != dv)
      fail(lse,
           fmt::format("matmul shapes do not chain: P V's cube tile must be [{}, {}, {}] (S's "
                       "query block, its key block, the whole head dim {} of '{}'); it is {}",
                       bq, bk, dv, dv, tensor(mm2.out).name, format_dims(t2)),
           ErrorKind::kLimits);
  }

  // S and P stay on chip: nothing between S and P V is an output or read after P V (the
  // statistic itself may be kept: a backward pass reads it).
  void check_on_chip(const ProgOp& lse, const ProgOp& mm1, const ProgOp& mm2) const {
    for (int o = mm1.index; o < mm2.index; ++o) {
      const int t = op(o).out;
      if (t == lse.out) continue;
      // A tensor is read only after it is made, so a reader outside is one past P V.
      const int reader = last_reader_[static_cast<size_t>(t)];
      if (tensor(t).output || reader > mm2.index)
        fail(lse,
             fmt::format("keeps S and P on chip: '{}' ({}) is {}", tensor(t).name, op(o).where(),
                         tensor(t).output ? "a program output" : "read by " + op(reader).where()));
    }
  }

  // Stages b - 1 .. b + 2 become one flash stage, at b - 1.
  void fuse(size_t b) {
    const ProgOp& lse = op(stages_[b].last);
    const auto r = static_cast<int>(tensor(lse.in[0]).shape.size());
    check_statistic(b, lse, r);
    const ProgOp& mm1 = op(stages_[b - 1].first);
    const ProgOp& mm2 = check_chain(b, lse, mm1);
    check_loops(b, lse, r);
    check_tiles(b, lse, mm1, mm2, r);
    check_on_chip(lse, mm1, mm2);
    const Dims& t1 = p_.tiles[static_cast<size_t>(mm1.tile)].dims;
    ProgStage& f = stages_[b - 1];
    f.last = mm2.index;
    f.shape = tensor(mm1.out).shape;
    f.tile = Dims(static_cast<size_t>(r - 2), 1);
    f.tile.push_back(t1[0]);
    f.tile.push_back(t1[2]);
    f.split = false;
    f.online = lse.index;
    const auto at = stages_.begin() + static_cast<std::ptrdiff_t>(b);
    stages_.erase(at, at + 3);
  }

  const Program& p_;
  std::vector<ProgStage>& stages_;
  std::vector<int> last_reader_;  // per tensor: the last op reading it (-1: none)
};

void fuse_online(const Program& p, std::vector<ProgStage>& stages) {
  OnlineFusion(p, stages).run();
}

// The op's tile against the op: in force, of the right rank, a cube tile whose L1 extents hold
// whole L0 tiles, a splitting reduction's merge possible for its statistic, rotate_half's halves
// in one tile. Returns whether the tile splits a reduced (or, for a cumsum, the scanned) dim.
bool check_op_tile(const Program& p, const ProgOp& op, const Dims& shape) {
  const OpKind kind = op.info->kind;
  const std::string where = op_where(p, op);
  if (op.tile < 0)
    throw Error(
        fmt::format("{}: no {} tile shapes in force (add a {} entry before it)", where,
                    kind == OpKind::kMatmul ? "cube" : "vec",
                    kind == OpKind::kMatmul ? "set_cube_tile_shapes" : "set_vec_tile_shapes"),
        ErrorKind::kInput);
  const ProgTile& tile = p.tiles[static_cast<size_t>(op.tile)];
  const ProgTensor& first = p.tensors[static_cast<size_t>(op.in[0])];
  if (kind == OpKind::kMatmul) {
    if (tile.dims.size() != 3)
      throw Error(fmt::format("{}: cube tile '{}' {} must be [tm, tk, tn]", where, tile.name,
                              format_dims(tile.dims)),
                  ErrorKind::kInput);
    // (The matmul family's catlass tiling clips its last L0 tile of each extent, and an L0 tile
    // past the L1 tile to it; its pypto tiling checks kL1 % kL0 itself.)
    for (size_t d = 0; d < tile.l0.size() && !p.built_in; ++d)
      if (tile.dims[d] % tile.l0[d] != 0)
        throw Error(
            fmt::format("{}: cube tile '{}': its L1 tile {} is not a multiple of its L0 "
                        "tile {} in {} (each L1 extent holds whole L0 tiles)",
                        where, tile.name, format_dims(tile.dims), format_dims(tile.l0), "mkn"[d]),
            ErrorKind::kLimits);
  } else if (tile.dims.size() != shape.size()) {
    throw Error(
        fmt::format(
            "{}: tile '{}' {} has rank {} but {} has rank {} (a vec tile gives "
            "one extent per dim of the op's {})",
            where, tile.name, format_dims(tile.dims), tile.dims.size(),
            tensor_text(kind == OpKind::kReduce ? first : p.tensors[static_cast<size_t>(op.out)]),
            shape.size(), kind == OpKind::kReduce ? "input" : "output"),
        ErrorKind::kInput);
  }
  bool splits = false;
  if (kind == OpKind::kReduce)
    for (int d : op.dims)
      splits = splits || tile.dims[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)];
  if (splits && op.merge == MergeMode::kAtomic && !op.info->reduction->merges_atomically)
    throw Error(fmt::format("{}: tile '{}' {} splits a reduced dim of {} and merge \"atomic\" "
                            "has no {} (atomic DMA adds, maxes or mins; use in_task, chain or "
                            "tree)",
                            where, tile.name, format_dims(tile.dims), tensor_text(first),
                            op.info->reduction->partial),
                ErrorKind::kInput);
  // A cumsum over a split dim carries each tile's last line into the next (and ends its stage).
  if (kind == OpKind::kScan)
    splits = tile.dims[static_cast<size_t>(op.dims[0])] < shape[static_cast<size_t>(op.dims[0])];
  // A tile splitting the last dim reads its columns from the other half (operand_region): it
  // must not straddle the halves' boundary, as PyPTO's concat of the two halves' tiles does not.
  if (kind == OpKind::kRotateHalf && tile.dims.back() < shape.back() &&
      (shape.back() / 2) % tile.dims.back() != 0)
    throw Error(fmt::format("{}: tile '{}' {} splits the last dim of {} ({}) across its halves, "
                            "which rotate_half swaps (set the last tile dim to a divisor of {} "
                            "or >= {})",
                            where, tile.name, format_dims(tile.dims), tensor_text(first),
                            shape.back(), shape.back() / 2, shape.back()),
                ErrorKind::kLimits);
  return splits;
}

// The op's loop nest, outermost first (each loop's axis and count), each loop checked against
// the op: an axis of its iteration space (a matmul's output rows), not one it reduces, scans or
// transposes, a count within the axis.
void loop_nest(const Program& p, const ProgOp& op, const Dims& shape, std::vector<int>& axes,
               std::vector<int64_t>& counts) {
  const OpKind kind = op.info->kind;
  const std::string where = op_where(p, op);
  const ProgTensor& first = p.tensors[static_cast<size_t>(op.in[0])];
  for (int li = op.loop; li >= 0; li = p.loops[static_cast<size_t>(li)].parent) {
    const ProgLoop& l = p.loops[static_cast<size_t>(li)];
    axes.insert(axes.begin(), l.axis);
    counts.insert(counts.begin(), l.loop_count);
    const Dims& space =
        kind == OpKind::kMatmul ? p.tensors[static_cast<size_t>(op.out)].shape : shape;
    if (l.axis >= static_cast<int>(space.size()) ||
        (kind == OpKind::kMatmul && l.axis >= static_cast<int>(space.size()) - 1))
      throw Error(fmt::format("{}: loop '{}' axis {} is not an axis of its {} {}", where, l.name,
                              l.axis, kind == OpKind::kMatmul ? "output rows" : "iteration space",
                              format_dims(space)),
                  ErrorKind::kInput);
    if ((kind == OpKind::kReduce || kind == OpKind::kScan) &&
        std::find(op.dims.begin(), op.dims.end(), l.axis) != op.dims.end())
      throw Error(fmt::format("{}: loop '{}' cuts axis {} of {}, which this op reduces or "
                              "scans (loop over another axis)",
                              where, l.name, l.axis, tensor_text(first)),
                  ErrorKind::kLimits);
    if (kind == OpKind::kTranspose && l.axis >= static_cast<int>(shape.size()) - 2)
      throw Error(fmt::format("{}: loop '{}' axis {} is one of the two dims the transpose swaps "
                              "(loop over a batch axis)",
                              where, l.name, l.axis),
                  ErrorKind::kInput);
    check_loop_count(fmt::format("{}: loop '{}' ", where, l.name), l.loop_count, l.axis,
                     space[static_cast<size_t>(l.axis)]);
  }
}

// A split reduction joins the split stage before it (its statistics, ProgStage::reduce_first)
// when it reduces the same dims of the same iteration space the same way and reads none of the
// statistics before it, which are not whole until the stage's partials merge.
bool joins_statistics(const Program& p, const ProgStage& cur, const ProgOp& op, const Dims& shape,
                      bool splits) {
  const ProgOp& last = p.ops[static_cast<size_t>(cur.last)];
  if (op.info->kind != OpKind::kReduce || !splits || last.info->kind != OpKind::kReduce ||
      shape != cur.shape)
    return false;
  if (op.dims != last.dims || op.keepdim != last.keepdim || op.merge != last.merge ||
      op.spmd_rows != last.spmd_rows || op.apply_in_task != last.apply_in_task || op.online ||
      last.online ||
      p.tensors[static_cast<size_t>(op.out)].dtype !=
          p.tensors[static_cast<size_t>(last.out)].dtype)
    return false;
  for (int o = cur.reduce_first; o <= cur.last; ++o)
    for (int t : op.in)
      if (p.ops[static_cast<size_t>(o)].out == t) return false;
  return true;
}

// A vector op joins the stage before it under the same tile and loop when its iteration space is
// the stage's, or a column of it (1 where the tile covers the stage's dim): a reduction whose tile
// covers its reduced dims and the ops that use its result stay in one task per tile, as PyPTO's
// partitioner keeps them in one subgraph (hicann/pypto docs/tutorials/debug/performance.md:
// RMSNorm with the tile covering the row merges the subgraphs before and after its reduction, no
// GM transfer between them). A split reduction ends its stage (its partials merge across tiles),
// and so does a flash statistic (merge "online", fuse_online); a splitting reduction starts a
// stage after another reduction, but under Program::recompute_broadcasts (spmd and ascendc, a
// kernel's code per sub-tile), where it joins the covered reductions before it.
//
// Under Program::recompute_broadcasts an elementwise op not in `once` also joins when its space is
// 1 where the stage's is larger and the tile walks it (each tile computes it again), and a stage
// of such ops widens to the space of an op that follows it (a weight's cast written before the
// row loop's ops).
bool joins_stage(const Program& p, const ProgStage* cur, const ProgOp& op, const Dims& shape,
                 bool splits, const std::vector<bool>& once, const std::vector<int>& writer) {
  const OpKind kind = op.info->kind;
  if (!cur || cur->kind != OpKind::kUnary || !fusable(kind)) return false;
  // An op reading an alias (view / reshape) of a tensor made in this stage reads it from GM
  // after the stage stores it: a stage of its own (the stage's tiles cover the tensor, not the
  // alias).
  for (int t : op.in)
    for (int r = p.tensors[static_cast<size_t>(t)].alias_of; r >= 0;
         r = p.tensors[static_cast<size_t>(r)].alias_of)
      if (const int w = writer[static_cast<size_t>(r)]; w >= cur->first && w <= cur->last)
        return false;
  if (cur->split)
    return p.ops[static_cast<size_t>(cur->last)].tile == op.tile && cur->loop == op.loop &&
           joins_statistics(p, *cur, op, shape, splits);
  const ProgOp& prev = p.ops[static_cast<size_t>(cur->last)];
  if ((prev.info->kind == OpKind::kReduce && prev.online) || cur->loop != op.loop) return false;
  if (shape.size() != cur->shape.size()) return false;
  const auto recomputed = [&](const ProgOp& o) {
    return p.recompute_broadcasts && elementwise(o.info->kind) &&
           !once[static_cast<size_t>(o.index)];
  };
  bool stage_recomputed = true;
  for (int o = cur->first; o <= cur->last && stage_recomputed; ++o)
    stage_recomputed = recomputed(p.ops[static_cast<size_t>(o)]);
  // Another tile joins only where it differs in dims a recomputed op's space (or a widening
  // stage's) is 1 along, which its tile does not cut.
  const Dims& tile = p.tiles[static_cast<size_t>(op.tile)].dims;
  if (prev.tile != op.tile && tile.size() != cur->tile.size()) return false;
  bool other_tile = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool free = (shape[d] == 1 && recomputed(op)) || (cur->shape[d] == 1 && stage_recomputed);
    if (prev.tile != op.tile && tile[d] != cur->tile[d]) {
      if (!free) return false;
      other_tile = true;
    }
    if (shape[d] != cur->shape[d] && !(shape[d] == 1 && cur->tile[d] >= cur->shape[d]) && !free)
      return false;
  }
  if (prev.tile != op.tile && !other_tile) return false;
  // A splitting reduction after another: a reduction the tile covers (a row's statistic) stays
  // in the tile's task with it, as a backward norm's row sums and its column sum of the rows it
  // walks (dW) in one loop; one reading a stage's own split reduction cannot (ended above).
  if (kind == OpKind::kReduce && splits)
    for (int o = cur->first; o <= cur->last; ++o)
      if (p.ops[static_cast<size_t>(o)].info->kind == OpKind::kReduce && !p.recompute_broadcasts)
        return false;
  return true;
}

// A stage of its own for `op` under its tile (a matmul's [batch..., m, k, n] tiled
// [1..., tm, tk, tn]).
ProgStage new_stage(const Program& p, const ProgOp& op, const Dims& shape) {
  const ProgTile& tile = p.tiles[static_cast<size_t>(op.tile)];
  ProgStage s;
  s.first = s.last = s.reduce_first = op.index;
  s.kind = fusable(op.info->kind) ? OpKind::kUnary : op.info->kind;
  s.shape = shape;
  s.tile = tile.dims;
  if (op.info->kind == OpKind::kMatmul) {
    Dims t(shape.size() - 3, 1);
    t.insert(t.end(), tile.dims.begin(), tile.dims.end());
    s.tile = t;
    s.l0 = tile.l0;
    const Dims& b = op.mm.l2_block;
    if (!b.empty()) {
      const size_t r = shape.size();
      s.views = ceil_div(ceil_div(shape[r - 3], tile.dims[0]), b[0]) *
                ceil_div(ceil_div(shape[r - 1], tile.dims[2]), b[1]);
    }
  }
  s.loop = op.loop;
  return s;
}

// What each stage reads from GM and writes to GM (a tensor made inside the stage stays in UB
// unless it is an output or a later stage reads it), and its PSG name.
void plan_gm_traffic(const Program& p, std::vector<ProgStage>& stages) {
  std::vector<int> made_in(p.tensors.size(), -1);
  for (size_t si = 0; si < stages.size(); ++si)
    for (int o = stages[si].first; o <= stages[si].last; ++o)
      made_in[static_cast<size_t>(p.ops[static_cast<size_t>(o)].out)] = static_cast<int>(si);
  std::vector<bool> read_later(p.tensors.size(), false);
  std::vector<int> loaded_by(p.tensors.size(), -1);  // the stage that loads it (latest planned)
  for (size_t si = stages.size(); si-- > 0;) {
    ProgStage& s = stages[si];
    std::vector<std::string> names;
    for (int o = s.first; o <= s.last; ++o) {
      const ProgOp& op = p.ops[static_cast<size_t>(o)];
      names.push_back(op.name);
      s.writer_op.emplace(op.out, o);
      for (int t : op.in) {
        s.reader_op.emplace(t, o);
        if (made_in[static_cast<size_t>(t)] != static_cast<int>(si) &&
            loaded_by[static_cast<size_t>(t)] != static_cast<int>(si)) {
          loaded_by[static_cast<size_t>(t)] = static_cast<int>(si);
          s.loads.push_back(t);
        }
      }
    }
    for (int o = s.first; o <= s.last; ++o) {
      const int t = p.ops[static_cast<size_t>(o)].out;
      if (p.tensors[static_cast<size_t>(t)].output || read_later[static_cast<size_t>(t)])
        s.stores.push_back(t);
    }
    for (int t : s.loads)  // an alias is read from the bytes of the tensor it names
      for (int r = t; r >= 0; r = p.tensors[static_cast<size_t>(r)].alias_of)
        read_later[static_cast<size_t>(r)] = true;
    // A long fused stage is named by its ends: a PSG name stays one readable line.
    constexpr size_t kNamedOps = 16;
    if (names.size() > kNamedOps) {
      const std::string last = names.back();
      const size_t ops = names.size();
      names.resize(kNamedOps - 1);
      names.push_back(fmt::format("...({} ops)...", ops - kNamedOps));
      names.push_back(last);
    }
    const ProgOp& opener = p.ops[static_cast<size_t>(s.first)];
    s.psg = opener.psg.empty() ? fmt::format("stage{}:{}", si, fmt::join(names, "+")) : opener.psg;
  }
}

}  // namespace

std::vector<ProgStage> plan_stages(const Program& p) {
  // Ops that run once, in a stage of their own: every op, until recomputing one in each tile of
  // its users' stage would write its result to GM from every tile (Program::recompute_broadcasts).
  std::vector<bool> once(p.ops.size(), false);
  std::vector<int> writer(p.tensors.size(), -1);  // per tensor: the op writing it (-1: none)
  for (const ProgOp& op : p.ops) writer[static_cast<size_t>(op.out)] = op.index;
  for (;;) {
    std::vector<ProgStage> stages;
    for (const ProgOp& op : p.ops) {
      const Dims shape = iteration_shape(p, op);
      const bool splits = check_op_tile(p, op, shape);
      std::vector<int> loop_axes;
      std::vector<int64_t> loop_counts;
      loop_nest(p, op, shape, loop_axes, loop_counts);
      ProgStage* cur = stages.empty() ? nullptr : &stages.back();
      if (joins_stage(p, cur, op, shape, splits, once, writer)) {
        if (!cur->split) cur->reduce_first = op.index;
        cur->last = op.index;
        const Dims& tile = p.tiles[static_cast<size_t>(op.tile)].dims;
        for (size_t d = 0; d < shape.size(); ++d) {
          if (cur->shape[d] == 1 && shape[d] > 1) cur->tile[d] = tile[d];  // the stage widens
          cur->shape[d] = std::max(cur->shape[d], shape[d]);
        }
      } else {
        ProgStage s = new_stage(p, op, shape);
        s.loop_axes = loop_axes;
        s.loop_counts = loop_counts;
        stages.push_back(s);
      }
      stages.back().split = splits;
    }
    fuse_online(p, stages);
    plan_gm_traffic(p, stages);
    bool again = false;
    for (const ProgStage& s : stages)
      for (int o = s.first; o <= s.last; ++o) {
        const ProgOp& op = p.ops[static_cast<size_t>(o)];
        // Each pass marks ops not yet marked, so the passes end (at most one per op).
        if (!once[static_cast<size_t>(o)] && s.online < 0 && recomputed_in(p, s, op) &&
            std::find(s.stores.begin(), s.stores.end(), op.out) != s.stores.end()) {
          once[static_cast<size_t>(o)] = true;
          again = true;
        }
      }
    if (!again) return stages;
  }
}

bool recomputed_in(const Program& p, const ProgStage& s, const ProgOp& op) {
  if (s.kind != OpKind::kUnary) return false;
  const Dims shape = iteration_shape(p, op);
  if (shape.size() != s.shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] == 1 && s.shape[d] > 1 && s.tile[d] < s.shape[d]) return true;
  return false;
}

namespace {

// Tensor `t` (of rank <= the space's, right-aligned, dims of 1 broadcast) at tile `b`.
Block broadcast_region(const Dims& shape, const Block& b) {
  const size_t off = b.origin.size() - shape.size();
  Block r{Dims(shape.size()), Dims(shape.size())};
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool bc = shape[d] == 1 && b.extent[d + off] >= 1 && b.origin.size() > 0;
    r.origin[d] = bc ? 0 : b.origin[d + off];
    r.extent[d] = bc ? 1 : b.extent[d + off];
  }
  return r;
}

}  // namespace

Block alias_region(const Program& p, int t, const Block& b) {
  const ProgTensor& x = p.tensors[static_cast<size_t>(t)];
  const Dims& in = p.tensors[static_cast<size_t>(x.alias_of)].shape;
  Block r = b;
  if (x.is_view()) {
    for (size_t d = 0; d < r.origin.size(); ++d) r.origin[d] += x.view_offset[d];
    return r;
  }
  const auto linear = [&](const Dims& q) {
    int64_t i = 0;
    for (size_t d = 0; d < q.size(); ++d) i = i * x.shape[d] + q[d];
    return i;
  };
  Dims last = b.origin;
  for (size_t d = 0; d < last.size(); ++d) last[d] += std::max<int64_t>(b.extent[d], 1) - 1;
  const int64_t row = product(in) / in[0], lo = linear(b.origin) / row, hi = linear(last) / row;
  r.origin = Dims(in.size(), 0);
  r.extent = in;
  r.origin[0] = lo;
  r.extent[0] = hi - lo + 1;
  return r;
}

Block operand_region(const Program& p, const ProgOp& op, int t, const Block& b) {
  const Dims& shape = p.tensors[static_cast<size_t>(t)].shape;
  const size_t r = b.origin.size();
  switch (op.info->kind) {
    case OpKind::kTranspose: {
      Block x = b;
      std::swap(x.origin[r - 1], x.origin[r - 2]);
      std::swap(x.extent[r - 1], x.extent[r - 2]);
      return x;
    }
    case OpKind::kRotateHalf: {
      // a tile of part of the last dim reads the same columns of the other half (the tile
      // divides the half: check_op_tile)
      Block x = broadcast_region(shape, b);
      const int64_t d = shape.back();
      if (b.extent[r - 1] < d) x.origin[r - 1] = (b.origin[r - 1] + d / 2) % d;
      return x;
    }
    case OpKind::kGather: {
      if (t == op.in[1]) return Block{{b.origin[0]}, {b.extent[0]}};  // the tile's row indices
      Block x = b;                                                    // rows anywhere in the table
      x.origin[0] = 0;
      x.extent[0] = shape[0];
      return x;
    }
    case OpKind::kMatmul: {
      // b over [batch..., m, k, n]; an operand's batch dim of 1 broadcasts (its one matrix)
      Block x{Dims(b.origin.begin(), b.origin.end() - 3),
              Dims(b.extent.begin(), b.extent.end() - 3)};
      for (size_t d = 0; d < x.origin.size() && d < shape.size(); ++d)
        if (shape[d] == 1) {
          x.origin[d] = 0;
          x.extent[d] = 1;
        }
      if (op.in.size() > 2 && t == op.in[2] && t != op.in[0] && t != op.in[1])
        return Block{{0, b.origin[r - 1]}, {1, b.extent[r - 1]}};  // the bias row's n range
      const bool a = t == op.in[0];
      if (!a && op.transpose_b) {  // B^T stored [..., n, k]: the tile's columns, all of k
        x.origin.push_back(b.origin[r - 1]);
        x.extent.push_back(b.extent[r - 1]);
        x.origin.push_back(0);
        x.extent.push_back(shape.back());
        return x;
      }
      x.origin.push_back(a ? b.origin[r - 3] : 0);
      x.extent.push_back(a ? b.extent[r - 3] : shape[shape.size() - 2]);
      x.origin.push_back(a ? 0 : b.origin[r - 1]);
      x.extent.push_back(a ? shape.back() : b.extent[r - 1]);
      return x;
    }
    default:
      return broadcast_region(shape, b);
  }
}

Block op_block(const Program& p, const ProgOp& op, const Block& b) {
  if (op.info->kind == OpKind::kMatmul) return b;
  const Dims s = iteration_shape(p, op);
  return s.size() == b.origin.size() ? broadcast_region(s, b) : b;
}

Block output_region(const Program& p, const ProgOp& op, const Block& b) {
  if (op.info->kind == OpKind::kMatmul) {
    Block c = b;
    c.origin.erase(c.origin.end() - 2);
    c.extent.erase(c.extent.end() - 2);
    return c;
  }
  const Block ob = op_block(p, op, b);
  if (op.info->kind != OpKind::kReduce) return ob;
  Block c;
  for (size_t d = 0; d < ob.origin.size(); ++d) {
    const bool reduced =
        std::find(op.dims.begin(), op.dims.end(), static_cast<int>(d)) != op.dims.end();
    if (reduced && !op.keepdim) continue;
    c.origin.push_back(reduced ? 0 : ob.origin[d]);
    c.extent.push_back(reduced ? 1 : ob.extent[d]);
  }
  return c;
}

int reused_max(const Program& p, const ProgStage& s, const ProgOp& op) {
  if (op.info->kind != OpKind::kReduce || !op.info->reduction->running_max) return -1;
  for (int o = s.first; o < op.index; ++o) {
    const ProgOp& a = p.ops[static_cast<size_t>(o)];
    if (a.info->kind == OpKind::kReduce && a.info->reduce == ReduceKind::kMax && a.in == op.in &&
        a.dims == op.dims && a.keepdim == op.keepdim)
      return o;
  }
  return -1;
}

Program program_of(const KernelSpec& spec) {
  if (!spec.program) throw InternalError("program_of: the spec holds no program");
  Program p = *spec.program;
  p.recompute_broadcasts = spec.partition != PartitionStyle::kPypto;
  if (!spec.program_tile.empty() && !spec.tile.empty())
    p.tiles[static_cast<size_t>(p.tile_id(spec.program_tile))].dims = spec.tile;
  for (const auto& [name, dims] : spec.program_tiles) {
    const int id = p.tile_id(name);
    if (id < 0) throw InternalError("program_of: no tile named '" + name + "'");
    p.tiles[static_cast<size_t>(id)].dims = dims;
  }
  if (!spec.program_loop.empty())
    p.loops[static_cast<size_t>(p.loop_id(spec.program_loop))].loop_count = spec.loop_count;
  return p;
}

}  // namespace tilesim
