#include "model/vector_cost.hpp"

#include <algorithm>
#include <vector>

#include "model/tile_geometry.hpp"

namespace tilesim {

namespace {

struct ClassCost {
  double cycles_per_repeat;
  double latency;
};

ClassCost class_cost(VecClass c, const Hardware& hw) {
  switch (c) {
    case VecClass::kComplex:
      return {hw.vector.complex.cycles_per_repeat, hw.vector.complex.latency_cycles};
    case VecClass::kExpLn:
      return {hw.vector.exp_ln.cycles_per_repeat, hw.vector.exp_ln.latency_cycles};
    case VecClass::kDiv:
      return {hw.vector.div.cycles_per_repeat, hw.vector.div.latency_cycles};
    case VecClass::kRsqrt:
      return {hw.vector.rsqrt.cycles_per_repeat, hw.vector.rsqrt.latency_cycles};
    case VecClass::kReduceLast:
      return {hw.vector.reduce.cycles_per_repeat, hw.vector.reduce.latency_cycles};
    case VecClass::kSimple:
    case VecClass::kReduceRows:
    case VecClass::kScan:
    case VecClass::kScalarElement:
      break;
  }
  return {hw.vector.simple.cycles_per_repeat, hw.vector.simple.latency_cycles};
}

// One logical vector op over `repeats` repeats, split into instructions of at most max_repeats.
void add_op(VecCost& total, int64_t repeats, ClassCost cc, const Hardware& hw) {
  if (repeats <= 0) return;
  const int64_t instr = ceil_div(repeats, hw.vector.max_repeats);
  total.instructions += instr;
  total.repeats += repeats;
  total.cycles += static_cast<double>(instr) * (hw.vector.issue_cycles + cc.latency) +
                  static_cast<double>(repeats) * cc.cycles_per_repeat;
}

}  // namespace

int64_t ub_write_beats(int64_t block_stride, const Hardware& hw) {
  const int64_t groups = hw.vector.bank_groups;
  if (block_stride <= 1 || groups <= 1) return 1;
  const int64_t blocks = std::max<int64_t>(1, hw.vector.bytes_per_repeat / hw.ub.align_bytes);
  std::vector<int64_t> in_group(static_cast<size_t>(groups), 0);
  int64_t beats = 1;
  for (int64_t i = 0; i < blocks; ++i)
    beats = std::max(beats, ++in_group[static_cast<size_t>(i * block_stride % groups)]);
  return beats;
}

VecCost vector_cost(const VecOp& op, const Hardware& hw) {
  VecCost total;
  const int64_t per_repeat = hw.vector.bytes_per_repeat / dtype_bytes(op.dtype);
  const ClassCost simple = class_cost(VecClass::kSimple, hw);
  switch (op.cls) {
    case VecClass::kExpLn:
    case VecClass::kRsqrt:
      // One source: no two reads to meet in a bank group, so the measured rate whatever the flag
      // (pto-isa's calibration times the one-source instruction itself).
      add_op(total, ceil_div(op.batch * op.rows * op.cols, per_repeat), class_cost(op.cls, hw), hw);
      break;
    case VecClass::kSimple:
    case VecClass::kComplex:
    case VecClass::kDiv: {
      const int64_t elems = op.batch * op.rows * op.cols;
      ClassCost cc = class_cost(op.cls, hw);
      // The simple class's rate is measured both ways (the add study, cases 5 and 6); the complex
      // class's is a multiple of the conflicted add's (hardware.md), and so is div's (pto-isa
      // timed its TDIV beside a TADD at the conflicted add's rate), so without the conflict each
      // is the same multiple of the conflict-free add's.
      if (!op.bank_conflict && simple.cycles_per_repeat > 0)
        cc.cycles_per_repeat *=
            std::max(0.0, simple.cycles_per_repeat - hw.vector.bank_conflict_cycles_per_repeat) /
            simple.cycles_per_repeat;
      // A scatter write whose blocks meet in a bank group writes them one beat each: every beat
      // past the first costs what a read conflict's second beat costs (asc-devkit best practice
      // 04_memory_access/bank_conflict_nd2nz: 16 bank groups of 3 banks, 32 B blocks in turn).
      cc.cycles_per_repeat += static_cast<double>(ub_write_beats(op.dst_block_stride, hw) - 1) *
                              hw.vector.bank_conflict_cycles_per_repeat;
      add_op(total, ceil_div(elems, per_repeat), cc, hw);
      break;
    }
    case VecClass::kReduceLast: {
      const int64_t rows = op.batch * op.rows;
      if (op.block_reduce) {
        // Block reduces: each pass turns every UB block (ub.align_bytes, a repeat's eighth) into
        // one value, the first over the tile's rows, the later ones over the packed partials,
        // until a row is one value.
        const ClassCost block{hw.vector.block_reduce_cycles_per_repeat,
                              hw.vector.reduce.latency_cycles};
        const int64_t per_block = std::max<int64_t>(1, hw.ub.align_bytes / dtype_bytes(op.dtype));
        int64_t width = op.cols;
        add_op(total, rows * ceil_div(width, per_repeat), block, hw);
        for (width = ceil_div(width, per_block); width > 1; width = ceil_div(width, per_block))
          add_op(total, ceil_div(rows * width, per_repeat), block, hw);
        break;
      }
      // Halving adds over all rows at once until each row is one repeat wide.
      int64_t width = ceil_div(op.cols, per_repeat);
      while (width > 1) {
        const int64_t half = width / 2;
        add_op(total, rows * half, simple, hw);
        width -= half;
      }
      add_op(total, rows, class_cost(VecClass::kReduceLast, hw), hw);
      break;
    }
    case VecClass::kScan: {
      // Each step waits for the previous one (Ascend C CumSum: one Add per row, a PipeBarrier
      // between them), so each is its own instruction: batch x rows instructions.
      VecCost step;
      add_op(step, ceil_div(op.cols, per_repeat), simple, hw);
      const auto n = static_cast<double>(op.batch * op.rows);
      total.instructions = static_cast<int64_t>(n) * step.instructions;
      total.repeats = static_cast<int64_t>(n) * step.repeats;
      total.cycles = n * step.cycles;
      break;
    }
    case VecClass::kScalarElement:
      // A loop on the scalar unit, no vector instruction: each element's compare and select.
      total.cycles += static_cast<double>(op.batch * op.rows * op.cols) *
                      hw.scalar.index_compare_cycles_per_element;
      break;
    case VecClass::kReduceRows: {
      const int64_t row_repeats = ceil_div(op.cols, per_repeat);
      int64_t rows = op.rows;
      while (rows > 1) {
        const int64_t half = rows / 2;
        add_op(total, op.batch * half * row_repeats, simple, hw);
        rows -= half;
      }
      break;
    }
  }
  return total;
}

}  // namespace tilesim
