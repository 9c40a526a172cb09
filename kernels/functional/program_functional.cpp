// A tile program evaluated with real numbers, two ways: op by op over whole tensors (the untiled
// program), and stage by stage, tile by tile, over the same stages, tiles, regions and GM
// crossings the lowering builds (kernels/lower/program_lowering.cpp). Both evaluate an op on a
// block of its iteration space with one function, so what the proof compares is the tiling: which
// regions each tile reads, what stays in UB, what crosses GM and which tiles write which elements.
// Values are doubles: a cast to int8 rounds and saturates, float casts keep the value (the
// proof is about tiling, not rounding).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "kernels/functional/functional.hpp"
#include "kernels/program/program.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

struct Local {
  Block region;  // in the tensor's coordinates
  NdArray data;
  Eigen::ArrayXd values;  // argmax / argmin: the extreme value beside each index in `data`
  // The element at tensor coordinates q.
  double& operator[](const Dims& q) { return data[relative(q)]; }
  double operator[](const Dims& q) const { return data[relative(q)]; }
  Dims relative(Dims q) const {
    for (size_t d = 0; d < q.size(); ++d) q[d] -= region.origin[d];
    return q;
  }
};

Local zeros(const Block& r) {
  return Local{r, zero_array(r.extent), {}};
}

// Iteration coordinates to a tensor of `shape` (right-aligned, dims of 1 broadcast).
Dims broadcast_coords(const Dims& shape, const Dims& it) {
  const size_t off = it.size() - shape.size();
  Dims c(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) c[d] = shape[d] == 1 ? 0 : it[d + off];
  return c;
}

double cast_value(double x, DType to) {
  return to == DType::kInt8 ? std::clamp(std::nearbyint(x), -128.0, 127.0) : x;
}

// Reduction `op` over the iteration block `b`, its operand `x`, into `out` (its output region):
// the record's value, each element folded into its output's partial from the identity (at its
// index along the reduced dim), then finalized; `values` keeps an argmax's extreme. A picking
// reduction sees only the element at its row's index (`index`, its second operand).
void eval_reduce(const Program& p, const ProgOp& op, const Block& b, const Local& x,
                 const Local* index, Local& out) {
  const ReduceValue& v = op.info->reduction->value;
  const Dims& s = p.tensors[static_cast<size_t>(op.in[0])].shape;
  double count = 1;
  for (int d : op.dims) count *= static_cast<double>(s[static_cast<size_t>(d)]);
  std::vector<ReduceAcc> acc(static_cast<size_t>(out.data.data.size()), v.identity);
  const Block ob = op_block(p, op, b);
  for_each_position(ob, [&](const Dims& q) {
    Dims o;
    for (size_t d = 0; d < q.size(); ++d) {
      const bool red =
          std::find(op.dims.begin(), op.dims.end(), static_cast<int>(d)) != op.dims.end();
      if (red && !op.keepdim) continue;
      o.push_back(red ? 0 : q[d] - ob.origin[d]);
    }
    ReduceAcc& a = acc[static_cast<size_t>(out.data.offset(o))];
    const int64_t along = q[static_cast<size_t>(op.dims[0])];
    double e = x[q];
    if (index &&
        along != static_cast<int64_t>(
                     (*index)[broadcast_coords(p.tensors[static_cast<size_t>(op.in[1])].shape, q)]))
      e = 0.0;
    a = v.fold(a, e, along);
  });
  out.values = Eigen::ArrayXd::Zero(out.data.data.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    const auto e = static_cast<Eigen::Index>(i);
    out.data.data[e] = v.finalize(acc[i].stat, count);
    out.values[e] = acc[i].extreme;
  }
}

