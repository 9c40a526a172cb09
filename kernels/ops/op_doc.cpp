#include "kernels/ops/op_doc.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tilesim {

namespace {

constexpr const char* kTableIntro =
    R"(Each op is one record of `kernels/ops/op_table.cpp`: tile programs (`tilesim run PROGRAM`)
use every op below by name, and a built-in kernel's op (see "Built-in kernels") lowers through
the same record. Vector instructions per tile are passes over the tile in an instruction class
(`simple`: full-rate elementwise; `exp_ln`: exp and ln, `div`: div, `rsqrt`: rsqrt, each at its
rate of pto-isa's 910B3 calibration; `complex`: sqrt, reciprocal and divs, which it does not
time, at the estimated half add rate; `reduce_rows` combines rows elementwise, `reduce_last`
reduces within a row, `scan` a cumsum's dependent adds), timed by
`model/vector_cost.cpp`. A binary op's (and `where`'s) instruction runs once per operand fold (an
n-ary op's n - 1) over the tile, or once per row when a broadcast operand's rows are longer than
one repeat; a column operand first costs one `simple` Brcb. Temporaries are UB tiles the
decomposition needs besides its output. Dtypes: fp32, fp16, bf16, int8, int32.
)";

constexpr const char* kReduceIntro =
    R"(A reduction's record holds its instructions as passes, each `instruction: where`:
`reduce` is the tile reduced along its reduced dims (`reduce_rows` across rows, then
`reduce_last` within a row when the last dim is reduced), `reduce_rows` the same with no in-row
instruction (every reduced element a row of one), `class/tile` one instruction over the tile's
elements, `class/out` one over the output elements; in the input's dtype, except passes over the
outputs, which run in the output's (marked where a pass differs). A tile of a split reduced dim
gives a partial: partials are finalized (a mean's scale, on every partial) and merged in the order
the op's `merge` names; an atomic merge is a DMA write that adds (max, min) into GM, otherwise the
partials meet in a tree, a chain or within one task (`merge: auto` takes atomic where it can, else
tree). Its value (`kernels/ops/op_table.cpp`) is what the functional proof folds: each element
into the identity, two partials merged, the output finalized.
)";

std::string pass_text(const VecPass& p) {
  const PassDType usual = p.over == ReducePass::kOut ? PassDType::kOut : PassDType::kIn;
  std::string where;
  if (p.over == ReducePass::kReduce || p.over == ReducePass::kReduceByRows)
    where = p.over == ReducePass::kReduce ? "reduce" : "reduce_rows";
  else
    where =
        fmt::format("{}/{}", vec_class_name(p.cls), p.over == ReducePass::kTile ? "tile" : "out");
  if (p.dtype != usual) where += p.dtype == PassDType::kIn ? " (in dtype)" : " (out dtype)";
  return fmt::format("{}: {}", p.what, where);
}

std::string temporaries_text(const OpRecord& r) {
  const int input = r.reduction ? r.reduction->input_scratch : 0;
  if (r.scratch_tiles > 0) return fmt::format("{} output tile(s)", r.scratch_tiles);
  if (input > 0) return fmt::format("{} input tile(s)", input);
  return "-";
}

std::string inputs_text(const OpRecord& r) {
  const int n = op_inputs(r);
  if (r.n_ary) return fmt::format("{} or more (folded left to right)", n);
  return r.kind == OpKind::kBinary ? "2 (or 1 and a scalar)" : std::to_string(n);
}

std::string out_text(OutDType out) {
  if (out == OutDType::kGiven) return "the one it names (`dtype`, `out_dtype`)";
  return out == OutDType::kInt32 ? "int32" : "its operands'";
}

// A record's classes ("simple, complex"), a reduction's passes, or the cost_doc of a kind the
// lowering prices by kind.
std::string instructions_text(const OpRecord& r) {
  if (r.reduction) return reduce_passes_text(r.reduction->tile_passes);
  if (!r.cost_doc.empty()) return r.cost_doc;
  std::vector<std::string> names;
  for (VecClass c : r.instrs) names.emplace_back(vec_class_name(c));
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

std::string identity_text(const ReduceRecord& r) {
  if (r.gives_index) return "no index (-1)";
  return fmt::format("{}", r.value.identity.stat);
}

}  // namespace

std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

std::string reduce_passes_text(const std::vector<VecPass>& passes) {
  std::vector<std::string> parts;
  for (const VecPass& p : passes) parts.push_back(pass_text(p));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, "; "));
}

std::string op_table_markdown() {
  std::string md = "## The op table\n\n";
  md += kTableIntro;
  md +=
      "\n| op | kind | inputs | computes | vector instructions per tile | temporaries | "
      "dtypes taken | dtype given |\n";
  md += "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const OpRecord& r : op_records())
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", r.name, op_kind_name(r.kind),
                      inputs_text(r), markdown_cell(r.doc), markdown_cell(instructions_text(r)),
                      temporaries_text(r), r.operands.text(), out_text(r.out));
  md += "\n## Reductions\n\n";
  md += kReduceIntro;
  md +=
      "\n| op | per tile | finalize | merge of two partials | identity | a partial is | "
      "atomic merge | output |\n";
  md += "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const OpRecord& r : op_records()) {
    if (!r.reduction) continue;
    const ReduceRecord& red = *r.reduction;
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", r.name,
                      markdown_cell(reduce_passes_text(red.tile_passes)),
                      markdown_cell(reduce_passes_text(red.finalize_passes)),
                      markdown_cell(reduce_passes_text(red.merge_passes)), identity_text(red),
                      red.partial, red.merges_atomically ? "yes" : "no",
                      red.gives_index ? "int32 index" : "the statistic");
  }
  for (const OpRecord& r : op_records())
    if (r.reduction && r.reduction->online)
      md += fmt::format(
          "\n`{}` also takes `merge: online`: its running max and sum carried into the ops after "
          "it, rescaling their accumulator as the max grows (flash attention).\n",
          r.name);
  for (const OpRecord& r : op_records())
    if (r.reduction && r.reduction->running_max)
      md += fmt::format(
          "\n`{}`'s first pass per tile and per merge is its running max: after an `amax` of the "
          "same input over the same dims in the same pass (a split row's statistics, or ops on a "
          "tile covering the row), the amax's output is that max and neither pass runs again, so "
          "`m = amax(x)` then `s = {}(x)` cost the softmax family's (max, sum of exp) once and "
          "later ops read both.\n",
          r.name, r.name);
  return md;
}

}  // namespace tilesim
