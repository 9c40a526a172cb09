#pragma once
// The one op table: every tensor op tilesim knows, in PyPTO's names, one record each. Tile
// programs (kernels/program/program.hpp) and the built-in families (kernels/spec/registry.hpp: a
// family lists the names it lowers) read the same record: its kind, its arity, the vector
// instructions one tile costs (each a pass over the tile in the given class; the Ascend C
// decompositions are cited in op_table.cpp), the UB temporaries its decomposition needs, and its
// value for the functional proof; a reduction's record (reduction.hpp) holds its tile, finalize
// and merge instructions and its value the same way. A new elementwise op is one record here.
// docs/ops.md is printed from these records (kernels/ops/op_doc.hpp).

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "kernels/ops/reduction.hpp"
#include "model/dtype.hpp"
#include "model/task_graph.hpp"
#include "model/tile_geometry.hpp"

namespace tilesim {

enum class OpKind {
  kUnary,
  kBinary,
  kWhere,
  kCast,
  kReduce,
  kScan,        // cumsum along one dim (the output keeps the input's shape)
  kRotateHalf,  // RoPE's rotate_half over the last dim (a tile of part of it divides the half)
  kTranspose,
  kGather,
  kMatmul,
  kLoad  // a copy into UB or L1 that nothing reads (a copy-in calibration kernel)
};

// A reduction's statistic, the name of its record (what the statistic is, costs and computes is
// the record's `reduction`, which every user reads; op_table.cpp describes each).
enum class ReduceKind {
  kSum,
  kMax,
  kMin,
  kMean,
  kProd,
  kAny,
  kAll,
  kArgMax,
  kArgMin,
  kLogSumExp,
  kSumExp,
  kPick
};

// A set of dtypes (a bit per DType).
class DTypeSet {
 public:
  constexpr DTypeSet(std::initializer_list<DType> ts) {
    for (const DType t : ts) bits_ |= bit(t);
  }
  static constexpr DTypeSet floats() { return {DType::kFp32, DType::kFp16, DType::kBf16}; }
  static constexpr DTypeSet all() {
    return {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt8, DType::kInt32};
  }
  constexpr bool contains(DType t) const { return (bits_ & bit(t)) != 0; }
  constexpr bool operator==(const DTypeSet&) const = default;
  // "fp32, fp16, bf16": the members in DType order.
  std::string text() const;

 private:
  static constexpr unsigned bit(DType t) { return 1U << static_cast<unsigned>(t); }
  unsigned bits_ = 0;
};

// What an op's output dtype is: its (value) operands', int32 (an index), or the one the op names
// (a cast's dtype, a matmul's out_dtype).
enum class OutDType { kOperand, kInt32, kGiven };

// The ND -> NZ scatter in UB: the one op a program gives a UB write stride (ProgOp::c0_stride).
inline constexpr const char* kNd2nzOp = "nd2nz";

struct OpRecord {
  std::string name;
  OpKind kind = OpKind::kUnary;
  std::string doc;                       // one line: what it computes
  std::vector<VecClass> instrs;          // unary / binary: the instructions of one tile, in order
  int scratch_tiles = 0;                 // temporaries the decomposition needs besides its output
  bool n_ary = false;                    // binary: folds any number of operands left to right
  ReduceKind reduce = ReduceKind::kSum;  // kReduce
  std::function<double(double, double)> value{};  // elementwise math (unary ops ignore y)
  // The dtypes its value operands take (where's condition and gather's index have their own
  // rule: any dtype, rank-1 int32), in programs and as a built-in kernel's dtype alike.
  DTypeSet operands = DTypeSet::floats();
  OutDType out = OutDType::kOperand;
  std::optional<ReduceRecord> reduction{};  // kReduce: its instructions, value and merge
  // How the lowering prices a tile of a kind it prices by kind (cast, cumsum, transpose, gather,
  // matmul), for docs/ops.md in place of `instrs`.
  std::string cost_doc{};
};

const OpRecord* find_op_record(const std::string& name);
// Every record, in table order.
const std::vector<OpRecord>& op_records();
// Every record's name, in table order.
std::vector<std::string> op_record_names();
// The kind's name in docs ("unary", "rotate_half").
const char* op_kind_name(OpKind k);
// The inputs an op of the kind takes (where: cond, x, y; gather: table, index; matmul: a, b); an
// n-ary binary op takes this many or more.
int op_inputs(OpKind k);
// The inputs op `r` takes (a picking reduction's index besides its operand).
int op_inputs(const OpRecord& r);

// numpy broadcasting, the one rule for every op with several elementwise operands (a built-in
// binary op's params.broadcast and a program's binary, n-ary and where ops alike): shapes
// right-aligned, each dim equal or 1. nullopt when they do not broadcast.
std::optional<Dims> broadcast_shapes(const Dims& a, const Dims& b);

// The dtypes a built-in kernel `op` takes: its record's operands, the float types for a family's
// own op (softmax, the norms, the losses).
DTypeSet op_dtypes(const OpRecord* record);

// Max and min that keep a NaN whatever the order the partials meet in (std::max keeps its first
// argument when either is NaN, so a tiled fold and an untiled scan would disagree): the amax and
// amin records' merges, and a flash stage's running max.
double max_nan(double a, double b);
double min_nan(double a, double b);

}  // namespace tilesim