// Op `op` over the iteration block `b`, its operands in `locals`.
Local eval_op(const Program& p, const ProgOp& op, const Block& b,
              const std::map<int, Local>& locals) {
  const auto in = [&](size_t i) -> const Local& { return locals.at(op.in[i]); };
  const auto shape = [&](int t) -> const Dims& { return p.tensors[static_cast<size_t>(t)].shape; };
  Local out = zeros(output_region(p, op, b));
  const Block& r = out.region;
  switch (op.info->kind) {
    case OpKind::kUnary:
      for_each_position(r, [&](const Dims& q) { out[q] = op.info->value(in(0)[q], 0.0); });
      break;
    case OpKind::kLoad:  // the tile as it lands on chip
      for_each_position(r, [&](const Dims& q) { out[q] = in(0)[q]; });
      break;
    case OpKind::kBinary:
      for_each_position(r, [&](const Dims& q) {
        double x = in(0)[broadcast_coords(shape(op.in[0]), q)];
        if (op.scalar) x = op.info->value(x, *op.scalar);
        for (size_t i = 1; i < op.in.size(); ++i)  // n-ary ops fold left to right
          x = op.info->value(x, in(i)[broadcast_coords(shape(op.in[i]), q)]);
        out[q] = x;
      });
      break;
    case OpKind::kScan: {
      const size_t d = static_cast<size_t>(op.dims[0]);
      for_each_position(r, [&](const Dims& q) {
        double x = in(0)[q];
        if (q[d] > r.origin[d]) {
          Dims prev = q;
          --prev[d];
          x += out[prev];
        }
        out[q] = x;
      });
      break;
    }
    case OpKind::kWhere:
      for_each_position(r, [&](const Dims& q) {
        const size_t pick = in(0)[broadcast_coords(shape(op.in[0]), q)] != 0.0 ? 1 : 2;
        out[q] = in(pick)[broadcast_coords(shape(op.in[pick]), q)];
      });
      break;
    case OpKind::kCast: {
      const DType to = p.tensors[static_cast<size_t>(op.out)].dtype;
      for_each_position(r, [&](const Dims& q) { out[q] = cast_value(in(0)[q], to); });
      break;
    }
    case OpKind::kReduce:
      eval_reduce(p, op, b, in(0), op.in.size() > 1 ? &in(1) : nullptr, out);
      break;
    case OpKind::kRotateHalf: {
      const int64_t half = shape(op.in[0]).back() / 2;
      for_each_position(r, [&](const Dims& q) {
        Dims x = q;
        const bool low = q.back() < half;
        x.back() = low ? q.back() + half : q.back() - half;
        out[q] = low ? -in(0)[x] : in(0)[x];
      });
      break;
    }
    case OpKind::kTranspose:
      for_each_position(r, [&](const Dims& q) {
        Dims x = q;
        std::swap(x[x.size() - 1], x[x.size() - 2]);
        out[q] = in(0)[x];
      });
      break;
    case OpKind::kGather:
      for_each_position(r, [&](const Dims& q) {
        Dims x = q;
        x[0] = static_cast<int64_t>(in(1)[{q[0]}]);
        out[q] = in(0)[x];
      });
      break;
    case OpKind::kMatmul: {
      // The block's k range, cut into the op's split-K slices of whole L1 k steps when it is the
      // whole K: each slice's partial C, added (atomically or by the AIV merge).
      const size_t rk = b.origin.size();
      const int64_t k0 = b.origin[rk - 2], kext = b.extent[rk - 2];
      const int64_t whole_k = p.tensors[static_cast<size_t>(op.in[0])].shape.back();
      const int64_t slices = kext == whole_k ? op.mm.split_k : 1;
      const int64_t step = p.tiles[static_cast<size_t>(op.tile)].dims[1];
      const Dims& a_shape = p.tensors[static_cast<size_t>(op.in[0])].shape;
      const Dims& b_shape = p.tensors[static_cast<size_t>(op.in[1])].shape;
      for_each_position(r, [&](const Dims& q) {
        Dims a = q, bb = q;  // q: [batch..., m, n]; a batch dim of 1 broadcasts
        for (size_t d = 0; d + 2 < q.size(); ++d) {
          if (a_shape[d] == 1) a[d] = 0;
          if (b_shape[d] == 1) bb[d] = 0;
        }
        double sum = 0;
        for (int64_t s = 0; s < slices; ++s) {
          const auto [s0, sext] =
              slices == 1 ? std::pair{k0, kext} : split_k_range(whole_k, step, slices, s);
          double partial = 0;
          for (int64_t k = s0; k < s0 + sext; ++k) {
            a.back() = k;
            bb[bb.size() - 2] = op.transpose_b ? q.back() : k;
            bb.back() = op.transpose_b ? k : q.back();
            partial += in(0)[a] * in(1)[bb];
          }
          sum += partial;
        }
        // A bias row (the op's third input) starts the C tile whose k range starts K.
        if (op.in.size() > 2 && k0 == 0) sum += in(2)[{0, q.back()}];
        out[q] = sum;
      });
      break;
    }
  }
  return out;
}

