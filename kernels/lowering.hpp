#pragma once
// Lowering: (op, shape, dtype, dims, tile, loop_count, partition) -> task graph + diagnostics, the
// one entry tools call. Candidate figures the rulebook talks about come back as data in
// Diagnostics (kernels/spec/lowered.hpp).

#include "kernels/spec/kernel_spec.hpp"
#include "kernels/spec/lowered.hpp"
#include "kernels/spec/registry.hpp"
#include "kernels/spec/spec_reader.hpp"
#include "model/hardware.hpp"

namespace tilesim {

// Throws tilesim::Error for an unknown op, rank mismatch, misaligned tile, bad dim or a capacity
// overflow, with one line saying what is wrong and what is allowed.
LoweredKernel lower_kernel(const KernelSpec& spec, const Hardware& hw);

}  // namespace tilesim
