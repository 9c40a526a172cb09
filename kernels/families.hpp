#pragma once
// One lowering entry point per kernel family (each in its own file).

#include <string>

#include "kernels/lowering.hpp"

namespace tilesim {

LoweredKernel lower_copy_in(const KernelSpec& spec, const Hardware& hw);
bool is_elementwise_op(const std::string& op);
LoweredKernel lower_elementwise(const KernelSpec& spec, const Hardware& hw);

}  // namespace tilesim
