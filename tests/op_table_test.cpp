// The op table's reduction records: the vector instructions their passes expand to on a tile
// (kernels/tiling/vector_work.hpp) are exactly those the lowering wrote by hand before the records
// held them, and their values fold, merge and finalize as the statistics are defined.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <tuple>

#include "kernels/ops/op_table.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "kernels/tiling/vector_work.hpp"

namespace tilesim {
namespace {

constexpr VecClass S = VecClass::kSimple;
constexpr VecClass E = VecClass::kExpLn;  // exp, ln (the complex class before pto-isa's rates)

// What kernels/lower/program_lowering.cpp's op_vector_work emitted for a reduction at 1b78e7e,
// before the records: the instructions of one tile, its mean's scale included.
std::vector<VecOp> hand_tile(ReduceKind k, const TileReduceGeometry& g, DType in_dt, DType dt) {
  std::vector<VecOp> vec;
  const int64_t n = g.elems;
  if (k == ReduceKind::kAny || k == ReduceKind::kAll) {
    vec.push_back(VecOp{S, in_dt, 1, 1, n});
    vec.push_back(VecOp{S, in_dt, 1, 1, n});
    add_reduce_ops(g, in_dt, vec);
  } else if (k == ReduceKind::kLogSumExp) {
    add_reduce_ops(g, in_dt, vec);
    vec.push_back(VecOp{S, in_dt, 1, 1, n});
    vec.push_back(VecOp{E, in_dt, 1, 1, n});
    add_reduce_ops(g, in_dt, vec);
    vec.push_back(VecOp{E, dt, 1, 1, g.out_elems});
    vec.push_back(VecOp{S, dt, 1, 1, g.out_elems});
  } else if (k == ReduceKind::kSumExp) {
    // The softmax family's partial (kernels/families/softmax.cpp add_max_sum_partial).
    add_reduce_ops(g, in_dt, vec);
    vec.push_back(VecOp{S, in_dt, 1, 1, n});
    vec.push_back(VecOp{E, in_dt, 1, 1, n});
    add_reduce_ops(g, in_dt, vec);
  } else if (k == ReduceKind::kPick) {
    // The loss family's target logit: one simple instruction over the rows (its output).
    vec.push_back(VecOp{S, dt, 1, 1, g.out_elems});
  } else if (k == ReduceKind::kArgMax || k == ReduceKind::kArgMin) {
    add_reduce_ops(g, in_dt, vec);
    vec.push_back(VecOp{S, in_dt, 1, 1, n});
  } else if (k == ReduceKind::kProd && g.last_reduced) {
    vec.push_back(VecOp{VecClass::kReduceRows, in_dt, g.out_elems, g.rows, 1});
  } else {
    add_reduce_ops(g, in_dt, vec);
  }
  if (k == ReduceKind::kMean) add_elementwise(S, dt, g.out_elems, 1, vec);
  return vec;
}

// ... and ProgramLowering::combine, one partial folded into another.
std::vector<VecOp> hand_merge(ReduceKind k, int64_t out_elems, DType in_dt, DType dt) {
  std::vector<VecOp> v;
  if (k == ReduceKind::kLogSumExp) {
    for (const VecClass c : {S, S, S, E, E, S, E, S}) v.push_back(VecOp{c, dt, 1, 1, out_elems});
  } else if (k == ReduceKind::kSumExp) {  // the softmax family's add_max_sum_combine
    for (const VecClass c : {S, S, S, E, E, S, S, S}) v.push_back(VecOp{c, dt, 1, 1, out_elems});
  } else if (k != ReduceKind::kArgMax && k != ReduceKind::kArgMin) {
    v.push_back(VecOp{S, dt, 1, 1, out_elems});
  } else {
    for (int i = 0; i < 3; ++i) v.push_back(VecOp{S, in_dt, 1, 1, out_elems});
  }
  return v;
}

using Fields = std::tuple<VecClass, DType, int64_t, int64_t, int64_t, bool>;
std::vector<Fields> fields(const std::vector<VecOp>& ops) {
  std::vector<Fields> f;
  for (const VecOp& o : ops)
    f.emplace_back(o.cls, o.dtype, o.batch, o.rows, o.cols, o.bank_conflict);
  return f;
}

std::vector<const OpRecord*> reductions() {
  std::vector<const OpRecord*> r;
  for (const OpRecord& o : op_records())
    if (o.kind == OpKind::kReduce) r.push_back(&o);
  return r;
}

TEST(OpTable, EveryReductionIsARecordWithItsCostAndValue) {
  EXPECT_EQ(reductions().size(), 12U);
  for (const OpRecord* r : reductions()) {
    ASSERT_TRUE(r->reduction) << r->name;
    EXPECT_FALSE(r->reduction->tile_passes.empty()) << r->name;
    EXPECT_FALSE(r->reduction->merge_passes.empty()) << r->name;
    EXPECT_TRUE(r->reduction->value.element && r->reduction->value.merge &&
                r->reduction->value.finalize)
        << r->name;
    EXPECT_EQ(r->out == OutDType::kInt32, r->reduction->gives_index) << r->name;
  }
}

TEST(OpTable, ReductionPassesExpandToTheLoweringsHandWrittenInstructions) {
  const std::vector<std::pair<Dims, std::vector<int>>> tiles = {
      {{8, 64}, {1}},         {{8, 64}, {0}},
      {{4, 6, 32}, {1, 2}},   {{4, 6, 32}, {0, 1}},
      {{4, 6, 32}, {1}},      {{4, 6, 32}, {0}},
      {{4, 6, 32}, {2}},      {{1, 1}, {1}},
      {{5, 1}, {1}},          {{1, 16}, {0}},
      {{3, 7, 1}, {1, 2}},    {{16}, {0}},
      {{2, 3, 4, 8}, {1, 2}}, {{2, 3, 4, 8}, {0, 1, 2, 3}}};
  const std::vector<std::pair<DType, DType>> dtypes = {{DType::kFp16, DType::kFp32},
                                                       {DType::kFp32, DType::kFp32},
                                                       {DType::kBf16, DType::kInt32},
                                                       {DType::kInt8, DType::kInt8}};
  for (const OpRecord* r : reductions())
    for (const auto& [extent, dims] : tiles)
      for (const auto& [in, out] : dtypes) {
        const TileReduceGeometry g = reduce_geometry(extent, dims);
        std::vector<VecOp> got;
        reduce_tile_work(*r->reduction, g, in, out, got);
        reduce_finalize_work(*r->reduction, g.out_elems, in, out, got);
        EXPECT_EQ(fields(got), fields(hand_tile(r->reduce, g, in, out)))
            << r->name << " " << format_dims(extent);
        std::vector<VecOp> merged;
        reduce_merge_work(*r->reduction, g.out_elems, in, out, merged);
        EXPECT_EQ(fields(merged), fields(hand_merge(r->reduce, g.out_elems, in, out))) << r->name;
      }
}

// The reduce family keeps fp32 statistics: a mean's finalize and every merge run in fp32.
TEST(OpTable, ReduceFamilyWorkIsTheRecordsInFp32) {
  const ReduceRecord& mean = *find_op_record("mean")->reduction;
  std::vector<VecOp> fin, merge;
  reduce_finalize_work(mean, 12, DType::kFp16, DType::kFp32, fin);
  reduce_merge_work(mean, 12, DType::kFp32, DType::kFp32, merge);
  const std::vector<Fields> one = {{S, DType::kFp32, 1, 1, 12, true}};
  EXPECT_EQ(fields(fin), one);
  EXPECT_EQ(fields(merge), one);
  std::vector<VecOp> none;
  reduce_finalize_work(*find_op_record("sum")->reduction, 12, DType::kFp32, DType::kFp32, none);
  EXPECT_TRUE(none.empty());
}

ReduceAcc fold_all(const ReduceValue& v, const std::vector<double>& x, size_t from, size_t to) {
  ReduceAcc acc = v.identity;
  for (size_t i = from; i < to; ++i) acc = v.fold(acc, x[i], static_cast<int64_t>(i));
  return acc;
}

TEST(OpTable, ReductionValuesFoldMergeAndFinalize) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> x(37);
  for (double& e : x) e = u(gen);
  x[5] = 0;
  x[20] = x[9];  // a tie of whatever value
  const auto value = [](const char* name) -> const ReduceValue& {
    return find_op_record(name)->reduction->value;
  };
  double sum = 0, prod = 1, lse = 0, sum_exp = 0;
  for (double e : x) sum += e, prod *= e, lse += std::exp(e);
  // sumexp: the sum of exp(x - max) relative to the row's own max (softmax's denominator).
  const double top = *std::max_element(x.begin(), x.end());
  for (double e : x) sum_exp += std::exp(e - top);
  const auto max_at = std::max_element(x.begin(), x.end()) - x.begin();
  const auto min_at = std::min_element(x.begin(), x.end()) - x.begin();
  const std::map<std::string, double> want = {{"sum", sum},
                                              {"mean", sum / 37},
                                              {"prod", prod},
                                              {"amax", *std::max_element(x.begin(), x.end())},
                                              {"amin", *std::min_element(x.begin(), x.end())},
                                              {"any", 1},
                                              {"all", 0},
                                              {"logsumexp", std::log(lse)},
                                              {"sumexp", sum_exp},
                                              {"argmax", static_cast<double>(max_at)},
                                              {"argmin", static_cast<double>(min_at)}};
  for (const auto& [name, w] : want) {
    const ReduceValue& v = value(name.c_str());
    const double whole = v.finalize(fold_all(v, x, 0, x.size()).stat, 37);
    EXPECT_NEAR(whole, w, 1e-12 * std::max(1.0, std::abs(w))) << name;
    // Split anywhere, the two partials merge to the whole (b holds the later elements).
    for (size_t cut : {1UL, 9UL, 20UL, 36UL}) {
      const ReduceAcc m = v.merge(fold_all(v, x, 0, cut), fold_all(v, x, cut, x.size()));
      EXPECT_NEAR(v.finalize(m.stat, 37), w, 1e-12 * std::max(1.0, std::abs(w)))
          << name << " cut " << cut;
    }
  }
  // NaN wins whichever side it is on; an argmax points at the first NaN.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  x[30] = nan;
  EXPECT_TRUE(std::isnan(fold_all(value("amax"), x, 0, x.size()).stat));
  EXPECT_TRUE(std::isnan(
      value("sumexp")
          .merge(fold_all(value("sumexp"), x, 0, 31), fold_all(value("sumexp"), x, 31, x.size()))
          .stat));
  EXPECT_TRUE(std::isnan(
      value("amin")
          .merge(fold_all(value("amin"), x, 0, 31), fold_all(value("amin"), x, 31, x.size()))
          .stat));
  EXPECT_EQ(fold_all(value("argmax"), x, 0, x.size()).stat, 30);
  // Ties keep the earlier index; all -inf still gives index 0.
  const std::vector<double> flat(4, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(fold_all(value("argmax"), flat, 0, 4).stat, 0);
  EXPECT_EQ(value("argmin")
                .merge(fold_all(value("argmin"), flat, 0, 2), fold_all(value("argmin"), flat, 2, 4))
                .stat,
            0);
}

}  // namespace
}  // namespace tilesim
