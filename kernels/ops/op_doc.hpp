#pragma once
// The op table's part of docs/ops.md, rendered from the records (op_table.hpp): one row per op
// (kind, inputs, what it computes, vector instructions per tile, temporaries, dtypes), then one
// row per reduction (its tile, finalize and merge instructions, identity, partial, atomicity).
// The page is assembled by kernels/spec/registry_doc.hpp.

#include <string>
#include <vector>

#include "kernels/ops/op_table.hpp"

namespace tilesim {

// A Markdown table cell: one line, '|' escaped.
std::string markdown_cell(const std::string& s);

// Reduction passes: "what: reduce" (along the reduced dims), "what: class/tile",
// "what: class/out", with " (out dtype)" or " (in dtype)" where the pass leaves the default (the
// input's for tile passes, the output's for passes over the outputs).
std::string reduce_passes_text(const std::vector<VecPass>& passes);

// The "## The op table" and "## Reductions" sections.
std::string op_table_markdown();

}  // namespace tilesim