Local whole(const NdArray& a) {
  return Local{Block{Dims(a.shape.size(), 0), a.shape}, a, {}};
}

Local extract(const NdArray& a, const Block& r) {
  Local l = zeros(r);
  for_each_position(r, [&](const Dims& q) { l[q] = a[q]; });
  return l;
}

std::vector<NdArray> empty_tensors(const Program& p, const std::vector<NdArray>& inputs) {
  std::vector<NdArray> gm;
  size_t next = 0;
  for (const ProgTensor& t : p.tensors) {
    if (t.input) {
      if (next >= inputs.size() || inputs[next].shape != t.shape)
        throw InternalError("execute_program: inputs must match the program's input tensors");
      gm.push_back(inputs[next++]);
    } else {
      gm.push_back(zero_array(t.shape));
    }
  }
  return gm;
}

// Row `row` of S block b (rank r), column c, as tensor coordinates (and of O with dv columns).
Dims flash_coords(const Block& b, size_t r, int64_t row, int64_t c) {
  Dims q = b.origin;
  q[r - 2] += row;
  q[r - 1] += c;
  return q;
}

// The running max of S block b's rows (x the statistic's input) updated into m, each row's
// rescale alpha = exp(m_old - m) (0 on a row's first block), the new maxima written into stat.
void update_running_max(const Local& x, const Block& b, size_t r, std::vector<double>& m,
                        std::vector<double>& alpha, Local& stat) {
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t row = 0; row < b.extent[r - 2]; ++row) {
    double mx = -inf;
    for (int64_t c = 0; c < b.extent[r - 1]; ++c) mx = max_nan(mx, x[flash_coords(b, r, row, c)]);
    const double mo = m[static_cast<size_t>(row)];
    const double mn = max_nan(mo, mx);
    alpha[static_cast<size_t>(row)] = mo == -inf ? 0.0 : std::exp(mo - mn);
    m[static_cast<size_t>(row)] = mn;
    Dims rel(r, 0);
    rel[r - 2] = row;
    stat.data[rel] = mn;
  }
}

// l = l * alpha + the block's row sums of P, O = O * alpha + P V, row by row.
void accumulate_rows(const Local& p_blk, const Local& pv, const Block& b, size_t r, int64_t dv,
                     const std::vector<double>& alpha, std::vector<double>& l, Local& o) {
  for (int64_t row = 0; row < b.extent[r - 2]; ++row) {
    double sum = 0;
    for (int64_t c = 0; c < b.extent[r - 1]; ++c) sum += p_blk[flash_coords(b, r, row, c)];
    const double a = alpha[static_cast<size_t>(row)];
    l[static_cast<size_t>(row)] = l[static_cast<size_t>(row)] * a + sum;
    Dims rel(r, 0);
    rel[r - 2] = row;
    for (int64_t c = 0; c < dv; ++c) {
      rel[r - 1] = c;
      o.data[rel] = o.data[rel] * a + pv.data[rel];
    }
  }
}

