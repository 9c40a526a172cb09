#pragma once
// docs/ops.md, rendered from the op table (kernels/ops/op_doc.hpp renders its part) and the
// kernel registry (registry.hpp: each built-in family's ops and declared params), so the
// reference cannot drift from the code: tests/registry_test.cpp fails when the checked-in file
// differs from what ops_doc (kernels/ops_doc_main.cpp) prints.

#include <string>

#include "kernels/spec/registry.hpp"

namespace tilesim {

// One param's row cells: its type ("integer list of 3"), default ("required", "derived" or the
// JSON value) and allowed values or bounds.
std::string param_type_text(const ParamDecl& p);
std::string param_default_text(const ParamDecl& p);
std::string param_allowed_text(const ParamDecl& p);

// The "## Built-in kernels" section: per family its partitions, ops and params.
std::string families_markdown();

// The whole page: title, the op table's sections, the built-in kernels.
std::string ops_doc_markdown();

}  // namespace tilesim
