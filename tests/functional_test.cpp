// The functional proof: each kernel's own tiling (tile boundaries, ragged tails, loop chunks,
// merge order) executed with Eigen on small random inputs equals an untiled reference.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "kernels/functional/functional.hpp"
#include "kernels/lowering.hpp"
#include "kernels/program/program.hpp"
#include "kernels/spec/registry.hpp"
#include "model/error.hpp"
#include "test_support.hpp"

namespace tilesim {
namespace {

constexpr double kTol = 1e-5;

KernelSpec spec(const std::string& op, Dims shape, Dims tile, std::vector<int> dims,
                int64_t loop = 1, const std::string& merge = "auto") {
  KernelSpec s;
  s.op = op;
  s.shape = std::move(shape);
  s.tile = std::move(tile);
  s.dims = std::move(dims);
  s.loop_count = loop;
  s.params["merge"] = merge;
  return s;
}

double rel_err(const Eigen::ArrayXd& got, const Eigen::ArrayXd& want) {
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return 1e9;
  return (got - want).abs().maxCoeff() / std::max(1e-12, want.abs().maxCoeff());
}

// Untiled references.
Dims unravel(int64_t i, const Dims& shape) {
  Dims at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    at[d] = i % shape[d];
    i /= shape[d];
  }
  return at;
}

// Groups the elements of `x` by output position (reduced dims set to 0) and folds them.
Eigen::ArrayXd reference_reduce(const NdArray& x, const std::vector<int>& dims,
                                const std::function<double(const std::vector<double>&)>& fold) {
  Dims out_shape = x.shape;
  for (int d : dims) out_shape[static_cast<size_t>(d)] = 1;
  std::map<int64_t, std::vector<double>> groups;
  const NdArray out_index{out_shape, Eigen::ArrayXd()};
  for (int64_t i = 0; i < x.data.size(); ++i) {
    Dims at = unravel(i, x.shape);
    for (int d : dims) at[static_cast<size_t>(d)] = 0;
    groups[out_index.offset(at)].push_back(x.data[i]);
  }
  Eigen::ArrayXd r(static_cast<Eigen::Index>(groups.size()));
  for (const auto& [k, v] : groups) r[k] = fold(v);
  return r;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// The spmd partition of `s` over `grid` blocks.
KernelSpec spmd(KernelSpec s, int64_t grid) {
  s.partition = PartitionStyle::kSpmd;
  s.grid = grid;
  return s;
}

// A family's output and, for a family with a second pass, its result (both the program's
// output here: a norm's, a softmax's output has the input's shape).
struct ProgramResult {
  NdArray reduced;
  NdArray applied;
};

// A family's kernel executed as its tiling says: its tile program stage by stage, tile by tile
// (execute_program_tiled).
ProgramResult run(const KernelSpec& s, const std::vector<NdArray>& in) {
  const Hardware& hw = test::default_hw();
  lower_kernel(s, hw);  // the graph must build for the same candidate
  const KernelFamily* family = find_family(s.op);
  const Program p = family->program(s, hw);
  std::vector<NdArray> args;
  for (const ProgTensor& t : p.tensors)
    if (t.input) args.push_back(reshaped(in[args.size()], t.shape));
  const ProgramTiledResult r = execute_program_tiled(p, args);
  ProgramResult out;
  // The output: reduced, or of the input's shape (a norm's, a softmax's).
  for (size_t t = 0; t < p.tensors.size(); ++t)
    if (p.tensors[t].output) out.reduced = out.applied = r.tensors[t];
  return out;
}

struct Case {
  Dims shape, tile;
  std::vector<int> dims;
  int64_t loop;
  std::string merge;
};

// Candidates per family: whole and split reduction axes, ragged tails, several loops and
// every merge mode.
const std::vector<Case> kReduceCases = {
    {{6, 40}, {2, 16}, {1}, 1, "tree"},
    {{6, 40}, {4, 40}, {1}, 2, "auto"},
    {{5, 37, 24}, {2, 8, 8}, {1}, 3, "chain"},
    {{5, 37, 24}, {1, 5, 24}, {1}, 1, "in_task"},
    {{4, 6, 10, 16}, {1, 4, 3, 8}, {2, 3}, 2, "atomic"},
    {{3, 9, 8}, {1, 4, 8}, {0}, 1, "tree"},
};

// The untiled result of reduce op `op` over `dims`.
Eigen::ArrayXd reference_of(const std::string& op, const NdArray& x, const std::vector<int>& dims) {
  return reference_reduce(x, dims, [&](const std::vector<double>& v) {
    if (op == "amax") return *std::max_element(v.begin(), v.end());
    if (op == "amin") return *std::min_element(v.begin(), v.end());
    return op == "mean" ? sum(v) / static_cast<double>(v.size()) : sum(v);
  });
}

void check_reduction(const std::string& op) {
  for (const auto& c : kReduceCases) {
    KernelSpec s = spec(op, c.shape, c.tile, c.dims, c.loop, c.merge);
    if (c.dims.size() > 1) s.params["multi_dim"] = "chained";
    const NdArray x = random_array(c.shape, 1);
    const auto got = run(s, {x}).reduced.data;
    const auto want = reference_of(op, x, c.dims);
    EXPECT_LT(rel_err(got, want), kTol) << op << " tile " << format_dims(c.tile) << " " << c.merge;
  }
  // spmd: blocks own runs of whole output rows (ragged runs, ragged sub-tiles) and accumulate
  // each row's sub-tiles in UB; one dim, a non-last dim, and adjacent dims merged by reshape.
  // With more blocks than rows, blocks own runs of sub-tiles and split rows add up atomically.
  for (const auto& [shape, tile, dims, grid] :
       std::vector<std::tuple<Dims, Dims, std::vector<int>, int64_t>>{
           {{6, 40}, {2, 16}, {1}, 2},
           {{5, 37, 24}, {2, 8, 8}, {1}, 4},
           {{3, 9, 8}, {1, 4, 8}, {0}, 3},
           {{4, 6, 10, 16}, {1, 2, 4, 16}, {2, 3}, 5},
           {{7, 24}, {1, 24}, {1}, 7},
           // more blocks than row tiles: rows split across blocks, partials added atomically
           {{6, 40}, {2, 16}, {1}, 7},
           {{5, 37, 24}, {2, 8, 8}, {1}, 20},
           {{4, 6, 10, 16}, {1, 2, 4, 16}, {2, 3}, 30}}) {
    KernelSpec s = spmd(spec(op, shape, tile, dims), grid);
    const NdArray x = random_array(shape, 1);
    const auto want = reference_of(op, x, dims);
    EXPECT_LT(rel_err(run(s, {x}).reduced.data, want), kTol)
        << op << " spmd grid " << grid << " tile " << format_dims(tile);
    if (grid > 2) continue;  // params.spmd_rows "split" with as many row tiles as blocks or more
    s.params["spmd_rows"] = "split";
    EXPECT_LT(rel_err(run(s, {x}).reduced.data, want), kTol)
        << op << " spmd split grid " << grid << " tile " << format_dims(tile);
  }
  // spmd with explicit block regions (grid 0: one block per region): ragged regions, ragged
  // sub-tiles at region edges, regions splitting the reduced dim (atomic partials), several
  // regions per block, a non-last reduced dim.
  for (const auto& [shape, block, tile, dims, grid] :
       std::vector<std::tuple<Dims, Dims, Dims, std::vector<int>, int64_t>>{
           {{1000}, {163}, {64}, {0}, 0},        // 7 regions, ragged, split reduced dim
           {{1000}, {163}, {64}, {0}, 3},        // runs of 2-3 regions per block
           {{6, 40}, {3, 40}, {2, 16}, {1}, 0},  // whole rows, ragged row sub-tiles
           {{6, 40}, {4, 24}, {2, 16}, {1}, 3},  // 2 x 2 regions, rows split
           {{5, 37, 24}, {3, 20, 24}, {2, 8, 8}, {1}, 0},
           {{3, 9, 8}, {2, 5, 8}, {1, 4, 8}, {0}, 3}}) {
    KernelSpec s = spmd(spec(op, shape, tile, dims), grid);
    s.block = block;
    if (grid == 0) s.grid = region_count(shape, block);
    const NdArray x = random_array(shape, 2);
    const auto want = reference_of(op, x, dims);
    EXPECT_LT(rel_err(run(s, {x}).reduced.data, want), kTol)
        << op << " spmd block " << format_dims(block) << " grid " << s.grid;
  }
}

TEST(Functional, MergedAdjacentDimsEqualChained) {
  const NdArray x = random_array({4, 6, 10, 16}, 2);
  KernelSpec merged = spec("mean", {4, 6, 10, 16}, {1, 2, 4, 16}, {2, 3}, 2, "tree");
  KernelSpec chained = merged;
  chained.params["multi_dim"] = "chained";
  const auto a = run(merged, {x}).reduced.data, b = run(chained, {x}).reduced.data;
  EXPECT_LT(rel_err(a, b), kTol);
  const auto want = reference_reduce(x, {2, 3}, [](const std::vector<double>& v) {
    return sum(v) / static_cast<double>(v.size());
  });
  EXPECT_LT(rel_err(a, want), kTol);
}

// A merged tile may split one merged dim when the outer merged dims are tiled 1 (it is still one
// block of the reshaped axis); a ragged split makes blocks that cross the outer dim's rows.
TEST(Functional, MergedTileSplittingOneMergedDimIsExact) {
  const NdArray x = random_array({3, 2, 10, 16}, 3);
  const auto want = reference_reduce(x, {1, 2}, [](const std::vector<double>& v) {
    return sum(v) / static_cast<double>(v.size());
  });
  for (const Dims& tile :
       {Dims{1, 1, 4, 16}, Dims{1, 1, 3, 16}, Dims{1, 1, 5, 8}, Dims{1, 2, 10, 16}}) {
    const KernelSpec s = spec("mean", {3, 2, 10, 16}, tile, {1, 2}, 1, "tree");
    EXPECT_LT(rel_err(run(s, {x}).reduced.data, want), kTol) << format_dims(tile);
  }
  // Not one block of the merged axis: a partial inner dim under a partial outer one.
  KernelSpec bad = spec("mean", {3, 2, 10, 16}, {1, 2, 4, 16}, {1, 2}, 1, "tree");
  EXPECT_THROW(run(bad, {x}), Error);
}

Eigen::ArrayXd reference_softmax(const NdArray& x, int dim, bool log) {
  Eigen::ArrayXd y(x.data.size());
  const auto m = reference_reduce(
      x, {dim}, [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });
  Dims out_shape = x.shape;
  out_shape[static_cast<size_t>(dim)] = 1;
  const NdArray oi{out_shape, {}};
  NdArray e{x.shape, Eigen::ArrayXd(x.data.size())};
  for (int64_t i = 0; i < x.data.size(); ++i) {
    Dims at = unravel(i, x.shape);
    at[static_cast<size_t>(dim)] = 0;
    e.data[i] = std::exp(x.data[i] - m[oi.offset(at)]);
  }
  const auto s = reference_reduce(e, {dim}, sum);
  for (int64_t i = 0; i < x.data.size(); ++i) {
    Dims at = unravel(i, x.shape);
    at[static_cast<size_t>(dim)] = 0;
    const int64_t o = oi.offset(at);
    y[i] = log ? x.data[i] - m[o] - std::log(s[o]) : e.data[i] / s[o];
  }
  return y;
}

void check_softmax(const std::string& op) {
  const std::vector<Case> cases = {{{6, 40}, {1, 40}, {1}, 1, "auto"},  // one segment: fused
                                   {{6, 40}, {2, 16}, {1}, 2, "tree"},  // split, ragged tail
                                   {{6, 40}, {4, 8}, {1}, 3, "chain"},
                                   {{6, 40}, {1, 24}, {1}, 1, "in_task"},
                                   {{4, 20, 8}, {2, 6, 8}, {1}, 2, "tree"}};  // non-last axis
  for (const auto& c : cases) {
    const NdArray x = random_array(c.shape, 3);
    const auto got = run(spec(op, c.shape, c.tile, c.dims, c.loop, c.merge), {x}).applied.data;
    EXPECT_LT(rel_err(got, reference_softmax(x, c.dims[0], op == "logsoftmax")), kTol)
        << op << " tile " << format_dims(c.tile) << " " << c.merge;
  }
  // spmd: whole rows per block (fused single sub-tile, split rows with a ragged sub-tile, a
  // non-last axis), ragged runs of rows.
  for (const auto& [shape, tile, dim, grid] :
       std::vector<std::tuple<Dims, Dims, int, int64_t>>{{{6, 40}, {1, 40}, 1, 4},
                                                         {{6, 40}, {2, 16}, 1, 2},
                                                         {{7, 40}, {1, 24}, 1, 3},
                                                         {{4, 20, 8}, {2, 6, 8}, 1, 2},
                                                         // more blocks than rows: launch 0
                                                         // leaves each part's (max, sum of
                                                         // exp), launch 1 merges and applies
                                                         {{6, 40}, {1, 16}, 1, 10},
                                                         {{6, 40}, {2, 16}, 1, 7},
                                                         {{4, 20, 8}, {2, 6, 8}, 1, 7}}) {
    const NdArray x = random_array(shape, 3);
    const auto got = run(spmd(spec(op, shape, tile, {dim}), grid), {x}).applied.data;
    EXPECT_LT(rel_err(got, reference_softmax(x, dim, op == "logsoftmax")), kTol)
        << op << " spmd grid " << grid << " tile " << format_dims(tile);
  }
  // spmd block regions: whole rows (ragged regions of rows, ragged row sub-tiles), and regions
  // cutting the rows (3 x 3 regions of (3, 16); 2 x 2 of (3, 12, 8)): launch 0 leaves each
  // region's (max, sum of exp), launch 1 merges and applies them region by region.
  for (const auto& [shape, block, tile, dim, grid] :
       std::vector<std::tuple<Dims, Dims, Dims, int, int64_t>>{
           {{7, 40}, {3, 40}, {2, 16}, 1, 3},
           {{7, 40}, {3, 40}, {1, 40}, 1, 2},
           {{4, 20, 8}, {3, 20, 8}, {2, 6, 8}, 1, 2},
           {{7, 40}, {3, 16}, {2, 8}, 1, 9},
           {{7, 40}, {3, 16}, {2, 8}, 1, 4},
           {{4, 20, 8}, {3, 12, 8}, {2, 6, 8}, 1, 4}}) {
    KernelSpec s = spmd(spec(op, shape, tile, {dim}), grid);
    s.block = block;
    const NdArray x = random_array(shape, 4);
    EXPECT_LT(rel_err(run(s, {x}).applied.data, reference_softmax(x, dim, op == "logsoftmax")),
              kTol)
        << op << " spmd block " << format_dims(block);
  }
  KernelSpec split = spmd(spec(op, {6, 40}, {1, 16}, {1}), 4);  // split although rows >= grid
  split.params["spmd_rows"] = "split";
  const NdArray x = random_array({6, 40}, 3);
  EXPECT_LT(rel_err(run(split, {x}).applied.data, reference_softmax(x, 1, op == "logsoftmax")),
            kTol);
}

// The spmd partitions of a norm: whole rows per block (fused, or two passes over the row's
// sub-tiles) and rows split over blocks (params.spmd_rows "split", or more blocks than rows):
// atomic partial sums in launch 0, normalisation in launch 1.
// `more` (0: none) is a grid above the row tiles.
void check_norm_spmd(KernelSpec s, const NdArray& x, const Eigen::ArrayXd& want, int64_t more) {
  for (const auto& [grid, rows] : std::vector<std::pair<int64_t, std::string>>{
           {2, "auto"}, {3, "whole"}, {3, "split"}, {5, "split"}, {more, "auto"}}) {
    if (grid == 0) continue;
    KernelSpec g = spmd(s, grid);
    g.params["spmd_rows"] = rows;
    EXPECT_LT(rel_err(run(g, {x}).applied.data, want), kTol)
        << s.op << " spmd grid " << grid << " " << rows << " tile " << format_dims(s.tile);
  }
}

// (x - mean) * rstd over `dims` (or x * rms^-1).
Eigen::ArrayXd reference_norm(const NdArray& x, const std::vector<int>& dims, bool rms) {
  const auto s1 = reference_reduce(x, dims, sum);
  const auto s2 = reference_reduce(x, dims, [](const std::vector<double>& v) {
    double s = 0;
    for (double a : v) s += a * a;
    return s;
  });
  const auto n = reference_reduce(
      x, dims, [](const std::vector<double>& v) { return static_cast<double>(v.size()); });
  Dims out_shape = x.shape;
  for (int d : dims) out_shape[static_cast<size_t>(d)] = 1;
  const NdArray oi{out_shape, {}};
  Eigen::ArrayXd y(x.data.size());
  for (int64_t i = 0; i < x.data.size(); ++i) {
    Dims at = unravel(i, x.shape);
    for (int d : dims) at[static_cast<size_t>(d)] = 0;
    const int64_t o = oi.offset(at);
    const double mean = s1[o] / n[o];
    y[i] = rms ? x.data[i] / std::sqrt(s2[o] / n[o] + 1e-5)
               : (x.data[i] - mean) / std::sqrt(s2[o] / n[o] - mean * mean + 1e-5);
  }
  return y;
}

void check_layer_norm(const std::string& op) {  // layernorm, rmsnorm
  for (const auto& c : std::vector<Case>{{{6, 48}, {2, 16}, {1}, 2, "tree"},
                                         {{6, 48}, {1, 48}, {1}, 1, "atomic"},
                                         {{3, 12, 8}, {1, 5, 8}, {1}, 3, "chain"},  // middle C
                                         {{3, 12, 8}, {2, 4, 8}, {1}, 1, "in_task"}}) {
    const NdArray x = random_array(c.shape, 4);
    const auto got = run(spec(op, c.shape, c.tile, c.dims, c.loop, c.merge), {x}).applied.data;
    EXPECT_LT(rel_err(got, reference_norm(x, c.dims, op == "rmsnorm")), kTol)
        << op << " tile " << format_dims(c.tile) << " " << c.merge;
  }
  const NdArray x = random_array({6, 48}, 4);
  for (const auto& [tile, more] :
       std::vector<std::pair<Dims, int64_t>>{{{1, 48}, 0}, {{1, 16}, 13}, {{2, 24}, 5}})
    check_norm_spmd(spec(op, {6, 48}, tile, {1}), x, reference_norm(x, {1}, op == "rmsnorm"), more);
  const NdArray r = random_array({6, 40}, 4);  // a ragged last sub-tile (40 = 16 + 16 + 8)
  check_norm_spmd(spec(op, {6, 40}, {1, 16}, {1}), r, reference_norm(r, {1}, op == "rmsnorm"), 17);
  // spmd block regions of (4, 40) (whole rows: one launch) and (4, 24) (cutting the rows: atomic
  // sums in launch 0, normalisation in launch 1), ragged at the edges.
  for (const auto& [block, grid] :
       std::vector<std::pair<Dims, int64_t>>{{{4, 40}, 2}, {{4, 24}, 4}, {{4, 24}, 3}}) {
    KernelSpec g = spmd(spec(op, {6, 40}, {1, 16}, {1}), grid);
    g.block = block;
    EXPECT_LT(rel_err(run(g, {r}).applied.data, reference_norm(r, {1}, op == "rmsnorm")), kTol)
        << op << " spmd block " << format_dims(block) << " grid " << grid;
  }
}

// batchnorm: statistics over N, H, W per channel.
void check_batchnorm(const std::string&) {
  for (const auto& merge : {"auto", "tree", "in_task"}) {
    const NdArray x = random_array({4, 3, 5, 8}, 5);
    const auto got =
        run(spec("batchnorm", {4, 3, 5, 8}, {2, 1, 2, 8}, {}, 3, merge), {x}).applied.data;
    EXPECT_LT(rel_err(got, reference_norm(x, {0, 2, 3}, false)), kTol) << merge;
  }
  const NdArray x = random_array({4, 3, 5, 8}, 5);  // 3 channels of 4 x 3 sub-tiles
  check_norm_spmd(spec("batchnorm", {4, 3, 5, 8}, {1, 1, 2, 8}, {}), x,
                  reference_norm(x, {0, 2, 3}, false), 13);
}

// groupnorm: 3 groups of 2 channels; statistics over (group channels, H, W).
void check_groupnorm(const std::string&) {
  for (const auto& [tile, loop] : std::vector<std::pair<Dims, int64_t>>{
           {{1, 1, 3, 8}, 4}, {{1, 2, 5, 8}, 1}, {{2, 6, 2, 8}, 2}}) {
    const NdArray x = random_array({4, 6, 5, 8}, 6);
    KernelSpec s = spec("groupnorm", {4, 6, 5, 8}, tile, {}, loop, "auto");
    s.params["groups"] = 3;
    const auto got = run(s, {x}).applied.data;
    const auto want = reference_norm(reshaped(x, {12, 2, 5, 8}), {1, 2, 3}, false);
    EXPECT_LT(rel_err(got, want), kTol) << "groupnorm tile " << format_dims(tile);
  }
  const NdArray x = random_array({4, 6, 5, 8}, 6);  // 12 groups of 2 x 3 sub-tiles
  KernelSpec s = spec("groupnorm", {4, 6, 5, 8}, {1, 1, 2, 8}, {});
  s.params["groups"] = 3;
  check_norm_spmd(s, x, reference_norm(reshaped(x, {12, 2, 5, 8}), {1, 2, 3}, false), 13);
}

void check_loss(const std::string& loss) {
  const int64_t n = 12, c = 40;
  const NdArray x = random_array({n, c}, 7), p = random_array({n, c}, 8),
                q = random_array({n, c}, 9);
  NdArray targets{{n, 1}, Eigen::ArrayXd::Zero(n)};  // int32 class indices, one per sample
  std::vector<int64_t> target(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    target[static_cast<size_t>(i)] = (i * 7 + 3) % c;
    targets[{i, 0}] = static_cast<double>(target[static_cast<size_t>(i)]);
  }
  double ce = 0, mse = 0, triplet = 0;
  for (int64_t i = 0; i < n; ++i) {
    double m = -1e300, s = 0, dap = 0, dan = 0;
    for (int64_t j = 0; j < c; ++j) m = std::max(m, x[{i, j}]);
    for (int64_t j = 0; j < c; ++j) {
      s += std::exp(x[{i, j}] - m);
      mse += std::pow(x[{i, j}] - p[{i, j}], 2);
      dap += std::pow(x[{i, j}] - p[{i, j}] + 1e-6, 2);
      dan += std::pow(x[{i, j}] - q[{i, j}] + 1e-6, 2);
    }
    ce += m + std::log(s) - x[{i, target[static_cast<size_t>(i)]}];
    triplet += std::max(std::sqrt(dap) - std::sqrt(dan) + 1.0, 0.0);
  }
  for (const auto& c0 : std::vector<Case>{{{n, c}, {2, 16}, {}, 3, "tree"},
                                          {{n, c}, {4, 40}, {}, 1, "auto"},
                                          {{n, c}, {3, 8}, {}, 2, "chain"},
                                          {{n, c}, {1, 24}, {}, 4, "in_task"}}) {
    for (const auto& [op, inputs, want] :
         std::vector<std::tuple<std::string, std::vector<NdArray>, double>>{
             {"cross_entropy", {x, targets}, ce / n},
             {"mse", {x, p}, mse / (n * c)},
             {"triplet_margin", {x, p, q}, triplet / n}}) {
      if (op != loss) continue;
      KernelSpec s = spec(op, c0.shape, c0.tile, c0.dims, c0.loop, c0.merge);
      s.params["phase2_tile"] = {8};  // 12 samples: a split batch axis with a ragged tail
      const auto got = run(s, inputs).reduced.data;
      ASSERT_EQ(got.size(), 1);
      EXPECT_NEAR(got[0], want, kTol * std::abs(want)) << op << " " << c0.merge;
      // spmd: blocks fold the rows they finish into the mean atomically; whole rows in one
      // launch, split rows finished by a second launch.
      for (const auto& [grid, rows] : std::vector<std::pair<int64_t, std::string>>{
               {2, "auto"}, {5, "whole"}, {5, "split"}, {11, "auto"}}) {
        KernelSpec g = spmd(spec(op, c0.shape, c0.tile, c0.dims), grid);
        g.params["spmd_rows"] = rows;
        const int64_t row_tiles = (n + c0.tile[0] - 1) / c0.tile[0];
        const int64_t units = row_tiles * ((c + c0.tile[1] - 1) / c0.tile[1]);
        if ((rows == "whole" && grid > row_tiles) || grid > units) continue;
        const auto r = run(g, inputs).reduced.data;
        ASSERT_EQ(r.size(), 1);
        EXPECT_NEAR(r[0], want, kTol * std::abs(want))
            << op << " spmd grid " << grid << " " << rows << " tile " << format_dims(c0.tile);
      }
      // spmd block regions: ragged regions of whole samples (5 rows: 5, 5, 2), several regions
      // per block, and regions cutting the classes (mse adds its scaled sums atomically in one
      // launch, cross_entropy and triplet_margin finish the samples in a second launch).
      for (const auto& [block, grid] : std::vector<std::pair<Dims, int64_t>>{
               {{5, c}, 0}, {{5, c}, 2}, {{5, 24}, 0}, {{5, 24}, 4}}) {
        KernelSpec g = spmd(spec(op, c0.shape, c0.tile, c0.dims), grid);
        g.block = block;
        if (grid == 0) g.grid = region_count(c0.shape, block);
        const auto r = run(g, inputs).reduced.data;
        ASSERT_EQ(r.size(), 1);
        EXPECT_NEAR(r[0], want, kTol * std::abs(want))
            << op << " spmd block " << format_dims(block) << " grid " << g.grid << " tile "
            << format_dims(c0.tile);
      }
    }
  }
}

KernelSpec matmul_spec(const Dims& shape, const Dims& tile) {
  KernelSpec s;
  s.op = "matmul";
  s.shape = shape;
  s.tile = tile;
  s.dtype = DType::kFp16;
  return s;
}

// Random A [m, k] and B [k, n] for shape [m, k, n], and their product by Eigen, untiled.
struct MatmulOperands {
  NdArray a, b;
  Eigen::ArrayXd want;
};
MatmulOperands matmul_operands(const Dims& shape, unsigned seed) {
  MatmulOperands o{
      random_array({shape[0], shape[1]}, seed), random_array({shape[1], shape[2]}, seed + 1), {}};
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Mat c = Eigen::Map<const Mat>(o.a.data.data(), shape[0], shape[1]) *
                Eigen::Map<const Mat>(o.b.data.data(), shape[1], shape[2]);
  o.want = Eigen::Map<const Eigen::ArrayXd>(c.data(), c.size());
  return o;
}

void check_matmul(const std::string&) {
  for (const auto& [shape, tile, loop] :
       std::vector<std::tuple<Dims, Dims, int64_t>>{{{40, 48, 32}, {16, 16, 16}, 3},
                                                    {{40, 48, 32}, {32, 32, 16}, 1},
                                                    {{33, 20, 48}, {16, 16, 32}, 4}}) {
    KernelSpec s = matmul_spec(shape, tile);
    s.loop_count = loop;
    const MatmulOperands o = matmul_operands(shape, 10);
    EXPECT_LT(rel_err(run(s, {o.a, o.b}).reduced.data, o.want), kTol);
    // Split K: the slices' partial C tiles add up (atomically, or by the AIV merge).
    s.params["split_k"] = 2;
    s.params["split_k_merge"] = "vector";
    EXPECT_LT(rel_err(run(s, {o.a, o.b}).reduced.data, o.want), kTol) << format_dims(shape);
  }
  // spmd (catlass's basic matmul): ragged C tiles, k steps and L0 tiles; both swizzle
  // directions; grids that do and do not divide the tiles. Every C element is written by exactly
  // one tile.
  for (const auto& [shape, tile, l0, swizzle, grid] :
       std::vector<std::tuple<Dims, Dims, Dims, Dims, int64_t>>{
           {{72, 80, 88}, {32, 48, 32}, {16, 32, 32}, {2, 0}, 5},
           {{72, 80, 88}, {32, 32, 48}, {32, 32, 16}, {3, 1}, 4},
           {{40, 48, 32}, {16, 16, 16}, {16, 16, 16}, {1, 0}, 3},
           {{33, 20, 50}, {32, 16, 32}, {16, 16, 16}, {4, 1}, 1}}) {
    KernelSpec s = matmul_spec(shape, tile);
    s.partition = PartitionStyle::kSpmd;
    s.grid = grid;
    s.params["l0_tile"] = l0;
    s.params["swizzle"] = swizzle;
    const MatmulOperands o = matmul_operands(shape, 12);
    EXPECT_LT(rel_err(run(s, {o.a, o.b}).reduced.data, o.want), kTol)
        << format_dims(shape) << " tile " << format_dims(tile) << " grid " << grid;
  }
}

// Elementwise ops and copy_in: each tile computes its own block, and the tiles (ragged tails,
// loop chunks on the loop axis) cover every element exactly once.
void check_independent_tiles(const std::string& op) {
  const KernelOp& info = *find_op(op);
  // loop > 0: the pypto partition with that loop_count; loop < 0: spmd with grid -loop, over
  // block regions when `block` is given (ragged regions and sub-tiles clipped at their edges).
  for (const auto& [shape, tile, loop, block] : std::vector<std::tuple<Dims, Dims, int64_t, Dims>>{
           {{6, 40}, {4, 16}, 1, {}},
           {{6, 40}, {2, 24}, 3, {}},
           {{5, 7, 24}, {2, 3, 8}, 2, {}},
           {{6, 40}, {4, 16}, -4, {}},
           {{5, 7, 24}, {2, 3, 8}, -5, {}},
           {{6, 40}, {2, 16}, -4, {4, 24}},          // 2 x 2 regions, one per block
           {{5, 7, 24}, {2, 3, 8}, -3, {3, 5, 16}},  // 2 x 2 x 2 regions over 3 blocks
           {{1000}, {64}, -7, {163}}}) {
    KernelSpec s;
    s.op = op;
    s.shape = shape;
    s.tile = tile;
    if (loop > 0)
      s.loop_count = loop;
    else
      s = spmd(s, -loop);
    s.block = block;
    lower_kernel(s, test::default_hw());
    std::vector<NdArray> in;
    for (int i = 0; i < info.inputs; ++i)
      in.push_back(random_array(shape, 20 + static_cast<unsigned>(i)));
    if (op == "div") in[1].data = in[1].data.abs() + 0.5;  // away from 0
    const TilesResult r = execute_independent_tiles(s, in);
    Eigen::ArrayXd want(in[0].data.size());
    for (Eigen::Index i = 0; i < want.size(); ++i) {
      const double x = in[0].data[i], y = info.inputs > 1 ? in[1].data[i] : 0.0;
      want[i] = op == "add"    ? x + y
                : op == "sub"  ? x - y
                : op == "mul"  ? x * y
                : op == "div"  ? x / y
                : op == "relu" ? std::max(x, 0.0)
                : op == "exp"  ? std::exp(x)
                               : x;  // copy_in reads x
    }
    EXPECT_LT(rel_err(r.out.data, want), kTol) << op << " tile " << format_dims(tile);
    EXPECT_TRUE((r.covered.data == 1.0).all()) << op << " tile " << format_dims(tile);
  }
  if (!info.record || !info.record->n_ary) return;
  // The fused n-ary form (params.operands 4): ((x1 op x2) op x3) op x4 in every tile, and its
  // tasks read four tiles and run three vector ops.
  KernelSpec s;
  s.op = op;
  s.shape = {6, 40};
  s.tile = {4, 16};
  s.params = {{"operands", 4}};
  std::vector<NdArray> in;
  for (unsigned i = 0; i < 4; ++i) in.push_back(random_array(s.shape, 40 + i));
  const TilesResult r = execute_independent_tiles(s, in);
  Eigen::ArrayXd want = in[0].data;
  for (size_t i = 1; i < 4; ++i)
    want = op == "add" ? (want + in[i].data).eval() : (want * in[i].data).eval();
  EXPECT_LT(rel_err(r.out.data, want), kTol) << op << " operands 4";
  const LoweredKernel k = lower_kernel(s, test::default_hw());
  const TileStep& st = k.graph.kinds.front().steps.front();
  EXPECT_EQ(st.loads.size(), 4u) << op;
  EXPECT_EQ(st.vec.size(), 3u) << op;
}

// Broadcast second operands (params.broadcast): rows, columns and a mixed 3-D shape, under the
// pypto, ascendc and spmd (block regions) partitions; x op y[broadcast index] everywhere.
void check_broadcast(const std::string& op) {
  for (const auto& [shape, tile, yshape, style] :
       std::vector<std::tuple<Dims, Dims, Dims, PartitionStyle>>{
           {{6, 40}, {4, 16}, {1, 40}, PartitionStyle::kPypto},
           {{6, 40}, {4, 16}, {6, 1}, PartitionStyle::kPypto},
           {{6, 40}, {2, 24}, {6, 1}, PartitionStyle::kAscendC},
           {{6, 40}, {2, 16}, {1, 40}, PartitionStyle::kSpmd},
           {{5, 7, 24}, {2, 3, 8}, {5, 1, 24}, PartitionStyle::kSpmd},
           {{5, 7, 24}, {2, 3, 8}, {1, 7, 1}, PartitionStyle::kPypto}}) {
    KernelSpec s;
    s.op = op;
    s.shape = shape;
    s.tile = tile;
    s.partition = style;
    if (style == PartitionStyle::kAscendC) s.cores = 4;
    if (style == PartitionStyle::kSpmd) {
      s.block = shape;
      s.block[0] = 3;  // ragged regions along the first axis
      s.grid = 2;
    }
    s.params["broadcast"] = yshape;
    lower_kernel(s, test::default_hw());
    const NdArray x = random_array(shape, 30);
    NdArray y = random_array(yshape, 31);
    if (op == "div") y.data = y.data.abs() + 0.5;
    const TilesResult r = execute_independent_tiles(s, {x, y});
    Eigen::ArrayXd want(x.data.size());
    for (Eigen::Index i = 0; i < want.size(); ++i) {
      Dims at = unravel(i, shape);
      for (size_t d = 0; d < at.size(); ++d)
        if (yshape[d] == 1) at[d] = 0;
      want[i] = find_op(op)->value(x.data[i], y[at]);
    }
    EXPECT_LT(rel_err(r.out.data, want), kTol) << op << " broadcast " << format_dims(yshape);
    EXPECT_TRUE((r.covered.data == 1.0).all()) << op << " broadcast " << format_dims(yshape);
  }
}

// The functional case of every registered op; the registry walk requires one per op.
const std::map<std::string, std::function<void(const std::string&)>>& op_cases() {
  static const auto cases = [] {
    std::map<std::string, std::function<void(const std::string&)>> m;
    for (const char* op : {"copy_in", "relu", "exp"}) m[op] = check_independent_tiles;
    for (const char* op : {"add", "sub", "mul", "div"})
      m[op] = [](const std::string& o) {
        check_independent_tiles(o);
        check_broadcast(o);
      };
    for (const char* op : {"sum", "amax", "amin", "mean"}) m[op] = check_reduction;
    for (const char* op : {"softmax", "logsoftmax"}) m[op] = check_softmax;
    for (const char* op : {"layernorm", "rmsnorm"}) m[op] = check_layer_norm;
    m["batchnorm"] = check_batchnorm;
    m["groupnorm"] = check_groupnorm;
    for (const char* op : {"cross_entropy", "mse", "triplet_margin"}) m[op] = check_loss;
    m["matmul"] = check_matmul;
    return m;
  }();
  return cases;
}

TEST(Functional, EveryRegisteredOpHasAnEigenCaseThatHolds) {
  for (const std::string& op : registered_ops()) {
    SCOPED_TRACE(op);
    const auto it = op_cases().find(op);
    if (it == op_cases().end()) {
      ADD_FAILURE() << "no functional (Eigen) case for op '" << op
                    << "' in tests/functional_test.cpp op_cases()";
      continue;
    }
    it->second(op);
  }
  for (const auto& [op, check] : op_cases())
    EXPECT_NE(find_family(op), nullptr) << "case for unregistered op " << op;
}

}  // namespace
}  // namespace tilesim