// A flash stage (plan_stages fuse_online), query block by query block: per key block S by the
// first matmul, the vector ops on it, the running max m and sum l of each row, P by the
// program's own sub and exp with m in the statistic's place, O = O * exp(m_old - m) + P V; after
// the last key block O / l and lse = m + ln l are stored. Equal to the untiled program when the
// rescaling is right.
void run_flash(const Program& p, const ProgStage& s, std::vector<NdArray>& gm,
               const std::function<void(int, const Local&)>& store) {
  const auto op = [&](int i) -> const ProgOp& { return p.ops[static_cast<size_t>(i)]; };
  const ProgOp& mm1 = op(s.first);
  const ProgOp& lse = op(s.online);
  const ProgOp& mm2 = op(s.last);
  const StageGrid grid = stage_grid(s);
  const size_t r = s.shape.size();
  const int64_t keys = static_cast<int64_t>(grid.pieces[r - 1].size());
  const int64_t dk = p.tensors[static_cast<size_t>(mm1.in[0])].shape.back();
  const int64_t dv = p.tensors[static_cast<size_t>(mm2.out)].shape.back();
  const double inf = std::numeric_limits<double>::infinity();
  // Matmul iteration blocks [batch..., m, k, n] for S block b.
  const auto qk_block = [&](const Block& b) {
    Block m{Dims(b.origin.begin(), b.origin.end() - 1), Dims(b.extent.begin(), b.extent.end() - 1)};
    m.origin.push_back(0);
    m.extent.push_back(dk);
    m.origin.push_back(b.origin[r - 1]);
    m.extent.push_back(b.extent[r - 1]);
    return m;
  };
  const auto pv_block = [&](const Block& b) {
    Block m = b;
    m.origin.push_back(0);
    m.extent.push_back(dv);
    return m;
  };
  const auto load = [&](const ProgOp& x, const Block& b, std::map<int, Local>& locals) {
    for (int t : x.in)
      if (!locals.count(t))
        locals.emplace(t, extract(gm[static_cast<size_t>(t)], operand_region(p, x, t, b)));
  };
  std::vector<double> m, l;
  Local o;
  for (int64_t i = 0; i < grid.count(); ++i) {
    const Block b = grid.block(i);
    const int64_t j = i % keys;
    const int64_t rows = b.extent[r - 2];
    std::map<int, Local> locals;
    load(mm1, qk_block(b), locals);
    locals.insert_or_assign(mm1.out, eval_op(p, mm1, qk_block(b), locals));
    for (int x = s.first + 1; x < s.online; ++x) {
      load(op(x), b, locals);
      locals.insert_or_assign(op(x).out, eval_op(p, op(x), b, locals));
    }
    if (j == 0) {
      m.assign(static_cast<size_t>(rows), -inf);
      l.assign(static_cast<size_t>(rows), 0.0);
      o = zeros(output_region(p, mm2, pv_block(b)));
    }
    const Local& x = locals.at(lse.in[0]);
    Local stat = zeros(output_region(p, lse, b));
    std::vector<double> alpha(static_cast<size_t>(rows));
    update_running_max(x, b, r, m, alpha, stat);
    locals.insert_or_assign(lse.out, stat);
    int pt = -1;
    for (int y = s.online + 1; y < s.last; ++y) {
      locals.insert_or_assign(op(y).out, eval_op(p, op(y), b, locals));
      if (op(y).name == "exp") pt = op(y).out;
    }
    load(mm2, pv_block(b), locals);
    const Local pv = eval_op(p, mm2, pv_block(b), locals);
    accumulate_rows(locals.at(pt), pv, b, r, dv, alpha, l, o);
    if (j + 1 < keys) continue;
    Local lse_out = stat;
    for (int64_t row = 0; row < rows; ++row) {
      Dims rel(r, 0);
      rel[r - 2] = row;
      lse_out.data[rel] = m[static_cast<size_t>(row)] + std::log(l[static_cast<size_t>(row)]);
      for (int64_t c = 0; c < dv; ++c) {
        rel[r - 1] = c;
        o.data[rel] /= l[static_cast<size_t>(row)];
      }
    }
    for (int t : s.stores) store(t, t == mm2.out ? o : lse_out);
  }
}

// A split reduction's partials (one per tile, finalized apart: a mean's are already scaled),
// merged per output block by the record's merge in `red`'s order (walked, chained and atomic:
// one after another; tree: pairwise by level), each chain's result stored.
void merge_partials(const ProgOp& red, const std::vector<std::vector<int64_t>>& chains,
                    const std::vector<Local>& partials,
                    const std::function<void(int, const Local&)>& store) {
  const ReduceValue& v = red.info->reduction->value;
  auto fold = [&](Local& a, const Local& b) {  // b holds the later indices
    for (Eigen::Index e = 0; e < a.data.data.size(); ++e) {
      const ReduceAcc m = v.merge({a.data.data[e], a.values[e]}, {b.data.data[e], b.values[e]});
      a.data.data[e] = m.stat;
      a.values[e] = m.extreme;
    }
  };
  for (const auto& chain : chains) {
    std::vector<Local> parts;
    for (int64_t i : chain) parts.push_back(partials[static_cast<size_t>(i)]);
    if (red.merge == MergeMode::kTree) {
      for (const auto& level : merge_levels(static_cast<int>(parts.size()), MergeMode::kTree))
        for (const MergeStep& m : level)
          fold(parts[static_cast<size_t>(m.a)], parts[static_cast<size_t>(m.b)]);
    } else {
      for (size_t j = 1; j < parts.size(); ++j) fold(parts[0], parts[j]);
    }
    store(red.out, parts[0]);
  }
}

}  // namespace

std::vector<NdArray> program_inputs(const Program& p, unsigned seed) {
  std::vector<NdArray> in;
  std::mt19937 rng(seed);
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    const ProgTensor& x = p.tensors[t];
    if (!x.input) continue;
    NdArray a = random_array(x.shape, static_cast<unsigned>(rng()));
    // A gather's index holds rows of its table, a pick's positions along its reduced dim, a
    // where's condition 0 or 1, int8 small integers.
    int64_t rows = 0;
    bool cond = false;
    for (const ProgOp& op : p.ops) {
      if (op.info->kind == OpKind::kGather && op.in[1] == static_cast<int>(t))
        rows = p.tensors[static_cast<size_t>(op.in[0])].shape[0];
      if (op.info->kind == OpKind::kReduce && op.info->reduction->picks &&
          op.in[1] == static_cast<int>(t))
        rows = p.tensors[static_cast<size_t>(op.in[0])].shape[static_cast<size_t>(op.dims[0])];
      if (op.info->kind == OpKind::kWhere && op.in[0] == static_cast<int>(t)) cond = true;
    }
    for (Eigen::Index i = 0; i < a.data.size(); ++i) {
      if (rows > 0)
        a.data[i] = static_cast<double>(rng() % static_cast<uint64_t>(rows));
      else if (cond)
        a.data[i] = a.data[i] > 0 ? 1.0 : 0.0;
      else if (x.dtype == DType::kInt8 || x.dtype == DType::kInt32)
        a.data[i] = std::nearbyint(a.data[i] * 20);
    }
    in.push_back(std::move(a));
  }
  return in;
}

namespace {

// The values of the aliases (views and reshapes) from the tensors they name, as they are now:
// before each op (untiled) or stage (tiled) reads them.
void refresh_aliases(const Program& p, std::vector<NdArray>& gm) {
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    const ProgTensor& x = p.tensors[t];
    if (x.alias_of < 0) continue;
    const NdArray& from = gm[static_cast<size_t>(x.alias_of)];
    NdArray& to = gm[t];
    if (!x.is_view()) {
      to.data = from.data;  // row-major: the same elements in the same order
      continue;
    }
    for_each_position(Block{Dims(x.shape.size(), 0), x.shape}, [&](const Dims& q) {
      Dims f = q;
      for (size_t d = 0; d < f.size(); ++d) f[d] += x.view_offset[d];
      to[q] = from[f];
    });
  }
}

}  // namespace

std::vector<NdArray> execute_program_untiled(const Program& p, const std::vector<NdArray>& inputs) {
  std::vector<NdArray> gm = empty_tensors(p, inputs);
  for (const ProgOp& op : p.ops) {
    refresh_aliases(p, gm);
    std::map<int, Local> locals;
    for (int t : op.in) locals.emplace(t, whole(gm[static_cast<size_t>(t)]));
    const Dims space = iteration_shape(p, op);
    gm[static_cast<size_t>(op.out)] =
        eval_op(p, op, Block{Dims(space.size(), 0), space}, locals).data;
  }
  return gm;
}

ProgramTiledResult execute_program_tiled(const Program& p, const std::vector<NdArray>& inputs) {
  ProgramTiledResult res;
  res.tensors = empty_tensors(p, inputs);
  std::vector<NdArray>& gm = res.tensors;
  for (const ProgTensor& t : p.tensors) res.writes.push_back(zero_array(t.shape));
  auto store = [&](int t, const Local& l) {
    for_each_position(l.region, [&](const Dims& q) {
      gm[static_cast<size_t>(t)][q] = l[q];
      res.writes[static_cast<size_t>(t)][q] += 1;
    });
  };
  for (const ProgStage& s : plan_stages(p)) {
    refresh_aliases(p, gm);
    if (s.online >= 0) {
      run_flash(p, s, gm, store);
      continue;
    }
    ProgStage grid_stage = s;
    if (s.kind == OpKind::kMatmul) grid_stage.tile[s.tile.size() - 2] = s.shape[s.shape.size() - 2];
    const StageGrid grid = stage_grid(grid_stage);
    // A split stage's reduction: each tile's partial, folded per output block in the merge's
    // order (walked, chained and atomic: one after another; tree: pairwise by level).
    const ProgOp& last = p.ops[static_cast<size_t>(s.last)];
    const bool scan = s.split && last.info->kind == OpKind::kScan;
    // The stage's statistics (a split stage's reductions, ops [reduce_first, last]), by tensor.
    std::map<int, const ProgOp*> reduced;
    if (s.split && !scan)
      for (int o = s.reduce_first; o <= s.last; ++o)
        reduced.emplace(p.ops[static_cast<size_t>(o)].out, &p.ops[static_cast<size_t>(o)]);
    // A cumsum over a split dim: each row's running carry (the previous tile's last line, keyed
    // by the line's origin), added to the tile's own cumsum; tiles come in row-major order, so a
    // row's in order.
    std::map<Dims, Local> carry;
    std::map<int, std::vector<Local>> partials;
    for (const auto& r : reduced) partials[r.first].resize(static_cast<size_t>(grid.count()));
    for (int64_t i = 0; i < grid.count(); ++i) {
      const Block b = grid.block(i);
      std::map<int, Local> locals;
      for (int t : s.loads) {  // the region its first reader reads
        const ProgOp& op = p.ops[static_cast<size_t>(s.reader_op.at(t))];
        locals.emplace(t, extract(gm[static_cast<size_t>(t)], operand_region(p, op, t, b)));
      }
      for (int o = s.first; o <= s.last; ++o) {
        const ProgOp& op = p.ops[static_cast<size_t>(o)];
        locals.insert_or_assign(op.out, eval_op(p, op, b, locals));
      }
      if (scan) {
        Local& y = locals.at(last.out);
        const size_t d = static_cast<size_t>(last.dims[0]);
        Block line = y.region;
        line.origin[d] = 0;
        line.extent[d] = 1;
        const auto it = carry.find(line.origin);
        Local next = zeros(line);
        for_each_position(y.region, [&](const Dims& q) {
          Dims l = q;
          l[d] = 0;
          if (it != carry.end()) y[q] += it->second[l];
          if (q[d] == y.region.origin[d] + y.region.extent[d] - 1) next[l] = y[q];
        });
        carry.insert_or_assign(line.origin, std::move(next));
      }
      for (int t : s.stores)
        if (!reduced.count(t)) store(t, locals.at(t));
      for (auto& [t, parts] : partials) parts[static_cast<size_t>(i)] = locals.at(t);
    }
    for (const auto& [t, red] : reduced)
      merge_partials(*red, split_chains(p, s, grid), partials.at(t), store);
  }
  return res;
}

}  // namespace tilesim
